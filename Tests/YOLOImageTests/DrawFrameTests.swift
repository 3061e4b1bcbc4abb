import XCTest
import YOLO
@testable import YOLOImage

final class DrawFrameTests: XCTestCase {
    func detection(_ cls: Int, left: Float, top: Float, right: Float, bottom: Float, w: Int, h: Int,
                   boxIndex: Int = 0) -> Detection {
        let W = Float(w), H = Float(h)
        return Detection(classIndex: cls, className: "class\(cls)", confidence: 0.8, objectness: 0.9,
                         x: (left + right) / 2 / W, y: (top + bottom) / 2 / H, width: (right - left) / W,
                         height: (bottom - top) / H, imageWidth: w, imageHeight: h, boxIndex: boxIndex)
    }

    func testEveryFormatAndStrideDrawsTheSamePicture() {
        let w = 64, h = 48
        let dets = [detection(3, left: 10, top: 20, right: 40, bottom: 44, w: w, h: h),
                    detection(7, left: 30, top: 5, right: 60, bottom: 30, w: w, h: h, boxIndex: 1)]
        // Reference: packed RGB on a background of 9s (labels may have black ink, so 0 would
        // not tell drawn pixels from background).
        let background: UInt8 = 9
        var rgb = [UInt8](repeating: background, count: w * h * 3)
        rgb.withUnsafeMutableBytes { drawDetections(dets, into: $0, width: w, height: h, format: .rgb) }
        XCTAssertNotEqual(rgb, [UInt8](repeating: background, count: w * h * 3))
        for format in PixelFormat.allCases {
            let bpp = format.bytesPerPixel, stride = w * bpp + 13
            // Colour bytes 9, alpha bytes and row padding 0.
            var frame = [UInt8](repeating: 0, count: stride * h)
            for y in 0..<h { for x in 0..<w { for c in 0..<min(bpp, 3) { frame[y * stride + x * bpp + c] = background } } }
            frame.withUnsafeMutableBytes {
                drawDetections(dets, into: $0, width: w, height: h, rowStride: stride, format: format)
            }
            for y in 0..<h {
                for pad in (w * bpp)..<stride { XCTAssertEqual(frame[y * stride + pad], 0, "padding untouched") }
                for x in 0..<w {
                    let r = rgb[(y * w + x) * 3], g = rgb[(y * w + x) * 3 + 1], b = rgb[(y * w + x) * 3 + 2]
                    let drawn = [r, g, b] != [background, background, background]
                    let p = y * stride + x * bpp
                    switch format {
                    case .rgb: XCTAssertEqual([frame[p], frame[p + 1], frame[p + 2]], [r, g, b])
                    case .rgba: XCTAssertEqual([frame[p], frame[p + 1], frame[p + 2]], [r, g, b])
                    case .bgr: XCTAssertEqual([frame[p], frame[p + 1], frame[p + 2]], [b, g, r])
                    case .bgra: XCTAssertEqual([frame[p], frame[p + 1], frame[p + 2]], [b, g, r])
                    case .gray:
                        if !drawn { XCTAssertEqual(frame[p], background) }
                    }
                    if format == .rgba || format == .bgra {
                        XCTAssertEqual(frame[p + 3], drawn ? 255 : 0)
                    }
                }
            }
        }
    }

    func testLabelsDoNotCoverEachOther() {
        // Three boxes stacked at nearly the same place on a small frame.
        let w = 120, h = 90
        let dets = (0..<3).map { detection($0, left: 20 + Float($0), top: 30, right: 100, bottom: 80, w: w, h: h, boxIndex: $0) }
        var placed: [LabelRect] = []
        for d in dets {
            let box = clampedBox(left: d.left, top: d.top, right: d.right, bottom: d.bottom, width: w, height: h)!
            let r = placeLabel(width: 60, height: 11, box: box, frameWidth: w, frameHeight: h, avoiding: placed)
            XCTAssertTrue(r.x0 >= 0 && r.y0 >= 0 && r.x1 <= w && r.y1 <= h)
            for p in placed { XCTAssertFalse(p.overlaps(r), "\(p) and \(r)") }
            placed.append(r)
        }
        // Drawing them cuts labels to the frame and keeps at least 9-pixel text.
        var frame = [UInt8](repeating: 0, count: w * h * 3)
        frame.withUnsafeMutableBytes {
            drawDetections(dets, labels: ["#1 a very long label that cannot fit", "#2 b", "#3 c"], into: $0,
                           width: w, height: h)
        }
        XCTAssertGreaterThanOrEqual(defaultTextScale(imageHeight: 90), 1)
    }

    func testClassColoursAreDistinctForManyClasses() {
        for count in [1, 2, 80, 91, 365, 1000] {
            let colors = (0..<count).map { videoClassColor($0, classCount: count) }
            XCTAssertEqual(Set(colors).count, count, "\(count) classes")
        }
    }

    /// The colours of the 80 COCO classes are far apart: every pair at least 18 CIELAB units
    /// (clearly different colours), car and truck (2 and 7) far more.
    func testClassColoursAreFarApart() {
        let colors = (0..<80).map { videoClassColor($0) }
        var closest = (distance: Double.infinity, i: 0, j: 0)
        for i in colors.indices {
            for j in (i + 1)..<colors.count where colorDistance(colors[i], colors[j]) < closest.distance {
                closest = (colorDistance(colors[i], colors[j]), i, j)
            }
        }
        XCTAssertGreaterThanOrEqual(closest.distance, 18, "classes \(closest.i) and \(closest.j): \(colors[closest.i]) and \(colors[closest.j])")
        XCTAssertGreaterThanOrEqual(colorDistance(videoClassColor(2), videoClassColor(7)), 60, "car and truck")
        for i in 0..<79 { XCTAssertGreaterThanOrEqual(colorDistance(colors[i], colors[i + 1]), 20, "neighbours \(i), \(i + 1)") }
        // Any index is safe.
        _ = videoClassColor(Int.min)
        _ = videoClassColor(Int.max, classCount: 0)
    }

    /// One box reported as car and as truck: one outline and one label line listing both.
    func testOneLabelLinePerBox() {
        let w = 160, h = 120
        var car = detection(2, left: 40, top: 40, right: 120, bottom: 100, w: w, h: h)
        car.className = "car"; car.confidence = 0.61
        var truck = car
        truck.classIndex = 7; truck.className = "truck"; truck.confidence = 0.30
        XCTAssertEqual(FrameBox(detections: [truck, car], prefix: "#3 ").label, "#3 car 61%, truck 30%")
        XCTAssertEqual(FrameBox(detections: [truck, car], prefix: "#3 ").classIndex, 2, "coloured as the best class")
        // Drawn: exactly the pixels of that one box (no second label elsewhere).
        var viaDetections = [UInt8](repeating: 0, count: w * h * 3), viaBox = viaDetections
        viaDetections.withUnsafeMutableBytes {
            drawDetections([car, truck], labels: ["#3 car 61%", "truck 30%"], into: $0, width: w, height: h)
        }
        viaBox.withUnsafeMutableBytes {
            drawBoxes([FrameBox(detections: [car, truck], prefix: "#3 ")], into: $0, width: w, height: h)
        }
        XCTAssertEqual(viaDetections, viaBox)
        var labelRows = Set<Int>()
        for y in 0..<h where (0..<w).contains(where: { x in viaBox[(y * w + x) * 3 ..< (y * w + x) * 3 + 3] != [0, 0, 0] }) {
            labelRows.insert(y)
        }
        XCTAssertTrue(labelRows.isSubset(of: Set(20..<101)), "one label, right above the box: rows \(labelRows.sorted())")
    }
}
