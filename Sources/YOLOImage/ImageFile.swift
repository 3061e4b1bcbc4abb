#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The image formats this module reads and writes.
public enum ImageFormat: String, Sendable {
    /// PNG, read with libpng; signature 89 50 4E 47 0D 0A 1A 0A.
    case png = "PNG"
    /// JPEG (JFIF, Exif, Adobe), read with libjpeg; signature FF D8 FF.
    case jpeg = "JPEG"
}

/// The default limit on the pixels an image may have: 16384 x 16384 = 2^28 (768 MiB as RGB).
public let defaultMaxPixels = 1 << 28

/// Reads an image file the way Darknet's loader (stb_image, 3 channels) sees it, as 8-bit RGB.
/// The format comes from the file's first bytes, not its name. See `decodeImage` for details.
/// - Parameters:
///   - applyEXIFOrientation: turn the image upright per its EXIF orientation tag (JPEG APP1,
///     PNG eXIf). Darknet ignores the tag; pass false to get the stored pixels as it does.
///   - maxPixels: images whose header claims more pixels are refused with
///     `ImageError.tooLarge` before any pixel memory is allocated.
public func loadImage(path: String, applyEXIFOrientation: Bool = true,
                      maxPixels: Int = defaultMaxPixels) throws -> RGBImage {
    let bytes = try readFile(path)
    return try decodeImage(bytes, name: path, applyEXIFOrientation: applyEXIFOrientation,
                           maxPixels: maxPixels)
}

/// Decodes PNG or JPEG bytes (detected by signature) to 8-bit RGB; `name` appears in errors.
///
/// PNG decodes byte-exactly as stb_image does with 3 channels: gray is replicated into R = G = B,
/// alpha and tRNS are dropped without compositing, palettes are expanded, 16-bit samples keep
/// their high byte, 1/2/4-bit gray is scaled to 0...255; gAMA, sRGB and iCCP are ignored.
/// Interlaced images are supported. JPEG goes through libjpeg (gray, YCbCr, RGB, CMYK/YCCK,
/// baseline or progressive); CMYK becomes R = C * K / 255 on Adobe's inverted samples.
/// A file that ends before the image does is an error (`ImageError.truncated`), not a gray fill.
public func decodeImage(_ bytes: [UInt8], name: String, applyEXIFOrientation: Bool = true,
                        maxPixels: Int = defaultMaxPixels) throws -> RGBImage {
    guard !bytes.isEmpty else { throw ImageError.emptyFile(file: name) }
    let image: RGBImage
    let orientation: Int?
    switch detectImageFormat(bytes) {
    case .png:
        image = try decodePNG(bytes, name: name, maxPixels: maxPixels)
        orientation = applyEXIFOrientation ? pngEXIFOrientation(bytes) : nil
    case .jpeg:
        image = try decodeJPEG(bytes, name: name, maxPixels: maxPixels)
        orientation = applyEXIFOrientation ? jpegEXIFOrientation(bytes) : nil
    case nil:
        if let format = truncatedSignature(bytes) { throw ImageError.truncated(file: name, format: format) }
        if let other = unsupportedFormatName(bytes) {
            throw ImageError.unsupported(file: name, detail: "\(other) images are not read (supported: \(supportedFormats))")
        }
        throw ImageError.notAnImage(file: name)
    }
    guard let orientation else { return image }
    return image.applyingEXIFOrientation(orientation)
}

let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
let jpegSignature: [UInt8] = [0xFF, 0xD8, 0xFF]

/// The format whose signature `bytes` start with, if it is one this module reads.
public func detectImageFormat(_ bytes: [UInt8]) -> ImageFormat? {
    if bytes.starts(with: pngSignature) { return .png }
    if bytes.starts(with: jpegSignature) { return .jpeg }
    return nil
}

/// "PNG" or "JPEG" when `bytes` are too short to hold the whole signature but begin it.
func truncatedSignature(_ bytes: [UInt8]) -> String? {
    if bytes.count >= 4, bytes.count < pngSignature.count, pngSignature.starts(with: bytes) { return "PNG" }
    if bytes.count == 2, jpegSignature.starts(with: bytes) { return "JPEG" }
    return nil
}

/// Names a few common formats that are recognised but not read, for a better message.
func unsupportedFormatName(_ bytes: [UInt8]) -> String? {
    func starts(_ text: String, at offset: Int = 0) -> Bool {
        let tag = Array(text.utf8)
        return bytes.count >= offset + tag.count && Array(bytes[offset..<offset + tag.count]) == tag
    }
    if starts("GIF87a") || starts("GIF89a") { return "GIF" }
    if starts("RIFF") && starts("WEBP", at: 8) { return "WebP" }
    if starts("II*\0") || starts("MM\0*") { return "TIFF" }
    if starts("BM"), bytes.count >= 18, [12, 40, 52, 56, 64, 108, 124].contains(Int(bytes[14])),
       bytes[15] == 0, bytes[16] == 0, bytes[17] == 0 { return "BMP" }
    return nil
}

/// Throws `zeroSize` or `tooLarge` unless 0 < width * height <= maxPixels.
func checkDimensions(width: Int, height: Int, name: String, maxPixels: Int) throws {
    guard width > 0, height > 0 else { throw ImageError.zeroSize(file: name, width: width, height: height) }
    let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
    guard !overflow, pixels <= maxPixels, pixels <= Int.max / 4 else {
        throw ImageError.tooLarge(file: name, width: width, height: height, maxPixels: maxPixels)
    }
}

/// The characters of a NUL-terminated C string stored in a fixed-size C array (a tuple).
func stringFromCArray<T>(_ array: T) -> String {
    withUnsafeBytes(of: array) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
}

func errnoDescription() -> String { String(cString: strerror(errno)) }

/// The whole file as bytes, with errors that say which problem it was.
func readFile(_ path: String) throws -> [UInt8] {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else {
        if errno == ENOENT { throw ImageError.fileNotFound(file: path) }
        throw ImageError.unreadable(file: path, reason: errnoDescription())
    }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else { throw ImageError.unreadable(file: path, reason: errnoDescription()) }
    if info.st_mode & S_IFMT == S_IFDIR { throw ImageError.unreadable(file: path, reason: "it is a directory") }
    // Sized so that one read normally gets the whole file; grows for pipes and growing files.
    var bytes = [UInt8](repeating: 0, count: max(Int(info.st_size), 0) + 1)
    var filled = 0
    while true {
        if filled == bytes.count { bytes += repeatElement(0, count: max(bytes.count, 1 << 16)) }
        let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
        if count < 0 {
            if errno == EINTR { continue }
            throw ImageError.unreadable(file: path, reason: errnoDescription())
        }
        if count == 0 { break }
        filled += count
    }
    bytes.removeSubrange(filled...)
    guard !bytes.isEmpty else { throw ImageError.emptyFile(file: path) }
    return bytes
}

/// Writes `bytes` to `path`, replacing any file there.
func writeFile(_ bytes: [UInt8], to path: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard fd >= 0 else { throw ImageError.writeFailed(file: path, reason: errnoDescription()) }
    var written = 0
    while written < bytes.count {
        let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
        if count < 0 {
            if errno == EINTR { continue }
            let reason = errnoDescription()
            close(fd)
            throw ImageError.writeFailed(file: path, reason: reason)
        }
        written += count
    }
    guard close(fd) == 0 else { throw ImageError.writeFailed(file: path, reason: errnoDescription()) }
}

/// Writes `image` as PNG or JPEG, chosen by the path's extension (.png, .jpg, .jpeg; any case).
public func writeImage(_ image: RGBImage, to path: String) throws {
    let name = path.split(separator: "/").last.map(String.init) ?? path
    let ext = name.contains(".") ? String(name.split(separator: ".").last!).lowercased() : ""
    switch ext {
    case "png": try writePNG(image, to: path)
    case "jpg", "jpeg": try writeJPEG(image, to: path)
    default:
        throw ImageError.unsupported(file: path, detail: "cannot tell the output format from the extension "
                                     + "'\(ext)'; use .png, .jpg or .jpeg")
    }
}

/// Throws unless the image can be written: nonzero size and a pixel buffer that fits it.
func checkWritable(_ image: RGBImage, path: String) throws {
    guard image.width > 0, image.height > 0 else {
        throw ImageError.zeroSize(file: path, width: image.width, height: image.height)
    }
    guard image.pixels.count == image.width * image.height * 3 else {
        throw ImageError.writeFailed(file: path, reason: "the pixel buffer has \(image.pixels.count) bytes, "
                                     + "not \(image.width) x \(image.height) x 3")
    }
}
