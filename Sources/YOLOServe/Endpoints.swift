// The endpoints: which path and method lead where, who may call them (--api-key), and the
// parameters each takes. Detection itself is in DetectRequests.swift, the live view's streams
// in LiveStreams.swift.
import YOLO
import YOLOText

extension DetectionServer {
    func endpoint(for r: HTTPRequest) -> Route {
        let get = r.method == "GET" || r.method == "HEAD", post = r.method == "POST"
        func only(_ allowed: String, _ ok: Bool, _ route: () -> Route) -> Route {
            ok ? route() : .respond(.error(405, "\(r.method) \(r.path): use \(allowed)", headers: [("Allow", allowed)]))
        }
        switch r.path {
        case "/":
            r.endpoint = "page"
            return only("GET", get) { .respond(page(LivePage.html(model: modelDescription, live: live != nil), "text/html; charset=utf-8")) }
        case "/app.js", "/app.css":
            r.endpoint = "asset"
            return only("GET", get) {
                r.path == "/app.js" ? .respond(page(LivePage.script, "text/javascript; charset=utf-8"))
                                    : .respond(page(LivePage.style, "text/css; charset=utf-8"))
            }
        case "/health":
            r.endpoint = "health"
            return only("GET", get) { .respond(.json(200, healthJSON())) }
        case "/metrics":
            r.endpoint = "metrics"
            return only("GET", get) {
                authorized(r) ? .respond(HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8",
                                                      body: Array(metricsText().utf8)))
                              : unauthorized()
            }
        case "/video.mjpg", "/events", "/detections.ndjson":
            let kind: LiveStreamClient.Kind = r.path == "/video.mjpg" ? .mjpeg : r.path == "/events" ? .events : .ndjson
            r.endpoint = kind.rawValue
            return only("GET", get) {
                guard authorized(r) else { return unauthorized() }
                guard let live else { return .respond(.error(404, "no live view: start the server with --input SOURCE")) }
                // Streams hold their connections: half of them at most, so that streams cannot
                // keep every other request out (ConnectionGuard makes room only from idle ones).
                let cap = max(1, configuration.limits.maxConnections / 2)
                guard live.hub.clientCount < cap else {
                    return .respond(.error(503, "busy: \(cap) live-stream clients, the most this server takes (half of "
                                           + "--max-connections); retry later", headers: [("Retry-After", "5")]))
                }
                return .stream(contentType: kind.contentType, headers: [], body: live.hub.client(kind, metrics: metrics))
            }
        case "/settings":
            r.endpoint = "settings"
            let noLive = HTTPResponse.error(404, "no live view: start the server with --input SOURCE")
            if get { return !authorized(r) ? unauthorized() : .respond(live.map { .json(200, $0.settingsDocument()) } ?? noLive) }
            return only("GET, POST", post) {
                keyed(r, limit: 16 * 1024, urlEncoded: true) { r in
                    guard let live = self.live else { return .respond(noLive) }
                    if let error = live.apply(r.fields.mapValues(\.text).merging(r.query) { form, _ in form }) {
                        return .respond(.error(400, error))
                    }
                    return .respond(.json(200, live.settingsDocument()))
                }
            }
        case "/detect":
            r.endpoint = "detect"
            return only("POST", post) { detectRoute(r) }
        case "/v1/vision/detection":
            r.endpoint = "deepstack"
            return only("POST", post) { deepstackRoute(r) }
        default:
            // The key before anything about the model: even its name is only for who has the key.
            if r.path == "/v1/vision/custom/list" {
                r.endpoint = "deepstack_list"
                let list = HTTPResponse.json(200, "{\"success\": true, \"models\": [\(jsonString(configuration.modelName))]}\n")
                if get { return authorized(r) ? .respond(list) : unauthorized() }
                return only("GET, POST", post) { keyed(r, limit: 16 * 1024, urlEncoded: true) { _ in .respond(list) } }
            }
            if r.path.hasPrefix("/v1/vision/custom/") {
                r.endpoint = "deepstack_custom"
                let name = String(r.path.dropFirst("/v1/vision/custom/".count))
                if name == configuration.modelName { return only("POST", post) { deepstackRoute(r) } }
                return afterKey(r, .error(404, "no custom model '\(name)': this server runs '\(configuration.modelName)' "
                                          + "(POST /v1/vision/custom/\(configuration.modelName))"))
            }
            if r.path.hasPrefix("/v1/") {
                r.endpoint = "deepstack_other"
                return afterKey(r, .error(404, "\(r.path): not served here; this server detects objects only "
                                          + "(POST /v1/vision/detection or /v1/vision/custom/\(configuration.modelName))"))
            }
            return .respond(.error(404, "\(r.path): no such endpoint (see GET / for the live view, POST /detect, "
                                   + "POST /v1/vision/detection, GET /health, GET /metrics)"))
        }
    }

    private func page(_ text: String, _ type: String) -> HTTPResponse {
        HTTPResponse(status: 200, contentType: type, body: Array(text.utf8))
    }

    /// POST /detect: the image as the body or the form field `image`; query parameters (checked
    /// at once, or once the key in the form is).
    private func detectRoute(_ r: HTTPRequest) -> Route {
        let check = keyCheck(r, urlEncoded: false)
        if check == .denied { return unauthorized() }
        if r.hasContentType("text/plain") {
            return .respond(.error(415, "a text/plain body is refused (it is what any web page can make a browser send): "
                                   + "send the image as image/jpeg, image/png or application/octet-stream, or as the form field 'image'"))
        }
        let options = requestOptions(r.query)
        if check == .allowed, case .failure(let e) = options { return .respond(.error(400, e.description)) }
        return keyed(r, limit: configuration.limits.maxBodyBytes) { [self] r in
            switch options {
            case .success(let o): return detectRequest(r, options: o)
            case .failure(let e): return .respond(.error(400, e.description))
            }
        }
    }

    /// DeepStack's detection: multipart fields `image`, optional `min_confidence` and `api_key`.
    private func deepstackRoute(_ r: HTTPRequest) -> Route {
        keyed(r, limit: configuration.limits.maxBodyBytes) { [self] r in
            guard let image = r.fields["image"], !image.value.isEmpty else {
                return .respond(.error(400, r.isForm ? "no image: the multipart form needs the field 'image' (curl -F image=@photo.jpg)"
                                                     : "no image: send a multipart/form-data body with the field 'image' (curl -F image=@photo.jpg)"))
            }
            var options = configuration.detectorOptions
            if let text = r.fields["min_confidence"]?.text, !text.isEmpty {
                guard let v = Float(text), v >= 0, v <= 1 else {
                    return .respond(.error(400, "min_confidence=\(text): expected a number in 0...1"))
                }
                options.threshold = v
            }
            return submit(image.value, name: image.filename ?? "image", options: options) { [self] outcome in
                .json(200, deepstackJSON(outcome))
            }
        }
    }

    /// The detector options of a POST /detect: the server's, changed by the query parameters.
    func requestOptions(_ query: [String: String]) -> Result<DetectorOptions, ServeError> {
        var o = configuration.detectorOptions
        for (key, value) in query.sorted(by: { $0.key < $1.key }) {
            switch key {
            case "thresh", "nms":
                guard let v = Float(value), v >= 0, v <= 1 else { return .failure(ServeError("\(key)=\(value): expected a number in 0...1")) }
                if key == "thresh" { o.threshold = v } else { o.nmsThreshold = v }
            case "classes":
                do { o.classFilter = try parseClassList(value, names: classNames, classCount: classCount, option: "classes") }
                catch { return .failure(ServeError(error.description)) }
            case "agnostic":
                switch value.lowercased() {
                case "", "1", "true", "yes": o.classAgnostic = true
                case "0", "false", "no": o.classAgnostic = false
                default: return .failure(ServeError("agnostic=\(value): expected 1 or 0"))
                }
            case "max_det":
                guard let n = Int(value), n >= 0, n <= 1_000_000 else { return .failure(ServeError("max_det=\(value): expected an integer in 0...1000000")) }
                o.maxDetections = n
            case "api_key", "name":
                continue
            default:
                return .failure(ServeError("unknown query parameter '\(key)' (known: thresh, nms, classes, agnostic, max_det, name, api_key)"))
            }
        }
        return .success(o)
    }

    // MARK: - Authorization

    enum KeyCheck { case allowed, denied, inForm }

    /// Where the request's key is: in a header or the query (checked now), else possibly in the
    /// form its body is (`urlEncoded`: a URL-encoded one too), checked once that is read.
    func keyCheck(_ r: HTTPRequest, urlEncoded: Bool) -> KeyCheck {
        guard configuration.apiKey != nil else { return .allowed }
        if r.authorization != nil || r.query["api_key"] != nil { return authorized(r) ? .allowed : .denied }
        let form = r.hasContentType("multipart/form-data") || urlEncoded && r.hasContentType("application/x-www-form-urlencoded")
        return r.hasBody && form ? .inForm : .denied
    }

    /// Reads the body (a form: `urlEncoded` too) for `handler`, once the key is found (in a
    /// header, the query or the form); else 401, at once when no form can bring it.
    func keyed(_ r: HTTPRequest, limit: Int, urlEncoded: Bool = false,
               _ handler: @escaping @Sendable (HTTPRequest) -> BodyOutcome) -> Route {
        switch keyCheck(r, urlEncoded: urlEncoded) {
        case .denied: return unauthorized()
        case .allowed: return .readBody(limit: limit, urlEncoded: urlEncoded, handler: handler)
        case .inForm:
            return .readBody(limit: limit, urlEncoded: urlEncoded) { [self] r in
                authorized(r, formField: true) ? handler(r) : .respond(unauthorizedResponse())
            }
        }
    }

    /// `answer` (which names the model) only for who has the key (in a form, once it is read).
    func afterKey(_ r: HTTPRequest, _ answer: HTTPResponse) -> Route {
        switch keyCheck(r, urlEncoded: false) {
        case .allowed: return .respond(answer)
        case .denied: return unauthorized()
        case .inForm:
            return .readBody(limit: configuration.limits.maxBodyBytes) { [self] r in
                .respond(authorized(r, formField: true) ? answer : unauthorizedResponse())
            }
        }
    }

    /// Whether the request carries the API key (always, without --api-key): as a Bearer token,
    /// an `api_key` query parameter or (`formField`) DeepStack's `api_key` form field.
    func authorized(_ r: HTTPRequest, formField: Bool = false) -> Bool {
        guard let key = configuration.apiKey else { return true }
        var given: [String] = []
        if let a = r.authorization, a.lowercased().hasPrefix("bearer ") {
            given.append(String(a.dropFirst(7).drop(while: { $0 == " " })))
        }
        if let q = r.query["api_key"] { given.append(q) }
        if formField, let f = r.fields["api_key"] { given.append(f.text) }
        return given.contains { constantTimeEqual($0, key) }
    }

    func unauthorizedResponse() -> HTTPResponse {
        .error(401, "a valid API key is needed (the form field api_key, an 'Authorization: Bearer KEY' header or ?api_key=KEY)",
               headers: [("WWW-Authenticate", "Bearer")])
    }

    func unauthorized() -> Route { .respond(unauthorizedResponse()) }
}

/// Compares without stopping at the first difference (no timing hint of a key's prefix).
func constantTimeEqual(_ a: String, _ b: String) -> Bool {
    let x = Array(a.utf8), y = Array(b.utf8)
    var diff = UInt8(x.count == y.count ? 0 : 1)
    for i in 0..<max(x.count, y.count) { diff |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0) }
    return diff == 0
}
