// Preprocessing kernels: 8-bit pixels to the network's CHW float input, as Darknet does it
// (byte / 255, then a separable bilinear resize, horizontal pass first, and for the letterbox
// a placement on a canvas of 0.5). Over raw buffers; only `ResizeScratch.reserve` allocates.
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

/// One output column of the horizontal pass: the byte offsets (in a row) of the two pixels it
/// samples and their weights, `1 - dx` and `dx`. The last column (or every column of a 1-pixel-wide
/// input) copies the last input column: both offsets on it with weights 1 and 0, which gives the
/// table value itself (`1 * t + 0 * t == t` for the table's finite, non-negative values).
struct ColumnTap {
    var offset0: Int
    var offset1: Int
    var wa: Float
    var dx: Float
}

/// The resize's scratch memory, grown as output widths need: the column taps and two input
/// rows resized horizontally (2 slots x 3 channels x `outWidth`). Owned by a Detector's state.
struct ResizeScratch {
    private(set) var taps = UnsafeMutablePointer<ColumnTap>.allocate(capacity: 1)
    private(set) var rows = UnsafeMutablePointer<Float>.allocate(capacity: 1)
    private var capacity = 0

    /// Makes room for an output `width` (allocates only when it is the widest so far).
    mutating func reserve(width: Int) {
        guard width > capacity else { return }
        deallocate()
        taps = .allocate(capacity: width)
        rows = .allocate(capacity: 6 * width)
        capacity = width
    }

    func deallocate() { taps.deallocate(); rows.deallocate() }
}

/// Darknet's `resize_image` of 8-bit pixels (`width` x `height`, rows `rowStride` bytes apart) to
/// `outWidth` x `outHeight`, written into the three planes of `dst` (`dstWidth` x `dstHeight`
/// each) at column `x0`, row `y0`. Bit for bit Darknet's two passes: horizontally, column c
/// samples x = c * scale (`ColumnTap`); vertically, row r is `(1 - dy) * part[iy]`, then, unless
/// r is the last row or the input has one row, `dy * part[iy + 1]` is added (two roundings).
/// Only the input rows the vertical pass reads are resized horizontally, each once, into the
/// scratch's two row slots (row i in slot i % 2; rows iy and iy + 1 never share one).
/// `scratch` must have room for `outWidth` (`ResizeScratch.reserve`).
func resizeBilinear(_ src: UnsafePointer<UInt8>, width: Int, height: Int, rowStride: Int, layout: PixelLayout,
                    table: UnsafePointer<Float>, outWidth: Int, outHeight: Int, scratch: ResizeScratch,
                    into dst: UnsafeMutablePointer<Float>, dstWidth: Int, dstHeight: Int, x0: Int, y0: Int) {
    let taps = scratch.taps
    fillColumnTaps(taps, width: width, outWidth: outWidth, bytesPerPixel: layout.bytesPerPixel)
    let slotSize = 3 * outWidth
    var slotRow = (-1, -1)
    // Row i resized horizontally, in its slot.
    func part(_ i: Int) -> UnsafeMutablePointer<Float> {
        let slot = scratch.rows + (i & 1) * slotSize
        if (i & 1 == 0 ? slotRow.0 : slotRow.1) != i {
            resizeRow(src + i * rowStride, taps: taps, count: outWidth, layout: layout, table: table, into: slot)
            if i & 1 == 0 { slotRow.0 = i } else { slotRow.1 = i }
        }
        return slot
    }
    let scale = bilinearScale(input: height, output: outHeight)
    let dstPlane = dstWidth * dstHeight
    for r in 0..<outHeight {
        let sy = Float(r) * scale
        let iy = min(Int(sy), height - 1)
        let dy = sy - Float(iy)
        let wa = 1 - dy
        let a = part(iy)
        let out = dst + (y0 + r) * dstWidth + x0
        if r == outHeight - 1 || height == 1 {
            for k in 0..<3 { scaleRow(a + k * outWidth, by: wa, count: outWidth, into: out + k * dstPlane) }
        } else {
            let b = part(min(iy + 1, height - 1))
            for k in 0..<3 {
                blendRows(a + k * outWidth, wa, b + k * outWidth, dy, count: outWidth, into: out + k * dstPlane)
            }
        }
    }
}

/// The taps of the horizontal pass, computed with Darknet's expressions (as its per-pixel code).
func fillColumnTaps(_ taps: UnsafeMutablePointer<ColumnTap>, width: Int, outWidth: Int, bytesPerPixel bpp: Int) {
    let scale = bilinearScale(input: width, output: outWidth)
    for c in 0..<outWidth {
        if c == outWidth - 1 || width == 1 {
            taps[c] = ColumnTap(offset0: (width - 1) * bpp, offset1: (width - 1) * bpp, wa: 1, dx: 0)
        } else {
            let sx = Float(c) * scale
            let ix = Int(sx)
            let dx = sx - Float(ix)
            taps[c] = ColumnTap(offset0: ix * bpp, offset1: min(ix + 1, width - 1) * bpp, wa: 1 - dx, dx: dx)
        }
    }
}

/// One input row resized horizontally into three channel rows of `count` floats (R, G, B),
/// with the channel offsets of the common layouts as constants.
func resizeRow(_ row: UnsafePointer<UInt8>, taps: UnsafePointer<ColumnTap>, count: Int, layout: PixelLayout,
               table: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>) {
    let outGreen = out + count, outBlue = out + 2 * count
    switch (layout.red, layout.green, layout.blue) {
    case (0, 1, 2): resizeRow(row, taps, count, table, out, red: 0, green: 1, blue: 2)
    case (2, 1, 0): resizeRow(row, taps, count, table, out, red: 2, green: 1, blue: 0)
    case (0, 0, 0):
        for c in 0..<count {
            let t = taps[c]
            let v = t.wa * table[Int(row[t.offset0])] + t.dx * table[Int(row[t.offset1])]
            out[c] = v
            outGreen[c] = v
            outBlue[c] = v
        }
    case let (red, green, blue): resizeRow(row, taps, count, table, out, red: red, green: green, blue: blue)
    }
}

@inline(__always)
private func resizeRow(_ row: UnsafePointer<UInt8>, _ taps: UnsafePointer<ColumnTap>, _ count: Int,
                       _ table: UnsafePointer<Float>, _ out: UnsafeMutablePointer<Float>, red: Int, green: Int, blue: Int) {
    let outGreen = out + count, outBlue = out + 2 * count
    for c in 0..<count {
        let t = taps[c]
        let p0 = row + t.offset0, p1 = row + t.offset1
        out[c] = t.wa * table[Int(p0[red])] + t.dx * table[Int(p1[red])]
        outGreen[c] = t.wa * table[Int(p0[green])] + t.dx * table[Int(p1[green])]
        outBlue[c] = t.wa * table[Int(p0[blue])] + t.dx * table[Int(p1[blue])]
    }
}

/// `out[c] = wa * a[c]` (the vertical pass's last row).
@inline(__always)
private func scaleRow(_ a: UnsafePointer<Float>, by wa: Float, count: Int, into out: UnsafeMutablePointer<Float>) {
    for c in 0..<count { out[c] = wa * a[c] }
}

/// `out[c] = wa * a[c] + dy * b[c]`, rounded after the first product's sum as Darknet does.
@inline(__always)
private func blendRows(_ a: UnsafePointer<Float>, _ wa: Float, _ b: UnsafePointer<Float>, _ dy: Float, count: Int,
                       into out: UnsafeMutablePointer<Float>) {
    for c in 0..<count {
        let first = wa * a[c]
        out[c] = first + dy * b[c]
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
