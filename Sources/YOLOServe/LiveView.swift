// The live view's pipeline: a source's frames (newest wins for live sources) detected on a
// session of the shared pool with the sliders' current settings, drawn, encoded as JPEG and
// published with their JSON to every client of the live streams (LiveStreams.swift).
import YOLO
import YOLOCore
import YOLOImage
import YOLOText

/// One RGB frame from the live source.
public struct LiveFrame: Sendable {
    public var pixels: [UInt8]
    public var width: Int
    public var height: Int
    public var index: Int
    /// Seconds since the start of the source.
    public var time: Double
    /// Reading and decoding it took this long.
    public var decodeNanoseconds: UInt64
    public init(pixels: [UInt8], width: Int, height: Int, index: Int, time: Double, decodeNanoseconds: UInt64) {
        self.pixels = pixels; self.width = width; self.height = height
        self.index = index; self.time = time; self.decodeNanoseconds = decodeNanoseconds
    }
}

/// Where live frames come from (`yolo serve --input`: ffmpeg).
public struct LiveSource: Sendable {
    public var name: String
    /// A camera or stream: frames that arrive while the detector is busy are dropped (newest
    /// wins). Otherwise (a file read as fast as it decodes) the source waits for the detector.
    public var dropsStaleFrames: Bool
    /// The next frame, waiting for it; nil at the end or after `stop`.
    public var next: @Sendable () -> LiveFrame?
    /// Ends the source: `next` returns nil soon after. Called once, from any thread.
    public var stop: @Sendable () -> Void
    /// Why the source ended early, if it failed (asked after `next` returned nil).
    public var failure: @Sendable () -> String?
    public init(name: String, dropsStaleFrames: Bool, next: @escaping @Sendable () -> LiveFrame?,
                stop: @escaping @Sendable () -> Void, failure: @escaping @Sendable () -> String?) {
        self.name = name; self.dropsStaleFrames = dropsStaleFrames
        self.next = next; self.stop = stop; self.failure = failure
    }
}

final class LiveView: Sendable {
    let source: LiveSource
    let hub = LiveHub()
    private let pool: DetectorPool
    private let metrics: Metrics
    private let classNames: [String]
    private let classCount: Int
    private let slot: FrameSlot
    private let settings: Locked<DetectorOptions>
    private struct Status { var state = "starting"; var frames = 0; var times: [UInt64] = []; var fps = 0.0 }
    private let status = Locked(Status())
    /// The detection thread, from `start` until `stop` joins it.
    private let worker = Locked<ThreadHandle?>(nil)

    private let limits: ServeLimits

    init(source: LiveSource, pool: DetectorPool, metrics: Metrics, settings: DetectorOptions, limits: ServeLimits = ServeLimits(),
         classNames: [String], classCount: Int) {
        self.source = source
        self.limits = limits
        self.pool = pool
        self.metrics = metrics
        self.settings = Locked(settings)
        self.classNames = classNames
        self.classCount = classCount
        slot = FrameSlot(dropStale: source.dropsStaleFrames)
    }

    func start() {
        guard let reader = startThread(stackSize: 1 << 20, { [self] in
            while let frame = source.next() { if !slot.put(frame) { break } }
            slot.finish()
        }) else {
            status.withLock { $0.state = "failed: could not start a thread" }
            hub.finish()
            return
        }
        let thread = startThread(stackSize: 1 << 20) { [self] in
            status.withLock { $0.state = "running" }
            while let (frame, dropped) = slot.take() { process(frame, dropped: dropped) }
            reader.join()
            let failure = source.failure()
            status.withLock { $0.state = failure.map { "failed: \($0)" } ?? "ended"; $0.fps = 0 }
            hub.finish()
        }
        worker.withLock { $0 = thread }
    }

    /// Closes the source and ends every client's stream.
    func stop() {
        source.stop()
        slot.finish()
        worker.withLock { w in defer { w = nil }; return w }?.join()
        hub.finish()
    }

    private func process(_ frame: LiveFrame, dropped: Int) {
        let options = settings.withLock { $0 }
        let detected = pool.with(urgent: true) { d -> (Result<[Detection], YOLOError>, DetectionTiming) in
            d.options = options
            let result = frame.pixels.withUnsafeBytes { p in
                Result { () throws(YOLOError) in try d.detect(pixels: p, width: frame.width, height: frame.height, format: .rgb) }
            }
            return (result, d.lastTiming)
        }
        let detections = (try? detected.0.get()) ?? []
        let timing = detected.1
        let drawStart = monotonicNanoseconds()
        var pixels = frame.pixels
        pixels.withUnsafeMutableBytes { p in
            drawDetections(detections, into: p, width: frame.width, height: frame.height, format: .rgb, classCount: classCount)
        }
        let encodeStart = monotonicNanoseconds()
        guard let jpeg = try? encodeJPEG(RGBImage(width: frame.width, height: frame.height, pixels: pixels), quality: 80) else { return }
        let done = monotonicNanoseconds()
        let fps = status.withLock { s -> Double in
            s.frames += 1
            s.times.append(done)
            s.times.removeAll { done - $0 > 2_000_000_000 }
            s.fps = s.times.count > 1 ? Double(s.times.count - 1) / (Double(done - s.times[0]) / 1e9) : 0
            return s.fps
        }
        let stages: [(String, UInt64)] = [("decode", frame.decodeNanoseconds), ("preprocess", timing.preprocess),
                                          ("inference", timing.inference), ("postprocess", timing.postprocess),
                                          ("draw", encodeStart - drawStart), ("encode", done - encodeStart)]
        for (stage, ns) in stages {
            metrics.observe("yolo_stage_seconds", "path=\"live\",stage=\"\(stage)\"", seconds: Double(ns) / 1e9)
        }
        metrics.count("yolo_live_frames_total")
        if dropped > 0 { metrics.count("yolo_live_frames_dropped_total", by: UInt64(dropped)) }
        let timingJSON = stages.map { "\"\($0.0)\": \(jsonNumber(Double($0.1) / 1e6, decimals: 3))" }.joined(separator: ", ")
        var json = "{\"frame\": \(frame.index), \"time\": \(jsonNumber(frame.time, decimals: 3)), "
            + "\"fps\": \(jsonNumber(fps, decimals: 2)), \"dropped\": \(dropped), "
            + "\"timing_ms\": {\(timingJSON)}, \"settings\": \(settingsJSON(options))"
        if case .failure(let error) = detected.0 { json += ", \"error\": \(jsonString("\(error)"))" }
        json += ", " + detectionsJSON(image: source.name, width: frame.width, height: frame.height,
                                      inferenceMilliseconds: Double(timing.inference) / 1e6, detections: detections).dropFirst()
        hub.publish(jpeg: jpeg, json: json)
    }

    // MARK: - Settings (the page's sliders)

    func settingsJSON(_ o: DetectorOptions? = nil) -> String {
        let o = o ?? settings.withLock { $0 }
        let classes = o.classFilter.map { "[" + $0.sorted().map { jsonString(className($0)) }.joined(separator: ", ") + "]" } ?? "null"
        return "{\"thresh\": \(jsonNumber(o.threshold)), \"nms\": \(jsonNumber(o.nmsThreshold)), \"classes\": \(classes), "
            + "\"agnostic\": \(o.classAgnostic)}"
    }

    /// The settings with the class names (for the page's class filter): GET and POST /settings.
    func settingsDocument() -> String {
        String(settingsJSON().dropLast()) + ", \"class_names\": ["
            + (0..<classCount).map { jsonString(className($0)) }.joined(separator: ", ") + "]}\n"
    }

    private func className(_ i: Int) -> String { i < classNames.count ? classNames[i] : "class \(i)" }

    /// Applies `thresh`, `nms`, `classes` (empty: all) and `agnostic` from the page; the next
    /// frame uses them. Returns the problem with a value, changing nothing then.
    func apply(_ fields: [String: String]) -> String? {
        var o = settings.withLock { $0 }
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
            switch key {
            case "thresh", "nms":
                guard let v = Float(value), v >= 0, v <= 1 else { return "\(key)=\(value): expected a number in 0...1" }
                if key == "thresh", let refusal = limits.thresholdRefusal(v) { return refusal }
                if key == "thresh" { o.threshold = v } else { o.nmsThreshold = v }
            case "classes":
                if value.allSatisfy({ $0 == " " || $0 == "," }) { o.classFilter = nil; continue }
                do { o.classFilter = try parseClassList(value, names: classNames, classCount: classCount, option: "classes") }
                catch { return error.description }
            case "agnostic":
                o.classAgnostic = ["1", "true", "on", "yes"].contains(value.lowercased())
            case "api_key":
                continue
            default:
                return "unknown setting '\(key)' (known: thresh, nms, classes, agnostic)"
            }
        }
        settings.withLock { $0 = o }
        return nil
    }

    // MARK: - Status

    func statusJSON() -> String {
        let s = status.withLock { $0 }
        return "{\"source\": \(jsonString(source.name)), \"state\": \(jsonString(s.state)), \"frames\": \(s.frames), "
            + "\"fps\": \(jsonNumber(s.fps, decimals: 2)), \"clients\": \(hub.clientCount)}"
    }

    func gauges() -> [(String, String, [(String, Double)])] {
        let s = status.withLock { $0 }
        return [("yolo_live_fps", "Live frames published per second (over the last 2 s).", [("", s.fps)]),
                ("yolo_live_clients", "Clients of the live streams, by stream.",
                 LiveStreamClient.Kind.allCases.map { ("stream=\"\($0.rawValue)\"", Double(hub.clients(of: $0))) })]
    }
}

/// The frame between the source and the detector. Dropping stale frames, a new frame replaces
/// one not yet taken; otherwise `put` waits until the slot is free.
final class FrameSlot: Sendable {
    private struct State {
        var frame: LiveFrame?
        var dropped = 0
        var finished = false
    }
    /// Its one condition: the slot changed (filled, emptied or finished).
    private let state = Locked(State(), conditions: 1)
    let dropStale: Bool

    init(dropStale: Bool) { self.dropStale = dropStale }

    /// False once finished.
    func put(_ f: LiveFrame) -> Bool {
        let put = state.withLock(until: { [dropStale] in dropStale || $0.frame == nil || $0.finished }) { s in
            if s.finished { return false }
            if s.frame != nil { s.dropped += 1 }
            s.frame = f
            return true
        }
        if put { state.broadcast() }
        return put
    }

    /// The newest frame and how many were dropped before it; nil when finished and empty.
    func take() -> (LiveFrame, Int)? {
        let taken = state.withLock(until: { $0.frame != nil || $0.finished }) { s -> (LiveFrame, Int)? in
            guard let f = s.frame else { return nil }
            s.frame = nil
            defer { s.dropped = 0 }
            return (f, s.dropped)
        }
        if taken != nil { state.broadcast() }
        return taken
    }

    func finish() {
        state.withLock { $0.finished = true }
        state.broadcast()
    }
}
