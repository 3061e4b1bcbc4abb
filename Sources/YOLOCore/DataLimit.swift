// The process's data-size limit (RLIMIT_DATA, `ulimit -d`: heap and private writable mappings).
// Swift cannot recover from a failed allocation (it aborts with "failed to allocate"), so the
// large allocations (the model's parameters, each layer's prepared weights, a session's
// activations, decoded, drawn and encoded images) are checked against what the limit leaves
// and refused with a message that names the limit instead. Without a limit a check is one
// getrlimit call.

/// Bytes the data-size limit still allows this process (the limit less the data pages it has
/// now, from /proc/self/statm), or nil when there is no limit or it cannot be read.
package func dataSizeHeadroom() -> Int? {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_DATA.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return nil }
    let cap = Int(clamping: limit.rlim_cur)
    guard let used = dataBytesInUse() else { return nil }
    return max(0, cap - used)
}

/// Refuses `bytes` more of `what` when the data-size limit cannot hold them.
package func checkDataSizeLimit(_ bytes: Int, for what: String) -> String? {
    guard let headroom = dataSizeHeadroom(), bytes > headroom else { return nil }
    var limit = rlimit()
    _ = getrlimit(Int32(RLIMIT_DATA.rawValue), &limit)
    return "\(what) needs \(mebibytes(bytes)) MiB, but the process's data-size limit (ulimit -d) of "
        + "\(mebibytes(Int(clamping: limit.rlim_cur))) MiB leaves \(mebibytes(headroom)) MiB: raise the limit"
}

private func mebibytes(_ bytes: Int) -> Int { (bytes + (1 << 20) - 1) >> 20 }

/// The sixth field of /proc/self/statm (data + stack, in pages) in bytes.
private func dataBytesInUse() -> Int? {
    let fd = open("/proc/self/statm", O_RDONLY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes = [UInt8](repeating: 0, count: 128)
    let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    guard n > 0 else { return nil }
    let fields = bytes[0..<n].split(separator: UInt8(ascii: " "))
    guard fields.count >= 6 else { return nil }
    var pages = 0
    for c in fields[5] {
        guard c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") else { break }
        pages = pages * 10 + Int(c - UInt8(ascii: "0"))
    }
    return pages * sysconf(Int32(_SC_PAGESIZE))
}
