// Drawing into video frames in the caller's memory (any `PixelFormat`, any row stride): boxes
// with one label line each, in a distinct colour per class (`videoClassColor`), labels that
// do not cover each other.
import YOLOCore

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

/// One box to draw on a frame: its edges (pixels, any values: clipped), the class that colours
/// it and its label line.
public struct FrameBox: Sendable, Equatable {
    public var left: Float, top: Float, right: Float, bottom: Float
    public var classIndex: Int
    public var label: String

    public init(left: Float, top: Float, right: Float, bottom: Float, classIndex: Int, label: String) {
        self.left = left; self.top = top; self.right = right; self.bottom = bottom
        self.classIndex = classIndex
        self.label = label
    }

    /// One box's detections (the same box, one per class): the box of the most confident, its
    /// colour, and one label line listing every class, most confident first, after `prefix`
    /// (e.g. "#3 car 61%, truck 30%"). `labels`, one per detection, replace "car 61%".
    /// - Precondition: `detections` is not empty.
    public init(detections: [Detection], labels: [String]? = nil, prefix: String = "") {
        precondition(!detections.isEmpty, "FrameBox: no detections")
        let order = detections.indices.sorted { detections[$0].confidence > detections[$1].confidence }
        let d = detections[order[0]]
        self.init(left: d.left, top: d.top, right: d.right, bottom: d.bottom, classIndex: d.classIndex,
                  label: prefix + order.map { labels?[$0] ?? labelText(detections[$0]) }.joined(separator: ", "))
    }
}

/// Draws detections into a frame in the caller's memory: `height` rows `rowStride` bytes apart
/// (default `width * format.bytesPerPixel`), any `PixelFormat` (alpha set opaque where drawn).
/// Detections that share a box (`boxGroups`: car and truck) get one outline and one label line
/// ("car 61%, truck 30%", or their `labels` joined), as `FrameBox(detections:)` makes it; see
/// `drawBoxes`.
public func drawDetections(_ detections: [Detection], labels: [String]? = nil,
                           into pixels: UnsafeMutableRawBufferPointer, width: Int, height: Int,
                           rowStride: Int? = nil, format: PixelFormat = .rgb, classCount: Int = 80,
                           lineWidth: Int? = nil, textScale: Int? = nil) {
    precondition(labels == nil || labels!.count == detections.count, "drawDetections: one label per detection")
    let boxes = boxGroups(detections).map { group in
        FrameBox(detections: group.map { detections[$0] }, labels: labels.map { all in group.map { all[$0] } })
    }
    drawBoxes(boxes, into: pixels, width: width, height: height, rowStride: rowStride, format: format,
              classCount: classCount, lineWidth: lineWidth, textScale: textScale)
}

/// Draws boxes into a frame in the caller's memory: `height` rows `rowStride` bytes apart
/// (default `width * format.bytesPerPixel`), any `PixelFormat` (alpha set opaque where drawn).
/// Each box in its class's colour (`videoClassColor`), its outline `lineWidth` thick, its label
/// line in a filled box, at least 9 pixels high so it stays legible on small frames, cut to the
/// frame's width, and placed so that labels do not cover each other: above the box, else
/// inside its top, below it, inside its bottom, else the nearest free place further down. Any
/// coordinates are safe: everything is clipped.
/// - Precondition: the buffer holds the frame (`(height - 1) * rowStride + width * bpp` bytes).
public func drawBoxes(_ boxes: [FrameBox], into pixels: UnsafeMutableRawBufferPointer, width: Int, height: Int,
                      rowStride: Int? = nil, format: PixelFormat = .rgb, classCount: Int = 80,
                      lineWidth: Int? = nil, textScale: Int? = nil) {
    guard width > 0, height > 0, let base = pixels.baseAddress else { return }
    let stride = rowStride ?? width * format.bytesPerPixel
    precondition(stride >= width * format.bytesPerPixel
                 && pixels.count >= (height - 1) * stride + width * format.bytesPerPixel,
                 "drawBoxes: \(pixels.count) bytes do not hold \(width)x\(height) \(format) with row stride \(stride)")
    let canvas = FrameCanvas(base: base.assumingMemoryBound(to: UInt8.self), width: width, height: height,
                             rowStride: stride, format: format)
    let line = min(max(lineWidth ?? defaultLineWidth(imageHeight: height), 1), max(width, height))
    let scale = clampedTextScale(textScale ?? defaultTextScale(imageHeight: height))

    var toLabel: [(box: PixelBox, color: RGBColor, text: String)] = []
    for b in boxes {
        guard let box = clampedBox(left: b.left, top: b.top, right: b.right, bottom: b.bottom, width: width, height: height)
        else { continue }
        let color = videoClassColor(b.classIndex, classCount: classCount)
        let (x0, y0, x1, y1) = (box.x0, box.y0, box.x1 + 1, box.y1 + 1)
        canvas.fill(x0: x0, y0: y0, x1: x1, y1: y0 + line, color: color)
        canvas.fill(x0: x0, y0: y1 - line, x1: x1, y1: y1, color: color)
        canvas.fill(x0: x0, y0: y0, x1: x0 + line, y1: y1, color: color)
        canvas.fill(x0: x1 - line, y0: y0, x1: x1, y1: y1, color: color)
        toLabel.append((box, color, b.label))
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
