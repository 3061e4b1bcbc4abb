// The shared model's detectors and the bounded work they do: a pool of sessions lent to
// requests and to the live view (which goes first), and the queue of admitted requests with
// the worker threads that run them. Neither grows: a request that finds the queue full is
// refused (503), never queued.
import YOLO
import YOLOCore

/// `sessions` detectors of one model, lent one at a time.
final class DetectorPool: @unchecked Sendable {
    private let mutex = PThreadMutex()
    private let available = Condition()
    // Guarded by mutex.
    private var free: [Detector]
    private var urgentWaiting = 0
    private var busy = 0
    let count: Int

    init(model: Model, classNames: [String], options: DetectorOptions, sessions: Int, threadsPerSession: Int) throws {
        free = try (0..<sessions).map { _ in
            try Detector(model: model, classNames: classNames, options: options, threads: threadsPerSession)
        }
        count = sessions
    }

    /// Runs `body` with a detector of its own, waiting for one to be free. An `urgent` borrower
    /// (the live view) is served before the others waiting.
    func with<T>(urgent: Bool = false, _ body: (Detector) throws -> T) rethrows -> T {
        mutex.lock()
        if urgent { urgentWaiting += 1 }
        while free.isEmpty || (!urgent && urgentWaiting > 0) { available.wait(mutex) }
        if urgent { urgentWaiting -= 1 }
        let detector = free.removeLast()
        busy += 1
        mutex.unlock()
        defer {
            mutex.lock()
            free.append(detector)
            busy -= 1
            available.broadcast()
            mutex.unlock()
        }
        return try body(detector)
    }

    /// Detectors lent out now.
    var busyCount: Int { mutex.withLock { busy } }
}

/// Admitted requests waiting for a worker, and the workers (two per session: a request decodes
/// its image before it borrows a session, so an image slow to decode leaves the sessions to
/// the requests behind it).
final class WorkQueue: @unchecked Sendable {
    private let mutex = PThreadMutex()
    private let work = Condition()
    // Guarded by mutex.
    private var jobs: [@Sendable () -> Void] = []
    private var reserved = 0
    private var running = 0
    private var stopping = false
    private var threads: [ThreadHandle] = []
    /// Requests that may wait (beyond those being worked on).
    let capacity: Int

    init(workers: Int, capacity: Int) {
        self.capacity = capacity
        for _ in 0..<max(1, workers) {
            if let t = startThread(stackSize: 1 << 20, { [self] in runWorker() }) { threads.append(t) }
        }
    }

    /// Takes a place in the queue for a request about to be enqueued; false when the queue is
    /// full or stopping (the request is then refused).
    func reserve() -> Bool {
        mutex.withLock {
            guard !stopping, jobs.count + reserved < capacity else { return false }
            reserved += 1
            return true
        }
    }

    /// Enqueues a job in a place taken by `reserve()`.
    func enqueue(_ job: @escaping @Sendable () -> Void) {
        mutex.withLock {
            reserved -= 1
            jobs.append(job)
            work.signal()
        }
    }

    /// Requests waiting, and requests being worked on.
    var depth: Int { mutex.withLock { jobs.count + reserved } }
    var active: Int { mutex.withLock { running } }

    /// Refuses new work, finishes what was admitted, and ends the workers; waits at most until
    /// `deadline` (monotonic nanoseconds) for the work to finish. False when some is still
    /// running then (its workers are left to it).
    @discardableResult
    func drain(until deadline: UInt64 = .max) -> Bool {
        mutex.withLock {
            stopping = true
            work.broadcast()
        }
        while mutex.withLock({ !jobs.isEmpty || reserved > 0 || running > 0 }) {
            if monotonicNanoseconds() >= deadline { return false }
            usleep(10_000)
        }
        for t in threads { t.join() }
        threads = []
        return true
    }

    private func runWorker() {
        while true {
            mutex.lock()
            while jobs.isEmpty && !(stopping && reserved == 0) { work.wait(mutex) }
            if jobs.isEmpty { mutex.unlock(); return }
            let job = jobs.removeFirst()
            running += 1
            mutex.unlock()
            job()
            mutex.withLock { running -= 1 }
        }
    }
}
