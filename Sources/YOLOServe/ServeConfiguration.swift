// What `yolo serve` is told: where to listen, the API key, the detection defaults, and the
// limits that keep hostile or overeager clients from exhausting the process.
import YOLO

/// Limits on clients and work. Each is a bound, never a queue that can grow without one.
public struct ServeLimits: Sendable {
    /// A request body larger than this is refused with 413, before it is read (when it
    /// declares its length; a chunked body is cut off when it passes the limit).
    public var maxBodyBytes = 16 << 20
    /// Bytes of request bodies held at once (being uploaded or waiting for a detector); a
    /// request that would pass it is answered 503.
    public var maxBufferedBytes = 256 << 20
    /// Images whose header claims more pixels are refused (413) before their pixels are decoded.
    public var maxPixels = 1 << 25
    /// An image still decoding after this many seconds is refused (413), as is a JPEG of more
    /// scans than `decodeImage`'s limit: what an image costs to decode is not bounded by its size.
    public var decodeSeconds = 10.0
    /// The lowest confidence threshold a request (thresh, min_confidence) or the live view may
    /// ask for; lower is refused (400): near 0 every candidate box is reported for every class.
    public var minThreshold: Float = 0.01
    /// Detections reported per image at most (the most confident; ultralytics' default); a
    /// request's max_det may ask for fewer, not more (400).
    public var maxDetections = 300
    /// Requests admitted beyond the sessions at work; one more is answered 503 with Retry-After.
    public var queue = 16
    /// Connections at once (near it, the longest idle is closed for a new one; ConnectionGuard),
    /// and from one IP address other than loopback (the excess is refused at accept).
    public var maxConnections = 512
    public var maxConnectionsPerIP = 64
    /// A request's headers must arrive within this many seconds of the connection (or of the
    /// previous response on a kept-alive connection); a connection idle this long is closed.
    public var headerTimeout = 10
    /// A request's body must arrive within this many seconds of its headers.
    public var bodyTimeout = 30
    public init() {}
}

/// How `yolo serve` runs, apart from the model and the live source.
public struct ServeConfiguration: Sendable {
    /// Where to listen: an IPv4 or IPv6 address (loopback by default) and a port (0: any free one).
    public var host = "127.0.0.1"
    public var port = 8080
    /// More names the server may be reached by (the Host header; --allow-host), beyond those
    /// of the address it listens on (HostPolicy); "*" allows any.
    public var allowedHosts: [String] = []
    /// When set, every endpoint but /health and the page's own files needs it: the DeepStack
    /// form field `api_key`, an `Authorization: Bearer` header or an `api_key` query parameter.
    public var apiKey: String?
    /// The name of the loaded model, for /v1/vision/custom/NAME (e.g. "yolov3-tiny").
    public var modelName = "yolov3-tiny"
    /// The defaults of every request (and the live view's starting settings).
    public var detectorOptions = DetectorOptions()
    /// Detectors (sessions) sharing the model, and threads for each.
    public var sessions = 2
    public var threadsPerSession = 1
    /// Turn uploaded photos upright per their EXIF orientation (as `yolo detect` does).
    public var applyEXIFOrientation = true
    public var limits = ServeLimits()
    /// Where the server's log lines go (libmicrohttpd's errors, at most 10 lines each 10 s);
    /// nil: nowhere. Each is also counted in /metrics (yolo_http_library_errors_total).
    public var log: (@Sendable (String) -> Void)?
    public init() {}
}

extension ServeLimits {
    /// Why a confidence threshold may not be used (nil: it may).
    func thresholdRefusal(_ threshold: Float) -> String? {
        guard threshold < minThreshold else { return nil }
        return "confidence threshold \(threshold) (thresh, min_confidence): this server's minimum is \(minThreshold) "
            + "(yolo serve --min-thresh sets it; near 0 every candidate box is reported for every class)"
    }

    /// Why `max_det` may not be `count` (nil: it may).
    func maxDetectionsRefusal(_ count: Int?) -> String? {
        guard let count, count > maxDetections else { return nil }
        return "max_det=\(count): this server reports at most \(maxDetections) detections per image (yolo serve --max-det sets it)"
    }
}
