#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The number of cores this process may run on (at least 1).
func availableCores() -> Int {
    return max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
}

/// A mutex. Sessions and detectors hold one so that two threads calling them at once are
/// served one after the other instead of corrupting each other's buffers.
final class Lock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    init() { pthread_mutex_init(mutex, nil) }
    deinit { pthread_mutex_destroy(mutex); mutex.deallocate() }
    @inline(__always) func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// A fixed set of threads that run one job at a time, split into `threadCount` parts.
/// The calling thread does part 0; `run` returns when every part is done.
final class WorkerPool {
    let threadCount: Int
    private let state: PoolState
    private var threads: [pthread_t] = []

    init(threads: Int) {
        threadCount = max(1, threads)
        state = PoolState()
        for part in 1..<threadCount {
            let box = Unmanaged.passRetained(WorkerStart(state: state, part: part))
            var tid = pthread_t()
            let rc = pthread_create(&tid, nil, { raw in
                let start = Unmanaged<WorkerStart>.fromOpaque(raw!).takeRetainedValue()
                start.state.workerLoop(part: start.part)
                return nil
            }, box.toOpaque())
            if rc == 0 { self.threads.append(tid) } else { box.release() }
        }
        state.workers = self.threads.count
    }

    deinit {
        state.stop()
        for t in threads { pthread_join(t, nil) }
    }

    /// Calls `body(part)` for part in 0..<threadCount, in parallel.
    func run(_ body: (Int) -> Void) {
        if threads.count + 1 < threadCount || threads.isEmpty {
            for part in 0..<threadCount { body(part) }  // threads could not be started: run in turn
            return
        }
        // Workers get a pointer to a struct holding the closure, on this stack: a bare closure
        // stored through a generic pointer would need a reabstraction thunk, allocated each time.
        // (withoutActuallyEscaping still boxes the closure: one 32-byte allocation per job.)
        withoutActuallyEscaping(body) { body in
            var job = PoolState.Job(body: body)
            withUnsafePointer(to: &job) { state.run(UnsafeRawPointer($0)) }
        }
    }

    /// Splits 0..<count into threadCount nearly equal ranges and runs `body` on each.
    func parallelFor(_ count: Int, _ body: (Range<Int>) -> Void) {
        let parts = min(threadCount, count)
        if parts <= 1 { body(0..<count); return }
        run { part in
            guard part < parts else { return }
            body(count * part / parts ..< count * (part + 1) / parts)
        }
    }
}

/// The shared state of a pool, owned jointly by the pool and its threads.
private final class PoolState {
    let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    let finished = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    var workers = 0
    // Guarded by mutex.
    var generation = 0
    var remaining = 0
    var stopping = false
    /// Points at the running `Job`, on the caller's stack.
    var job: UnsafeRawPointer?

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(wake, nil)
        pthread_cond_init(finished, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex); pthread_cond_destroy(wake); pthread_cond_destroy(finished)
        mutex.deallocate(); wake.deallocate(); finished.deallocate()
    }

    struct Job { let body: (Int) -> Void }

    func run(_ job: UnsafeRawPointer) {
        pthread_mutex_lock(mutex)
        self.job = job
        remaining = workers
        generation &+= 1
        pthread_cond_broadcast(wake)
        pthread_mutex_unlock(mutex)
        job.assumingMemoryBound(to: Job.self).pointee.body(0)
        pthread_mutex_lock(mutex)
        while remaining > 0 { pthread_cond_wait(finished, mutex) }
        self.job = nil
        pthread_mutex_unlock(mutex)
    }

    func stop() {
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_broadcast(wake)
        pthread_mutex_unlock(mutex)
    }

    /// Runs the current job; its own frame, so the job's closure is released before the worker
    /// reports completion (`withoutActuallyEscaping` checks that nothing keeps it).
    private func runJob(part: Int) {
        pthread_mutex_lock(mutex)
        let job = self.job!
        pthread_mutex_unlock(mutex)
        job.assumingMemoryBound(to: Job.self).pointee.body(part)
    }

    func workerLoop(part: Int) {
        var seen = 0
        while true {
            pthread_mutex_lock(mutex)
            while generation == seen && !stopping { pthread_cond_wait(wake, mutex) }
            if stopping { pthread_mutex_unlock(mutex); return }
            seen = generation
            pthread_mutex_unlock(mutex)
            runJob(part: part)
            pthread_mutex_lock(mutex)
            remaining -= 1
            if remaining == 0 { pthread_cond_signal(finished) }
            pthread_mutex_unlock(mutex)
        }
    }
}

private final class WorkerStart {
    let state: PoolState
    let part: Int
    init(state: PoolState, part: Int) { self.state = state; self.part = part }
}
