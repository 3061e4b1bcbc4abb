// The BF16 GEMM for CPUs with AVX-512 BF16 (vdpbf16ps: 32 bfloat16 products a zmm instruction,
// FP32 sums; Cooper Lake, Sapphire Rapids and later, Zen 4 and later), built with -target-cpu
// cooperlake (Package.swift). Not a kernel level of its own: the engine adds it to the avx512vnni
// level's set (KernelLevel.swift) and offers it only where the CPU has AVX-512 BF16.
#if arch(x86_64) && compiler(>=6.1)
import YOLOKernels
import CHints
import CDot

/// Private to this target (distinct specializations, see KernelsAVX512VNNI.swift).
enum BF16Tag: BF16DotISA {
    typealias Floats = SIMD16<Float>
    typealias Pairs = SIMD16<UInt32>
    @inline(__always) static func prefetch(_ p: UnsafeRawPointer) { yolo_prefetch(p) }
    @inline(__always) static func dot(_ acc: SIMD16<Float>, _ b: SIMD16<UInt32>, _ a: SIMD16<UInt32>) -> SIMD16<Float> {
        yolo_dpbf16_512(acc, unsafeBitCast(a, to: SIMD16<Int32>.self), unsafeBitCast(b, to: SIMD16<Int32>.self))
    }
    @inline(__always) static func pairs(_ x0: SIMD16<Float>, _ x1: SIMD16<Float>) -> SIMD16<UInt32> {
        unsafeBitCast(yolo_bf16_pairs_512(x0, x1), to: SIMD16<UInt32>.self)
    }
    @inline(__always) static func halves(_ lo: SIMD16<UInt32>, _ hi: SIMD16<UInt32>) -> SIMD16<UInt32> {
        SIMD16(lowHalf: lo.lowHalf, highHalf: hi.lowHalf)
    }
}

/// The Winograd transforms' vectors: the GEMM's floats (WinogradBF16.swift).
extension BF16Tag: WinogradISA {
    typealias Vector = SIMD16<Float>
}

public enum KernelsAVX512BF16 {
    /// Tiles of 8 x 48 FP32 sums (8 x 3 zmm accumulators), 2 steps of k per vdpbf16ps; blocks of
    /// 512 steps of k (the packed B panel as many bytes as the FP32 GEMM's 256) x 480 columns.
    /// Requires what -target-cpu cooperlake may use: the VNNI level's features + AVX-512 BF16.
    public static var bf16: HalfKernels? {
        HalfKernels.make(level: "avx512bf16", dot: "vdpbf16ps", requires: [.avx2, .avx512, .avx512VNNI, .avx512BF16], BF16Tag.self,
                         kc: 512, nc: 480)
            .adding(winogradPairs: .make(BF16Tag.self, kc: 512, nc: 480))
    }
}
#elseif arch(x86_64)
import YOLOKernels

/// Swift 6.0's compiler crashes (signal 11, endless recursion) compiling this target's
/// specialization of the BF16 GEMM: built by Swift 6.0, the engine has no BF16 kernels, and
/// `--precision bf16` says the level has none.
public enum KernelsAVX512BF16 {
    public static var bf16: HalfKernels? { nil }
}
#endif
