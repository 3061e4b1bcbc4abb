import Foundation
#if canImport(Glibc)
import Glibc
#endif
import XCTest
import YOLOImage
import YOLOReference

/// Every bad input gives the right ImageError, naming the file and the problem; none crashes.
final class BadInputTests: XCTestCase {
    func testMissingFile() throws {
        let path = try temporaryDirectory(self).appendingPathComponent("nope.png").path
        assertImageError(try loadImage(path: path), file: path, phrase: "no such file") {
            if case .fileNotFound = $0 { return true } else { return false }
        }
    }

    func testDirectoryIsUnreadable() throws {
        let path = try temporaryDirectory(self).path
        assertImageError(try loadImage(path: path), file: path, phrase: "directory") {
            if case .unreadable = $0 { return true } else { return false }
        }
    }

    func testEmptyFile() throws {
        let path = try temporaryDirectory(self).appendingPathComponent("empty.jpg").path
        _ = FileManager.default.createFile(atPath: path, contents: Data())
        assertImageError(try loadImage(path: path), file: path, phrase: "empty") {
            if case .emptyFile = $0 { return true } else { return false }
        }
    }

    func testTextFileIsNotAnImage() throws {
        let path = try temporaryDirectory(self).appendingPathComponent("notes.png").path
        _ = FileManager.default.createFile(atPath: path, contents: Data("just some text\n".utf8))
        assertImageError(try loadImage(path: path), file: path, phrase: "PNG, JPEG") {
            if case .notAnImage = $0 { return true } else { return false }
        }
    }

    func testKnownButUnsupportedFormat() {
        let gif = Array("GIF89a".utf8) + [1, 0, 1, 0, 0, 0, 0]
        assertImageError(try decodeImage(gif, name: "anim.gif"), file: "anim.gif", phrase: "GIF") {
            if case .unsupported = $0 { return true } else { return false }
        }
    }

    func testTruncatedPNG() throws {
        let bytes = try Fixture.bytes("rgb8.png")
        for length in [4, 20, 40, bytes.count / 2, bytes.count - 20] {
            assertImageError(try decodeImage(Array(bytes[0..<length]), name: "cut.png"), file: "cut.png",
                             phrase: "truncated") {
                if case .truncated(_, "PNG") = $0 { return true } else { return false }
            }
        }
    }

    func testTruncatedInterlacedPNG() throws {
        let bytes = try Fixture.bytes("rgb8_interlaced.png")
        assertImageError(try decodeImage(Array(bytes.prefix(bytes.count * 2 / 3)), name: "cut.png"),
                         file: "cut.png", phrase: "truncated") {
            if case .truncated = $0 { return true } else { return false }
        }
    }

    func testTruncatedJPEGs() throws {
        for name in ["rgb.jpg", "progressive.jpg", "cmyk.jpg"] {
            let bytes = try Fixture.bytes(name)
            for length in [2, 100, bytes.count * 3 / 5, bytes.count - 40] {
                assertImageError(try decodeImage(Array(bytes[0..<length]), name: name), file: name,
                                 phrase: "truncated") {
                    if case .truncated(_, "JPEG") = $0 { return true } else { return false }
                }
            }
        }
    }

    /// A baseline JPEG that lacks only its final EOI marker has every pixel: accepted. In a
    /// progressive JPEG a missing end cannot be told from missing scans: truncated.
    func testJPEGMissingOnlyEndMarker() throws {
        let full = try Fixture.bytes("rgb.jpg")
        XCTAssertEqual(Array(full.suffix(2)), [0xFF, 0xD9])
        XCTAssertEqual(try decodeImage(Array(full.dropLast(2)), name: "a.jpg"), try decodeImage(full, name: "a.jpg"))
        let progressive = try Fixture.bytes("progressive.jpg")
        assertImageError(try decodeImage(Array(progressive.dropLast(2)), name: "p.jpg"), file: "p.jpg",
                         phrase: "truncated") {
            if case .truncated = $0 { return true } else { return false }
        }
    }

    func testTruncatedFileOnDisk() throws {
        let path = try temporaryDirectory(self).appendingPathComponent("half.jpg").path
        let bytes = try Fixture.bytes("rgb.jpg")
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes.prefix(bytes.count / 2)))
        assertImageError(try loadImage(path: path), file: path, phrase: "truncated JPEG") {
            if case .truncated = $0 { return true } else { return false }
        }
    }

    func testCorruptPNGData() throws {
        var bytes = try Fixture.bytes("rgb8.png")
        let idat = try XCTUnwrap(findSubsequence(Array("IDAT".utf8), in: bytes))
        for i in 0..<8 { bytes[idat + 20 + i] ^= 0x5A }  // inside the compressed data
        assertImageError(try decodeImage(bytes, name: "bad.png"), file: "bad.png", phrase: "corrupt PNG data: IDAT") {
            if case .corrupt(_, "PNG", _) = $0 { return true } else { return false }
        }
    }

    func testBadCRCInHeader() throws {
        var bytes = try Fixture.bytes("rgb8.png")
        bytes[29] ^= 0xFF  // last byte of the IHDR chunk's CRC
        assertImageError(try decodeImage(bytes, name: "crc.png"), file: "crc.png", phrase: "CRC") {
            if case .corrupt(_, "PNG", _) = $0 { return true } else { return false }
        }
    }

    func testCorruptPNGDataWithValidCRC() throws {
        // Garbage zlib data with a correct CRC: libpng's inflate error.
        let header: [UInt8] = bigEndian(5) + bigEndian(4) + [8, 2, 0, 0, 0]
        let png = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + pngChunk("IHDR", header)
            + pngChunk("IDAT", [0x78, 0x9C, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x11]) + pngChunk("IEND", [])
        assertImageError(try decodeImage(png, name: "zlib.png"), file: "zlib.png", phrase: "corrupt PNG") {
            if case .corrupt = $0 { return true } else { return false }
        }
    }

    func testCorruptJPEGHeader() throws {
        var bytes = try Fixture.bytes("rgb.jpg")
        let dht = try XCTUnwrap(jpegSegment(bytes, marker: 0xC4))
        for i in 0..<16 { bytes[dht + 5 + i] = 0xFF }  // Huffman code counts far over 256
        assertImageError(try decodeImage(bytes, name: "bad.jpg"), file: "bad.jpg", phrase: "Huffman") {
            if case .corrupt(_, "JPEG", _) = $0 { return true } else { return false }
        }
    }

    func testGarbageAfterJPEGSignature() {
        let bytes: [UInt8] = [0xFF, 0xD8, 0xFF] + Array(repeating: 0x42, count: 300)
        assertImageError(try decodeImage(bytes, name: "junk.jpg"), file: "junk.jpg", phrase: "JPEG") {
            switch $0 {
            case .corrupt, .truncated: return true
            default: return false
            }
        }
    }

    func testEnormousPNGHeaderRefusedBeforeAllocation() {
        let header: [UInt8] = bigEndian(100_000) + bigEndian(100_000) + [8, 2, 0, 0, 0]
        let png = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + pngChunk("IHDR", header)
            + pngChunk("IDAT", [0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]) + pngChunk("IEND", [])
        assertImageError(try decodeImage(png, name: "huge.png"), file: "huge.png", phrase: "too large") {
            if case .tooLarge(_, 100_000, 100_000, _) = $0 { return true } else { return false }
        }
    }

    func testEnormousJPEGHeaderRefusedBeforeAllocation() throws {
        var bytes = try Fixture.bytes("rgb.jpg")
        let sof = try XCTUnwrap(jpegSegment(bytes, marker: 0xC0))
        bytes[sof + 5] = 0xEA; bytes[sof + 6] = 0x60  // height 60000
        bytes[sof + 7] = 0xEA; bytes[sof + 8] = 0x60  // width 60000
        assertImageError(try decodeImage(bytes, name: "huge.jpg"), file: "huge.jpg", phrase: "too large") {
            if case .tooLarge(_, 60_000, 60_000, _) = $0 { return true } else { return false }
        }
    }

    func testPixelLimitIsConfigurable() throws {
        let path = Fixture.path("rgb8.png")  // 13 x 11 = 143 pixels
        XCTAssertNoThrow(try loadImage(path: path, maxPixels: 143))
        assertImageError(try loadImage(path: path, maxPixels: 142), file: path, phrase: "limit is 142") {
            if case .tooLarge(_, 13, 11, 142) = $0 { return true } else { return false }
        }
        let jpeg = Fixture.path("rgb.jpg")
        assertImageError(try loadImage(path: jpeg, maxPixels: 1000), file: jpeg, phrase: "too large") {
            if case .tooLarge(_, 48, 32, 1000) = $0 { return true } else { return false }
        }
    }

    func testZeroWidthPNG() {
        let header: [UInt8] = bigEndian(0) + bigEndian(10) + [8, 2, 0, 0, 0]
        let png = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + pngChunk("IHDR", header) + pngChunk("IEND", [])
        assertImageError(try decodeImage(png, name: "zero.png"), file: "zero.png", phrase: "zero size") {
            if case .zeroSize(_, 0, 10) = $0 { return true } else { return false }
        }
    }

    func testZeroHeightJPEG() throws {
        var bytes = try Fixture.bytes("rgb.jpg")
        let sof = try XCTUnwrap(jpegSegment(bytes, marker: 0xC0))
        bytes[sof + 5] = 0; bytes[sof + 6] = 0  // height 0 (would need a DNL marker)
        assertImageError(try decodeImage(bytes, name: "zero.jpg"), file: "zero.jpg", phrase: "zero size") {
            if case .zeroSize = $0 { return true } else { return false }
        }
    }

    // MARK: Hardening: hostile files

    /// A JPEG whose scan data is cut but which still ends with an EOI marker: libjpeg only warns
    /// ("Corrupt JPEG data: premature end of data segment") and fills the rest with gray. An error.
    func testJPEGScanCutBeforeEndMarkerIsCorrupt() throws {
        for name in ["rgb.jpg", "progressive.jpg", "cmyk.jpg"] {
            let bytes = try Fixture.bytes(name)
            let sos = try XCTUnwrap(findSubsequence([0xFF, 0xDA], in: bytes))
            let scan = sos + 2 + (Int(bytes[sos + 2]) << 8 | Int(bytes[sos + 3]))
            let cut = Array(bytes[0..<(scan + (bytes.count - scan) / 3)]) + [0xFF, 0xD9]
            // (libjpeg may see the cut as corrupt data or, in a progressive file, as missing scans.)
            assertImageError(try decodeImage(cut, name: name), file: name, phrase: "JPEG") {
                switch $0 {
                case .corrupt(_, "JPEG", _), .truncated(_, "JPEG"): return true
                default: return false
                }
            }
            if name == "rgb.jpg" {
                assertImageError(try decodeImage(cut, name: name), file: name,
                                 phrase: "corrupt JPEG data: premature end of data segment") { _ in true }
            }
        }
    }

    /// A stray marker inside the scan data (here RST0 in a file without restart intervals): libjpeg
    /// warns, fills the rest of the scan with gray and carries on. An error.
    func testJPEGStrayMarkerInScanIsAnError() throws {
        for name in ["rgb.jpg", "progressive.jpg"] {
            let bytes = try Fixture.bytes(name)
            let sos = try XCTUnwrap(findSubsequence([0xFF, 0xDA], in: bytes))
            let scan = sos + 2 + (Int(bytes[sos + 2]) << 8 | Int(bytes[sos + 3]))
            let middle = scan + (bytes.count - scan) / 3
            let spliced = Array(bytes[0..<middle]) + [0xFF, 0xD0] + Array(bytes[middle...])
            assertImageError(try decodeImage(spliced, name: name), file: name, phrase: "JPEG") {
                if case .corrupt(_, "JPEG", _) = $0 { return true } else { return false }
            }
        }
    }

    /// A 600-byte JPEG whose header claims 8000 x 8000 (under the pixel cap): a decompression
    /// bomb, refused before the 192 MB of pixels are allocated. Also with no pixel cap at all.
    func testJPEGDecompressionBombRefused() throws {
        var bytes = try Fixture.bytes("rgb.jpg")
        let sof = try XCTUnwrap(jpegSegment(bytes, marker: 0xC0))
        let sos = try XCTUnwrap(findSubsequence([0xFF, 0xDA], in: bytes))
        let scan = sos + 2 + (Int(bytes[sos + 2]) << 8 | Int(bytes[sos + 3]))
        bytes = Array(bytes[0..<scan]) + [0xFF, 0xD9]  // no scan data at all
        bytes[sof + 5] = 0x1F; bytes[sof + 6] = 0x40; bytes[sof + 7] = 0x1F; bytes[sof + 8] = 0x40  // 8000 x 8000
        for limit in [defaultMaxPixels, Int.max] {
            assertImageError(try decodeImage(bytes, name: "bomb.jpg", maxPixels: limit), file: "bomb.jpg",
                             phrase: "decompression bomb") {
                if case .corrupt(_, "JPEG", _) = $0 { return true } else { return false }
            }
        }
        bytes[sof + 5] = 0x3E; bytes[sof + 6] = 0x80; bytes[sof + 7] = 0x3E; bytes[sof + 8] = 0x80  // 16000 x 16000
        assertImageError(try decodeImage(bytes, name: "bomb.jpg"), file: "bomb.jpg", phrase: "too large") {
            if case .tooLarge(_, 16_000, 16_000, defaultMaxPixels) = $0 { return true } else { return false }
        }
    }

    func testPNGDecompressionBombRefused() {
        let header: [UInt8] = bigEndian(10_000) + bigEndian(10_000) + [8, 2, 0, 0, 0]
        let png = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + pngChunk("IHDR", header)
            + pngChunk("IDAT", [0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]) + pngChunk("IEND", [])
        assertImageError(try decodeImage(png, name: "bomb.png", maxPixels: Int.max), file: "bomb.png",
                         phrase: "decompression bomb") {
            if case .corrupt(_, "PNG", _) = $0 { return true } else { return false }
        }
    }

    /// Genuine, highly compressible images are not mistaken for bombs: 3000 x 2000 white, as PNG
    /// (about 1000:1, near deflate's limit) and as JPEG.
    func testCompressibleImagesAreNotBombs() throws {
        let white = RGBImage(width: 3000, height: 2000, pixels: [UInt8](repeating: 255, count: 3000 * 2000 * 3))
        let dir = try temporaryDirectory(self)
        let path = dir.appendingPathComponent("white.png").path
        try writePNG(white, to: path)
        XCTAssertEqual(try loadImage(path: path).width, 3000)
        let jpeg = dir.appendingPathComponent("white.jpg").path
        try writeJPEG(white, to: jpeg)
        XCTAssertEqual(try loadImage(path: jpeg).height, 2000)
    }

    /// A FIFO would block `open` forever: refused at once, without blocking.
    func testFIFOIsRefusedWithoutBlocking() throws {
        let path = try temporaryDirectory(self).appendingPathComponent("pipe.png").path
        XCTAssertEqual(mkfifo(path, 0o600), 0)
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var outcome: Result<RGBImage, Error>?
        Thread.detachNewThread {
            outcome = Result { try loadImage(path: path) }
            done.signal()
        }
        if done.wait(timeout: .now() + 5) == .timedOut {
            XCTFail("loadImage blocked on a FIFO")
            let writer = open(path, O_WRONLY | O_NONBLOCK)  // lets the blocked open return
            if writer >= 0 { close(writer) }
            done.wait()
            return
        }
        assertImageError(try outcome!.get(), file: path, phrase: "FIFO") {
            if case .unreadable = $0 { return true } else { return false }
        }
    }

    /// Devices are refused (/dev/zero would otherwise be read until memory runs out).
    func testDevicesAreRefused() {
        for path in ["/dev/null", "/dev/zero"] {
            assertImageError(try loadImage(path: path), file: path, phrase: "character device") {
                if case .unreadable = $0 { return true } else { return false }
            }
        }
    }

    func testFileSizeCap() throws {
        let path = Fixture.path("rgb8.png")
        let size = try Fixture.bytes("rgb8.png").count
        XCTAssertNoThrow(try loadImage(path: path, maxFileBytes: size))
        assertImageError(try loadImage(path: path, maxFileBytes: size - 1), file: path, phrase: "too large") {
            if case .unreadable = $0 { return true } else { return false }
        }
        XCTAssertEqual(defaultMaxFileBytes, 256 << 20)
    }

    /// Writing replaces the file by renaming a complete temporary file over it: another hard
    /// link to the old file keeps the old bytes, and no temporary file is left behind.
    func testWritesAreAtomic() throws {
        let dir = try temporaryDirectory(self)
        let path = dir.appendingPathComponent("out.png").path, link = dir.appendingPathComponent("link.png").path
        let old = Data("old contents".utf8)
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: old))
        XCTAssertEqual(Glibc.link(path, link), 0)
        try writePNG(Fixture.image(width: 5, height: 4) { x, y in Fixture.rgb8(x, y) }, to: path)
        XCTAssertEqual(try loadImage(path: path).width, 5)
        XCTAssertEqual(FileManager.default.contents(atPath: link), old)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted(), ["link.png", "out.png"])
        // A failed write (the path is a directory) leaves nothing behind.
        let sub = dir.appendingPathComponent("sub.png").path
        try FileManager.default.createDirectory(atPath: sub, withIntermediateDirectories: false)
        XCTAssertThrowsError(try writePNG(Fixture.image(width: 2, height: 2) { _, _ in [1, 2, 3] }, to: sub))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted(),
                       ["link.png", "out.png", "sub.png"])
    }

    func testRandomCorruptionNeverCrashes() throws {
        var generator = SeededRandom(seed: 7)
        for name in ["rgb8.png", "palette8_trns.png", "rgb8_interlaced.png", "rgb.jpg", "progressive.jpg", "cmyk.jpg"] {
            let original = try Fixture.bytes(name)
            for _ in 0..<60 {
                var bytes = original
                for _ in 0..<Int(generator.next() % 4 + 1) {
                    bytes[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next())
                }
                let length = generator.next() % 3 == 0 ? Int(generator.next() % UInt64(bytes.count)) : bytes.count
                do {
                    let image = try decodeImage(Array(bytes[0..<length]), name: name)
                    XCTAssertEqual(image.pixels.count, image.width * image.height * 3)
                } catch is ImageError {
                    // fine: any clear error
                }
            }
        }
    }
}

func findSubsequence(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
    guard haystack.count >= needle.count else { return nil }
    return (0...(haystack.count - needle.count)).first { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
}
