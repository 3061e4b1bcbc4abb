// `yolo serve`'s request endpoints with curl: POST /detect answers what `yolo detect --json`
// prints, DeepStack's endpoint as its documentation shows it (curl -F image=@photo), the
// custom-model path, query parameters, errors as JSON, /health, /metrics and --api-key.
import Foundation
import XCTest

final class ServeAPITests: XCTestCase {
    nonisolated(unsafe) static var shared: ServeProcess?
    static let samples = ["coffee.png", "motorcycle_left.png", "camera.png", "astronaut.png"]

    /// One server for the class: 2 one-thread sessions, as `yolo detect --threads 1` runs.
    func server() throws -> ServeProcess {
        try ServeClients.requireCurl()
        if let s = Self.shared { return s }
        let s = try ServeProcess(["--sessions", "2", "--threads", "1"])
        Self.shared = s
        return s
    }

    override class func tearDown() {
        if let s = shared { XCTAssertEqual(s.stop().status, 0) }
        shared = nil
    }

    func testDetectAnswersWhatDetectJSONPrints() throws {
        let s = try server()
        let expected = try detectJSONLines(Self.samples)
        XCTAssertEqual(expected.count, Self.samples.count)
        for (name, line) in zip(Self.samples, expected) {
            let raw = try curl(["--data-binary", "@samples/\(name)", s.url("/detect?name=\(name)")])
            XCTAssertEqual(raw.status, 200, raw.text)
            XCTAssertEqual(raw.header("Content-Type"), "application/json")
            XCTAssertEqual(withoutTiming(raw.text), withoutTiming(line) + "\n", name)
            let form = try curl(["-F", "image=@samples/\(name)", s.url("/detect")])
            XCTAssertEqual(withoutTiming(form.text), withoutTiming(line) + "\n", "\(name) as a form")
        }
        XCTAssertTrue(expected.contains { $0.contains("\"class\": \"cup\"") })
    }

    func testDetectQueryParameters() throws {
        let s = try server()
        let cases: [([String], String)] = [(["--thresh", "0.1", "--classes", "person"], "thresh=0.1&classes=person"),
                                           (["--thresh", "0.05", "--max-det", "2", "--agnostic", "--nms", "0.2"],
                                            "thresh=0.05&max_det=2&agnostic=1&nms=0.2")]
        for (options, query) in cases {
            let expected = try detectJSONLines(["camera.png"], extra: options)
            let r = try curl(["--data-binary", "@samples/camera.png", s.url("/detect?name=camera.png&\(query)")])
            XCTAssertEqual(withoutTiming(r.text), withoutTiming(expected[0]) + "\n", query)
        }
        for (query, phrase) in [("thresh=2", "thresh=2: expected a number in 0...1"), ("classes=unicorn", "'unicorn' is not a class name"),
                                ("max_det=-1", "max_det=-1"), ("colour=red", "unknown query parameter 'colour'")] {
            let r = try curl(["--data-binary", "@samples/coffee.png", s.url("/detect?\(query)")])
            XCTAssertEqual(r.status, 400, query)
            XCTAssertEqual(try r.json()["success"] as? Bool, false)
            XCTAssertTrue((try r.json()["error"] as? String ?? "").contains(phrase), r.text)
        }
    }

    /// DeepStack's documented call: `curl -X POST -F image=@photo.jpg URL/v1/vision/detection`;
    /// the predictions are `yolo detect --json`'s, the most confident first (at 0.05, camera.png's
    /// detections are far from that order in Darknet's).
    func testDeepStackWithCurl() throws {
        let s = try server()
        for (threshold, samples) in [("0.25", Self.samples), ("0.05", ["camera.png"])] {
            let expected = try detectJSONLines(samples, extra: ["--thresh", threshold])
                .map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
            for (name, cli) in zip(samples, expected) {
                let r = try curl(["-X", "POST", "-F", "image=@samples/\(name)", "-F", "min_confidence=\(threshold)",
                                  s.url("/v1/vision/detection")])
                XCTAssertEqual(r.status, 200, r.text)
                try checkPredictions(r, against: cli, "\(name) \(threshold)")
            }
        }
        let custom = try curl(["-F", "image=@samples/motorcycle_left.png", s.url("/v1/vision/custom/yolov3-tiny")])
        XCTAssertEqual(try custom.json()["success"] as? Bool, true, custom.text)
        XCTAssertEqual((try custom.json()["predictions"] as? [[String: Any]])?.first?["label"] as? String, "motorbike", custom.text)
        let high = try curl(["-F", "image=@samples/coffee.png", "-F", "min_confidence=0.9", s.url("/v1/vision/detection")])
        XCTAssertEqual((try high.json()["predictions"] as? [Any])?.count, 0, high.text)
        let other = try curl(["-F", "image=@samples/coffee.png", s.url("/v1/vision/custom/mask")])
        XCTAssertEqual(other.status, 404)
        XCTAssertTrue(other.text.contains("this server runs 'yolov3-tiny'"), other.text)
        // Blue Iris and CodeProject.AI's list of models (Blue Iris POSTs it).
        for args in [[s.url("/v1/vision/custom/list")], ["-X", "POST", s.url("/v1/vision/custom/list")]] {
            let list = try curl(args)
            XCTAssertEqual(list.status, 200, list.text)
            XCTAssertEqual(try list.json()["success"] as? Bool, true, list.text)
            XCTAssertEqual(try list.json()["models"] as? [String], ["yolov3-tiny"], list.text)
        }
    }

    /// DeepStack's predictions against `yolo detect --json`'s detections: labels, confidences to
    /// 1e-4 and boxes (clamped) to 1 px, in DeepStack's order: the most confident first.
    func checkPredictions(_ r: CurlResponse, against cli: [String: Any], _ what: String) throws {
        let answer = try r.json()
        XCTAssertEqual(answer["success"] as? Bool, true, what)
        let predictions = try XCTUnwrap(answer["predictions"] as? [[String: Any]], what)
        let detections = (cli["detections"] as! [[String: Any]]).enumerated().sorted {
            let (a, b) = ($0.element["confidence"] as! Double, $1.element["confidence"] as! Double)
            return a != b ? a > b : $0.offset < $1.offset
        }.map(\.element)
        XCTAssertEqual(predictions.count, detections.count, what)
        let (w, h) = (cli["width"] as! Double, cli["height"] as! Double)
        for (p, d) in zip(predictions, detections) {
            XCTAssertEqual(p["label"] as? String, d["class"] as? String, what)
            XCTAssertEqual(p["confidence"] as! Double, d["confidence"] as! Double, accuracy: 1e-4, what)
            let box = d["box"] as! [String: Double]
            for (key, value, limit) in [("x_min", box["left"]!, w), ("y_min", box["top"]!, h),
                                        ("x_max", box["right"]!, w), ("y_max", box["bottom"]!, h)] {
                XCTAssertEqual(p[key] as! Double, min(max(value, 0), limit), accuracy: 1, "\(what) \(key)")
            }
        }
    }

    func testErrorsAreJSONWithTheirStatus() throws {
        let s = try server()
        let cases: [([String], Int, String)] = [
            ([s.url("/nowhere")], 404, "no such endpoint"),
            ([s.url("/detect")], 405, "use POST"),
            (["-X", "POST", s.url("/v1/vision/face")], 404, "detects objects only"),
            (["-F", "picture=@samples/coffee.png", s.url("/v1/vision/detection")], 400, "needs the field 'image'"),
            (["--data-binary", "@samples/coffee.png", s.url("/v1/vision/detection")], 400, "multipart/form-data"),
            (["-F", "image=@samples/coffee.png", "-F", "min_confidence=lots", s.url("/v1/vision/detection")], 400, "min_confidence=lots"),
            (["-X", "POST", s.url("/detect")], 400, "the body is empty"),
            (["--data-binary", "@Package.swift", s.url("/detect?name=Package.swift")], 415, "Package.swift: not an image"),
        ]
        for (args, status, phrase) in cases {
            let r = try curl(args)
            XCTAssertEqual(r.status, status, "\(args): \(r.text)")
            XCTAssertEqual(try r.json()["success"] as? Bool, false, r.text)
            XCTAssertEqual(try r.json()["code"] as? Int, status)
            XCTAssertTrue((try r.json()["error"] as? String ?? "").contains(phrase), "\(args): \(r.text)")
        }
        XCTAssertEqual(try curl([s.url("/detect")]).header("Allow"), "POST")
    }

    func testHealthAndMetrics() throws {
        let s = try server()
        let health = try curl([s.url("/health")])
        XCTAssertEqual(health.status, 200)
        let h = try health.json()
        XCTAssertEqual(h["status"] as? String, "ok")
        XCTAssertEqual(h["model"] as? String, "yolov3-tiny")
        XCTAssertEqual(h["sessions"] as? Int, 2)
        XCTAssertTrue(h["live"] is NSNull)
        _ = try curl(["--data-binary", "@samples/coffee.png", s.url("/detect")])
        let metrics = try curl([s.url("/metrics")])
        XCTAssertEqual(metrics.status, 200)
        XCTAssertTrue(metrics.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") ?? false)
        // Prometheus' text format: comments, or `name{labels} value`.
        let sample = try NSRegularExpression(pattern: #"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="[^"]*",?)*\})? -?[0-9.e+-]+$"#)
        for line in metrics.text.split(separator: "\n").map(String.init) where !line.hasPrefix("# HELP ") && !line.hasPrefix("# TYPE ") {
            XCTAssertNotNil(sample.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)), "not a sample line: \(line)")
        }
        for family in ["yolo_http_requests_total", "yolo_http_errors_total", "yolo_queue_depth", "yolo_http_rejected_total",
                       "yolo_stage_seconds", "yolo_live_frames_dropped_total", "process_resident_memory_bytes"] {
            XCTAssertTrue(metrics.text.contains("# TYPE \(family) "), family)
        }
        XCTAssertTrue(metrics.text.contains(#"yolo_stage_seconds_bucket{path="request",stage="inference",le="+Inf"}"#), metrics.text)
        let count = try NSRegularExpression(pattern: #"yolo_http_requests_total\{endpoint="detect",code="200"\} ([0-9]+)"#)
        let m = try XCTUnwrap(count.firstMatch(in: metrics.text, range: NSRange(metrics.text.startIndex..., in: metrics.text)))
        XCTAssertGreaterThanOrEqual(Int((metrics.text as NSString).substring(with: m.range(at: 1)))!, 1)
    }

    /// The key (from --api-key-file here: a command line is visible to every local user) in a
    /// form field, a Bearer header or the query, on every endpoint; checked before anything
    /// about the model is said (a custom model's 404 names it).
    func testAPIKeyIsRequiredWhereverItIsSet() throws {
        try ServeClients.requireCurl()
        let keyFile = try temporaryDirectory() + "/key.txt"
        try "s3cret\n".write(toFile: keyFile, atomically: true, encoding: .utf8)
        let s = try ServeProcess(["--sessions", "1", "--api-key-file", keyFile])
        defer { XCTAssertEqual(s.stop().status, 0) }
        let photo = "image=@samples/coffee.png"
        let cases: [([String], Int)] = [
            (["-F", photo, "-F", "api_key=s3cret", s.url("/detect")], 200),
            (["-F", photo, "-F", "api_key=wrong", s.url("/detect")], 401),
            (["-F", photo, s.url("/v1/vision/custom/mask")], 401),
            (["-F", photo, "-F", "api_key=wrong", s.url("/v1/vision/custom/mask")], 401),
            (["-F", photo, "-F", "api_key=s3cret", s.url("/v1/vision/custom/mask")], 404),
            ([s.url("/v1/vision/custom/mask")], 401),
            (["-X", "POST", s.url("/v1/vision/face")], 401),
            (["-H", "Authorization: Bearer s3cret", "-X", "POST", s.url("/v1/vision/face")], 404),
            ([s.url("/v1/vision/custom/list")], 401),
            (["-X", "POST", s.url("/v1/vision/custom/list")], 401),
            (["-d", "api_key=s3cret", s.url("/v1/vision/custom/list")], 200),
            ([s.url("/v1/vision/custom/list?api_key=s3cret")], 200),
            (["-d", "thresh=0.5", s.url("/settings")], 401),
            (["-d", "thresh=0.5&api_key=s3cret", s.url("/settings")], 404),
            (["-F", photo, s.url("/v1/vision/detection")], 401),
            (["-F", photo, "-F", "api_key=wrong", s.url("/v1/vision/detection")], 401),
            (["-F", photo, "-F", "api_key=s3cret", s.url("/v1/vision/detection")], 200),
            (["-F", photo, "-H", "Authorization: Bearer s3cret", s.url("/v1/vision/detection")], 200),
            (["--data-binary", "@samples/coffee.png", s.url("/detect")], 401),
            (["--data-binary", "@samples/coffee.png", "-H", "Authorization: Bearer s3cre", s.url("/detect")], 401),
            (["--data-binary", "@samples/coffee.png", "-H", "Authorization: Bearer s3cret", s.url("/detect")], 200),
            (["--data-binary", "@samples/coffee.png", s.url("/detect?api_key=s3cret")], 200),
            ([s.url("/metrics")], 401),
            (["-H", "Authorization: Bearer s3cret", s.url("/metrics")], 200),
            ([s.url("/health")], 200),
        ]
        for (args, status) in cases {
            let r = try curl(args)
            XCTAssertEqual(r.status, status, "\(args): \(r.text)")
            if status == 401 {
                XCTAssertEqual(r.header("WWW-Authenticate"), "Bearer")
                XCTAssertTrue(r.text.contains("a valid API key is needed"), r.text)
                XCTAssertFalse(r.text.contains("yolov3-tiny"), "\(args): the model named without the key: \(r.text)")
            }
        }
    }

    /// Usage errors exit 64 before anything starts; a port already taken exits 1 saying so.
    func testUsageErrorsAndATakenPort() throws {
        let s = try server()
        let yolo = try ServeProcess.yolo()
        for (args, phrase) in [(["--listen", "nowhere:80"], "'nowhere' is not an IP address"),
                               (["--listen", "127.0.0.1:99999"], "a port in 0...65535"),
                               (["--loop"], "--loop is about the live source"),
                               (["--queue", "-1"], "--queue -1"),
                               (["photo.jpg"], "serve takes no positional arguments"),
                               (["--api-key", ""], "--api-key needs a key"),
                               (["--api-key-file", "/nonexistent/key.txt"], "--api-key-file /nonexistent/key.txt: cannot open it (No such file"),
                               (["--api-key-file", "/dev/null"], "its first line is empty"),
                               (["--api-key", "k", "--api-key-file", "/dev/null"], "give one"),
                               (["--allow-host", "camera.lan:8080"], "without a port"),
                               (["--model-name", "list"], "/v1/vision/custom/list lists the models")] {
            let out = try runProcess(yolo, ["serve"] + args, in: repositoryRoot)
            XCTAssertEqual(out.status, 64, "\(args): \(out.stderr)")
            XCTAssertTrue(out.stderr.contains(phrase), "\(args): \(out.stderr)")
        }
        let r = repositoryRoot
        let taken = try runProcess(yolo, ["serve", "--listen", "127.0.0.1:\(s.port)", "--cfg", r + "/weights/yolov3-tiny.cfg",
                                          "--weights", r + "/weights/yolov3-tiny.weights", "--names", r + "/weights/coco.names"],
                                   in: r, timeout: 300)
        XCTAssertEqual(taken.status, 1, taken.stderr)
        XCTAssertTrue(taken.stderr.contains("cannot listen on 127.0.0.1:\(s.port): Address already in use"), taken.stderr)
        XCTAssertEqual(try curl([s.url("/health")]).status, 200)
    }
}
