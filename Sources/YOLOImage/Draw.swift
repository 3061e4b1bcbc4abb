import YOLOCore

/// A distinct, deterministic colour for a class, spread over the hues the way Darknet does it:
/// the class index is scrambled (`index * 123457 mod classCount`) and the result picks a point
/// on the path magenta → red → yellow → green → cyan → blue.
public func classColor(_ classIndex: Int, classCount: Int = 80) -> RGBColor {
    let count = min(max(classCount, 1), 1 << 24)  // keeps the products below in range
    let index = ((classIndex % count) + count) % count
    let offset = (index * (123457 % count)) % count
    // The path's corners, as (red, green, blue) in 0/1.
    let corners: [(Float, Float, Float)] = [(1, 0, 1), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 1, 1), (0, 0, 1)]
    let position = Float(offset) / Float(count) * Float(corners.count - 1)
    let i = Int(position.rounded(.down))
    let j = min(i + 1, corners.count - 1)
    let t = position - Float(i)
    func mix(_ a: Float, _ b: Float) -> UInt8 { UInt8(((1 - t) * a + t * b) * 255 + 0.5) }
    return RGBColor(red: mix(corners[i].0, corners[j].0), green: mix(corners[i].1, corners[j].1),
                    blue: mix(corners[i].2, corners[j].2))
}

/// The box outline width `drawDetections` uses by default: 0.6% of the image height, at least 2.
public func defaultLineWidth(imageHeight: Int) -> Int {
    max(2, Int(Double(imageHeight) * 0.006))
}

/// The label text scale `drawDetections` uses by default: text about 2.5% of the image
/// height, at least scale 1 (9-pixel glyphs).
public func defaultTextScale(imageHeight: Int) -> Int {
    max(1, Int((Double(imageHeight) * 0.025 / Double(BitmapFont.glyphHeight)).rounded()))
}

/// Draws the outline of the box with edges `left`...`right`, `top`...`bottom` (pixels, may lie
/// outside the image), `lineWidth` pixels thick, growing inward. The box is clamped to the image,
/// so a box that sticks out shows along the border; a box entirely outside, or with a NaN edge,
/// draws nothing.
public func drawBox(left: Float, top: Float, right: Float, bottom: Float, on image: inout RGBImage,
                    color: RGBColor, lineWidth: Int = 2) {
    guard let box = clampedBox(left: left, top: top, right: right, bottom: bottom, in: image) else { return }
    drawOutline(box, on: &image, color: color, lineWidth: lineWidth)
}

/// Draws each detection's box in its class colour with a label such as "dog 57%" in a filled
/// box above it (inside the box when there is no room above). Detections that share a box
/// (same `boxIndex` and edges, e.g. car and truck) get one box and one label "truck 62%, car 55%".
/// All boxes are drawn before the labels, so no box covers a label. Any coordinates are safe:
/// everything is clipped to the image.
/// - Parameters:
///   - classCount: the number of classes, which spreads the colours (80 for COCO).
///   - lineWidth: box outline width; default `defaultLineWidth(imageHeight:)`.
///   - textScale: label font scale; default `defaultTextScale(imageHeight:)`.
public func drawDetections(_ detections: [Detection], on image: inout RGBImage, classCount: Int = 80,
                           lineWidth: Int? = nil, textScale: Int? = nil) {
    let lineWidth = lineWidth ?? defaultLineWidth(imageHeight: image.height)
    let scale = clampedTextScale(textScale ?? defaultTextScale(imageHeight: image.height))
    var labels: [(box: PixelBox, color: RGBColor, text: String)] = []
    for group in groupByBox(detections) {
        let first = group[0]
        guard let box = clampedBox(left: first.left, top: first.top, right: first.right,
                                   bottom: first.bottom, in: image) else { continue }
        let color = classColor(first.classIndex, classCount: classCount)
        drawOutline(box, on: &image, color: color, lineWidth: lineWidth)
        labels.append((box, color, group.map(labelText).joined(separator: ", ")))
    }
    for label in labels {
        drawLabel(label.text, at: label.box, on: &image, color: label.color, scale: scale)
    }
}

/// "dog 57%" (or "dog" when the confidence is NaN).
func labelText(_ detection: Detection) -> String {
    let confidence = detection.confidence
    guard !confidence.isNaN else { return detection.className }
    let percent = Int((min(max(confidence, 0), 1) * 100).rounded())
    return "\(detection.className) \(percent)%"
}

/// Detections in order of first appearance, grouped by box (`boxGroups`); each group sorted by
/// falling confidence.
func groupByBox(_ detections: [Detection]) -> [[Detection]] {
    boxGroups(detections).map { $0.map { detections[$0] }.sorted { $0.confidence > $1.confidence } }
}

/// A box in pixels, inclusive edges, inside the image.
struct PixelBox: Equatable {
    var x0: Int, y0: Int, x1: Int, y1: Int
}

/// The box clamped to the image, or nil when it lies entirely outside or has a NaN edge.
func clampedBox(left: Float, top: Float, right: Float, bottom: Float, in image: RGBImage) -> PixelBox? {
    clampedBox(left: left, top: top, right: right, bottom: bottom, width: image.width, height: image.height)
}

/// The box clamped to a `width` x `height` frame, or nil when it lies entirely outside or has a NaN edge.
func clampedBox(left: Float, top: Float, right: Float, bottom: Float, width: Int, height: Int) -> PixelBox? {
    guard width > 0, height > 0, !(left.isNaN || top.isNaN || right.isNaN || bottom.isNaN) else { return nil }
    let maxX = Float(width - 1), maxY = Float(height - 1)
    let l = min(left, right), r = max(left, right), t = min(top, bottom), b = max(top, bottom)
    guard r >= 0, b >= 0, l <= maxX, t <= maxY else { return nil }
    return PixelBox(x0: Int(max(l, 0)), y0: Int(max(t, 0)), x1: Int(min(r, maxX)), y1: Int(min(b, maxY)))
}

/// Four filled strips of width `lineWidth` along the inside of the box's edges.
func drawOutline(_ box: PixelBox, on image: inout RGBImage, color: RGBColor, lineWidth: Int) {
    let w = min(max(lineWidth, 1), max(image.width, image.height))
    let (x0, y0, x1, y1) = (box.x0, box.y0, box.x1 + 1, box.y1 + 1)  // half-open
    fillRectangle(on: &image, x0: x0, y0: y0, x1: x1, y1: y0 + w, color: color)
    fillRectangle(on: &image, x0: x0, y0: y1 - w, x1: x1, y1: y1, color: color)
    fillRectangle(on: &image, x0: x0, y0: y0, x1: x0 + w, y1: y1, color: color)
    fillRectangle(on: &image, x0: x1 - w, y0: y0, x1: x1, y1: y1, color: color)
}

/// A filled label box with `text` in black or white (whichever contrasts with `color`), above
/// `box` if it fits there, else just inside its top edge; shifted left to stay in the image.
func drawLabel(_ text: String, at box: PixelBox, on image: inout RGBImage, color: RGBColor, scale: Int) {
    let size = textSize(text, scale: scale)
    let padding = scale
    let width = size.width + 2 * padding, height = size.height + 2 * padding
    let x = max(0, min(box.x0, image.width - width))
    let y = box.y0 - height >= 0 ? box.y0 - height : box.y0
    fillRectangle(on: &image, x0: x, y0: y, x1: x + width, y1: y + height, color: color)
    let ink: RGBColor = color.luma >= 140 ? .black : .white
    drawText(text, on: &image, x: x + padding, y: y + padding, scale: scale, color: ink)
}

/// Fills the pixels with x0 <= x < x1 and y0 <= y < y1 that lie inside the image.
func fillRectangle(on image: inout RGBImage, x0: Int, y0: Int, x1: Int, y1: Int, color: RGBColor) {
    let left = max(x0, 0), right = min(x1, image.width)
    let top = max(y0, 0), bottom = min(y1, image.height)
    guard left < right, top < bottom else { return }
    let width = image.width
    image.pixels.withUnsafeMutableBufferPointer { p in
        for y in top..<bottom {
            var i = (y * width + left) * 3
            for _ in left..<right {
                p[i] = color.red; p[i + 1] = color.green; p[i + 2] = color.blue
                i += 3
            }
        }
    }
}
