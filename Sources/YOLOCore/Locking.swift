// Mutual exclusion for the package: a pthread mutex and condition variables (the only wrappers
// of them), and `Locked`, a lock that owns the state it guards and the conditions over it (as
// swift-nio's NIOLockedValueBox and ConditionLock do; Synchronization's Mutex is not in Embedded
// Swift's library and has no conditions).

/// A pthread mutex. For sleeping until state changes, with `Condition`.
package final class PThreadMutex: @unchecked Sendable {
    let raw = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    package init() { pthread_mutex_init(raw, nil) }
    deinit { pthread_mutex_destroy(raw); raw.deallocate() }
    @inline(__always) package func lock() { pthread_mutex_lock(raw) }
    @inline(__always) package func unlock() { pthread_mutex_unlock(raw) }
    @inline(__always) package func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// A pthread condition variable, used with one `PThreadMutex`; its timed waits read
/// CLOCK_MONOTONIC (as `monotonicNanoseconds` does), so a clock change cannot cut one short.
package final class Condition: @unchecked Sendable {
    private let raw = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    package init() {
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(raw, &attributes)
        pthread_condattr_destroy(&attributes)
    }
    deinit { pthread_cond_destroy(raw); raw.deallocate() }
    /// Sleeps until signalled; `mutex` must be locked by the caller (and is again on return).
    package func wait(_ mutex: PThreadMutex) { pthread_cond_wait(raw, mutex.raw) }
    /// `wait`, giving up at `deadline` (monotonic nanoseconds); false when it gave up.
    package func wait(_ mutex: PThreadMutex, until deadline: UInt64) -> Bool {
        var ts = timespec()
        ts.tv_sec = .init(clamping: deadline / 1_000_000_000)
        ts.tv_nsec = .init(deadline % 1_000_000_000)
        return pthread_cond_timedwait(raw, mutex.raw, &ts) != ETIMEDOUT
    }
    package func signal() { pthread_cond_signal(raw) }
    package func broadcast() { pthread_cond_broadcast(raw) }
}

/// A value owned by a mutex, and the condition variables over it: the only way to the state is
/// `withLock`, which holds the lock for the whole body, or waits (on one of the conditions)
/// until a predicate over the state holds and then runs the body under the same hold. It is
/// `@unchecked Sendable` for that reason: every access is serialised by the lock, and what a body
/// returns must be `Sendable`, so no reference into the state (a pointer to its buffers) leaves
/// it. The one rule the compiler does not check (`Mutex` checks it with `inout sending`, which
/// would also refuse a body that reads a caller's buffer into the state's buffers): a body must
/// not store a reference it was given into the state.
///
/// Conditions are numbered 0..<conditions (a type names its own as constants): waiters of one
/// kind (workers waiting for jobs) share one, so that `signal` wakes a waiter that can use it.
/// Whoever changes what a waiter's predicate reads signals or broadcasts its condition, under
/// the lock or after it (a waiter checks its predicate under the lock, so none is missed).
package final class Locked<State>: @unchecked Sendable {
    fileprivate let mutex = PThreadMutex()
    private let conditions: [Condition]
    private var state: State
    /// `conditions` condition variables over the state (none: a plain lock).
    package init(_ state: sending State, conditions: Int = 0) {
        self.state = state
        self.conditions = (0..<conditions).map { _ in Condition() }
    }
    /// Runs `body` with the state to itself.
    @inline(__always)
    package func withLock<T: Sendable, E: Error>(_ body: (inout State) throws(E) -> T) throws(E) -> T {
        mutex.lock()
        defer { mutex.unlock() }
        return try body(&state)
    }
    /// Sleeps on `condition` until `ready(state)` holds (checked under the lock, first before
    /// sleeping and again after each wake-up), then runs `body` without letting go of the lock.
    package func withLock<T: Sendable, E: Error>(waitingOn condition: Int = 0, until ready: (State) -> Bool,
                                                  _ body: (inout State) throws(E) -> T) throws(E) -> T {
        mutex.lock()
        defer { mutex.unlock() }
        while !ready(state) { conditions[condition].wait(mutex) }
        return try body(&state)
    }
    /// The same, giving up at `deadline` (monotonic nanoseconds, `monotonicNanoseconds()`):
    /// `body` runs either way, told whether `ready(state)` held.
    package func withLock<T: Sendable, E: Error>(waitingOn condition: Int = 0, until ready: (State) -> Bool,
                                                  deadline: UInt64,
                                                  _ body: (inout State, _ ready: Bool) throws(E) -> T) throws(E) -> T {
        mutex.lock()
        defer { mutex.unlock() }
        var isReady = ready(state)
        while !isReady {
            let woken = conditions[condition].wait(mutex, until: deadline)
            isReady = ready(state)
            if !woken { break }
        }
        return try body(&state, isReady)
    }
    /// Wakes one waiter on `condition` (if any waits).
    package func signal(_ condition: Int = 0) { conditions[condition].signal() }
    /// Wakes every waiter on `condition`.
    package func broadcast(_ condition: Int = 0) { conditions[condition].broadcast() }
}

extension Locked where State == Void {
    package convenience init() { self.init(()) }
    /// Serialises `body` with every other call on this lock (no state: any result).
    @inline(__always)
    package func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        mutex.lock()
        defer { mutex.unlock() }
        return try body()
    }
}
