import XCTest
import YOLOImage

/// JPEG through libjpeg: flat quadrant images, compared with a tolerance (lossy format).
final class JPEGDecodeTests: XCTestCase {
    /// The ideal 48 x 32 image with the four quadrant colours.
    private func quadrants(_ colors: [RGBColor]) -> RGBImage {
        Fixture.image(width: 48, height: 32) { x, y in
            let c = colors[(y >= 16 ? 2 : 0) + (x >= 24 ? 1 : 0)]
            return [c.red, c.green, c.blue]
        }
    }

    private func check(_ name: String, _ colors: [RGBColor], file: StaticString = #filePath, line: UInt = #line) throws {
        let image = try loadImage(path: Fixture.path(name))
        XCTAssertEqual(image.width, 48, file: file, line: line)
        XCTAssertEqual(image.height, 32, file: file, line: line)
        for (got, want) in zip(corners(image), colors) {
            assertClose(got, want, tolerance: 12, name, file: file, line: line)
        }
        XCTAssertLessThan(meanAbsoluteDifference(image, quadrants(colors)), 6, name, file: file, line: line)
    }

    func testBaselineRGB() throws { try check("rgb.jpg", Fixture.quadrantColors) }
    func testProgressive() throws { try check("progressive.jpg", Fixture.quadrantColors) }

    func testGrayIsReplicated() throws {
        try check("gray.jpg", Fixture.quadrantGrays.map { RGBColor(red: $0, green: $0, blue: $0) })
        let image = try loadImage(path: Fixture.path("gray.jpg"))
        for i in stride(from: 0, to: image.pixels.count, by: 3) {
            XCTAssertEqual(image.pixels[i], image.pixels[i + 1])
            XCTAssertEqual(image.pixels[i], image.pixels[i + 2])
        }
    }

    /// Adobe CMYK (stored inverted): R = (255 - C) * (255 - K) / 255 in ink terms.
    func testAdobeCMYK() throws {
        func channel(_ ink: Int, _ k: Int) -> UInt8 { UInt8(((255 - ink) * (255 - k) + 127) / 255) }
        let colors = Fixture.cmykQuadrants.map {
            RGBColor(red: channel($0.c, $0.k), green: channel($0.m, $0.k), blue: channel($0.y, $0.k))
        }
        try check("cmyk.jpg", colors)
    }

    func testProgressiveMatchesBaselineClosely() throws {
        let baseline = try loadImage(path: Fixture.path("rgb.jpg"))
        let progressive = try loadImage(path: Fixture.path("progressive.jpg"))
        XCTAssertLessThan(meanAbsoluteDifference(baseline, progressive), 2)
    }
}
