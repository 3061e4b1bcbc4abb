// Who gets a connection, and for how long.
//
// Deadlines libmicrohttpd does not keep: its timeout is one of inactivity, so a client that
// sends a byte a second (slowloris) would hold its connection forever. Every connection gets
// a deadline for its request's headers and one for its body; a sweeper thread shuts down the
// socket of a connection past its deadline, and libmicrohttpd then closes it.
//
// Room for everyone: on the default loopback bind every local program, and a reverse proxy's
// every client, shares one address, so a cap per address would let one local process lock out
// all the others. Loopback peers have no per-address cap; instead, when the connections pass
// the connection limit less a reserve, the connection that has waited longest for its request
// (then the one that has waited longest for its body) is closed to make room: idle sockets,
// however many, cannot keep a new client out. Other peers keep a per-address cap, checked as
// libmicrohttpd accepts them.
//
// A connection whose bytes have arrived but are not yet read is not idle, however long ago it
// opened: the server is behind (a burst of connections, a slow build), not the client. Neither
// room making nor the deadlines close it while its bytes wait (docs/serve.md, "Limits and back-pressure").
import CMicroHTTPD
import YOLOCore

final class ConnectionGuard: Sendable {
    private enum Phase { case headers, body, answering }
    /// A peer's address (IPv4 as IPv4-mapped IPv6).
    struct Peer: Hashable { var high: UInt64, low: UInt64 }
    private struct Entry {
        var socket: Int32
        var peer: Peer?
        var phase: Phase
        /// When the phase began: the longest waiting goes first when room is needed.
        var since: UInt64
        /// Monotonic nanoseconds; nil while the server is answering (or streaming).
        var deadline: UInt64?
        var reason: String
        /// Shut down by us, not yet reported closed by libmicrohttpd.
        var ending = false
    }
    private struct Table {
        var entries: [UInt: Entry] = [:]
        var perPeer: [Peer: Int] = [:]
        /// Entries not ending.
        var active = 0
    }
    private let table = Locked(Table())
    private let headerNanoseconds: UInt64
    private let bodyNanoseconds: UInt64
    /// Beyond this many active connections, the longest waiting one is closed for a new one.
    let roomLimit: Int
    let perAddressLimit: Int
    private let onDrop: @Sendable (String) -> Void
    private let running = Locked(false)
    private let sweeper = Locked<ThreadHandle?>(nil)

    init(limits: ServeLimits, onDrop: @escaping @Sendable (String) -> Void) {
        headerNanoseconds = UInt64(max(1, limits.headerTimeout)) * 1_000_000_000
        bodyNanoseconds = UInt64(max(1, limits.bodyTimeout)) * 1_000_000_000
        // libmicrohttpd accepts up to 10 connections a turn before it closes the sockets shut
        // down for them; the reserve keeps its hard limit out of reach meanwhile.
        let n = limits.maxConnections
        roomLimit = max(1, n - min(max(16, n / 8), n / 2))
        perAddressLimit = limits.maxConnectionsPerIP
        self.onDrop = onDrop
    }

    private func key(_ c: OpaquePointer) -> UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(c))) }

    /// The peer of a loopback or non-IP address is nil (no per-address cap).
    private static func peer(_ read: (UnsafeMutablePointer<UInt8>) -> Int32) -> Peer? {
        var bytes = (UInt64(0), UInt64(0))
        let kind = withUnsafeMutableBytes(of: &bytes) { read($0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
        return kind == 0 ? Peer(high: bytes.0, low: bytes.1) : nil
    }

    /// The peer at `address`; nil for a loopback or non-IP address.
    static func peer(of address: UnsafePointer<sockaddr>?) -> Peer? { peer({ yolo_peer_key(address, $0) }) }

    /// Whether a peer may connect (libmicrohttpd's accept policy): a non-loopback address
    /// under its cap.
    func admits(_ address: UnsafePointer<sockaddr>?) -> Bool {
        guard let peer = Self.peer(of: address) else { return true }
        let ok = table.withLock { ($0.perPeer[peer] ?? 0) < perAddressLimit }
        if !ok { onDrop("per_ip_limit") }
        return ok
    }

    /// A new connection: its first request's headers are due; room is made when needed.
    func opened(_ c: OpaquePointer) {
        opened(key: key(c), socket: yolo_mhd_socket(c), peer: Self.peer({ yolo_mhd_peer_key(c, $0) }))
    }

    /// `opened` on a socket, a key and a peer of the caller's (tests give a socket pair's end).
    func opened(key new: UInt, socket: Int32, peer: Peer?) {
        let now = monotonicNanoseconds()
        let entry = Entry(socket: socket, peer: peer, phase: .headers,
                          since: now, deadline: now + headerNanoseconds, reason: "header_timeout")
        let made: Int = table.withLock { t in
            t.entries[new] = entry
            if let p = entry.peer { t.perPeer[p, default: 0] += 1 }
            t.active += 1
            var made = 0
            var unread: Set<UInt> = []
            while t.active > roomLimit, let k = longestWaiting(t, except: new, unread: &unread) {
                end(&t, k)
                made += 1
            }
            return made
        }
        for _ in 0..<made { onDrop("make_room") }
    }

    /// The connection waiting longest for its request's headers, else for its body, of those
    /// with nothing unread (`unread` collects those found with bytes waiting).
    private func longestWaiting(_ t: Table, except new: UInt, unread: inout Set<UInt>) -> UInt? {
        while true {
            var best: (UInt, Entry)?
            for (k, e) in t.entries where k != new && !e.ending && e.phase != .answering && !unread.contains(k) {
                guard let b = best?.1 else { best = (k, e); continue }
                if (e.phase == .headers && b.phase == .body) || (e.phase == b.phase && e.since < b.since) { best = (k, e) }
            }
            guard let (k, e) = best else { return nil }
            if yolo_socket_unread(e.socket) == 0 { return k }
            unread.insert(k)
        }
    }

    /// Shuts the socket down; libmicrohttpd then closes the connection (and reports it closed).
    private func end(_ t: inout Table, _ k: UInt) {
        guard var e = t.entries[k], !e.ending else { return }
        if e.socket >= 0 { shutdown(e.socket, Int32(SHUT_RDWR)) }
        e.ending = true
        e.deadline = nil
        t.entries[k] = e
        t.active -= 1
    }

    /// The headers are in; the body is due.
    func bodyStarted(_ c: OpaquePointer) { set(c, .body, deadline: bodyNanoseconds, reason: "body_timeout") }

    /// The server has the whole request and answers (or streams): no deadline of ours.
    func answering(_ c: OpaquePointer) { set(c, .answering, deadline: nil, reason: "") }

    /// A request ended; on a kept-alive connection, the next one's headers are due.
    func requestDone(_ c: OpaquePointer) { set(c, .headers, deadline: headerNanoseconds, reason: "header_timeout") }

    func closed(_ c: OpaquePointer) { closed(key: key(c)) }

    func closed(key k: UInt) {
        table.withLock { t in
            guard let e = t.entries.removeValue(forKey: k) else { return }
            if let p = e.peer {
                let n = (t.perPeer[p] ?? 1) - 1
                t.perPeer[p] = n > 0 ? n : nil
            }
            if !e.ending { t.active -= 1 }
        }
    }

    var count: Int { table.withLock { $0.entries.count } }

    private func set(_ c: OpaquePointer, _ phase: Phase, deadline: UInt64?, reason: String) {
        let now = monotonicNanoseconds()
        table.withLock { t in
            guard var e = t.entries[key(c)], !e.ending else { return }
            e.phase = phase
            e.since = now
            e.deadline = deadline.map { now + $0 }
            e.reason = reason
            t.entries[key(c)] = e
        }
    }

    /// Whether the connection of `key` is open and not shut down by us.
    func isOpen(key k: UInt) -> Bool { table.withLock { t in t.entries[k].map { !$0.ending } ?? false } }

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
    /// so no socket is shut down after its number was reused (nor by `opened`'s room making).
    func sweep(now: UInt64 = monotonicNanoseconds()) {
        let reasons: [String] = table.withLock { t in
            let late = t.entries.filter { e in e.value.deadline.map { $0 < now } ?? false && yolo_socket_unread(e.value.socket) == 0 }
            for k in late.keys { end(&t, k) }
            return late.values.map(\.reason)
        }
        for r in reasons { onDrop(r) }
    }
}
