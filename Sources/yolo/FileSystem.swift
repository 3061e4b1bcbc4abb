#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import YOLO

/// A file-system failure, printed as one line: `<path>: <what>` (strerror's text where there is one).
struct FileError: Error, CustomStringConvertible {
    let path: String
    let what: String
    var description: String { "\(path): \(what)" }
}

/// A file's identity: device and inode (after following symbolic links). Two paths with the same
/// identity are the same file, whatever their spelling, symbolic or hard links.
struct FileIdentity: Hashable {
    let device: UInt64
    let inode: UInt64
    /// A regular file (not a device, FIFO, socket or directory).
    let isRegularFile: Bool

    init?(path: String) {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        isRegularFile = st.st_mode & S_IFMT == S_IFREG
    }
}

/// The files a command reads (images, cfg, weights, names), by identity, so that no output can
/// replace one of them. Only regular files count: writing to a device or a FIFO (/dev/null,
/// /dev/stdout on a terminal) replaces nothing.
struct InputFiles {
    private var files: [FileIdentity: String] = [:]

    mutating func add(_ path: String) {
        if let id = FileIdentity(path: path), id.isRegularFile, files[id] == nil { files[id] = path }
    }

    /// Throws when `output` is (or resolves to) one of the inputs: nothing may be written there.
    func checkOutput(_ output: String, option: String) throws {
        guard let id = FileIdentity(path: output), let input = files[id] else { return }
        let same = input == output ? "it is an input file" : "it is the input file \(input)"
        throw UsageError("\(output): refusing to write \(option) there: \(same); choose another path", hint: false)
    }
}

/// Creates `path` and any missing parents (mkdir -p); errors name the path and say why, once.
func makeDirectories(_ path: String) throws {
    if mkdir(path, 0o777) == 0 { return }
    var code = errno
    if code == ENOENT {
        let parent = parentDirectory(path)
        if !parent.isEmpty, parent != path {
            try makeDirectories(parent)
            if mkdir(path, 0o777) == 0 { return }
            code = errno
        }
    }
    var st = stat()
    if code == EEXIST {
        if stat(path, &st) == 0, st.st_mode & S_IFMT == S_IFDIR { return }
        code = ENOTDIR
    }
    throw FileError(path: path, what: "cannot create the directory: \(errnoText(code))")
}

/// The directory part of a path ("" for a bare name; "/" for a path just under the root).
func parentDirectory(_ path: String) -> String {
    var p = Substring(path)
    while p.count > 1, p.hasSuffix("/") { p = p.dropLast() }
    guard let slash = p.lastIndex(of: "/") else { return "" }
    return slash == p.startIndex ? "/" : String(p[..<slash])
}

/// Writes `bytes` to `path` atomically (a temporary file in the same directory, renamed into place).
func writeOutputFile(_ bytes: [UInt8], to path: String) throws {
    if let reason = bytes.withUnsafeBytes({ writeFileAtomically($0, to: path) }) {
        throw FileError(path: path, what: "cannot write the file: \(reason)")
    }
}

/// Reads a regular file of at most `maxBytes` bytes (no FIFOs, devices or directories).
func readInputFile(_ path: String, maxBytes: Int) throws -> [UInt8] {
    switch readRegularFile(path, maxBytes: maxBytes) {
    case .success(let bytes): return bytes
    case .failure(let failure): throw FileError(path: path, what: failure.reason)
    }
}
