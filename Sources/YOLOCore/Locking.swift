// Mutual exclusion for the package: a pthread mutex and condition variables (the only wrappers
// of them), and `Locked`, a lock that owns the state it guards (as swift-nio's NIOLockedValueBox
// and Synchronization's Mutex do; Synchronization's Mutex is not in Embedded Swift's library).

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

/// A pthread condition variable, used with one `PThreadMutex`.
package final class Condition: @unchecked Sendable {
    private let raw = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    package init() { pthread_cond_init(raw, nil) }
    deinit { pthread_cond_destroy(raw); raw.deallocate() }
    /// Sleeps until signalled; `mutex` must be locked by the caller (and is again on return).
    package func wait(_ mutex: PThreadMutex) { pthread_cond_wait(raw, mutex.raw) }
    package func signal() { pthread_cond_signal(raw) }
    package func broadcast() { pthread_cond_broadcast(raw) }
}

/// A value owned by a mutex: the only way to it is `withLock`, which holds the lock for the
/// whole body. It is `@unchecked Sendable` for that reason: every access is serialised by the
/// lock, and what a body returns must be `Sendable`, so no reference into the state (a pointer
/// to its buffers) leaves it. The one rule the compiler does not check (`Mutex` checks it with
/// `inout sending`, which would also refuse a body that reads a caller's buffer into the
/// state's buffers): a body must not store a reference it was given into the state.
package final class Locked<State>: @unchecked Sendable {
    fileprivate let mutex = PThreadMutex()
    private var state: State
    package init(_ state: sending State) { self.state = state }
    /// Runs `body` with the state to itself.
    @inline(__always)
    package func withLock<T: Sendable, E: Error>(_ body: (inout State) throws(E) -> T) throws(E) -> T {
        mutex.lock()
        defer { mutex.unlock() }
        return try body(&state)
    }
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
