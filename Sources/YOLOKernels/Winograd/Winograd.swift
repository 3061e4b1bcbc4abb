// Winograd F(2x2, 3x3) for 3x3 stride-1 pad-1 convolutions (Lavin & Gray): each 2x2 output
// tile costs 16 multiplications per (filter, channel) instead of 36. With
//   G  = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
//   Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
//   Aᵀ = [1 1 1 0; 0 1 -1 -1]
// the output tile is Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d Bᵀᵀ)] A for a 4x4 input patch d. The elementwise
// product over all filters and channels is 16 matrix products (one per position xi of the
// 4x4 transform), done by sgemm: M[xi] (filters x tiles) = U[xi] (filters x channels) · V[xi]
// (channels x tiles).

/// U[xi][f][c] = (G g Gᵀ)[xi] for the 3x3 kernels w[f][c] (Darknet's layout), for filters
/// `filters` of `filterCount`. U holds 16 matrices of filterCount x channels.
public func winogradTransformKernels(_ w: UnsafePointer<Float>, filterCount: Int, channels: Int, filters: Range<Int>,
                     into u: UnsafeMutablePointer<Float>) {
    let matrix = filterCount * channels
    for f in filters {
        for c in 0..<channels {
            let g = w + (f * channels + c) * 9
            // t = G g (4x3), by columns j: (g0j, (g0j+g1j+g2j)/2, (g0j-g1j+g2j)/2, g2j).
            var t = (SIMD4<Float>(), SIMD4<Float>(), SIMD4<Float>())
            for j in 0..<3 {
                let (a, b, d) = (g[j], g[3 + j], g[6 + j])
                let col = SIMD4<Float>(a, (a + b + d) * 0.5, (a - b + d) * 0.5, d)
                if j == 0 { t.0 = col } else if j == 1 { t.1 = col } else { t.2 = col }
            }
            // U = t Gᵀ, by columns k.
            let cols = (t.0, (t.0 + t.1 + t.2) * 0.5, (t.0 - t.1 + t.2) * 0.5, t.2)
            let at = f * channels + c
            for r in 0..<4 {
                u[(r * 4 + 0) * matrix + at] = cols.0[r]
                u[(r * 4 + 1) * matrix + at] = cols.1[r]
                u[(r * 4 + 2) * matrix + at] = cols.2[r]
                u[(r * 4 + 3) * matrix + at] = cols.3[r]
            }
        }
    }
}

/// V[xi][c][t] = (Bᵀ d B)[xi] for channels `channels` and the tiles of tile rows `tileRows`
/// (t counts from the first tile of the block; tiles are 2x2 outputs, so a tile row covers
/// input rows 2ty-1 ... 2ty+2 with zero padding). V holds 16 matrices of channelCount x tiles.
/// Both passes run along whole tile rows, so every inner loop is contiguous and vectorizes.
public func winogradInput(_ src: UnsafePointer<Float>, height: Int, width: Int, channelCount: Int, channels: Range<Int>,
                   tileRows: Range<Int>, tilesWide tw: Int, into v: UnsafeMutablePointer<Float>) {
    let tiles = tileRows.count * tw
    let matrix = channelCount * tiles
    let paddedWidth = 2 * tw + 2
    withUnsafeTemporaryAllocation(of: Float.self, capacity: paddedWidth + 16 * tw) { scratch in
        let padded = scratch.baseAddress!          // one input row with its zero border
        let e = padded + paddedWidth               // e[i][k][tx]: row i of the patch times B
        for c in channels {
            let plane = src + c * height * width
            for (n, ty) in tileRows.enumerated() {
                for i in 0..<4 {
                    let y = 2 * ty - 1 + i
                    padded.update(repeating: 0, count: paddedWidth)
                    if y >= 0 && y < height { (padded + 1).update(from: plane + y * width, count: min(width, paddedWidth - 1)) }
                    let e0 = e + (i * 4) * tw, e1 = e0 + tw, e2 = e1 + tw, e3 = e2 + tw
                    for tx in 0..<tw {
                        let x = padded + 2 * tx
                        e0[tx] = x[0] - x[2]; e1[tx] = x[1] + x[2]; e2[tx] = x[2] - x[1]; e3[tx] = x[1] - x[3]
                    }
                }
                // Bᵀ (d B): combine the four patch rows, k by k.
                let base = v + c * tiles + n * tw
                for k in 0..<4 {
                    let r0 = e + k * tw, r1 = r0 + 4 * tw, r2 = r1 + 4 * tw, r3 = r2 + 4 * tw
                    let o0 = base + k * matrix, o1 = o0 + 4 * matrix, o2 = o1 + 4 * matrix, o3 = o2 + 4 * matrix
                    for tx in 0..<tw {
                        o0[tx] = r0[tx] - r2[tx]; o1[tx] = r1[tx] + r2[tx]; o2[tx] = r2[tx] - r1[tx]; o3[tx] = r1[tx] - r3[tx]
                    }
                }
            }
        }
    }
}

/// Output tiles Aᵀ m A from M[xi][f][t] (16 matrices of filterCount x tiles) for filters
/// `filters`, written to the output planes (outHeight x outWidth, clipped at the edges).
public func winogradOutput(_ m: UnsafePointer<Float>, filterCount: Int, filters: Range<Int>, tileRows: Range<Int>,
                    tilesWide tw: Int, outHeight: Int, outWidth: Int, into dst: UnsafeMutablePointer<Float>) {
    let tiles = tileRows.count * tw
    let matrix = filterCount * tiles
    withUnsafeTemporaryAllocation(of: Float.self, capacity: 8 * tw) { scratch in
        let top = scratch.baseAddress!, bottom = top + 4 * tw   // (Aᵀ m)[row][k][tx]
        for f in filters {
            let plane = dst + f * outHeight * outWidth
            for (n, ty) in tileRows.enumerated() {
                let base = m + f * tiles + n * tw
                for k in 0..<4 {
                    let m0 = base + k * matrix, m1 = m0 + 4 * matrix, m2 = m1 + 4 * matrix, m3 = m2 + 4 * matrix
                    let t = top + k * tw, b = bottom + k * tw
                    for tx in 0..<tw { t[tx] = m0[tx] + m1[tx] + m2[tx]; b[tx] = m1[tx] - m2[tx] - m3[tx] }
                }
                for half in 0..<2 where 2 * ty + half < outHeight {
                    let a = half == 0 ? top : bottom
                    let out = plane + (2 * ty + half) * outWidth
                    let a0 = a, a1 = a + tw, a2 = a1 + tw, a3 = a2 + tw
                    let pairs = outWidth / 2
                    for tx in 0..<pairs {
                        out[2 * tx] = a0[tx] + a1[tx] + a2[tx]
                        out[2 * tx + 1] = a1[tx] - a2[tx] - a3[tx]
                    }
                    if outWidth % 2 == 1 { out[outWidth - 1] = a0[pairs] + a1[pairs] + a2[pairs] }
                }
            }
        }
    }
}
