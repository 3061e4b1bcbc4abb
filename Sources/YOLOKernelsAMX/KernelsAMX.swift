// The amx level (Intel AMX: Sapphire Rapids, Emerald Rapids, Granite Rapids): the avx512vnni
// level's kernel set with its INT8 GEMM (8-bit and 10-bit inputs) on tdpbsud and its BF16 GEMM
// (im2col and 1x1 layers, and BF16 Winograd F(2x2)'s products) on tdpbf16ps, and tap products for
// INT8 and BF16 3x3 stride-1 layers (AMXTapConv.swift); every other kernel is the avx512vnni level's own. Built with -target-cpu cooperlake (Package.swift) for the packing
// and stores; the tile instructions come from CAMX's functions, each with its own target
// attribute. The engine registers it above avx512vnni and offers it only where the CPU, the OS and
// Linux's per-process permission allow tile state (`CPUFeatureSet.amx`, HostCPU.swift).
#if arch(x86_64)
import YOLOKernels

public enum KernelsAMX {
    /// INT8 blocking: 2048 groups (8192 k, 128 steps) x 256 columns of B a block: every k of yolov3-tiny
    /// in one block, its sums kept in the tiles (docs/performance-amx.md, "AMX, Emerald Rapids").
    static let int8KC = 2048, int8NC = 256
    /// BF16 blocking: 1024 steps of k x 256 columns (512 KiB packed).
    static let bf16KC = 1024, bf16NC = 256

    /// `base` (the avx512vnni level's set, with its BF16 and FP16 GEMMs) as the amx level.
    public static func kernelSet(over base: KernelSet) -> KernelSet {
        var set = base.renamed("amx", requires: base.requires.union([.avx512BF16, .amx]))
        if let int8 = base.int8 { set = set.adding(int8: int8Kernels(replacing: int8)) }
        #if compiler(>=6.1)
        if let bf16 = base.bf16 { set = set.adding(bf16: bf16Kernels(replacing: bf16)) }
        #endif
        return set
    }

    /// `base`'s INT8 kernels (quantization, 10-bit split) with the tile GEMM, which the fixed table
    /// prefers for 10-bit inputs to INT8 F(2x2) too (docs/performance-amx.md, "AMX, Emerald Rapids").
    static func int8Kernels(replacing base: Int8Functions) -> Int8Functions {
        precondition(base.activationShift == 0, "KernelsAMX: tdpbsud takes B as u8, unshifted")
        let (kc, nc) = (int8KC, int8NC)
        return base.replacingGemm(
            dot: "tdpbsud", mr: AMXInt8Gemm.mr, nr: AMXInt8Gemm.nr, lanes: 16, kc: kc, nc: nc,
            packedASize: { AMXInt8Gemm.packedASize(m: $0, k: $1) },
            packA: { AMXInt8Gemm.packA($0, lda: $1, m: $2, k: $3, rows: $4, into: $5) },
            scratchSize: { AMXInt8Gemm.scratchSize(m: $0, n: $1, k: $2, kc: kc, nc: nc) },
            gemm: { m, n, k, a, b, ldb, c, ldc, comp, scale, scratch, rows in
                AMXInt8Gemm.gemm(m: m, n: n, k: k, packedA: a, b: b, ldb: ldb, c: c, ldc: ldc, comp: comp, scale: scale,
                                 scratch: scratch, kc: kc, nc: nc, rows: rows)
            },
            tenBitGemm: { m, n, k, a, hi, lo, ldb, c, ldc, comp, scale, scratch, rows in
                AMXInt8Gemm.tenBitGemm(m: m, n: n, k: k, packedA: a, hi: hi, lo: lo, ldb: ldb, c: c, ldc: ldc, comp: comp,
                                       scale: scale, scratch: scratch, kc: kc, nc: nc, rows: rows)
            }).preferringTenBit(over: .winograd)
            .withTaps(Int8TapConv(
                run: { AMXTapConv.int8($0, packedA: $1, planes: $2, lo: $3, out: $4, comp: $5, scale: $6, items: $7) },
                runPooled: { AMXTapConv.int8Pooled($0, packedA: $1, planes: $2, lo: $3, out: $4, comp: $5, scale: $6, items: $7) }))
    }

    #if compiler(>=6.1)
    /// `base`'s BF16 kernels (the Winograd input transform) with the tile GEMM.
    static func bf16Kernels(replacing base: HalfKernels) -> HalfKernels {
        let (kc, nc) = (bf16KC, bf16NC)
        let gemm = GemmFunctions.make(
            level: "amxbf16", mr: AMXBF16Gemm.mr, nr: AMXBF16Gemm.nr, width: 16, kc: kc, nc: nc,
            packedASize: { AMXBF16Gemm.packedASize(m: $0, k: $1) },
            packA: { AMXBF16Gemm.packA($0, lda: $1, m: $2, k: $3, into: UnsafeMutableRawPointer($4).assumingMemoryBound(to: UInt32.self)) },
            scratchSize: { AMXBF16Gemm.scratchSize(m: $0, n: $1, k: $2, kc: kc, nc: nc) },
            gemm: { m, n, k, a, b, ldb, c, ldc, scratch, rows in
                AMXBF16Gemm.gemm(m: m, n: n, k: k, packedA: UnsafeRawPointer(a), b: b, ldb: ldb, c: c, ldc: ldc, scratch: scratch,
                                 kc: kc, nc: nc, rows: rows)
            })
        return base.replacingGemm(dot: "tdpbf16ps", requires: base.requires.union(.amx), gemm: gemm) { m, n, k, a, b, ldb, c, ldc, scratch, rows in
            AMXBF16Gemm.gemmWords(m: m, n: n, k: k, packedA: UnsafeRawPointer(a), b: b, ldb: ldb, c: c, ldc: ldc, scratch: scratch,
                                  kc: kc, nc: nc, rows: rows)
        }.withTaps(BF16TapConv(
            planes: { AMXTapConv.bf16Planes($0, channels: $1, height: $2, width: $3, jobs: $4, planeStride: $5, into: $6) },
            run: { AMXTapConv.bf16($0, packedA: $1, planes: $2, out: $3, items: $4) }))
    }
    #endif
}
#endif
