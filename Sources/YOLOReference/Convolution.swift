// Naive references of Darknet's convolutional layer (forward_convolutional_layer: the
// convolution, batch norm, bias; the activation is Naive.activate) and of im2col's matrix.

/// Darknet's batch-norm parameters of a convolutional layer, one entry per filter.
public struct BatchNorm: Sendable {
    public var scale, mean, variance: [Float]
    public init(scale: [Float], mean: [Float], variance: [Float]) { (self.scale, self.mean, self.variance) = (scale, mean, variance) }
}

extension Naive {
    /// Output size of a convolution along one side: (side + 2 pad - size) / stride + 1.
    public static func convolvedSide(_ side: Int, size: Int, stride: Int, pad: Int) -> Int {
        (side + 2 * pad - size) / stride + 1
    }

    /// A convolution of `x` with `filters` filters of size x size x channels (`weights` in
    /// Darknet's order: filter, channel, row, column), zero padding `pad` on each side, then
    /// Darknet's batch norm `(v - mean) / (sqrt(variance) + .000001) * scale` and the bias:
    /// sums in double, rounded to float once.
    public static func convolution(_ x: Tensor, filters: Int, size: Int, stride: Int, pad: Int, weights: [Float],
                                   bias: [Float]? = nil, batchNorm: BatchNorm? = nil) -> Tensor {
        let c = x.channels, h = x.height, w = x.width
        precondition(weights.count == filters * c * size * size, "weights: filters x channels x size x size")
        let oh = convolvedSide(h, size: size, stride: stride, pad: pad), ow = convolvedSide(w, size: size, stride: stride, pad: pad)
        var out = [Float](repeating: 0, count: filters * oh * ow)
        for f in 0..<filters {
            for oy in 0..<oh {
                for ox in 0..<ow {
                    var acc = 0.0
                    for ch in 0..<c {
                        for ky in 0..<size {
                            for kx in 0..<size {
                                let iy = oy * stride + ky - pad, ix = ox * stride + kx - pad
                                guard iy >= 0 && iy < h && ix >= 0 && ix < w else { continue }
                                acc += Double(weights[((f * c + ch) * size + ky) * size + kx]) * Double(x.values[(ch * h + iy) * w + ix])
                            }
                        }
                    }
                    if let bn = batchNorm {
                        acc = (acc - Double(bn.mean[f])) / (Double(bn.variance[f]).squareRoot() + 0.000001) * Double(bn.scale[f])
                    }
                    if let bias { acc += Double(bias[f]) }
                    out[(f * oh + oy) * ow + ox] = Float(acc)
                }
            }
        }
        return Tensor(channels: filters, height: oh, width: ow, values: out)
    }

    /// Darknet's im2col matrix of `x` for a kernel x kernel convolution: row r = (channel,
    /// ky, kx), column = output pixel; zero outside the input. Only `rows` of the matrix and the
    /// columns of output rows `outRows` (columns numbered from the first of them) are filled,
    /// the other rows hold `untouched`.
    public static func im2col(_ x: Tensor, kernel k: Int, stride s: Int, pad p: Int, outRows: Range<Int>, rows: Range<Int>,
                              untouched: Float = .nan) -> [Float] {
        let h = x.height, w = x.width
        let ow = convolvedSide(w, size: k, stride: s, pad: p)
        let n = outRows.count * ow
        var out = [Float](repeating: untouched, count: x.channels * k * k * n)
        for r in rows {
            let ch = r / (k * k), ky = r / k % k, kx = r % k
            for (j, oy) in outRows.enumerated() {
                for ox in 0..<ow {
                    let iy = oy * s + ky - p, ix = ox * s + kx - p
                    out[r * n + j * ow + ox] = iy >= 0 && iy < h && ix >= 0 && ix < w ? x.values[(ch * h + iy) * w + ix] : 0
                }
            }
        }
        return out
    }
}
