/// Why an image could not be read or written. Every case names the file (for `decodeImage`,
/// the name the caller gave), and `description` says what went wrong in one line.
public enum ImageError: Error, Equatable, Sendable, CustomStringConvertible {
    /// There is no file at the path.
    case fileNotFound(file: String)
    /// The file exists but could not be read (permissions, a directory, an I/O error).
    case unreadable(file: String, reason: String)
    /// The file has 0 bytes.
    case emptyFile(file: String)
    /// The bytes start with no known image signature.
    case notAnImage(file: String)
    /// The data ends before the image does.
    case truncated(file: String, format: String)
    /// The decoder rejected the data; `message` is libpng's or libjpeg's own.
    case corrupt(file: String, format: String, message: String)
    /// The header says the image is 0 pixels wide or high.
    case zeroSize(file: String, width: Int, height: Int)
    /// The header claims more pixels than the limit; refused before any pixel memory is taken.
    case tooLarge(file: String, width: Int, height: Int, maxPixels: Int)
    /// Decoding would cost more than allowed: a JPEG with more scans than the limit (each scan is
    /// another pass over the image), or a decode still running at its time limit.
    case tooCostly(file: String, reason: String)
    /// A format or variant this module does not handle (GIF, 12-bit JPEG, a .bmp output, ...).
    case unsupported(file: String, detail: String)
    /// Writing the output file failed.
    case writeFailed(file: String, reason: String)

    /// The file (or name) the error is about.
    public var file: String {
        switch self {
        case .fileNotFound(let file), .unreadable(let file, _), .emptyFile(let file),
             .notAnImage(let file), .truncated(let file, _), .corrupt(let file, _, _),
             .zeroSize(let file, _, _), .tooLarge(let file, _, _, _), .tooCostly(let file, _), .unsupported(let file, _),
             .writeFailed(let file, _):
            return file
        }
    }

    /// A one-line explanation that starts with the file name.
    public var description: String {
        switch self {
        case .fileNotFound(let file):
            return "\(file): no such file"
        case .unreadable(let file, let reason):
            return "\(file): cannot read the file (\(reason))"
        case .emptyFile(let file):
            return "\(file): the file is empty (0 bytes)"
        case .notAnImage(let file):
            return "\(file): not an image (unknown file signature; supported formats: \(supportedFormats))"
        case .truncated(let file, let format):
            return "\(file): truncated \(format) file (the data ends before the image does)"
        case .corrupt(let file, let format, let message):
            return "\(file): corrupt \(format) data: \(message)"
        case .zeroSize(let file, let width, let height):
            return "\(file): the image has zero size (\(width) x \(height))"
        case .tooLarge(let file, let width, let height, let maxPixels):
            let pixels = width.multipliedReportingOverflow(by: height)
            let count = pixels.overflow ? "more than \(Int.max)" : "\(pixels.partialValue)"
            return "\(file): image too large (\(width) x \(height) = \(count) pixels; the limit is \(maxPixels))"
        case .tooCostly(let file, let reason):
            return "\(file): refused: \(reason)"
        case .unsupported(let file, let detail):
            return "\(file): unsupported: \(detail)"
        case .writeFailed(let file, let reason):
            return "\(file): cannot write the image (\(reason))"
        }
    }
}

/// The formats `loadImage` and `decodeImage` read, for messages.
let supportedFormats = "PNG, JPEG"
