import YOLOCore

/// A distinct colour for each class, for any number of classes: hues step by the golden ratio
/// (neighbouring classes get far-apart hues) and brightness cycles through three levels, so
/// colours stay apart well beyond 80 classes (tested distinct up to 1000). Deterministic.
public func videoClassColor(_ classIndex: Int, classCount: Int = 80) -> RGBColor {
    let i = classIndex < 0 ? -classIndex : classIndex
    // Golden-ratio hue sequence (fraction of the colour wheel).
    var hue = Double(i) * 0.618033988749895
    hue -= hue.rounded(.down)
    let levels: [(s: Double, v: Double)] = [(0.85, 1.0), (1.0, 0.72), (0.55, 0.92)]
    let (s, v) = levels[(i / 7) % levels.count]
    let h6 = hue * 6
    let sector = Int(h6.rounded(.down)) % 6
    let f = h6 - h6.rounded(.down)
    let p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f))
    let (r, g, b): (Double, Double, Double)
    switch sector {
    case 0: (r, g, b) = (v, t, p)
    case 1: (r, g, b) = (q, v, p)
    case 2: (r, g, b) = (p, v, t)
    case 3: (r, g, b) = (p, q, v)
    case 4: (r, g, b) = (t, p, v)
    default: (r, g, b) = (v, p, q)
    }
    func byte(_ x: Double) -> UInt8 { UInt8(min(max(x * 255 + 0.5, 0), 255)) }
    // The index's low 6 bits in the channels' low 2 bits (invisible, but it keeps classes
    // whose hues round alike apart).
    let k = UInt8(truncatingIfNeeded: i)
    return RGBColor(red: byte(r) & 0xFC | k & 3, green: byte(g) & 0xFC | (k >> 2) & 3,
                    blue: byte(b) & 0xFC | (k >> 4) & 3)
}

/// Where labels go: filled rectangles in frame pixels (half-open).
struct LabelRect: Equatable {
    var x0: Int, y0: Int, x1: Int, y1: Int
    func overlaps(_ o: LabelRect) -> Bool { x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1 }
}

/// A frame's pixels in caller memory, any `PixelFormat` and row stride.
struct FrameCanvas {
    let base: UnsafeMutablePointer<UInt8>
    let width: Int, height: Int, rowStride: Int
    let format: PixelFormat

    /// The bytes of one pixel of `color` in this format.
    func bytes(_ c: RGBColor) -> (UInt8, UInt8, UInt8, UInt8) {
        switch format {
        case .rgb, .rgba: return (c.red, c.green, c.blue, 255)
        case .bgr, .bgra: return (c.blue, c.green, c.red, 255)
        case .gray: return (UInt8(min(c.luma + 0.5, 255)), 0, 0, 0)
        }
    }

    func fill(x0: Int, y0: Int, x1: Int, y1: Int, color: RGBColor) {
        let left = max(x0, 0), right = min(x1, width), top = max(y0, 0), bottom = min(y1, height)
        guard left < right, top < bottom else { return }
        let (b0, b1, b2, b3) = bytes(color)
        let bpp = format.bytesPerPixel
        for y in top..<bottom {
            var p = base + y * rowStride + left * bpp
            switch bpp {
            case 1:
                for _ in left..<right { p[0] = b0; p += 1 }
            case 3:
                for _ in left..<right { p[0] = b0; p[1] = b1; p[2] = b2; p += 3 }
            default:
                for _ in left..<right { p[0] = b0; p[1] = b1; p[2] = b2; p[3] = b3; p += 4 }
            }
        }
    }

    func text(_ text: String, x: Int, y: Int, scale: Int, color: RGBColor) {
        var left = x
        for scalar in text.unicodeScalars {
            if left >= width { break }
            let offset = BitmapFont.glyphOffset(scalar)
            for row in 0..<BitmapFont.glyphHeight {
                let bits = BitmapFont.rows[offset + row]
                guard bits != 0 else { continue }
                for column in 0..<BitmapFont.glyphWidth where bits & (0x10 >> column) != 0 {
                    let px = left + column * scale, py = y + row * scale
                    fill(x0: px, y0: py, x1: px + scale, y1: py + scale, color: color)
                }
            }
            left += BitmapFont.advance * scale
        }
    }
}

/// Draws detections into a frame in the caller's memory: `height` rows `rowStride` bytes apart
/// (default `width * format.bytesPerPixel`), any `PixelFormat` (alpha set opaque where drawn).
/// Boxes in a distinct colour per class (`videoClassColor`), outlines `lineWidth` thick; labels
/// (default "dog 57%"; pass `labels`, one per detection, e.g. with track ids) in filled boxes,
/// at least 9 pixels high so they stay legible on small frames, cut to the frame's width, and
/// placed so that they do not cover each other: above the box, else inside its top, below it,
/// inside its bottom, else the nearest free place further down. Detections that share a box
/// share one outline and one label. Any coordinates are safe: everything is clipped.
/// - Precondition: the buffer holds the frame (`(height - 1) * rowStride + width * bpp` bytes).
public func drawDetections(_ detections: [Detection], labels: [String]? = nil,
                           into pixels: UnsafeMutableRawBufferPointer, width: Int, height: Int,
                           rowStride: Int? = nil, format: PixelFormat = .rgb, classCount: Int = 80,
                           lineWidth: Int? = nil, textScale: Int? = nil) {
    guard width > 0, height > 0, let base = pixels.baseAddress else { return }
    let stride = rowStride ?? width * format.bytesPerPixel
    precondition(stride >= width * format.bytesPerPixel
                 && pixels.count >= (height - 1) * stride + width * format.bytesPerPixel,
                 "drawDetections: \(pixels.count) bytes do not hold \(width)x\(height) \(format) with row stride \(stride)")
    precondition(labels == nil || labels!.count == detections.count, "drawDetections: one label per detection")
    let canvas = FrameCanvas(base: base.assumingMemoryBound(to: UInt8.self), width: width, height: height,
                             rowStride: stride, format: format)
    let line = min(max(lineWidth ?? defaultLineWidth(imageHeight: height), 1), max(width, height))
    let scale = clampedTextScale(textScale ?? defaultTextScale(imageHeight: height))

    // Group detections sharing a box (same boxIndex and edges), keeping first appearance order.
    var groups: [[Int]] = []
    for i in detections.indices {
        if let g = groups.firstIndex(where: { detections[$0[0]].boxIndex == detections[i].boxIndex
                                              && sameBox(detections[$0[0]], detections[i]) }) {
            groups[g].append(i)
        } else {
            groups.append([i])
        }
    }
    var toLabel: [(box: PixelBox, color: RGBColor, text: String)] = []
    for group in groups {
        let sorted = group.sorted { detections[$0].confidence > detections[$1].confidence }
        let d = detections[sorted[0]]
        guard let box = clampedFrameBox(d, width: width, height: height) else { continue }
        let color = videoClassColor(d.classIndex, classCount: classCount)
        let (x0, y0, x1, y1) = (box.x0, box.y0, box.x1 + 1, box.y1 + 1)
        canvas.fill(x0: x0, y0: y0, x1: x1, y1: y0 + line, color: color)
        canvas.fill(x0: x0, y0: y1 - line, x1: x1, y1: y1, color: color)
        canvas.fill(x0: x0, y0: y0, x1: x0 + line, y1: y1, color: color)
        canvas.fill(x0: x1 - line, y0: y0, x1: x1, y1: y1, color: color)
        let text = sorted.map { labels?[$0] ?? labelText(detections[$0]) }.joined(separator: ", ")
        toLabel.append((box, color, text))
    }
    var placed: [LabelRect] = []
    for label in toLabel {
        // Cut the text to the frame's width.
        var text = label.text
        let maxChars = max(1, (width - 2 * scale + 1) / (BitmapFont.advance * scale))
        if text.unicodeScalars.count > maxChars {
            text = String(String.UnicodeScalarView(text.unicodeScalars.prefix(maxChars)))
        }
        let size = textSize(text, scale: scale)
        let w = min(size.width + 2 * scale, width), h = min(size.height + 2 * scale, height)
        let rect = placeLabel(width: w, height: h, box: label.box, frameWidth: width, frameHeight: height,
                              avoiding: placed)
        placed.append(rect)
        canvas.fill(x0: rect.x0, y0: rect.y0, x1: rect.x1, y1: rect.y1, color: label.color)
        let ink: RGBColor = label.color.luma >= 140 ? .black : .white
        canvas.text(text, x: rect.x0 + scale, y: rect.y0 + scale, scale: scale, color: ink)
    }
}

/// The detection's box clamped to the frame, or nil when outside it or NaN.
func clampedFrameBox(_ d: Detection, width: Int, height: Int) -> PixelBox? {
    guard !(d.left.isNaN || d.top.isNaN || d.right.isNaN || d.bottom.isNaN) else { return nil }
    let maxX = Float(width - 1), maxY = Float(height - 1)
    let l = min(d.left, d.right), r = max(d.left, d.right), t = min(d.top, d.bottom), b = max(d.top, d.bottom)
    guard r >= 0, b >= 0, l <= maxX, t <= maxY else { return nil }
    return PixelBox(x0: Int(max(l, 0)), y0: Int(max(t, 0)), x1: Int(min(r, maxX)), y1: Int(min(b, maxY)))
}

/// A place for a `width` x `height` label of `box` that overlaps none of `placed`: above the
/// box, inside its top, below it, inside its bottom; else further down (then up) from above
/// the box; if the frame has no free place, above the box.
func placeLabel(width w: Int, height h: Int, box: PixelBox, frameWidth: Int, frameHeight: Int,
                avoiding placed: [LabelRect]) -> LabelRect {
    let x = max(0, min(box.x0, frameWidth - w))
    func rect(_ y: Int) -> LabelRect {
        let y = max(0, min(y, frameHeight - h))
        return LabelRect(x0: x, y0: y, x1: x + w, y1: y + h)
    }
    let above = box.y0 - h >= 0 ? rect(box.y0 - h) : rect(box.y0)
    let candidates = [above, rect(box.y0), rect(box.y1 + 1), rect(box.y1 + 1 - h)]
    for c in candidates where !placed.contains(where: { $0.overlaps(c) }) { return c }
    var y = above.y0 + 1
    while y + h <= frameHeight {
        let c = rect(y)
        if let blocker = placed.first(where: { $0.overlaps(c) }) { y = blocker.y1; continue }
        return c
    }
    y = above.y0 - 1
    while y >= 0 {
        let c = rect(y)
        if let blocker = placed.first(where: { $0.overlaps(c) }) { y = blocker.y0 - h; continue }
        return c
    }
    return above
}
