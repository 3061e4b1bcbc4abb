// PNG reading (after our own checks of the header and of the chunk lengths: the fast path of
// PNGFastPath.swift for the common kinds, else libpng through the shim in Sources/CPNG) and
// writing (libpng through the shim).
import CPNG
import YOLOCore

/// Decodes a PNG to 8-bit RGB exactly as stb_image would (see `decodeImage`).
func decodePNG(_ bytes: [UInt8], name: String, maxPixels: Int, fastPath: Bool = true,
               budget: DecodeBudget = DecodeBudget()) throws -> RGBImage {
    try checkPNGChunkLengths(bytes, name: name)
    // Check the IHDR size first: libpng itself rejects a zero width with a generic error.
    if bytes.count >= 24, bytes[12..<16].elementsEqual("IHDR".utf8) {
        let width = Int(bigEndian32(bytes, at: 16)), height = Int(bigEndian32(bytes, at: 20))
        try checkDimensions(width: width, height: height, name: name, maxPixels: maxPixels)
        // Deflate compresses at most about 1032:1, and a pixel takes at least `bits` bits before
        // compression; a header claiming more is a decompression bomb.
        if bytes.count >= 26 {
            let depth = max(Int(bytes[24]), 1)
            let channels = [0: 1, 2: 3, 3: 1, 4: 2, 6: 4][Int(bytes[25])] ?? 1
            try checkPlausibleSize(width: width, height: height, fileBytes: bytes.count,
                                   pixelsPerByte: 1032 * 8 / max(depth * channels, 1) + 1, name: name, format: "PNG")
        }
        if fastPath, let image = decodePNGFast(bytes, width: width, height: height) { return image }
    }
    let reader = UnsafeMutablePointer<yolo_png>.allocate(capacity: 1)
    reader.initialize(to: yolo_png())
    defer {
        yolo_png_close(reader)
        reader.deallocate()
    }
    func check(_ code: Int32) throws {
        switch Int(code) {
        case YOLO_PNG_OK: return
        case YOLO_PNG_TRUNCATED: throw ImageError.truncated(file: name, format: "PNG")
        case YOLO_PNG_TIMED_OUT: throw budget.tooSlow(name: name)
        case YOLO_PNG_UNSUPPORTED:
            throw ImageError.unsupported(file: name, detail: stringFromCArray(reader.pointee.message))
        default:
            throw ImageError.corrupt(file: name, format: "PNG", message: stringFromCArray(reader.pointee.message))
        }
    }
    return try bytes.withUnsafeBufferPointer { data in
        try check(yolo_png_open(reader, data.baseAddress, data.count))
        let width = Int(png_get_image_width(reader.pointee.png, reader.pointee.info))
        let height = Int(png_get_image_height(reader.pointee.png, reader.pointee.info))
        try checkDimensions(width: width, height: height, name: name, maxPixels: maxPixels)
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        try check(pixels.withUnsafeMutableBufferPointer { yolo_png_read_rgb(reader, $0.baseAddress, budget.deadline) })
        return RGBImage(width: width, height: height, pixels: pixels)
    }
}

/// Writes `image` as an 8-bit RGB PNG (not interlaced, no gamma information beyond an sRGB chunk).
public func writePNG(_ image: RGBImage, to path: String) throws {
    try checkWritable(image, path: path)
    guard image.width <= Int(Int32.max) / 3, image.height <= Int(Int32.max) else {
        throw ImageError.writeFailed(file: path, reason: "image too large for PNG")
    }
    try writeFile(try encodePNG(image, path: path), to: path)
}

/// The PNG file bytes for `image`, made by libpng (yolo_png_write_rgb in Sources/CPNG: any size
/// PNG allows, where libpng's simplified API stops at 1,000,000 pixels a side).
func encodePNG(_ image: RGBImage, path: String) throws -> [UInt8] {
    // Room for the uncompressed rows plus zlib and chunk overhead to start with; the buffer
    // grows if the data does not compress.
    let rowBytes = image.width * 3
    let capacity = (rowBytes + 1) * image.height * 101 / 100 + 1024
    if let refusal = checkDataSizeLimit(capacity, for: "encoding \(image.width) x \(image.height) pixels as PNG") {
        throw ImageError.writeFailed(file: path, reason: refusal)
    }
    let writer = UnsafeMutablePointer<yolo_png>.allocate(capacity: 1)
    let output = UnsafeMutablePointer<yolo_png_output>.allocate(capacity: 1)
    writer.initialize(to: yolo_png())
    output.initialize(to: yolo_png_output())
    defer {
        yolo_png_write_close(writer, output)
        writer.deallocate()
        output.deallocate()
    }
    let code = image.pixels.withUnsafeBufferPointer {
        yolo_png_write_rgb(writer, output, capacity, $0.baseAddress, UInt32(image.width), UInt32(image.height))
    }
    guard code == YOLO_PNG_OK, let data = output.pointee.data else {
        throw ImageError.writeFailed(file: path, reason: "libpng: \(stringFromCArray(writer.pointee.message))")
    }
    return Array(UnsafeBufferPointer(start: data, count: output.pointee.size))
}

/// Walks a PNG's chunks after the signature, in file order: `visit(type, offset, length)` for
/// each chunk whose 8-byte header (length, type) is in `bytes`, with the chunk's offset and the
/// data length its header claims. The walk ends when `visit` returns false, at a chunk that
/// claims more bytes than the file has left (its data and CRC), or at the end of the bytes.
func forEachPNGChunk(_ bytes: [UInt8], _ visit: (_ type: ArraySlice<UInt8>, _ offset: Int, _ length: Int) throws -> Bool) rethrows {
    var i = 8
    while i + 8 <= bytes.count {
        let length = Int(bigEndian32(bytes, at: i))
        guard try visit(bytes[(i + 4)..<(i + 8)], i, length), length <= bytes.count - i - 12 else { return }
        i += 12 + length
    }
}

/// Refuses, before libpng sees the file, an ancillary chunk ahead of the image data (tEXt,
/// zTXt, iTXt, iCCP, ...) that claims more bytes than the file has left: libpng would allocate
/// (and clear) a buffer of the claimed size, up to 2 GiB, before finding the data missing.
/// Critical chunks are left to libpng, which checks their lengths and streams IDAT.
func checkPNGChunkLengths(_ bytes: [UInt8], name: String) throws {
    try forEachPNGChunk(bytes) { type, offset, length in
        if type.elementsEqual("IDAT".utf8) || type.elementsEqual("IEND".utf8) { return false }
        let left = bytes.count - offset - 8
        if type.first! & 0x20 != 0, length > left - 4 {
            let chunk = String(decoding: type.map { (0x41...0x7A).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
            throw ImageError.corrupt(file: name, format: "PNG", message: "the \(chunk) chunk at byte \(offset) claims \(length) bytes, but the file has \(max(left, 0)) bytes after its header (a corrupt length, or a truncated file)")
        }
        return true
    }
}

func bigEndian32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
    bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
}
