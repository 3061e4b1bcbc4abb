// The inside of a FramePipeline: waiting frames and finished results under one lock, one thread
// per detector, wake-ups instead of polling.
import Dispatch
import Foundation
import YOLO

/// The inside of a `FramePipeline`: the frames waiting for a detector and the results waiting
/// to be taken in order, under one lock (`Locked`, a pthread mutex that owns the state:
/// ThreadSanitizer sees through it, not through Synchronization's futex-based `Mutex`), and one
/// thread per detector. Nothing polls:
/// whoever must wait (an idle worker for a frame, a producer for room, the consumer for the
/// next result) registers a wake-up call under the lock and sleeps on a semaphore (or a
/// continuation); the change it waits for makes the call, outside the lock. The workers have
/// threads of their own (not a shared pool), so `sessions` detections run at once whatever
/// else the process does, and a caller blocked in `submit` or `next` can never starve them.
final class PipelineCore: Sendable {
    typealias Waiter = @Sendable () -> Void

    /// A detector; only its worker thread uses it.
    struct Worker: @unchecked Sendable { let detector: Detector }

    struct Item: Sendable {
        var seq: Int
        var frame: VideoFrame
        var skipped: [Int]
    }

    enum SubmitOutcome { case admitted, dropped, full, closed }
    enum TakeOutcome { case result(FrameResult), end, notReady }
    private enum Work { case frame(Item), wait, stop }

    private struct State {
        let capacity: Int
        let dropStale: Bool
        var waiting: [Item] = []
        /// Wake-ups of the workers waiting for a frame.
        var idleWorkers: [Waiter] = []
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

        /// Everyone waiting, to wake (each rechecks what it waits for).
        mutating func takeAllWaiters() -> [Waiter] {
            var all = spaceWaiters + idleWorkers
            spaceWaiters = []
            idleWorkers = []
            if let w = resultWaiter { all.append(w); resultWaiter = nil }
            return all
        }
    }

    let capacity: Int
    private let state: Locked<State>

    /// Starts a thread per worker; they end after `finish` (once no frame waits) or `cancel`.
    init(capacity: Int, dropStale: Bool, workers: [Worker]) {
        self.capacity = capacity
        state = Locked(State(capacity: capacity, dropStale: dropStale))
        for worker in workers {
            let thread = Thread { [self] in work(worker) }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// Admits a frame if there is room (when live, by replacing the frame that waits for a
    /// detector, or dropping this one when every place is taken).
    func submit(_ frame: VideoFrame) -> SubmitOutcome {
        let (outcome, wake) = state.withLock { s -> (SubmitOutcome, Waiter?) in
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
            return (.admitted, s.idleWorkers.popLast())
        }
        wake?()
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

    /// A worker thread: takes frames (sleeping while none waits), detects, hands the result on.
    private func work(_ worker: Worker) {
        let wake = DispatchSemaphore(value: 0)
        while true {
            let next = state.withLock { s -> Work in
                if s.cancelled { return .stop }
                if !s.waiting.isEmpty { return .frame(s.waiting.removeFirst()) }
                if s.finished { return .stop }
                s.idleWorkers.append { wake.signal() }
                return .wait
            }
            switch next {
            case .stop: return
            case .wait: wake.wait()
            case .frame(let item):
                let result = Self.detect(item, with: worker.detector)
                let ready = state.withLock { s -> Waiter? in
                    s.done[item.seq] = result
                    guard item.seq == s.nextOut else { return nil }
                    defer { s.resultWaiter = nil }
                    return s.resultWaiter
                }
                ready?()
            }
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
