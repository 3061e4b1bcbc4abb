// Hardened file access shared by every module: caps on file sizes, reading only regular files
// (checked before a byte is read), text lines, and outputs by what their path is (atomic writes:
// temporary file, fsync, rename, the temporary files in flight recorded for a signal handler to
// remove; links written through; FIFOs and character devices as streams; the rest refused).
import Synchronization

/// Size caps on the files the engine reads. A file over its cap is refused before anything is
/// allocated for it; so are FIFOs, devices, sockets and directories (only regular files are read).
public enum FileLimits {
    /// A Darknet `.cfg` (yolov3-tiny's is 2 KB) or a class-names file: 16 MiB.
    public static let textBytes = 16 << 20
    /// A Darknet `.weights` file (yolov3-tiny's is 34 MiB, yolov3's 237 MiB): 2 GiB.
    public static let weightsBytes = 2 << 30
    /// An image file (see YOLOImage's `loadImage`): 256 MiB.
    public static let imageBytes = 256 << 20
}

/// Why `readRegularFile` failed; each module turns it into its own error type.
package enum FileReadFailure: Error, Equatable {
    /// There is no file at the path (ENOENT).
    case notFound
    /// The path names something that is not a regular file: "a directory", "a FIFO", ...
    case notRegular(kind: String)
    /// The file has more bytes than the caller's cap.
    case tooLarge(bytes: Int, limit: Int)
    /// A system call failed; `reason` is strerror's text.
    case system(reason: String)

    /// The failure as the text after "<path>: ".
    package var reason: String {
        switch self {
        case .notFound: return "No such file or directory"
        case .notRegular(let kind): return "not a regular file: it is \(kind)"
        case .tooLarge(let bytes, let limit): return "file too large: \(bytes) bytes, the limit is \(limit)"
        case .system(let reason): return reason
        }
    }
}

package func errnoText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }

/// "a FIFO", "a directory", ... for a stat mode that is not a regular file.
package func fileKind(_ mode: mode_t) -> String {
    switch mode & S_IFMT {
    case S_IFDIR: return "a directory"
    case S_IFIFO: return "a FIFO"
    case S_IFCHR: return "a character device"
    case S_IFBLK: return "a block device"
    case S_IFSOCK: return "a socket"
    default: return "not a regular file"
    }
}

/// Opens a regular file of at most `maxBytes` bytes for reading and returns its descriptor and
/// size. The file is opened with O_NONBLOCK, so a FIFO cannot block the open, and checked with
/// fstat before any byte is read: FIFOs, devices, sockets and directories are refused, and so is
/// a file over the cap. The caller closes the descriptor.
package func openRegularFile(_ path: String, maxBytes: Int) -> Result<(fd: Int32, size: Int), FileReadFailure> {
    var fd: Int32
    repeat { fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) } while fd < 0 && errno == EINTR
    guard fd >= 0 else { return .failure(errno == ENOENT ? .notFound : .system(reason: errnoText())) }
    var st = stat()
    let failure: FileReadFailure?
    if fstat(fd, &st) != 0 {
        failure = .system(reason: errnoText())
    } else if st.st_mode & S_IFMT != S_IFREG {
        failure = .notRegular(kind: fileKind(st.st_mode))
    } else if Int(st.st_size) > maxBytes {
        failure = .tooLarge(bytes: Int(st.st_size), limit: maxBytes)
    } else {
        failure = nil
    }
    if let failure { close(fd); return .failure(failure) }
    // A regular file never blocks; back to blocking mode all the same (some file systems care).
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
    return .success((fd, Int(st.st_size)))
}

/// Reads up to `count` bytes into `buffer` in a bounded loop; returns how many were read
/// (fewer when the file ended early).
package func readUpTo(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, count: Int) -> Result<Int, FileReadFailure> {
    var filled = 0
    while filled < count {
        let n = read(fd, buffer + filled, count - filled)
        if n < 0 {
            if errno == EINTR { continue }
            return .failure(.system(reason: errnoText()))
        }
        if n == 0 { break }  // the file shrank while we read it
        filled += n
    }
    return .success(filled)
}

/// Reads a whole regular file of at most `maxBytes` bytes (see `openRegularFile`). The read is
/// a bounded loop: a file that grows while it is read yields at most its size at the fstat.
package func readRegularFile(_ path: String, maxBytes: Int) -> Result<[UInt8], FileReadFailure> {
    let fd: Int32, size: Int
    switch openRegularFile(path, maxBytes: maxBytes) {
    case .success(let opened): (fd, size) = opened
    case .failure(let failure): return .failure(failure)
    }
    defer { close(fd) }
    var bytes = [UInt8](repeating: 0, count: size)
    let read = bytes.withUnsafeMutableBytes { readUpTo(fd, $0.baseAddress!, count: size) }
    switch read {
    case .success(let filled):
        if filled < size { bytes.removeSubrange(filled...) }
        return .success(bytes)
    case .failure(let failure):
        return .failure(failure)
    }
}

/// The lines of a cfg or names file, split at LF, CRLF or a lone CR, so that a file saved on
/// Windows (or an old Mac) reads as on Unix with the same line numbers; a UTF-8 byte-order mark
/// at the start is dropped. A final line break leaves an empty last line. ("\r\n" is one
/// Character in Swift: splitting at "\n" alone would not split it.)
package func textLines(_ text: String) -> [Substring] {
    var body = Substring(text)
    if body.first == "\u{FEFF}" { body = body.dropFirst() }
    return body.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }
}

/// What an output path is for: an output of a command (a symbolic link is written through, a
/// FIFO or character device written as a stream), or a cache entry (read back later: a link at
/// its path is replaced by the new file, anything else that is not a regular file is refused).
package enum OutputUse: Sendable {
    case output
    case cache
}

/// Where a write to an output path goes, from what is there now.
package enum OutputTarget: Equatable, Sendable {
    /// A regular file, or nothing: a temporary file next to `path` is renamed over it.
    case replace(path: String)
    /// A FIFO or a character device: opened as it is (no O_CREAT, no O_TRUNC) and written.
    case stream(path: String)
    /// One of this process's open descriptors (/dev/stdout, /dev/fd/N, /proc/self/fd/N): written
    /// to as it is, as a shell's `> /dev/stdout` does (whatever it is open on).
    case descriptor(Int32)
}

/// N for a path that names this process's descriptor N (/dev/fd/N, /proc/self/fd/N, ...).
func ownDescriptor(_ path: String) -> Int32? {
    for prefix in ["/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/", "/proc/\(getpid())/fd/"] where path.hasPrefix(prefix) {
        let digits = path.dropFirst(prefix.count)
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int32(digits) else { return nil }
        return fcntl(n, F_GETFD) >= 0 ? n : nil
    }
    return nil
}

/// Decides where a write to `path` goes (docs/hardening.md, "Outputs"): a regular file or a
/// missing one is replaced; a symbolic link (`.output`) leads to what it points at, followed
/// through up to 40 links, which then decides; a FIFO or character device is a stream, and one
/// of our descriptors (/dev/stdout) is written as it is (for `.output`); anything else, a block
/// device, a socket, a directory, is refused. Never does a
/// node or a link become a regular file (but a `.cache` entry's link). Failure: why, as the
/// text after "<path>: cannot write the file: ".
package func outputTarget(_ path: String, use: OutputUse = .output) -> Result<OutputTarget, OutputRefusal> {
    var current = path
    for _ in 0..<40 {
        // (Its link names no file that could be replaced: a pipe, a socket, a deleted file.)
        if use == .output, let fd = ownDescriptor(current) { return .success(.descriptor(fd)) }
        var st = stat()
        if lstat(current, &st) != 0 {
            return errno == ENOENT ? .success(.replace(path: current)) : .failure(.init(errnoText()))
        }
        let via = current == path ? "it is" : "it leads (through a symbolic link) to \(current),"
        switch st.st_mode & S_IFMT {
        case S_IFREG:
            return .success(.replace(path: current))
        case S_IFLNK where use == .cache:
            return .success(.replace(path: current))
        case S_IFLNK:
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let n = readlink(current, &buffer, buffer.count - 1)
            guard n >= 0 else { return .failure(.init("cannot read the symbolic link \(current): \(errnoText())")) }
            let target = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if target.hasPrefix("/") {
                current = target
            } else if let slash = current.lastIndex(of: "/") {
                current = String(current[...slash]) + target
            } else {
                current = target
            }
        case S_IFIFO where use == .output, S_IFCHR where use == .output:
            return .success(.stream(path: current))
        default:
            let allowed = use == .output ? "a regular file, a FIFO or a character device" : "a regular file (a cache entry)"
            return .failure(.init("\(via) \(fileKind(st.st_mode)); refusing to write there (only \(allowed) takes the output)"))
        }
    }
    return .failure(.init(errnoText(ELOOP)))
}

/// Why an output path takes no output: the text after "<path>: cannot write the file: ".
package struct OutputRefusal: Error, Equatable, Sendable {
    package let reason: String
    init(_ reason: String) { self.reason = reason }
}

/// Writes `bytes` to `path` as `outputTarget` decides (see there): usually atomically, into a new
/// temporary file in the same directory (`.<name>.tmp-<pid>-<n>`), flushed to disk, then renamed
/// over the file; into a FIFO or a character device as a stream. A failure leaves any old file
/// as it was and no temporary file behind. Returns nil or why it failed (strerror's text, or
/// what the path is when it is refused).
package func writeFileAtomically(_ bytes: UnsafeRawBufferPointer, to path: String, use: OutputUse = .output) -> String? {
    switch outputTarget(path, use: use) {
    case .failure(let refusal): return refusal.reason
    case .success(.stream(let node)): return writeStream(bytes, to: node)
    case .success(.replace(let file)): return replaceFile(bytes, at: file)
    case .success(.descriptor(let fd)): return writeFully(fd, bytes)
    }
}

/// Writes all of `bytes` to the open descriptor; nil or strerror's text.
func writeFully(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> String? {
    var written = 0
    while written < bytes.count {
        let count = write(fd, bytes.baseAddress! + written, bytes.count - written)
        if count < 0 {
            if errno == EINTR { continue }
            return errnoText()
        }
        written += count
    }
    return nil
}

/// Opens a FIFO or a character device as it is and writes `bytes` (a FIFO without a reader
/// waits for one, as a shell's redirection does).
func writeStream(_ bytes: UnsafeRawBufferPointer, to path: String) -> String? {
    var fd: Int32
    repeat { fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY) } while fd < 0 && errno == EINTR
    guard fd >= 0 else { return errnoText() }
    var st = stat()
    if fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG {
        // Replaced by a regular file since it was looked at: that one is replaced as usual.
        close(fd)
        return replaceFile(bytes, at: path)
    }
    let failure = writeFully(fd, bytes)
    let closed = close(fd) == 0 ? nil : errnoText()
    return failure ?? closed
}

/// The atomic replacement of the regular file (or nothing) at `path`.
func replaceFile(_ bytes: UnsafeRawBufferPointer, at path: String) -> String? {
    let slash = path.lastIndex(of: "/")
    let dir = slash.map { String(path[...$0]) } ?? ""
    let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
    guard !name.isEmpty else { return errnoText(EISDIR) }
    var fd: Int32 = -1
    var temporary = ""
    // Registered before it exists, so that a signal at any moment removes it (see TemporaryFiles).
    let slot = TemporaryFiles.shared.claim()
    defer { if let slot { TemporaryFiles.shared.release(slot) } }
    for attempt in 0..<100 {
        temporary = "\(dir).\(name).tmp-\(getpid())-\(attempt)"
        if let slot { TemporaryFiles.shared.record(temporary, in: slot) }
        fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        if fd >= 0 || errno != EEXIST { break }
    }
    guard fd >= 0 else { return errnoText() }
    func fail(_ reason: String) -> String {
        close(fd)
        unlink(temporary)
        return reason
    }
    if let failure = writeFully(fd, bytes) { return fail(failure) }
    if fsync(fd) != 0 && errno != EINVAL { return fail(errnoText()) }
    guard close(fd) == 0 else {
        let code = errno
        unlink(temporary)
        return errnoText(code)
    }
    guard rename(temporary, path) == 0 else {
        let code = errno
        unlink(temporary)
        return errnoText(code)
    }
    return nil
}

/// The temporary files `writeFileAtomically` is writing right now, so that a signal handler can
/// remove them (`removeTemporaryFilesInFlight`). Up to 64 at once, each path in a slot of
/// memory allocated once: the handler only loads an atomic mask and calls unlink, both safe in
/// a signal handler. A write that finds every slot taken is not covered (it still cleans up
/// after its own errors).
final class TemporaryFiles: @unchecked Sendable {
    static let shared = TemporaryFiles()
    static let slotBytes = 4096

    /// Slots owned by a writer (one bit per slot).
    private let claimed = Atomic<UInt64>(0)
    /// Slots whose path is complete: what the handler removes.
    private let recorded = Atomic<UInt64>(0)
    /// 64 slots of `slotBytes`: NUL-terminated paths.
    private let paths: UnsafeMutablePointer<UInt8>

    private init() {
        paths = .allocate(capacity: 64 * Self.slotBytes)
        paths.initialize(repeating: 0, count: 64 * Self.slotBytes)
    }

    private func path(_ slot: Int) -> UnsafePointer<CChar> {
        UnsafeRawPointer(paths + slot * Self.slotBytes).assumingMemoryBound(to: CChar.self)
    }

    /// A free slot, or nil when all 64 are taken.
    func claim() -> Int? {
        var mask = claimed.load(ordering: .relaxed)
        while mask != .max {
            let slot = (~mask).trailingZeroBitCount
            let (exchanged, original) = claimed.compareExchange(expected: mask, desired: mask | 1 << slot,
                                                                  ordering: .acquiringAndReleasing)
            if exchanged { return slot }
            mask = original
        }
        return nil
    }

    /// Makes `path` the slot's file to remove on a signal (a path too long for a slot is not recorded).
    func record(_ path: String, in slot: Int) {
        recorded.bitwiseAnd(~(1 << slot), ordering: .releasing)
        let bytes = Array(path.utf8) + [0]
        guard bytes.count <= Self.slotBytes else { return }
        (paths + slot * Self.slotBytes).update(from: bytes, count: bytes.count)
        recorded.bitwiseOr(1 << slot, ordering: .releasing)
    }

    func release(_ slot: Int) {
        recorded.bitwiseAnd(~(1 << slot), ordering: .releasing)
        claimed.bitwiseAnd(~(1 << slot), ordering: .releasing)
    }

    /// Unlinks every recorded file; async-signal-safe.
    func removeAll() {
        let mask = recorded.load(ordering: .acquiring)
        for slot in 0..<64 where mask & 1 << slot != 0 { unlink(path(slot)) }
    }
}

/// Removes the temporary files `writeFileAtomically` is writing at this moment: for a signal
/// handler (async-signal-safe: an atomic load and unlink), which then lets the signal end the process.
package func removeTemporaryFilesInFlight() {
    TemporaryFiles.shared.removeAll()
}
