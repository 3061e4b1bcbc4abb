// Preprocessing kernels: 8-bit pixels to the network's CHW float input, as Darknet does it
// (byte / 255, then a separable bilinear resize, horizontal pass first, and for the letterbox
// a placement on a canvas of 0.5). Import-free, over raw buffers; nothing here allocates.
import YOLOCore
import YOLOEngine

/// The size an image of `width` x `height` is resized to inside a `netWidth` x `netHeight`
/// letterbox, as Darknet's `letterbox_image` computes it: the side that limits keeps the
/// network size, the other follows with integer division (768x576 in 416x416 -> 416x312).
/// Clamped to at least 1 pixel (Darknet has no answer for a 0-pixel side).
func letterboxSize(width: Int, height: Int, netWidth: Int, netHeight: Int) -> (width: Int, height: Int) {
    var newWidth: Int, newHeight: Int
    if Float(netWidth) / Float(width) < Float(netHeight) / Float(height) {
        newWidth = netWidth
        newHeight = (height * netWidth) / width
    } else {
        newHeight = netHeight
        newWidth = (width * netHeight) / height
    }
    return (max(1, newWidth), max(1, newHeight))
}

/// Fills `table[b]` with Darknet's pixel value for byte b: `(float)b / 255.` (a double
/// division rounded to float).
func fillUnitByteTable(_ table: UnsafeMutablePointer<Float>) {
    for b in 0..<256 { table[b] = Float(Double(b) / 255.0) }
}

/// Darknet's corner-aligned scale, `(float)(in - 1) / (out - 1)`; 0 when `out` is 1, where
/// Darknet divides by zero (its last-row / last-column rule then takes over).
@inline(__always)
func bilinearScale(input: Int, output: Int) -> Float {
    output > 1 ? Float(input - 1) / Float(output - 1) : 0
}

/// Horizontal pass of Darknet's `resize_image`, reading 8-bit pixels directly: writes three
/// float planes of `height` rows x `outWidth` columns (R, G, B, one after the other) into `part`.
/// Column c samples x = c * scale; the last column (or every column of a 1-pixel-wide input)
/// copies the last input column.
func resizeHorizontal(_ src: UnsafePointer<UInt8>, width: Int, height: Int, rowStride: Int, layout: PixelLayout,
                      table: UnsafePointer<Float>, outWidth: Int, into part: UnsafeMutablePointer<Float>) {
    let scale = bilinearScale(input: width, output: outWidth)
    let plane = height * outWidth
    let bpp = layout.bytesPerPixel
    let offsets = (layout.red, layout.green, layout.blue)
    for r in 0..<height {
        let row = src + r * rowStride
        let out = part + r * outWidth
        for c in 0..<outWidth {
            var v = (Float(0), Float(0), Float(0))
            if c == outWidth - 1 || width == 1 {
                let p = row + (width - 1) * bpp
                v = (table[Int(p[offsets.0])], table[Int(p[offsets.1])], table[Int(p[offsets.2])])
            } else {
                let sx = Float(c) * scale
                let ix = Int(sx)
                let dx = sx - Float(ix)
                let p0 = row + ix * bpp
                let p1 = row + min(ix + 1, width - 1) * bpp
                let wa = 1 - dx
                v.0 = wa * table[Int(p0[offsets.0])] + dx * table[Int(p1[offsets.0])]
                v.1 = wa * table[Int(p0[offsets.1])] + dx * table[Int(p1[offsets.1])]
                v.2 = wa * table[Int(p0[offsets.2])] + dx * table[Int(p1[offsets.2])]
            }
            out[c] = v.0
            out[plane + c] = v.1
            out[2 * plane + c] = v.2
        }
    }
}

/// Vertical pass of Darknet's `resize_image`: from the three planes of `part` (`height` rows
/// of `width`) to `outHeight` rows, written into the planes of `dst` (`dstWidth` x `dstHeight`
/// each) at column `x0`, row `y0`. Row r is `(1 - dy) * part[iy]`, then, unless r is the last
/// row or the input has one row, `dy * part[iy + 1]` is added: two roundings, as in Darknet.
func resizeVertical(_ part: UnsafePointer<Float>, width: Int, height: Int, outHeight: Int,
                    into dst: UnsafeMutablePointer<Float>, dstWidth: Int, dstHeight: Int, x0: Int, y0: Int) {
    let scale = bilinearScale(input: height, output: outHeight)
    let plane = height * width
    let dstPlane = dstWidth * dstHeight
    for k in 0..<3 {
        let src = part + k * plane
        for r in 0..<outHeight {
            let sy = Float(r) * scale
            let iy = min(Int(sy), height - 1)
            let dy = sy - Float(iy)
            let wa = 1 - dy
            let a = src + iy * width
            let out = dst + k * dstPlane + (y0 + r) * dstWidth + x0
            if r == outHeight - 1 || height == 1 {
                for c in 0..<width { out[c] = wa * a[c] }
            } else {
                let b = src + min(iy + 1, height - 1) * width
                for c in 0..<width {
                    let first = wa * a[c]
                    out[c] = first + dy * b[c]
                }
            }
        }
    }
}

/// Fills the three `width` x `height` planes of `dst` with `value` outside the rectangle at
/// (x0, y0) of size `boxWidth` x `boxHeight` (the letterbox's bars).
func fillOutside(_ dst: UnsafeMutablePointer<Float>, width: Int, height: Int,
                 x0: Int, y0: Int, boxWidth: Int, boxHeight: Int, value: Float) {
    let plane = width * height
    for k in 0..<3 {
        let p = dst + k * plane
        if y0 > 0 { p.update(repeating: value, count: y0 * width) }
        let below = y0 + boxHeight
        if below < height { (p + below * width).update(repeating: value, count: (height - below) * width) }
        let right = x0 + boxWidth
        for r in y0..<below {
            let row = p + r * width
            if x0 > 0 { row.update(repeating: value, count: x0) }
            if right < width { (row + right).update(repeating: value, count: width - right) }
        }
    }
}
