// The file system for the commands: file identities (no output may replace an input), the
// search of directories for images, output directories and files, temporary files on signals.
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

/// Writes `bytes` to `path`: atomically (a temporary file in the same directory, renamed into
/// place), through symbolic links, as a stream into a FIFO or character device (`outputTarget`).
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

/// What a search of a directory for images found.
struct ImageSearch {
    /// The image files, as paths relative to the directory searched, sorted.
    var files: [String] = []
    /// Subdirectories left out because they are excluded (relative paths).
    var skipped: [String] = []
    /// Subdirectories that could not be read, as "<path>: <why>".
    var errors: [String] = []
}

/// Whether a file name has an image extension: .jpg, .jpeg or .png, in any case.
func hasImageExtension(_ name: String) -> Bool {
    guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return false }
    return ["jpg", "jpeg", "png"].contains(name[name.index(after: dot)...].lowercased())
}

/// The .jpg, .jpeg and .png files under `root`, recursively. `root` may be a symbolic link to a
/// directory (given explicitly, it is followed); below it, links to files are taken (a broken
/// one too, so that its error is reported) but links to directories are not followed, so a
/// cycle cannot be entered. Hidden entries (".name") are skipped, and so are the directories
/// whose identity is in `excluded` (the output directory, which holds earlier runs' results).
/// An image or directory whose name is not UTF-8, or whose path is over PATH_MAX (no path of
/// ours can open it), is an error in `errors`, never skipped in silence.
func findImageFiles(in root: String, excluding excluded: Set<FileIdentity>) -> ImageSearch {
    var search = ImageSearch()
    let base = root.hasSuffix("/") ? root : root + "/"
    func walk(_ relative: String) {
        let path = relative.isEmpty ? root : base + relative
        guard let dir = opendir(path) else {
            search.errors.append("\(path): cannot read the directory: \(errnoText())")
            return
        }
        var names: [(name: String, type: UInt8)] = []
        while let entry = readdir(dir) {
            let bytes = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            let name = String(decoding: bytes, as: UTF8.self)
            if name.hasPrefix(".") { continue }
            let type = entry.pointee.d_type
            let searched = hasImageExtension(name) || type == UInt8(DT_DIR) || type == UInt8(DT_UNKNOWN) || type == UInt8(DT_LNK)
            if Array(name.utf8) != bytes {
                // A String cannot hold it, so no path can name it: said, never skipped in silence.
                if searched { search.errors.append("\(base + (relative.isEmpty ? "" : relative + "/"))\(escapedName(bytes)): "
                                                   + "the file name is not valid UTF-8, so yolo cannot open it; rename it") }
                continue
            }
            names.append((name, type))
        }
        closedir(dir)
        for (name, type) in names {
            let rel = relative.isEmpty ? name : relative + "/" + name
            var st = stat()
            guard lstat(base + rel, &st) == 0 else {
                if hasImageExtension(name) || type == UInt8(DT_DIR) || type == UInt8(DT_UNKNOWN) {
                    let long = errno == ENAMETOOLONG ? " (the path is longer than PATH_MAX, \(PATH_MAX) bytes)" : ""
                    search.errors.append("\(base + rel): \(errnoText())\(long)")
                }
                continue
            }
            if st.st_mode & S_IFMT == S_IFDIR {
                if let id = FileIdentity(path: base + rel), excluded.contains(id) { search.skipped.append(rel) } else { walk(rel) }
            } else if hasImageExtension(name) {
                // A link to a directory is not followed; a link to anything else is taken.
                if st.st_mode & S_IFMT == S_IFLNK, stat(base + rel, &st) == 0, st.st_mode & S_IFMT == S_IFDIR { continue }
                search.files.append(rel)
            }
        }
    }
    walk("")
    search.files.sort()
    return search
}

/// A file name's bytes as text: valid UTF-8 as it is, any other byte as `\xFF`.
func escapedName(_ bytes: [UInt8]) -> String {
    var out = "", i = 0
    while i < bytes.count {
        // The longest valid character starting here (UTF-8 takes 1 to 4 bytes), else one byte escaped.
        let taken = (1...min(4, bytes.count - i)).reversed().first { n in
            let piece = Array(bytes[i..<(i + n)]), text = String(decoding: piece, as: UTF8.self)
            return text.unicodeScalars.count == 1 && Array(text.utf8) == piece
        }
        if let n = taken {
            out += String(decoding: bytes[i..<(i + n)], as: UTF8.self)
            i += n
        } else {
            out += "\\x" + String(bytes[i], radix: 16, uppercase: true).leftPadded(to: 2)
            i += 1
        }
    }
    return out
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}

/// Makes SIGINT, SIGTERM and SIGHUP remove the temporary files of the outputs being written
/// before they end the process (as they would have: same exit status). A signal that is
/// ignored (e.g. SIGHUP under nohup) stays ignored.
func removeTemporaryFilesOnSignals() {
    removeTemporaryFilesInFlight()  // sets up its state now, not in the handler
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        let previous = signal(sig) { sig in
            removeTemporaryFilesInFlight()
            signal(sig, SIG_DFL)
            raise(sig)
        }
        if let previous, unsafeBitCast(previous, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self) {
            signal(sig, SIG_IGN)
        }
    }
}
