// The INT8 GEMM's last, partial panel of columns (Int8Gemm.swift): fewer than NR columns, so the
// register tile of the micro-kernel does not apply. They run a vector (W columns) at a time, two
// at a time where MR is 8: 169 columns (a 13x13 map) are 3 full panels of 48 and 25 columns, and
// the 25 are 8 rows x 2 vectors in one pass over the panel of A (16 independent sums, where one
// vector has 8: too few to keep vpdpbusd's two pipelines busy through its latency; 8.7% of an
// INT8 forward's samples were in the one-vector code on a Xeon with AVX-512 VNNI). A vector that
// is only partly columns of C goes through the scratch tile and is merged by scalar code that
// rounds as the vector code does, or, where the level has masked loads and stores
// (`Int8DotISA.partialVectors`: AVX2 and AVX-512), straight to C, lanes past the last column
// neither read nor written (a 13x13 map's GEMM spent 5% of its time in that merge, the 16-bit
// pair GEMM 11%: docs/performance-low-precision.md, "INT8 without a column matrix").

/// MR (4, 6 or 8) x W: one vector of a partial panel's columns.
@inlinable @inline(__always)
func int8RunVector<D: Int8DotISA>(_ mr: Int, _ groups: Int, _ a: UnsafeRawPointer, _ b: UnsafeRawPointer, bStride: Int,
                                  _ c: UnsafeMutablePointer<Float>, _ ldc: Int, count: Int = D.Acc.scalarCount, accumulate: Bool,
                                  finish: Bool, comp: UnsafePointer<Int32>, scale: UnsafePointer<Float>, _: D.Type) {
    let ab = D.aBytes
    var c0 = D.Acc(), c1 = D.Acc(), c2 = D.Acc(), c3 = D.Acc(), c4 = D.Acc(), c5 = D.Acc(), c6 = D.Acc(), c7 = D.Acc()
    var pa = a, pb = b
    if mr == 8 {
        for _ in 0..<groups {
            let v = D.loadB(pb)
            c0 = D.dot(c0, v, D.loadA(pa)); c1 = D.dot(c1, v, D.loadA(pa + ab))
            c2 = D.dot(c2, v, D.loadA(pa + 2 * ab)); c3 = D.dot(c3, v, D.loadA(pa + 3 * ab))
            c4 = D.dot(c4, v, D.loadA(pa + 4 * ab)); c5 = D.dot(c5, v, D.loadA(pa + 5 * ab))
            c6 = D.dot(c6, v, D.loadA(pa + 6 * ab)); c7 = D.dot(c7, v, D.loadA(pa + 7 * ab))
            pa += 8 * ab
            pb += bStride
        }
    } else if mr == 6 {
        for _ in 0..<groups {
            let v = D.loadB(pb)
            c0 = D.dot(c0, v, D.loadA(pa)); c1 = D.dot(c1, v, D.loadA(pa + ab))
            c2 = D.dot(c2, v, D.loadA(pa + 2 * ab)); c3 = D.dot(c3, v, D.loadA(pa + 3 * ab))
            c4 = D.dot(c4, v, D.loadA(pa + 4 * ab)); c5 = D.dot(c5, v, D.loadA(pa + 5 * ab))
            pa += 6 * ab
            pb += bStride
        }
    } else {
        for _ in 0..<groups {
            let v = D.loadB(pb)
            c0 = D.dot(c0, v, D.loadA(pa)); c1 = D.dot(c1, v, D.loadA(pa + ab))
            c2 = D.dot(c2, v, D.loadA(pa + 2 * ab)); c3 = D.dot(c3, v, D.loadA(pa + 3 * ab))
            pa += 4 * ab
            pb += bStride
        }
    }
    @inline(__always) func row(_ r: Int, _ x: D.Acc) {
        let (k, s) = (finish ? comp[r] : 0, finish || D.accumulatesFloats ? scale[r] : 0)
        if count == D.Acc.scalarCount {
            int8Store(x, c + r * ldc, accumulate: accumulate, finish: finish, comp: k, scale: s, D.self)
        } else {
            int8StorePartial(x, c + r * ldc, count: count, accumulate: accumulate, finish: finish, comp: k, scale: s, D.self)
        }
    }
    row(0, c0); row(1, c1); row(2, c2); row(3, c3)
    if mr >= 6 { row(4, c4); row(5, c5) }
    if mr == 8 { row(6, c6); row(7, c7) }
}

/// 8 x (2·W): two vectors of a partial panel's columns in one pass over A. The first vector goes
/// to `c0` (stride ldc0), the second to `c1` with its own flags (a partial vector: the scratch
/// tile, neither accumulated nor finished).
@inlinable @inline(__always)
func int8RunTwoVectors<D: Int8DotISA>(_ groups: Int, _ a: UnsafeRawPointer, _ b: UnsafeRawPointer, bStride: Int,
                                      _ c0: UnsafeMutablePointer<Float>, _ ldc0: Int, accumulate0: Bool, finish0: Bool,
                                      _ c1: UnsafeMutablePointer<Float>, _ ldc1: Int, count1: Int = D.Acc.scalarCount,
                                      accumulate1: Bool, finish1: Bool,
                                      comp: UnsafePointer<Int32>, scale: UnsafePointer<Float>, _: D.Type) {
    let ab = D.aBytes, vb = 4 * D.Acc.scalarCount
    var x0 = D.Acc(), x1 = D.Acc(), x2 = D.Acc(), x3 = D.Acc(), x4 = D.Acc(), x5 = D.Acc(), x6 = D.Acc(), x7 = D.Acc()
    var y0 = D.Acc(), y1 = D.Acc(), y2 = D.Acc(), y3 = D.Acc(), y4 = D.Acc(), y5 = D.Acc(), y6 = D.Acc(), y7 = D.Acc()
    var pa = a, pb = b
    for _ in 0..<groups {
        let u = D.loadB(pb), v = D.loadB(pb + vb)
        var w = D.loadA(pa)
        x0 = D.dot(x0, u, w); y0 = D.dot(y0, v, w)
        w = D.loadA(pa + ab); x1 = D.dot(x1, u, w); y1 = D.dot(y1, v, w)
        w = D.loadA(pa + 2 * ab); x2 = D.dot(x2, u, w); y2 = D.dot(y2, v, w)
        w = D.loadA(pa + 3 * ab); x3 = D.dot(x3, u, w); y3 = D.dot(y3, v, w)
        w = D.loadA(pa + 4 * ab); x4 = D.dot(x4, u, w); y4 = D.dot(y4, v, w)
        w = D.loadA(pa + 5 * ab); x5 = D.dot(x5, u, w); y5 = D.dot(y5, v, w)
        w = D.loadA(pa + 6 * ab); x6 = D.dot(x6, u, w); y6 = D.dot(y6, v, w)
        w = D.loadA(pa + 7 * ab); x7 = D.dot(x7, u, w); y7 = D.dot(y7, v, w)
        pa += 8 * ab
        pb += bStride
    }
    @inline(__always) func row(_ r: Int, _ x: D.Acc, _ y: D.Acc) {
        int8Store(x, c0 + r * ldc0, accumulate: accumulate0, finish: finish0, comp: finish0 ? comp[r] : 0,
                  scale: finish0 || D.accumulatesFloats ? scale[r] : 0, D.self)
        let (k1, s1) = (finish1 ? comp[r] : 0, finish1 || D.accumulatesFloats ? scale[r] : 0)
        if count1 == D.Acc.scalarCount {
            int8Store(y, c1 + r * ldc1, accumulate: accumulate1, finish: finish1, comp: k1, scale: s1, D.self)
        } else {
            int8StorePartial(y, c1 + r * ldc1, count: count1, accumulate: accumulate1, finish: finish1, comp: k1, scale: s1, D.self)
        }
    }
    row(0, x0, y0); row(1, x1, y1); row(2, x2, y2); row(3, x3, y3)
    row(4, x4, y4); row(5, x5, y5); row(6, x6, y6); row(7, x7, y7)
}

/// The `cols` (< NR) columns of a partial panel for a full band of `mr` rows: whole vectors
/// straight to C (`cTile`, stride ldc), a last partial vector through `tile` (W floats a row),
/// merged column by column.
@inlinable @inline(__always)
func int8RunPartialPanel<D: Int8DotISA>(_ mr: Int, cols: Int, _ groups: Int, _ a: UnsafeRawPointer, _ panel: UnsafeRawPointer,
                                        bStride: Int, _ cTile: UnsafeMutablePointer<Float>, _ ldc: Int,
                                        tile: UnsafeMutablePointer<Float>, accumulate: Bool, finish: Bool,
                                        comp: UnsafePointer<Int32>, scale: UnsafePointer<Float>, _: D.Type) {
    let w = D.Acc.scalarCount
    /// Columns v ..< cols (fewer than W) of the tile's vector into C.
    @inline(__always) func merge(from v: Int) {
        let sums = UnsafeMutableRawPointer(tile)
        for r in 0..<mr {
            for j in v..<cols {
                int8MergeScalar(sums + 4 * (r * w + j - v), cTile + r * ldc + j, accumulate: accumulate, finish: finish,
                                comp: comp[r], scale: scale[r], D.self)
            }
        }
    }
    var v = 0
    while v < cols {
        let left = cols - v
        if mr == 8 && left > w && D.partialVectors {
            int8RunTwoVectors(groups, a, panel + 4 * v, bStride: bStride, cTile + v, ldc, accumulate0: accumulate, finish0: finish,
                              cTile + v + w, ldc, count1: min(w, left - w), accumulate1: accumulate, finish1: finish,
                              comp: comp, scale: scale, D.self)
            v += 2 * w
        } else if mr == 8 && left > w {
            let partial = left < 2 * w
            int8RunTwoVectors(groups, a, panel + 4 * v, bStride: bStride, cTile + v, ldc, accumulate0: accumulate, finish0: finish,
                              partial ? tile : cTile + v + w, partial ? w : ldc, accumulate1: partial ? false : accumulate,
                              finish1: partial ? false : finish, comp: comp, scale: scale, D.self)
            if partial { merge(from: v + w) }
            v += 2 * w
        } else if left >= w {
            int8RunVector(mr, groups, a, panel + 4 * v, bStride: bStride, cTile + v, ldc, accumulate: accumulate, finish: finish,
                          comp: comp, scale: scale, D.self)
            v += w
        } else if D.partialVectors {
            int8RunVector(mr, groups, a, panel + 4 * v, bStride: bStride, cTile + v, ldc, count: left, accumulate: accumulate,
                          finish: finish, comp: comp, scale: scale, D.self)
            v += w
        } else {
            int8RunVector(mr, groups, a, panel + 4 * v, bStride: bStride, tile, w, accumulate: false, finish: false,
                          comp: comp, scale: scale, D.self)
            merge(from: v)
            v += w
        }
    }
}
