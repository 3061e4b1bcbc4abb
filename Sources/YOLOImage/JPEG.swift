import CJPEG
import YOLOCore

/// Decodes a JPEG to 8-bit RGB with libjpeg (see `decodeImage`).
func decodeJPEG(_ bytes: [UInt8], name: String, maxPixels: Int, budget: DecodeBudget = DecodeBudget()) throws -> RGBImage {
    let decoder = UnsafeMutablePointer<yolo_jpeg>.allocate(capacity: 1)
    decoder.initialize(to: yolo_jpeg())
    defer {
        yolo_jpeg_close(decoder)
        decoder.deallocate()
    }
    func check(_ code: Int32) throws {
        var message = stringFromCArray(decoder.pointee.message)
        if message.hasPrefix("Corrupt JPEG data: ") { message.removeFirst("Corrupt JPEG data: ".count) }
        let width = Int(decoder.pointee.cinfo.image_width), height = Int(decoder.pointee.cinfo.image_height)
        switch Int(code) {
        case YOLO_JPEG_OK: return
        case YOLO_JPEG_TRUNCATED: throw ImageError.truncated(file: name, format: "JPEG")
        case YOLO_JPEG_EMPTY_IMAGE where width > 0 && height > 0:
            // libjpeg's "empty image" also covers a frame header without components.
            throw ImageError.corrupt(file: name, format: "JPEG", message: "the frame header declares \(decoder.pointee.cinfo.num_components) colour components (\(width) x \(height))")
        case YOLO_JPEG_EMPTY_IMAGE: throw ImageError.zeroSize(file: name, width: width, height: height)
        case YOLO_JPEG_TOO_BIG: throw ImageError.tooLarge(file: name, width: width, height: height, maxPixels: maxPixels)
        case YOLO_JPEG_UNSUPPORTED: throw ImageError.unsupported(file: name, detail: "libjpeg: \(message)")
        case YOLO_JPEG_TOO_MANY_SCANS: throw budget.tooManyScans(name: name)
        case YOLO_JPEG_TIMED_OUT: throw budget.tooSlow(name: name)
        default: throw ImageError.corrupt(file: name, format: "JPEG", message: message)
        }
    }
    return try bytes.withUnsafeBufferPointer { data in
        try check(yolo_jpeg_open(decoder, data.baseAddress, UInt(data.count),
                                  Int32(clamping: budget.maxJPEGScans), budget.deadline))
        let width = Int(decoder.pointee.cinfo.image_width), height = Int(decoder.pointee.cinfo.image_height)
        try checkDimensions(width: width, height: height, name: name, maxPixels: maxPixels)
        // Huffman coding spends at least one bit on each 8x8 block of a component's first scan
        // (two in a baseline scan). Every real encoder gives the full-resolution component at
        // least one block per 64 pixels; allowing even for odd sampling factors, 4096 pixels per
        // byte is far beyond any genuine file. Arithmetic coding can go further: a looser bound.
        let pixelsPerByte = decoder.pointee.cinfo.arith_code != 0 ? 1 << 16 : 1 << 12
        try checkPlausibleSize(width: width, height: height, fileBytes: bytes.count, pixelsPerByte: pixelsPerByte,
                               name: name, format: "JPEG")
        let components = Int(decoder.pointee.components)
        // Room for the decoder's samples and for the RGB they become, converted in place.
        var pixels = [UInt8](repeating: 0, count: width * height * max(components, 3))
        try check(pixels.withUnsafeMutableBufferPointer { yolo_jpeg_read(decoder, $0.baseAddress) })
        if components == 1 {
            replicateGray(&pixels, count: width * height)
        } else if components == 4 {
            convertCMYK(&pixels, count: width * height, inverted: decoder.pointee.inverted_cmyk != 0)
        }
        return RGBImage(width: width, height: height, pixels: pixels)
    }
}

/// Turns `count` gray bytes at the start of `pixels` into `count` RGB pixels (R = G = B).
func replicateGray(_ pixels: inout [UInt8], count: Int) {
    pixels.withUnsafeMutableBufferPointer { p in
        for i in stride(from: count - 1, through: 0, by: -1) {  // backwards: output is larger
            let v = p[i]
            p[3 * i] = v; p[3 * i + 1] = v; p[3 * i + 2] = v
        }
    }
}

/// Turns `count` CMYK pixels into `count` RGB pixels, in place, and drops the spare bytes.
/// Adobe writes CMYK inverted (0 = full ink), so with `inverted` R = C * K / 255 on the stored
/// values; otherwise R = (255 - C) * (255 - K) / 255. The same for G (M) and B (Y).
func convertCMYK(_ pixels: inout [UInt8], count: Int, inverted: Bool) {
    let flip: UInt8 = inverted ? 0 : 255
    pixels.withUnsafeMutableBufferPointer { p in
        for i in 0..<count {
            let k = p[4 * i + 3] ^ flip  // x ^ 255 == 255 - x
            p[3 * i] = scaled(p[4 * i] ^ flip, by: k)
            p[3 * i + 1] = scaled(p[4 * i + 1] ^ flip, by: k)
            p[3 * i + 2] = scaled(p[4 * i + 2] ^ flip, by: k)
        }
    }
    pixels.removeSubrange((count * 3)...)
}

/// a * b / 255, rounded to nearest.
@inline(__always) func scaled(_ a: UInt8, by b: UInt8) -> UInt8 {
    let t = UInt32(a) * UInt32(b) + 128
    return UInt8((t + (t >> 8)) >> 8)
}

/// Writes `image` as a baseline JPEG (YCbCr 4:2:0) with `quality` 1...100.
public func writeJPEG(_ image: RGBImage, to path: String, quality: Int = 90) throws {
    try writeFile(encodeJPEG(image, quality: quality, name: path), to: path)
}

/// `image` as the bytes of a baseline JPEG (YCbCr 4:2:0) with `quality` 1...100, in memory
/// (e.g. a video frame for MJPEG); `name` appears in errors.
public func encodeJPEG(_ image: RGBImage, quality: Int = 90, name: String = "JPEG") throws -> [UInt8] {
    try checkWritable(image, path: name)
    guard image.width <= 65_500, image.height <= 65_500 else {
        throw ImageError.writeFailed(file: name, reason: "JPEG allows at most 65500 x 65500 pixels")
    }
    let encoder = UnsafeMutablePointer<yolo_jpeg>.allocate(capacity: 1)
    encoder.initialize(to: yolo_jpeg())
    defer { encoder.deallocate() }
    var output: UnsafeMutablePointer<UInt8>? = nil
    var size: UInt = 0
    defer { free(output) }
    let code = image.pixels.withUnsafeBufferPointer {
        yolo_jpeg_encode(encoder, $0.baseAddress, UInt32(image.width), UInt32(image.height),
                         Int32(min(max(quality, 1), 100)), &output, &size)
    }
    guard code == YOLO_JPEG_OK, let output else {
        throw ImageError.writeFailed(file: name, reason: "libjpeg: \(stringFromCArray(encoder.pointee.message))")
    }
    if let refusal = checkDataSizeLimit(Int(size), for: "the JPEG of \(image.width) x \(image.height) pixels") {
        throw ImageError.writeFailed(file: name, reason: refusal)
    }
    return Array(UnsafeBufferPointer(start: output, count: Int(size)))
}
