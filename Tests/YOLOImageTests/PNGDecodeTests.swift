import XCTest
import YOLOImage

/// Every PNG variety decodes byte-exactly to what stb_image (3 channels) gives Darknet:
/// gray replicated, alpha and tRNS dropped without compositing, 16-bit cut to the high byte,
/// 1/2/4-bit gray scaled, palettes expanded, gAMA/cHRM ignored, interlacing undone.
final class PNGDecodeTests: XCTestCase {
    private func check(_ name: String, interlaced: Bool = false, _ pixel: (Int, Int) -> [UInt8],
                       file: StaticString = #filePath, line: UInt = #line) throws {
        let size = interlaced ? Fixture.interlacedSize : Fixture.size
        let image = try loadImage(path: Fixture.path(name))
        let expected = Fixture.image(width: size.width, height: size.height, pixel)
        XCTAssertEqual(image.width, size.width, name, file: file, line: line)
        XCTAssertEqual(image.height, size.height, name, file: file, line: line)
        XCTAssertEqual(image.pixels, expected.pixels, "\(name) differs from stb_image's result", file: file, line: line)
    }

    func testGray8() throws { try check("gray8.png") { Fixture.gray(Fixture.gray8($0, $1)) } }
    func testGray8WithTransparentKeyIgnored() throws { try check("gray8_trns.png") { Fixture.gray(Fixture.gray8($0, $1)) } }
    func testGray1() throws { try check("gray1.png") { Fixture.gray(Fixture.lowBits($0, $1, 1) * 255) } }
    func testGray2() throws { try check("gray2.png") { Fixture.gray(Fixture.lowBits($0, $1, 2) * 85) } }
    func testGray4() throws { try check("gray4.png") { Fixture.gray(Fixture.lowBits($0, $1, 4) * 17) } }
    func testGray16KeepsHighByte() throws { try check("gray16.png") { Fixture.gray(Fixture.v16($0, $1, 0) >> 8) } }
    func testGrayAlphaDropsAlpha() throws { try check("graya8.png") { Fixture.gray(Fixture.gray8($0, $1)) } }
    func testGrayAlpha16() throws { try check("graya16.png") { Fixture.gray(Fixture.v16($0, $1, 0) >> 8) } }
    func testRGB8() throws { try check("rgb8.png", Fixture.rgb8) }
    func testGammaAndChromaticitiesIgnored() throws { try check("rgb8_gama.png", Fixture.rgb8) }
    func testRGBAlphaDroppedWithoutCompositing() throws { try check("rgba8.png", Fixture.rgb8) }

    func testRGB16KeepsHighByte() throws {
        try check("rgb16.png") { x, y in (0..<3).map { UInt8(Fixture.v16(x, y, $0) >> 8) } }
    }

    func testRGBA16() throws {
        try check("rgba16.png") { x, y in (0..<3).map { UInt8(Fixture.v16(x, y, $0) >> 8) } }
    }

    func testPaletteWithTransparencyDropsAlpha() throws {
        let palette = Fixture.palette(40)
        try check("palette8_trns.png") { palette[Fixture.paletteIndex($0, $1, 40)] }
    }

    func testPalette4Bit() throws {
        let palette = Fixture.palette(11)
        try check("palette4.png") { palette[Fixture.paletteIndex($0, $1, 11)] }
    }

    func testInterlacedRGB() throws { try check("rgb8_interlaced.png", interlaced: true, Fixture.rgb8) }

    func testInterlacedGray2() throws {
        try check("gray2_interlaced.png", interlaced: true) { Fixture.gray(Fixture.lowBits($0, $1, 2) * 85) }
    }

    func testInterlacedPalette2() throws {
        let palette = Fixture.palette(3)
        try check("palette2_interlaced.png", interlaced: true) { palette[Fixture.paletteIndex($0, $1, 3)] }
    }

    func testWiderThanLibpngDefaultLimit() throws {
        let image = try loadImage(path: Fixture.path("wide_gray1.png"))
        XCTAssertEqual(image.width, 1_100_000)
        XCTAssertEqual(image.height, 1)
        XCTAssertEqual(image[1_099_999, 0], .white)
        XCTAssertEqual(image[1_099_998, 0], .black)
    }

    func testDecodeFromBytesMatchesLoad() throws {
        let bytes = try Fixture.bytes("rgb8_interlaced.png")
        XCTAssertEqual(detectImageFormat(bytes), .png)
        XCTAssertEqual(try decodeImage(bytes, name: "x.png"), try loadImage(path: Fixture.path("rgb8_interlaced.png")))
    }
}
