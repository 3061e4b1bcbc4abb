// ImagePipeline: a batch of images (paths, or anything a `load` closure decodes) through several
// detectors of one model, every stage of an image on the worker that takes it, results in input
// order through a bounded reordering buffer.
import Dispatch
import YOLO

/// What an `ImagePipeline` reports for one input, in input order.
public struct ImageResult<Input: Sendable>: Sendable {
    /// The input as submitted.
    public var input: Input
    /// Its position among the inputs submitted (0, 1, 2, ...).
    public var sequence: Int
    /// The decoded image's size (0 when it could not be loaded).
    public var width: Int
    public var height: Int
    /// The decoded image, when the pipeline keeps pixels (`keepPixels`: to draw on); else nil.
    public var image: VideoFrame?
    /// The detections, in Darknet's order.
    public var detections: [Detection]
    /// Preprocess, inference and postprocess time.
    public var timing: DetectionTiming
    /// Reading and decoding time (the `load` closure).
    public var decodeNanoseconds: UInt64
    /// Why the input could not be processed (what `load` threw, or the detector's error).
    public var error: (any Error)?
}

/// Images in, detections out, in input order, with every core busy: `sessions` detectors of one
/// shared `Model`, each on a thread of its own, each taking the next input and doing all of its
/// work: reading and decoding (`load`, given by the caller: a file, a URL, bytes), letterboxing,
/// the forward pass and decoding the boxes. Inputs at different stages overlap across the
/// workers (one decodes while another runs the network), so no stage waits for a serial one,
/// and a slow image holds up only its own worker. The caller's thread submits (waiting when the
/// pipeline is full) and another takes results (`next()`), as with `FramePipeline`.
///
/// Memory stays flat however many inputs go through: at most `capacity` inputs are admitted and
/// not yet taken (waiting, being processed, or done and waiting for an earlier one), and a done
/// result holds its pixels only when `keepPixels`.
public final class ImagePipeline<Input: Sendable>: Sendable {
    /// Inputs admitted and not yet taken by `next()`, at most (the reordering buffer's bound).
    public let capacity: Int
    private let core: PipelineCore<Input, ImageResult<Input>>

    /// `sessions` detectors of `model`, `threadsPerSession` threads each. `maxInFlight`: the
    /// reordering buffer's bound, default 16 x sessions (2 x sessions when `keepPixels`, as
    /// results then hold decoded images). `load` reads and decodes one input, on a worker.
    public init(model: Model, classNames: [String] = [], detectorOptions: DetectorOptions = DetectorOptions(),
                sessions: Int, threadsPerSession: Int = 1, maxInFlight: Int? = nil, keepPixels: Bool = false,
                load: @escaping @Sendable (Input) throws -> VideoFrame) throws(YOLOError) {
        guard sessions >= 1 else { throw .invalidArgument("sessions \(sessions): expected 1 or more") }
        guard threadsPerSession >= 1 else { throw .invalidArgument("threads per session \(threadsPerSession): expected 1 or more") }
        if let maxInFlight, maxInFlight < 1 { throw .invalidArgument("maxInFlight \(maxInFlight): expected 1 or more") }
        capacity = maxInFlight ?? (keepPixels ? 2 : 16) * sessions
        var workers: [PipelineCore<Input, ImageResult<Input>>.Worker] = []
        for _ in 0..<sessions {
            workers.append(.init(detector: try Detector(model: model, classNames: classNames, options: detectorOptions,
                                                        threads: threadsPerSession)))
        }
        core = PipelineCore(capacity: capacity, dropStale: false, workers: workers) { detector, item in
            Self.process(item.job, sequence: item.seq, detector: detector, keepPixels: keepPixels, load: load)
        }
    }

    deinit { core.cancel() }

    /// Hands an input to the pipeline; waits while `capacity` inputs are in flight. Returns
    /// false (and drops the input) after `finish()`.
    @discardableResult
    public func submit(_ input: Input) -> Bool { core.submitWaiting(input, index: 0) }

    /// No more inputs: `next()` returns the results in flight, then nil.
    public func finish() { core.finish(error: nil) }

    /// The source of inputs failed: `next()` returns the results in flight, then nil, and
    /// `sourceError` is `error`.
    public func finish(throwing error: any Error) { core.finish(error: error) }

    /// Why the source ended, when it failed.
    public var sourceError: (any Error)? { core.sourceError }

    /// The next result in input order; waits for it. Nil when `finish()` was called and every
    /// input was returned. One consumer at a time.
    public func next() -> ImageResult<Input>? { core.takeWaiting() }

    /// One input, start to end, on a worker's thread.
    private static func process(_ input: Input, sequence: Int, detector: Detector, keepPixels: Bool,
                                load: @Sendable (Input) throws -> VideoFrame) -> ImageResult<Input> {
        var result = ImageResult(input: input, sequence: sequence, width: 0, height: 0, image: nil, detections: [],
                                 timing: DetectionTiming(), decodeNanoseconds: 0, error: nil)
        let start = DispatchTime.now().uptimeNanoseconds
        do {
            let frame = try load(input)
            result.decodeNanoseconds = DispatchTime.now().uptimeNanoseconds - start
            result.width = frame.width
            result.height = frame.height
            result.detections = try detector.detect(frame)
            result.timing = detector.lastTiming
            if keepPixels { result.image = frame }
        } catch {
            if result.decodeNanoseconds == 0 { result.decodeNanoseconds = DispatchTime.now().uptimeNanoseconds - start }
            result.error = error
        }
        return result
    }
}
