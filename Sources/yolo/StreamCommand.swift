import Dispatch
import Foundation
import YOLO
import YOLOImage
import YOLOStream

enum StreamCommand {
    static let usage = """
    Usage:   yolo stream [options] --input SOURCE | --raw WIDTHxHEIGHT
    Example: yolo stream --input clip.mp4 > detections.jsonl
             yolo stream --input clip.mp4 --output annotated.mp4 --smooth 3
             yolo stream --input /dev/video0 --classes person --output - | ffplay -f rawvideo -pixel_format rgb24 -video_size 640x480 -
             ffmpeg -i clip.mp4 -f rawvideo -pix_fmt rgb24 - | yolo stream --raw 640x360 --fps 30

    Detects objects in every frame of a video with YOLOv3-tiny: one JSON line per frame, in
    frame order. Frames are read and decoded by ffmpeg (a subprocess), detected by several
    detectors sharing one model, and drawn and encoded, all at once.

    Input:
      --input SOURCE   anything ffmpeg opens: a file, a device (/dev/video0), a URL (rtsp://...)
      --raw WxH        raw rgb24 frames on stdin (as 'ffmpeg ... -f rawvideo -pix_fmt rgb24 -' writes)
      --fps F          frame rate of --raw input (frame times are index / F), default 25
      --scale WxH      have ffmpeg scale the frames to WxH first (--input only)
      --live           a live source: drop stale frames (newest wins) instead of falling behind;
                       default for devices and URLs; files and stdin are processed frame by frame
    Detection:
      --cfg F, --weights F, --names F   as for 'yolo detect'
      --thresh T       report a (box, class) when its confidence > T, default 0.25
      --nms T          NMS IoU threshold, default 0.45
      --agnostic       NMS across classes
      --classes LIST   only these classes: names or indices, comma-separated (e.g. person,car)
      --sessions N     detectors working at once (1 thread each), default the number of cores (\(ProcessInfo.processInfo.activeProcessorCount) here)
      --smooth N       average each tracked box over its last N frames, default 1 (none)
    Output:
      --output PATH    annotated video, encoded by ffmpeg (format from the extension); written
                       to a temporary name and renamed into place at the end
      --output -       annotated raw rgb24 frames on stdout (JSON then goes to stderr)
      --json FILE      JSON lines to FILE instead of stdout
      --no-stats       no statistics on stderr (default: once a second, and a summary at the end)
      -h, --help       show this help

    JSON, one line per frame: {"frame", "time" (s, index / fps), "skipped": [indices of frames
    dropped before this one (live only)], "width", "height", "inference_ms", "latency_ms" (frame
    read to result), "timing_ms": {"decode", "preprocess", "inference", "postprocess"},
    "detections": [as 'yolo detect --json', plus "track": the object's track id]}.
    Exit status: 0 at the end of the input, on SIGINT (after the frames in flight) or when the
    reader of stdout goes away; 1 when ffmpeg is missing, the input cannot be opened or a frame
    fails; 64 usage error.
    """

    static func run(_ args: [String]) throws -> Int32 {
        let a = try Arguments(args, options: ["cfg", "weights", "names", "thresh", "nms", "input", "raw", "fps", "scale",
                                              "classes", "sessions", "smooth", "output", "json"],
                              flags: ["agnostic", "live", "no-stats", "help"], short: ["h": "help"])
        if a.has("help") { print(usage); return 0 }
        guard a.positionals.isEmpty else { throw UsageError("stream takes no positional arguments (use --input SOURCE)") }
        let input = a.string("input"), raw = a.string("raw")
        guard (input == nil) != (raw == nil) else { throw UsageError("stream needs one of --input SOURCE or --raw WIDTHxHEIGHT") }
        if let input, input.isEmpty { throw UsageError("--input needs a source") }
        var rawSize: (Int, Int)? = nil
        if let raw {
            guard let s = parseSize(raw) else { throw UsageError("--raw \(raw): expected WIDTHxHEIGHT, e.g. 640x480") }
            rawSize = s
        }
        var scale: (Int, Int)? = nil
        if let s = a.string("scale") {
            guard input != nil else { throw UsageError("--scale needs --input (scale raw frames with ffmpeg before the pipe)") }
            guard let size = parseSize(s) else { throw UsageError("--scale \(s): expected WIDTHxHEIGHT, e.g. 640x360") }
            scale = size
        }
        var fps: Double? = nil
        if let f = a.string("fps") {
            guard let v = Double(f), v > 0, v.isFinite else { throw UsageError("--fps \(f): expected a positive number") }
            fps = v
        }
        var detectorOptions = DetectorOptions()
        detectorOptions.threshold = try a.float("thresh", default: 0.25, range: 0...1)
        detectorOptions.nmsThreshold = try a.float("nms", default: 0.45, range: 0...1)
        detectorOptions.classAgnostic = a.has("agnostic")
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let sessions = try a.int("sessions", default: cores, range: 1...256)
        let smooth = try a.int("smooth", default: 1, range: 1...1000)
        let output = a.string("output")
        if let output, output.isEmpty { throw UsageError("--output needs a file name (or - for stdout)") }
        let jsonPath = a.string("json")
        if let jsonPath, jsonPath.isEmpty || jsonPath == "-" && output == "-" {
            throw UsageError("--json needs a file name (stdout carries the frames with --output -)")
        }
        let live = a.has("live") || input.map(isLiveSource) ?? false
        let stats = !a.has("no-stats")

        // ffmpeg first: its absence is the likeliest problem and the quickest to report.
        var ffmpeg: String? = nil
        if input != nil || (output != nil && output != "-") {
            guard let path = findExecutable("ffmpeg") else {
                printError("yolo: ffmpeg: not found in PATH; 'yolo stream' reads and writes video with ffmpeg (e.g. apt-get install ffmpeg)")
                return 1
            }
            ffmpeg = path
        }

        let cfg = a.string("cfg") ?? defaultCfg, weights = a.string("weights") ?? defaultWeights
        let namesPath = a.string("names") ?? defaultNames
        let model = try Model(cfgPath: cfg, weightsPath: weights)
        let names = try Detector.readClassNames(path: namesPath)
        let classCount = model.heads.first?.classes ?? 0
        if names.count < classCount {
            throw YOLOError.invalidArgument("\(namesPath): has \(names.count) class names, but \(cfg) has \(classCount) classes")
        }
        if let list = a.string("classes") {
            var filter = Set<Int>()
            for item in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !item.isEmpty {
                if let i = Int(item), (0..<classCount).contains(i) { filter.insert(i) }
                else if let i = names.prefix(classCount).firstIndex(of: item) { filter.insert(i) }
                else { throw UsageError("--classes: '\(item)' is neither a class name in \(namesPath) nor an index in 0..<\(classCount)") }
            }
            guard !filter.isEmpty else { throw UsageError("--classes needs at least one class") }
            detectorOptions.classFilter = filter
        }

        signal(SIGPIPE, SIG_IGN)
        let stop = StopFlag()

        // The source: ffmpeg's stdout or our stdin.
        var decoder: Process? = nil
        var decoderLog: ProcessLog? = nil
        let sourceFD: Int32
        let width: Int, height: Int
        var frameRate = fps ?? 25
        if let input, let ffmpeg {
            var argv = ["-hide_banner", "-nostdin", "-nostats", "-loglevel", "info", "-i", input]
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
                printError("yolo: \(ffmpeg): cannot run: \(error.localizedDescription)")
                return 1
            }
            let log = ProcessLog(fd: err.fileHandleForReading.fileDescriptor)
            log.start()
            guard let geometry = log.waitForGeometry() else {
                p.waitUntilExit()
                log.waitForEnd()
                printError("yolo: \(input): cannot open with ffmpeg: \(log.errorSummary(input: input))")
                return 1
            }
            (width, height) = (geometry.width, geometry.height)
            if fps == nil { frameRate = geometry.fps ?? 25 }
            decoder = p
            decoderLog = log
            sourceFD = out.fileHandleForReading.fileDescriptor
        } else {
            (width, height) = rawSize!
            sourceFD = 0
        }
        let sourceName = input ?? "stdin"

        // SIGINT: stop reading, finish the frames in flight, close the outputs properly.
        signal(SIGINT, SIG_IGN)
        let sigint = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        sigint.setEventHandler { [decoder] in
            stop.set()
            if let decoder, decoder.isRunning { decoder.interrupt() }
        }
        sigint.resume()

        var pipelineOptions = FramePipelineOptions(sessions: sessions, threadsPerSession: 1, dropStale: live,
                                                   smoothing: smooth)
        pipelineOptions.maxInFlight = live ? sessions + 1 : 2 * sessions
        let pipeline = try FramePipeline(model: model, classNames: names, detectorOptions: detectorOptions,
                                         options: pipelineOptions)

        // Outputs.
        var encoder: Process? = nil
        var encoderFD: Int32 = -1
        var encoderInput: FileHandle? = nil
        var temporaryOutput: String? = nil
        if let output, output != "-", let ffmpeg {
            let dir = (output as NSString).deletingLastPathComponent
            let name = (output as NSString).lastPathComponent
            let ext = (name as NSString).pathExtension
            let tmp = (dir.isEmpty ? "" : dir + "/") + ".\((name as NSString).deletingPathExtension).partial-\(getpid())"
                + (ext.isEmpty ? "" : "." + ext)
            var argv = ["-hide_banner", "-nostats", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24",
                        "-s", "\(width)x\(height)", "-r", formatRate(frameRate), "-i", "-"]
            if ["mp4", "mov", "m4v", "mkv", "webm"].contains(ext.lowercased()) && width % 2 == 0 && height % 2 == 0 {
                argv += ["-pix_fmt", "yuv420p"]
            }
            argv.append(tmp)
            let p = Process()
            p.executableURL = URL(fileURLWithPath: ffmpeg)
            p.arguments = argv
            let pipe = Pipe()
            p.standardInput = pipe
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.standardError
            do { try p.run() } catch {
                printError("yolo: \(ffmpeg): cannot run: \(error.localizedDescription)")
                decoder?.terminate()
                return 1
            }
            encoder = p
            encoderInput = pipe.fileHandleForWriting
            encoderFD = pipe.fileHandleForWriting.fileDescriptor
            temporaryOutput = tmp
        }
        let framesFD: Int32 = output == "-" ? 1 : encoderFD
        var jsonFD: Int32 = output == "-" ? 2 : 1
        if let jsonPath {
            jsonFD = open(jsonPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard jsonFD >= 0 else {
                printError("yolo: \(jsonPath): cannot write: \(String(cString: strerror(errno)))")
                decoder?.terminate(); encoder?.terminate()
                return 1
            }
        }

        // Reader: frames from the source into the pipeline, on a thread of its own.
        let reader = FrameReader(fd: sourceFD, width: width, height: height, fps: frameRate, pipeline: pipeline, stop: stop)
        let readerDone = DispatchSemaphore(value: 0)
        let readerThread = Thread { reader.run(); readerDone.signal() }
        readerThread.stackSize = 1 << 20
        readerThread.start()

        // Consumer: in frame order, tracker (in the pipeline), JSON, drawing, encoding, statistics.
        var failed = false
        var outputBroken = false
        var statistics = StreamStatistics(enabled: stats)
        while let result = pipeline.next() {
            let frame = result.frame
            if let error = result.error {
                printError("yolo: \(sourceName): frame \(frame.index): \(error)")
                failed = true
                continue
            }
            var drawNanoseconds: UInt64 = 0
            if framesFD >= 0 && !outputBroken {
                let start = DispatchTime.now().uptimeNanoseconds
                var pixels = frame.pixels
                let labels = result.tracked.map { "#\($0.trackID) \(labelFor($0.detection))" }
                pixels.withUnsafeMutableBytes { p in
                    drawDetections(result.tracked.map(\.detection), labels: labels, into: p, width: frame.width,
                                   height: frame.height, rowStride: frame.rowStride, format: frame.format,
                                   classCount: classCount)
                }
                drawNanoseconds = DispatchTime.now().uptimeNanoseconds - start
                if !writeAll(framesFD, pixels) {
                    outputBroken = true
                    if output == "-" {
                        stop.set()  // the reader of stdout went away: a clean stop
                        decoder?.interrupt()
                    } else if !stop.isSet {
                        printError("yolo: \(output!): ffmpeg stopped taking frames (see its message above)")
                        failed = true
                        stop.set()
                        decoder?.interrupt()
                    }
                }
            }
            let latency = Double(DispatchTime.now().uptimeNanoseconds &- reader.readyTime(of: frame)) / 1e6
            let line = frameJSON(result, latencyMilliseconds: latency) + "\n"
            if !writeAll(jsonFD, Array(line.utf8)) {
                if jsonFD == 1 && !stop.isSet { stop.set(); decoder?.interrupt() }  // e.g. '| head -3'
                else if jsonFD != 1 && !stop.isSet {
                    printError("yolo: \(jsonPath ?? "stderr"): cannot write: \(String(cString: strerror(errno)))")
                    failed = true; stop.set(); decoder?.interrupt()
                }
            }
            statistics.add(result, drawNanoseconds: drawNanoseconds, skippedTotal: pipeline.skippedCount)
        }
        readerDone.wait()
        let trailing = pipeline.trailingSkipped
        if !trailing.isEmpty {
            _ = writeAll(jsonFD, Array("{\"skipped\": [\(trailing.map(String.init).joined(separator: ", "))]}\n".utf8))
        }
        statistics.finish(skippedTotal: pipeline.skippedCount)
        if let error = reader.error {
            printError("yolo: \(sourceName): \(error)")
            failed = true
        }

        // The decoder: a failure (not one we caused by stopping it) is an error.
        if let decoder {
            // Nobody reads ffmpeg's output any more: closing the pipe ends it if it is still
            // writing (SIGINT alone does not interrupt a blocked write).
            if decoder.isRunning { close(sourceFD) }
            if stop.isSet && decoder.isRunning { decoder.terminate() }
            decoder.waitUntilExit()
            decoderLog?.waitForEnd()
            if decoder.terminationStatus != 0 && !stop.isSet {
                printError("yolo: \(input!): ffmpeg failed: \(decoderLog?.errorSummary(input: input!) ?? "exit \(decoder.terminationStatus)")")
                failed = true
            }
        }
        if let encoder, let tmp = temporaryOutput, let output {
            try? encoderInput?.close()
            encoder.waitUntilExit()
            if (encoder.terminationStatus == 0 || stop.isSet) && FileManager.default.fileExists(atPath: tmp) && !failed {
                if rename(tmp, output) != 0 {
                    printError("yolo: \(output): cannot rename \(tmp) into place: \(String(cString: strerror(errno)))")
                    failed = true
                }
            } else {
                if encoder.terminationStatus != 0 {
                    printError("yolo: \(output): ffmpeg could not encode the video (exit \(encoder.terminationStatus))")
                }
                unlink(tmp)
                failed = true
            }
        }
        if jsonFD > 2 { close(jsonFD) }
        return failed ? 1 : 0
    }

    static func labelFor(_ d: Detection) -> String {
        d.confidence.isNaN ? d.className : "\(d.className) \(Int((min(max(d.confidence, 0), 1) * 100).rounded()))%"
    }

    /// "640x480" -> (640, 480).
    static func parseSize(_ s: String) -> (Int, Int)? {
        let parts = s.lowercased().split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0, w <= 1 << 15, h <= 1 << 15
        else { return nil }
        return (w, h)
    }

    /// Devices and network URLs are live; files and pipes are not.
    static func isLiveSource(_ input: String) -> Bool {
        if input.hasPrefix("/dev/") && input != "/dev/stdin" { return true }
        let schemes = ["rtsp", "rtsps", "rtmp", "rtmps", "rtp", "udp", "tcp", "srt", "http", "https", "mms", "v4l2"]
        if let colon = input.firstIndex(of: ":"), schemes.contains(input[..<colon].lowercased()) { return true }
        return false
    }

    static func formatRate(_ fps: Double) -> String { String(format: "%.6g", fps) }

    /// The path of `name` in PATH, if executable there.
    static func findExecutable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for dir in path.split(separator: ":") where !dir.isEmpty {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// One frame's JSON line (without the newline).
    static func frameJSON(_ r: FrameResult, latencyMilliseconds: Double) -> String {
        func ms(_ ns: UInt64) -> String { jsonNumber(Double(ns) / 1e6, decimals: 3) }
        let f = r.frame
        let items = r.tracked.map { t in
            let d = t.detection
            return "{\"class\": \(jsonString(d.className)), \"class_index\": \(d.classIndex), "
                + "\"confidence\": \(jsonNumber(d.confidence)), \"objectness\": \(jsonNumber(d.objectness)), "
                + "\"box\": {\"left\": \(jsonNumber(d.left)), \"top\": \(jsonNumber(d.top)), "
                + "\"right\": \(jsonNumber(d.right)), \"bottom\": \(jsonNumber(d.bottom))}, "
                + "\"rel\": [\(jsonNumber(d.x)), \(jsonNumber(d.y)), \(jsonNumber(d.width)), \(jsonNumber(d.height))], "
                + "\"box_index\": \(d.boxIndex), \"track\": \(t.trackID)}"
        }
        return "{\"frame\": \(f.index), \"time\": \(jsonNumber(f.time, decimals: 6)), "
            + "\"skipped\": [\(r.skipped.map(String.init).joined(separator: ", "))], "
            + "\"width\": \(f.width), \"height\": \(f.height), "
            + "\"inference_ms\": \(ms(r.timing.inference)), \"latency_ms\": \(jsonNumber(latencyMilliseconds, decimals: 3)), "
            + "\"timing_ms\": {\"decode\": \(ms(f.decodeNanoseconds)), \"preprocess\": \(ms(r.timing.preprocess)), "
            + "\"inference\": \(ms(r.timing.inference)), \"postprocess\": \(ms(r.timing.postprocess))}, "
            + "\"detections\": [\(items.joined(separator: ", "))]}"
    }
}

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

/// Set once, read from any thread.
final class StopFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.lock(); value = true; lock.unlock() }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
}

/// Reads rgb24 frames from a file descriptor into the pipeline until end of input or stop.
final class FrameReader: @unchecked Sendable {
    let fd: Int32, width: Int, height: Int, fps: Double
    let pipeline: FramePipeline
    let stop: StopFlag
    private let lock = NSLock()
    /// When each frame in flight finished reading (by index), for latency.
    private var readyTimes: [Int: UInt64] = [:]
    private(set) var error: String?

    init(fd: Int32, width: Int, height: Int, fps: Double, pipeline: FramePipeline, stop: StopFlag) {
        self.fd = fd; self.width = width; self.height = height; self.fps = fps
        self.pipeline = pipeline; self.stop = stop
    }

    func readyTime(of frame: VideoFrame) -> UInt64 {
        lock.lock(); defer { lock.unlock() }
        // Forget this frame and any older ones (skipped frames never come back).
        let t = readyTimes[frame.index] ?? DispatchTime.now().uptimeNanoseconds
        readyTimes = readyTimes.filter { $0.key > frame.index }
        return t
    }

    func run() {
        let frameBytes = width * height * 3
        var index = 0
        defer { pipeline.finish() }
        while !stop.isSet {
            var pixels = [UInt8](repeating: 0, count: frameBytes)
            let start = DispatchTime.now().uptimeNanoseconds
            let got = pixels.withUnsafeMutableBytes { readFull(into: $0) }
            if got < 0 { error = "read error: \(String(cString: strerror(errno)))"; return }
            if got < frameBytes {
                if got > 0 && !stop.isSet {
                    printError("yolo: warning: ignoring a partial frame of \(got) bytes at the end (a frame is \(width)x\(height)x3 = \(frameBytes) bytes)")
                }
                return
            }
            let now = DispatchTime.now().uptimeNanoseconds
            let frame = VideoFrame(index: index, time: Double(index) / fps, pixels: pixels, width: width, height: height,
                                   format: .rgb, decodeNanoseconds: now - start)
            lock.lock()
            readyTimes[index] = now
            if readyTimes.count > 4096 { readyTimes = readyTimes.filter { $0.key > index - 1024 } }  // stays bounded
            lock.unlock()
            if !pipeline.submit(frame) { return }
            index += 1
        }
    }

    /// Reads up to `buffer.count` bytes, waiting (and checking `stop`) as needed: the count
    /// read (less at end of input or when stopped), or -1 on an error.
    private func readFull(into buffer: UnsafeMutableRawBufferPointer) -> Int {
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
}

/// Collects an ffmpeg's stderr: finds the output video's size and rate, keeps the last lines
/// for error messages.
final class ProcessLog: @unchecked Sendable {
    struct Geometry { var width: Int; var height: Int; var fps: Double? }
    let fd: Int32
    private let condition = NSCondition()
    private var lines: [String] = []
    private var geometry: Geometry?
    private var inOutput = false
    private var ended = false

    init(fd: Int32) { self.fd = fd }

    func start() {
        let t = Thread { self.run() }
        t.stackSize = 1 << 20
        t.start()
    }

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var line: [UInt8] = []
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, 4096) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            for b in buffer[0..<n] {
                if b == 10 || b == 13 {
                    if !line.isEmpty { add(String(decoding: line, as: UTF8.self)) }
                    line.removeAll(keepingCapacity: true)
                } else if line.count < 4096 {
                    line.append(b)
                }
            }
        }
        if !line.isEmpty { add(String(decoding: line, as: UTF8.self)) }
        condition.lock(); ended = true; condition.broadcast(); condition.unlock()
    }

    private func add(_ text: String) {
        condition.lock()
        defer { condition.unlock() }
        lines.append(text)
        if lines.count > 40 { lines.removeFirst(lines.count - 40) }
        if text.hasPrefix("Output #0") { inOutput = true }
        if inOutput && geometry == nil && text.contains("Stream #") && text.contains("Video:") {
            geometry = Self.parseGeometry(text)
            condition.broadcast()
        }
    }

    static func parseGeometry(_ text: String) -> Geometry? {
        let ns = text as NSString
        guard let sizeRE = try? NSRegularExpression(pattern: ", ([0-9]+)x([0-9]+)[, \\[]"),
              let m = sizeRE.firstMatch(in: text, range: NSRange(location: 0, length: ns.length)),
              let w = Int(ns.substring(with: m.range(at: 1))), let h = Int(ns.substring(with: m.range(at: 2))) else { return nil }
        var fps: Double? = nil
        if let fpsRE = try? NSRegularExpression(pattern: "([0-9.]+)(k?) (fps|tbr)"),
           let f = fpsRE.firstMatch(in: text, range: NSRange(location: 0, length: ns.length)),
           let v = Double(ns.substring(with: f.range(at: 1))) {
            fps = ns.substring(with: f.range(at: 2)) == "k" ? v * 1000 : v
        }
        return Geometry(width: w, height: h, fps: fps)
    }

    /// The output video's geometry, or nil when ffmpeg ended before announcing it.
    func waitForGeometry() -> Geometry? {
        condition.lock()
        defer { condition.unlock() }
        while geometry == nil && !ended { condition.wait() }
        return geometry
    }

    func waitForEnd() {
        condition.lock()
        while !ended { condition.wait() }
        condition.unlock()
    }

    /// ffmpeg's last message, without the input's name when it starts with it.
    func errorSummary(input: String) -> String {
        condition.lock()
        defer { condition.unlock() }
        let useful = lines.filter { !$0.hasPrefix(" ") && !$0.hasPrefix("Input #") && !$0.hasPrefix("Output #") }
        guard var last = useful.last ?? lines.last else { return "ffmpeg gave no message" }
        if last.hasPrefix(input + ": ") { last.removeFirst(input.count + 2) }
        return last
    }
}

/// Live statistics on stderr, once a second, and a summary at the end.
struct StreamStatistics {
    let enabled: Bool
    private let start = DispatchTime.now().uptimeNanoseconds
    private var lastPrint = DispatchTime.now().uptimeNanoseconds
    private var frames = 0, totalFrames = 0
    private var decode: UInt64 = 0, preprocess: UInt64 = 0, inference: UInt64 = 0, postprocess: UInt64 = 0, draw: UInt64 = 0
    private var lastIndex = -1
    private var lastTime = 0.0

    init(enabled: Bool) { self.enabled = enabled }

    mutating func add(_ r: FrameResult, drawNanoseconds: UInt64, skippedTotal: Int) {
        frames += 1; totalFrames += 1
        decode += r.frame.decodeNanoseconds
        preprocess += r.timing.preprocess; inference += r.timing.inference; postprocess += r.timing.postprocess
        draw += drawNanoseconds
        lastIndex = r.frame.index
        lastTime = r.frame.time
        let now = DispatchTime.now().uptimeNanoseconds
        if now - lastPrint >= 1_000_000_000 {
            report(now: now, skippedTotal: skippedTotal)
        }
    }

    private mutating func report(now: UInt64, skippedTotal: Int) {
        defer {
            lastPrint = now
            frames = 0; decode = 0; preprocess = 0; inference = 0; postprocess = 0; draw = 0
        }
        guard enabled, frames > 0 else { return }
        let seconds = Double(now - lastPrint) / 1e9
        let n = Double(frames)
        func ms(_ ns: UInt64) -> String { String(format: "%.1f", Double(ns) / n / 1e6) }
        printError("yolo: stream: frame \(lastIndex) time \(String(format: "%.3f", lastTime))s: "
                   + "\(String(format: "%.1f", n / seconds)) fps; per frame: decode \(ms(decode)) ms, "
                   + "preprocess \(ms(preprocess)) ms, inference \(ms(inference)) ms, postprocess \(ms(postprocess)) ms, "
                   + "draw \(ms(draw)) ms; skipped \(skippedTotal)")
    }

    mutating func finish(skippedTotal: Int) {
        let now = DispatchTime.now().uptimeNanoseconds
        report(now: now, skippedTotal: skippedTotal)
        guard enabled else { return }
        let seconds = Double(now - start) / 1e9
        printError("yolo: stream: done: \(totalFrames) frames (last frame \(lastIndex), time \(String(format: "%.3f", lastTime))s), "
                   + "\(skippedTotal) skipped, in \(String(format: "%.2f", seconds)) s: "
                   + "\(String(format: "%.2f", Double(totalFrames) / max(seconds, 1e-9))) fps")
    }
}
