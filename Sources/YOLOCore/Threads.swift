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

/// Pins the calling thread to the CPUs `cpus` (Linux CPU numbers); threads it starts afterwards
/// inherit the set. False when the kernel refuses (a CPU outside the process's allowed set, or
/// offline).
package func pinCurrentThread(to cpus: [Int]) -> Bool { setAffinity(of: 0, to: cpus) }

/// The CPUs the calling thread may run on (its affinity mask), or nil where that cannot be read.
package func allowedCPUs() -> [Int]? { affinity(of: 0) }

// glibc declares sched_setaffinity, sched_getcpu and gettid only under _GNU_SOURCE, which Swift's
// Glibc module lacks: they are reached through dlsym.
#if os(Linux)
private func libcSymbol(_ name: String) -> UnsafeMutableRawPointer? {
    dlsym(UnsafeMutableRawPointer(bitPattern: 0), name)
}
private typealias GetInt32 = @convention(c) () -> Int32
private typealias SetAffinity = @convention(c) (Int32, Int, UnsafeRawPointer) -> Int32
private typealias GetAffinity = @convention(c) (Int32, Int, UnsafeMutableRawPointer) -> Int32
// Looked up once: the worker pool calls them at each move of a preempted thread.
private let sched_getcpu_ = libcSymbol("sched_getcpu").map { unsafeBitCast($0, to: GetInt32.self) }
private let gettid_ = libcSymbol("gettid").map { unsafeBitCast($0, to: GetInt32.self) }
private let sched_setaffinity_ = libcSymbol("sched_setaffinity").map { unsafeBitCast($0, to: SetAffinity.self) }
private let sched_getaffinity_ = libcSymbol("sched_getaffinity").map { unsafeBitCast($0, to: GetAffinity.self) }
#endif

/// Sets the affinity mask of thread `thread` (a Linux thread ID, 0: the calling thread) to
/// `cpus`; false when the kernel refuses or the call is not available.
package func setAffinity(of thread: Int32, to cpus: [Int]) -> Bool {
    #if os(Linux)
    guard !cpus.isEmpty, cpus.allSatisfy({ (0..<1024).contains($0) }), let call = sched_setaffinity_ else { return false }
    var set = [UInt64](repeating: 0, count: 16)  // a cpu_set_t: 1024 bits
    for cpu in cpus { set[cpu / 64] |= 1 << UInt64(cpu % 64) }
    return call(thread, set.count * 8, set) == 0
    #else
    return false
    #endif
}

/// The CPUs thread `thread` (a Linux thread ID, 0: the calling thread) may run on, or nil where
/// that cannot be read.
package func affinity(of thread: Int32) -> [Int]? {
    #if os(Linux)
    guard let call = sched_getaffinity_ else { return nil }
    var set = [UInt64](repeating: 0, count: 16)
    guard call(thread, set.count * 8, &set) == 0 else { return nil }
    return (0..<1024).filter { set[$0 / 64] & (1 << UInt64($0 % 64)) != 0 }
    #else
    return nil
    #endif
}

/// The CPU the calling thread runs on now, or nil where that cannot be read.
package func currentCPU() -> Int? {
    #if os(Linux)
    guard let cpu = sched_getcpu_?(), cpu >= 0 else { return nil }
    return Int(cpu)
    #else
    return nil
    #endif
}

/// The calling thread's Linux thread ID, or nil where it cannot be read.
package func currentThreadID() -> Int32? {
    #if os(Linux)
    gettid_?()
    #else
    return nil
    #endif
}

/// The CPU time thread `thread` (a Linux thread ID) has run, in nanoseconds, up to date for a
/// thread running now on another CPU; nil where it cannot be read. Its clock is the kernel's
/// per-thread CPU clock (clockid `~tid << 3 | 6`, what glibc's pthread_getcpuclockid returns).
package func threadCPUTime(of thread: Int32) -> UInt64? {
    #if os(Linux)
    nanoseconds(on: clockid_t((~thread) << 3 | 6))
    #else
    return nil
    #endif
}
