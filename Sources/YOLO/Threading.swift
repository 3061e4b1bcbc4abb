#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization
import CHints

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
///
/// Hand-offs spin before they sleep: a forward pass hands its workers a new job every few tens
/// of microseconds (each layer's transforms, products and epilogues), and waking a thread
/// blocked on a condition variable costs about as much again. So a worker waiting for the next
/// job, and the caller waiting for the workers, first spin and only then sleep on the condition
/// variables. Sleeping is announced through `sleepers` / `callerSleeps` (sequentially
/// consistent, as is the counter each side then reads), so whoever changes the counter sees
/// the sleeper and wakes it under the mutex.
///
/// How long to spin adapts (`SpinBudget`): between 256 and 2000 pauses (about 6 to 45 us on
/// Zen 5). On an idle machine spinning took yolov3-tiny at 2 threads from 9.3 to 7.5 ms; with
/// another process busy on one of the two cores, a fixed 90 us spin made it 22 ms against 15 ms
/// without spinning (the spinner holds the core the thread it waits for needs), 45 us 17 ms,
/// 7 us 15.4 ms.
private final class PoolState: @unchecked Sendable {
    let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    let finished = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    var workers = 0
    /// Incremented for each job (released after `job` is set).
    let generation = Atomic<Int>(0)
    /// Workers still running the current job.
    let remaining = Atomic<Int>(0)
    /// Workers asleep (or about to sleep) on `wake`.
    let sleepers = Atomic<Int>(0)
    /// Whether the caller sleeps (or is about to) on `finished`.
    let callerSleeps = Atomic<Bool>(false)
    let stopping = Atomic<Bool>(false)
    /// Points at the running `Job`, on the caller's stack (published by `generation`).
    var job: UnsafeRawPointer?
    /// The caller's spin budget (used by whichever thread calls `run`; calls never overlap).
    var callerSpins = SpinBudget()

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
        self.job = job
        remaining.store(workers, ordering: .sequentiallyConsistent)
        generation.add(1, ordering: .sequentiallyConsistent)
        if sleepers.load(ordering: .sequentiallyConsistent) > 0 {
            pthread_mutex_lock(mutex)
            pthread_cond_broadcast(wake)
            pthread_mutex_unlock(mutex)
        }
        job.assumingMemoryBound(to: Job.self).pointee.body(0)
        var spins = 0
        while remaining.load(ordering: .acquiring) > 0 {
            spins += 1
            if spins < callerSpins.limit { yolo_spin_pause(); continue }
            callerSpins.missed()
            pthread_mutex_lock(mutex)
            callerSleeps.store(true, ordering: .sequentiallyConsistent)
            while remaining.load(ordering: .sequentiallyConsistent) > 0 { pthread_cond_wait(finished, mutex) }
            callerSleeps.store(false, ordering: .sequentiallyConsistent)
            pthread_mutex_unlock(mutex)
            spins = -1
        }
        if spins >= 0 { callerSpins.caught() }
        self.job = nil
    }

    func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        pthread_mutex_lock(mutex)
        pthread_cond_broadcast(wake)
        pthread_mutex_unlock(mutex)
    }

    /// Runs the current job; its own frame, so the job's closure is released before the worker
    /// reports completion (`withoutActuallyEscaping` checks that nothing keeps it).
    private func runJob(part: Int) {
        job!.assumingMemoryBound(to: Job.self).pointee.body(part)
    }

    /// Waits until the generation differs from `seen` or the pool stops; returns the generation.
    private func nextGeneration(after seen: Int, budget: inout SpinBudget) -> Int {
        var spins = 0
        while true {
            let g = generation.load(ordering: .acquiring)
            if g != seen || stopping.load(ordering: .acquiring) { budget.caught(); return g }
            spins += 1
            if spins < budget.limit { yolo_spin_pause(); continue }
            budget.missed()
            pthread_mutex_lock(mutex)
            sleepers.add(1, ordering: .sequentiallyConsistent)
            var now = generation.load(ordering: .sequentiallyConsistent)
            while now == seen && !stopping.load(ordering: .sequentiallyConsistent) {
                pthread_cond_wait(wake, mutex)
                now = generation.load(ordering: .sequentiallyConsistent)
            }
            sleepers.subtract(1, ordering: .sequentiallyConsistent)
            pthread_mutex_unlock(mutex)
            return now
        }
    }

    func workerLoop(part: Int) {
        var seen = 0
        var budget = SpinBudget()
        while true {
            seen = nextGeneration(after: seen, budget: &budget)
            if stopping.load(ordering: .acquiring) { return }
            runJob(part: part)
            let left = remaining.subtract(1, ordering: .sequentiallyConsistent).newValue
            if left == 0 && callerSleeps.load(ordering: .sequentiallyConsistent) {
                pthread_mutex_lock(mutex)
                pthread_cond_signal(finished)
                pthread_mutex_unlock(mutex)
            }
        }
    }
}

/// How many pauses a thread spins before it sleeps: a quarter less after each wait that
/// outlasted it (down to `least`), a quarter more after each that did not (up to `most`).
/// Gently, both ways: a forward has a few legitimately long waits (a thread whose share of a
/// layer is larger), and halving on each of them collapsed the budget on an idle machine
/// (2 threads: 9.5 ms instead of 7.5), while under contention most waits miss and the budget
/// still shrinks within a few dozen hand-offs.
struct SpinBudget {
    static let most = 2000, least = 256
    private(set) var limit = SpinBudget.most
    mutating func caught() { limit = min(SpinBudget.most, limit + limit / 4) }
    mutating func missed() { limit = max(SpinBudget.least, limit - limit / 4) }
}

private final class WorkerStart {
    let state: PoolState
    let part: Int
    init(state: PoolState, part: Int) { self.state = state; self.part = part }
}
