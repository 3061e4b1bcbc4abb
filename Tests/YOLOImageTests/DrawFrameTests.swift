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
        // Reference: packed RGB.
        var rgb = [UInt8](repeating: 0, count: w * h * 3)
        rgb.withUnsafeMutableBytes { drawDetections(dets, into: $0, width: w, height: h, format: .rgb) }
        XCTAssertNotEqual(rgb, [UInt8](repeating: 0, count: w * h * 3))
        for format in PixelFormat.allCases {
            let bpp = format.bytesPerPixel, stride = w * bpp + 13
            var frame = [UInt8](repeating: 0, count: stride * h)
            frame.withUnsafeMutableBytes {
                drawDetections(dets, into: $0, width: w, height: h, rowStride: stride, format: format)
            }
            for y in 0..<h {
                for pad in (w * bpp)..<stride { XCTAssertEqual(frame[y * stride + pad], 0, "padding untouched") }
                for x in 0..<w {
                    let r = rgb[(y * w + x) * 3], g = rgb[(y * w + x) * 3 + 1], b = rgb[(y * w + x) * 3 + 2]
                    let p = y * stride + x * bpp
                    switch format {
                    case .rgb: XCTAssertEqual([frame[p], frame[p + 1], frame[p + 2]], [r, g, b])
                    case .rgba: XCTAssertEqual([frame[p], frame[p + 1], frame[p + 2]], [r, g, b])
                    case .bgr: XCTAssertEqual([frame[p], frame[p + 1], frame[p + 2]], [b, g, r])
                    case .bgra: XCTAssertEqual([frame[p], frame[p + 1], frame[p + 2]], [b, g, r])
                    case .gray:
                        let drawn = r != 0 || g != 0 || b != 0
                        if !drawn { XCTAssertEqual(frame[p], 0) }
                    }
                    if format == .rgba || format == .bgra {
                        XCTAssertEqual(frame[p + 3], (r != 0 || g != 0 || b != 0) ? 255 : 0)
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
            let box = clampedFrameBox(d, width: w, height: h)!
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
}
