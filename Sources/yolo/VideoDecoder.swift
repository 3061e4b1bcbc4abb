// ffmpeg as a video decoder: started on a source, it writes raw rgb24 frames to a pipe whose
// size and rate come from its own description of its output (used by `yolo stream` and
// `yolo serve --input`), and reading whole frames from that pipe.
import Foundation

/// A running `ffmpeg -i SOURCE -f rawvideo -pix_fmt rgb24 -`.
struct VideoDecoder {
    let process: Process
    /// ffmpeg's stderr, collected (for its messages).
    let log: ProcessLog
    /// The read end of ffmpeg's stdout: frames of width * height * 3 bytes.
    let fd: Int32
    let width: Int, height: Int
    /// The output's frame rate, when ffmpeg said it.
    let fps: Double?

    /// Starts ffmpeg on `input` (`inputOptions` go before `-i`, e.g. `-re`) and waits until it
    /// describes its output. The failure is a one-line message for `yolo: ...`.
    static func start(ffmpeg: String, input: String, inputOptions: [String] = [],
                      scale: (Int, Int)? = nil) -> Result<VideoDecoder, VideoDecoderError> {
        var argv = ["-hide_banner", "-nostdin", "-nostats", "-loglevel", "info"] + inputOptions + ["-i", input]
        if let scale { argv += ["-vf", "scale=\(scale.0):\(scale.1)"] }
        argv += ["-an", "-sn", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ffmpeg)
        p.arguments = argv
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        do { try p.run() } catch {
            return .failure(VideoDecoderError(description: "\(ffmpeg): cannot run: \(error.localizedDescription)"))
        }
        let log = ProcessLog(fd: err.fileHandleForReading.fileDescriptor)
        log.start()
        guard let geometry = log.waitForGeometry() else {
            p.waitUntilExit()
            log.waitForEnd()
            return .failure(VideoDecoderError(description: "\(input): cannot open with ffmpeg: \(log.errorSummary(input: input))"))
        }
        return .success(VideoDecoder(process: p, log: log, fd: out.fileHandleForReading.fileDescriptor,
                                     width: geometry.width, height: geometry.height, fps: geometry.fps))
    }
}

/// Why ffmpeg could not start decoding, in one line.
struct VideoDecoderError: Error, CustomStringConvertible {
    let description: String
}

/// Reads up to `buffer.count` bytes from `fd`, waiting (and checking `stop`) as needed: the
/// count read (less at end of input or when stopped), or -1 on an error.
func readFrameBytes(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, stop: StopFlag) -> Int {
    var got = 0
    while got < buffer.count {
        if stop.isSet { return got }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&pfd, 1, 100)
        if ready < 0 { if errno == EINTR { continue }; return -1 }
        if ready == 0 { continue }
        let n = read(fd, buffer.baseAddress! + got, buffer.count - got)
        if n < 0 { if errno == EINTR || errno == EAGAIN { continue }; return -1 }
        if n == 0 { return got }
        got += n
    }
    return got
}
