import Foundation
import XCTest
@testable import YOLOImage

/// The PNG fast path (PNGFastPath.swift + CPNG/fastpath.h) gives libpng's pixels for the kinds it
/// reads, declines the others, and falls back to libpng (and so to libpng's errors) whenever
/// anything in a file is wrong.
final class PNGFastPathTests: XCTestCase {
    // MARK: A PNG writer for the tests: chosen filters per row, zlib stored blocks.

    static let crcTable: [UInt32] = (0..<256).map { n in
        (0..<8).reduce(UInt32(n)) { c, _ in c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
    }
    static func crc(_ bytes: some Sequence<UInt8>) -> UInt32 {
        ~bytes.reduce(~UInt32(0)) { c, b in crcTable[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
    }
    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        return be32(UInt32(data.count)) + body + be32(crc(body))
    }
    /// A zlib stream of stored (uncompressed) blocks.
    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var i = 0
        repeat {
            let n = min(65535, data.count - i)
            out += [i + n == data.count ? 1 : 0, UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8((~n >> 8) & 0xFF)]
            out += data[i..<(i + n)]
            i += n
        } while i < data.count
        var (a, b) = (UInt32(1), UInt32(0))
        for v in data { a = (a + UInt32(v)) % 65521; b = (b + a) % 65521 }
        return out + be32(b << 16 | a)
    }
    static func paeth(_ a: Int, _ b: Int, _ c: Int) -> Int {
        let p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c)
        return pa <= pb && pa <= pc ? a : (pb <= pc ? b : c)
    }
    /// Filters `samples` (height rows of width * channels bytes) with `filters[y % count]` per row.
    static func filtered(_ samples: [UInt8], width: Int, height: Int, channels: Int, filters: [UInt8]) -> [UInt8] {
        let rowBytes = width * channels
        var out: [UInt8] = []
        for y in 0..<height {
            let f = filters[y % filters.count]
            out.append(f)
            for i in 0..<rowBytes {
                let x = Int(samples[y * rowBytes + i])
                let a = i >= channels ? Int(samples[y * rowBytes + i - channels]) : 0
                let b = y > 0 ? Int(samples[(y - 1) * rowBytes + i]) : 0
                let c = y > 0 && i >= channels ? Int(samples[(y - 1) * rowBytes + i - channels]) : 0
                let pred = [0, a, b, (a + b) / 2, paeth(a, b, c)][Int(f)]
                out.append(UInt8((x - pred) & 0xFF))
            }
        }
        return out
    }
    static func png(width: Int, height: Int, colorType: UInt8, idat: [[UInt8]], before: [[UInt8]] = [],
                    between: [UInt8] = [], end: Bool = true) -> [UInt8] {
        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        out += chunk("IHDR", be32(UInt32(width)) + be32(UInt32(height)) + [8, colorType, 0, 0, 0])
        for c in before { out += c }
        for (k, part) in idat.enumerated() { out += chunk("IDAT", part); if k == 0 { out += between } }
        return end ? out + chunk("IEND", []) : out
    }
    static func random(_ count: Int, seed: inout UInt64) -> [UInt8] {
        (0..<count).map { _ in
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: seed >> 56)
        }
    }
    static let channelsOf: [UInt8: Int] = [0: 1, 4: 2, 2: 3, 6: 4]

    /// The pixels as libpng gives them (gray replicated, alpha dropped).
    static func rgb(_ samples: [UInt8], channels: Int) -> [UInt8] {
        stride(from: 0, to: samples.count, by: channels).flatMap { i -> [UInt8] in
            channels >= 3 ? Array(samples[i..<(i + 3)]) : [samples[i], samples[i], samples[i]]
        }
    }

    /// Equal bytes, or a failure naming the first difference (not two arrays of thousands).
    static func assertSame(_ a: [UInt8], _ b: [UInt8], _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        guard a != b else { return }
        let i = (0..<min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
        XCTFail("\(what): \(a.count) and \(b.count) bytes, first difference at byte \(i)", file: file, line: line)
    }

    // MARK: Tests

    func testEveryFilterAndKindGivesLibpngsPixels() throws {
        var seed: UInt64 = 7
        let filterSets: [[UInt8]] = [[0], [1], [2], [3], [4], [4, 3, 2, 1, 0], [2, 4, 4, 1, 3, 0, 4]]
        for (colorType, channels) in Self.channelsOf.sorted(by: { $0.key < $1.key }) {
            for (width, height) in [(1, 1), (1, 9), (9, 1), (2, 2), (33, 17), (64, 5)] {
                for filters in filterSets {
                    let samples = Self.random(width * height * channels, seed: &seed)
                    let raw = Self.filtered(samples, width: width, height: height, channels: channels, filters: filters)
                    let file = Self.png(width: width, height: height, colorType: colorType, idat: [Self.zlibStored(raw)])
                    let what = "color type \(colorType), \(width)x\(height), filters \(filters)"
                    let fast = try XCTUnwrap(decodePNGFast(file, width: width, height: height), what)
                    let slow = try decodePNG(file, name: "t.png", maxPixels: 1 << 26, fastPath: false)
                    Self.assertSame(fast.pixels, slow.pixels, what + ", against libpng")
                    Self.assertSame(fast.pixels, Self.rgb(samples, channels: channels), what + ", against the pixels written")
                }
            }
        }
    }

    func testCompressedFilesFromLibpngAndTheFixtures() throws {
        // libpng's writer picks its filters per row and compresses: random pixels and smooth ones.
        var seed: UInt64 = 11
        for (width, height) in [(97, 61), (640, 3)] {
            var image = RGBImage(width: width, height: height, pixels: Self.random(width * height * 3, seed: &seed))
            for k in 0..<2 {
                if k == 1 { image.pixels = image.pixels.indices.map { UInt8(($0 / 3 % width + $0 / (3 * width)) & 0xFF) } }
                let file = try encodePNG(image, path: "t.png")
                Self.assertSame(try XCTUnwrap(decodePNGFast(file, width: width, height: height)).pixels, image.pixels, "libpng's file \(width)x\(height)")
            }
        }
        // The committed fixtures: the fast path reads the 8-bit, not interlaced ones and declines
        // the rest; either way decodePNG gives what libpng gives.
        let fixtures = try FileManager.default.contentsOfDirectory(atPath: (Fixture.path("gray8.png") as NSString).deletingLastPathComponent)
            .filter { $0.hasSuffix(".png") }.sorted()
        XCTAssertGreaterThanOrEqual(fixtures.count, 10)
        var read = 0
        for name in fixtures {
            let file = try Fixture.bytes(name)
            let (width, height) = (Int(bigEndian32(file, at: 16)), Int(bigEndian32(file, at: 20)))
            let expectFast = file[24] == 8 && [0, 2, 4, 6].contains(file[25]) && file[28] == 0
            let fast = decodePNGFast(file, width: width, height: height)
            XCTAssertEqual(fast != nil, expectFast, name)
            let slow = try decodePNG(file, name: name, maxPixels: 1 << 26, fastPath: false)
            Self.assertSame(try decodePNG(file, name: name, maxPixels: 1 << 26).pixels, slow.pixels, name)
            if fast != nil { read += 1 }
        }
        XCTAssertGreaterThanOrEqual(read, 4, "fixtures read by the fast path")
    }

    func testAnythingWrongFallsBackToLibpngAndItsError() throws {
        var seed: UInt64 = 3
        let (width, height) = (20, 6)
        let samples = Self.random(width * height * 3, seed: &seed)
        let raw = Self.filtered(samples, width: width, height: height, channels: 3, filters: [4, 1])
        let stream = Self.zlibStored(raw)
        let good = Self.png(width: width, height: height, colorType: 2, idat: [stream])
        XCTAssertNotNil(decodePNGFast(good, width: width, height: height))
        // Over the fast path's size cap (16 megapixels by default), libpng decodes it, row by row.
        XCTAssertNil(decodePNGFast(good, width: width, height: height, maxPixels: width * height - 1))
        XCTAssertNotNil(decodePNGFast(good, width: width, height: height, maxPixels: width * height))
        // Split over several IDAT chunks (valid), with ancillary chunks before them, no IEND.
        let split = Self.png(width: width, height: height, colorType: 2, idat: [Array(stream[..<100]), [], Array(stream[100...])],
                             before: [Self.chunk("tEXt", Array("a\0b".utf8)), Self.chunk("gAMA", Self.be32(45455))], end: false)
        Self.assertSame(try XCTUnwrap(decodePNGFast(split, width: width, height: height)).pixels, Self.rgb(samples, channels: 3), "split")

        var badCRC = good
        badCRC[badCRC.count - 12 - 1] ^= 1  // the IDAT chunk's CRC (before the 12-byte IEND)
        var badHeaderCRC = good
        badHeaderCRC[29] ^= 1
        var badFilter = raw
        badFilter[0] = 5
        let cases: [(String, [UInt8])] = [
            ("bad IDAT CRC", badCRC),
            ("bad IHDR CRC", badHeaderCRC),
            ("truncated", Array(good[..<(good.count - 40)])),
            ("bad filter type", Self.png(width: width, height: height, colorType: 2, idat: [Self.zlibStored(badFilter)])),
            ("too little data", Self.png(width: width, height: height, colorType: 2, idat: [Self.zlibStored(Array(raw.dropLast()))])),
            ("too much data", Self.png(width: width, height: height, colorType: 2, idat: [Self.zlibStored(raw + [0])])),
            ("not zlib", Self.png(width: width, height: height, colorType: 2, idat: [[0x12, 0x34] + Array(stream.dropFirst(2))])),
            ("a chunk between IDATs", Self.png(width: width, height: height, colorType: 2,
                                               idat: [Array(stream[..<50]), Array(stream[50...])], between: Self.chunk("tEXt", [65]))),
            ("a palette", Self.png(width: width, height: height, colorType: 2, idat: [stream], before: [Self.chunk("PLTE", [1, 2, 3])])),
            ("a chunk type that is not letters", Self.png(width: width, height: height, colorType: 2, idat: [stream],
                                                          before: [Self.chunk("a1bc", [])])),
        ]
        for (what, file) in cases {
            XCTAssertNil(decodePNGFast(file, width: width, height: height), what)
            // decodePNG gives exactly what libpng alone gives: the same error, or the same pixels.
            let withFast = Result { try decodePNG(file, name: "t.png", maxPixels: 1 << 26) }
            let libpngOnly = Result { try decodePNG(file, name: "t.png", maxPixels: 1 << 26, fastPath: false) }
            switch (withFast, libpngOnly) {
            case let (.success(a), .success(b)): Self.assertSame(a.pixels, b.pixels, what)
            case let (.failure(a), .failure(b)): XCTAssertEqual("\(a)", "\(b)", what)
            default: XCTFail("\(what): \(withFast) against libpng's \(libpngOnly)")
            }
        }
    }
}
