// Moving a preempted thread of a worker pool onto the CPU of one that waits for it, so that a
// core taken by another thread does not hold a job's last chunk (docs/threads.md, "A preempted
// thread").
import YOLOCore
import Synchronization
internal import CHints

/// Whether worker pools move preempted threads (process-wide: `yolo-bench uneven --compare-moves`
/// turns it off for its comparison rows), and how many they have moved.
package final class PreemptedThreadMoves: Sendable {
    package static let shared = PreemptedThreadMoves()
    private let on = Atomic<Bool>(true)
    private let moved = Atomic<Int>(0)
    private let movedCallers = Atomic<Int>(0)
    package var enabled: Bool {
        get { on.load(ordering: .relaxed) }
        set { on.store(newValue, ordering: .relaxed) }
    }
    /// Threads moved so far, by every pool of the process.
    package var count: Int { moved.load(ordering: .relaxed) }
    /// Of those, callers (moved by a worker).
    package var callerCount: Int { movedCallers.load(ordering: .relaxed) }
    fileprivate func add(caller: Bool) {
        moved.add(1, ordering: .relaxed)
        if caller { movedCallers.add(1, ordering: .relaxed) }
    }
}

/// What a thread of a pool that waits for a job's end needs to find another that holds a chunk
/// without running (its core taken by a thread of higher priority, or shared with others), and
/// to move it onto the waiting thread's own CPU while that one sleeps: the caller, once every
/// chunk is claimed, moves workers; a worker that found no chunk left moves the caller. A moved
/// worker moves itself back once it is out of the job, by way of the other CPUs (the caller goes
/// on from there); a moved caller gets its own CPUs back and stays where it is (its mover has
/// nothing left to do). A thread is seen as not running when its CPU clock stands still while
/// the other waits: a thread inside a job never sleeps, and a slow core's thread (a LITTLE core)
/// still runs, so neither is moved. Only a thread that stood still for `patience` is moved: a
/// move costs more than a short preemption. A pool with more threads than its CPUs moves none:
/// its threads take turns on the CPUs anyway, and the one a sleeping thread leaves is already
/// another's.
final class PreemptedThreads: @unchecked Sendable {
    final class Slot: @unchecked Sendable {
        /// The thread's Linux thread ID, 0 until known (or where it cannot be read).
        let thread = Atomic<Int32>(0)
        /// Set before the thread counts itself into a job, cleared once it is out.
        let inJob = Atomic<Bool>(false)
        /// Held by a mover from its last look at `inJob` until `moved` is set, so that a thread
        /// leaving the job either is not moved or sees that it was.
        let moving = Atomic<Bool>(false)
        /// Set once the thread was moved, cleared by the thread when it restored `restore` (its
        /// CPUs before the move). `restore` is written by a mover holding `moving` while `moved`
        /// is clear, and read by the thread while `moved` is set: never both at once.
        let moved = Atomic<Bool>(false)
        var restore: [Int] = []
    }

    /// One per worker, then the caller's.
    let slots: [Slot]
    private var caller: Slot { slots[slots.count - 1] }
    /// The thread that called last (its Linux thread ID is in the caller's slot).
    private var callerThread: pthread_t?
    /// How long a waiting thread sleeps between looks at the others' clocks, and how long a
    /// clock must stand still before its thread is moved, in nanoseconds (docs/threads.md).
    static let interval: UInt64 = 100_000, patience: UInt64 = 300_000

    /// What a waiting thread saw of the others: each one's CPU time (nil: outside the job) and
    /// when it was last seen to change.
    struct Watch {
        var times: [UInt64?]
        var since: [UInt64]
    }

    /// False where the pool has more threads than the CPUs it may use (or those cannot be read).
    let movable: Bool

    init(workers: Int) {
        slots = (0..<workers + 1).map { _ in Slot() }
        movable = workers + 1 <= (allowedCPUs()?.count ?? 0)
    }

    /// Called by each worker thread as it starts.
    func started(worker: Int) { slots[worker].thread.store(currentThreadID() ?? 0, ordering: .relaxed) }

    /// Before the caller claims chunks (by the caller only: `run` calls never overlap).
    @inline(__always)
    func callerEnters() {
        let me = pthread_self()
        if callerThread != me {
            callerThread = me
            caller.thread.store(currentThreadID() ?? 0, ordering: .relaxed)
        }
        caller.inJob.store(true, ordering: .sequentiallyConsistent)
    }

    /// After the caller's last chunk.
    @inline(__always)
    func callerLeaves() { leave(caller, elsewhere: false) }

    /// After a worker counted itself out of a job.
    @inline(__always)
    func workerLeaves(_ worker: Int) { leave(slots[worker], elsewhere: true) }

    @inline(__always)
    private func leave(_ slot: Slot, elsewhere: Bool) {
        slot.inJob.store(false, ordering: .sequentiallyConsistent)
        while slot.moving.load(ordering: .sequentiallyConsistent) { yolo_spin_pause() }
        guard slot.moved.load(ordering: .sequentiallyConsistent) else { return }
        let restore = slot.restore
        slot.moved.store(false, ordering: .sequentiallyConsistent)
        // Off the mover's CPU first where it shares it with the mover (a mask that holds the
        // thread's CPU leaves it there).
        if elsewhere, let here = currentCPU() {
            let others = restore.filter { $0 != here }
            if !others.isEmpty { _ = setAffinity(of: 0, to: others) }
        }
        _ = setAffinity(of: 0, to: restore)
    }

    /// Each slot's CPU time now, or nil for a thread outside the job (or unreadable).
    func sample() -> [UInt64?] {
        slots.map { slot in
            let thread = slot.thread.load(ordering: .relaxed)
            guard thread != 0, slot.inJob.load(ordering: .sequentiallyConsistent) else { return nil }
            return threadCPUTime(of: thread)
        }
    }

    /// Starts watching the threads in the job (none where moves are off).
    func watch() -> Watch {
        guard movable && PreemptedThreadMoves.shared.enabled else { return Watch(times: [], since: []) }
        let times = sample()
        return Watch(times: times, since: Array(repeating: monotonicNanoseconds(), count: times.count))
    }

    /// Whether a thread is still to be watched: in the job and not moved.
    func anyToWatch(_ watch: Watch) -> Bool {
        watch.times.indices.contains { watch.times[$0] != nil && !slots[$0].moved.load(ordering: .relaxed) }
    }

    /// Looks again: moves onto the calling thread's CPU each thread still in the job whose clock
    /// has stood still for `patience`.
    func moveStalled(_ watch: inout Watch) {
        let now = sample(), clock = monotonicNanoseconds()
        var here: Int?? = .none
        for (i, slot) in slots.enumerated() {
            let was = watch.times[i]
            watch.times[i] = now[i]
            guard let time = now[i], time == was else { watch.since[i] = clock; continue }
            guard clock &- watch.since[i] >= PreemptedThreads.patience,
                  !slot.moving.exchange(true, ordering: .sequentiallyConsistent) else { continue }
            defer { slot.moving.store(false, ordering: .sequentiallyConsistent) }
            guard slot.inJob.load(ordering: .sequentiallyConsistent),
                  !slot.moved.load(ordering: .sequentiallyConsistent) else { continue }
            if here == nil { here = currentCPU() }
            let thread = slot.thread.load(ordering: .relaxed)
            guard let cpu = here ?? nil, let mask = affinity(of: thread), mask.count > 1, mask.contains(cpu)
            else { continue }
            slot.restore = mask
            if setAffinity(of: thread, to: [cpu]) {
                slot.moved.store(true, ordering: .sequentiallyConsistent)
                PreemptedThreadMoves.shared.add(caller: i == slots.count - 1)
            }
        }
    }
}
