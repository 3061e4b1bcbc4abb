// Where `yolo stream`'s results go: the annotated video (`VideoEncoder`: an ffmpeg child fed
// rgb24 frames on a pipe, writing a temporary file renamed into place at the end), or raw
// frames on stdout; and the JSON lines (stdout, stderr or a file).
import Foundation
import YOLO
import YOLOCore
import YOLOText
import YOLOStream

/// Writes all bytes to fd; false on an error (EPIPE included: SIGPIPE is ignored).
func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBytes { p in
        var offset = 0
        while offset < p.count {
            let n = write(fd, p.baseAddress! + offset, p.count - offset)
            if n < 0 { if errno == EINTR { continue }; return false }
            offset += n
        }
        return true
    }
}

/// ffmpeg encoding the annotated frames into `output` (the format from its extension).
final class VideoEncoder {
    let output: String
    /// Where ffmpeg writes: a temporary name next to the file `output` is or leads to (through
    /// symbolic links; ".NAME.partial-PID.EXT"), renamed over that file at the end; or the FIFO
    /// or character device `output` is (never replaced). See `outputTarget`.
    let target: String
    /// The file the temporary one replaces (`output`, or where its links lead), if it does.
    private let destination: String
    private let replaces: Bool
    let child: ChildProcess
    let log: FFmpegLog
    /// Our end of its stdin.
    private(set) var frames: Int32
    private let cleanup: StreamCleanup

    init(ffmpeg: String, output: String, width: Int, height: Int, fps: Double, cleanup: StreamCleanup) throws {
        self.output = output
        self.cleanup = cleanup
        let special: Bool
        switch outputTarget(output) {
        case .failure(let why): throw FileError(path: output, what: "cannot write the video: \(why.reason)")
        case .success(.stream(let node)): (special, destination) = (true, node)
        case .success(.descriptor): (special, destination) = (true, output)
        case .success(.replace(let file)): (special, destination) = (false, file)
        }
        let name = (destination as NSString).lastPathComponent, ext = ((output as NSString).lastPathComponent as NSString).pathExtension
        replaces = !special
        if special {
            target = output  // (ffmpeg takes the format from the name given)
        } else {
            let dir = parentDirectory(destination)
            target = (dir.isEmpty ? "" : dir.hasSuffix("/") ? dir : dir + "/")
                + ".\((name as NSString).deletingPathExtension).partial-\(getpid())" + (ext.isEmpty ? "" : "." + ext)
        }
        var argv = FFmpegLog.arguments + ["-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", "\(width)x\(height)",
                                          "-r", String(format: "%.6g", fps), "-i", "-"]
        if ["mp4", "mov", "m4v", "mkv", "webm"].contains(ext.lowercased()) && width % 2 == 0 && height % 2 == 0 {
            argv += ["-pix_fmt", "yuv420p"]
        }
        argv.append(target)
        if !special { cleanup.addTemporaryFile(target) }
        let started = try ChildProcess.spawn(ffmpeg, argv, stdin: .pipe, stdout: .null, stderr: .pipe)
        cleanup.add(started.child)
        child = started.child
        frames = started.stdin!
        log = FFmpegLog(fd: started.stderr!)
    }

    /// Hands ffmpeg a frame; false when it takes no more (it failed: see `finish`).
    func write(_ pixels: [UInt8]) -> Bool { writeAll(frames, pixels) }

    /// Ends the video: closes ffmpeg's input, waits for it to write the rest; then renames the
    /// file into place (when `keep` and ffmpeg succeeded) or removes it. Returns the error
    /// message, or nil.
    func finish(keep: Bool) -> String? {
        if frames >= 0 { close(frames); frames = -1 }
        // ffmpeg writes what it holds and exits; SIGTERM (it still closes the file) if it takes
        // over a minute, SIGKILL after 5 s more.
        child.end(patience: 60, grace: 5)
        log.waitForEnd(seconds: 2)
        var problem: String? = nil
        if let failure = child.failure {
            problem = "ffmpeg cannot write the video: "
                + (log.firstError(name: target, shownAs: output) ?? "ffmpeg \(failure) without a message")
        }
        if replaces {
            if keep && problem == nil {
                if rename(target, destination) != 0 {
                    problem = "cannot rename \(target) into place: \(errnoText(errno))"
                    unlink(target)
                }
            } else {
                unlink(target)
            }
            cleanup.forgetTemporaryFile(target)
        }
        return problem
    }
}

/// JSON lines to a file (`--json FILE`), or to stdout or stderr.
struct JSONLines {
    let fd: Int32
    /// The file's name; nil for stdout and stderr.
    let path: String?

    /// Opens `path` (truncating it; through symbolic links) for writing, or uses `standardFD`.
    /// Lines are written as they come, so a regular file is written in place, not replaced; a
    /// block device, socket or directory is refused as for every output (`outputTarget`).
    init(path: String?, standardFD: Int32) throws {
        guard let path else { fd = standardFD; self.path = nil; return }
        if case .failure(let why) = outputTarget(path) { throw FileError(path: path, what: "cannot write: \(why.reason)") }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FileError(path: path, what: "cannot write: \(errnoText(errno))") }
        self.fd = fd
        self.path = path
    }

    func write(_ line: String) -> Bool { writeAll(fd, Array((line + "\n").utf8)) }

    func close() { if path != nil { _ = Glibc.close(fd) } }
}

extension StreamCommand {
    /// One frame's JSON line (without the newline); its detections as `yolo detect --json`'s
    /// (`detectionJSON`), each with its track id.
    static func frameJSON(_ r: FrameResult, latencyMilliseconds: Double) -> String {
        func ms(_ ns: UInt64) -> String { jsonNumber(Double(ns) / 1e6, decimals: 3) }
        let f = r.frame
        return "{\"frame\": \(f.index), \"time\": \(jsonNumber(f.time, decimals: 6)), "
            + "\"skipped\": [\(r.skipped.map(String.init).joined(separator: ", "))], "
            + "\"width\": \(f.width), \"height\": \(f.height), "
            + "\"inference_ms\": \(ms(r.timing.inference)), \"latency_ms\": \(jsonNumber(latencyMilliseconds, decimals: 3)), "
            + "\"timing_ms\": {\"decode\": \(ms(f.decodeNanoseconds)), \"preprocess\": \(ms(r.timing.preprocess)), "
            + "\"inference\": \(ms(r.timing.inference)), \"postprocess\": \(ms(r.timing.postprocess))}, "
            + "\"detections\": [\(r.tracked.map { detectionJSON($0.detection, track: $0.trackID) }.joined(separator: ", "))]}"
    }
}
