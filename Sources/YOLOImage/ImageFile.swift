import YOLOCore

/// The image formats this module reads and writes.
public enum ImageFormat: String, Sendable {
    /// PNG, read with libpng; signature 89 50 4E 47 0D 0A 1A 0A.
    case png = "PNG"
    /// JPEG (JFIF, Exif, Adobe), read with libjpeg; signature FF D8 FF.
    case jpeg = "JPEG"
}

/// The default limit on the pixels an image may have: 2^27 = 134 million, e.g. 16384 x 8192
/// (384 MiB as RGB; a 100-megapixel photo fits).
public let defaultMaxPixels = 1 << 27

/// The default limit on an image file's size: 256 MiB (`FileLimits.imageBytes`).
public let defaultMaxFileBytes = FileLimits.imageBytes

/// The default limit on a JPEG's scans: 100. A baseline JPEG has one scan per image (or per
/// component), a progressive one about 10 (libjpeg's own script writes 10 for colour, 6 for
/// gray). Each scan is another pass over every block of its component, so the cost of a
/// progressive JPEG grows with its scans times its pixels, not with its file size.
public let defaultMaxJPEGScans = 100

/// Images of at most this many pixels are always decoded; larger ones must come in a file large
/// enough to plausibly hold them (see `checkPlausibleSize`).
let plausibilityFloorPixels = 1 << 22

/// Reads an image file the way Darknet's loader (stb_image, 3 channels) sees it, as 8-bit RGB.
/// The format comes from the file's first bytes, not its name. See `decodeImage` for details.
/// - Parameters:
///   - applyEXIFOrientation: turn the image upright per its EXIF orientation tag (JPEG APP1,
///     PNG eXIf). Darknet ignores the tag; pass false to get the stored pixels as it does.
///   - maxPixels: images whose header claims more pixels are refused with
///     `ImageError.tooLarge` before any pixel memory is allocated.
///   - maxFileBytes: larger files are refused (`ImageError.unreadable`) before they are read;
///     so are FIFOs, devices and directories: only regular files are read.
///   - maxJPEGScans, timeLimit: see `decodeImage`.
public func loadImage(path: String, applyEXIFOrientation: Bool = true,
                      maxPixels: Int = defaultMaxPixels,
                      maxFileBytes: Int = defaultMaxFileBytes,
                      maxJPEGScans: Int = defaultMaxJPEGScans, timeLimit: Double? = nil) throws -> RGBImage {
    let bytes = try readFile(path, maxBytes: maxFileBytes)
    return try decodeImage(bytes, name: path, applyEXIFOrientation: applyEXIFOrientation,
                           maxPixels: maxPixels, maxJPEGScans: maxJPEGScans, timeLimit: timeLimit)
}

/// Decodes PNG or JPEG bytes (detected by signature) to 8-bit RGB; `name` appears in errors.
///
/// PNG decodes byte-exactly as stb_image does with 3 channels: gray is replicated into R = G = B,
/// alpha and tRNS are dropped without compositing, palettes are expanded, 16-bit samples keep
/// their high byte, 1/2/4-bit gray is scaled to 0...255; gAMA, sRGB and iCCP are ignored.
/// Interlaced images are supported. JPEG goes through libjpeg (gray, YCbCr, RGB, CMYK/YCCK,
/// baseline or progressive); CMYK becomes R = C * K / 255 on Adobe's inverted samples.
/// A file that ends before the image does is an error (`ImageError.truncated`), not a gray fill;
/// so is JPEG scan data that libjpeg finds corrupt (its "Corrupt JPEG data" warnings).
/// Decompression bombs are refused before the pixels are allocated: a header claiming more than
/// `maxPixels`, or (above 4 megapixels) far more pixels than the file's size could encode.
/// Images that cost far more than their size are refused as `ImageError.tooCostly`: a JPEG
/// with more than `maxJPEGScans` scans (0: no limit), when libjpeg starts the next scan, and,
/// with a `timeLimit` (seconds), a decode still running that long after it began (checked by
/// libjpeg per row of blocks and scan, by libpng per row, and once decoded).
public func decodeImage(_ bytes: [UInt8], name: String, applyEXIFOrientation: Bool = true,
                        maxPixels: Int = defaultMaxPixels, maxJPEGScans: Int = defaultMaxJPEGScans,
                        timeLimit: Double? = nil) throws -> RGBImage {
    guard !bytes.isEmpty else { throw ImageError.emptyFile(file: name) }
    let budget = DecodeBudget(maxJPEGScans: maxJPEGScans, timeLimit: timeLimit)
    let image: RGBImage
    let orientation: Int?
    switch detectImageFormat(bytes) {
    case .png:
        image = try decodePNG(bytes, name: name, maxPixels: maxPixels, budget: budget)
        orientation = applyEXIFOrientation ? pngEXIFOrientation(bytes) : nil
    case .jpeg:
        image = try decodeJPEG(bytes, name: name, maxPixels: maxPixels, budget: budget)
        orientation = applyEXIFOrientation ? jpegEXIFOrientation(bytes) : nil
    case nil:
        if let format = truncatedSignature(bytes) { throw ImageError.truncated(file: name, format: format) }
        if let other = unsupportedFormatName(bytes) {
            throw ImageError.unsupported(file: name, detail: "\(other) images are not read (supported: \(supportedFormats))")
        }
        throw ImageError.notAnImage(file: name)
    }
    try budget.checkTime(name: name)
    guard let orientation else { return image }
    return image.applyingEXIFOrientation(orientation)
}

/// What one decode may cost beyond its pixels: the JPEG scan limit and the time limit, with
/// the errors that name them.
struct DecodeBudget {
    var maxJPEGScans = defaultMaxJPEGScans
    var timeLimit: Double?
    /// CLOCK_MONOTONIC nanoseconds (as the C decoders read it) at which the decode is over its
    /// time limit; 0: none.
    var deadline: UInt64 = 0

    init(maxJPEGScans: Int = defaultMaxJPEGScans, timeLimit: Double? = nil) {
        self.maxJPEGScans = max(0, maxJPEGScans)
        self.timeLimit = timeLimit
        if let timeLimit, timeLimit.isFinite {
            deadline = (monotonicNanoseconds() &+ UInt64(min(max(timeLimit, 0), 1e9) * 1e9)) | 1  // never 0
        }
    }

    func tooManyScans(name: String) -> ImageError {
        .tooCostly(file: name, reason: "the JPEG has more than \(maxJPEGScans) scans, the limit (each scan is another "
                   + "pass over the image; a progressive JPEG usually has about 10)")
    }

    func tooSlow(name: String) -> ImageError {
        let t = timeLimit ?? 0
        let seconds = t == t.rounded() && t < 1e9 ? "\(Int(t))" : "\(t)"
        return .tooCostly(file: name, reason: "decoding took longer than the time limit of \(seconds) s")
    }

    /// Throws once the deadline has passed.
    func checkTime(name: String) throws {
        if deadline != 0 && monotonicNanoseconds() > deadline { throw tooSlow(name: name) }
    }
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

/// Throws `zeroSize` or `tooLarge` unless 0 < width * height <= maxPixels, and `unreadable`
/// when the process's data-size limit (`ulimit -d`) cannot hold the decoded image.
func checkDimensions(width: Int, height: Int, name: String, maxPixels: Int) throws {
    guard width > 0, height > 0 else { throw ImageError.zeroSize(file: name, width: width, height: height) }
    let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
    guard !overflow, pixels <= maxPixels, pixels <= Int.max / 4 else {
        throw ImageError.tooLarge(file: name, width: width, height: height, maxPixels: maxPixels)
    }
    // The decoded RGB pixels (the decoders' own buffers are checked where they are made).
    if let refusal = checkDataSizeLimit(3 * pixels, for: "decoding \(width) x \(height) pixels") {
        throw ImageError.unreadable(file: name, reason: refusal)
    }
}

/// Throws `corrupt` when a header claims more pixels than `fileBytes` bytes could plausibly
/// encode: above `plausibilityFloorPixels`, at most `pixelsPerByte` pixels per byte of the file.
func checkPlausibleSize(width: Int, height: Int, fileBytes: Int, pixelsPerByte: Int, name: String,
                        format: String) throws {
    let pixels = width.multipliedReportingOverflow(by: height)
    let budget = fileBytes.multipliedReportingOverflow(by: pixelsPerByte)
    guard pixels.overflow || (pixels.partialValue > plausibilityFloorPixels
                              && !budget.overflow && pixels.partialValue > budget.partialValue) else { return }
    throw ImageError.corrupt(file: name, format: format, message: "the header claims \(width) x \(height) pixels, "
                             + "far more than a \(fileBytes)-byte file can hold (a decompression bomb?)")
}

/// The characters of a NUL-terminated C string stored in a fixed-size C array (a tuple).
func stringFromCArray<T>(_ array: T) -> String {
    withUnsafeBytes(of: array) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
}


/// The whole file as bytes, with errors that say which problem it was. Only regular files are
/// read (a FIFO, device or directory is refused without blocking), at most `maxBytes` of them.
func readFile(_ path: String, maxBytes: Int = defaultMaxFileBytes) throws -> [UInt8] {
    switch readRegularFile(path, maxBytes: maxBytes) {
    case .success(let bytes):
        guard !bytes.isEmpty else { throw ImageError.emptyFile(file: path) }
        return bytes
    case .failure(.notFound):
        throw ImageError.fileNotFound(file: path)
    case .failure(let failure):
        throw ImageError.unreadable(file: path, reason: failure.reason)
    }
}

/// Writes `bytes` to `path` atomically (a temporary file in the same directory renamed over
/// `path`, or over the file a symbolic link there leads to), so a failure never leaves half a
/// file; a FIFO or character device is written as a stream (`outputTarget`).
func writeFile(_ bytes: [UInt8], to path: String) throws {
    if let reason = bytes.withUnsafeBytes({ writeFileAtomically($0, to: path) }) {
        throw ImageError.writeFailed(file: path, reason: reason)
    }
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
