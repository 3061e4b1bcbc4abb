import XCTest
import YOLOImage

/// EXIF orientation is applied by default (JPEG APP1, PNG eXIf; II and MM byte order) and
/// left alone with applyEXIFOrientation: false, as Darknet does.
final class EXIFTests: XCTestCase {
    /// exifN.png stores the 6 x 4 image rgb8(x, y) transformed so that tag N turns it upright.
    func testAllEightOrientationsInPNG() throws {
        let upright = Fixture.image(width: 6, height: 4, Fixture.rgb8)
        for orientation in 1...8 {
            let name = "exif\(orientation).png"
            let oriented = try loadImage(path: Fixture.path(name))
            XCTAssertEqual(oriented, upright, name)
            let raw = try loadImage(path: Fixture.path(name), applyEXIFOrientation: false)
            XCTAssertEqual(raw.width, orientation >= 5 ? 4 : 6, name)
            XCTAssertEqual(raw.height, orientation >= 5 ? 6 : 4, name)
            if orientation > 1 { XCTAssertNotEqual(raw.pixels, upright.pixels, name) }
            XCTAssertEqual(raw.applyingEXIFOrientation(orientation), upright, name)
        }
    }

    /// The JPEGs hold the 48 x 32 quadrant image (red, green / blue, yellow) rotated.
    func testJPEGOrientations() throws {
        let q = Fixture.quadrantColors  // top-left, top-right, bottom-left, bottom-right upright
        // Corners of the stored (raw) image, in the same order.
        let rawCorners: [String: [RGBColor]] = [
            "exif3.jpg": [q[3], q[2], q[1], q[0]],     // rotated 180
            "exif6.jpg": [q[1], q[3], q[0], q[2]],     // stored turned counter-clockwise
            "exif6_mm.jpg": [q[1], q[3], q[0], q[2]],  // same, big-endian EXIF
            "exif8.jpg": [q[2], q[0], q[3], q[1]],     // stored turned clockwise
        ]
        for (name, expectedRaw) in rawCorners {
            let image = try loadImage(path: Fixture.path(name))
            XCTAssertEqual(image.width, 48, name)
            XCTAssertEqual(image.height, 32, name)
            for (got, want) in zip(corners(image), q) { assertClose(got, want, tolerance: 12, name) }

            let raw = try loadImage(path: Fixture.path(name), applyEXIFOrientation: false)
            let turned = name != "exif3.jpg"
            XCTAssertEqual(raw.width, turned ? 32 : 48, name)
            XCTAssertEqual(raw.height, turned ? 48 : 32, name)
            for (got, want) in zip(corners(raw), expectedRaw) { assertClose(got, want, tolerance: 12, "\(name) raw") }
        }
    }

    func testNoTagMeansNoChange() throws {
        let a = try loadImage(path: Fixture.path("rgb.jpg"))
        let b = try loadImage(path: Fixture.path("rgb.jpg"), applyEXIFOrientation: false)
        XCTAssertEqual(a, b)
    }

    func testOrientationTransformsOnTinyImage() {
        // 2 x 1 image: A B
        let a: [UInt8] = [1, 1, 1], b: [UInt8] = [2, 2, 2]
        let image = RGBImage(width: 2, height: 1, pixels: a + b)
        XCTAssertEqual(image.applyingEXIFOrientation(1).pixels, a + b)
        XCTAssertEqual(image.applyingEXIFOrientation(2).pixels, b + a)
        XCTAssertEqual(image.applyingEXIFOrientation(6).pixels, a + b)  // A over B
        XCTAssertEqual(image.applyingEXIFOrientation(6).width, 1)
        XCTAssertEqual(image.applyingEXIFOrientation(8).pixels, b + a)  // B over A
        XCTAssertEqual(image.applyingEXIFOrientation(9), image)         // out of range: unchanged
        XCTAssertEqual(image.applyingEXIFOrientation(0), image)
    }
}
