// Naive references of Darknet's max pool (forward_maxpool_layer, with its padding: the
// window starts pad / 2 before the input and the output is (side + pad - size) / stride + 1)
// and of its nearest-neighbour upsampling (forward_upsample_layer).

extension Naive {
    /// Darknet's max pool: `padding` defaults to size - 1 in the cfg (size 2 stride 1 keeps the
    /// size); positions outside the input are skipped (never a zero), the start value -FLT_MAX.
    public static func maxPool(_ x: Tensor, size: Int, stride: Int, padding: Int) -> Tensor {
        let h = x.height, w = x.width
        let oh = (h + padding - size) / stride + 1, ow = (w + padding - size) / stride + 1
        let offset = -(padding / 2)
        var out = [Float](repeating: 0, count: x.channels * oh * ow)
        for c in 0..<x.channels {
            for oy in 0..<oh {
                for ox in 0..<ow {
                    var m = -Float.greatestFiniteMagnitude
                    for dy in 0..<size {
                        for dx in 0..<size {
                            let y = oy * stride + offset + dy, xx = ox * stride + offset + dx
                            if y >= 0 && y < h && xx >= 0 && xx < w { m = max(m, x.values[(c * h + y) * w + xx]) }
                        }
                    }
                    out[(c * oh + oy) * ow + ox] = m
                }
            }
        }
        return Tensor(channels: x.channels, height: oh, width: ow, values: out)
    }

    /// Darknet's [upsample]: each value repeated stride x stride times, times `scale`.
    public static func upsample(_ x: Tensor, stride s: Int, scale: Float = 1) -> Tensor {
        let h = x.height, w = x.width, oh = h * s, ow = w * s
        var out = [Float](repeating: 0, count: x.channels * oh * ow)
        for c in 0..<x.channels {
            for y in 0..<oh { for xx in 0..<ow { out[(c * oh + y) * ow + xx] = x.values[(c * h + y / s) * w + xx / s] * scale } }
        }
        return Tensor(channels: x.channels, height: oh, width: ow, values: out)
    }
}
