// Starting and joining threads (pthreads: Foundation's Thread is not in Embedded Swift, and a
// worker pool wants plain threads with a known stack size), the one place that boxes a closure
// for pthread_create.

/// A started thread; `join` waits for it to end.
package struct ThreadHandle: Sendable {
    private let id: pthread_t
    fileprivate init(_ id: pthread_t) { self.id = id }
    package func join() { pthread_join(id, nil) }
}

private final class ThreadStart {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
}

/// Runs `body` on a new thread (stack `stackSize` bytes, 0: the system's default). Returns nil
/// when the thread could not be created.
package func startThread(stackSize: Int = 0, _ body: @escaping @Sendable () -> Void) -> ThreadHandle? {
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    if stackSize > 0 { pthread_attr_setstacksize(&attributes, stackSize) }
    let box = Unmanaged.passRetained(ThreadStart(body))
    var id = pthread_t()
    let rc = pthread_create(&id, &attributes, { raw in
        Unmanaged<ThreadStart>.fromOpaque(raw!).takeRetainedValue().body()
        return nil
    }, box.toOpaque())
    guard rc == 0 else { box.release(); return nil }
    return ThreadHandle(id)
}
