// FP16 storage of the weights, FP32 arithmetic: the packed FP32 GEMM of PackedGemm.swift with A
// (the weights) rounded to IEEE half precision when it is packed, at load, in the same layout: half
// the memory, and half the bytes each forward streams (on a Zen 3 no faster for that: widening
// costs about what it saves, docs/precision-bf16-fp16.md, "FP16"). Each MR-row panel of a block of k is widened back to FP32 into scratch when the
// driver first asks for it (once per panel and block of B: a kc x MR panel serves every tile of
// the block), then the level's own FP32 micro-kernel runs as for FP32 weights. B and C stay FP32.
// The result is exactly the FP32 GEMM's on the FP16-rounded weights (same kernel, same order).
// Any level can run it (x86's F16C or ARM's fcvtl widen; the x86-64 baseline in software): it is
// `precision fp16` where the CPU has no FP16 arithmetic (every x86 CPU, a Raspberry Pi 4's A72).
#if !(os(macOS) && arch(x86_64))

public enum FP16WeightsGemm<K: GemmMicroKernel> {
    public typealias G = PackedGemm<K>

    /// Words (float-sized: two halves each) of packed A for m rows of depth k.
    @inlinable @inline(__always)
    public static func packedASize(m: Int, k: Int) -> Int { (G.packedASize(m: m, k: k) + 1) / 2 }

    /// Rounds A (m x k, row stride lda) to FP16 and packs it as PackedGemm.packA lays out floats.
    @inlinable @inline(__always)
    public static func packA(_ a: UnsafePointer<Float>, lda: Int, m: Int, k: Int, kc: Int, into p: UnsafeMutablePointer<Float16>) {
        gemmPackA(a, lda: lda, m: m, k: k, kc: kc, mr: K.mr, into: p) { Float16($0) }
    }

    /// Floats of scratch `gemm` needs: the FP32 GEMM's, and one widened kc x MR panel of A.
    @inlinable @inline(__always)
    public static func scratchSize(m: Int, n: Int, k: Int, kc: Int, nc: Int) -> Int {
        G.scratchSize(m: m, n: n, k: k, kc: kc, nc: nc) + max(1, G.blockDepth(k: k, kc: kc)) * K.mr
    }

    /// C[m x n] (row stride ldc >= n) = A · B as PackedGemm.gemm, A packed by `packA` (same kc).
    @inlinable @inline(__always)
    public static func gemm(m: Int, n: Int, k: Int, packedA: UnsafePointer<Float16>, b: UnsafePointer<Float>, ldb: Int,
                            c: UnsafeMutablePointer<Float>, ldc: Int, scratch: UnsafeMutablePointer<Float>, kc: Int, nc: Int,
                            rowStart: Int = 0, rowEnd: Int? = nil) {
        let mPadded = (m + K.mr - 1) / K.mr * K.mr
        let widened = scratch + G.scratchSize(m: m, n: n, k: k, kc: kc, nc: nc)
        withUnsafeTemporaryAllocation(of: Int.self, capacity: 2) { current in
            current[0] = -1
            current[1] = -1
            let panels = FP16WeightsPanels<K.ISA>(a: packedA, mPadded: mPadded, mr: K.mr, widened: widened,
                                                  current: current.baseAddress!)
            G.blocks(m: m, n: n, k: k, panels: panels, b: b, ldb: ldb, c: c, ldc: ldc, scratch: scratch, kc: kc, nc: nc,
                     rowStart: rowStart, rowEnd: rowEnd)
        }
    }
}

/// A packed in halves: a panel widened into `widened` when first asked for (`current`: the block
/// and panel it holds), and the next panel's halves prefetched (the FP32 micro-kernels prefetch
/// packed A ahead of their steps, but here they read the widened copy: without it, F(4x4) on a
/// 13x13 map, whose products are 16 columns wide, waited on memory for every panel, 1.7x FP32's
/// time on a Zen 3).
public struct FP16WeightsPanels<ISA: GemmISA>: GemmPanels {
    @usableFromInline let a: UnsafePointer<Float16>
    @usableFromInline let mPadded: Int, mr: Int
    @usableFromInline let widened: UnsafeMutablePointer<Float>
    @usableFromInline let current: UnsafeMutablePointer<Int>

    @inlinable @inline(__always)
    init(a: UnsafePointer<Float16>, mPadded: Int, mr: Int, widened: UnsafeMutablePointer<Float>, current: UnsafeMutablePointer<Int>) {
        (self.a, self.mPadded, self.mr, self.widened, self.current) = (a, mPadded, mr, widened, current)
    }

    @inlinable @inline(__always)
    public func panel(_ k0: Int, _ kcl: Int, _ ib: Int) -> UnsafePointer<Float> {
        if current[0] != k0 || current[1] != ib {
            (current[0], current[1]) = (k0, ib)
            let count = kcl * mr, src = a + k0 * mPadded + ib * kcl
            // The next panel of the block (or the next block's first) follows this one.
            let next = UnsafeRawPointer(src + count)
            var line = 0
            while line < 2 * count {
                ISA.prefetch(next + line)
                line += 64
            }
            FP16WeightsPanels.widen(src, count, into: widened)
        }
        return UnsafePointer(widened)
    }

    /// Widens `count` halves at `src` to floats at `dst`.
    @inlinable @inline(__always)
    static func widen(_ src: UnsafePointer<Float16>, _ count: Int, into dst: UnsafeMutablePointer<Float>) {
        var i = 0
        while i + 8 <= count {
            let h = UnsafeRawPointer(src + i).loadUnaligned(as: SIMD8<Float16>.self)
            UnsafeMutableRawPointer(dst + i).storeBytes(of: SIMD8<Float>(h), as: SIMD8<Float>.self)
            i += 8
        }
        while i < count {
            dst[i] = Float(src[i])
            i += 1
        }
    }
}

extension FP16WeightsGemm: HalfPackedGemm {
    @inlinable public static var mr: Int { K.mr }
    @inlinable public static var nr: Int { K.nr }
    @inlinable public static var width: Int { K.Vector.scalarCount }
}

extension HalfKernels {
    /// The FP32 GEMM of micro-kernel `K` (blocking kc x nc) on FP16-stored weights, named `level`.
    @inlinable
    public static func makeFP16Weights<K: GemmMicroKernel>(level: String, requires: CPUFeatureSet, _: K.Type, kc: Int,
                                                            nc: Int) -> HalfKernels {
        makeHalf(level: level, dot: "fp32 fma, fp16 weights", requires: requires, FP16WeightsGemm<K>.self, kc: kc, nc: nc,
                 weightsOnly: true)
    }
}
#endif
