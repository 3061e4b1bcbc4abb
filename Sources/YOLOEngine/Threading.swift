// The worker pool of a session: threads that run one job at a time, spinning briefly before they
// sleep.
import YOLOCore
import Synchronization
internal import CHints

/// A fixed set of threads that share out one job at a time. A job is a count of chunks that
/// the threads claim from a shared counter as each becomes free, so a thread that is slower or
/// preempted takes fewer (docs/threads.md); the calling thread takes part as thread 0. Which
/// thread runs a chunk never changes what the chunk computes.
final class WorkerPool {
    let threadCount: Int
    private let state: PoolState
    private var threads: [ThreadHandle] = []

    init(threads: Int) {
        threadCount = max(1, threads)
        let state = PoolState(workers: threadCount - 1)
        self.state = state
        for part in 1..<threadCount {
            guard let thread = startThread({ state.workerLoop(thread: part) }) else { break }
            self.threads.append(thread)
        }
        state.workers = self.threads.count
    }

    deinit {
        state.stop()
        for t in threads { t.join() }
    }

    /// Calls `body(chunk, thread)` for chunk in 0..<chunks, each once, on whichever of the pool's
    /// threads claims it first; `thread` (0..<threadCount) names the thread, for its scratch.
    /// Returns when every chunk is done.
    func forEachChunk(_ chunks: Int, _ body: (Int, Int) -> Void) {
        if chunks <= 1 || threads.isEmpty || threads.count + 1 < threadCount {
            for chunk in 0..<chunks { body(chunk, 0) }  // one chunk, or threads could not be started
            return
        }
        // Workers get a pointer to a struct holding the closure, on this stack: a bare closure
        // stored through a generic pointer would need a reabstraction thunk, allocated each time.
        // (withoutActuallyEscaping still boxes the closure: one 32-byte allocation per job.)
        withoutActuallyEscaping(body) { body in
            var job = PoolState.Job(chunks: chunks, body: body)
            withUnsafePointer(to: &job) { state.run(UnsafeRawPointer($0)) }
        }
    }

    /// Calls `body(range, thread)` over 0..<count in chunks of `grain` items (the last one
    /// shorter), shared out as `forEachChunk` does.
    func forEach(_ count: Int, grain: Int, _ body: (Range<Int>, Int) -> Void) {
        let grain = max(1, grain)
        forEachChunk((count + grain - 1) / grain) { chunk, thread in
            body(chunk * grain ..< min(count, (chunk + 1) * grain), thread)
        }
    }

    /// Runs `body` over 0..<count in chunks of `Chunking.grain` items, shared out as
    /// `forEachChunk` does.
    func parallelFor(_ count: Int, _ body: (Range<Int>) -> Void) {
        guard threadCount > 1, count > 1 else { body(0..<count); return }
        forEach(count, grain: Chunking.grain(count, threads: threadCount)) { range, _ in body(range) }
    }
}

/// The shared state of a pool, owned jointly by the pool and its threads.
///
/// A job is published by `generation` and open to workers while `open` holds its generation. A
/// worker counts itself in `active` before it checks `open`, and the caller closes the job
/// (once every chunk is claimed) before it waits for `active` to reach zero; both sequentially
/// consistent, so either the caller sees the worker and waits for it, or the worker sees the job
/// closed and leaves it alone. A worker that is not running when a job is published (preempted,
/// or still asleep) therefore never holds the job up: the others claim its chunks.
///
/// Hand-offs spin before they sleep: a forward pass hands its workers a new job every few tens
/// of microseconds (each layer's transforms, products and epilogues), and waking a thread
/// blocked on a condition variable costs about as much again. So a worker waiting for the next
/// job, and the caller waiting for the workers, first spin and only then sleep on the condition
/// variables. Sleeping is announced through `sleepers` / `callerSleeps` (sequentially
/// consistent, as is the counter each side then reads), so whoever changes the counter sees
/// the sleeper and wakes it under the mutex.
///
/// How long to spin adapts (`SpinBudget`): spinning shortens a forward on an idle machine, but a
/// fixed long spin lengthens it when another process holds one of the cores (the spinner holds
/// the core the thread it waits for needs); docs/performance.md has the figures.
private final class PoolState: @unchecked Sendable {
    let mutex = PThreadMutex()
    let wake = Condition()
    let finished = Condition()
    var workers = 0
    /// Incremented for each job (released after `job` is set).
    let generation = Atomic<Int>(0)
    /// The generation of the job workers may still join; 0 once the caller closed it.
    let open = Atomic<Int>(0)
    /// The next chunk of the open job to claim.
    let cursor = Atomic<Int>(0)
    /// Workers inside the current job (counted before they check `open`).
    let active = Atomic<Int>(0)
    /// Workers asleep (or about to sleep) on `wake`.
    let sleepers = Atomic<Int>(0)
    /// Whether the caller sleeps (or is about to) on `finished`.
    let callerSleeps = Atomic<Bool>(false)
    let stopping = Atomic<Bool>(false)
    /// Points at the running `Job`, on the caller's stack (published by `generation`).
    var job: UnsafeRawPointer?
    /// The caller's spin budget (used by whichever thread calls `run`; calls never overlap).
    var callerSpins = SpinBudget()
    /// Finds and moves a thread that holds a chunk without running.
    let preempted: PreemptedThreads

    init(workers: Int) { preempted = PreemptedThreads(workers: workers) }

    struct Job { let chunks: Int; let body: (Int, Int) -> Void }

    /// Claims and runs the job's chunks until none is left.
    @inline(__always)
    private func work(_ job: UnsafeRawPointer, thread: Int) {
        let job = job.assumingMemoryBound(to: Job.self)
        let chunks = job.pointee.chunks
        while true {
            let chunk = cursor.wrappingAdd(1, ordering: .relaxed).oldValue
            guard chunk < chunks else { return }
            job.pointee.body(chunk, thread)
        }
    }

    func run(_ job: UnsafeRawPointer) {
        self.job = job
        cursor.store(0, ordering: .relaxed)
        let published = generation.load(ordering: .relaxed) + 1
        open.store(published, ordering: .sequentiallyConsistent)
        generation.store(published, ordering: .sequentiallyConsistent)
        if sleepers.load(ordering: .sequentiallyConsistent) > 0 {
            mutex.withLock { wake.broadcast() }
        }
        preempted.callerEnters()
        work(job, thread: 0)
        preempted.callerLeaves()
        // Every chunk is claimed: no worker may join now; wait for those inside.
        open.store(0, ordering: .sequentiallyConsistent)
        if callerSpins.spin(while: { active.load(ordering: .acquiring) > 0 }) {
            callerSpins.caught()
        } else {
            callerSpins.missed()
            sleepUntilWorkersLeave()
        }
        self.job = nil
    }

    /// Sleeps until no worker is inside the job. While a worker that has not been moved is
    /// inside, it wakes every `PreemptedThreads.interval` to look at the workers' clocks, and
    /// moves onto this CPU any that has not run for a while.
    private func sleepUntilWorkersLeave() {
        var watch = preempted.watch()
        mutex.lock()
        callerSleeps.store(true, ordering: .sequentiallyConsistent)
        while active.load(ordering: .sequentiallyConsistent) > 0 {
            guard preempted.anyToWatch(watch) else { finished.wait(mutex); continue }
            if !finished.wait(mutex, until: monotonicNanoseconds() &+ PreemptedThreads.interval)
                && active.load(ordering: .sequentiallyConsistent) > 0 {
                mutex.unlock()  // a worker that leaves meanwhile takes the mutex to wake this one
                preempted.moveStalled(&watch)
                mutex.lock()
            }
        }
        callerSleeps.store(false, ordering: .sequentiallyConsistent)
        mutex.unlock()
    }

    func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        mutex.withLock { wake.broadcast() }
    }

    /// Waits until the generation differs from `seen` or the pool stops; returns the generation.
    private func nextGeneration(after seen: Int, budget: inout SpinBudget) -> Int {
        let waiting = {
            self.generation.load(ordering: .acquiring) == seen
                && !self.stopping.load(ordering: .acquiring)
        }
        if budget.spin(while: waiting) {
            budget.caught()
            return generation.load(ordering: .acquiring)
        }
        budget.missed()
        // While the caller (or another worker) is still inside the job, look at it as
        // `sleepUntilWorkersLeave` does.
        var watch = preempted.watch()
        mutex.lock()
        sleepers.add(1, ordering: .sequentiallyConsistent)
        var now = generation.load(ordering: .sequentiallyConsistent)
        while now == seen && !stopping.load(ordering: .sequentiallyConsistent) {
            if !preempted.anyToWatch(watch) {
                wake.wait(mutex)
            } else if !wake.wait(mutex, until: monotonicNanoseconds() &+ PreemptedThreads.interval) {
                mutex.unlock()
                preempted.moveStalled(&watch)
                mutex.lock()
            }
            now = generation.load(ordering: .sequentiallyConsistent)
        }
        sleepers.subtract(1, ordering: .sequentiallyConsistent)
        mutex.unlock()
        return now
    }

    func workerLoop(thread: Int) {
        var seen = 0
        var budget = SpinBudget()
        let slot = preempted.slots[thread - 1]
        preempted.started(worker: thread - 1)
        while true {
            seen = nextGeneration(after: seen, budget: &budget)
            if stopping.load(ordering: .acquiring) { return }
            slot.inJob.store(true, ordering: .sequentiallyConsistent)
            active.add(1, ordering: .sequentiallyConsistent)
            if open.load(ordering: .sequentiallyConsistent) == seen, let job {
                work(job, thread: thread)
            }
            let left = active.subtract(1, ordering: .sequentiallyConsistent).newValue
            if left == 0 && callerSleeps.load(ordering: .sequentiallyConsistent) {
                mutex.withLock { finished.signal() }
            }
            preempted.workerLeaves(thread - 1)
        }
    }
}

/// How long a thread spins before it sleeps: a quarter less after each wait that outlasted it
/// (down to `least`), a quarter more after each that did not (up to `most`). Gently, both ways:
/// a forward has a few legitimately long waits (a thread whose share of a layer is larger), and
/// halving on each of them collapsed the budget on an idle machine, while under contention most
/// waits miss and the budget still shrinks within a few dozen hand-offs.
///
/// The budget is a time, read from the monotonic clock every `pausesPerCheck` pauses (a clock
/// read costs less than the pauses between reads). It was a count of pauses, whose length
/// differs several-fold between CPUs: on an Emerald Rapids an INT8 forward's short hand-offs
/// outlasted it often enough to hold it near its floor, and threads slept and were woken through
/// the kernel. A count of pauses calibrated at start is not a time either where the rest of a
/// spin iteration, the atomic load, costs more than the pause: under qemu the test runs of
/// `scripts/arm-linux-check.sh` timed out with it (docs/performance.md).
struct SpinBudget {
    static let most = 100_000, least = 6_000
    static let pausesPerCheck = 32
    /// Nanoseconds.
    private(set) var limit = SpinBudget.most
    mutating func caught() { limit = min(SpinBudget.most, limit + limit / 4) }
    mutating func missed() { limit = max(SpinBudget.least, limit - limit / 4) }

    /// Spins while `waiting()` holds, for about `limit` ns (at least `pausesPerCheck` pauses);
    /// true when the wait ended, false when the budget ran out first.
    @inline(__always)
    func spin(while waiting: () -> Bool) -> Bool {
        let start = monotonicNanoseconds()
        while true {
            for _ in 0..<SpinBudget.pausesPerCheck {
                if !waiting() { return true }
                yolo_spin_pause()
            }
            if monotonicNanoseconds() &- start >= UInt64(limit) { return !waiting() }
        }
    }
}
