import Dispatch
import Synchronization
import YOLO

/// The inside of a `FramePipeline`: the frames waiting for a detector, the results waiting to
/// be taken in order, and the idle detectors, all under one `Mutex`. Nothing polls: a frame
/// admitted while a detector is idle starts a work item at once (on a concurrent dispatch
/// queue: one per busy detector, none while idle), a worker that finishes takes the next
/// waiting frame, and whoever must wait (a producer for room, the consumer for the next
/// result) registers a wake-up call that the change it waits for makes, outside the lock.
final class PipelineCore: Sendable {
    typealias Waiter = @Sendable () -> Void

    /// A detector; only the work item that took it from the idle list uses it.
    struct Worker: @unchecked Sendable { let detector: Detector }

    struct Item: Sendable {
        var seq: Int
        var frame: VideoFrame
        var skipped: [Int]
    }

    enum SubmitOutcome { case admitted, dropped, full, closed }
    enum TakeOutcome { case result(FrameResult), end, notReady }

    private struct State {
        let capacity: Int
        let dropStale: Bool
        var waiting: [Item] = []
        var idle: [Worker]
        var done: [Int: FrameResult] = [:]
        var nextSeq = 0
        var nextOut = 0
        var finished = false
        var cancelled = false
        var sourceError: (any Error)?
        var pendingSkipped: [Int] = []
        var skippedCount = 0
        var spaceWaiters: [Waiter] = []
        var resultWaiter: Waiter?

        var inFlight: Int { nextSeq - nextOut }

        /// An idle worker and a waiting frame to start it on, if both exist.
        mutating func assignWork() -> (Worker, Item)? {
            guard !cancelled, !idle.isEmpty, !waiting.isEmpty else { return nil }
            return (idle.removeLast(), waiting.removeFirst())
        }

        /// Everyone waiting, to wake (each rechecks what it waits for).
        mutating func takeAllWaiters() -> [Waiter] {
            var all = spaceWaiters
            spaceWaiters = []
            if let w = resultWaiter { all.append(w); resultWaiter = nil }
            return all
        }
    }

    let capacity: Int
    private let state: Mutex<State>
    private let queue = DispatchQueue(label: "YOLOStream.FramePipeline", attributes: .concurrent)

    init(capacity: Int, dropStale: Bool, workers: [Worker]) {
        self.capacity = capacity
        state = Mutex(State(capacity: capacity, dropStale: dropStale, idle: workers))
    }

    /// Admits a frame if there is room (when live, by replacing the frame that waits for a
    /// detector, or dropping this one when every place is taken).
    func submit(_ frame: VideoFrame) -> SubmitOutcome {
        let (outcome, start) = state.withLock { s -> (SubmitOutcome, (Worker, Item)?) in
            if s.finished || s.cancelled { return (.closed, nil) }
            if s.dropStale {
                if let last = s.waiting.indices.last {
                    // Newest wins: the waiting frame is replaced and reported as skipped.
                    s.waiting[last].skipped.append(s.waiting[last].frame.index)
                    s.waiting[last].frame = frame
                    s.skippedCount += 1
                    return (.admitted, nil)
                }
                if s.inFlight >= s.capacity {
                    s.pendingSkipped.append(frame.index)
                    s.skippedCount += 1
                    return (.dropped, nil)
                }
            } else if s.inFlight >= s.capacity {
                return (.full, nil)
            }
            s.waiting.append(Item(seq: s.nextSeq, frame: frame, skipped: s.pendingSkipped))
            s.pendingSkipped = []
            s.nextSeq += 1
            return (.admitted, s.assignWork())
        }
        if let (worker, item) = start { launch(worker, item) }
        return outcome
    }

    /// Registers `wake` for when room frees up (or the pipeline closes); false, without
    /// registering, when there is room now.
    func waitForSpace(_ wake: @escaping Waiter) -> Bool {
        state.withLock { s in
            if s.finished || s.cancelled || s.dropStale || s.inFlight < s.capacity { return false }
            s.spaceWaiters.append(wake)
            return true
        }
    }

    /// The next result in order, the end, or not ready yet.
    func take() -> TakeOutcome {
        let (outcome, wake) = state.withLock { s -> (TakeOutcome, [Waiter]) in
            if let r = s.done.removeValue(forKey: s.nextOut) {
                s.nextOut += 1
                let w = s.spaceWaiters
                s.spaceWaiters = []
                return (.result(r), w)
            }
            if s.cancelled || (s.finished && s.inFlight == 0) { return (.end, []) }
            return (.notReady, [])
        }
        for w in wake { w() }
        return outcome
    }

    /// Registers `wake` for when the next result is ready (or the end); false, without
    /// registering, when it is ready now.
    func waitForResult(_ wake: @escaping Waiter) -> Bool {
        state.withLock { s in
            if s.done[s.nextOut] != nil || s.cancelled || (s.finished && s.inFlight == 0) { return false }
            s.resultWaiter = wake
            return true
        }
    }

    /// No more frames (with the source's error, if it failed).
    func finish(error: (any Error)?) {
        let wake = state.withLock { s -> [Waiter] in
            if !s.finished, let error { s.sourceError = error }
            s.finished = true
            return s.takeAllWaiters()
        }
        for w in wake { w() }
    }

    /// Drops the waiting frames; workers stop after their current one.
    func cancel() {
        let wake = state.withLock { s -> [Waiter] in
            s.cancelled = true
            s.finished = true
            s.waiting.removeAll()
            return s.takeAllWaiters()
        }
        for w in wake { w() }
    }

    var sourceError: (any Error)? { state.withLock { $0.sourceError } }
    var trailingSkipped: [Int] { state.withLock { $0.pendingSkipped } }
    var skippedCount: Int { state.withLock { $0.skippedCount } }

    private func launch(_ worker: Worker, _ item: Item) {
        queue.async { self.work(worker, item) }
    }

    /// Detects frames with one worker until no frame waits; then the worker goes idle.
    private func work(_ worker: Worker, _ first: Item) {
        var item = first
        while true {
            let result = Self.detect(item, with: worker.detector)
            let (next, wake) = state.withLock { s -> (Item?, Waiter?) in
                s.done[item.seq] = result
                var wake: Waiter? = nil
                if item.seq == s.nextOut || s.cancelled { wake = s.resultWaiter; s.resultWaiter = nil }
                if !s.cancelled, !s.waiting.isEmpty { return (s.waiting.removeFirst(), wake) }
                s.idle.append(worker)
                return (nil, wake)
            }
            wake?()
            guard let next else { return }
            item = next
        }
    }

    private static func detect(_ item: Item, with detector: Detector) -> FrameResult {
        let frame = item.frame
        var result = FrameResult(frame: frame, detections: [], tracked: [], timing: DetectionTiming(),
                                 skipped: item.skipped, error: nil)
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
        return result
    }
}
