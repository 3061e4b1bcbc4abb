// `yolo detect --resume OUT.jsonl`: the JSON lines file a batch appends to, and what it already
// answers. An interrupted run leaves whole lines, and at worst an unterminated last one, which
// is cut off; the paths answered are skipped, so a restarted job ends with one line per image.
import Foundation
import YOLO
import YOLOCore

/// The file of `--resume OUT.jsonl`, opened for appending (and locked: one writer at a time),
/// with the paths its lines answer. A line answers its "image", as `yolo detect --json` writes
/// it, whether with detections or with an "error". A path listed twice is answered by two lines.
final class ResumeLog: @unchecked Sendable {
    let path: String
    /// The open file, positioned at its end (O_APPEND).
    let fd: Int32
    /// Lines found (complete and valid), and the bytes of an unterminated last line cut off.
    let linesFound: Int
    let cutBytes: Int
    /// How many lines answer each path, less those skipped so far (used by the producer only).
    private var answered: [String: Int]

    /// Opens (creating) `path`: reads its lines, cuts an unterminated last line (an
    /// interrupted write: its image is detected again), and leaves it open for appending.
    /// Throws when a complete line is not a line of `yolo detect --json` (then nothing is cut
    /// and nothing appended), or when another process holds the file.
    init(path: String) throws {
        // A block device, a socket or a directory is refused before it is opened (outputTarget);
        // a FIFO or a character device after (it is not a file that can be read back).
        if case .failure(let refusal) = outputTarget(path) { throw FileError(path: path, what: "cannot use the results file: \(refusal.reason)") }
        let fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FileError(path: path, what: "cannot open the results file: \(errnoText(errno))") }
        var ok = false
        defer { if !ok { close(fd) } }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            throw FileError(path: path, what: "not a regular file (it is \(fileKind(st.st_mode))): --resume appends to a file it reads back")
        }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            throw FileError(path: path, what: errno == EWOULDBLOCK ? "another process is writing it (it is locked); one run per results file"
                                                                   : "cannot lock: \(errnoText(errno))")
        }
        var reader = LineReader(fd: fd, name: path, maxLineBytes: 1 << 28)
        var answered: [String: Int] = [:]
        var found = 0, cut = 0
        while let line = try reader.next() {
            switch line {
            case .complete(let bytes):
                guard let image = Self.image(ofLine: bytes) else {
                    let start = String(decoding: bytes.prefix(60), as: UTF8.self)
                    throw FileError(path: path, what: "line \(reader.lineNumber) is not a line of 'yolo detect --json' (\(start)...); "
                                    + "refusing to append to it")
                }
                answered[image, default: 0] += 1
                found += 1
            case .unterminated(let bytes):
                cut = bytes.count
            case .tooLong:
                throw FileError(path: path, what: "line \(reader.lineNumber) is longer than \(reader.maxLineBytes) bytes")
            }
        }
        if cut > 0, ftruncate(fd, off_t(reader.completeBytes)) != 0 {
            throw FileError(path: path, what: "cannot cut its unterminated last line: \(errnoText(errno))")
        }
        self.path = path
        self.fd = fd
        self.answered = answered
        linesFound = found
        cutBytes = cut
        ok = true
    }

    /// Whether a line answers `path` (and one answer is used up: the next occurrence of the
    /// same path in the input needs another).
    func takeAnswered(_ path: String) -> Bool {
        guard let n = answered[path] else { return false }
        if n == 1 { answered[path] = nil } else { answered[path] = n - 1 }
        return true
    }

    /// The "image" of a line `yolo detect --json` wrote: `{"image": "<JSON string>", ...}`;
    /// nil for anything else.
    static func image(ofLine line: [UInt8]) -> String? {
        let prefix = Array("{\"image\": \"".utf8)
        guard line.count > prefix.count, line.starts(with: prefix), line.last == UInt8(ascii: "}") else { return nil }
        // The string runs to the first quote not escaped by a backslash.
        var i = prefix.count
        while i < line.count, line[i] != UInt8(ascii: "\"") { i += line[i] == UInt8(ascii: "\\") ? 2 : 1 }
        guard i < line.count else { return nil }
        let token = Data(line[(prefix.count - 1)...i])
        return (try? JSONSerialization.jsonObject(with: token, options: .fragmentsAllowed)) as? String
    }
}
