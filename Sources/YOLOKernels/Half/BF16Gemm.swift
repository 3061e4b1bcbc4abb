// Packed BF16 GEMM: C[m x n] = A[m x k] · B[k x n] with both operands rounded to bfloat16 and FP32
// accumulation and outputs (x86's vdpbf16ps: per 32-bit lane, a pair of bfloat16 products added to
// an FP32 sum), in the GotoBLAS/BLIS scheme of PackedGemm.swift over pairs of steps of k:
//
// - A (the weights) is rounded and packed once, at load (`bfloat16Bits`, the portable model of the
//   instruction's rounding), per block of KC pairs and MR-row panel: per pair, MR UInt32s whose
//   low 16 bits are the row's bfloat16 at k = 2p and high 16 bits the one at k = 2p + 1.
// - B stays FP32 (im2col columns, Winograd-transformed tiles, a 1x1 layer's input): each KC x NC
//   block is rounded to bfloat16 as it is packed (the level's `pairs`: vcvtne2ps2bf16), two rows
//   of k into one row of UInt32 pairs, in NR-column micro-panels.
// - The micro-kernel keeps an MR x NR tile of FP32 sums in registers; over several KC blocks C
//   accumulates (FP32 adds), so everything after the product sees FP32 outputs as from the FP32
//   GEMM (bias, activation, Winograd output transforms).
//
// Tails: rows past m and columns past n are zero in the packed panels, as is the last pair's
// second step when k is odd; edge tiles are computed into a scratch tile and copied out, the last,
// partial NR panel one vector of columns at a time and its last few (< W/2) one column at a time,
// two pairs an instruction (`runColumn`) (gemmBlockTiles, PackedGemm.swift). The FP32
// GEMM's calling convention (`GemmFunctions`, packed A in float-sized words), so that every GEMM
// user of the engine can run either. Generic and @inlinable: the AVX-512 BF16 target instantiates
// it with its instructions.

/// The bfloat16 (upper 16 bits of a float) vcvtne2ps2bf16 makes of `x`: rounded to nearest even;
/// a NaN stays a NaN (made quiet); a denormal counts as a zero of its sign (the instruction works
/// as if MXCSR.DAZ were set); floats past the largest bfloat16 round to infinity.
@inlinable
public func bfloat16Bits(_ x: Float) -> UInt16 {
    let bits = x.bitPattern
    if x.isNaN { return UInt16(truncatingIfNeeded: bits >> 16) | 0x40 }
    if x.isSubnormal { return UInt16(truncatingIfNeeded: bits >> 16) & 0x8000 }
    return UInt16(truncatingIfNeeded: (bits &+ 0x7FFF &+ ((bits >> 16) & 1)) >> 16)
}

/// `x` rounded to bfloat16, as a float (exact).
@inlinable
public func bfloat16Rounded(_ x: Float) -> Float { Float(bitPattern: UInt32(bfloat16Bits(x)) << 16) }

/// One level's bfloat16 instructions.
public protocol BF16DotISA: KernelMetatype {
    associatedtype Floats: SIMD where Floats.Scalar == Float
    /// One bfloat16 pair per lane, as many lanes as `Floats`.
    associatedtype Pairs: SIMD where Pairs.Scalar == UInt32
    /// acc + per lane lo(a)·lo(b) + hi(a)·hi(b), the halves bfloat16, the sums FP32.
    static func dot(_ acc: Floats, _ b: Pairs, _ a: Pairs) -> Floats
    /// Per lane bfloat16(x0) | bfloat16(x1) << 16, rounded as `bfloat16Bits`.
    static func pairs(_ x0: Floats, _ x1: Floats) -> Pairs
    /// Lanes 0 ..< W/2 of `lo`, then lanes 0 ..< W/2 of `hi` (the column kernel's two pairs).
    static func halves(_ lo: Pairs, _ hi: Pairs) -> Pairs
    static func prefetch(_ p: UnsafeRawPointer)
}

extension BF16DotISA {
    @inlinable @inline(__always)
    public static func prefetch(_ p: UnsafeRawPointer) {}

    @inlinable @inline(__always)
    public static func halves(_ lo: Pairs, _ hi: Pairs) -> Pairs {
        var v = lo
        let h = Pairs.scalarCount / 2
        for l in 0..<h { v[h + l] = hi[l] }
        return v
    }
}

/// 8 x (3·W) tiles of FP32 sums: 24 accumulators + 3 B vectors + 1 broadcast (32 zmm registers).
public enum BF16Kernel8x3<D: BF16DotISA> {
    @inlinable public static var mr: Int { 8 }
    @inlinable public static var nr: Int { 3 * D.Floats.scalarCount }

    /// C[8 x NR] (row stride ldc) = (or +=) the product of `pairs` pairs of the packed panels.
    @inlinable @inline(__always)
    static func run(_ pairs: Int, _ a: UnsafePointer<UInt32>, _ b: UnsafePointer<UInt32>, _ c: UnsafeMutablePointer<Float>,
                    _ ldc: Int, accumulate: Bool) {
        typealias F = D.Floats
        let w = F.scalarCount
        var c00 = F(), c01 = F(), c02 = F(), c10 = F(), c11 = F(), c12 = F()
        var c20 = F(), c21 = F(), c22 = F(), c30 = F(), c31 = F(), c32 = F()
        var c40 = F(), c41 = F(), c42 = F(), c50 = F(), c51 = F(), c52 = F()
        var c60 = F(), c61 = F(), c62 = F(), c70 = F(), c71 = F(), c72 = F()
        var pa = a, pb = b
        let ahead = gemmPrefetchSteps * 8
        for _ in 0..<pairs {
            D.prefetch(pa + ahead)
            let b0: D.Pairs = bf16Load(pb), b1: D.Pairs = bf16Load(pb + w), b2: D.Pairs = bf16Load(pb + 2 * w)
            var x = D.Pairs(repeating: pa[0])
            c00 = D.dot(c00, b0, x); c01 = D.dot(c01, b1, x); c02 = D.dot(c02, b2, x)
            x = D.Pairs(repeating: pa[1])
            c10 = D.dot(c10, b0, x); c11 = D.dot(c11, b1, x); c12 = D.dot(c12, b2, x)
            x = D.Pairs(repeating: pa[2])
            c20 = D.dot(c20, b0, x); c21 = D.dot(c21, b1, x); c22 = D.dot(c22, b2, x)
            x = D.Pairs(repeating: pa[3])
            c30 = D.dot(c30, b0, x); c31 = D.dot(c31, b1, x); c32 = D.dot(c32, b2, x)
            x = D.Pairs(repeating: pa[4])
            c40 = D.dot(c40, b0, x); c41 = D.dot(c41, b1, x); c42 = D.dot(c42, b2, x)
            x = D.Pairs(repeating: pa[5])
            c50 = D.dot(c50, b0, x); c51 = D.dot(c51, b1, x); c52 = D.dot(c52, b2, x)
            x = D.Pairs(repeating: pa[6])
            c60 = D.dot(c60, b0, x); c61 = D.dot(c61, b1, x); c62 = D.dot(c62, b2, x)
            x = D.Pairs(repeating: pa[7])
            c70 = D.dot(c70, b0, x); c71 = D.dot(c71, b1, x); c72 = D.dot(c72, b2, x)
            pa += 8
            pb += 3 * w
        }
        @inline(__always) func row(_ r: Int, _ x0: F, _ x1: F, _ x2: F) {
            let pc = c + r * ldc
            gemmStore(x0, pc, accumulate: accumulate)
            gemmStore(x1, pc + w, accumulate: accumulate)
            gemmStore(x2, pc + 2 * w, accumulate: accumulate)
        }
        row(0, c00, c01, c02); row(1, c10, c11, c12); row(2, c20, c21, c22); row(3, c30, c31, c32)
        row(4, c40, c41, c42); row(5, c50, c51, c52); row(6, c60, c61, c62); row(7, c70, c71, c72)
    }

    /// C[8 x W] = (or +=) one vector of a panel's columns, b read with row stride `bStride`.
    @inlinable @inline(__always)
    static func runVector(_ pairs: Int, _ a: UnsafePointer<UInt32>, _ b: UnsafePointer<UInt32>, bStride: Int,
                          _ c: UnsafeMutablePointer<Float>, _ ldc: Int, accumulate: Bool) {
        typealias F = D.Floats
        var c0 = F(), c1 = F(), c2 = F(), c3 = F(), c4 = F(), c5 = F(), c6 = F(), c7 = F()
        var pa = a, pb = b
        for _ in 0..<pairs {
            let v: D.Pairs = bf16Load(pb)
            c0 = D.dot(c0, v, D.Pairs(repeating: pa[0])); c1 = D.dot(c1, v, D.Pairs(repeating: pa[1]))
            c2 = D.dot(c2, v, D.Pairs(repeating: pa[2])); c3 = D.dot(c3, v, D.Pairs(repeating: pa[3]))
            c4 = D.dot(c4, v, D.Pairs(repeating: pa[4])); c5 = D.dot(c5, v, D.Pairs(repeating: pa[5]))
            c6 = D.dot(c6, v, D.Pairs(repeating: pa[6])); c7 = D.dot(c7, v, D.Pairs(repeating: pa[7]))
            pa += 8
            pb += bStride
        }
        gemmStore(c0, c, accumulate: accumulate); gemmStore(c1, c + ldc, accumulate: accumulate)
        gemmStore(c2, c + 2 * ldc, accumulate: accumulate); gemmStore(c3, c + 3 * ldc, accumulate: accumulate)
        gemmStore(c4, c + 4 * ldc, accumulate: accumulate); gemmStore(c5, c + 5 * ldc, accumulate: accumulate)
        gemmStore(c6, c + 6 * ldc, accumulate: accumulate); gemmStore(c7, c + 7 * ldc, accumulate: accumulate)
    }
}

extension BF16Kernel8x3 {
    /// Whether `runColumn` applies: a vector holds two pairs of the panel's 8 rows (W = 2 MR).
    @inlinable static var hasColumnKernel: Bool { D.Floats.scalarCount == 2 * mr }

    /// C[rows x 1] (row stride ldc) = (or +=) one column of a panel: two pairs per instruction,
    /// the packed A panel's 8 rows of pair p in lanes 0-7 and of p + 1 in 8-15 (one load) dotted
    /// with the column's words of p and p + 1, each broadcast to its half (`BF16DotISA.halves`);
    /// four partial sums, the halves added at the end. For the last few (< W/2) columns of C,
    /// where a vector of columns (`runVector`: 8 instructions a pair) wastes most of its lanes:
    /// Winograd F(2x2)'s GEMMs on a 13x13 map have 49 columns, 48 and 1.
    @inlinable @inline(__always)
    static func runColumn(_ pairs: Int, _ a: UnsafePointer<UInt32>, _ b: UnsafePointer<UInt32>, bStride: Int,
                          _ c: UnsafeMutablePointer<Float>, _ ldc: Int, rows: Int, accumulate: Bool) {
        typealias F = D.Floats
        var s0 = F(), s1 = F(), s2 = F(), s3 = F()
        var pa = a, pb = b, p = 0
        @inline(__always) func step(_ s: inout F, _ pa: UnsafePointer<UInt32>, _ pb: UnsafePointer<UInt32>) {
            s = D.dot(s, D.halves(D.Pairs(repeating: pb[0]), D.Pairs(repeating: pb[bStride])), bf16Load(pa))
        }
        while p + 8 <= pairs {
            step(&s0, pa, pb); step(&s1, pa + 16, pb + 2 * bStride)
            step(&s2, pa + 32, pb + 4 * bStride); step(&s3, pa + 48, pb + 6 * bStride)
            pa += 64
            pb += 8 * bStride
            p += 8
        }
        while p + 2 <= pairs {
            step(&s0, pa, pb)
            pa += 16
            pb += 2 * bStride
            p += 2
        }
        if p < pairs {   // an odd last pair: its 8 rows alone, lanes 8-15 zero
            var x = D.Pairs(), y = D.Pairs()
            for l in 0..<8 { x[l] = pa[l]; y[l] = pb[0] }
            s1 = D.dot(s1, y, x)
        }
        let sum = (s0 + s1) + (s2 + s3)
        for r in 0..<rows {
            let v = sum[r] + sum[8 + r]
            c[r * ldc] = accumulate ? c[r * ldc] + v : v
        }
    }
}

@inlinable @inline(__always)
func bf16Load<V: SIMD>(_ p: UnsafePointer<UInt32>) -> V where V.Scalar == UInt32 {
    UnsafeRawPointer(p).loadUnaligned(as: V.self)
}

/// The packed BF16 GEMM driver; `kc` counts steps of k (rounded down to pairs), `nc` columns. The
/// same `kc` must be given to `packA`, `packedASize`, `scratchSize` and `gemm`.
public enum BF16PackedGemm<D: BF16DotISA> {
    public typealias K = BF16Kernel8x3<D>

    @inlinable @inline(__always)
    static func roundUp(_ x: Int, _ to: Int) -> Int { (x + to - 1) / to * to }

    /// Pairs per block: the pairs of k split into equal blocks of at most kc / 2.
    @inlinable @inline(__always)
    static func blockPairs(k: Int, kc: Int) -> Int {
        let pairs = (k + 1) / 2, most = max(1, kc / 2)
        let blocks = max(1, (pairs + most - 1) / most)
        return (pairs + blocks - 1) / blocks
    }

    @inlinable @inline(__always)
    static func blockWidth(_ nc: Int) -> Int { max(K.nr, nc / K.nr * K.nr) }

    /// Words (UInt32, float-sized) of packed A for m rows of depth k.
    @inlinable @inline(__always)
    public static func packedASize(m: Int, k: Int) -> Int { roundUp(m, K.mr) * ((k + 1) / 2) }

    /// Rounds and packs A (m x k, row stride lda) into `p`: per block of pairs (offset p0, pl
    /// pairs) at p + p0 * mPadded, the MR-row panels one after the other, each pl pairs of MR rows;
    /// zero past row m and past k.
    @inlinable @inline(__always)
    public static func packA(_ a: UnsafePointer<Float>, lda: Int, m: Int, k: Int, kc: Int, into p: UnsafeMutablePointer<UInt32>) {
        let mr = K.mr, mPadded = roundUp(m, mr), pairs = (k + 1) / 2, kcp = blockPairs(k: k, kc: kc)
        var p0 = 0
        while p0 < pairs {
            let pl = min(kcp, pairs - p0)
            var ib = 0
            while ib < mPadded {
                let panel = p + p0 * mPadded + ib * pl
                for q in 0..<pl {
                    for r in 0..<mr {
                        let row = ib + r, kk = 2 * (p0 + q)
                        var pair: UInt32 = 0
                        if row < m {
                            let src = a + row * lda
                            pair = UInt32(bfloat16Bits(src[kk])) | (kk + 1 < k ? UInt32(bfloat16Bits(src[kk + 1])) << 16 : 0)
                        }
                        panel[q * mr + r] = pair
                    }
                }
                ib += mr
            }
            p0 += pl
        }
    }

    /// Words of scratch `gemm` needs: a packed block of B and an MR x NR edge tile.
    @inlinable @inline(__always)
    public static func scratchSize(m: Int, n: Int, k: Int, kc: Int, nc: Int) -> Int {
        max(1, blockPairs(k: k, kc: kc)) * roundUp(max(1, min(n, blockWidth(nc))), K.nr) + K.mr * K.nr
    }

    /// Rounds and packs rows 0..<steps (pl = ceil(steps / 2) pairs), columns 0..<ncl of FP32 B (row
    /// stride ldb) into NR-column micro-panels of pairs, zero past column ncl and past the rows.
    @inlinable @inline(__always)
    static func packB(_ b: UnsafePointer<Float>, ldb: Int, steps: Int, ncl: Int, into bp: UnsafeMutablePointer<UInt32>) {
        typealias F = D.Floats
        let nr = K.nr, w = F.scalarCount, pl = (steps + 1) / 2
        let full = ncl / nr, rest = ncl - full * nr
        for q in 0..<pl {
            let r0 = b + 2 * q * ldb, second = 2 * q + 1 < steps
            let r1 = second ? r0 + ldb : r0
            var dst = bp + q * nr
            var j = 0
            for _ in 0..<full {
                var v = 0
                while v < nr {
                    let x0: F = gemmLoad(r0 + j + v), x1: F = second ? gemmLoad(r1 + j + v) : F()
                    UnsafeMutableRawPointer(dst + v).storeBytes(of: D.pairs(x0, x1), as: D.Pairs.self)
                    v += w
                }
                j += nr
                dst += pl * nr
            }
            if rest > 0 {
                var v = 0
                while v < nr {
                    var x0 = F(), x1 = F()
                    for l in 0..<w where v + l < rest {
                        x0[l] = r0[j + v + l]
                        if second { x1[l] = r1[j + v + l] }
                    }
                    UnsafeMutableRawPointer(dst + v).storeBytes(of: D.pairs(x0, x1), as: D.Pairs.self)
                    v += w
                }
            }
        }
    }

    /// C[m x n] (row stride ldc >= n) = A · B, A packed by `packA` (same kc), B k x n FP32 (row
    /// stride ldb >= n), with `scratch` of `scratchSize` words. Only rows `rowStart..<rowEnd`
    /// (rowStart a multiple of MR): threads may split rows, or columns (b + j, c + j, fewer n).
    @inlinable @inline(__always)
    public static func gemm(m: Int, n: Int, k: Int, packedA: UnsafePointer<UInt32>, b: UnsafePointer<Float>, ldb: Int,
                            c: UnsafeMutablePointer<Float>, ldc: Int, scratch: UnsafeMutablePointer<Float>, kc: Int, nc: Int,
                            rowStart: Int = 0, rowEnd: Int? = nil) {
        gemmBlocks(m: m, n: n, k: k, packedA: packedA, c: c, ldc: ldc, scratch: scratch, kc: kc, nc: nc,
                   rowStart: rowStart, rowEnd: rowEnd) { jc, p0, pl, ncl, bp in
            packB(b + 2 * p0 * ldb + jc, ldb: ldb, steps: min(2 * pl, k - 2 * p0), ncl: ncl, into: bp)
        }
    }

    /// The blocks of `gemm`, B's block of pairs p0 ..< p0 + pl and columns jc ..< jc + ncl packed
    /// into bp by `pack(jc, p0, pl, ncl, bp)`.
    @inlinable @inline(__always)
    static func gemmBlocks(m: Int, n: Int, k: Int, packedA: UnsafePointer<UInt32>, c: UnsafeMutablePointer<Float>, ldc: Int,
                           scratch: UnsafeMutablePointer<Float>, kc: Int, nc: Int, rowStart: Int, rowEnd: Int?,
                           pack: (Int, Int, Int, Int, UnsafeMutablePointer<UInt32>) -> Void) {
        let rowEnd = min(m, rowEnd ?? m)
        guard rowStart < rowEnd, n > 0 else { return }
        guard k > 0 else {
            for i in rowStart..<rowEnd { (c + i * ldc).update(repeating: 0, count: n) }
            return
        }
        let mr = K.mr, nr = K.nr, w = D.Floats.scalarCount, mPadded = roundUp(m, mr), pairs = (k + 1) / 2
        let kcp = blockPairs(k: k, kc: kc), nc = blockWidth(nc)
        let ncMax = roundUp(min(n, nc), nr)
        let bp = UnsafeMutableRawPointer(scratch).bindMemory(to: UInt32.self, capacity: kcp * ncMax)
        let tile = scratch + kcp * ncMax
        var jc = 0
        while jc < n {
            let ncl = min(nc, n - jc)
            var p0 = 0
            while p0 < pairs {
                let pl = min(kcp, pairs - p0)
                let accumulate = p0 > 0
                pack(jc, p0, pl, ncl, bp)
                let aBlock = packedA + p0 * mPadded
                gemmBlockTiles(mr: mr, nr: nr, w: w, rows: rowStart..<rowEnd, ncl: ncl, c: c + jc, ldc: ldc, tile: tile,
                               accumulate: accumulate, columnsBelow: K.hasColumnKernel ? w / 2 : 0,
                               run: { ib, jb, dst, ldd, acc in
                                   K.run(pl, aBlock + ib * pl, bp + jb * pl, dst, ldd, accumulate: acc)
                               },
                               runVector: { ib, jb, j, dst, ldd, acc in
                                   K.runVector(pl, aBlock + ib * pl, bp + jb * pl + j, bStride: nr, dst, ldd, accumulate: acc)
                               },
                               runColumn: { ib, jb, j, dst, ldd, rows, acc in
                                   K.runColumn(pl, aBlock + ib * pl, bp + jb * pl + j, bStride: nr, dst, ldd, rows: rows, accumulate: acc)
                               })
                p0 += pl
            }
            jc += ncl
        }
    }
}

extension HalfKernels {
    /// The BF16 GEMM of dot product `D` with blocking kc steps of k x nc columns, named `level`.
    @inlinable
    public static func make<D: BF16DotISA>(level: String, dot: String, requires: CPUFeatureSet, _: D.Type, kc: Int,
                                           nc: Int) -> HalfKernels {
        typealias G = BF16PackedGemm<D>
        let gemm = GemmFunctions(
            level: level, mr: G.K.mr, nr: G.K.nr, width: D.Floats.scalarCount, kc: kc, nc: nc,
            packedASize: { G.packedASize(m: $0, k: $1) },
            packA: { G.packA($0, lda: $1, m: $2, k: $3, kc: kc, into: UnsafeMutableRawPointer($4).assumingMemoryBound(to: UInt32.self)) },
            scratchSize: { G.scratchSize(m: $0, n: $1, k: $2, kc: kc, nc: nc) },
            gemm: { m, n, k, a, b, ldb, c, ldc, scratch, rows in
                G.gemm(m: m, n: n, k: k, packedA: UnsafeRawPointer(a).assumingMemoryBound(to: UInt32.self), b: b, ldb: ldb, c: c, ldc: ldc, scratch: scratch, kc: kc, nc: nc,
                       rowStart: rows.lowerBound, rowEnd: rows.upperBound)
            })
        return HalfKernels(dot: dot, requires: requires, gemm: gemm)
    }
}
