// Naive references of the Winograd convolution F(m x m, 3x3) through its matrices (Lavin and
// Gray): kernel transform G g Gᵀ, input transform Bᵀ d B, output transform Aᵀ M A, with the
// kernels' layouts (U[position][filter][channel], V[position][channel][tile],
// M[position][filter][tile]; tiles row by row, `tilesWide` per row). In double.

/// A small dense row-major matrix.
struct Matrix {
    var rows: Int, cols: Int, a: [Double]
    init(_ rows: Int, _ cols: Int, _ a: [Double]) { self.rows = rows; self.cols = cols; self.a = a }
    subscript(r: Int, c: Int) -> Double { a[r * cols + c] }
    static func * (x: Matrix, y: Matrix) -> Matrix {
        var out = [Double](repeating: 0, count: x.rows * y.cols)
        for i in 0..<x.rows { for j in 0..<y.cols { var s = 0.0; for k in 0..<x.cols { s += x[i, k] * y[k, j] }; out[i * y.cols + j] = s } }
        return Matrix(x.rows, y.cols, out)
    }
    var t: Matrix {
        var out = [Double](repeating: 0, count: rows * cols)
        for i in 0..<rows { for j in 0..<cols { out[j * rows + i] = self[i, j] } }
        return Matrix(cols, rows, out)
    }
}

extension Naive {
    /// F(m x m, 3x3): output tiles of m x m, input patches of n x n (n = m + 2), with G
    /// (n x 3), Bᵀ (n x n) and Aᵀ (m x n).
    public struct Winograd: Sendable {
        public let m: Int
        let G: Matrix, BT: Matrix, AT: Matrix
        public var n: Int { m + 2 }
        /// Transform positions per tile (n x n).
        public var positions: Int { n * n }

        public static let f2x2 = Winograd(m: 2,
            G: Matrix(4, 3, [1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1]),
            BT: Matrix(4, 4, [1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1]),
            AT: Matrix(2, 4, [1, 1, 1, 0, 0, 1, -1, -1]))
        public static let f4x4 = Winograd(m: 4,
            G: Matrix(6, 3, [1.0 / 4, 0, 0, -1.0 / 6, -1.0 / 6, -1.0 / 6, -1.0 / 6, 1.0 / 6, -1.0 / 6,
                             1.0 / 24, 1.0 / 12, 1.0 / 6, 1.0 / 24, -1.0 / 12, 1.0 / 6, 0, 0, 1]),
            BT: Matrix(6, 6, [4, 0, -5, 0, 1, 0, 0, -4, -4, 1, 1, 0, 0, 4, -4, -1, 1, 0,
                              0, -2, -1, 2, 1, 0, 0, 2, -1, -2, 1, 0, 0, 4, 0, -5, 0, 1]),
            AT: Matrix(4, 6, [1, 1, 1, 1, 1, 0, 0, 1, -1, 2, -2, 0, 0, 1, 1, 4, 4, 0, 0, 1, -1, 8, -8, 1]))

        /// U[xi][f][c] = (G g Gᵀ)[xi] for each filter's 3x3 kernel g of each channel.
        public func kernels(_ weights: [Float], filters: Int, channels c: Int) -> [Float] {
            var u = [Float](repeating: .nan, count: positions * filters * c)
            for fi in 0..<filters {
                for ci in 0..<c {
                    var g = [Double](repeating: 0, count: 9)
                    for i in 0..<9 { g[i] = Double(weights[(fi * c + ci) * 9 + i]) }
                    let t = G * Matrix(3, 3, g) * G.t
                    for xi in 0..<positions { u[xi * filters * c + fi * c + ci] = Float(t.a[xi]) }
                }
            }
            return u
        }

        /// V[xi][c][t] = (Bᵀ d B)[xi] for the tiles of tile rows `tileRows` (pad 1: tile (ty,
        /// tx)'s patch starts at (m ty - 1, m tx - 1); zero outside the input).
        public func input(_ x: Tensor, tileRows: Range<Int>, tilesWide tw: Int) -> [Float] {
            let c = x.channels, h = x.height, w = x.width, bt = tileRows.count * tw
            var v = [Float](repeating: .nan, count: positions * c * bt)
            for ci in 0..<c {
                for (k, ty) in tileRows.enumerated() {
                    for tx in 0..<tw {
                        var d = [Double](repeating: 0, count: n * n)
                        for i in 0..<n {
                            for j in 0..<n {
                                let y = m * ty - 1 + i, xx = m * tx - 1 + j
                                if y >= 0 && y < h && xx >= 0 && xx < w { d[i * n + j] = Double(x.values[(ci * h + y) * w + xx]) }
                            }
                        }
                        let t = BT * Matrix(n, n, d) * BT.t
                        for xi in 0..<positions { v[xi * c * bt + ci * bt + k * tw + tx] = Float(t.a[xi]) }
                    }
                }
            }
            return v
        }

        /// The products M[xi] = U[xi] · V[xi] (filters x channels times channels x tiles).
        public func products(_ u: [Float], _ v: [Float], filters: Int, channels c: Int, tiles: Int) -> [Float] {
            var out = [Float](repeating: 0, count: positions * filters * tiles)
            for xi in 0..<positions {
                for fi in 0..<filters {
                    for t in 0..<tiles {
                        var s = 0.0
                        for ci in 0..<c { s += Double(u[xi * filters * c + fi * c + ci]) * Double(v[xi * c * tiles + ci * tiles + t]) }
                        out[xi * filters * tiles + fi * tiles + t] = Float(s)
                    }
                }
            }
            return out
        }

        /// Writes Aᵀ M A of each tile of tile rows `tileRows` into `out` (filters x height x
        /// width), clipped to the map; the rest of `out` is left as it is.
        public func output(_ products: [Float], filters: Int, tileRows: Range<Int>, tilesWide tw: Int,
                           height h: Int, width w: Int, into out: inout [Float]) {
            let bt = tileRows.count * tw
            for fi in 0..<filters {
                for (k, ty) in tileRows.enumerated() {
                    for tx in 0..<tw {
                        var mt = [Double](repeating: 0, count: positions)
                        for xi in 0..<positions { mt[xi] = Double(products[xi * filters * bt + fi * bt + k * tw + tx]) }
                        let y = AT * Matrix(n, n, mt) * AT.t
                        for i in 0..<m {
                            for j in 0..<m {
                                let oy = m * ty + i, ox = m * tx + j
                                if oy < h && ox < w { out[(fi * h + oy) * w + ox] = Float(y.a[i * m + j]) }
                            }
                        }
                    }
                }
            }
        }
    }
}
