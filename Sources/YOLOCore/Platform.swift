// The C library, once for the package: every module that imports YOLOCore sees it (as Foundation
// re-exports it on Linux), so no other file repeats the canImport ladder. Embedded Swift's
// aarch64 build (scripts/arm-check.sh) provides a module named Glibc of its own.
#if canImport(Glibc)
@_exported import Glibc
#elseif canImport(Musl)
@_exported import Musl
#elseif canImport(Darwin)
@_exported import Darwin
#endif

/// The number of cores this process may run on (at least 1): the CPUs of its affinity mask
/// (`taskset`, a container's cpuset, `yolo --cores`), else the online CPUs.
package func availableCores() -> Int {
    allowedCPUs().map { max(1, $0.count) } ?? max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
}

/// Monotonic time in nanoseconds (profiles, measurements).
@inline(__always) package func monotonicNanoseconds() -> UInt64 {
    nanoseconds(on: CLOCK_MONOTONIC) ?? 0
}

/// Clock `clock`'s time in nanoseconds, or nil where it cannot be read.
@inline(__always) package func nanoseconds(on clock: clockid_t) -> UInt64? {
    var ts = timespec()
    guard clock_gettime(clock, &ts) == 0 else { return nil }
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}
