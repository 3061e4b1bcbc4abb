// Naive reference of Darknet's preprocessing: load_image's byte / 255, then letterbox_image
// (or, stretched, resize_image alone) with its bilinear resize_image, written out from the
// formulas over a float CHW image, in float as Darknet computes it (so the engine's
// preprocessing must match it bit for bit).

extension Naive {
    /// The network input (3 x netHeight x netWidth) for an RGB image of 8-bit pixels.
    public static func letterbox(rgb: [UInt8], width w: Int, height h: Int, netWidth: Int, netHeight: Int,
                                 stretch: Bool) -> [Float] {
        var im = [Float](repeating: 0, count: 3 * w * h)
        for y in 0..<h { for x in 0..<w { for k in 0..<3 { im[k * w * h + y * w + x] = Float(Double(rgb[(y * w + x) * 3 + k]) / 255.0) } } }
        var nw = netWidth, nh = netHeight
        if !stretch {
            if Float(netWidth) / Float(w) < Float(netHeight) / Float(h) { nw = netWidth; nh = h * netWidth / w }
            else { nh = netHeight; nw = w * netHeight / h }
        }
        var part = [Float](repeating: 0, count: 3 * nw * h)
        var resized = [Float](repeating: 0, count: 3 * nw * nh)
        // Darknet divides by zero for a 1-pixel output side; its last-column/last-row rules make
        // the scale irrelevant there, so 0 stands in.
        let ws = nw > 1 ? Float(w - 1) / Float(nw - 1) : 0, hs = nh > 1 ? Float(h - 1) / Float(nh - 1) : 0
        for k in 0..<3 { for r in 0..<h { for c in 0..<nw {
            var val: Float
            if c == nw - 1 || w == 1 { val = im[k * w * h + r * w + w - 1] } else {
                let sx = Float(c) * ws; let ix = Int(sx); let dx = sx - Float(ix)
                val = (1 - dx) * im[k * w * h + r * w + ix] + dx * im[k * w * h + r * w + ix + 1]
            }
            part[k * nw * h + r * nw + c] = val
        } } }
        for k in 0..<3 { for r in 0..<nh {
            let sy = Float(r) * hs; let iy = Int(sy); let dy = sy - Float(iy)
            for c in 0..<nw { resized[k * nw * nh + r * nw + c] = (1 - dy) * part[k * nw * h + iy * nw + c] }
            if r == nh - 1 || h == 1 { continue }
            for c in 0..<nw { resized[k * nw * nh + r * nw + c] += dy * part[k * nw * h + (iy + 1) * nw + c] }
        } }
        var out = [Float](repeating: 0.5, count: 3 * netWidth * netHeight)
        let dx = (netWidth - nw) / 2, dy = (netHeight - nh) / 2
        for k in 0..<3 { for y in 0..<nh { for x in 0..<nw {
            out[k * netWidth * netHeight + (y + dy) * netWidth + x + dx] = resized[k * nw * nh + y * nw + x]
        } } }
        return out
    }
}
