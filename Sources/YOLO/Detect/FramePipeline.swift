import YOLOCore

/// One video frame handed to a `FramePipeline`.
public struct VideoFrame: Sendable {
    /// The frame's position in the source (0, 1, 2, ...), counting frames that get skipped.
    public var index: Int
    /// Its time in seconds (presentation time, or index / frame rate).
    public var time: Double
    /// The pixels: `height` rows `rowStride` bytes apart, in `format`.
    public var pixels: [UInt8]
    public var width: Int
    public var height: Int
    public var rowStride: Int
    public var format: PixelFormat
    /// How long reading and decoding the frame took (reported back in `FrameResult`).
    public var decodeNanoseconds: UInt64

    public init(index: Int, time: Double, pixels: [UInt8], width: Int, height: Int, rowStride: Int? = nil,
                format: PixelFormat = .rgb, decodeNanoseconds: UInt64 = 0) {
        self.index = index
        self.time = time
        self.pixels = pixels
        self.width = width
        self.height = height
        self.rowStride = rowStride ?? width * format.bytesPerPixel
        self.format = format
        self.decodeNanoseconds = decodeNanoseconds
    }
}

/// What a `FramePipeline` reports for one frame, in frame order.
public struct FrameResult: Sendable {
    /// The frame, pixels included (to draw on and pass on).
    public var frame: VideoFrame
    /// The detections, in Darknet's order (as `Detector.detect` returns them).
    public var detections: [Detection]
    /// The same detections with track ids, boxes smoothed as `FramePipelineOptions.smoothing` says.
    public var tracked: [TrackedDetection]
    /// Preprocess, inference and postprocess time of this frame.
    public var timing: DetectionTiming
    /// Indices of the frames dropped (live sources only) since the previous result.
    public var skipped: [Int]
    /// Set when the frame could not be processed (e.g. a buffer too small for its size).
    public var error: YOLOError?
}

/// How a `FramePipeline` runs.
public struct FramePipelineOptions: Sendable {
    /// Detectors (sessions) working at once, all sharing one model.
    public var sessions: Int
    /// Threads per session.
    public var threadsPerSession: Int
    /// Frames admitted and not yet taken by `next()` (queued, being processed or done and
    /// waiting to be emitted in order); `submit` waits (or, when live, drops) beyond this.
    /// Default: 2 x sessions.
    public var maxInFlight: Int?
    /// A live source: `submit` never waits. At most one frame waits for a free detector; a
    /// newer frame replaces it (newest wins), and the replaced frames are reported in the
    /// next result's `skipped`.
    public var dropStale: Bool
    /// Frames each tracked box is averaged over (1: no smoothing).
    public var smoothing: Int
    /// The tracker's minimum IoU to continue a track, and how many frames a track survives unseen.
    public var trackMinIoU: Float
    public var trackMaxMissed: Int

    public init(sessions: Int = 2, threadsPerSession: Int = 1, maxInFlight: Int? = nil, dropStale: Bool = false,
                smoothing: Int = 1, trackMinIoU: Float = 0.3, trackMaxMissed: Int = 5) {
        self.sessions = sessions
        self.threadsPerSession = threadsPerSession
        self.maxInFlight = maxInFlight
        self.dropStale = dropStale
        self.smoothing = smoothing
        self.trackMinIoU = trackMinIoU
        self.trackMaxMissed = trackMaxMissed
    }
}

/// Frames in, detections out, in frame order: `sessions` detectors of one shared `Model`, each
/// on a thread of its own, take frames from a bounded queue, so several frames are in flight
/// while the caller reads the next frames and consumes (draws, encodes) the finished ones.
/// Memory stays flat: at most `maxInFlight` frames are held, however long the stream.
///
/// Blocking use, from any threads: `submit` frames (one producer), `finish()` at the end, and
/// `next()` until it returns nil (one consumer). With Swift concurrency: `results(for:)`.
public final class FramePipeline: @unchecked Sendable {
    public let options: FramePipelineOptions
    public let capacity: Int
    private let state: PipelineState
    private var threads: [pthread_t] = []
    private var tracker: IoUTracker

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
        state = PipelineState(capacity: capacity, dropStale: options.dropStale)
        tracker = IoUTracker(minIoU: options.trackMinIoU, maxMissed: options.trackMaxMissed, smoothing: options.smoothing)
        var detectors: [Detector] = []
        for _ in 0..<options.sessions {
            detectors.append(try Detector(model: model, classNames: classNames, options: detectorOptions,
                                          threads: options.threadsPerSession))
        }
        for detector in detectors {
            let box = Unmanaged.passRetained(PipelineWorker(state: state, detector: detector))
            var tid = pthread_t()
            let rc = pthread_create(&tid, nil, { raw in
                let worker = Unmanaged<PipelineWorker>.fromOpaque(raw!).takeRetainedValue()
                worker.run()
                return nil
            }, box.toOpaque())
            if rc == 0 { threads.append(tid) } else { box.release() }
        }
        if threads.isEmpty {
            state.finish()
            throw .invalidArgument("could not start the pipeline's threads")
        }
    }

    deinit {
        state.finish()
        state.cancel()
        for t in threads { pthread_join(t, nil) }
    }

    /// Hands a frame to the pipeline. Waits while `capacity` frames are in flight, unless the
    /// pipeline drops stale frames. Returns false (and drops the frame) after `finish()`.
    @discardableResult
    public func submit(_ frame: VideoFrame) -> Bool {
        state.submit(frame, wait: true) != .closed
    }

    /// Admits the frame if there is room (or, when live, by dropping a stale one); returns
    /// false when it would have to wait (or after `finish()`).
    public func trySubmit(_ frame: VideoFrame) -> Bool {
        state.submit(frame, wait: false) == .admitted
    }

    /// No more frames: `next()` returns the frames in flight, then nil.
    public func finish() { state.finish() }

    /// The next result in frame order; waits for it. Nil when `finish()` was called and every
    /// frame was returned. One consumer at a time.
    public func next() -> FrameResult? {
        guard var result = state.next() else { return nil }
        if result.error == nil {
            result.tracked = tracker.update(result.detections, frameWidth: result.frame.width,
                                            frameHeight: result.frame.height)
        }
        return result
    }

    /// Frames dropped (live) after the last admitted frame: known once `next()` returned nil.
    public var trailingSkipped: [Int] { state.trailingSkipped() }

    /// The number of frames dropped so far.
    public var skippedCount: Int { state.skippedTotal() }
}

/// A worker: one detector on its own thread.
private final class PipelineWorker {
    let state: PipelineState
    let detector: Detector
    init(state: PipelineState, detector: Detector) { self.state = state; self.detector = detector }

    func run() {
        while let item = state.take() {
            let (seq, frame, skipped) = item
            var result = FrameResult(frame: frame, detections: [], tracked: [], timing: DetectionTiming(),
                                     skipped: skipped, error: nil)
            do {
                // (withUnsafeBytes would erase the error type.)
                result.detections = try frame.pixels.withUnsafeBytes { p in
                    Result { () throws(YOLOError) in
                        try detector.detect(pixels: p, width: frame.width, height: frame.height,
                                            rowStride: frame.rowStride, format: frame.format)
                    }
                }.get()
                result.timing = detector.lastTiming
            } catch {
                result.error = error
            }
            state.complete(seq, result)
        }
    }
}

enum SubmitOutcome { case admitted, dropped, full, closed }

/// Queue, results and counters, shared by the pipeline and its workers.
final class PipelineState: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let work = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let space = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let ready = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    let capacity: Int
    let dropStale: Bool
    // Guarded by mutex.
    private var queue: [(seq: Int, frame: VideoFrame, skipped: [Int])] = []
    private var done: [Int: FrameResult] = [:]
    private var nextSeq = 0
    private var nextOut = 0
    private var finished = false
    private var cancelled = false
    private var pendingSkipped: [Int] = []
    private var skippedCount = 0
    /// Called (outside the lock) when room frees up: wakes async submitters.
    private var spaceWaiters: [() -> Void] = []

    init(capacity: Int, dropStale: Bool) {
        self.capacity = capacity
        self.dropStale = dropStale
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(work, nil); pthread_cond_init(space, nil); pthread_cond_init(ready, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        pthread_cond_destroy(work); pthread_cond_destroy(space); pthread_cond_destroy(ready)
        mutex.deallocate(); work.deallocate(); space.deallocate(); ready.deallocate()
    }

    private var inFlight: Int { nextSeq - nextOut }

    func submit(_ frame: VideoFrame, wait: Bool) -> SubmitOutcome {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while true {
            if finished { return .closed }
            if dropStale {
                if let last = queue.indices.last {
                    // Newest wins: the waiting frame is replaced and reported as skipped.
                    queue[last].skipped.append(queue[last].frame.index)
                    queue[last].frame = frame
                    skippedCount += 1
                    return .admitted
                }
                if inFlight >= capacity {
                    pendingSkipped.append(frame.index)
                    skippedCount += 1
                    return .dropped
                }
            } else if inFlight >= capacity {
                if !wait { return .full }
                pthread_cond_wait(space, mutex)
                continue
            }
            queue.append((nextSeq, frame, pendingSkipped))
            pendingSkipped = []
            nextSeq += 1
            pthread_cond_signal(work)
            return .admitted
        }
    }

    /// Registers `wake` to be called when room frees up, unless there is room now (then false).
    func waitForSpace(_ wake: @escaping () -> Void) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if finished || dropStale || inFlight < capacity { return false }
        spaceWaiters.append(wake)
        return true
    }

    /// The next frame to process, or nil when finished and the queue is empty.
    func take() -> (Int, VideoFrame, [Int])? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while queue.isEmpty && !finished && !cancelled { pthread_cond_wait(work, mutex) }
        if cancelled || queue.isEmpty { return nil }
        let item = queue.removeFirst()
        return (item.seq, item.frame, item.skipped)
    }

    func complete(_ seq: Int, _ result: FrameResult) {
        pthread_mutex_lock(mutex)
        done[seq] = result
        if seq == nextOut { pthread_cond_signal(ready) }
        pthread_mutex_unlock(mutex)
    }

    func next() -> FrameResult? {
        pthread_mutex_lock(mutex)
        while done[nextOut] == nil && !(finished && inFlight == 0) && !cancelled { pthread_cond_wait(ready, mutex) }
        guard let result = done.removeValue(forKey: nextOut) else { pthread_mutex_unlock(mutex); return nil }
        nextOut += 1
        pthread_cond_signal(space)
        let waiters = spaceWaiters
        spaceWaiters = []
        pthread_mutex_unlock(mutex)
        for wake in waiters { wake() }
        return result
    }

    func finish() {
        pthread_mutex_lock(mutex)
        finished = true
        pthread_cond_broadcast(work); pthread_cond_broadcast(space); pthread_cond_broadcast(ready)
        let waiters = spaceWaiters
        spaceWaiters = []
        pthread_mutex_unlock(mutex)
        for wake in waiters { wake() }
    }

    /// Stops the workers after their current frame (frames still queued are not processed).
    func cancel() {
        pthread_mutex_lock(mutex)
        cancelled = true
        queue.removeAll()
        pthread_cond_broadcast(work); pthread_cond_broadcast(space); pthread_cond_broadcast(ready)
        pthread_mutex_unlock(mutex)
    }

    func trailingSkipped() -> [Int] {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return pendingSkipped
    }

    func skippedTotal() -> Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return skippedCount
    }
}

#if !hasFeature(Embedded)
extension FramePipeline {
    /// Hands a frame to the pipeline from async code: suspends (without blocking a thread)
    /// while the pipeline is full. Returns false after `finish()`.
    @discardableResult
    public func submit(_ frame: VideoFrame) async -> Bool {
        while true {
            switch state.submit(frame, wait: false) {
            case .admitted, .dropped: return true
            case .closed: return false
            case .full:
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    if !state.waitForSpace({ c.resume() }) { c.resume() }
                }
            }
        }
    }

    /// The results in frame order, as an async sequence; it ends after `finish()` once every
    /// frame is out. A thread of the pipeline's own waits for them, so no task blocks.
    public func results() -> AsyncStream<FrameResult> {
        AsyncStream(bufferingPolicy: .bufferingOldest(1)) { continuation in
            let box = Unmanaged.passRetained(ResultPump(pipeline: self, continuation: continuation))
            var tid = pthread_t()
            let rc = pthread_create(&tid, nil, { raw in
                let pump = Unmanaged<ResultPump>.fromOpaque(raw!).takeRetainedValue()
                pump.run()
                return nil
            }, box.toOpaque())
            if rc == 0 { pthread_detach(tid) } else { box.release(); continuation.finish() }
        }
    }

    /// Runs every frame of `frames` through the pipeline: their results, in order. Ends when
    /// `frames` ends (or throws) and the frames in flight are out.
    public func results<Frames: AsyncSequence & Sendable>(for frames: Frames) -> AsyncStream<FrameResult>
        where Frames.Element == VideoFrame {
        let stream = results()
        Task {
            do {
                for try await frame in frames {
                    if !(await submit(frame)) { break }
                }
            } catch {}
            finish()
        }
        return stream
    }
}

/// Moves results from a pipeline into an AsyncStream, on a thread of its own. Yields wait for
/// the consumer (the stream buffers one), so results never pile up.
private final class ResultPump: @unchecked Sendable {
    let pipeline: FramePipeline
    let continuation: AsyncStream<FrameResult>.Continuation
    init(pipeline: FramePipeline, continuation: AsyncStream<FrameResult>.Continuation) {
        self.pipeline = pipeline
        self.continuation = continuation
    }

    func run() {
        while let result = pipeline.next() {
            // A full buffer: wait for the consumer to take one (polling keeps this simple).
            while true {
                switch continuation.yield(result) {
                case .enqueued: break
                case .dropped: usleep(500); continue
                case .terminated: pipeline.finish(); return
                @unknown default: break
                }
                break
            }
        }
        continuation.finish()
    }
}
#endif
