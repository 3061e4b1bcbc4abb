import Foundation
import XCTest
import YOLOImage

final class WriteTests: XCTestCase {
    /// A smooth, non-trivial test image.
    private func gradient(width: Int = 64, height: Int = 40) -> RGBImage {
        Fixture.image(width: width, height: height) { x, y in
            [UInt8(x * 255 / (width - 1)), UInt8(y * 255 / (height - 1)), UInt8((x + y) * 255 / (width + height - 2))]
        }
    }

    func testPNGRoundTripIsExact() throws {
        let dir = try temporaryDirectory(self)
        for image in [gradient(), Fixture.image(width: 13, height: 11, Fixture.rgb8), RGBImage(width: 1, height: 1)] {
            let path = dir.appendingPathComponent("out.png").path
            try writePNG(image, to: path)
            XCTAssertEqual(try loadImage(path: path), image)
        }
    }

    func testJPEGRoundTripIsClose() throws {
        let path = try temporaryDirectory(self).appendingPathComponent("out.jpg").path
        let image = gradient()
        try writeJPEG(image, to: path)
        let back = try loadImage(path: path)
        XCTAssertEqual(back.width, image.width)
        XCTAssertEqual(back.height, image.height)
        XCTAssertLessThan(meanAbsoluteDifference(back, image), 2.5)
    }

    func testJPEGQualityChangesSize() throws {
        let dir = try temporaryDirectory(self)
        let image = Fixture.image(width: 96, height: 64) { x, y in Fixture.rgb8(x, y) }
        let low = dir.appendingPathComponent("low.jpg").path, high = dir.appendingPathComponent("high.jpg").path
        try writeJPEG(image, to: low, quality: 10)
        try writeJPEG(image, to: high, quality: 100)
        let lowSize = try FileManager.default.attributesOfItem(atPath: low)[.size] as! Int
        let highSize = try FileManager.default.attributesOfItem(atPath: high)[.size] as! Int
        XCTAssertLessThan(lowSize, highSize)
        XCTAssertLessThan(meanAbsoluteDifference(try loadImage(path: high), image),
                          meanAbsoluteDifference(try loadImage(path: low), image))
    }

    func testWriteImageChoosesFormatByExtension() throws {
        let dir = try temporaryDirectory(self)
        let image = gradient()
        for (name, format) in [("a.png", ImageFormat.png), ("b.JPG", .jpeg), ("c.jpeg", .jpeg), ("d.PNG", .png)] {
            let path = dir.appendingPathComponent(name).path
            try writeImage(image, to: path)
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            XCTAssertEqual(detectImageFormat(bytes), format, name)
        }
        let bmp = dir.appendingPathComponent("e.bmp").path
        assertImageError(try writeImage(image, to: bmp), file: bmp, phrase: ".png, .jpg or .jpeg") {
            if case .unsupported = $0 { return true } else { return false }
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: bmp))
    }

    func testWriteFailures() throws {
        let missing = try temporaryDirectory(self).appendingPathComponent("no/such/dir/x.png").path
        assertImageError(try writePNG(gradient(), to: missing), file: missing, phrase: "cannot write") {
            if case .writeFailed = $0 { return true } else { return false }
        }
        let jpeg = missing.replacingOccurrences(of: ".png", with: ".jpg")
        assertImageError(try writeJPEG(gradient(), to: jpeg), file: jpeg, phrase: "cannot write") {
            if case .writeFailed = $0 { return true } else { return false }
        }
    }

    func testZeroSizeImageIsNotWritten() throws {
        let path = try temporaryDirectory(self).appendingPathComponent("empty.png").path
        assertImageError(try writePNG(RGBImage(width: 0, height: 5), to: path), file: path, phrase: "zero size") {
            if case .zeroSize = $0 { return true } else { return false }
        }
    }
}
