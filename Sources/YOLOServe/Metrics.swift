// What /metrics reports, in Prometheus' text format (version 0.0.4): counters and latency
// histograms kept here, gauges read when scraped.
import YOLOCore

final class Metrics: Sendable {
    /// Histogram bucket bounds in seconds.
    static let buckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    struct Histogram {
        var counts = [UInt64](repeating: 0, count: Metrics.buckets.count)
        var sum = 0.0
        var count: UInt64 = 0
        mutating func observe(_ seconds: Double) {
            for (i, bound) in Metrics.buckets.enumerated() where seconds <= bound { counts[i] += 1 }
            sum += seconds
            count += 1
        }
    }

    /// One metric's help text and type.
    struct Family: Sendable { var help: String; var type: String }

    private struct State {
        /// name -> labels ("a=\"x\",b=\"y\"") -> value
        var counters: [String: [String: UInt64]] = [:]
        var histograms: [String: [String: Histogram]] = [:]
    }
    private let state = Locked(State())

    static let families: [String: Family] = [
        "yolo_http_requests_total": Family(help: "HTTP requests answered, by endpoint and status code.", type: "counter"),
        "yolo_http_errors_total": Family(help: "HTTP requests answered with a 4xx or 5xx status, or ended without an answer, by endpoint.", type: "counter"),
        "yolo_http_rejected_total": Family(help: "Requests refused with 503 to keep the queue bounded, by reason.", type: "counter"),
        "yolo_connections_dropped_total": Family(help: "Connections closed without an answer, by reason.", type: "counter"),
        "yolo_http_library_errors_total": Family(help: "Lines of libmicrohttpd's error log (malformed requests, connections refused at its limit).", type: "counter"),
        "yolo_stage_seconds": Family(help: "Latency of each stage, for requests (path=request) and live frames (path=live).", type: "histogram"),
        "yolo_live_frames_total": Family(help: "Live frames detected and published.", type: "counter"),
        "yolo_live_frames_dropped_total": Family(help: "Live frames the source delivered while the detector was busy (newest wins).", type: "counter"),
        "yolo_live_client_frames_skipped_total": Family(help: "Published frames a slow live client never got (each client gets the newest).", type: "counter"),
    ]

    func count(_ name: String, _ labels: String = "", by n: UInt64 = 1) {
        state.withLock { $0.counters[name, default: [:]][labels, default: 0] += n }
    }

    func observe(_ name: String, _ labels: String, seconds: Double) {
        state.withLock { $0.histograms[name, default: [:]][labels, default: Histogram()].observe(seconds) }
    }

    /// A request ended: counted by endpoint and status (nil: the connection ended first).
    func request(endpoint: String, status: Int?) {
        let code = status.map(String.init) ?? "none"
        count("yolo_http_requests_total", "endpoint=\"\(endpoint)\",code=\"\(code)\"")
        if (status ?? 500) >= 400 { count("yolo_http_errors_total", "endpoint=\"\(endpoint)\"") }
    }

    func counter(_ name: String, _ labels: String = "") -> UInt64 {
        state.withLock { $0.counters[name]?[labels] ?? 0 }
    }

    /// The exposition text; `gauges` are read by the caller now: (name, help, [(labels, value)]).
    func render(gauges: [(String, String, [(String, Double)])]) -> String {
        let s = state.withLock { $0 }
        var out = ""
        func header(_ name: String, _ family: Family) { out += "# HELP \(name) \(family.help)\n# TYPE \(name) \(family.type)\n" }
        func series(_ name: String, _ labels: String, _ value: String) {
            out += labels.isEmpty ? "\(name) \(value)\n" : "\(name){\(labels)} \(value)\n"
        }
        for name in Self.families.keys.sorted() {
            let family = Self.families[name]!
            header(name, family)
            if family.type == "histogram" {
                for (labels, h) in (s.histograms[name] ?? [:]).sorted(by: { $0.key < $1.key }) {
                    let prefix = labels.isEmpty ? "" : labels + ","
                    for (i, bound) in Self.buckets.enumerated() {
                        series(name + "_bucket", prefix + "le=\"\(bound)\"", "\(h.counts[i])")
                    }
                    series(name + "_bucket", prefix + "le=\"+Inf\"", "\(h.count)")
                    series(name + "_sum", labels, "\(h.sum)")
                    series(name + "_count", labels, "\(h.count)")
                }
            } else {
                let values = s.counters[name] ?? [:]
                for (labels, v) in values.sorted(by: { $0.key < $1.key }) { series(name, labels, "\(v)") }
            }
        }
        for (name, help, values) in gauges {
            header(name, Family(help: help, type: "gauge"))
            for (labels, v) in values { series(name, labels, v == v.rounded() && abs(v) < 1e15 ? "\(Int64(v))" : "\(v)") }
        }
        return out
    }
}

/// This process's resident memory in bytes (from /proc/self/statm), or 0.
func residentMemoryBytes() -> Double {
    guard let f = fopen("/proc/self/statm", "r") else { return 0 }
    defer { fclose(f) }
    var line = [CChar](repeating: 0, count: 128)
    guard fgets(&line, 128, f) != nil else { return 0 }
    let text = String(decoding: line.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let fields = text.split(separator: " ")
    guard fields.count >= 2, let pages = Int(fields[1]) else { return 0 }
    return Double(pages * Int(sysconf(Int32(_SC_PAGESIZE))))
}
