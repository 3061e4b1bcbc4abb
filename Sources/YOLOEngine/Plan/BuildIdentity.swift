// Which build of the engine is running, for the plan cache: a plan measured the kernels of one
// build, and another build (an upgrade, a rebuild with changed kernels) may rank the algorithms
// differently, so its entries are not reused. The identity is the GNU build ID of the ELF file
// that holds this code (the executable, or a shared library the engine was linked into), found
// through /proc/self/maps; without one, that file's size and modification time; without either
// (not Linux, no /proc), "unknown" (plans are then reused across builds, as before).
import YOLOCore

enum BuildIdentity {
    static let current: String = {
        #if os(Linux)
        let marker: @convention(c) () -> Void = {}
        if let file = objectPath(containing: UInt(bitPattern: unsafeBitCast(marker, to: UnsafeRawPointer.self))) {
            if let id = gnuBuildID(path: file) { return id }
            var st = stat()
            if stat(file, &st) == 0 { return "size \(st.st_size) mtime \(st.st_mtim.tv_sec)" }
        }
        #endif
        return "unknown"
    }()

    /// The file mapped at `address` in /proc/self/maps' text ("start-end perms offset dev inode path").
    static func objectPath(containing address: UInt, maps: String? = nil) -> String? {
        let text: String
        if let maps { text = maps } else {
            guard case .success(let bytes) = readProcFile("/proc/self/maps") else { return nil }
            text = String(decoding: bytes, as: UTF8.self)
        }
        for line in textLines(text) {
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            // (The path is padded with spaces to a column; it starts at its "/".)
            guard fields.count == 6, case let path = fields[5].drop(while: { $0 == " " }), path.hasPrefix("/") else { continue }
            let range = fields[0].split(separator: "-")
            guard range.count == 2, let lo = UInt(range[0], radix: 16), let hi = UInt(range[1], radix: 16),
                  lo <= address, address < hi else { continue }
            return String(path)
        }
        return nil
    }

    /// The hex GNU build ID (note "GNU", type 3) of a 64-bit little-endian ELF file, or nil (not
    /// such a file, no such note, or a malformed one: every offset is checked against the bytes read).
    static func gnuBuildID(path: String) -> String? {
        guard case .success(let (fd, size)) = openRegularFile(path, maxBytes: Int.max) else { return nil }
        defer { close(fd) }
        func bytes(at offset: Int, count: Int) -> [UInt8]? {
            guard offset >= 0, count >= 0, count <= 1 << 20, offset <= size - count else { return nil }
            var out = [UInt8](repeating: 0, count: count)
            let n = out.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
            return n == count ? out : nil
        }
        guard let header = bytes(at: 0, count: 64), header[0..<4] == [0x7F, 0x45, 0x4C, 0x46],
              header[4] == 2, header[5] == 1 else { return nil }
        let phoff = Int(le(header, 32, 8)), entry = Int(le(header, 54, 2)), count = Int(le(header, 56, 2))
        guard entry >= 56, let table = bytes(at: phoff, count: entry * count) else { return nil }
        for i in 0..<count where le(table, i * entry, 4) == 4 {  // PT_NOTE
            let offset = le(table, i * entry + 8, 8), length = le(table, i * entry + 32, 8)
            guard offset <= UInt64(Int.max), length <= 1 << 20, let notes = bytes(at: Int(offset), count: Int(length)) else { continue }
            var p = 0
            while p + 12 <= notes.count {
                let nameSize = Int(le(notes, p, 4)), descSize = Int(le(notes, p + 4, 4)), type = le(notes, p + 8, 4)
                let name = p + 12, desc = name + (nameSize + 3) / 4 * 4, next = desc + (descSize + 3) / 4 * 4
                guard nameSize <= notes.count, descSize <= notes.count, next <= notes.count else { break }
                if type == 3, notes[name..<name + nameSize] == [0x47, 0x4E, 0x55, 0], descSize > 0 {
                    return notes[desc..<desc + descSize].map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
                }
                p = next
            }
        }
        return nil
    }

    /// The little-endian unsigned integer of `count` bytes at `offset` (in bounds: callers check).
    private static func le(_ b: [UInt8], _ offset: Int, _ count: Int) -> UInt64 {
        (0..<count).reversed().reduce(0) { $0 << 8 | UInt64(b[offset + $1]) }
    }

    /// A /proc file (size 0 in fstat: read until it ends, at most 4 MiB).
    private static func readProcFile(_ path: String) -> Result<[UInt8], FileReadFailure> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(.system(reason: errnoText())) }
        defer { close(fd) }
        var out: [UInt8] = [], chunk = [UInt8](repeating: 0, count: 1 << 16)
        while out.count < 4 << 20 {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; return .failure(.system(reason: errnoText())) }
            if n == 0 { break }
            out += chunk[0..<n]
        }
        return .success(out)
    }
}
