// The shared model's detectors and the bounded work they do: a pool of sessions lent to
// requests and to the live view (which goes first), and the queue of admitted requests with
// the worker threads that run them. Neither grows: a request that finds the queue full is
// refused (503), never queued.
import YOLO
import YOLOCore

/// `sessions` detectors of one model, lent one at a time.
final class DetectorPool: Sendable {
    private struct State {
        var free: [Detector]
        var urgentWaiting = 0
        var busy = 0
    }
    /// The detectors not lent; borrowers wait on its one condition for one to come back.
    private let state: Locked<State>
    let count: Int

    init(model: Model, classNames: [String], options: DetectorOptions, sessions: Int, threadsPerSession: Int) throws {
        let free = try (0..<sessions).map { _ in
            try Detector(model: model, classNames: classNames, options: options, threads: threadsPerSession)
        }
        state = Locked(State(free: free), conditions: 1)
        count = sessions
    }

    /// Runs `body` with a detector of its own, waiting for one to be free. An `urgent` borrower
    /// (the live view) is served before the others waiting.
    func with<T>(urgent: Bool = false, _ body: (Detector) throws -> T) rethrows -> T {
        if urgent { state.withLock { $0.urgentWaiting += 1 } }
        let detector = state.withLock(until: { !$0.free.isEmpty && (urgent || $0.urgentWaiting == 0) }) { s in
            if urgent { s.urgentWaiting -= 1 }
            s.busy += 1
            return s.free.removeLast()
        }
        defer {
            state.withLock { s in
                s.free.append(detector)
                s.busy -= 1
            }
            state.broadcast()
        }
        return try body(detector)
    }

    /// Detectors lent out now.
    var busyCount: Int { state.withLock { $0.busy } }
}

/// Admitted requests waiting for a worker, and the workers (two per session: a request decodes
/// its image before it borrows a session, so an image slow to decode leaves the sessions to
/// the requests behind it).
final class WorkQueue: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var reserved = 0
        var running = 0
        var stopping = false
        var threads: [ThreadHandle] = []
        /// Whether nothing admitted is left (waiting, reserved or running).
        var idle: Bool { jobs.isEmpty && reserved == 0 && running == 0 }
    }
    /// Workers wait on `work` for a job (or the end); `drain` waits on `idle` for the last one.
    private let state = Locked(State(), conditions: 2)
    private static let work = 0, idle = 1
    /// Requests that may wait (beyond those being worked on).
    let capacity: Int

    init(workers: Int, capacity: Int) {
        self.capacity = capacity
        for _ in 0..<max(1, workers) {
            if let t = startThread(stackSize: 1 << 20, { [self] in runWorker() }) {
                state.withLock { $0.threads.append(t) }
            }
        }
    }

    /// Takes a place in the queue for a request about to be enqueued; false when the queue is
    /// full or stopping (the request is then refused).
    func reserve() -> Bool {
        state.withLock { s in
            guard !s.stopping, s.jobs.count + s.reserved < capacity else { return false }
            s.reserved += 1
            return true
        }
    }

    /// Enqueues a job in a place taken by `reserve()`.
    func enqueue(_ job: @escaping @Sendable () -> Void) {
        let lastOfDrain = state.withLock { s in
            s.reserved -= 1
            s.jobs.append(job)
            return s.stopping && s.reserved == 0
        }
        // Draining, the workers left waiting once this job is taken may end: wake them all.
        if lastOfDrain { state.broadcast(Self.work) } else { state.signal(Self.work) }
    }

    /// Requests waiting, and requests being worked on.
    var depth: Int { state.withLock { $0.jobs.count + $0.reserved } }
    var active: Int { state.withLock { $0.running } }

    /// Refuses new work, finishes what was admitted, and ends the workers; waits at most until
    /// `deadline` (monotonic nanoseconds) for the work to finish. False when some is still
    /// running then (its workers are left to it).
    @discardableResult
    func drain(until deadline: UInt64 = .max) -> Bool {
        state.withLock { $0.stopping = true }
        state.broadcast(Self.work)
        let finished = state.withLock(waitingOn: Self.idle, until: { $0.idle }, deadline: deadline) { _, idle in idle }
        guard finished else { return false }
        let threads = state.withLock { s in defer { s.threads = [] }; return s.threads }
        for t in threads { t.join() }
        return true
    }

    private func runWorker() {
        while true {
            let job = state.withLock(waitingOn: Self.work, until: { !$0.jobs.isEmpty || ($0.stopping && $0.reserved == 0) }) { s in
                if s.jobs.isEmpty { return nil as (@Sendable () -> Void)? }
                s.running += 1
                return s.jobs.removeFirst()
            }
            guard let job else { return }
            job()
            let idle = state.withLock { s in s.running -= 1; return s.idle }
            if idle { state.broadcast(Self.idle) }
        }
    }
}
