// `yolo serve --input`: the live view's frames, from ffmpeg (the FFmpegDecoder and StoppableReader
// `yolo stream` uses: its own process group, reaped on every exit path, a stalled source never
// holding up a stop), as a LiveSource.
import Foundation
import Synchronization
import YOLO
import YOLOServe

enum ServeSource {
    /// Starts ffmpeg on `input`. A file is read at its frame rate (`realtime`, ffmpeg's -re),
    /// again and again with `loop`; a `live` source drops the frames the detector has no time for.
    /// ffmpeg goes in `cleanup`, which kills it when a second signal aborts the server.
    static func start(ffmpeg: String, input: String, scale: (width: Int, height: Int)?, loop: Bool, realtime: Bool,
                      live: Bool, cleanup: StreamCleanup) throws -> Result<LiveSource, ServeSourceError> {
        var inputOptions: [String] = []
        if !live && realtime { inputOptions.append("-re") }
        if loop { inputOptions += ["-stream_loop", "-1"] }
        let stop = StopSignal()
        switch try FFmpegDecoder.start(ffmpeg: ffmpeg, input: input, inputOptions: inputOptions, scale: scale, stop: stop,
                                       cleanup: cleanup) {
        case .failed(let why): return .failure(ServeSourceError(description: "\(input): cannot open with ffmpeg: \(why)"))
        case .stopped: return .failure(ServeSourceError(description: "\(input): stopped while opening"))
        case .running(let decoder, let geometry):
            let reader = try ServeFrameReader(decoder: decoder, geometry: geometry, stop: stop)
            return .success(LiveSource(name: input, dropsStaleFrames: live || realtime, next: reader.next, stop: reader.stop,
                                       failure: { reader.failure(input: input) }))
        }
    }
}

struct ServeSourceError: Error, CustomStringConvertible {
    let description: String
}

/// Reads the decoder's frames; `next` is called from one thread at a time.
final class ServeFrameReader: Sendable {
    let decoder: FFmpegDecoder
    let geometry: FFmpegLog.Geometry
    let stopSignal: StopSignal
    private let source: StoppableReader
    private let index = Atomic<Int>(0)
    private let readError = Locked<String?>(nil)

    init(decoder: FFmpegDecoder, geometry: FFmpegLog.Geometry, stop: StopSignal) throws {
        (self.decoder, self.geometry, stopSignal) = (decoder, geometry, stop)
        source = try StoppableReader(fd: decoder.frames, stop: stop)
    }

    func next() -> LiveFrame? {
        let frameBytes = geometry.width * geometry.height * 3
        var pixels = [UInt8](repeating: 0, count: frameBytes)
        // The wait for the frame's first byte is the source's pace, not reading time.
        var start: UInt64 = 0
        let got = pixels.withUnsafeMutableBytes { p -> Int in
            let first = source.read(into: UnsafeMutableRawBufferPointer(rebasing: p[0..<1]))
            start = DispatchTime.now().uptimeNanoseconds
            guard first == 1 else { return first }
            let rest = source.read(into: UnsafeMutableRawBufferPointer(rebasing: p[1...]))
            return rest < 0 ? rest : 1 + rest
        }
        if got < 0 { readError.withLock { $0 = "read error: \(errnoText(errno))" } }
        guard got == frameBytes else { return nil }
        let i = index.add(1, ordering: .relaxed).oldValue
        return LiveFrame(pixels: pixels, width: geometry.width, height: geometry.height, index: i,
                         time: Double(i) / (geometry.fps ?? 25),
                         decodeNanoseconds: DispatchTime.now().uptimeNanoseconds - start)
    }

    func stop() {
        stopSignal.set()
        decoder.end()
    }

    /// After the last frame: ffmpeg reaped, and why the source ended early (nil: its end, or stopped).
    func failure(input: String) -> String? {
        decoder.end()
        if stopSignal.isSet { return nil }
        if let error = readError.withLock({ $0 }) { return "\(input): \(error)" }
        return decoder.problem().map { "\(input): \($0)" }
    }
}
