import Foundation
import XCTest
import YOLOImage

/// PNG chunk lengths are checked against the file before libpng allocates anything for a chunk,
/// and the ancillary chunks we do not use are skipped, not copied (issue #16, case 1). The
/// memory side is measured in a subprocess: yoloTests' testCraftedPNGChunkLengthsTakeNoMemory.
final class PNGChunkTests: XCTestCase {
    /// The 137-byte files of the issue: a 4x4 PNG whose first chunk after IHDR is a text chunk
    /// claiming 2^31 - 1 bytes, of which 96 follow.
    static func hugeTextChunkPNG(_ type: String) -> [UInt8] {
        let header: [UInt8] = bigEndian(4) + bigEndian(4) + [8, 2, 0, 0, 0]
        // In parts: Swift 6.0's type checker gives up on the whole sum ("unable to type-check
        // this expression in reasonable time").
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        let text: [UInt8] = bigEndian(0x7FFF_FFFF) + Array(type.utf8) + Array("Comment\0".utf8)
        return signature + pngChunk("IHDR", header) + text + [UInt8](repeating: 0x78, count: 88)
    }

    func testTextChunkClaimingTwoGigabytesIsRefusedNamingIt() {
        for type in ["tEXt", "iTXt", "zTXt"] {
            let png = Self.hugeTextChunkPNG(type)
            XCTAssertEqual(png.count, 137)
            assertImageError(try decodeImage(png, name: "crafted.png"), file: "crafted.png",
                             phrase: "the \(type) chunk at byte 33 claims 2147483647 bytes, but the file has 96 bytes after its header") {
                if case .corrupt(_, "PNG", _) = $0 { return true } else { return false }
            }
        }
    }

    /// Any ancillary chunk ahead of the image data that runs past the end, by one byte or many.
    func testAncillaryChunkRunningPastTheEnd() throws {
        let original = try Fixture.bytes("rgb8_gama.png")  // IHDR, gAMA at 33, cHRM at 49, IDAT, IEND
        for (offset, type) in [(33, "gAMA"), (49, "cHRM")] {
            var bytes = original
            let rest = UInt32(bytes.count - offset - 12)
            bytes.replaceSubrange(offset..<(offset + 4), with: bigEndian(rest + 1))
            assertImageError(try decodeImage(bytes, name: "long.png"), file: "long.png", phrase: "the \(type) chunk at byte \(offset) claims \(rest + 1) bytes") {
                if case .corrupt(_, "PNG", _) = $0 { return true } else { return false }
            }
        }
        // A file cut inside its image data is still "truncated" (libpng's verdict, as before).
        assertImageError(try decodeImage(Array(original.prefix(200)), name: "cut.png"), file: "cut.png", phrase: "truncated") {
            if case .truncated = $0 { return true } else { return false }
        }
    }

    /// Text, compressed text, international text, an ICC profile and a private chunk before the
    /// image data, and text after it: skipped, the pixels as without them.
    func testImagesWithSkippedChunksDecodeAsWithout() throws {
        let original = try Fixture.bytes("rgb8.png")  // IHDR (8..<33), IDAT, IEND
        let extra = pngChunk("tEXt", Array("Comment\0hello".utf8))
            + pngChunk("zTXt", Array("Comment\0\0".utf8) + [0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01])
            + pngChunk("iTXt", Array("XML:com.adobe.xmp\0\0\0\0\0<x/>".utf8))
            + pngChunk("iCCP", Array("icc\0\0".utf8) + [0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01])
            + pngChunk("prVt", [UInt8](repeating: 7, count: 5000))
        let withChunks = Array(original[0..<33]) + extra + Array(original[33...].dropLast(12))
            + pngChunk("tEXt", Array("After\0data".utf8)) + Array(original.suffix(12))
        XCTAssertEqual(try decodeImage(withChunks, name: "text.png"), try decodeImage(original, name: "rgb8.png"))
    }
}
