import Foundation
import XCTest
@testable import YOLOImage

/// Images that cost far more to decode than their size says: a progressive JPEG with hundreds
/// of scans (each another pass over the image) is refused past the scan limit, and a decode
/// given a time limit stops when it passes it (JPEG, PNG through libpng, PNG's fast path).
final class DecodeCostTests: XCTestCase {
    /// Fixtures/many_scans.jpg (scripts/make-jpeg-scans.py --size 64x64 --passes 10): 64 x 64
    /// gray, 640 scans, each 8x8 block flat at `blockValue`.
    static let manyScans = (scans: 640, size: 64)
    static func blockValue(_ bx: Int, _ by: Int) -> UInt8 { UInt8(16 + (bx * 29 + by * 53) % 224) }

    func testManyScansAreRefusedNamingTheLimit() throws {
        let bytes = try Fixture.bytes("many_scans.jpg")
        XCTAssertLessThan(bytes.count, 10_000)
        XCTAssertThrowsError(try decodeImage(bytes, name: "scans.jpg")) { error in
            guard case .tooCostly(let file, _) = error as? ImageError else { return XCTFail("\(error)") }
            XCTAssertEqual(file, "scans.jpg")
            XCTAssertTrue("\(error)".contains("more than \(defaultMaxJPEGScans) scans"), "\(error)")
        }
        XCTAssertEqual(defaultMaxJPEGScans, 100)
    }

    /// The limit counts exactly: at the file's scan count it decodes (to the right pixels), one
    /// under it is refused; 0 is no limit.
    func testScanLimitIsExact() throws {
        let bytes = try Fixture.bytes("many_scans.jpg")
        let n = Self.manyScans.scans
        XCTAssertThrowsError(try decodeImage(bytes, name: "s.jpg", maxJPEGScans: n - 1)) { error in
            XCTAssertTrue("\(error)".contains("more than \(n - 1) scans"), "\(error)")
        }
        for limit in [n, 0] {
            let image = try decodeImage(bytes, name: "s.jpg", maxJPEGScans: limit)
            XCTAssertEqual(image.width, Self.manyScans.size)
            XCTAssertEqual(image.height, Self.manyScans.size)
            for y in 0..<image.height {
                for x in 0..<image.width {
                    let want = Self.blockValue(x / 8, y / 8), i = (y * image.width + x) * 3
                    XCTAssertEqual(Array(image.pixels[i..<i + 3]), [want, want, want], "(\(x), \(y))")
                    if image.pixels[i] != want { return }
                }
            }
        }
    }

    /// An ordinary progressive JPEG (libjpeg's script: 10 scans) is far under the limit.
    func testOrdinaryProgressiveJPEGFitsTenScans() throws {
        _ = try decodeImage(try Fixture.bytes("progressive.jpg"), name: "p.jpg", maxJPEGScans: 10)
    }

    private func assertTooSlow(_ body: @autoclosure () throws -> RGBImage, _ what: String,
                               file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try body(), what, file: file, line: line) { error in
            guard case .tooCostly = error as? ImageError else { return XCTFail("\(what): \(error)", file: file, line: line) }
            XCTAssertTrue("\(error)".contains("decoding took longer than the time limit"), "\(error)", file: file, line: line)
        }
    }

    /// A time limit that has passed by the first check: every decoder stops with the error; a
    /// generous one (or none) changes nothing.
    func testTimeLimitStopsEveryDecoder() throws {
        let image = Fixture.image(width: 512, height: 384) { x, y in [UInt8(x % 256), UInt8(y % 256), UInt8((x ^ y) % 256)] }
        let jpeg = try encodeJPEG(image)
        let png = try encodePNG(image, path: "t.png")
        let tiny = 1e-9
        assertTooSlow(try decodeImage(jpeg, name: "t.jpg", timeLimit: tiny), "JPEG")
        assertTooSlow(try decodeImage(png, name: "t.png", timeLimit: tiny), "PNG, fast path")
        // The decoders' own checks, not only decodeImage's once decoded: libjpeg's progress
        // monitor, libpng's row callback.
        assertTooSlow(try decodeJPEG(jpeg, name: "t.jpg", maxPixels: 1 << 20, budget: DecodeBudget(timeLimit: tiny)), "libjpeg")
        assertTooSlow(try decodePNG(png, name: "t.png", maxPixels: 1 << 20, fastPath: false,
                                    budget: DecodeBudget(timeLimit: tiny)), "libpng")
        for limit in [nil, 600.0] {
            XCTAssertEqual(try decodeImage(jpeg, name: "t.jpg", timeLimit: limit).width, 512)
            XCTAssertEqual(try decodeImage(png, name: "t.png", timeLimit: limit).pixels, image.pixels)
        }
        XCTAssertTrue(ImageError.tooCostly(file: "a.jpg", reason: "r").description.hasPrefix("a.jpg: refused: r"))
        XCTAssertTrue("\(DecodeBudget(timeLimit: 10).tooSlow(name: "x"))".hasSuffix("time limit of 10 s"))
    }
}
