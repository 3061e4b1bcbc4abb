#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a whole file with the C library (the engine does not use Foundation).
func readFileBytes(_ path: String) throws(YOLOError) -> [UInt8] {
    guard let f = fopen(path, "rb") else {
        throw YOLOError.file(path: path, reason: String(cString: strerror(errno)))
    }
    defer { fclose(f) }
    var st = stat()
    guard fstat(fileno(f), &st) == 0 else {
        throw YOLOError.file(path: path, reason: String(cString: strerror(errno)))
    }
    if (st.st_mode & S_IFMT) == S_IFDIR { throw YOLOError.file(path: path, reason: "is a directory") }
    let size = Int(st.st_size)
    var bytes = [UInt8](repeating: 0, count: size)
    let n = bytes.withUnsafeMutableBytes { fread($0.baseAddress, 1, size, f) }
    guard n == size else {
        throw YOLOError.file(path: path, reason: "read \(n) of \(size) bytes")
    }
    return bytes
}

func readTextFile(_ path: String) throws(YOLOError) -> String {
    let bytes = try readFileBytes(path)
    return String(decoding: bytes, as: UTF8.self)
}

/// Monotonic time in nanoseconds, for the optional per-layer profile.
@inline(__always) func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}
