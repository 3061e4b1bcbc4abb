// Packed FP16 GEMM: C[m x n] = A[m x k] · B[k x n] with IEEE half-precision (FP16) operands,
// products and sums (ARMv8.2's `fmla .8h`: 8 multiply-adds a q register instruction, twice FP32's;
// AVX-512 FP16's `vfmadd231ph`: 32 a zmm instruction), FP32 outputs, in the GotoBLAS/BLIS scheme of PackedGemm.swift:
//
// - A (the weights) is rounded to FP16 and packed once, at load, per block of KC steps of k and
//   MR-row panel: per step, the MR rows' halves (8).
// - B stays FP32 (im2col columns, Winograd-transformed tiles, a 1x1 layer's input): each KC x NC
//   block is rounded to FP16 as it is packed, in NR-column micro-panels.
// - The micro-kernel keeps an 8 x 3-vector tile of FP16 sums (24 registers: 8 x 24 on ARM, 8 x 96 on
//   x86) over one block of at most
//   KC steps; the tile goes to C as FP32 (added to C after the first block). Sums in FP16 over a
//   bounded block keep both the rounding (11-bit significands: about 2^-11 · sqrt(KC) of a block's
//   magnitude) and the range (65504 at most) of a partial sum in check; across blocks C adds in
//   FP32. Everything after the GEMM sees FP32 outputs as from the FP32 GEMM.
//
// Tails: rows past m and columns past n are zero in the packed panels; edge tiles are computed
// into a scratch tile and copied out (gemmBlockTiles, PackedGemm.swift). The FP32 GEMM's calling
// convention (`GemmFunctions`, packed A in float-sized words) and the BF16 GEMM's wrapper
// (`HalfKernels`, which names the format), so that every GEMM user of the engine can run it.
// Generic and @inlinable: the dotprod level (-target-cpu cortex-a76, FP16 arithmetic) and the
// AVX-512 FP16 target (KernelsAVX512FP16.swift) instantiate it; the avx2 level's model computes the
// same sums lane by lane in software (tests only).
#if !(os(macOS) && arch(x86_64))

/// One level's FP16 arithmetic: its vector of halves and how it multiplies, converts and stores
/// them. The defaults are ARM's q registers (8 halves; Swift's Float16 SIMD, which the level's
/// -target-cpu turns into fmla .8h by element); AVX-512 FP16 gives zmm vectors of 32 through
/// intrinsics (x86 does not vectorize Swift's Float16 SIMD).
public protocol FP16ISA: KernelMetatype {
    /// One vector of halves.
    associatedtype Halves: SIMD = SIMD8<Float16> where Halves.Scalar == Float16
    /// One step of packed A (its 8 rows' halves) as `fma` takes it.
    associatedtype Rows = SIMD8<Float16>
    static func prefetch(_ p: UnsafeRawPointer)
    static func rows(_ p: UnsafePointer<Float16>) -> Rows
    /// c + b · (row r of `rows`) per lane, one rounding.
    static func fma(_ c: Halves, _ b: Halves, _ rows: Rows, _ r: Int) -> Halves
    /// One vector of halves from the floats at p (rounded to nearest even).
    static func halves(_ p: UnsafePointer<Float>) -> Halves
    /// The halves h as FP32 at p (added to what is there when `accumulate`).
    static func store(_ h: Halves, _ p: UnsafeMutablePointer<Float>, accumulate: Bool)
    /// The larger of a and b per lane (for finite halves; the direct conv's pool).
    static func max(_ a: Halves, _ b: Halves) -> Halves
    /// Copies of each weight side by side in packed A and in the direct convolution's packing
    /// (DirectConvHalf.swift): 1, or 2 where `weightFMA` broadcasts them as one 32-bit word.
    static var weightCopies: Int { get }
    /// c + b · (weight r of `rows`, packed `weightCopies` times) per lane, one rounding.
    static func weightFMA(_ c: Halves, _ b: Halves, _ rows: Rows, _ r: Int) -> Halves
}

extension FP16ISA {
    @inlinable @inline(__always)
    public static func prefetch(_ p: UnsafeRawPointer) {}
    @inlinable public static var weightCopies: Int { 1 }
    @inlinable @inline(__always)
    public static func weightFMA(_ c: Halves, _ b: Halves, _ rows: Rows, _ r: Int) -> Halves { fma(c, b, rows, r) }
}

extension FP16ISA where Halves == SIMD8<Float16>, Rows == SIMD8<Float16> {
    @inlinable @inline(__always)
    public static func rows(_ p: UnsafePointer<Float16>) -> SIMD8<Float16> { UnsafeRawPointer(p).loadUnaligned(as: SIMD8<Float16>.self) }
    @inlinable @inline(__always)
    public static func fma(_ c: SIMD8<Float16>, _ b: SIMD8<Float16>, _ rows: SIMD8<Float16>, _ r: Int) -> SIMD8<Float16> {
        c.addingProduct(b, rows[r])
    }
    @inlinable @inline(__always)
    public static func halves(_ p: UnsafePointer<Float>) -> SIMD8<Float16> { SIMD8<Float16>(gemmLoad(p) as SIMD8<Float>) }
    @inlinable @inline(__always)
    public static func max(_ a: SIMD8<Float16>, _ b: SIMD8<Float16>) -> SIMD8<Float16> { a.replacing(with: b, where: a .< b) }
    @inlinable @inline(__always)
    public static func store(_ h: SIMD8<Float16>, _ p: UnsafeMutablePointer<Float>, accumulate: Bool) {
        gemmStore(SIMD8<Float>(h), p, accumulate: accumulate)
    }
}

/// 8 x 3 vectors of FP16 sums (8 x 24 on ARM: 24 accumulators + 3 B vectors + the 8 rows of A in
/// one register; 8 x 96 with AVX-512 FP16's zmm, A's rows broadcast from memory).
public enum FP16Kernel8x3<D: FP16ISA> {
    public typealias H = D.Halves
    @inlinable public static var mr: Int { 8 }
    @inlinable public static var nr: Int { 3 * H.scalarCount }

    @inlinable @inline(__always)
    static func load(_ p: UnsafePointer<Float16>) -> H { UnsafeRawPointer(p).loadUnaligned(as: H.self) }

    /// C[8 x nr] (row stride ldc) = (or +=) the product of `steps` steps of the packed panels.
    @inlinable @inline(__always)
    static func run(_ steps: Int, _ a: UnsafePointer<Float16>, _ b: UnsafePointer<Float16>, _ c: UnsafeMutablePointer<Float>,
                    _ ldc: Int, accumulate: Bool) {
        var c00 = H(), c01 = H(), c02 = H(), c10 = H(), c11 = H(), c12 = H()
        var c20 = H(), c21 = H(), c22 = H(), c30 = H(), c31 = H(), c32 = H()
        var c40 = H(), c41 = H(), c42 = H(), c50 = H(), c51 = H(), c52 = H()
        var c60 = H(), c61 = H(), c62 = H(), c70 = H(), c71 = H(), c72 = H()
        var pa = a, pb = b
        let copies = D.weightCopies, ahead = gemmPrefetchSteps * 8 * copies, w = H.scalarCount
        for _ in 0..<steps {
            D.prefetch(pa + ahead)
            let b0 = load(pb), b1 = load(pb + w), b2 = load(pb + 2 * w), x = D.rows(pa)
            c00 = D.weightFMA(c00, b0, x, 0); c01 = D.weightFMA(c01, b1, x, 0); c02 = D.weightFMA(c02, b2, x, 0)
            c10 = D.weightFMA(c10, b0, x, 1); c11 = D.weightFMA(c11, b1, x, 1); c12 = D.weightFMA(c12, b2, x, 1)
            c20 = D.weightFMA(c20, b0, x, 2); c21 = D.weightFMA(c21, b1, x, 2); c22 = D.weightFMA(c22, b2, x, 2)
            c30 = D.weightFMA(c30, b0, x, 3); c31 = D.weightFMA(c31, b1, x, 3); c32 = D.weightFMA(c32, b2, x, 3)
            c40 = D.weightFMA(c40, b0, x, 4); c41 = D.weightFMA(c41, b1, x, 4); c42 = D.weightFMA(c42, b2, x, 4)
            c50 = D.weightFMA(c50, b0, x, 5); c51 = D.weightFMA(c51, b1, x, 5); c52 = D.weightFMA(c52, b2, x, 5)
            c60 = D.weightFMA(c60, b0, x, 6); c61 = D.weightFMA(c61, b1, x, 6); c62 = D.weightFMA(c62, b2, x, 6)
            c70 = D.weightFMA(c70, b0, x, 7); c71 = D.weightFMA(c71, b1, x, 7); c72 = D.weightFMA(c72, b2, x, 7)
            pa += 8 * copies
            pb += 3 * w
        }
        @inline(__always) func row(_ r: Int, _ x0: H, _ x1: H, _ x2: H) {
            let pc = c + r * ldc
            D.store(x0, pc, accumulate: accumulate)
            D.store(x1, pc + w, accumulate: accumulate)
            D.store(x2, pc + 2 * w, accumulate: accumulate)
        }
        row(0, c00, c01, c02); row(1, c10, c11, c12); row(2, c20, c21, c22); row(3, c30, c31, c32)
        row(4, c40, c41, c42); row(5, c50, c51, c52); row(6, c60, c61, c62); row(7, c70, c71, c72)
    }

    /// C[8 x w] = (or +=) one vector of a panel's columns, b read with row stride `bStride`.
    @inlinable @inline(__always)
    static func runVector(_ steps: Int, _ a: UnsafePointer<Float16>, _ b: UnsafePointer<Float16>, bStride: Int,
                          _ c: UnsafeMutablePointer<Float>, _ ldc: Int, accumulate: Bool) {
        var c0 = H(), c1 = H(), c2 = H(), c3 = H(), c4 = H(), c5 = H(), c6 = H(), c7 = H()
        var pa = a, pb = b
        let copies = D.weightCopies
        for _ in 0..<steps {
            let v = load(pb), x = D.rows(pa)
            c0 = D.weightFMA(c0, v, x, 0); c1 = D.weightFMA(c1, v, x, 1); c2 = D.weightFMA(c2, v, x, 2); c3 = D.weightFMA(c3, v, x, 3)
            c4 = D.weightFMA(c4, v, x, 4); c5 = D.weightFMA(c5, v, x, 5); c6 = D.weightFMA(c6, v, x, 6); c7 = D.weightFMA(c7, v, x, 7)
            pa += 8 * copies
            pb += bStride
        }
        D.store(c0, c, accumulate: accumulate); D.store(c1, c + ldc, accumulate: accumulate)
        D.store(c2, c + 2 * ldc, accumulate: accumulate); D.store(c3, c + 3 * ldc, accumulate: accumulate)
        D.store(c4, c + 4 * ldc, accumulate: accumulate); D.store(c5, c + 5 * ldc, accumulate: accumulate)
        D.store(c6, c + 6 * ldc, accumulate: accumulate); D.store(c7, c + 7 * ldc, accumulate: accumulate)
    }

    /// C[8 x 2w] = (or +=) two vectors of a panel's columns in one pass over A: 16 independent
    /// sums where `runVector` has 8 (a 13x13 map's 169 columns leave 73 past the first panel).
    @inlinable @inline(__always)
    static func runVector2(_ steps: Int, _ a: UnsafePointer<Float16>, _ b: UnsafePointer<Float16>, bStride: Int,
                           _ c: UnsafeMutablePointer<Float>, _ ldc: Int, accumulate: Bool) {
        var c0 = H(), c1 = H(), c2 = H(), c3 = H(), c4 = H(), c5 = H(), c6 = H(), c7 = H()
        var d0 = H(), d1 = H(), d2 = H(), d3 = H(), d4 = H(), d5 = H(), d6 = H(), d7 = H()
        var pa = a, pb = b
        let w = H.scalarCount, copies = D.weightCopies
        for _ in 0..<steps {
            let u = load(pb), v = load(pb + w), x = D.rows(pa)
            c0 = D.weightFMA(c0, u, x, 0); d0 = D.weightFMA(d0, v, x, 0); c1 = D.weightFMA(c1, u, x, 1); d1 = D.weightFMA(d1, v, x, 1)
            c2 = D.weightFMA(c2, u, x, 2); d2 = D.weightFMA(d2, v, x, 2); c3 = D.weightFMA(c3, u, x, 3); d3 = D.weightFMA(d3, v, x, 3)
            c4 = D.weightFMA(c4, u, x, 4); d4 = D.weightFMA(d4, v, x, 4); c5 = D.weightFMA(c5, u, x, 5); d5 = D.weightFMA(d5, v, x, 5)
            c6 = D.weightFMA(c6, u, x, 6); d6 = D.weightFMA(d6, v, x, 6); c7 = D.weightFMA(c7, u, x, 7); d7 = D.weightFMA(d7, v, x, 7)
            pa += 8 * copies
            pb += bStride
        }
        @inline(__always) func row(_ r: Int, _ x: H, _ y: H) {
            D.store(x, c + r * ldc, accumulate: accumulate)
            D.store(y, c + r * ldc + w, accumulate: accumulate)
        }
        row(0, c0, d0); row(1, c1, d1); row(2, c2, d2); row(3, c3, d3)
        row(4, c4, d4); row(5, c5, d5); row(6, c6, d6); row(7, c7, d7)
    }
}

/// The packed FP16 GEMM driver; `kc` is the most steps of k summed in FP16 (one block), `nc`
/// columns. The same `kc` must be given to `packA`, `packedASize`, `scratchSize` and `gemm`.
public enum FP16PackedGemm<D: FP16ISA> {
    public typealias K = FP16Kernel8x3<D>

    @inlinable @inline(__always)
    static func roundUp(_ x: Int, _ to: Int) -> Int { (x + to - 1) / to * to }

    @inlinable @inline(__always)
    static func blockWidth(_ nc: Int) -> Int { max(K.nr, nc / K.nr * K.nr) }

    /// Words (float-sized: two halves each) of packed A for m rows of depth k.
    @inlinable @inline(__always)
    public static func packedASize(m: Int, k: Int) -> Int { (roundUp(m, K.mr) * k * D.weightCopies + 1) / 2 }

    /// Rounds and packs A (m x k, row stride lda) into `p`: per block of steps (offset k0, kl
    /// steps) at p + k0 * mPadded, the MR-row panels one after the other, each kl steps of MR rows;
    /// zero past row m. Each half `D.weightCopies` times (every offset that many times larger).
    @inlinable @inline(__always)
    public static func packA(_ a: UnsafePointer<Float>, lda: Int, m: Int, k: Int, kc: Int, into p: UnsafeMutablePointer<Float16>) {
        let copies = D.weightCopies
        guard copies > 1 else { return gemmPackA(a, lda: lda, m: m, k: k, kc: kc, mr: K.mr, into: p) { Float16($0) } }
        let count = roundUp(m, K.mr) * k
        let once = UnsafeMutablePointer<Float16>.allocate(capacity: max(1, count))
        defer { once.deallocate() }
        gemmPackA(a, lda: lda, m: m, k: k, kc: kc, mr: K.mr, into: once) { Float16($0) }
        for i in 0..<count { for c in 0..<copies { p[i * copies + c] = once[i] } }
    }

    /// Words of scratch `gemm` needs: a packed block of B (halves) and an MR x NR edge tile.
    @inlinable @inline(__always)
    public static func scratchSize(m: Int, n: Int, k: Int, kc: Int, nc: Int) -> Int {
        (max(1, gemmBlockDepth(k: k, kc: kc)) * roundUp(max(1, min(n, blockWidth(nc))), K.nr) + 1) / 2 + K.mr * K.nr
    }

    /// Rounds and packs rows 0..<steps, columns 0..<ncl of FP32 B (row stride ldb) into NR-column
    /// micro-panels of halves, zero past column ncl.
    @inlinable @inline(__always)
    static func packB(_ b: UnsafePointer<Float>, ldb: Int, steps: Int, ncl: Int, into bp: UnsafeMutablePointer<Float16>) {
        let nr = K.nr, full = ncl / nr, rest = ncl - full * nr
        for q in 0..<steps {
            let src = b + q * ldb
            var dst = bp + q * nr
            var j = 0
            for _ in 0..<full {
                var v = 0
                while v < nr {
                    UnsafeMutableRawPointer(dst + v).storeBytes(of: D.halves(src + j + v), as: D.Halves.self)
                    v += D.Halves.scalarCount
                }
                j += nr
                dst += steps * nr
            }
            if rest > 0 {
                // Whole vectors of the partial panel too (a 13x13 map's 169 columns leave 73 past
                // the first panel of 96, slower converted one at a time), then one at a
                // time, then zeros.
                let w = D.Halves.scalarCount
                var v = 0
                while v + w <= rest {
                    UnsafeMutableRawPointer(dst + v).storeBytes(of: D.halves(src + j + v), as: D.Halves.self)
                    v += w
                }
                while v < rest { dst[v] = Float16(src[j + v]); v += 1 }
                while v < nr { dst[v] = 0; v += 1 }
            }
        }
    }

    /// C[m x n] (row stride ldc >= n) = A · B, A packed by `packA` (same kc), B k x n FP32 (row
    /// stride ldb >= n), with `scratch` of `scratchSize` words. Only rows `rowStart..<rowEnd`
    /// (rowStart a multiple of MR): threads may split rows, or columns (b + j, c + j, fewer n).
    @inlinable @inline(__always)
    public static func gemm(m: Int, n: Int, k: Int, packedA: UnsafePointer<Float16>, b: UnsafePointer<Float>, ldb: Int,
                            c: UnsafeMutablePointer<Float>, ldc: Int, scratch: UnsafeMutablePointer<Float>, kc: Int, nc: Int,
                            rowStart: Int = 0, rowEnd: Int? = nil) {
        let rowEnd = min(m, rowEnd ?? m)
        guard rowStart < rowEnd, n > 0 else { return }
        guard k > 0 else {
            for i in rowStart..<rowEnd { (c + i * ldc).update(repeating: 0, count: n) }
            return
        }
        let mr = K.mr, nr = K.nr, mPadded = roundUp(m, mr)
        let kcs = gemmBlockDepth(k: k, kc: kc), nc = blockWidth(nc)
        let ncMax = roundUp(min(n, nc), nr)
        let halves = (kcs * ncMax + 1) / 2
        let bp = UnsafeMutableRawPointer(scratch).bindMemory(to: Float16.self, capacity: 2 * halves)
        let tile = scratch + halves
        var jc = 0
        while jc < n {
            let ncl = min(nc, n - jc)
            var k0 = 0
            while k0 < k {
                let kl = min(kcs, k - k0)
                packB(b + k0 * ldb + jc, ldb: ldb, steps: kl, ncl: ncl, into: bp)
                let aBlock = packedA + D.weightCopies * k0 * mPadded, aStep = D.weightCopies * kl
                gemmBlockTiles(mr: mr, nr: nr, w: D.Halves.scalarCount, rows: rowStart..<rowEnd, ncl: ncl, c: c + jc, ldc: ldc, tile: tile,
                               accumulate: k0 > 0, columnsBelow: 0,
                               run: { ib, jb, dst, ldd, acc in
                                   K.run(kl, aBlock + ib * aStep, bp + jb * kl, dst, ldd, accumulate: acc)
                               },
                               runVector: { ib, jb, j, dst, ldd, acc in
                                   K.runVector(kl, aBlock + ib * aStep, bp + jb * kl + j, bStride: nr, dst, ldd, accumulate: acc)
                               },
                               runColumn: { _, _, _, _, _, _, _ in },
                               runVector2: { ib, jb, j, dst, ldd, acc in
                                   K.runVector2(kl, aBlock + ib * aStep, bp + jb * kl + j, bStride: nr, dst, ldd, accumulate: acc)
                               })
                k0 += kl
            }
            jc += ncl
        }
    }
}

#if compiler(>=6.2)
/// What `makeHalf`'s closures may capture: a GEMM type is only static functions, shared freely
/// (Swift 6.2 checks metatypes captured by `@Sendable` closures; older compilers have no such
/// protocol and no such check).
public protocol HalfGemmMetatype: SendableMetatype {}
#else
public protocol HalfGemmMetatype {}
#endif

/// A packed GEMM with A in halves and the FP32 GEMM's calling convention otherwise: the FP16 GEMM
/// (this file) and FP16-stored weights (FP16Weights.swift), wrapped alike by `makeHalf`.
public protocol HalfPackedGemm: HalfGemmMetatype {
    static var mr: Int { get }
    static var nr: Int { get }
    /// Floats per vector of the micro-kernel.
    static var width: Int { get }
    static func packedASize(m: Int, k: Int) -> Int
    static func packA(_ a: UnsafePointer<Float>, lda: Int, m: Int, k: Int, kc: Int, into p: UnsafeMutablePointer<Float16>)
    static func scratchSize(m: Int, n: Int, k: Int, kc: Int, nc: Int) -> Int
    static func gemm(m: Int, n: Int, k: Int, packedA: UnsafePointer<Float16>, b: UnsafePointer<Float>, ldb: Int,
                     c: UnsafeMutablePointer<Float>, ldc: Int, scratch: UnsafeMutablePointer<Float>, kc: Int, nc: Int,
                     rowStart: Int, rowEnd: Int?)
}

extension FP16PackedGemm: HalfPackedGemm {
    @inlinable public static var mr: Int { K.mr }
    @inlinable public static var nr: Int { K.nr }
    @inlinable public static var width: Int { D.Halves.scalarCount }
}

extension HalfKernels {
    /// The GEMM `G` with blocks of at most kc steps of k x nc columns, named `level`, its products
    /// by `dot`.
    @inlinable
    public static func makeHalf<G: HalfPackedGemm>(level: String, dot: String, requires: CPUFeatureSet, _: G.Type, kc: Int,
                                                   nc: Int, weightsOnly: Bool) -> HalfKernels {
        let gemm = GemmFunctions(
            level: level, mr: G.mr, nr: G.nr, width: G.width, kc: kc, nc: nc,
            packedASize: { G.packedASize(m: $0, k: $1) },
            packA: { G.packA($0, lda: $1, m: $2, k: $3, kc: kc, into: UnsafeMutableRawPointer($4).assumingMemoryBound(to: Float16.self)) },
            scratchSize: { G.scratchSize(m: $0, n: $1, k: $2, kc: kc, nc: nc) },
            gemm: { m, n, k, a, b, ldb, c, ldc, scratch, rows in
                G.gemm(m: m, n: n, k: k, packedA: UnsafeRawPointer(a).assumingMemoryBound(to: Float16.self), b: b, ldb: ldb, c: c,
                       ldc: ldc, scratch: scratch, kc: kc, nc: nc, rowStart: rows.lowerBound, rowEnd: rows.upperBound)
            })
        return HalfKernels(dot: dot, requires: requires, gemm: gemm, weightsOnly: weightsOnly)
    }

    /// The FP16 GEMM of `D` with blocks of at most kc steps of k summed in FP16 x nc columns, named
    /// `level`.
    @inlinable
    public static func makeFP16<D: FP16ISA>(level: String, dot: String = "fmla .8h", requires: CPUFeatureSet, _: D.Type, kc: Int,
                                            nc: Int) -> HalfKernels {
        let kernels = makeHalf(level: level, dot: dot, requires: requires, FP16PackedGemm<D>.self, kc: kc, nc: nc,
                               weightsOnly: false)
        return kernels.adding(direct: DirectConv3x3Half<D>.functions)
    }
}
#endif
