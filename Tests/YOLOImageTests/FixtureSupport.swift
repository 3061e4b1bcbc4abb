import Foundation
import XCTest
import YOLOImage

/// Paths of the committed fixtures and the pixel formulas they were made from
/// (Fixtures/make_fixtures.py; keep the two in step).
enum Fixture {
    static func path(_ name: String) -> String {
        guard let url = Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures") else {
            fatalError("fixture \(name) missing; run Fixtures/make_fixtures.py")
        }
        return url.path
    }

    static func bytes(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: path(name))))
    }

    static let size = (width: 13, height: 11)
    static let interlacedSize = (width: 19, height: 17)

    static func rgb8(_ x: Int, _ y: Int) -> [UInt8] {
        let r: Int = (x * 37 + y * 11) % 256
        let g: Int = (x * 5 + y * 29 + 60) % 256
        let b: Int = (x * y * 7 + 13) % 256
        return [UInt8(r), UInt8(g), UInt8(b)]
    }
    static func gray8(_ x: Int, _ y: Int) -> Int { (x * 23 + y * 41) % 256 }
    static func v16(_ x: Int, _ y: Int, _ c: Int) -> Int { (x * 4099 + y * 2311 + c * 9973 + 17) % 65536 }
    static func lowBits(_ x: Int, _ y: Int, _ bits: Int) -> Int { (x + 2 * y) % (1 << bits) }
    static func palette(_ n: Int) -> [[UInt8]] {
        (0..<n).map { (k: Int) -> [UInt8] in
            let r: Int = (k * 13 + 1) % 256, g: Int = (k * 71 + 5) % 256, b: Int = (k * 191 + 9) % 256
            return [UInt8(r), UInt8(g), UInt8(b)]
        }
    }
    static func paletteIndex(_ x: Int, _ y: Int, _ n: Int) -> Int { (x + 3 * y) % n }
    static func gray(_ v: Int) -> [UInt8] { [UInt8(v), UInt8(v), UInt8(v)] }

    /// An image made from a per-pixel formula.
    static func image(width: Int, height: Int, _ pixel: (Int, Int) -> [UInt8]) -> RGBImage {
        var pixels: [UInt8] = []
        for y in 0..<height { for x in 0..<width { pixels += pixel(x, y) } }
        return RGBImage(width: width, height: height, pixels: pixels)
    }

    // JPEG quadrants: top-left, top-right, bottom-left, bottom-right of a 48 x 32 image.
    static let quadrantColors: [RGBColor] = [
        RGBColor(red: 220, green: 40, blue: 40), RGBColor(red: 40, green: 200, blue: 60),
        RGBColor(red: 40, green: 60, blue: 220), RGBColor(red: 230, green: 210, blue: 40),
    ]
    static let quadrantGrays: [UInt8] = [30, 90, 160, 230]
    static let cmykQuadrants: [(c: Int, m: Int, y: Int, k: Int)] = [
        (0, 200, 200, 20), (200, 0, 180, 40), (180, 150, 0, 10), (0, 30, 220, 60),
    ]
}

/// The four corner pixels, 2 pixels in from each edge: top-left, top-right, bottom-left, bottom-right.
func corners(_ image: RGBImage, inset: Int = 2) -> [RGBColor] {
    let (r, b) = (image.width - 1 - inset, image.height - 1 - inset)
    return [image[inset, inset], image[r, inset], image[inset, b], image[r, b]]
}

func assertClose(_ a: RGBColor, _ b: RGBColor, tolerance: Int, _ message: String = "",
                 file: StaticString = #filePath, line: UInt = #line) {
    let d = max(abs(Int(a.red) - Int(b.red)), abs(Int(a.green) - Int(b.green)), abs(Int(a.blue) - Int(b.blue)))
    XCTAssertLessThanOrEqual(d, tolerance, "\(a) vs \(b) \(message)", file: file, line: line)
}

func meanAbsoluteDifference(_ a: RGBImage, _ b: RGBImage) -> Double {
    precondition(a.pixels.count == b.pixels.count)
    let total = zip(a.pixels, b.pixels).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
    return Double(total) / Double(max(a.pixels.count, 1))
}

/// Asserts that `body` throws an ImageError matching `matches`, whose description names
/// `file` and contains `phrase`.
func assertImageError<T>(_ body: @autoclosure () throws -> T, file name: String, phrase: String,
                         _ matches: (ImageError) -> Bool,
                         file: StaticString = #filePath, line: UInt = #line) {
    do {
        _ = try body()
        XCTFail("expected an ImageError (\(phrase))", file: file, line: line)
    } catch let error as ImageError {
        XCTAssertTrue(matches(error), "wrong case: \(error)", file: file, line: line)
        XCTAssertEqual(error.file, name, file: file, line: line)
        XCTAssertTrue(error.description.contains(name), "\(error) does not name the file", file: file, line: line)
        XCTAssertTrue(error.description.contains(phrase), "\(error) lacks \"\(phrase)\"", file: file, line: line)
    } catch {
        XCTFail("not an ImageError: \(error)", file: file, line: line)
    }
}

/// A fresh temporary directory, removed when the test ends.
func temporaryDirectory(_ test: XCTestCase) throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("YOLOImageTests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    test.addTeardownBlock { try? FileManager.default.removeItem(at: url) }
    return url
}

/// A PNG chunk with its CRC, for crafting headers in tests.
func pngChunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
    let body = Array(type.utf8) + data
    return bigEndian(UInt32(data.count)) + body + bigEndian(crc32(body))
}

func bigEndian(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

func crc32(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return ~crc
}

/// The offset of the first JPEG marker segment of `marker` (pointing at its 0xFF).
func jpegSegment(_ bytes: [UInt8], marker: UInt8) -> Int? {
    var i = 2
    while i + 4 <= bytes.count, bytes[i] == 0xFF {
        if bytes[i + 1] == marker { return i }
        if bytes[i + 1] == 0xDA { return nil }
        i += 2 + (Int(bytes[i + 2]) << 8 | Int(bytes[i + 3]))
    }
    return nil
}
