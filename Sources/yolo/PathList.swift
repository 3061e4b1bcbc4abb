// Where `yolo detect --files-from` takes its paths: lines read as they arrive from a file or
// stdin (`LineReader`, also what --resume reads its file with), every N-th from the K-th
// (`Shard`), and the jobs handed to the pipeline (`DetectJobs`).
import Foundation
import YOLO

/// Lines from a file descriptor, read in chunks as they arrive (a pipe's reader gets each line
/// as soon as it is written): each line's bytes without its "\n" and a "\r" before it. Memory:
/// one chunk and one line (at most `maxLineBytes`): a longer line is read past, not held.
struct LineReader {
    enum Line: Equatable {
        /// A line that ended with "\n".
        case complete([UInt8])
        /// The bytes after the last "\n", at the end of the input.
        case unterminated([UInt8])
        /// A line longer than `maxLineBytes` (ended by "\n" or by the end of the input): its
        /// first `keptBytes` bytes; the rest was read and dropped.
        case tooLong(prefix: [UInt8])
    }

    /// How much of an over-long line `Line.tooLong` keeps (to name it).
    static let keptBytes = 100

    let fd: Int32
    /// The name for errors (a path, or "stdin").
    let name: String
    let maxLineBytes: Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false
    /// While an over-long line is read past: its first bytes, and how many were dropped.
    private var overlong: [UInt8]? = nil
    private var dropped = 0
    /// Lines returned so far.
    private(set) var lineNumber = 0
    /// Bytes read up to the end of the last complete line returned.
    private(set) var completeBytes = 0

    init(fd: Int32, name: String, maxLineBytes: Int) {
        self.fd = fd
        self.name = name
        self.maxLineBytes = maxLineBytes
    }

    /// What is wrong with the line `tooLong` was returned for (the last one).
    var tooLongReason: String { "line \(lineNumber) of \(name) is longer than \(maxLineBytes) bytes" }

    /// The next line; nil at the end. Throws when reading fails.
    mutating func next() throws -> Line? {
        var searched = start
        while true {
            if let newline = buffer[searched...].firstIndex(of: 10) {
                let tooLong = overlong ?? (newline - start > maxLineBytes ? Array(buffer[start..<min(start + Self.keptBytes, newline)]) : nil)
                var line = tooLong == nil ? Array(buffer[start..<newline]) : []
                if line.last == 13 { line.removeLast() }
                completeBytes += dropped + newline + 1 - start
                (start, overlong, dropped) = (newline + 1, nil, 0)
                lineNumber += 1
                return tooLong.map { .tooLong(prefix: $0) } ?? .complete(line)
            }
            searched = buffer.count
            if overlong != nil || buffer.count - start > maxLineBytes {
                // Past the limit: keep the line's first bytes, drop the rest as it comes.
                if overlong == nil { overlong = Array(buffer[start..<min(start + Self.keptBytes, buffer.count)]) }
                dropped += buffer.count - start
                start = buffer.count
            }
            if atEnd {
                if let prefix = overlong {
                    (overlong, dropped) = (nil, 0)
                    lineNumber += 1
                    return .tooLong(prefix: prefix)
                }
                guard start < buffer.count else { return nil }
                let rest = Array(buffer[start...])
                start = buffer.count
                lineNumber += 1
                return .unterminated(rest.last == 13 ? rest.dropLast() : rest)
            }
            if start > 0 {
                buffer.removeFirst(start)
                searched -= start
                start = 0
            }
            let chunk = 1 << 16
            let old = buffer.count
            buffer.append(contentsOf: repeatElement(0, count: chunk))
            var n: Int
            repeat { n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + old, chunk) } } while n < 0 && errno == EINTR
            if n < 0 {
                buffer.removeLast(chunk)
                throw FileError(path: name, what: "cannot read: \(errnoText(errno))")
            }
            buffer.removeLast(chunk - n)
            if n == 0 { atEnd = true }
        }
    }
}

/// `--shard K/N`: of the paths, numbered 1, 2, 3, ... in input order, those numbered K, K + N,
/// K + 2N, ... (as GNU split's `-n l/K/N` numbers its parts).
struct Shard: Equatable {
    let k: Int
    let n: Int

    init(k: Int, n: Int) { self.k = k; self.n = n }

    init(_ text: String) throws {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let k = Int(parts[0]), let n = Int(parts[1]), (1...1_000_000).contains(n), (1...n).contains(k) else {
            throw UsageError("--shard \(text): expected K/N with 1 <= K <= N (e.g. 1/4 ... 4/4: every 4th path from the K-th)")
        }
        self.init(k: k, n: n)
    }

    /// Whether the path at `index` (0-based, in input order) is in this shard.
    func contains(_ index: Int) -> Bool { index % n == k - 1 }
}

/// An image for the pipeline: its path and its position among all the input paths (0-based,
/// before sharding and resuming: what names its outputs and its COCO id).
struct DetectJob: Sendable {
    var path: String
    var index: Int
    /// Why this entry of a path list is no path (its error line says so), if it is not.
    var problem: String? = nil
}

/// The jobs of a run, in input order: the IMAGE|DIR arguments (expanded beforehand) or a path
/// list read as it arrives (`--files-from`), less the paths of other shards and those `--resume`
/// found answered. Used by one thread at a time (the producer's).
final class DetectJobs: @unchecked Sendable {
    private var listed: [DetectJob]?
    private var lines: LineReader?
    private let shard: Shard?
    private let resume: ResumeLog?
    /// The position of the next path among all the input paths; of the next listed job.
    private var index = 0
    private var position = 0

    /// The jobs of the IMAGE|DIR arguments, filtered now (`count` is known).
    init(inputs: [DetectInput], shard: Shard?, resume: ResumeLog?) {
        self.shard = shard
        self.resume = resume
        var jobs: [DetectJob] = []
        for (i, input) in inputs.enumerated() where admits(input.path, index: i) { jobs.append(DetectJob(path: input.path, index: i)) }
        listed = jobs
    }

    /// The jobs of a path list, read and filtered as they are taken.
    init(lines: LineReader, shard: Shard?, resume: ResumeLog?) {
        self.lines = lines
        self.shard = shard
        self.resume = resume
    }

    /// How many jobs there are, when known beforehand (IMAGE|DIR arguments).
    var count: Int? { listed?.count }

    /// The next job; nil at the end. Empty lines of a path list are not paths (not counted).
    func next() throws -> DetectJob? {
        if let listed {
            defer { position += 1 }
            return position < listed.count ? listed[position] : nil
        }
        while let line = try lines!.next() {
            switch line {
            case .complete(let bytes), .unterminated(let bytes):
                guard !bytes.isEmpty else { continue }
                let path = String(decoding: bytes, as: UTF8.self)
                defer { index += 1 }
                if admits(path, index: index) { return DetectJob(path: path, index: index) }
            case .tooLong(let prefix):
                // A bad path like any other: its error line, named by its first bytes (the same
                // every run, so --resume finds it answered), and the list goes on.
                let shown = String(decoding: prefix, as: UTF8.self) + "..."
                defer { index += 1 }
                if admits(shown, index: index) {
                    return DetectJob(path: shown, index: index, problem: lines!.tooLongReason + " (a path has at most \(PATH_MAX)); skipped")
                }
            }
        }
        return nil
    }

    /// Whether the path at `index` is in the shard and not answered yet (using up an answer).
    private func admits(_ path: String, index: Int) -> Bool {
        if let shard, !shard.contains(index) { return false }
        return resume?.takeAnswered(path) != true
    }
}

/// Opens `--files-from`'s FILE (or stdin for "-") for reading paths, one per line.
func openPathList(_ name: String) throws -> LineReader {
    if name == "-" { return LineReader(fd: 0, name: "stdin", maxLineBytes: 1 << 16) }
    let fd = open(name, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw FileError(path: name, what: "cannot open the path list: \(errnoText(errno))") }
    var st = stat()
    if fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFDIR {
        close(fd)
        throw FileError(path: name, what: "is a directory; --files-from takes a file with one path per line (give a DIR as an argument instead)")
    }
    return LineReader(fd: fd, name: name, maxLineBytes: 1 << 16)
}
