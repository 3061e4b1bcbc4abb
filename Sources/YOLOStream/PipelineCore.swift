// The inside of the pipelines (FramePipeline, ImagePipeline): waiting jobs and finished results
// under one lock, one thread per detector, results in submission order through a bounded
// reordering buffer, wake-ups instead of polling, and the blocking submit and next.
import Dispatch
import Foundation
import YOLO

/// The inside of a `FramePipeline` or an `ImagePipeline`: the jobs waiting for a detector and
/// the results waiting to be taken in order, under one lock (`Locked`, a pthread mutex that owns
/// the state: ThreadSanitizer sees through it, not through Synchronization's futex-based
/// `Mutex`), and one thread per detector, which turns a job into its `Output` with `process`.
///
/// The bound: at most `capacity` jobs are admitted and not yet taken (waiting, being processed,
/// or done and waiting for their turn), so results come out in submission order through a
/// reordering buffer of at most `capacity` entries, however long the run.
///
/// Nothing polls: whoever must wait (an idle worker for a job, a producer for room, the consumer
/// for the next result) registers a wake-up call under the lock and sleeps on a semaphore (or a
/// continuation); the change it waits for makes the call, outside the lock. The workers have
/// threads of their own (not a shared pool), so `sessions` detections run at once whatever else
/// the process does, and a caller blocked in `submit` or `next` can never starve them.
final class PipelineCore<Job: Sendable, Output: Sendable>: Sendable {
    typealias Waiter = @Sendable () -> Void

    /// A detector; only its worker thread uses it.
    struct Worker: @unchecked Sendable { let detector: Detector }

    /// An admitted job: its place in the output order, its index in the source (what a live
    /// pipeline reports as skipped when a newer job replaces it) and the jobs skipped before it.
    struct Item: Sendable {
        var seq: Int
        var job: Job
        var index: Int
        var skipped: [Int]
    }

    enum SubmitOutcome { case admitted, dropped, full, closed }
    enum TakeOutcome { case result(Output), end, notReady }
    private enum Work { case job(Item), wait, stop }

    private struct State {
        let capacity: Int
        let dropStale: Bool
        var waiting: [Item] = []
        /// Wake-ups of the workers waiting for a job.
        var idleWorkers: [Waiter] = []
        var done: [Int: Output] = [:]
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
    private let process: @Sendable (Detector, Item) -> Output

    /// Starts a thread per worker; they end after `finish` (once no job waits) or `cancel`.
    /// `dropStale` (live video): `submit` never waits; a newer job replaces the one waiting.
    init(capacity: Int, dropStale: Bool, workers: [Worker], process: @escaping @Sendable (Detector, Item) -> Output) {
        self.capacity = capacity
        self.process = process
        state = Locked(State(capacity: capacity, dropStale: dropStale))
        for worker in workers {
            let thread = Thread { [self] in work(worker) }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// Admits a job if there is room (when live, by replacing the job that waits for a
    /// detector, or dropping this one when every place is taken).
    func submit(_ job: Job, index: Int) -> SubmitOutcome {
        let (outcome, wake) = state.withLock { s -> (SubmitOutcome, Waiter?) in
            if s.finished || s.cancelled { return (.closed, nil) }
            if s.dropStale {
                if let last = s.waiting.indices.last {
                    // Newest wins: the waiting job is replaced and reported as skipped.
                    s.waiting[last].skipped.append(s.waiting[last].index)
                    s.waiting[last].job = job
                    s.waiting[last].index = index
                    s.skippedCount += 1
                    return (.admitted, nil)
                }
                if s.inFlight >= s.capacity {
                    s.pendingSkipped.append(index)
                    s.skippedCount += 1
                    return (.dropped, nil)
                }
            } else if s.inFlight >= s.capacity {
                return (.full, nil)
            }
            s.waiting.append(Item(seq: s.nextSeq, job: job, index: index, skipped: s.pendingSkipped))
            s.pendingSkipped = []
            s.nextSeq += 1
            return (.admitted, s.idleWorkers.popLast())
        }
        wake?()
        return outcome
    }

    /// `submit`, waiting (blocking the calling thread) while the pipeline is full. False after
    /// `finish` or `cancel` (the job is then not taken).
    func submitWaiting(_ job: Job, index: Int) -> Bool {
        while true {
            switch submit(job, index: index) {
            case .admitted, .dropped: return true
            case .closed: return false
            case .full:
                let room = DispatchSemaphore(value: 0)
                if waitForSpace({ room.signal() }) { room.wait() }
            }
        }
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

    /// `take`, waiting (blocking the calling thread) for the next result; nil at the end.
    func takeWaiting() -> Output? {
        while true {
            switch take() {
            case .result(let r): return r
            case .end: return nil
            case .notReady:
                let ready = DispatchSemaphore(value: 0)
                if waitForResult({ ready.signal() }) { ready.wait() }
            }
        }
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

    /// No more jobs (with the source's error, if it failed).
    func finish(error: (any Error)?) {
        let wake = state.withLock { s -> [Waiter] in
            if !s.finished, let error { s.sourceError = error }
            s.finished = true
            return s.takeAllWaiters()
        }
        for w in wake { w() }
    }

    /// Drops the waiting jobs; workers stop after their current one.
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

    /// A worker thread: takes jobs (sleeping while none waits), processes, hands the result on.
    private func work(_ worker: Worker) {
        let wake = DispatchSemaphore(value: 0)
        while true {
            let next = state.withLock { s -> Work in
                if s.cancelled { return .stop }
                if !s.waiting.isEmpty { return .job(s.waiting.removeFirst()) }
                if s.finished { return .stop }
                s.idleWorkers.append { wake.signal() }
                return .wait
            }
            switch next {
            case .stop: return
            case .wait: wake.wait()
            case .job(let item):
                let result = process(worker.detector, item)
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
}
