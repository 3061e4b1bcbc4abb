import XCTest
import YOLO
import YOLOImage

final class DrawTests: XCTestCase {
    private func detection(_ classIndex: Int, _ name: String, confidence: Float = 0.57,
                           left: Float, top: Float, right: Float, bottom: Float,
                           imageWidth: Int = 200, imageHeight: Int = 160, boxIndex: Int = 0) -> Detection {
        let w = Float(imageWidth), h = Float(imageHeight)
        return Detection(classIndex: classIndex, className: name, confidence: confidence, objectness: 0.9,
                         x: (left + right) / 2 / w, y: (top + bottom) / 2 / h,
                         width: (right - left) / w, height: (bottom - top) / h,
                         imageWidth: imageWidth, imageHeight: imageHeight, boxIndex: boxIndex)
    }

    private let gray = RGBColor(red: 128, green: 128, blue: 128)

    func testBoxEdgesInClassColourAndFarPixelsUntouched() {
        var image = RGBImage(width: 200, height: 160, fill: gray)
        let dog = detection(16, "dog", left: 50, top: 60, right: 150, bottom: 140)
        drawDetections([dog], on: &image)
        let color = classColor(16)
        XCTAssertEqual(image[50, 100], color)   // left edge
        XCTAssertEqual(image[150, 100], color)  // right edge
        XCTAssertEqual(image[100, 139], color)  // bottom edge
        XCTAssertEqual(image[51, 100], color)   // 2 px line (160 px high image)
        XCTAssertEqual(image[100, 100], gray)   // inside
        XCTAssertEqual(image[10, 10], gray)     // far away
        XCTAssertEqual(image[190, 150], gray)
        XCTAssertEqual(image[100, 150], gray)   // below the box
    }

    func testLabelAboveBoxHasTextInContrastingInk() {
        var image = RGBImage(width: 200, height: 160, fill: gray)
        drawDetections([detection(16, "dog", left: 50, top: 60, right: 150, bottom: 140)], on: &image, textScale: 1)
        let color = classColor(16)
        let ink: RGBColor = color.luma >= 140 ? .black : .white
        let size = textSize("dog 57%", scale: 1)
        // The label box sits on top of the box: rows 60 - (9 + 2) ..< 60, from x = 50.
        var inkPixels = 0, backgroundPixels = 0
        for y in (60 - size.height - 2)..<60 {
            for x in 50..<(50 + size.width + 2) {
                if image[x, y] == ink { inkPixels += 1 } else if image[x, y] == color { backgroundPixels += 1 }
            }
        }
        XCTAssertGreaterThan(inkPixels, 40, "label text pixels")
        XCTAssertGreaterThan(backgroundPixels, inkPixels, "filled label background")
        XCTAssertEqual(image[50 + size.width + 4, 55], gray)  // right of the label
    }

    func testLabelGoesInsideWhenNoRoomAbove() {
        var image = RGBImage(width: 200, height: 160, fill: gray)
        drawDetections([detection(0, "person", left: 20, top: 0, right: 120, bottom: 100)], on: &image, textScale: 1)
        let ink: RGBColor = classColor(0).luma >= 140 ? .black : .white
        let inkInside = (2..<12).contains { y in (20..<70).contains { x in image[x, y] == ink } }
        XCTAssertTrue(inkInside)
    }

    func testDrawTextWritesGlyphs() {
        var image = RGBImage(width: 80, height: 20)
        drawText("Hi 9%", on: &image, x: 2, y: 2, scale: 2, color: .white)
        let lit = stride(from: 0, to: image.pixels.count, by: 3).filter { image.pixels[$0] == 255 }.count
        XCTAssertGreaterThan(lit, 50)
        XCTAssertEqual(textSize("Hi 9%", scale: 2).width, (5 * 6 - 1) * 2)
        XCTAssertEqual(textSize("Hi 9%", scale: 2).height, 18)
        // "H" at scale 2: its left column is lit from the top row down.
        XCTAssertEqual(image[2, 2], .white)
        XCTAssertEqual(image[3, 15], .white)
        // Different characters draw differently.
        var a = RGBImage(width: 10, height: 12), b = RGBImage(width: 10, height: 12)
        drawText("a", on: &a, x: 0, y: 0, color: .white)
        drawText("b", on: &b, x: 0, y: 0, color: .white)
        XCTAssertNotEqual(a, b)
    }

    func testEveryPrintableCharacterHasAGlyphExceptSpace() {
        for code in 33...126 {
            var image = RGBImage(width: 6, height: 10)
            drawText(String(UnicodeScalar(UInt8(code))), on: &image, x: 0, y: 0, color: .white)
            XCTAssertTrue(image.pixels.contains(255), "no pixels for \(UnicodeScalar(UInt8(code)))")
        }
    }

    func testClassColoursAreDistinctAndDeterministic() {
        let colors = (0..<80).map { classColor($0) }
        XCTAssertEqual(Set(colors).count, 80)
        XCTAssertEqual(classColor(16), classColor(16))
        XCTAssertEqual(classColor(-3), classColor(77))  // any index maps somewhere, no crash
        _ = classColor(Int.max, classCount: Int.max)
        _ = classColor(5, classCount: 0)
    }

    func testWildCoordinatesNeverCrash() {
        var image = RGBImage(width: 50, height: 40, fill: gray)
        let before = image
        let weird: [(Float, Float, Float, Float)] = [
            (-500, -500, -400, -400), (1000, 1000, 2000, 2000), (.nan, 0, 10, 10), (0, .nan, 10, 10),
            (.infinity, 0, 10, 10), (-.infinity, -.infinity, .infinity, .infinity), (60, 0, 70, 10),
            (0, 45, 10, 50), (-1e30, -1e30, 1e30, 1e30), (30, 30, 10, 10), (20, 20, 20, 20),
        ]
        let detections = weird.enumerated().map { i, box -> Detection in
            var d = detection(i, "thing", left: 0, top: 0, right: 1, bottom: 1, imageWidth: 50, imageHeight: 40, boxIndex: i)
            (d.left, d.top, d.right, d.bottom) = box
            return d
        }
        drawDetections(detections, on: &image)
        drawDetections(detections, on: &image, lineWidth: Int.max, textScale: Int.max)
        drawDetections(detections, on: &image, lineWidth: -3, textScale: -1)
        var nanConfidence = detection(1, "x", confidence: .nan, left: 5, top: 5, right: 20, bottom: 20)
        nanConfidence.boxIndex = 99
        drawDetections([nanConfidence], on: &image)
        drawText("far away", on: &image, x: Int.max, y: Int.max, color: .white)
        drawText("far away", on: &image, x: Int.min, y: Int.min, scale: Int.max, color: .white)
        drawText("ünïcödé ✓", on: &image, x: -3, y: -3, color: .white)
        var empty = RGBImage(width: 0, height: 0)
        drawDetections(detections, on: &empty)
        XCTAssertNotEqual(image, before)  // the boxes that touch the image were drawn
    }

    func testBoxEntirelyOutsideDrawsNothing() {
        var image = RGBImage(width: 50, height: 40, fill: gray)
        drawDetections([detection(3, "car", left: 60, top: 10, right: 90, bottom: 30, imageWidth: 50, imageHeight: 40)],
                       on: &image)
        XCTAssertEqual(image, RGBImage(width: 50, height: 40, fill: gray))
    }

    func testBoxPartlyOutsideIsClampedToTheBorder() {
        var image = RGBImage(width: 50, height: 40, fill: gray)
        drawDetections([detection(3, "car", left: -20, top: 10, right: 30, bottom: 60, imageWidth: 50, imageHeight: 40)],
                       on: &image, lineWidth: 1)
        let color = classColor(3)
        XCTAssertEqual(image[0, 25], color)   // left edge clamped to column 0
        XCTAssertEqual(image[15, 39], color)  // bottom edge clamped to the last row
        XCTAssertEqual(image[30, 25], color)  // right edge where it is
    }

    func testSharedBoxGetsOneCombinedLabel() {
        var image = RGBImage(width: 200, height: 160, fill: gray)
        let car = detection(2, "car", confidence: 0.55, left: 40, top: 60, right: 160, bottom: 120, boxIndex: 4)
        let truck = detection(7, "truck", confidence: 0.62, left: 40, top: 60, right: 160, bottom: 120, boxIndex: 4)
        drawDetections([car, truck], on: &image, textScale: 1)
        XCTAssertEqual(image[40, 90], classColor(7))  // the more confident class colours the box
        // One label, as wide as "truck 62%, car 55%" (box edges may round to 39 or 40).
        let width = textSize("truck 62%, car 55%", scale: 1).width + 2
        XCTAssertEqual(image[40 + width - 2, 55], classColor(7))
        XCTAssertEqual(image[40 + width + 1, 55], gray)
    }
}
