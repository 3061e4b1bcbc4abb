// Detection for a request: admitted into the bounded queue (or refused with 503 and
// Retry-After), decoded from the bytes sent (never a file), detected on a borrowed session,
// and answered as `yolo detect --json` prints it (POST /detect) or as DeepStack does.
import YOLO
import YOLOCore
import YOLOImage
import YOLOText

/// One request's result.
struct DetectionOutcome: Sendable {
    /// The image's name (the form's file name, or ?name=) and size.
    var name: String
    var width: Int, height: Int
    var detections: [Detection]
    var timing: DetectionTiming
    /// From the body complete to the result, nanoseconds.
    var processNanoseconds: UInt64
}

extension DetectionServer {
    /// POST /detect: the body is the image, or a form with the field `image`.
    func detectRequest(_ r: HTTPRequest, options: DetectorOptions) -> BodyOutcome {
        var bytes = r.body, name = r.query["name"] ?? "upload"
        if r.isForm {
            guard let image = r.fields["image"] else {
                return .respond(.error(400, "no image: the form needs the field 'image' (or send the image itself as the body)"))
            }
            bytes = image.value
            name = image.filename ?? name
        }
        guard !bytes.isEmpty else {
            return .respond(.error(400, "no image: the body is empty (send JPEG or PNG bytes, or a form with the field 'image')"))
        }
        return submit(bytes, name: name, options: options) { outcome in
            .json(200, detectionsJSON(image: outcome.name, width: outcome.width, height: outcome.height,
                                      inferenceMilliseconds: Double(outcome.timing.inference) / 1e6,
                                      detections: outcome.detections) + "\n")
        }
    }

    /// Admits a detection into the queue, or answers 503 when the queue is full (400 when the
    /// options pass the server's limits: a threshold under the floor, more detections than the cap).
    func submit(_ bytes: [UInt8], name: String, options: DetectorOptions,
                answer: @escaping @Sendable (DetectionOutcome) -> HTTPResponse) -> BodyOutcome {
        let limits = configuration.limits
        if let refusal = limits.thresholdRefusal(options.threshold) ?? limits.maxDetectionsRefusal(options.maxDetections) {
            return .respond(.error(400, refusal))
        }
        var capped = options
        capped.maxDetections = min(options.maxDetections ?? limits.maxDetections, limits.maxDetections)
        let options = capped
        guard queue.reserve() else {
            metrics.count("yolo_http_rejected_total", "reason=\"queue_full\"")
            return .respond(.error(503, "busy: \(pool.count) sessions at work and \(queue.capacity) requests waiting; retry later",
                                   headers: [("Retry-After", "1")]))
        }
        let admitted = monotonicNanoseconds()
        return .later { [self] deliver in
            queue.enqueue { [self] in
                metrics.observe("yolo_stage_seconds", "path=\"request\",stage=\"queue\"",
                                seconds: Double(monotonicNanoseconds() - admitted) / 1e9)
                switch detect(bytes, name: name, options: options, since: admitted) {
                case .success(let outcome): deliver(answer(outcome))
                case .failure(let error): deliver(error.response)
                }
            }
        }
    }

    /// Decodes and detects, recording each stage's time.
    func detect(_ bytes: [UInt8], name: String, options: DetectorOptions, since admitted: UInt64)
        -> Result<DetectionOutcome, RequestFailure> {
        let start = monotonicNanoseconds()
        let image: RGBImage
        do {
            image = try decodeImage(bytes, name: name, applyEXIFOrientation: configuration.applyEXIFOrientation,
                                    maxPixels: configuration.limits.maxPixels, timeLimit: configuration.limits.decodeSeconds)
        } catch let e as ImageError {
            return .failure(RequestFailure(image: e))
        } catch {
            return .failure(RequestFailure(response: .error(400, "\(error)")))
        }
        observe("decode", monotonicNanoseconds() - start)
        let (result, timing) = pool.with { d -> (Result<[Detection], YOLOError>, DetectionTiming) in
            d.options = options
            let r = Result { () throws(YOLOError) in try d.detect(rgb: image.pixels, width: image.width, height: image.height) }
            return (r, d.lastTiming)
        }
        switch result {
        case .success(let detections):
            observe("preprocess", timing.preprocess)
            observe("inference", timing.inference)
            observe("postprocess", timing.postprocess)
            return .success(DetectionOutcome(name: name, width: image.width, height: image.height, detections: detections,
                                             timing: timing, processNanoseconds: monotonicNanoseconds() - admitted))
        case .failure(let error):
            return .failure(RequestFailure(response: .error(500, "\(name): detection failed: \(error)")))
        }
    }

    private func observe(_ stage: String, _ nanoseconds: UInt64) {
        metrics.observe("yolo_stage_seconds", "path=\"request\",stage=\"\(stage)\"", seconds: Double(nanoseconds) / 1e9)
    }

    /// DeepStack's answer: the most confident first (Frigate stops reading at the first one
    /// under its cut-off), boxes in whole pixels clamped to the image.
    func deepstackJSON(_ o: DetectionOutcome) -> String {
        func pixel(_ v: Float, _ limit: Int) -> Int { v.isFinite ? Int(min(max(v, 0), Float(limit)).rounded()) : 0 }
        let sorted = o.detections.enumerated().sorted { a, b in
            a.element.confidence != b.element.confidence ? a.element.confidence > b.element.confidence : a.offset < b.offset
        }.map(\.element)
        let predictions = sorted.map { d in
            "{\"label\": \(jsonString(d.className)), \"confidence\": \(jsonNumber(d.confidence)), "
                + "\"x_min\": \(pixel(d.left, o.width)), \"y_min\": \(pixel(d.top, o.height)), "
                + "\"x_max\": \(pixel(d.right, o.width)), \"y_max\": \(pixel(d.bottom, o.height))}"
        }
        return "{\"success\": true, \"predictions\": [\(predictions.joined(separator: ", "))], \"count\": \(predictions.count), "
            + "\"inferenceMs\": \(Int((Double(o.timing.inference) / 1e6).rounded())), "
            + "\"processMs\": \(Int((Double(o.processNanoseconds) / 1e6).rounded())), \"code\": 200}\n"
    }
}

/// A request that could not be answered with detections: its HTTP error.
struct RequestFailure: Error {
    var response: HTTPResponse

    init(response: HTTPResponse) { self.response = response }

    /// An image's problem as a status: too many pixels, scans or seconds to decode 413, not a
    /// JPEG or PNG 415, else 400.
    init(image error: ImageError) {
        switch error {
        case .tooLarge, .tooCostly: response = .error(413, error.description)
        case .notAnImage, .unsupported: response = .error(415, error.description)
        default: response = .error(400, error.description)
        }
    }
}
