// FramePipeline: frames in, detections out in frame order, N detectors of one model at once;
// blocking and async use (FrameResults).
import Dispatch
import YOLO

/// Frames in, detections out, in frame order: `sessions` detectors of one shared `Model` work
/// on frames at once (each on a thread of its own), so several
/// frames are in flight while the caller reads the next frames and consumes (draws, encodes)
/// the finished ones. Memory stays flat: at most `capacity` frames are held, however long the
/// stream. A source that fails ends the stream with its error (`finish(throwing:)`).
///
/// Blocking use, from any threads: `submit` frames (one producer), `finish()` at the end, and
/// `next()` until it returns nil (one consumer). With Swift concurrency: `results(for:)`.
public final class FramePipeline: Sendable {
    public let options: FramePipelineOptions
    /// Frames admitted and not yet taken by `next()`, at most.
    public let capacity: Int
    private let core: PipelineCore<VideoFrame, FrameResult>
    private let tracker: Locked<IoUTracker>

    /// Makes `options.sessions` detectors of `model` (each `options.threadsPerSession` threads).
    public init(model: Model, classNames: [String] = [], detectorOptions: DetectorOptions = DetectorOptions(),
                options: FramePipelineOptions = FramePipelineOptions()) throws(YOLOError) {
        guard options.sessions >= 1 else { throw .invalidArgument("sessions \(options.sessions): expected 1 or more") }
        guard options.threadsPerSession >= 1 else {
            throw .invalidArgument("threads per session \(options.threadsPerSession): expected 1 or more")
        }
        guard options.smoothing >= 1 else { throw .invalidArgument("smoothing \(options.smoothing): expected 1 or more") }
        self.options = options
        capacity = max(options.maxInFlight ?? 2 * options.sessions, options.dropStale ? options.sessions + 1 : 1)
        var workers: [PipelineCore<VideoFrame, FrameResult>.Worker] = []
        for _ in 0..<options.sessions {
            workers.append(.init(detector: try Detector(model: model, classNames: classNames, options: detectorOptions,
                                                        threads: options.threadsPerSession)))
        }
        core = PipelineCore(capacity: capacity, dropStale: options.dropStale, workers: workers) { detector, item in
            Self.detect(item.job, skipped: item.skipped, with: detector)
        }
        tracker = Locked(IoUTracker(minIoU: options.trackMinIoU, maxMissed: options.trackMaxMissed,
                                   smoothing: options.smoothing))
    }

    deinit { core.cancel() }

    /// Hands a frame to the pipeline. Waits while `capacity` frames are in flight, unless the
    /// pipeline drops stale frames. Returns false (and drops the frame) after `finish()`.
    @discardableResult
    public func submit(_ frame: VideoFrame) -> Bool {
        core.submitWaiting(frame, index: frame.index)
    }

    /// Hands a frame to the pipeline from async code: suspends (without blocking a thread)
    /// while the pipeline is full. Returns false after `finish()`.
    @discardableResult
    public func submit(_ frame: VideoFrame) async -> Bool {
        while true {
            switch core.submit(frame, index: frame.index) {
            case .admitted, .dropped: return true
            case .closed: return false
            case .full:
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    if !core.waitForSpace({ c.resume() }) { c.resume() }
                }
            }
        }
    }

    /// Admits the frame if there is room (or, when live, by dropping a stale one); returns
    /// false when it would have to wait (or after `finish()`).
    public func trySubmit(_ frame: VideoFrame) -> Bool {
        core.submit(frame, index: frame.index) == .admitted
    }

    /// No more frames: `next()` returns the frames in flight, then nil.
    public func finish() { core.finish(error: nil) }

    /// The source failed: no more frames; `next()` returns the frames in flight, then nil, and
    /// `sourceError` is `error` (the async results throw it after the last frame).
    public func finish(throwing error: any Error) { core.finish(error: error) }

    /// Why the source ended, when it failed (see `finish(throwing:)`).
    public var sourceError: (any Error)? { core.sourceError }

    /// The next result in frame order; waits for it. Nil when `finish()` was called and every
    /// frame was returned. One consumer at a time.
    public func next() -> FrameResult? {
        core.takeWaiting().map(tracked)
    }

    /// `next()` for async code: suspends instead of blocking. Cancelling the waiting task
    /// finishes the pipeline (the frames in flight still come out).
    public func next() async -> FrameResult? {
        while true {
            switch core.take() {
            case .result(let r): return tracked(r)
            case .end: return nil
            case .notReady:
                await withTaskCancellationHandler {
                    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                        if !core.waitForResult({ c.resume() }) { c.resume() }
                    }
                } onCancel: {
                    finish()
                }
            }
        }
    }

    /// Detects in one frame (on a worker's thread).
    private static func detect(_ frame: VideoFrame, skipped: [Int], with detector: Detector) -> FrameResult {
        var result = FrameResult(frame: frame, detections: [], tracked: [], timing: DetectionTiming(),
                                 skipped: skipped, error: nil)
        do {
            result.detections = try detector.detect(frame)
            result.timing = detector.lastTiming
        } catch {
            result.error = error
        }
        return result
    }

    private func tracked(_ result: FrameResult) -> FrameResult {
        guard result.error == nil else { return result }
        var r = result
        r.tracked = tracker.withLock {
            $0.update(result.detections, frameWidth: result.frame.width, frameHeight: result.frame.height)
        }
        return r
    }

    /// Frames dropped (live) after the last admitted frame: known once `next()` returned nil.
    public var trailingSkipped: [Int] { core.trailingSkipped }

    /// The number of frames dropped so far.
    public var skippedCount: Int { core.skippedCount }

    /// The results in frame order, as an async sequence of frames submitted elsewhere; it ends
    /// after `finish()` once every frame is out, throwing the source's error if it failed.
    public func results() -> FrameResults { FrameResults(pipeline: self, producer: nil) }

    /// Runs every frame of `frames` through the pipeline: their results, in order. Ends when
    /// `frames` ends and the frames in flight are out; when `frames` throws, the results end
    /// with that error (after the frames in flight). A consumer that stops early finishes the
    /// pipeline and cancels the reading of `frames`.
    public func results<Frames: AsyncSequence & Sendable>(for frames: Frames) -> FrameResults
        where Frames.Element == VideoFrame {
        let producer = Task {
            do {
                for try await frame in frames {
                    if !(await submit(frame)) { break }
                }
                finish()
            } catch {
                finish(throwing: error)
            }
        }
        return FrameResults(pipeline: self, producer: producer)
    }
}

/// A pipeline's results as an async sequence (see `FramePipeline.results(for:)`).
public struct FrameResults: AsyncSequence, Sendable {
    public typealias Element = FrameResult
    let pipeline: FramePipeline
    let producer: Task<Void, Never>?

    public func makeAsyncIterator() -> Iterator { Iterator(consumer: Consumer(pipeline: pipeline, producer: producer)) }

    public struct Iterator: AsyncIteratorProtocol {
        let consumer: Consumer

        public mutating func next() async throws -> FrameResult? {
            if let result = await consumer.pipeline.next() { return result }
            if let error = consumer.pipeline.sourceError { throw error }
            return nil
        }
    }

    /// Ends the pipeline and its producer when the iterator goes away (early or at the end).
    final class Consumer: Sendable {
        let pipeline: FramePipeline
        let producer: Task<Void, Never>?
        init(pipeline: FramePipeline, producer: Task<Void, Never>?) {
            self.pipeline = pipeline
            self.producer = producer
        }
        deinit {
            pipeline.finish()
            producer?.cancel()
        }
    }
}
