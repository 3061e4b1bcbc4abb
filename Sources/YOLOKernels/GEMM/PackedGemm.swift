// Packed single-precision GEMM, C[m x n] = A[m x k] · B[k x n] (beta 0: C is overwritten),
// row-major, in the GotoBLAS/BLIS scheme:
//
// - A is packed once (at model load) into micro-panels of MR rows: for every block of KC
//   columns of k, for every MR-row panel, KC steps of MR values (rows past m are zero).
// - B is packed per call, one KC x NC block at a time, into caller-provided scratch:
//   micro-panels of NR columns, KC steps of NR values (columns past n are zero).
// - The micro-kernel keeps an MR x NR tile of C in registers (MR x NR/W SIMD accumulators)
//   and, per step of k, loads NR/W vectors of B and broadcasts MR values of A.
//
// Loop order: NC blocks of n > KC blocks of k (pack B) > MR panels of m > NR panels of n. The
// A micro-panel (KC x MR) stays in L1 while the packed B block (KC x NC) streams from L2.
// Tails: a partial MR panel (m % MR) is computed whole into a small tile in the scratch and
// copied out; the last, partial NR panel two vectors (2W columns) at a time while that many
// are left, then one (W columns), and its last < W/2 columns one column at a time (A panel vector x broadcast B). KC is split into equal blocks
// (blockDepth), NC rounded to a multiple of NR (blockWidth). Threads can share one packed A by
// taking row ranges (rowStart a multiple of MR) or column ranges (b + j, c + j, fewer n).
//
// Everything is generic and @inlinable: the per-ISA targets (YOLOKernelsAVX2, ...) instantiate
// it with their SIMD width and a tag type of their own, compiled for their CPU (-target-cpu).
// The tag keeps the specializations' symbol names distinct per target, so the linker can never
// merge an AVX-512 copy with a baseline one. After editing this file, touch
// Sources/YOLOKernels{Baseline,AVX2,AVX512}/*.swift: an incremental debug build does not
// recompile them for a change inside @inlinable bodies (release builds are whole-module).

/// The depth of each block when k is split into ceil(k / kc) blocks of equal depth (the last one
/// possibly shorter), so that no block is only a few steps deep (k = 288 with kc = 256: two blocks
/// of 144, not 256 + 32). Every packed GEMM blocks k this way (PackedGemm, FP16PackedGemm).
@inlinable @inline(__always)
public func gemmBlockDepth(k: Int, kc: Int) -> Int {
    let blocks = max(1, (k + max(1, kc) - 1) / max(1, kc))
    return (k + blocks - 1) / blocks
}

/// Packs A (m x k, row stride lda) into `p` as every packed GEMM lays it out (`convert` turns each
/// value into the GEMM's element): for every block of k (gemmBlockDepth: offset k0, kl steps), at
/// p + k0 * mPadded, the MR-row panels one after the other, each kl steps of MR values, zero past
/// row m.
@inlinable @inline(__always)
public func gemmPackA<T>(_ a: UnsafePointer<Float>, lda: Int, m: Int, k: Int, kc: Int, mr: Int,
                         into p: UnsafeMutablePointer<T>, _ convert: (Float) -> T) {
    let mPadded = (m + mr - 1) / mr * mr, kcs = gemmBlockDepth(k: k, kc: kc), zero = convert(0)
    var k0 = 0
    while k0 < k {
        let kl = min(kcs, k - k0)
        var ib = 0
        while ib < mPadded {
            let panel = p + k0 * mPadded + ib * kl
            for r in 0..<mr {
                let row = ib + r
                if row < m {
                    let src = a + row * lda + k0
                    for q in 0..<kl { panel[q * mr + r] = convert(src[q]) }
                } else {
                    for q in 0..<kl { panel[q * mr + r] = zero }
                }
            }
            ib += mr
        }
        k0 += kl
    }
}

/// Where the packed GEMM's driver finds A's panels: `panel(k0, kcl, ib)` is the kcl x MR panel of
/// rows ib..<ib + MR for the block of k at k0, asked for each block's panels in turn (all tiles of
/// one panel, then the next panel's).
public protocol GemmPanels {
    func panel(_ k0: Int, _ kcl: Int, _ ib: Int) -> UnsafePointer<Float>
}

/// A packed by PackedGemm.packA: each panel where it lies.
public struct GemmPackedPanels: GemmPanels {
    @usableFromInline let a: UnsafePointer<Float>
    @usableFromInline let mPadded: Int
    @inlinable @inline(__always)
    public init(a: UnsafePointer<Float>, mPadded: Int) { (self.a, self.mPadded) = (a, mPadded) }
    @inlinable @inline(__always)
    public func panel(_ k0: Int, _ kcl: Int, _ ib: Int) -> UnsafePointer<Float> { a + k0 * mPadded + ib * kcl }
}

/// The packed GEMM driver for micro-kernel `K` with blocking KC (steps of k per packed block)
/// and NC (columns of B per packed block). `packA`, `packedASize`, `scratchSize` and `gemm`
/// must be called with the same `kc` (and `scratchSize`/`gemm` with the same `nc`).
public enum PackedGemm<K: GemmMicroKernel> {
    @inlinable @inline(__always)
    static func roundUp(_ x: Int, _ to: Int) -> Int { (x + to - 1) / to * to }

    /// The KC actually used for depth k: k split into ceil(k / kc) blocks of equal depth (the
    /// last one possibly shorter), so that no block is only a few steps deep (k = 288 with
    /// kc = 256: two blocks of 144, not 256 + 32).
    @inlinable @inline(__always)
    public static func blockDepth(k: Int, kc: Int) -> Int { gemmBlockDepth(k: k, kc: kc) }

    /// The NC actually used: nc rounded down to a multiple of NR (at least NR), so that only
    /// the last block of n has a partial micro-panel.
    @inlinable @inline(__always)
    public static func blockWidth(_ nc: Int) -> Int { max(K.nr, nc / K.nr * K.nr) }

    /// Floats of packed A for an m x k matrix.
    @inlinable @inline(__always)
    public static func packedASize(m: Int, k: Int) -> Int { roundUp(m, K.mr) * k }

    /// Packs A (m x k, row stride lda) into `p` (`packedASize(m:k:)` floats): for every KC block
    /// of k (offset pc, length kcl), at p + pc * mPadded, the MR-row panels one after the other,
    /// each kcl steps of MR values, zero past row m.
    @inlinable @inline(__always)
    public static func packA(_ a: UnsafePointer<Float>, lda: Int, m: Int, k: Int, kc: Int,
                             into p: UnsafeMutablePointer<Float>) {
        gemmPackA(a, lda: lda, m: m, k: k, kc: kc, mr: K.mr, into: p) { $0 }
    }

    /// Floats of scratch `gemm` needs: one packed KC x NC block of B and one MR x NR edge tile.
    @inlinable @inline(__always)
    public static func scratchSize(m: Int, n: Int, k: Int, kc: Int, nc: Int) -> Int {
        max(1, blockDepth(k: k, kc: kc)) * roundUp(max(1, min(n, blockWidth(nc))), K.nr) + K.mr * K.nr
    }

    /// Packs rows 0..<kcl, columns 0..<ncl of B (row stride ldb) into NR-column micro-panels.
    @inlinable @inline(__always)
    static func packB(_ b: UnsafePointer<Float>, ldb: Int, kcl: Int, ncl: Int, into bp: UnsafeMutablePointer<Float>) {
        let nr = K.nr, w = K.Vector.scalarCount
        let full = ncl / nr, rest = ncl - full * nr
        for q in 0..<kcl {
            let src = b + q * ldb
            var dst = bp + q * nr
            var j = 0
            for _ in 0..<full {
                var v = 0
                while v < nr {
                    let x: K.Vector = gemmLoad(src + j + v)
                    UnsafeMutableRawPointer(dst + v).storeBytes(of: x, as: K.Vector.self)
                    v += w
                }
                j += nr
                dst += kcl * nr
            }
            if rest > 0 {
                for v in 0..<rest { dst[v] = src[j + v] }
                for v in rest..<nr { dst[v] = 0 }
            }
        }
    }

    /// C[rows x 1] (row stride ldc) = (or +=) one column of the tile: the packed A panel's MR
    /// values per step (a vector) times the column's B value (broadcast), with eight partial
    /// sums over k to hide the FMA latency (two FMA units, four cycles each). For the last few (< W/2) columns of C, where a
    /// whole vector of columns would waste most of its FMAs.
    @inlinable @inline(__always)
    static func runColumn(_ k: Int, _ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, bStride: Int,
                          _ c: UnsafeMutablePointer<Float>, _ ldc: Int, rows: Int, accumulate: Bool) {
        typealias C = K.Column
        let mr = K.mr
        var s0 = C(), s1 = C(), s2 = C(), s3 = C(), s4 = C(), s5 = C(), s6 = C(), s7 = C()
        var pa = a, pb = b, p = 0
        while p + 8 <= k {
            s0 = gemmMulAdd(s0, C(repeating: pb[0]), gemmLoad(pa) as C, K.ISA.self)
            s1 = gemmMulAdd(s1, C(repeating: pb[bStride]), gemmLoad(pa + mr) as C, K.ISA.self)
            s2 = gemmMulAdd(s2, C(repeating: pb[2 * bStride]), gemmLoad(pa + 2 * mr) as C, K.ISA.self)
            s3 = gemmMulAdd(s3, C(repeating: pb[3 * bStride]), gemmLoad(pa + 3 * mr) as C, K.ISA.self)
            s4 = gemmMulAdd(s4, C(repeating: pb[4 * bStride]), gemmLoad(pa + 4 * mr) as C, K.ISA.self)
            s5 = gemmMulAdd(s5, C(repeating: pb[5 * bStride]), gemmLoad(pa + 5 * mr) as C, K.ISA.self)
            s6 = gemmMulAdd(s6, C(repeating: pb[6 * bStride]), gemmLoad(pa + 6 * mr) as C, K.ISA.self)
            s7 = gemmMulAdd(s7, C(repeating: pb[7 * bStride]), gemmLoad(pa + 7 * mr) as C, K.ISA.self)
            pa += 8 * mr
            pb += 8 * bStride
            p += 8
        }
        while p < k {
            s0 = gemmMulAdd(s0, C(repeating: pb[0]), gemmLoad(pa) as C, K.ISA.self)
            pa += mr
            pb += bStride
            p += 1
        }
        let sum = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
        for r in 0..<rows {
            c[r * ldc] = accumulate ? c[r * ldc] + sum[r] : sum[r]
        }
    }

    /// C[m x n] (row stride ldc >= n) = A · B[k x n] (row stride ldb >= n), with A packed by
    /// `packA` (same kc) and `scratch` holding `scratchSize(m:n:k:kc:nc:)` floats. Only rows
    /// `rowStart..<rowEnd` of C are computed (rowStart a multiple of MR; by default all): threads
    /// can share one packed A by taking row ranges.
    @inlinable @inline(__always)
    public static func gemm(m: Int, n: Int, k: Int, packedA: UnsafePointer<Float>,
                            b: UnsafePointer<Float>, ldb: Int, c: UnsafeMutablePointer<Float>, ldc: Int,
                            scratch: UnsafeMutablePointer<Float>, kc: Int, nc: Int,
                            rowStart: Int = 0, rowEnd: Int? = nil) {
        blocks(m: m, n: n, k: k, panels: GemmPackedPanels(a: packedA, mPadded: roundUp(m, K.mr)), b: b, ldb: ldb, c: c,
               ldc: ldc, scratch: scratch, kc: kc, nc: nc, rowStart: rowStart, rowEnd: rowEnd)
    }

    /// `gemm`'s loops with A's panels from `panels` (FP16-stored weights widen them there:
    /// FP16Weights.swift).
    @inlinable @inline(__always)
    public static func blocks<P: GemmPanels>(m: Int, n: Int, k: Int, panels: P, b: UnsafePointer<Float>, ldb: Int,
                                             c: UnsafeMutablePointer<Float>, ldc: Int, scratch: UnsafeMutablePointer<Float>,
                                             kc: Int, nc: Int, rowStart: Int, rowEnd: Int?) {
        let rowEnd = min(m, rowEnd ?? m)
        guard rowStart < rowEnd, n > 0 else { return }
        guard k > 0 else {
            for i in rowStart..<rowEnd { (c + i * ldc).update(repeating: 0, count: n) }
            return
        }
        let mr = K.mr, nr = K.nr, w = K.Vector.scalarCount, kc = blockDepth(k: k, kc: kc)
        let nc = blockWidth(nc)
        let ncMax = roundUp(min(n, nc), nr), kcMax = kc
        let bp = scratch, tile = scratch + kcMax * ncMax
        var jc = 0
        while jc < n {
            let ncl = min(nc, n - jc)
            var pc = 0
            while pc < k {
                let kcl = min(kc, k - pc)
                let accumulate = pc > 0
                packB(b + pc * ldb + jc, ldb: ldb, kcl: kcl, ncl: ncl, into: bp)
                gemmBlockTiles(mr: mr, nr: nr, w: w, rows: rowStart..<rowEnd, ncl: ncl, c: c + jc, ldc: ldc, tile: tile,
                               accumulate: accumulate, columnsBelow: w / 2,
                               run: { ib, jb, dst, ldd, acc in
                                   K.run(kcl, panels.panel(pc, kcl, ib), bp + jb * kcl, dst, ldd, accumulate: acc)
                               },
                               runVector: { ib, jb, j, dst, ldd, acc in
                                   K.runVector(kcl, panels.panel(pc, kcl, ib), bp + jb * kcl + j, bStride: nr, dst, ldd, accumulate: acc)
                               },
                               runColumn: { ib, jb, j, dst, ldd, rows, acc in
                                   runColumn(kcl, panels.panel(pc, kcl, ib), bp + jb * kcl + j, bStride: nr, dst, ldd, rows: rows, accumulate: acc)
                               },
                               runVector2: { ib, jb, j, dst, ldd, acc in
                                   K.runVector2(kcl, panels.panel(pc, kcl, ib), bp + jb * kcl + j, bStride: nr, dst, ldd, accumulate: acc)
                               })
                pc += kcl
            }
            jc += ncl
        }
    }
}

/// dst[rows x cols] (row stride ldd) = (or +=) src (row stride lds): an edge tile computed whole
/// in scratch, merged into C (by gemmBlockTiles).
@inlinable @inline(__always)
func gemmCopyTile(_ src: UnsafeMutablePointer<Float>, _ lds: Int, rows: Int, cols: Int,
                  to dst: UnsafeMutablePointer<Float>, _ ldd: Int, accumulate: Bool) {
    for r in 0..<rows {
        let s = src + r * lds, d = dst + r * ldd
        if accumulate {
            for j in 0..<cols { d[j] += s[j] }
        } else {
            for j in 0..<cols { d[j] = s[j] }
        }
    }
}

/// The MR x NR tiles of one packed block, as both packed GEMMs (this file's and BF16Gemm.swift's)
/// walk them: rows `rows` of C (at `c`, row stride ldc), columns 0..<ncl. Whole tiles go straight
/// into C (`run(ib, jb, dst, ldd, accumulate)`), a partial MR panel whole into `tile` and is copied
/// out; the last, partial NR panel two vectors of W columns at a time while 2W are left
/// (`runVector2`, when given), then one (`runVector(ib, jb, j, dst, ldd, accumulate)`, j the
/// offset in the panel), and its last columns, when fewer than
/// `columnsBelow` are left, one at a time (`runColumn(ib, jb, j, dst, ldd, rows, accumulate)`).
@inlinable @inline(__always)
func gemmBlockTiles(mr: Int, nr: Int, w: Int, rows: Range<Int>, ncl: Int, c: UnsafeMutablePointer<Float>, ldc: Int,
                    tile: UnsafeMutablePointer<Float>, accumulate: Bool, columnsBelow: Int,
                    run: (Int, Int, UnsafeMutablePointer<Float>, Int, Bool) -> Void,
                    runVector: (Int, Int, Int, UnsafeMutablePointer<Float>, Int, Bool) -> Void,
                    runColumn: (Int, Int, Int, UnsafeMutablePointer<Float>, Int, Int, Bool) -> Void,
                    runVector2: ((Int, Int, Int, UnsafeMutablePointer<Float>, Int, Bool) -> Void)? = nil) {
    var ib = rows.lowerBound
    while ib < rows.upperBound {
        let rowCount = min(mr, rows.upperBound - ib)
        var jb = 0
        while jb < ncl {
            let cols = min(nr, ncl - jb)
            let cTile = c + ib * ldc + jb
            if cols == nr {
                if rowCount == mr {
                    run(ib, jb, cTile, ldc, accumulate)
                } else {
                    run(ib, jb, tile, nr, false)
                    gemmCopyTile(tile, nr, rows: rowCount, cols: nr, to: cTile, ldc, accumulate: accumulate)
                }
            } else {
                var j = 0
                while j < cols {
                    if cols - j < columnsBelow {
                        for jj in j..<cols { runColumn(ib, jb, jj, cTile + jj, ldc, rowCount, accumulate) }
                        break
                    }
                    if let runVector2, cols - j >= 2 * w {
                        if rowCount == mr {
                            runVector2(ib, jb, j, cTile + j, ldc, accumulate)
                        } else {
                            runVector2(ib, jb, j, tile, 2 * w, false)
                            gemmCopyTile(tile, 2 * w, rows: rowCount, cols: 2 * w, to: cTile + j, ldc, accumulate: accumulate)
                        }
                        j += 2 * w
                        continue
                    }
                    let vcols = min(w, cols - j)
                    if rowCount == mr && vcols == w {
                        runVector(ib, jb, j, cTile + j, ldc, accumulate)
                    } else {
                        runVector(ib, jb, j, tile, w, false)
                        gemmCopyTile(tile, w, rows: rowCount, cols: vcols, to: cTile + j, ldc, accumulate: accumulate)
                    }
                    j += w
                }
            }
            jb += nr
        }
        ib += mr
    }
}
