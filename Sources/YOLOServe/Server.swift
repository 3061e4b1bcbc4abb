// `yolo serve`'s server: one model, a bounded pool of its sessions, the HTTP server in front,
// the optional live view, and what /health and /metrics say about them. Starts, and stops
// cleanly: no new connections, the live source closed, admitted requests finished and answered.
import YOLO
import YOLOCore
import YOLOImage
import YOLOText

public final class DetectionServer: HTTPApplication, @unchecked Sendable {
    let configuration: ServeConfiguration
    let model: Model
    let classNames: [String]
    let classCount: Int
    let pool: DetectorPool
    let queue: WorkQueue
    let metrics = Metrics()
    let live: LiveView?
    let hosts: HostPolicy
    private let libraryLog: RateLimitedLog?
    private var http: HTTPServer!
    private let started = monotonicNanoseconds()
    /// Requests routed and not yet finished (a stream counts until it ends).
    private let openRequests = Locked(0)
    private let stopping = Locked(false)

    /// Makes `configuration.sessions` detectors of `model`; `live`, when given, feeds the live view.
    public init(model: Model, classNames: [String], configuration: ServeConfiguration, live: LiveSource? = nil) throws {
        self.configuration = configuration
        self.model = model
        self.classNames = classNames
        classCount = model.heads.first?.classes ?? 0
        let limits = configuration.limits
        if let refusal = limits.thresholdRefusal(configuration.detectorOptions.threshold)
            ?? limits.maxDetectionsRefusal(configuration.detectorOptions.maxDetections) {
            throw ServeError("the default detector options: \(refusal)")
        }
        pool = try DetectorPool(model: model, classNames: classNames, options: configuration.detectorOptions,
                                sessions: configuration.sessions, threadsPerSession: configuration.threadsPerSession)
        queue = WorkQueue(workers: 2 * configuration.sessions, capacity: limits.queue)
        var liveSettings = configuration.detectorOptions
        liveSettings.maxDetections = min(liveSettings.maxDetections ?? limits.maxDetections, limits.maxDetections)
        hosts = HostPolicy(listen: configuration.host, allowed: configuration.allowedHosts)
        libraryLog = configuration.log.map { RateLimitedLog(sink: $0) }
        let (names, count, pool, metrics) = (classNames, classCount, pool, metrics)
        self.live = live.map { LiveView(source: $0, pool: pool, metrics: metrics, settings: liveSettings, limits: limits,
                                        classNames: names, classCount: count) }
        http = HTTPServer(application: self, limits: configuration.limits)
    }

    /// Starts listening (and the live view); returns the port (useful when asked for port 0).
    @discardableResult
    public func start() throws(ServeError) -> Int {
        try http.start(host: configuration.host, port: configuration.port)
        live?.start()
        return http.port
    }

    /// The port listened on.
    public var port: Int { http.port }

    /// Stops within about `grace` seconds: no new connections, the live source closed and its
    /// clients' streams ended, the requests admitted detected and answered, and their answers
    /// sent, while the grace lasts; then every connection closed (a body still arriving is cut
    /// off). Returns false when admitted requests were still waiting or detecting when the grace
    /// ran out: the server is then not stopped, and the process should exit without them.
    @discardableResult
    public func shutdown(grace: Double = 10) -> Bool {
        let deadline = monotonicNanoseconds() &+ UInt64(min(max(0, grace), 1e6) * 1e9)
        stopping.withLock { $0 = true }
        http.stopAccepting()
        live?.stop()
        guard queue.drain(until: deadline) else { return false }
        while openRequests.withLock({ $0 }) > 0 && monotonicNanoseconds() < deadline { usleep(10_000) }
        http.stop()
        return true
    }

    /// Requests admitted and not yet answered: waiting in the queue or at work.
    public var requestsInFlight: Int { queue.depth + queue.active }

    // MARK: - HTTPApplication

    func route(_ request: HTTPRequest) -> Route {
        openRequests.withLock { $0 += 1 }
        // Before any endpoint: framing the glue refused, then who the request is for and from.
        if let refusal = request.refusal { return .respond(refusal) }
        if let (status, problem) = hosts.hostProblem(request.host) { return .respond(.error(status, problem)) }
        if !["GET", "HEAD", "OPTIONS"].contains(request.method),
           let problem = hosts.originProblem(origin: request.origin, fetchSite: request.fetchSite, host: request.host) {
            return .respond(.error(403, problem))
        }
        return endpoint(for: request)
    }

    func finished(_ request: HTTPRequest, status: Int?) {
        openRequests.withLock { $0 -= 1 }
        metrics.request(endpoint: request.endpoint, status: status)
        if status != nil {
            metrics.observe("yolo_stage_seconds", "path=\"request\",stage=\"total\"",
                            seconds: Double(monotonicNanoseconds() - request.started) / 1e9)
        }
    }

    func dropped(reason: String) {
        metrics.count("yolo_connections_dropped_total", "reason=\"\(reason)\"")
    }

    func libraryLogged(_ line: String) {
        metrics.count("yolo_http_library_errors_total", "")
        libraryLog?.log(line)
    }

    // MARK: - /health and /metrics

    var modelDescription: String { "\(configuration.modelName) (\(model.inputWidth)x\(model.inputHeight), \(classCount) classes)" }

    func healthJSON() -> String {
        let uptime = Double(monotonicNanoseconds() - started) / 1e9
        let status = stopping.withLock { $0 } ? "stopping" : "ok"
        return "{\"status\": \"\(status)\", \"model\": \(jsonString(configuration.modelName)), "
            + "\"input\": \"\(model.inputWidth)x\(model.inputHeight)\", \"classes\": \(classCount), "
            + "\"sessions\": \(pool.count), \"sessions_busy\": \(pool.busyCount), \"in_flight\": \(queue.active), \"queued\": \(queue.depth), "
            + "\"queue_capacity\": \(queue.capacity), \"live\": \(live?.statusJSON() ?? "null"), "
            + "\"uptime_s\": \(jsonNumber(uptime, decimals: 1))}\n"
    }

    func metricsText() -> String {
        var gauges: [(String, String, [(String, Double)])] = [
            ("yolo_sessions", "Detector sessions sharing the model.", [("", Double(pool.count))]),
            ("yolo_sessions_busy", "Sessions detecting now.", [("", Double(pool.busyCount))]),
            ("yolo_queue_depth", "Requests admitted and waiting for a session.", [("", Double(queue.depth))]),
            ("yolo_queue_capacity", "Requests that may wait before more are refused with 503.", [("", Double(queue.capacity))]),
            ("yolo_buffered_body_bytes", "Bytes of request bodies held now.", [("", Double(http.budget.inUse))]),
            ("yolo_connections", "Open HTTP connections.", [("", Double(http.connections.count))]),
            ("process_resident_memory_bytes", "Resident memory of this process.", [("", residentMemoryBytes())]),
        ]
        if let live { gauges += live.gauges() }
        return metrics.render(gauges: gauges)
    }
}
