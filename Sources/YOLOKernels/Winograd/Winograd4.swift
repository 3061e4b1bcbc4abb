// Winograd F(4x4, 3x3) for 3x3 stride-1 pad-1 convolutions (Lavin & Gray, points 0, ±1, ±2):
// each 4x4 output tile costs 36 multiplications per (filter, channel) instead of 144, against
// 64 for F(2x2, 3x3) per 16 outputs. With
//   G  = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
//   Bᵀ = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]
//   Aᵀ = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
// the output tile is Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A for a 6x6 input patch d. The elementwise product
// over all filters and channels is 36 matrix products, one per position xi = 6 r + k of the
// 6x6 transform: M[xi] (filters x tiles) = U[xi] (filters x channels) · V[xi] (channels x tiles).
// The layouts are those of the F(2x2, 3x3) functions with 36 matrices instead of 16.

/// Bᵀ applied to six values.
@inline(__always)
func winograd4B(_ x0: Float, _ x1: Float, _ x2: Float, _ x3: Float, _ x4: Float, _ x5: Float)
    -> (Float, Float, Float, Float, Float, Float) {
    (4 * x0 - 5 * x2 + x4,
     -4 * (x1 + x2) + x3 + x4,
     4 * (x1 - x2) - x3 + x4,
     2 * (x3 - x1) - x2 + x4,
     2 * (x1 - x3) - x2 + x4,
     4 * x1 - 5 * x3 + x5)
}

/// G applied to three values.
@inline(__always)
func winograd4G(_ g0: Float, _ g1: Float, _ g2: Float) -> (Float, Float, Float, Float, Float, Float) {
    (g0 / 4,
     -(g0 + g1 + g2) / 6,
     -(g0 - g1 + g2) / 6,
     g0 / 24 + g1 / 12 + g2 / 6,
     g0 / 24 - g1 / 12 + g2 / 6,
     g2)
}

/// U[xi][f][c] = (G g Gᵀ)[xi] for the 3x3 kernels w[f][c] (Darknet's layout), for filters
/// `filters` of `filterCount`. U holds 36 matrices of filterCount x channels.
public func winograd4TransformKernels(_ w: UnsafePointer<Float>, filterCount: Int, channels: Int, filters: Range<Int>,
                                      into u: UnsafeMutablePointer<Float>) {
    let matrix = filterCount * channels
    withUnsafeTemporaryAllocation(of: Float.self, capacity: 18) { scratch in
    let t = scratch.baseAddress!
    for f in filters {
        for c in 0..<channels {
            let g = w + (f * channels + c) * 9
            // t = G g (6x3), column by column.
            for j in 0..<3 {
                let r = winograd4G(g[j], g[3 + j], g[6 + j])
                t[j] = r.0; t[3 + j] = r.1; t[6 + j] = r.2; t[9 + j] = r.3; t[12 + j] = r.4; t[15 + j] = r.5
            }
            // U = t Gᵀ, row by row.
            let at = f * channels + c
            for r in 0..<6 {
                let v = winograd4G(t[3 * r], t[3 * r + 1], t[3 * r + 2])
                let row = u + (r * 6) * matrix + at
                row[0] = v.0; row[matrix] = v.1; row[2 * matrix] = v.2
                row[3 * matrix] = v.3; row[4 * matrix] = v.4; row[5 * matrix] = v.5
            }
        }
    }
    }
}

/// V[xi][c][t] = (Bᵀ d B)[xi] for channels `channels` and the tiles of tile rows `tileRows`
/// (t counts from the first tile of the block; a tile row covers input rows 4ty-1 ... 4ty+4,
/// zero outside the input). V holds 36 matrices of channelCount x tiles.
public func winograd4Input(_ src: UnsafePointer<Float>, height: Int, width: Int, channelCount: Int, channels: Range<Int>,
                           tileRows: Range<Int>, tilesWide tw: Int, into v: UnsafeMutablePointer<Float>) {
    let tiles = tileRows.count * tw
    let matrix = channelCount * tiles
    let paddedWidth = 4 * tw + 2
    withUnsafeTemporaryAllocation(of: Float.self, capacity: paddedWidth + 36 * tw) { scratch in
        let padded = scratch.baseAddress!          // one input row with its zero border
        let e = padded + paddedWidth               // e[i][k][tx]: row i of the patch times B
        for c in channels {
            let plane = src + c * height * width
            for (n, ty) in tileRows.enumerated() {
                for i in 0..<6 {
                    let y = 4 * ty - 1 + i
                    padded.update(repeating: 0, count: paddedWidth)
                    if y >= 0 && y < height { (padded + 1).update(from: plane + y * width, count: min(width, paddedWidth - 1)) }
                    let e0 = e + (i * 6) * tw
                    for tx in 0..<tw {
                        let x = padded + 4 * tx
                        let r = winograd4B(x[0], x[1], x[2], x[3], x[4], x[5])
                        e0[tx] = r.0; e0[tw + tx] = r.1; e0[2 * tw + tx] = r.2
                        e0[3 * tw + tx] = r.3; e0[4 * tw + tx] = r.4; e0[5 * tw + tx] = r.5
                    }
                }
                // Bᵀ (d B): combine the six patch rows, k by k.
                let base = v + c * tiles + n * tw
                for k in 0..<6 {
                    let r0 = e + k * tw, step = 6 * tw
                    let o0 = base + k * matrix, ostep = 6 * matrix
                    for tx in 0..<tw {
                        let r = winograd4B(r0[tx], r0[step + tx], r0[2 * step + tx], r0[3 * step + tx],
                                           r0[4 * step + tx], r0[5 * step + tx])
                        o0[tx] = r.0; o0[ostep + tx] = r.1; o0[2 * ostep + tx] = r.2
                        o0[3 * ostep + tx] = r.3; o0[4 * ostep + tx] = r.4; o0[5 * ostep + tx] = r.5
                    }
                }
            }
        }
    }
}

/// Output tiles Aᵀ m A from M[xi][f][t] (36 matrices of filterCount x tiles) for filters
/// `filters`, written to the output planes (outHeight x outWidth, clipped at the edges).
public func winograd4Output(_ m: UnsafePointer<Float>, filterCount: Int, filters: Range<Int>, tileRows: Range<Int>,
                            tilesWide tw: Int, outHeight: Int, outWidth: Int, into dst: UnsafeMutablePointer<Float>) {
    let tiles = tileRows.count * tw
    let matrix = filterCount * tiles
    withUnsafeTemporaryAllocation(of: Float.self, capacity: 24 * tw + 4 * tw + 4) { scratch in
        let a = scratch.baseAddress!               // (Aᵀ m)[row][k][tx], 4 x 6 x tw
        let line = a + 24 * tw                     // one output row, 4 * tw (+ slack)
        for f in filters {
            let plane = dst + f * outHeight * outWidth
            for (n, ty) in tileRows.enumerated() {
                let base = m + f * tiles + n * tw
                for k in 0..<6 {
                    let m0 = base + k * matrix, step = 6 * matrix
                    let a0 = a + k * tw, astep = 6 * tw
                    for tx in 0..<tw {
                        let x0 = m0[tx], x1 = m0[step + tx], x2 = m0[2 * step + tx]
                        let x3 = m0[3 * step + tx], x4 = m0[4 * step + tx], x5 = m0[5 * step + tx]
                        let p12 = x1 + x2, m12 = x1 - x2, p34 = x3 + x4, m34 = x3 - x4
                        a0[tx] = x0 + p12 + p34
                        a0[astep + tx] = m12 + 2 * m34
                        a0[2 * astep + tx] = p12 + 4 * p34
                        a0[3 * astep + tx] = m12 + 8 * m34 + x5
                    }
                }
                for row in 0..<4 where 4 * ty + row < outHeight {
                    let r = a + row * 6 * tw
                    for tx in 0..<tw {
                        let x0 = r[tx], x1 = r[tw + tx], x2 = r[2 * tw + tx]
                        let x3 = r[3 * tw + tx], x4 = r[4 * tw + tx], x5 = r[5 * tw + tx]
                        let p12 = x1 + x2, m12 = x1 - x2, p34 = x3 + x4, m34 = x3 - x4
                        let o = line + 4 * tx
                        o[0] = x0 + p12 + p34
                        o[1] = m12 + 2 * m34
                        o[2] = p12 + 4 * p34
                        o[3] = m12 + 8 * m34 + x5
                    }
                    (plane + (4 * ty + row) * outWidth).update(from: line, count: outWidth)
                }
            }
        }
    }
}
