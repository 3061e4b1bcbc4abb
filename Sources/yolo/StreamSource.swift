// Where `yolo stream`'s frames come from: an ffmpeg child decoding `--input` to rgb24 on a
// pipe (`FFmpegDecoder`), or raw rgb24 on stdin; `FrameReader` reads either into the pipeline
// on a thread of its own, and never blocks a shutdown: it waits in poll() on the source and a
// wake-up pipe that a stop request writes to.
import Dispatch
import Foundation
import Synchronization
import YOLO
import YOLOStream

/// ffmpeg decoding a video to raw rgb24 frames on a pipe.
final class FFmpegDecoder: Sendable {
    let input: String
    let child: ChildProcess
    let log: FFmpegLog
    /// Our end of its stdout.
    let frames: Int32
    private let ended = Atomic<Bool>(false)

    /// The result of starting: a decoder with the frames' geometry, or why not.
    enum Start { case running(FFmpegDecoder, FFmpegLog.Geometry), failed(String), stopped }

    private init(input: String, child: ChildProcess, log: FFmpegLog, frames: Int32) {
        self.input = input; self.child = child; self.log = log; self.frames = frames
    }

    /// Starts ffmpeg on `input` and waits for it to describe its output (it has opened the
    /// input) or to fail, or for `stop`.
    static func start(ffmpeg: String, input: String, inputOptions: [String] = [], scale: (width: Int, height: Int)?,
                      stop: StopSignal, cleanup: StreamCleanup) throws -> Start {
        var argv = FFmpegLog.arguments + inputOptions + ["-i", input]
        if let scale { argv += ["-vf", "scale=\(scale.width):\(scale.height)"] }
        argv += ["-an", "-sn", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]
        let started = try ChildProcess.spawn(ffmpeg, argv, stdin: .null, stdout: .pipe, stderr: .pipe)
        cleanup.add(started.child)
        let decoder = FFmpegDecoder(input: input, child: started.child, log: FFmpegLog(fd: started.stderr!),
                                    frames: started.stdout!)
        guard let geometry = decoder.log.waitForGeometry(stop: stop) else {
            decoder.end()
            if stop.isSet { return .stopped }
            return .failed(decoder.log.firstError(name: input) ?? "ffmpeg \(decoder.child.failure ?? "ended") without a message")
        }
        return .running(decoder, geometry)
    }

    /// Ends ffmpeg (if it still runs) and reaps it: its pipe closed first (a write then fails),
    /// after `patience` seconds SIGTERM, and SIGKILL after a grace period (ffmpeg blocked
    /// opening or reading a stalled source ignores the first two).
    func end(patience: Double = 0) {
        guard !ended.exchange(true, ordering: .relaxed) else { return }
        close(frames)
        child.end(patience: patience, grace: 2)
        log.waitForEnd(seconds: 2)
    }

    /// What went wrong on ffmpeg's side, after `end()`, unless yolo stopped it: it failed, or
    /// it reported errors (a cut or corrupt input: ffmpeg itself exits 0 on those).
    func problem() -> String? {
        if let failure = child.failure {
            let said = log.firstError(name: input).map { ": \($0)" } ?? ""
            return failure.hasPrefix("killed") ? "ffmpeg was \(failure)\(said)" : "ffmpeg failed (\(failure))\(said)"
        }
        if let error = log.firstError(name: input) { return "the input is damaged: \(error)" }
        return nil
    }
}

/// A read error of the source (ends the pipeline with it).
struct SourceReadError: Error, CustomStringConvertible {
    let description: String
}

/// Reads rgb24 frames from a file descriptor into the pipeline until the end of the input, a
/// read error (the pipeline ends with it) or a stop request.
final class FrameReader: Sendable {
    let fd: Int32, width: Int, height: Int, fps: Double
    let pipeline: FramePipeline
    let stop: StopSignal
    private let source: StoppableReader
    /// When each frame in flight finished reading (by index), for latency.
    private let readyTimes = Locked<[Int: UInt64]>([:])
    /// The bytes of an incomplete last frame (0 when the input ended on a frame boundary).
    let partialFrameBytes = Atomic<Int>(0)

    init(fd: Int32, width: Int, height: Int, fps: Double, pipeline: FramePipeline, stop: StopSignal) throws {
        self.fd = fd; self.width = width; self.height = height; self.fps = fps
        self.pipeline = pipeline; self.stop = stop
        source = try StoppableReader(fd: fd, stop: stop)
    }

    func readyTime(of frame: VideoFrame) -> UInt64 {
        readyTimes.withLock { times in
            let t = times[frame.index] ?? DispatchTime.now().uptimeNanoseconds
            times = times.filter { $0.key > frame.index }  // skipped frames never come back
            return t
        }
    }

    /// Starts reading on a thread of its own; `done` is signalled at the end.
    func start(done: DispatchSemaphore) {
        let thread = Thread { [self] in run(); done.signal() }
        thread.stackSize = 1 << 20
        thread.start()
    }

    private func run() {
        let frameBytes = width * height * 3
        var index = 0
        while !stop.isSet {
            var pixels = [UInt8](repeating: 0, count: frameBytes)
            let start = DispatchTime.now().uptimeNanoseconds
            let got = pixels.withUnsafeMutableBytes { source.read(into: $0) }
            if got < 0 {
                pipeline.finish(throwing: SourceReadError(description: "read error: \(errnoText(errno))"))
                return
            }
            if got < frameBytes {
                if got > 0 && !stop.isSet { partialFrameBytes.store(got, ordering: .relaxed) }
                break
            }
            let now = DispatchTime.now().uptimeNanoseconds
            let frame = VideoFrame(index: index, time: Double(index) / fps, pixels: pixels, width: width, height: height,
                                   format: .rgb, decodeNanoseconds: now - start)
            readyTimes.withLock { times in
                times[index] = now
                if times.count > 4096 { times = times.filter { $0.key > index - 1024 } }  // stays bounded
            }
            if !pipeline.submit(frame) { break }
            index += 1
        }
        pipeline.finish()
    }
}

/// Reads from a descriptor without ever holding up a stop request: it waits in poll() on the
/// source and a wake-up pipe that the stop request writes to.
final class StoppableReader: Sendable {
    let fd: Int32
    let stop: StopSignal
    private let wake: WakePipe

    init(fd: Int32, stop: StopSignal) throws {
        self.fd = fd; self.stop = stop
        let wake = try WakePipe()
        self.wake = wake
        stop.onStop { wake.poke() }
    }

    /// Reads up to `buffer.count` bytes: the count read (less at the end of the input or on a
    /// stop request), or -1 on an error.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        var got = 0
        while got < buffer.count {
            if stop.isSet { return got }
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.readEnd, events: Int16(POLLIN), revents: 0)]
            if poll(&fds, 2, -1) < 0 {
                if errno == EINTR { continue }
                return -1
            }
            if fds[1].revents != 0 { return got }  // stop
            if fds[0].revents == 0 { continue }
            let n = Glibc.read(fd, buffer.baseAddress! + got, buffer.count - got)
            if n < 0 { if errno == EINTR || errno == EAGAIN { continue }; return -1 }
            if n == 0 { return got }
            got += n
        }
        return got
    }
}

/// A pipe to wake a poll(): `poke` makes its read end readable. Closed when the last owner
/// (the reader, the stop request's observer) lets go, so no write reaches a reused descriptor.
final class WakePipe: Sendable {
    let readEnd: Int32, writeEnd: Int32

    init() throws {
        var ends: [Int32] = [-1, -1]
        guard makePipe(&ends, nonBlocking: true) else {
            throw FileError(path: "stream", what: "cannot make a pipe: \(errnoText(errno))")
        }
        (readEnd, writeEnd) = (ends[0], ends[1])
    }

    func poke() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    deinit { close(readEnd); close(writeEnd) }
}
