// SIMD versions of the Winograd input and output transforms (Winograd.swift, Winograd4.swift),
// generic over the vector type: the per-ISA targets (YOLOKernelsAVX2, ...) instantiate them with
// their width and a tag type of their own, compiled for their CPU (-target-cpu), like PackedGemm.
// Same layouts and contracts as the scalar functions, which stay as the reference; every output
// element is the same expression, evaluated in the same order, so results are bit-identical.
//
// Vectorised over tiles, W at a time, and "flat": the matrices V[xi][c][t] and M[xi][f][t] run
// over the tiles t = n·tw + tx of all tile rows n of the block, so the passes that read or
// write them run over t regardless of tile-row boundaries (yolov3-tiny has rows of only 7 and
// 13 tiles, against 16 lanes of AVX-512).
//
// Input, per channel and group of tile rows (about 256 tiles): the group's padded input rows are
// copied first (a load right after the copy of its row would stall on store-to-load
// forwarding); the horizontal pass (d B) runs once per padded row (the scalar code does the
// rows shared by neighbouring tile rows twice) and writes, for each residue of the row index
// Y = (tile) · ty + i modulo the tile, arrays h[residue][k][m·tw + tx] with m = Y / (tile).
// Patch row i of tile row n is then row n (or n + 1) of one of these arrays, so the vertical
// pass (Bᵀ ·) reads h at t and t + tw, flat over t. The stride-2 / stride-4 reads of the patch
// columns deinterleave wider loads (`WinogradISA.load2`, `load4`).
// Output: per chunk of W tiles, Aᵀ m column by column, then · A, stored interleaved
// (`store2`, `store4`) straight into the output rows when the chunk lies inside one tile row
// and inside the width, else through a small buffer, clipped at the edges; with tile rows of
// fewer than 2W tiles, into lines of the filter's whole block, copied out row by row.
// The last, partial chunk of a pass uses whole vectors where that is safe (reads that stay
// inside M; writes past a channel's rows into rows this call rewrites later), else a scratch.
//
// After editing this file, touch Sources/YOLOKernels{Baseline,AVX2,AVX512}/*.swift (an
// incremental debug build does not recompile them for a change inside @inlinable bodies).

/// The SIMD Winograd transforms for one ISA; see `winogradInput`, `winogradOutput`,
/// `winograd4Input` and `winograd4Output` for the contracts, which these keep exactly.
public enum WinogradSIMD<ISA: WinogradISA> {
    public typealias V = ISA.Vector

    /// `winogradInput` (F(2x2, 3x3)): V[xi][c][t] = (Bᵀ d B)[xi], 16 matrices of channelCount x tiles.
    @inlinable
    public static func input2(_ src: UnsafePointer<Float>, height: Int, width: Int, channelCount: Int, channels: Range<Int>,
                              tileRows: Range<Int>, tilesWide tw: Int, into v: UnsafeMutablePointer<Float>) {
        let w = V.scalarCount
        let rows = tileRows.count, tiles = rows * tw, matrix = channelCount * tiles
        let paddedCount = 2 * ((tw + w - 1) / w) * w + 2   // the last chunk's loads end here
        let copyCount = min(width, 2 * tw + 1)             // as the scalar code: padded[1...]
        // Groups of `group` tile rows (about 256 tiles, at least W: the scratch stays in L1/L2
        // however large the block), one after the other per channel.
        let group = min(rows, max(1, (256 + tw - 1) / tw))
        // h[(parity · 4 + k) · hCount + m · tw + tx]: (d B)[k] of tile column tx for the padded
        // row Y = 2 (ty0 + m) + parity (input row Y - 1) of the group from tile row ty0. W of
        // slack: the last row's tail lanes, and the vertical pass's tail loads.
        let hCount = (group + 1) * tw + w
        // The group's padded input rows Y = 2 ty0 ... 2 ty0 + 2 group + 1, paddedCount apart
        // (the borders stay zero; rows outside the input are not read).
        let paddedRows = 2 * (group + 1)
        withUnsafeTemporaryAllocation(of: Float.self, capacity: paddedRows * paddedCount + 8 * hCount + 16 * w) { scratch in
            scratch.initialize(repeating: 0)
            let padded = scratch.baseAddress!, h = padded + paddedRows * paddedCount
            let tail = h + 8 * hCount                   // the last, partial chunk: 16 rows of W
            for c in channels {
                let plane = src + c * height * width
                for g in Swift.stride(from: 0, to: rows, by: group) {
                    let groupRows = min(group, rows - g), groupTiles = groupRows * tw
                    let y0 = 2 * (tileRows.lowerBound + g) - 1
                    // The group's rows first, all of them: loading a row right after copying it
                    // would stall on store-to-load forwarding (the copy's stores differ in size).
                    for r in max(0, -y0)..<min(2 * (groupRows + 1), height - y0) {
                        (padded + r * paddedCount + 1).update(from: plane + (y0 + r) * width, count: copyCount)
                    }
                    input2Rows(padded, paddedCount: paddedCount, y0: y0, groupRows: groupRows, height: height,
                               tilesWide: tw, into: h, hCount: hCount)
                    // Bᵀ (d B), flat over the group's tiles: patch rows 0...3 of tile t are the even
                    // and odd arrays at t, then at t + tw.
                    let base = v + c * tiles + g * tw
                    var t = 0
                    while t + w <= groupTiles { input2Columns(h + t, hCount: hCount, tilesWide: tw, into: base + t, matrix: matrix); t += w }
                    if t < groupTiles {
                        // The last, partial chunk: whole vectors when what they write past the group
                        // lies in the rows still to come (this channel's next groups, the next
                        // channels: rewritten then), else through the scratch.
                        if c * tiles + g * tw + t + w <= channels.upperBound * tiles {
                            input2Columns(h + t, hCount: hCount, tilesWide: tw, into: base + t, matrix: matrix)
                        } else {
                            input2Columns(h + t, hCount: hCount, tilesWide: tw, into: tail, matrix: w)
                            for xi in 0..<16 { (base + xi * matrix + t).update(from: tail + xi * w, count: groupTiles - t) }
                        }
                    }
                }
            }
        }
    }

    /// d B, once per padded row of a group (`padded`: rows y0 ... y0 + 2 groupRows + 1 of the input,
    /// paddedCount apart, the first column and those past the row zero): into h[(parity · 4 + k) ·
    /// hCount + m · tw + tx], rows m of both parities in order, so that a row's tail lanes, spilling
    /// into the next row of its array, are overwritten; rows outside the input are zeros.
    @inlinable @inline(__always)
    static func input2Rows(_ padded: UnsafePointer<Float>, paddedCount: Int, y0: Int, groupRows: Int, height: Int,
                           tilesWide tw: Int, into h: UnsafeMutablePointer<Float>, hCount: Int) {
        let w = V.scalarCount
        for m in 0...groupRows {
            for parity in 0..<2 {
                let y = y0 + 2 * m + parity, row = padded + (2 * m + parity) * paddedCount
                let e = h + parity * 4 * hCount + m * tw
                guard y >= 0 && y < height else {
                    for k in 0..<4 { (e + k * hCount).update(repeating: 0, count: tw) }
                    continue
                }
                for tx in Swift.stride(from: 0, to: tw, by: w) {
                    let (x0, x1) = ISA.load2(row + 2 * tx)
                    let (x2, x3) = ISA.load2(row + 2 * tx + 2)
                    winogradStore(x0 - x2, e + tx)
                    winogradStore(x1 + x2, e + hCount + tx)
                    winogradStore(x2 - x1, e + 2 * hCount + tx)
                    winogradStore(x1 - x3, e + 3 * hCount + tx)
                }
            }
        }
    }

    /// Bᵀ (d B) for W tiles (h at the first) of one channel, into 16 rows `matrix` apart (the
    /// matrices of V, or for the last, partial chunk a scratch copied out after).
    @inlinable @inline(__always)
    static func input2Columns(_ h: UnsafePointer<Float>, hCount: Int, tilesWide tw: Int,
                              into base: UnsafeMutablePointer<Float>, matrix: Int) {
        for k in 0..<4 {
            let even = h + k * hCount, odd = even + 4 * hCount
            let o0 = base + k * matrix, o1 = o0 + 4 * matrix, o2 = o1 + 4 * matrix, o3 = o2 + 4 * matrix
            let r0: V = winogradLoad(even), r1: V = winogradLoad(odd)
            let r2: V = winogradLoad(even + tw), r3: V = winogradLoad(odd + tw)
            winogradStore(r0 - r2, o0); winogradStore(r1 + r2, o1)
            winogradStore(r2 - r1, o2); winogradStore(r1 - r3, o3)
        }
    }

    /// `winogradOutput` (F(2x2, 3x3)): output tiles Aᵀ m A from M[xi][f][t].
    @inlinable
    public static func output2(_ m: UnsafePointer<Float>, filterCount: Int, filters: Range<Int>, tileRows: Range<Int>,
                               tilesWide tw: Int, outHeight: Int, outWidth: Int, into dst: UnsafeMutablePointer<Float>) {
        let w = V.scalarCount
        let tiles = tileRows.count * tw, matrix = filterCount * tiles
        // Short tile rows (most chunks would straddle two or more): each filter's output rows
        // go into `lines` first (tile t of output row i of its tile row at lines[i][2 t]), then
        // are copied out row by row.
        let lined = tw < 2 * w, lineStride = 2 * (tiles + w)
        withUnsafeTemporaryAllocation(of: Float.self, capacity: 4 * w + 16 * w + (lined ? 2 * lineStride : 0)) { scratch in
            scratch.initialize(repeating: 0)
            let chunk = scratch.baseAddress!            // 2 output rows of 2W floats
            let tail = chunk + 4 * w                    // the last, partial chunk of M: 16 rows of W
            let lines = lined ? tail + 16 * w : nil
            for f in filters {
                let plane = dst + f * outHeight * outWidth
                let base = m + f * tiles
                var t = 0, n = 0, tx = 0                // tile t = n tw + tx
                while t + w <= tiles {
                    output2Chunk(base + t, matrix: matrix, t: t, count: w, n: n, tx: tx, lines: lines, lineStride: lineStride,
                                 firstTileRow: tileRows.lowerBound,
                                 tilesWide: tw, outHeight: outHeight, outWidth: outWidth, chunk: chunk, into: plane)
                    t += w; tx += w
                    while tx >= tw { tx -= tw; n += 1 }
                }
                if t < tiles {
                    // The last, partial chunk: whole vectors when they stay inside M (reading
                    // into the next rows), else through a copy in the scratch.
                    let inside = (f + 1) * tiles + w - (tiles - t) <= filterCount * tiles
                    if !inside { for xi in 0..<16 { (tail + xi * w).update(from: base + xi * matrix + t, count: tiles - t) } }
                    output2Chunk(inside ? base + t : UnsafePointer(tail), matrix: inside ? matrix : w, t: t, count: tiles - t,
                                 n: n, tx: tx, lines: lines, lineStride: lineStride, firstTileRow: tileRows.lowerBound,
                                 tilesWide: tw, outHeight: outHeight, outWidth: outWidth, chunk: chunk, into: plane)
                }
                if let lines {
                    for n in 0..<tileRows.count {
                        let y = 2 * (tileRows.lowerBound + n)
                        for i in 0..<min(2, outHeight - y) {
                            (plane + (y + i) * outWidth).update(from: lines + i * lineStride + 2 * n * tw,
                                                                count: min(outWidth, 2 * tw))
                        }
                    }
                }
            }
        }
    }

    /// Output tiles t ..< t + count (count <= W) of one filter, from W tiles of the 16 rows of M
    /// at p, `matrix` apart (for the last, partial chunk a copy in a scratch).
    @inlinable @inline(__always)
    static func output2Chunk(_ p: UnsafePointer<Float>, matrix: Int, t: Int, count: Int, n: Int, tx: Int,
                             lines: UnsafeMutablePointer<Float>?, lineStride: Int, firstTileRow: Int,
                             tilesWide tw: Int, outHeight: Int, outWidth: Int, chunk: UnsafeMutablePointer<Float>,
                             into plane: UnsafeMutablePointer<Float>) {
        let w = V.scalarCount
        // Aᵀ m, column k: (m0k + m1k + m2k, m1k - m2k - m3k).
        var p = p
        let m00: V = winogradLoad(p), m10: V = winogradLoad(p + 4 * matrix)
        let m20: V = winogradLoad(p + 8 * matrix), m30: V = winogradLoad(p + 12 * matrix)
        p += matrix
        let m01: V = winogradLoad(p), m11: V = winogradLoad(p + 4 * matrix)
        let m21: V = winogradLoad(p + 8 * matrix), m31: V = winogradLoad(p + 12 * matrix)
        p += matrix
        let m02: V = winogradLoad(p), m12: V = winogradLoad(p + 4 * matrix)
        let m22: V = winogradLoad(p + 8 * matrix), m32: V = winogradLoad(p + 12 * matrix)
        p += matrix
        let m03: V = winogradLoad(p), m13: V = winogradLoad(p + 4 * matrix)
        let m23: V = winogradLoad(p + 8 * matrix), m33: V = winogradLoad(p + 12 * matrix)
        let t0 = m00 + m10 + m20, b0 = m10 - m20 - m30
        let t1 = m01 + m11 + m21, b1 = m11 - m21 - m31
        let t2 = m02 + m12 + m22, b2 = m12 - m22 - m32
        let t3 = m03 + m13 + m23, b3 = m13 - m23 - m33
        // · A: each row's pairs (a0 + a1 + a2, a1 - a2 - a3), straight into the output when the
        // chunk lies inside one tile row and inside the output.
        let y = 2 * (firstTileRow + n)
        let direct = lines == nil && count == w && tx + w <= tw && 2 * (tx + w) <= outWidth && y + 2 <= outHeight
        let out = lines.map { $0 + 2 * t } ?? (direct ? plane + y * outWidth + 2 * tx : chunk)
        let next = lines != nil ? lineStride : direct ? outWidth : 2 * w
        ISA.store2(t0 + t1 + t2, t1 - t2 - t3, to: out)
        ISA.store2(b0 + b1 + b2, b1 - b2 - b3, to: out + next)
        if lines == nil && !direct {
            winogradScatter(chunk, rowStride: 2 * w, tile: 2, t: t, count: count, firstTileRow: firstTileRow,
                            tilesWide: tw, outHeight: outHeight, outWidth: outWidth, into: plane)
        }
    }

    /// `winograd4Input` (F(4x4, 3x3)): V[xi][c][t] = (Bᵀ d B)[xi], 36 matrices of channelCount x tiles.
    @inlinable
    public static func input4(_ src: UnsafePointer<Float>, height: Int, width: Int, channelCount: Int, channels: Range<Int>,
                              tileRows: Range<Int>, tilesWide tw: Int, into v: UnsafeMutablePointer<Float>) {
        let w = V.scalarCount
        let rows = tileRows.count, tiles = rows * tw, matrix = channelCount * tiles
        let paddedCount = 4 * ((tw + w - 1) / w) * w + 4
        let copyCount = min(width, 4 * tw + 1)
        // Groups of tile rows as in input2.
        let group = min(rows, max(1, (256 + tw - 1) / tw))
        // h[(phase · 6 + k) · hCount + m · tw + tx]: (d B)[k] of tile column tx for the padded
        // row Y = 4 (ty0 + m) + phase (input row Y - 1) of the group; W of slack as in input2.
        let hCount = (group + 1) * tw + w
        // The group's padded input rows Y = 4 ty0 ... 4 ty0 + 4 group + 1 (as in input2).
        let paddedRows = 4 * group + 2
        withUnsafeTemporaryAllocation(of: Float.self, capacity: paddedRows * paddedCount + 24 * hCount + 36 * w) { scratch in
            scratch.initialize(repeating: 0)
            let padded = scratch.baseAddress!, h = padded + paddedRows * paddedCount
            let tail = h + 24 * hCount                  // the last, partial chunk: 36 rows of W
            for c in channels {
                let plane = src + c * height * width
                for g in Swift.stride(from: 0, to: rows, by: group) {
                    let groupRows = min(group, rows - g), groupTiles = groupRows * tw
                    let y0 = 4 * (tileRows.lowerBound + g) - 1
                    // The group's rows first (see input2).
                    for r in max(0, -y0)..<min(4 * groupRows + 2, height - y0) {
                        (padded + r * paddedCount + 1).update(from: plane + (y0 + r) * width, count: copyCount)
                    }
                    // d B, once per padded row (row m = groupRows: only phases 0 and 1 are used).
                    for m in 0...groupRows {
                        for phase in 0..<(m < groupRows ? 4 : 2) {
                            let y = y0 + 4 * m + phase, row = padded + (4 * m + phase) * paddedCount
                            let e = h + phase * 6 * hCount + m * tw
                            guard y >= 0 && y < height else {
                                for k in 0..<6 { (e + k * hCount).update(repeating: 0, count: tw) }
                                continue
                            }
                            for tx in Swift.stride(from: 0, to: tw, by: w) {
                                let (x0, x1, x2, x3) = ISA.load4(row + 4 * tx)
                                let (x4, x5, _, _) = ISA.load4(row + 4 * tx + 4)
                                let r = winograd4B(x0, x1, x2, x3, x4, x5)
                                winogradStore(r.0, e + tx); winogradStore(r.1, e + hCount + tx)
                                winogradStore(r.2, e + 2 * hCount + tx); winogradStore(r.3, e + 3 * hCount + tx)
                                winogradStore(r.4, e + 4 * hCount + tx); winogradStore(r.5, e + 5 * hCount + tx)
                            }
                        }
                    }
                    // Bᵀ (d B), flat over the tiles: patch rows 0...3 of tile t are phases 0...3 at t,
                    // rows 4 and 5 phases 0 and 1 at t + tw.
                    let base = v + c * tiles + g * tw
                    var t = 0
                    while t + w <= groupTiles { input4Columns(h + t, hCount: hCount, tilesWide: tw, into: base + t, matrix: matrix); t += w }
                    if t < groupTiles {
                        // The last, partial chunk (as in input2).
                        if c * tiles + g * tw + t + w <= channels.upperBound * tiles {
                            input4Columns(h + t, hCount: hCount, tilesWide: tw, into: base + t, matrix: matrix)
                        } else {
                            input4Columns(h + t, hCount: hCount, tilesWide: tw, into: tail, matrix: w)
                            for xi in 0..<36 { (base + xi * matrix + t).update(from: tail + xi * w, count: groupTiles - t) }
                        }
                    }
                }
            }
        }
    }

    /// Bᵀ (d B) for W tiles (h at the first) of one channel, into 36 rows `matrix` apart (as input2Columns).
    @inlinable @inline(__always)
    static func input4Columns(_ h: UnsafePointer<Float>, hCount: Int, tilesWide tw: Int,
                              into base: UnsafeMutablePointer<Float>, matrix: Int) {
        let phase = 6 * hCount, ostep = 6 * matrix
        for k in 0..<6 {
            let r = h + k * hCount, o = base + k * matrix
            let x0: V = winogradLoad(r), x1: V = winogradLoad(r + phase)
            let x2: V = winogradLoad(r + 2 * phase), x3: V = winogradLoad(r + 3 * phase)
            let x4: V = winogradLoad(r + tw), x5: V = winogradLoad(r + phase + tw)
            let b = winograd4B(x0, x1, x2, x3, x4, x5)
            winogradStore(b.0, o); winogradStore(b.1, o + ostep)
            winogradStore(b.2, o + 2 * ostep); winogradStore(b.3, o + 3 * ostep)
            winogradStore(b.4, o + 4 * ostep); winogradStore(b.5, o + 5 * ostep)
        }
    }

    /// `winograd4Output` (F(4x4, 3x3)): output tiles Aᵀ m A from M[xi][f][t].
    @inlinable
    public static func output4(_ m: UnsafePointer<Float>, filterCount: Int, filters: Range<Int>, tileRows: Range<Int>,
                               tilesWide tw: Int, outHeight: Int, outWidth: Int, into dst: UnsafeMutablePointer<Float>) {
        let w = V.scalarCount
        let tiles = tileRows.count * tw, matrix = filterCount * tiles
        // Short tile rows (most chunks would straddle two or more): each filter's output rows
        // go into `lines` first (tile t of output row i of its tile row at lines[i][4 t]), then
        // are copied out row by row.
        let lined = tw < 2 * w, lineStride = 4 * (tiles + w)
        withUnsafeTemporaryAllocation(of: Float.self, capacity: 24 * w + 16 * w + 36 * w + (lined ? 4 * lineStride : 0)) { scratch in
            scratch.initialize(repeating: 0)
            let a = scratch.baseAddress!                // (Aᵀ m)[row][k], 4 x 6 vectors
            let chunk = a + 24 * w                      // 4 output rows of 4W floats
            let tail = chunk + 16 * w                   // the last, partial chunk of M: 36 rows of W
            let lines = lined ? tail + 36 * w : nil
            for f in filters {
                let plane = dst + f * outHeight * outWidth
                let base = m + f * tiles
                var t = 0, n = 0, tx = 0                // tile t = n tw + tx
                while t + w <= tiles {
                    output4Chunk(base + t, matrix: matrix, t: t, count: w, n: n, tx: tx, lines: lines, lineStride: lineStride,
                                 firstTileRow: tileRows.lowerBound,
                                 tilesWide: tw, outHeight: outHeight, outWidth: outWidth, a: a, chunk: chunk, into: plane)
                    t += w; tx += w
                    while tx >= tw { tx -= tw; n += 1 }
                }
                if t < tiles {
                    // The last, partial chunk: whole vectors when they stay inside M (reading
                    // into the next rows), else through a copy in the scratch.
                    let inside = (f + 1) * tiles + w - (tiles - t) <= filterCount * tiles
                    if !inside { for xi in 0..<36 { (tail + xi * w).update(from: base + xi * matrix + t, count: tiles - t) } }
                    output4Chunk(inside ? base + t : UnsafePointer(tail), matrix: inside ? matrix : w, t: t, count: tiles - t,
                                 n: n, tx: tx, lines: lines, lineStride: lineStride, firstTileRow: tileRows.lowerBound,
                                 tilesWide: tw, outHeight: outHeight, outWidth: outWidth, a: a, chunk: chunk, into: plane)
                }
                if let lines {
                    for n in 0..<tileRows.count {
                        let y = 4 * (tileRows.lowerBound + n)
                        for i in 0..<min(4, outHeight - y) {
                            (plane + (y + i) * outWidth).update(from: lines + i * lineStride + 4 * n * tw,
                                                                count: min(outWidth, 4 * tw))
                        }
                    }
                }
            }
        }
    }

    /// Output tiles t ..< t + count (count <= W) of one filter, from the 36 rows of M at p (as output2Chunk).
    @inlinable @inline(__always)
    static func output4Chunk(_ p: UnsafePointer<Float>, matrix: Int, t: Int, count: Int, n: Int, tx: Int,
                             lines: UnsafeMutablePointer<Float>?, lineStride: Int, firstTileRow: Int,
                             tilesWide tw: Int, outHeight: Int, outWidth: Int, a: UnsafeMutablePointer<Float>,
                             chunk: UnsafeMutablePointer<Float>, into plane: UnsafeMutablePointer<Float>) {
        let w = V.scalarCount, step = 6 * matrix
        // Aᵀ m, column by column, into a[row][k].
        for k in 0..<6 {
            let p = p + k * matrix
            let x0: V = winogradLoad(p), x1: V = winogradLoad(p + step)
            let x2: V = winogradLoad(p + 2 * step), x3: V = winogradLoad(p + 3 * step)
            let x4: V = winogradLoad(p + 4 * step), x5: V = winogradLoad(p + 5 * step)
            let r = winograd4A(x0, x1, x2, x3, x4, x5)
            winogradStore(r.0, a + k * w); winogradStore(r.1, a + (6 + k) * w)
            winogradStore(r.2, a + (12 + k) * w); winogradStore(r.3, a + (18 + k) * w)
        }
        // · A, row by row, stored interleaved (4 outputs per tile): straight into the output
        // when the chunk lies inside one tile row and inside the output.
        let y = 4 * (firstTileRow + n)
        let direct = lines == nil && count == w && tx + w <= tw && 4 * (tx + w) <= outWidth && y + 4 <= outHeight
        for row in 0..<4 {
            let r = a + 6 * row * w
            let x0: V = winogradLoad(r), x1: V = winogradLoad(r + w), x2: V = winogradLoad(r + 2 * w)
            let x3: V = winogradLoad(r + 3 * w), x4: V = winogradLoad(r + 4 * w), x5: V = winogradLoad(r + 5 * w)
            let o = winograd4A(x0, x1, x2, x3, x4, x5)
            ISA.store4(o.0, o.1, o.2, o.3, to: lines.map { $0 + row * lineStride + 4 * t }
                                                 ?? (direct ? plane + (y + row) * outWidth + 4 * tx : chunk + row * 4 * w))
        }
        if lines == nil && !direct {
            winogradScatter(chunk, rowStride: 4 * w, tile: 4, t: t, count: count, firstTileRow: firstTileRow,
                            tilesWide: tw, outHeight: outHeight, outWidth: outWidth, into: plane)
        }
    }
}
