// `yolo serve`: its options and help, the model and the live source (ffmpeg), and the run until
// SIGINT or SIGTERM (the server itself is the YOLOServe module).
import Dispatch
import Foundation
import YOLO
import YOLOServe
import YOLOText

enum ServeCommand {
    static let usage = """
    Usage:   yolo serve [options]
    Example: yolo serve
             yolo serve --listen 0.0.0.0:8080 --api-key-file key.txt
             yolo serve --input /dev/video0 --classes person,car
             yolo serve --input clip.mp4 --loop

    Serves the detector over HTTP: DeepStack's object detection API (what Frigate, Home
    Assistant, Blue Iris and Agent DVR call), our own POST /detect (the JSON of 'yolo detect
    --json'), /health, /metrics (Prometheus), and with --input a live view in the browser at /.

    Endpoints:
      POST /v1/vision/detection      multipart 'image', optional 'min_confidence', 'api_key'
      POST /v1/vision/custom/NAME    the same; NAME is --model-name
      GET, POST /v1/vision/custom/list   {"success": true, "models": [NAME]}
      POST /detect                   the image as the body (or a form field 'image'); query
                                     thresh, nms, classes, agnostic, max_det, name
      GET  /  /video.mjpg  /events  /detections.ndjson  /settings   (live view, with --input)
      GET  /health  /metrics

    Listening:
      --listen ADDR:PORT  default 127.0.0.1:8080 (loopback only); [::1]:8080 for IPv6,
                       0.0.0.0:8080 for every interface; port 0 takes any free port
      --api-key-file F require the key in file F (its first line): DeepStack's api_key field,
                       'Authorization: Bearer KEY' or ?api_key=KEY; /health and the page's own
                       files stay open. Or $YOLO_API_KEY; --api-key KEY too, but any local user
                       sees a command line (ps)
      --allow-host N   also answer requests for host name N (the Host header; repeatable; * for
                       any). Default: on loopback only localhost, 127.x and [::1]; on another
                       address that address; on 0.0.0.0 or :: any. Another site's page may not
                       POST here (Origin)
    Model and detection (requests may change thresh, nms, classes, agnostic, max_det):
    \(DetectionOptions.help(threads: "threads per detector, default the cores divided among the sessions"))
      --no-exif        ignore images' EXIF orientation (as Darknet does), default: apply it
      --model-name N   the model's name for /v1/vision/custom/N, default the cfg's file name
                       without extension
      --sessions N     detectors sharing the model, default the number of cores (\(MachineCores.available) here)
      --queue N        requests that may wait for a detector, default 16; beyond, 503 + Retry-After
    Live view:
      --input SOURCE   anything ffmpeg opens: a file, /dev/video0, rtsp://...
      --scale WxH      have ffmpeg scale the frames first
      --loop           play a file again and again
      --no-realtime    read a file as fast as the detector goes (default: at its frame rate)
      --live           a live source (newest frame wins); default for devices and URLs
    Limits:
      --max-body N     bytes of a request body, default 16777216 (16 MiB); larger: 413
      --max-pixels N   pixels of an image, default 33554432 (2^25); larger: 413
      --decode-timeout S  seconds to decode an image, default 10; longer: 413 (so is a JPEG of
                       more than 100 scans)
      --max-det N      detections per image, default 300 here (the most confident); a request's
                       max_det may ask for fewer, not more
      --min-thresh T   the lowest thresh or min_confidence a request (or the live view) may
                       set, default 0.01; lower: 400
      --max-connections N         default 512; near it, the longest idle connection is
                                  closed for a new one
      --max-connections-per-ip N  default 64, for addresses other than loopback
      --timeout S      seconds for a request's headers (and an idle connection), default 10
      --body-timeout S seconds for a request's body after its headers, default 30
      --shutdown-grace S  seconds a stop waits for the requests in flight, default 10
      -h, --help       show this help

    Stderr says where it listens ('yolo: serve: listening on http://127.0.0.1:8080/').
    SIGINT or SIGTERM stop it cleanly: no new connections, the source closed, the requests in
    flight answered, for up to --shutdown-grace seconds; a second SIGINT or SIGTERM exits at
    once. Exit status: 0 after a clean stop, 1 when the grace ran out (requests unanswered) or
    it cannot start (the port is taken, the model or the source cannot be opened), 64 usage
    error; a second signal ends it by that signal (128 + its number in a shell).
    """

    static func run(_ args: [String]) throws -> Int32 {
        let a = try Arguments(args, options: DetectionOptions.optionNames.union([
                                  "listen", "api-key", "api-key-file", "allow-host", "model-name", "sessions", "queue", "input",
                                  "scale", "max-body", "max-pixels", "max-connections", "max-connections-per-ip", "timeout",
                                  "body-timeout", "decode-timeout", "min-thresh", "shutdown-grace"]),
                              flags: DetectionOptions.flagNames.union(["no-exif", "loop", "no-realtime", "live", "help"]),
                              short: ["h": "help"])
        if a.has("help") { print(usage); return 0 }
        guard a.positionals.isEmpty else { throw UsageError("serve takes no positional arguments (a video source goes in --input)") }
        var c = ServeConfiguration()
        (c.host, c.port) = try listenAddress(a.string("listen") ?? "127.0.0.1:8080")
        c.apiKey = try apiKey(a)
        c.allowedHosts = try a.strings("allow-host").flatMap { $0.split(separator: ",").map(String.init) }.map { name in
            if let problem = HostPolicy.allowedHostProblem(name) { throw UsageError("--allow-host \(problem)") }
            return name
        }
        let detection = try DetectionOptions(a)
        c.applyEXIFOrientation = !a.has("no-exif")
        let cores = MachineCores.available
        c.sessions = try a.int("sessions", default: cores, range: 1...256)
        c.threadsPerSession = detection.threads ?? max(1, cores / c.sessions)
        c.limits.queue = try a.int("queue", default: 16, range: 0...100_000)
        c.limits.maxBodyBytes = try a.int("max-body", default: 16 << 20, range: 1...(1 << 31))
        c.limits.maxBufferedBytes = max(c.limits.maxBufferedBytes, 2 * c.limits.maxBodyBytes)
        c.limits.maxPixels = try a.int("max-pixels", default: 1 << 25, range: 1...Int.max)
        c.limits.maxConnections = try a.int("max-connections", default: 512, range: 1...100_000)
        c.limits.maxConnectionsPerIP = try a.int("max-connections-per-ip", default: 64, range: 1...100_000)
        c.limits.headerTimeout = try a.int("timeout", default: 10, range: 1...3600)
        c.limits.bodyTimeout = try a.int("body-timeout", default: 30, range: 1...3600)
        c.log = { printError("yolo: serve: libmicrohttpd: \($0)") }
        c.limits.decodeSeconds = try seconds(a, "decode-timeout", default: 10, range: 0.000001...3600)
        c.limits.minThreshold = try a.float("min-thresh", default: 0.01, range: 0...1)
        c.limits.maxDetections = detection.detector.maxDetections ?? 300
        if detection.detector.threshold < c.limits.minThreshold {
            throw UsageError("--thresh \(detection.detector.threshold) is under --min-thresh \(c.limits.minThreshold)")
        }
        let grace = try seconds(a, "shutdown-grace", default: 10, range: 0...3600)
        if a.string("scale") != nil && a.string("input") == nil { throw UsageError("--scale needs --input") }
        let scale = try a.size("scale", example: "640x360")
        if a.string("input") == nil, let flag = ["loop", "no-realtime", "live"].first(where: a.has) {
            throw UsageError("--\(flag) is about the live source: give --input SOURCE")
        }
        if let input = a.string("input"), input.isEmpty { throw UsageError("--input needs a source") }

        c.modelName = a.string("model-name") ?? ((detection.cfg as NSString).lastPathComponent as NSString).deletingPathExtension
        guard !c.modelName.isEmpty, !c.modelName.contains("/") else { throw UsageError("--model-name \(c.modelName): expected a name without '/'") }
        guard c.modelName != "list" else {
            throw UsageError("--model-name list: /v1/vision/custom/list lists the models; give the model another name")
        }
        let loaded = try detection.load(threads: c.threadsPerSession)
        let (model, names) = (loaded.model, loaded.classNames)
        c.detectorOptions = loaded.detector
        c.detectorOptions.maxDetections = c.limits.maxDetections
        raiseOpenFileLimit(to: c.limits.maxConnections + 256)

        // Signals: the first SIGINT or SIGTERM stops the server (within the grace), a second one
        // exits at once; SIGPIPE is an error on a write.
        signal(SIGPIPE, SIG_IGN)
        let stop = StopSignal(), cleanup = StreamCleanup()
        let inFlight = Locked<@Sendable () -> Int>({ 0 })
        try StopSignals.handle(stop: stop, cleanup: cleanup, signals: [SIGINT, SIGTERM]) { number, count in
            let name = number == SIGTERM ? "SIGTERM" : number == SIGINT ? "SIGINT" : "signal \(number)"
            if count == 1 {
                printError("yolo: serve: \(name): stopping (answering the requests in flight, for up to \(seconds(grace)))")
            } else {
                printError("yolo: serve: \(name) again: exiting now, \(inFlight.withLock { $0 }()) requests unanswered")
            }
        }
        defer { cleanup.endAll() }

        var live: LiveSource? = nil
        if let input = a.string("input") {
            guard let ffmpeg = StreamCommand.findExecutable("ffmpeg") else {
                printError("yolo: ffmpeg: not found in PATH; 'yolo serve --input' reads video with ffmpeg (e.g. apt-get install ffmpeg)")
                return 1
            }
            switch try ServeSource.start(ffmpeg: ffmpeg, input: input, scale: scale, loop: a.has("loop"),
                                         realtime: !a.has("no-realtime"),
                                         live: a.has("live") || StreamOptions.isLiveSource(input), cleanup: cleanup) {
            case .success(let s): live = s
            case .failure(let e): printError("yolo: \(e)"); return 1
            }
        }

        let server = try DetectionServer(model: model, classNames: names, configuration: c, live: live)
        inFlight.withLock { $0 = { server.requestsInFlight } }
        let port: Int
        do { port = try server.start() } catch {
            live?.stop()
            printError("yolo: \(error)")
            return 1
        }
        let shown = c.host.contains(":") ? "[\(c.host)]" : c.host
        var what = "\(c.modelName) \(model.inputWidth)x\(model.inputHeight), \(c.sessions) session\(c.sessions == 1 ? "" : "s")"
        if let live { what += "; live view of \(live.name)" }
        printError("yolo: serve: listening on http://\(shown):\(port)/ (\(what))")
        if !isLoopback(c.host) && c.apiKey == nil {
            printError("yolo: serve: warning: \(c.host) is reachable from other machines and there is no --api-key: anyone who can reach it can use the detector")
        }
        let stopped = DispatchSemaphore(value: 0)
        stop.onStop { stopped.signal() }
        stopped.wait()
        // The stop runs on a thread of its own: whatever holds it up (a detection, a live view
        // that will not end), the process leaves when the grace is over.
        let done = DispatchSemaphore(value: 0)
        let clean = Locked(false)
        Thread { clean.withLock { $0 = server.shutdown(grace: grace) }; done.signal() }.start()
        if done.wait(timeout: .now() + grace + 1) == .success && clean.withLock({ $0 }) {
            printError("yolo: serve: stopped")
            return 0
        }
        printError("yolo: serve: the stop took longer than the \(seconds(grace)) grace (\(server.requestsInFlight) requests unanswered): exiting now")
        cleanup.endAll()
        _exit(1)  // not exit(): detectors may still be running; no atexit handler may run under them (stderr is unbuffered)
    }

    /// "10 s", "0.5 s".
    static func seconds(_ value: Double) -> String { value == value.rounded() ? "\(Int(value)) s" : "\(value) s" }

    /// A duration option in seconds (a Double: `Arguments.float` would print 1e-06 as 9.99e-07).
    static func seconds(_ a: Arguments, _ name: String, default def: Double, range: ClosedRange<Double>) throws -> Double {
        guard let text = a.string(name) else { return def }
        guard let v = Double(text), range.contains(v) else {
            throw UsageError("--\(name) \(text): expected seconds in \(range.lowerBound)...\(Int(range.upperBound))")
        }
        return v
    }

    /// --api-key-file's first line, else --api-key, else $YOLO_API_KEY (when not empty), else none.
    static func apiKey(_ a: Arguments) throws -> String? {
        if a.string("api-key-file") != nil && a.string("api-key") != nil {
            throw UsageError("--api-key and --api-key-file: give one")
        }
        if let path = a.string("api-key-file") {
            // Read as a stream: a pipe such as <(pass show yolo) serves as well as a file.
            guard let handle = FileHandle(forReadingAtPath: path) else {
                throw UsageError("--api-key-file \(path): cannot open it (\(String(cString: strerror(errno))))", hint: false)
            }
            defer { try? handle.close() }
            let text: String
            do { text = String(decoding: try handle.read(upToCount: 1 << 16) ?? Data(), as: UTF8.self) } catch {
                throw UsageError("--api-key-file \(path): cannot read it (\(error))", hint: false)
            }
            let key = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first
                .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
            guard !key.isEmpty else { throw UsageError("--api-key-file \(path): its first line is empty: expected the key") }
            return key
        }
        if let key = a.string("api-key") {
            guard !key.isEmpty else { throw UsageError("--api-key needs a key") }
            return key
        }
        return ProcessInfo.processInfo.environment["YOLO_API_KEY"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// "127.0.0.1:8080", "[::1]:8080", "localhost:0", or a bare port.
    static func listenAddress(_ text: String) throws -> (String, Int) {
        var host = "127.0.0.1", portText = text
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw UsageError("--listen \(text): expected [IPV6]:PORT, e.g. [::1]:8080")
            }
            host = String(text[text.index(after: text.startIndex)..<close])
            portText = String(text[text.index(close, offsetBy: 2)...])
        } else if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = String(text[text.index(after: colon)...])
        }
        guard !host.isEmpty, let port = Int(portText), (0...65535).contains(port) else {
            throw UsageError("--listen \(text): expected ADDRESS:PORT with a port in 0...65535, e.g. 127.0.0.1:8080")
        }
        var v4 = in_addr(), v6 = in6_addr()
        guard host == "localhost" || inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1 else {
            throw UsageError("--listen \(text): '\(host)' is not an IP address (give a numeric one: 127.0.0.1, ::1, 0.0.0.0)")
        }
        return (host, port)
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// Lets the process hold `count` files (connections) when the hard limit allows.
    static func raiseOpenFileLimit(to count: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(count) else { return }
        limit.rlim_cur = min(rlim_t(count), limit.rlim_max)
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}
