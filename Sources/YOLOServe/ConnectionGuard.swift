// Deadlines libmicrohttpd does not keep: its timeout is one of inactivity, so a client that
// sends a byte a second (slowloris) would hold its connection forever. Every connection gets
// a deadline for its request's headers and one for its body; a sweeper thread shuts down the
// socket of a connection past its deadline, and libmicrohttpd then closes it.
import CMicroHTTPD
import YOLOCore

final class ConnectionGuard: Sendable {
    private struct Entry {
        var socket: Int32
        /// Monotonic nanoseconds; nil while the server is answering (or streaming).
        var deadline: UInt64?
        var reason: String
    }
    private let table = Locked<[UInt: Entry]>([:])
    private let headerNanoseconds: UInt64
    private let bodyNanoseconds: UInt64
    private let onDrop: @Sendable (String) -> Void
    private let running = Locked(false)
    private let sweeper = Locked<ThreadHandle?>(nil)

    init(headerTimeout: Int, bodyTimeout: Int, onDrop: @escaping @Sendable (String) -> Void) {
        headerNanoseconds = UInt64(max(1, headerTimeout)) * 1_000_000_000
        bodyNanoseconds = UInt64(max(1, bodyTimeout)) * 1_000_000_000
        self.onDrop = onDrop
    }

    private func key(_ c: OpaquePointer) -> UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(c))) }

    /// A new connection: its first request's headers are due.
    func opened(_ c: OpaquePointer) {
        let entry = Entry(socket: yolo_mhd_socket(c), deadline: monotonicNanoseconds() + headerNanoseconds,
                          reason: "header_timeout")
        table.withLock { $0[key(c)] = entry }
    }

    /// The headers are in; the body is due.
    func bodyStarted(_ c: OpaquePointer) { set(c, deadline: monotonicNanoseconds() + bodyNanoseconds, reason: "body_timeout") }

    /// The server has the whole request and answers (or streams): no deadline of ours.
    func answering(_ c: OpaquePointer) { set(c, deadline: nil, reason: "") }

    /// A request ended; on a kept-alive connection, the next one's headers are due.
    func requestDone(_ c: OpaquePointer) {
        set(c, deadline: monotonicNanoseconds() + headerNanoseconds, reason: "header_timeout")
    }

    func closed(_ c: OpaquePointer) { table.withLock { _ = $0.removeValue(forKey: key(c)) } }

    var count: Int { table.withLock { $0.count } }

    private func set(_ c: OpaquePointer, deadline: UInt64?, reason: String) {
        table.withLock { t in
            guard t[key(c)] != nil else { return }
            t[key(c)]!.deadline = deadline
            t[key(c)]!.reason = reason
        }
    }

    func start() {
        running.withLock { $0 = true }
        let handle = startThread(stackSize: 256 * 1024) { [self] in
            while running.withLock({ $0 }) {
                usleep(200_000)
                sweep()
            }
        }
        sweeper.withLock { $0 = handle }
    }

    func stop() {
        running.withLock { $0 = false }
        sweeper.withLock { h in h?.join(); h = nil }
    }

    /// Shuts down the sockets past their deadline. The table's lock is held meanwhile, and
    /// libmicrohttpd reports a connection closed (taking the lock) before it closes its socket,
    /// so no socket is shut down after its number was reused.
    private func sweep() {
        let now = monotonicNanoseconds()
        let reasons: [String] = table.withLock { t in
            var reasons: [String] = []
            for (k, e) in t {
                guard let deadline = e.deadline, deadline < now else { continue }
                if e.socket >= 0 { shutdown(e.socket, Int32(SHUT_RDWR)) }
                t[k]!.deadline = nil
                reasons.append(e.reason)
            }
            return reasons
        }
        for r in reasons { onDrop(r) }
    }
}
