// The engine's file reads: YOLOCore's hardened reader, failures as YOLOError.
import YOLOCore

/// Reads a whole regular file with the C library (the engine does not use Foundation), at most
/// `maxBytes` bytes (default `FileLimits.weightsBytes`).
package func readFileBytes(_ path: String, maxBytes: Int = FileLimits.weightsBytes) throws(YOLOError) -> [UInt8] {
    switch readRegularFile(path, maxBytes: maxBytes) {
    case .success(let bytes): return bytes
    case .failure(let failure): throw YOLOError.file(path: path, reason: failure.reason)
    }
}

/// A cfg or names file as text, at most `maxBytes` bytes (default `FileLimits.textBytes`).
package func readTextFile(_ path: String, maxBytes: Int = FileLimits.textBytes) throws(YOLOError) -> String {
    let bytes = try readFileBytes(path, maxBytes: maxBytes)
    return String(decoding: bytes, as: UTF8.self)
}
