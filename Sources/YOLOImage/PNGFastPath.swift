// The fast path of PNG decoding: the kinds of PNG photos are saved as (8-bit gray, gray + alpha,
// RGB or RGBA, not interlaced) are inflated by libdeflate in one call and unfiltered by the CPNG
// module's fastpath.h (an SSE2 Paeth filter on x86: Debian's libpng runs a scalar one, which is
// most of a photo's decoding time). The pixels are the ones libpng gives (tests compare both
// paths on every kind); anything else, or anything wrong with the file, goes to libpng.
import CPNG
import YOLOCore

/// The largest image the fast path decodes (16 megapixels: at most 64 MiB of inflated rows).
let pngFastPathMaxPixels = 1 << 24

/// `bytes` (a PNG whose signature, chunk lengths and dimensions `decodePNG` checked) decoded to
/// RGB as libpng does (gray replicated, alpha dropped), when it is a kind this path reads and
/// everything in it checks out: the header's and each IDAT chunk's CRC, one zlib stream that
/// ends exactly where the image does, known filter types. Nil otherwise (palette, 16-bit or
/// sub-byte samples, interlacing, a critical chunk other than IDAT before the data, any error):
/// libpng then decodes the file or says what is wrong with it.
/// Images over `maxPixels` go to libpng too: this path holds the whole inflated image besides
/// the RGB result (up to 4 + 3 bytes a pixel), libpng one row.
func decodePNGFast(_ bytes: [UInt8], width: Int, height: Int, maxPixels: Int = pngFastPathMaxPixels) -> RGBImage? {
    guard bytes.count >= 33 + 12, width > 0, height > 0, width <= maxPixels / height,
          bigEndian32(bytes, at: 8) == 13, bytes[12..<16].elementsEqual("IHDR".utf8),
          bytes[24] == 8, bytes[26] == 0, bytes[27] == 0, bytes[28] == 0 else { return nil }
    let channels: Int
    switch bytes[25] {
    case 0: channels = 1
    case 2: channels = 3
    case 4: channels = 2
    case 6: channels = 4
    default: return nil
    }
    // The image data: the IDAT chunks, one after the other, after ancillary chunks only.
    var offsets: [Int] = [], usable = true
    forEachPNGChunk(bytes) { type, offset, length in
        if offset == 8 { return true }  // IHDR, checked above
        // libpng refuses a chunk whose type is not four letters: so does this path.
        guard type.allSatisfy({ (0x41...0x5A).contains($0 & 0xDF) }) else { usable = false; return false }
        let isData = type.elementsEqual("IDAT".utf8)
        if !offsets.isEmpty && !isData { return false }
        guard length <= bytes.count - offset - 12, isData || type.first! & 0x20 != 0 else { usable = false; return false }
        if isData { offsets.append(offset) }
        return true
    }
    guard usable, !offsets.isEmpty else { return nil }
    let rowBytes = width * channels
    let (rawCount, overflow) = (rowBytes + 1).multipliedReportingOverflow(by: height)
    // Where the data-size limit (`ulimit -d`) cannot hold the inflated rows besides the image,
    // libpng decodes row by row.
    guard !overflow, checkDataSizeLimit(rawCount + 3 * width * height, for: "") == nil else { return nil }
    // The filtered rows, with padding for the Paeth filter's 4-byte reads.
    let raw = UnsafeMutablePointer<UInt8>.allocate(capacity: rawCount + 8)
    defer { raw.deallocate() }
    (raw + rawCount).initialize(repeating: 0, count: 8)
    var decoded = false
    let pixels = bytes.withUnsafeBufferPointer { file in
        [UInt8](unsafeUninitializedCapacity: width * height * 3) { out, count in
            guard let base = file.baseAddress, let outBase = out.baseAddress, yolo_png_crc_ok(base + 8) != 0,
                  yolo_png_inflate_chunks(base, offsets, Int32(offsets.count), raw, rawCount) == 0,
                  yolo_png_unfilter_rgb(raw, UInt32(width), UInt32(height), Int32(channels), outBase) == 0 else {
                count = 0
                return
            }
            count = width * height * 3
            decoded = true
        }
    }
    return decoded ? RGBImage(width: width, height: height, pixels: pixels) : nil
}
