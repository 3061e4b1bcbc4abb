import YOLOCore

/// Reads a Darknet weights file's floats in order, a layer at a time, so that loading never
/// holds the whole file next to what the layers make of it (their packed copies). The header
/// and the total size are checked against the cfg before any float is read.
struct WeightsReader: ~Copyable {
    private enum Source {
        case bytes([UInt8], offset: Int)
        case file(fd: Int32, path: String)
    }
    private var source: Source

    /// Where the weights come from: bytes in memory, or a file (read only if it is a regular
    /// file: a FIFO or a device cannot block or flood the load).
    enum Origin {
        case bytes([UInt8])
        case file(String)
    }

    /// Opens `origin` and checks its header and size against `floats` (the cfg's count).
    init(_ origin: Origin, name: String, cfg: String, floats: Int) throws(YOLOError) {
        switch origin {
        case .bytes(let bytes):
            let header = try Model.checkWeightsHeader(Array(bytes.prefix(20)), size: bytes.count, name: name, cfg: cfg,
                                                      floats: floats)
            source = .bytes(bytes, offset: header)
        case .file(let path):
            let fd: Int32, size: Int
            switch openRegularFile(path, maxBytes: FileLimits.weightsBytes) {
            case .success(let opened): (fd, size) = opened
            case .failure(let failure): throw .file(path: path, reason: failure.reason)
            }
            var head = [UInt8](repeating: 0, count: min(size, 20))
            let header: Int
            do throws(YOLOError) {
                let got = head.withUnsafeMutableBytes { readUpTo(fd, $0.baseAddress!, count: $0.count) }
                guard case .success(head.count) = got else {
                    throw .file(path: path, reason: "could not read its header")
                }
                header = try Model.checkWeightsHeader(head, size: size, name: name, cfg: cfg, floats: floats)
                guard lseek(fd, off_t(header), SEEK_SET) == off_t(header) else {
                    throw .file(path: path, reason: errnoText())
                }
            } catch {
                close(fd)
                throw error
            }
            source = .file(fd: fd, path: path)
        }
    }

    deinit {
        if case .file(let fd, _) = source { close(fd) }
    }

    /// Reads the next `count` floats into `into`.
    mutating func next(_ count: Int, into p: UnsafeMutablePointer<Float>) throws(YOLOError) {
        switch source {
        case .bytes(let bytes, let offset):
            bytes.withUnsafeBytes { raw in
                UnsafeMutableRawPointer(p).copyMemory(from: raw.baseAddress! + offset, byteCount: 4 * count)
            }
            source = .bytes(bytes, offset: offset + 4 * count)
        case .file(let fd, let path):
            switch readUpTo(fd, p, count: 4 * count) {
            case .success(4 * count): break
            case .success: throw .file(path: path, reason: "ended early (it shrank while it was read)")
            case .failure(let failure): throw .file(path: path, reason: failure.reason)
            }
        }
        #if _endian(big)
        for i in 0..<count { p[i] = Float(bitPattern: UInt32(littleEndian: p[i].bitPattern)) }
        #endif
    }
}
