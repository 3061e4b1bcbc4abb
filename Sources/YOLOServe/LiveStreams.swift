// The live streams: the newest published frame (JPEG and JSON) and its clients. Publishing
// never waits for a client: each client, when its socket can take more, is handed the newest
// frame (the ones it was too slow for are skipped), and a client with nothing new waits
// suspended until the next frame is published. MJPEG (multipart/x-mixed-replace, which
// browsers play in an <img>), server-sent events and newline-delimited JSON.
import YOLOCore

/// The newest published frame and the connections waiting for the next one.
final class LiveHub: Sendable {
    struct Output: Sendable {
        var sequence: Int
        var jpeg: [UInt8]
        var json: String
    }
    enum Next { case output(Output), waiting, end }

    private struct State {
        var latest: Output?
        var waiting: [HTTPConnection] = []
        var finished = false
        var counts: [LiveStreamClient.Kind: Int] = [:]
    }
    private let state = Locked(State())

    func publish(jpeg: [UInt8], json: String) {
        let woken: [HTTPConnection] = state.withLock { s in
            s.latest = Output(sequence: (s.latest?.sequence ?? -1) + 1, jpeg: jpeg, json: json)
            defer { s.waiting = [] }
            return s.waiting
        }
        for c in woken { c.resume() }
    }

    /// No more frames: every waiting client is woken to end its stream.
    func finish() {
        let woken: [HTTPConnection] = state.withLock { s in
            s.finished = true
            defer { s.waiting = [] }
            return s.waiting
        }
        for c in woken { c.resume() }
    }

    /// A frame newer than `sequence`; else, unless the stream is over, suspends `connection`
    /// until the next publish (under the lock, so no publish can slip in between).
    func next(after sequence: Int, connection: HTTPConnection) -> Next {
        state.withLock { s in
            if let l = s.latest, l.sequence > sequence { return .output(l) }
            if s.finished { return .end }
            connection.suspend()
            s.waiting.append(connection)
            return .waiting
        }
    }

    func client(_ kind: LiveStreamClient.Kind, metrics: Metrics) -> LiveStreamClient {
        state.withLock { $0.counts[kind, default: 0] += 1 }
        return LiveStreamClient(kind: kind, hub: self, metrics: metrics)
    }

    func left(_ kind: LiveStreamClient.Kind) { state.withLock { $0.counts[kind, default: 0] -= 1 } }
    func clients(of kind: LiveStreamClient.Kind) -> Int { state.withLock { $0.counts[kind] ?? 0 } }
    var clientCount: Int { state.withLock { $0.counts.values.reduce(0, +) } }
}

/// One client of a live stream; read on libmicrohttpd's thread only.
final class LiveStreamClient: StreamBody, @unchecked Sendable {
    enum Kind: String, CaseIterable {
        case mjpeg, events, ndjson
        var contentType: String {
            switch self {
            case .mjpeg: return "multipart/x-mixed-replace; boundary=\(LiveStreamClient.boundary)"
            case .events: return "text/event-stream"
            case .ndjson: return "application/x-ndjson"
            }
        }
    }
    static let boundary = "yoloframe"

    let kind: Kind
    private let hub: LiveHub
    private let metrics: Metrics
    private var sequence = -1
    /// What is left to send of the current frame: parts (the JPEG is shared, not copied).
    private var parts: [[UInt8]] = []
    private var part = 0, offset = 0
    private var startedMJPEG = false

    init(kind: Kind, hub: LiveHub, metrics: Metrics) {
        self.kind = kind
        self.hub = hub
        self.metrics = metrics
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, connection: HTTPConnection) -> StreamRead {
        if part >= parts.count {
            switch hub.next(after: sequence, connection: connection) {
            case .waiting: return .waiting
            case .end: return .end
            case .output(let o):
                if sequence >= 0 && o.sequence > sequence + 1 {
                    metrics.count("yolo_live_client_frames_skipped_total", by: UInt64(o.sequence - sequence - 1))
                }
                sequence = o.sequence
                parts = encode(o)
                part = 0
                offset = 0
            }
        }
        var written = 0
        while written < buffer.count && part < parts.count {
            let n = min(buffer.count - written, parts[part].count - offset)
            parts[part].withUnsafeBytes { src in
                (buffer.baseAddress! + written).copyMemory(from: src.baseAddress! + offset, byteCount: n)
            }
            written += n
            offset += n
            if offset == parts[part].count { part += 1; offset = 0 }
        }
        return .bytes(written)
    }

    private func encode(_ o: LiveHub.Output) -> [[UInt8]] {
        switch kind {
        case .mjpeg:
            // Each part ends with the next part's boundary: browsers show a part once the
            // boundary after it arrives, so sending it at once shows the frame at once.
            let first = startedMJPEG ? "" : "--\(Self.boundary)\r\n"
            startedMJPEG = true
            let header = first + "Content-Type: image/jpeg\r\nContent-Length: \(o.jpeg.count)\r\n\r\n"
            return [Array(header.utf8), o.jpeg, Array("\r\n--\(Self.boundary)\r\n".utf8)]
        case .events:
            return [Array("data: \(o.json)\n\n".utf8)]
        case .ndjson:
            return [Array((o.json + "\n").utf8)]
        }
    }

    func closed() { hub.left(kind) }
}
