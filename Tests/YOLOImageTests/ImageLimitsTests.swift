import Foundation
import XCTest
import YOLOImage

/// Legal images at the edges of what the libraries accept by default, and what a JPEG without
/// colour components is called.
final class ImageLimitsTests: XCTestCase {
    /// PNG allows 2^31 - 1 pixels a side; libpng's default write limit is 1,000,000 a side.
    /// Over it (one row, one column, and 16777216 x 1) the PNG is written and reads back.
    func testPNGsWiderOrTallerThanAMillionPixelsAreWritten() throws {
        let dir = try temporaryDirectory(self)
        for (width, height) in [(1_000_001, 1), (1, 1_000_001), (16_777_216, 1)] {
            var pixels = [UInt8](repeating: 0, count: width * height * 3)
            for i in stride(from: 0, to: pixels.count, by: 7919) { pixels[i] = UInt8(truncatingIfNeeded: i) }
            let image = RGBImage(width: width, height: height, pixels: pixels)
            let path = dir.appendingPathComponent("\(width)x\(height).png").path
            try writePNG(image, to: path)
            XCTAssertEqual(try loadImage(path: path), image, "\(width) x \(height)")
        }
    }

    /// A frame header with 0 components (libjpeg's JERR_EMPTY_IMAGE, as for 0 x 0): the message
    /// says so, not "zero size" with a size that is not zero.
    func testAJPEGWithZeroComponentsSaysSo() throws {
        let path = try temporaryDirectory(self).appendingPathComponent("c.jpg").path
        try writeJPEG(RGBImage(width: 160, height: 107), to: path)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let sof = try XCTUnwrap((0..<bytes.count - 10).first { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xC0 })
        bytes[sof + 9] = 0  // FF C0, length (2), precision, height (2), width (2), components
        XCTAssertThrowsError(try decodeImage(bytes, name: "c.jpg")) { e in
            XCTAssertEqual("\(e)", "c.jpg: corrupt JPEG data: the frame header declares 0 colour components (160 x 107)")
        }
    }
}
