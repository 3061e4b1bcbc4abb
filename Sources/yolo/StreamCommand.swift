// `yolo stream`: the run from start to end (options, stop signals, source, outputs, the loop in
// frame order, the ending of ffmpeg children on every path).
import Dispatch
import Foundation
import YOLO
import YOLOImage
import YOLOStream

/// `yolo stream`: the run from start to end. Options are checked (StreamOptions), the stop
/// signals installed before any child starts, then the source opened (StreamSource), the
/// outputs opened (StreamSink), and the loop takes results in frame order: JSON, drawing,
/// encoding, statistics. Every exit path ends and reaps the ffmpeg children (StreamCleanup).
enum StreamCommand {
    static func run(_ args: [String]) throws -> Int32 {
        let options = try StreamOptions(args)
        if options.help { print(StreamOptions.usage); return 0 }
        try options.checkOutputs()

        // ffmpeg first: its absence is the likeliest problem and the quickest to report.
        var ffmpeg: String? = nil
        if options.input != nil || options.encodesVideo {
            guard let path = findExecutable("ffmpeg") else {
                printError("yolo: ffmpeg: not found in PATH; 'yolo stream' reads and writes video with ffmpeg (e.g. apt-get install ffmpeg)")
                return 1
            }
            ffmpeg = path
        }

        // Signals from here on stop the run in order (one that comes while the model loads
        // ends it right after).
        signal(SIGPIPE, SIG_IGN)
        let stop = StopSignal(), cleanup = StreamCleanup()
        try StopSignals.handle(stop: stop, cleanup: cleanup)
        defer { cleanup.endAll() }

        let loaded = try options.detection.load(threads: options.threadsPerSession)
        return try StreamRun(options: options, ffmpeg: ffmpeg, loaded: loaded, stop: stop, cleanup: cleanup).run()
    }

    /// The path of `name` in PATH, if executable there.
    static func findExecutable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for dir in path.split(separator: ":") where !dir.isEmpty {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}

/// One run of `yolo stream`, once the model is loaded.
struct StreamRun {
    let options: StreamOptions
    let ffmpeg: String?
    let loaded: DetectionOptions.Loaded
    let stop: StopSignal
    let cleanup: StreamCleanup

    func run() throws -> Int32 {
        if stop.isSet { return 0 }
        // The source: ffmpeg's stdout or our stdin.
        var decoder: FFmpegDecoder? = nil
        let width: Int, height: Int
        var frameRate = options.fps ?? 25
        if let input = options.input, let ffmpeg {
            switch try FFmpegDecoder.start(ffmpeg: ffmpeg, input: input, scale: options.scale, stop: stop, cleanup: cleanup) {
            case .stopped:
                return 0
            case .failed(let why):
                printError("yolo: \(input): cannot open with ffmpeg: \(why)")
                return 1
            case .running(let d, let geometry):
                decoder = d
                (width, height) = (geometry.width, geometry.height)
                if options.fps == nil { frameRate = geometry.fps ?? 25 }
            }
        } else {
            (width, height) = options.raw!
        }
        let sourceName = options.input ?? "stdin"
        if stop.isSet { decoder?.end(); return 0 }

        if let problem = StreamOptions.frameSizeProblem((width, height)) {
            printError("yolo: \(sourceName): \(problem)")
            decoder?.end()
            return 1
        }

        var pipelineOptions = FramePipelineOptions(sessions: options.sessions, threadsPerSession: options.threadsPerSession,
                                                   dropStale: options.live, smoothing: options.smooth)
        pipelineOptions.maxInFlight = options.live ? options.sessions + 1 : 2 * options.sessions
        let pipeline = try FramePipeline(model: loaded.model, classNames: loaded.classNames, detectorOptions: loaded.detector,
                                         options: pipelineOptions)

        // Outputs.
        var encoder: VideoEncoder? = nil
        if options.encodesVideo, let output = options.output, let ffmpeg {
            encoder = try VideoEncoder(ffmpeg: ffmpeg, output: output, width: width, height: height, fps: frameRate,
                                       cleanup: cleanup)
        }
        let rawFramesOut = options.output == "-"
        let json = try JSONLines(path: options.json, standardFD: rawFramesOut ? 2 : 1)
        defer { json.close() }

        // Reader: frames from the source into the pipeline, on a thread of its own.
        let reader = try FrameReader(fd: decoder?.frames ?? 0, width: width, height: height, fps: frameRate,
                                     pipeline: pipeline, stop: stop)
        let readerDone = DispatchSemaphore(value: 0)
        reader.start(done: readerDone)

        // Consumer: in frame order, tracker (in the pipeline), JSON, drawing, encoding, statistics.
        var failed = false
        var videoStopped = false
        var statistics = StreamStatistics(enabled: options.stats)
        while let result = pipeline.next() {
            let frame = result.frame
            if let error = result.error {
                printError("yolo: \(sourceName): frame \(frame.index): \(error)")
                failed = true
                continue
            }
            var drawNanoseconds: UInt64 = 0
            if (encoder != nil || rawFramesOut) && !videoStopped {
                let start = DispatchTime.now().uptimeNanoseconds
                var pixels = frame.pixels
                let boxes = result.boxes.map { FrameBox(detections: $0.detections, prefix: "#\($0.trackID) ") }
                pixels.withUnsafeMutableBytes { p in
                    drawBoxes(boxes, into: p, width: frame.width, height: frame.height, rowStride: frame.rowStride,
                              format: frame.format, classCount: loaded.classCount)
                }
                drawNanoseconds = DispatchTime.now().uptimeNanoseconds - start
                if !(encoder?.write(pixels) ?? writeAll(1, pixels)) {
                    // The reader of stdout went away (a clean stop), or ffmpeg failed (said below).
                    videoStopped = true
                    if encoder != nil { failed = true }
                    stop.set()
                }
            }
            let latency = Double(DispatchTime.now().uptimeNanoseconds &- reader.readyTime(of: frame)) / 1e6
            if !json.write(StreamCommand.frameJSON(result, latencyMilliseconds: latency)) && !stop.isSet {
                // A reader that went away ('| head -3', a FIFO's reader) is a clean stop.
                if errno != EPIPE {
                    printError("yolo: \(options.json ?? "stdout"): cannot write: \(errnoText(errno))")
                    failed = true
                }
                stop.set()
            }
            statistics.add(result, drawNanoseconds: drawNanoseconds, skippedTotal: pipeline.skippedCount)
        }
        readerDone.wait()
        let trailing = pipeline.trailingSkipped
        if !trailing.isEmpty {
            _ = json.write("{\"skipped\": [\(trailing.map(String.init).joined(separator: ", "))]}")
        }
        statistics.finish(skippedTotal: pipeline.skippedCount)
        if let error = pipeline.sourceError {
            printError("yolo: \(sourceName): \(error)")
            failed = true
        }

        // The decoder: a failure or damage it reported (not what stopping it caused) is an error.
        var sourceProblem: String? = nil
        if let decoder {
            let stopped = stop.isSet
            decoder.end(patience: stopped ? 0 : 10)
            if !stopped { sourceProblem = decoder.problem() }
        }
        if let sourceProblem {
            printError("yolo: \(sourceName): \(sourceProblem)")
            failed = true
        } else if reader.partialFrameBytes.load(ordering: .relaxed) > 0 {
            let bytes = width * height * 3
            printError("yolo: warning: ignoring a partial frame of \(reader.partialFrameBytes.load(ordering: .relaxed)) bytes at the end (a frame is \(width)x\(height)x3 = \(bytes) bytes)")
        }
        if let encoder {
            if let problem = encoder.finish(keep: !videoStopped) {
                printError("yolo: \(encoder.output): \(problem)")
                failed = true
            } else if videoStopped {
                printError("yolo: \(encoder.output): ffmpeg stopped taking frames")
                failed = true
            }
        }
        return failed ? 1 : 0
    }
}
