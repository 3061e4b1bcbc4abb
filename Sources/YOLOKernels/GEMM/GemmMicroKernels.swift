// The register-blocked micro-kernels of the packed GEMM (PackedGemm.swift): the `GemmMicroKernel`
// and `GemmISA` protocols, the load/store helpers (the multiply-add: MulAdd.swift), and the 4 x 3W
// and 8 x 3W kernels.
// Generic and @inlinable, instantiated by the per-ISA targets; after editing this file, touch
// Sources/YOLOKernels{Baseline,AVX2,AVX512}/*.swift (see PackedGemm.swift).

/// A register-blocked micro-kernel: C[MR x NR] (row stride ldc) = (or +=) Σ_p a[p] ⊗ b[p]
/// over `k` steps of the packed panels (a: MR floats per step, b: NR floats per step).
public protocol GemmMicroKernel: KernelMetatype {
    associatedtype Vector: SIMD where Vector.Scalar == Float
    /// A vector of MR floats: one column of the tile (for the last few columns of C).
    associatedtype Column: SIMD where Column.Scalar == Float
    associatedtype ISA: GemmISA
    static var mr: Int { get }
    static var nr: Int { get }
    static func run(_ k: Int, _ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>,
                    _ c: UnsafeMutablePointer<Float>, _ ldc: Int, accumulate: Bool)
    /// The same for one vector of columns, C[MR x W], reading b with row stride `bStride`
    /// (for the last, partial NR panel).
    static func runVector(_ k: Int, _ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, bStride: Int,
                          _ c: UnsafeMutablePointer<Float>, _ ldc: Int, accumulate: Bool)
    /// The same for two vectors of columns, C[MR x 2W]: a partial panel of 2W to NR - 1 columns
    /// (yolov3-tiny's 13x13 F(4x4) products are 16 columns wide), with twice the independent
    /// accumulators of `runVector`, enough to keep both FMA units busy.
    static func runVector2(_ k: Int, _ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, bStride: Int,
                           _ c: UnsafeMutablePointer<Float>, _ ldc: Int, accumulate: Bool)
}

/// What a per-ISA target tells the generic kernels about its CPU.
public protocol GemmISA: KernelMetatype {
    /// Whether the CPU has fused multiply-add: `addingProduct` (one instruction) when true,
    /// multiply then add when false (x86-64 baseline: `addingProduct` would call fmaf per lane).
    static var fusedMultiplyAdd: Bool { get }
    /// Prefetches the cache line at `p` into L1 (the per-ISA targets call their C shim; the
    /// default does nothing). The micro-kernels use it on the packed weights: streamed from
    /// memory once per forward (the Winograd positions' kernels are larger than the caches), they
    /// come too late for the hardware prefetcher, and prefetching them ahead pays
    /// (docs/performance.md, "Figures from code comments").
    static func prefetch(_ p: UnsafeRawPointer)
    /// Vector registers the kernels may keep values in: 16 (x86 without AVX-512: ymm or xmm),
    /// 32 (AVX-512's zmm, NEON's q). Kernels with more live vectors than this spill to memory.
    static var vectorRegisters: Int { get }
}

extension GemmISA {
    @inlinable @inline(__always)
    public static func prefetch(_ p: UnsafeRawPointer) {}
    @inlinable @inline(__always)
    public static var vectorRegisters: Int { 16 }
}

/// How far ahead of the current step the micro-kernels prefetch packed A: this many steps of
/// k (MR floats each), about 4 KiB for MR = 8.
@inlinable @inline(__always)
var gemmPrefetchSteps: Int { 128 }

@inlinable @inline(__always)
func gemmLoad<V: SIMD>(_ p: UnsafePointer<Float>) -> V where V.Scalar == Float {
    UnsafeRawPointer(p).loadUnaligned(as: V.self)
}

@inlinable @inline(__always)
func gemmStore<V: SIMD>(_ v: V, _ p: UnsafeMutablePointer<Float>, accumulate: Bool) where V.Scalar == Float {
    let r = UnsafeMutableRawPointer(p)
    r.storeBytes(of: accumulate ? v + r.loadUnaligned(as: V.self) : v, as: V.self)
}

/// C[4 x 2W] (row stride ldc) = (or +=) Σ_p a[p][0..<4] ⊗ b[p][0..<2W], a advancing `aStride`
/// floats per step (4 rows of an MR-row packed panel), b `bStride`: 8 accumulators, enough for
/// two FMA units of 4-cycle latency. The two-vector tail of both kernels (`runVector2`).
@inlinable @inline(__always)
func gemmFourRowsTwoVectors<V: SIMD, Tag: GemmISA>(_ k: Int, _ a: UnsafePointer<Float>, aStride: Int,
                                                   _ b: UnsafePointer<Float>, bStride: Int,
                                                   _ c: UnsafeMutablePointer<Float>, _ ldc: Int, accumulate: Bool,
                                                   _: V.Type, _: Tag.Type) where V.Scalar == Float {
    let w = V.scalarCount
    var c00 = V(), c01 = V(), c10 = V(), c11 = V(), c20 = V(), c21 = V(), c30 = V(), c31 = V()
    var pa = a, pb = b
    let ahead = gemmPrefetchSteps * aStride
    for _ in 0..<k {
        Tag.prefetch(pa + ahead)
        let b0: V = gemmLoad(pb), b1: V = gemmLoad(pb + w)
        var x = V(repeating: pa[0])
        c00 = gemmMulAdd(c00, x, b0, Tag.self); c01 = gemmMulAdd(c01, x, b1, Tag.self)
        x = V(repeating: pa[1])
        c10 = gemmMulAdd(c10, x, b0, Tag.self); c11 = gemmMulAdd(c11, x, b1, Tag.self)
        x = V(repeating: pa[2])
        c20 = gemmMulAdd(c20, x, b0, Tag.self); c21 = gemmMulAdd(c21, x, b1, Tag.self)
        x = V(repeating: pa[3])
        c30 = gemmMulAdd(c30, x, b0, Tag.self); c31 = gemmMulAdd(c31, x, b1, Tag.self)
        pa += aStride
        pb += bStride
    }
    var pc = c
    gemmStore(c00, pc, accumulate: accumulate); gemmStore(c01, pc + w, accumulate: accumulate); pc += ldc
    gemmStore(c10, pc, accumulate: accumulate); gemmStore(c11, pc + w, accumulate: accumulate); pc += ldc
    gemmStore(c20, pc, accumulate: accumulate); gemmStore(c21, pc + w, accumulate: accumulate); pc += ldc
    gemmStore(c30, pc, accumulate: accumulate); gemmStore(c31, pc + w, accumulate: accumulate)
}

/// 4 x (3·W): 12 accumulators + 3 B vectors + 1 broadcast = 16 registers (16 ymm/xmm on x86).
public enum GemmKernel4x3<V: SIMD, Tag: GemmISA>: GemmMicroKernel where V.Scalar == Float {
    public typealias Vector = V
    public typealias Column = SIMD4<Float>
    public typealias ISA = Tag
    @inlinable public static var mr: Int { 4 }
    @inlinable public static var nr: Int { 3 * V.scalarCount }

    @inlinable @inline(__always)
    public static func runVector2(_ k: Int, _ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, bStride: Int,
                                  _ c: UnsafeMutablePointer<Float>, _ ldc: Int, accumulate: Bool) {
        gemmFourRowsTwoVectors(k, a, aStride: 4, b, bStride: bStride, c, ldc, accumulate: accumulate, V.self, Tag.self)
    }

    @inlinable @inline(__always)
    public static func run(_ k: Int, _ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>,
                           _ c: UnsafeMutablePointer<Float>, _ ldc: Int, accumulate: Bool) {
        let w = V.scalarCount
        var c00 = V(), c01 = V(), c02 = V(), c10 = V(), c11 = V(), c12 = V()
        var c20 = V(), c21 = V(), c22 = V(), c30 = V(), c31 = V(), c32 = V()
        var pa = a, pb = b
        let ahead = gemmPrefetchSteps * mr
        for _ in 0..<k {
            Tag.prefetch(pa + ahead)
            let b0: V = gemmLoad(pb), b1: V = gemmLoad(pb + w), b2: V = gemmLoad(pb + 2 * w)
            var x = V(repeating: pa[0])
            c00 = gemmMulAdd(c00, x, b0, Tag.self); c01 = gemmMulAdd(c01, x, b1, Tag.self); c02 = gemmMulAdd(c02, x, b2, Tag.self)
            x = V(repeating: pa[1])
            c10 = gemmMulAdd(c10, x, b0, Tag.self); c11 = gemmMulAdd(c11, x, b1, Tag.self); c12 = gemmMulAdd(c12, x, b2, Tag.self)
            x = V(repeating: pa[2])
            c20 = gemmMulAdd(c20, x, b0, Tag.self); c21 = gemmMulAdd(c21, x, b1, Tag.self); c22 = gemmMulAdd(c22, x, b2, Tag.self)
            x = V(repeating: pa[3])
            c30 = gemmMulAdd(c30, x, b0, Tag.self); c31 = gemmMulAdd(c31, x, b1, Tag.self); c32 = gemmMulAdd(c32, x, b2, Tag.self)
            pa += 4
            pb += 3 * w
        }
        var pc = c
        let w2 = 2 * w
        gemmStore(c00, pc, accumulate: accumulate); gemmStore(c01, pc + w, accumulate: accumulate); gemmStore(c02, pc + w2, accumulate: accumulate); pc += ldc
        gemmStore(c10, pc, accumulate: accumulate); gemmStore(c11, pc + w, accumulate: accumulate); gemmStore(c12, pc + w2, accumulate: accumulate); pc += ldc
        gemmStore(c20, pc, accumulate: accumulate); gemmStore(c21, pc + w, accumulate: accumulate); gemmStore(c22, pc + w2, accumulate: accumulate); pc += ldc
        gemmStore(c30, pc, accumulate: accumulate); gemmStore(c31, pc + w, accumulate: accumulate); gemmStore(c32, pc + w2, accumulate: accumulate)
    }

    @inlinable @inline(__always)
    public static func runVector(_ k: Int, _ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, bStride: Int,
                                 _ c: UnsafeMutablePointer<Float>, _ ldc: Int, accumulate: Bool) {
        var c0 = V(), c1 = V(), c2 = V(), c3 = V()
        var pa = a, pb = b
        for _ in 0..<k {
            let b0: V = gemmLoad(pb)
            c0 = gemmMulAdd(c0, V(repeating: pa[0]), b0, Tag.self)
            c1 = gemmMulAdd(c1, V(repeating: pa[1]), b0, Tag.self)
            c2 = gemmMulAdd(c2, V(repeating: pa[2]), b0, Tag.self)
            c3 = gemmMulAdd(c3, V(repeating: pa[3]), b0, Tag.self)
            pa += 4
            pb += bStride
        }
        gemmStore(c0, c, accumulate: accumulate); gemmStore(c1, c + ldc, accumulate: accumulate)
        gemmStore(c2, c + 2 * ldc, accumulate: accumulate); gemmStore(c3, c + 3 * ldc, accumulate: accumulate)
    }
}

/// 8 x (3·W): 24 accumulators + 3 B vectors + 1 broadcast = 28 registers (32 zmm with
/// AVX-512, 32 q registers with NEON).
public enum GemmKernel8x3<V: SIMD, Tag: GemmISA>: GemmMicroKernel where V.Scalar == Float {
    public typealias Vector = V
    public typealias Column = SIMD8<Float>
    public typealias ISA = Tag
    @inlinable public static var mr: Int { 8 }
    @inlinable public static var nr: Int { 3 * V.scalarCount }

    /// Rows 0-3, then 4-7 (a tail: the B vectors are loaded twice, from L1).
    @inlinable @inline(__always)
    public static func runVector2(_ k: Int, _ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, bStride: Int,
                                  _ c: UnsafeMutablePointer<Float>, _ ldc: Int, accumulate: Bool) {
        gemmFourRowsTwoVectors(k, a, aStride: 8, b, bStride: bStride, c, ldc, accumulate: accumulate, V.self, Tag.self)
        gemmFourRowsTwoVectors(k, a + 4, aStride: 8, b, bStride: bStride, c + 4 * ldc, ldc, accumulate: accumulate,
                               V.self, Tag.self)
    }

    @inlinable @inline(__always)
    public static func run(_ k: Int, _ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>,
                           _ c: UnsafeMutablePointer<Float>, _ ldc: Int, accumulate: Bool) {
        let w = V.scalarCount
        var c00 = V(), c01 = V(), c02 = V(), c10 = V(), c11 = V(), c12 = V()
        var c20 = V(), c21 = V(), c22 = V(), c30 = V(), c31 = V(), c32 = V()
        var c40 = V(), c41 = V(), c42 = V(), c50 = V(), c51 = V(), c52 = V()
        var c60 = V(), c61 = V(), c62 = V(), c70 = V(), c71 = V(), c72 = V()
        var pa = a, pb = b
        let ahead = gemmPrefetchSteps * mr
        for _ in 0..<k {
            Tag.prefetch(pa + ahead)
            let b0: V = gemmLoad(pb), b1: V = gemmLoad(pb + w), b2: V = gemmLoad(pb + 2 * w)
            var x = V(repeating: pa[0])
            c00 = gemmMulAdd(c00, x, b0, Tag.self); c01 = gemmMulAdd(c01, x, b1, Tag.self); c02 = gemmMulAdd(c02, x, b2, Tag.self)
            x = V(repeating: pa[1])
            c10 = gemmMulAdd(c10, x, b0, Tag.self); c11 = gemmMulAdd(c11, x, b1, Tag.self); c12 = gemmMulAdd(c12, x, b2, Tag.self)
            x = V(repeating: pa[2])
            c20 = gemmMulAdd(c20, x, b0, Tag.self); c21 = gemmMulAdd(c21, x, b1, Tag.self); c22 = gemmMulAdd(c22, x, b2, Tag.self)
            x = V(repeating: pa[3])
            c30 = gemmMulAdd(c30, x, b0, Tag.self); c31 = gemmMulAdd(c31, x, b1, Tag.self); c32 = gemmMulAdd(c32, x, b2, Tag.self)
            x = V(repeating: pa[4])
            c40 = gemmMulAdd(c40, x, b0, Tag.self); c41 = gemmMulAdd(c41, x, b1, Tag.self); c42 = gemmMulAdd(c42, x, b2, Tag.self)
            x = V(repeating: pa[5])
            c50 = gemmMulAdd(c50, x, b0, Tag.self); c51 = gemmMulAdd(c51, x, b1, Tag.self); c52 = gemmMulAdd(c52, x, b2, Tag.self)
            x = V(repeating: pa[6])
            c60 = gemmMulAdd(c60, x, b0, Tag.self); c61 = gemmMulAdd(c61, x, b1, Tag.self); c62 = gemmMulAdd(c62, x, b2, Tag.self)
            x = V(repeating: pa[7])
            c70 = gemmMulAdd(c70, x, b0, Tag.self); c71 = gemmMulAdd(c71, x, b1, Tag.self); c72 = gemmMulAdd(c72, x, b2, Tag.self)
            pa += 8
            pb += 3 * w
        }
        var pc = c
        let w2 = 2 * w
        gemmStore(c00, pc, accumulate: accumulate); gemmStore(c01, pc + w, accumulate: accumulate); gemmStore(c02, pc + w2, accumulate: accumulate); pc += ldc
        gemmStore(c10, pc, accumulate: accumulate); gemmStore(c11, pc + w, accumulate: accumulate); gemmStore(c12, pc + w2, accumulate: accumulate); pc += ldc
        gemmStore(c20, pc, accumulate: accumulate); gemmStore(c21, pc + w, accumulate: accumulate); gemmStore(c22, pc + w2, accumulate: accumulate); pc += ldc
        gemmStore(c30, pc, accumulate: accumulate); gemmStore(c31, pc + w, accumulate: accumulate); gemmStore(c32, pc + w2, accumulate: accumulate); pc += ldc
        gemmStore(c40, pc, accumulate: accumulate); gemmStore(c41, pc + w, accumulate: accumulate); gemmStore(c42, pc + w2, accumulate: accumulate); pc += ldc
        gemmStore(c50, pc, accumulate: accumulate); gemmStore(c51, pc + w, accumulate: accumulate); gemmStore(c52, pc + w2, accumulate: accumulate); pc += ldc
        gemmStore(c60, pc, accumulate: accumulate); gemmStore(c61, pc + w, accumulate: accumulate); gemmStore(c62, pc + w2, accumulate: accumulate); pc += ldc
        gemmStore(c70, pc, accumulate: accumulate); gemmStore(c71, pc + w, accumulate: accumulate); gemmStore(c72, pc + w2, accumulate: accumulate)
    }
    @inlinable @inline(__always)
    public static func runVector(_ k: Int, _ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, bStride: Int,
                                 _ c: UnsafeMutablePointer<Float>, _ ldc: Int, accumulate: Bool) {
        var c0 = V(), c1 = V(), c2 = V(), c3 = V(), c4 = V(), c5 = V(), c6 = V(), c7 = V()
        var pa = a, pb = b
        for _ in 0..<k {
            let b0: V = gemmLoad(pb)
            c0 = gemmMulAdd(c0, V(repeating: pa[0]), b0, Tag.self)
            c1 = gemmMulAdd(c1, V(repeating: pa[1]), b0, Tag.self)
            c2 = gemmMulAdd(c2, V(repeating: pa[2]), b0, Tag.self)
            c3 = gemmMulAdd(c3, V(repeating: pa[3]), b0, Tag.self)
            c4 = gemmMulAdd(c4, V(repeating: pa[4]), b0, Tag.self)
            c5 = gemmMulAdd(c5, V(repeating: pa[5]), b0, Tag.self)
            c6 = gemmMulAdd(c6, V(repeating: pa[6]), b0, Tag.self)
            c7 = gemmMulAdd(c7, V(repeating: pa[7]), b0, Tag.self)
            pa += 8
            pb += bStride
        }
        var pc = c
        gemmStore(c0, pc, accumulate: accumulate); pc += ldc
        gemmStore(c1, pc, accumulate: accumulate); pc += ldc
        gemmStore(c2, pc, accumulate: accumulate); pc += ldc
        gemmStore(c3, pc, accumulate: accumulate); pc += ldc
        gemmStore(c4, pc, accumulate: accumulate); pc += ldc
        gemmStore(c5, pc, accumulate: accumulate); pc += ldc
        gemmStore(c6, pc, accumulate: accumulate); pc += ldc
        gemmStore(c7, pc, accumulate: accumulate)
    }
}
