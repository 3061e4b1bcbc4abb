// `yolo serve --input`: the live view's frames from ffmpeg (VideoDecoder), as a LiveSource.
import Foundation
import YOLOServe

enum ServeSource {
    /// Starts ffmpeg on `input`. A file is read at its frame rate (`realtime`, ffmpeg's -re),
    /// again and again with `loop`; a `live` source drops the frames the detector has no time for.
    static func start(ffmpeg: String, input: String, scale: (Int, Int)?, loop: Bool, realtime: Bool,
                      live: Bool) -> Result<LiveSource, VideoDecoderError> {
        var inputOptions: [String] = []
        if !live && realtime { inputOptions.append("-re") }
        if loop { inputOptions += ["-stream_loop", "-1"] }
        let decoder: VideoDecoder
        switch VideoDecoder.start(ffmpeg: ffmpeg, input: input, inputOptions: inputOptions, scale: scale) {
        case .success(let d): decoder = d
        case .failure(let e): return .failure(e)
        }
        let reader = ServeFrameReader(decoder: decoder)
        return .success(LiveSource(name: input, dropsStaleFrames: live || realtime, next: reader.next, stop: reader.stop,
                                   failure: { reader.failure(input: input) }))
    }
}

/// Reads the decoder's frames; `next` is called from one thread at a time.
final class ServeFrameReader: @unchecked Sendable {
    let decoder: VideoDecoder
    let stopFlag = StopFlag()
    private var index = 0
    private var readError: String?

    init(decoder: VideoDecoder) { self.decoder = decoder }

    func next() -> LiveFrame? {
        let frameBytes = decoder.width * decoder.height * 3
        var pixels = [UInt8](repeating: 0, count: frameBytes)
        // The wait for the frame's first byte is the source's pace, not reading time.
        var start: UInt64 = 0
        let got = pixels.withUnsafeMutableBytes { p -> Int in
            let first = readFrameBytes(decoder.fd, into: UnsafeMutableRawBufferPointer(rebasing: p[0..<1]), stop: stopFlag)
            start = DispatchTime.now().uptimeNanoseconds
            guard first == 1 else { return first }
            let rest = readFrameBytes(decoder.fd, into: UnsafeMutableRawBufferPointer(rebasing: p[1...]), stop: stopFlag)
            return rest < 0 ? rest : 1 + rest
        }
        if got < 0 { readError = "read error: \(String(cString: strerror(errno)))" }
        guard got == frameBytes else { return nil }
        defer { index += 1 }
        return LiveFrame(pixels: pixels, width: decoder.width, height: decoder.height, index: index,
                         time: Double(index) / (decoder.fps ?? 25),
                         decodeNanoseconds: DispatchTime.now().uptimeNanoseconds - start)
    }

    func stop() {
        stopFlag.set()
        if decoder.process.isRunning { decoder.process.terminate() }
    }

    /// After the last frame: ffmpeg reaped, and why the source ended early (nil: its end, or stopped).
    func failure(input: String) -> String? {
        if decoder.process.isRunning && (stopFlag.isSet || readError != nil) {
            decoder.process.terminate()
            // A write blocked on the full pipe does not end on SIGTERM; closing the pipe ends it.
            try? (decoder.process.standardOutput as? Pipe)?.fileHandleForReading.close()
        }
        decoder.process.waitUntilExit()
        decoder.log.waitForEnd()
        if stopFlag.isSet { return nil }
        if let readError { return "\(input): \(readError)" }
        guard decoder.process.terminationStatus != 0 else { return nil }
        return "\(input): ffmpeg failed: \(decoder.log.errorSummary(input: input))"
    }
}
