/// `Locked<State>`: state that only its lock's holder can touch, so that a class holding one
/// can be checked `Sendable` (like Synchronization's `Mutex`, which Embedded Swift, used to
/// build this module for the ARM check, does not have).

/// A value owned by a mutex: the only way to it is `withLock`, which holds the lock for the
/// whole body. It is `@unchecked Sendable` for that reason: every access is serialised by the
/// lock, and what a body returns must be `Sendable`, so no reference into the state (a
/// pointer to its buffers) leaves it. The one rule the compiler does not check (`Mutex` checks
/// it with `inout sending`, which would also refuse a body that reads a caller's buffer into
/// the state's buffers): a body must not store a reference it was given into the state.
final class Locked<State>: @unchecked Sendable {
    private let lock = Lock()
    private var state: State

    init(_ state: sending State) {
        self.state = state
    }

    /// Runs `body` with the state to itself.
    func withLock<T: Sendable, E: Error>(_ body: (inout State) throws(E) -> T) throws(E) -> T {
        try lock.withLock { () throws(E) -> T in try body(&state) }
    }
}
