// ConnectionGuard in-process, on socket pairs: room is made from idle connections only, and the
// deadlines close slow clients, not connections whose bytes wait because the server is behind
// (docs/serve.md, "Limits and back-pressure").
import Foundation
import XCTest
@testable import YOLOServe
import YOLOCore

final class ConnectionGuardTests: XCTestCase {
    /// A socket pair: the server's end (given to the guard) and the client's.
    private var pairs: [(server: Int32, client: Int32)] = []

    override func tearDown() {
        for p in pairs { close(p.server); close(p.client) }
        pairs = []
    }

    private func pair(sending bytes: String? = nil) throws -> Int32 {
        var fds: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds), 0)
        pairs.append((fds[0], fds[1]))
        if let bytes { XCTAssertEqual(write(fds[1], bytes, bytes.utf8.count), bytes.utf8.count) }
        return fds[0]
    }

    private func guardWith(connections: Int, headerSeconds: Int = 10) -> (ConnectionGuard, Locked<[String]>) {
        var limits = ServeLimits()
        limits.maxConnections = connections
        limits.headerTimeout = headerSeconds
        let drops = Locked<[String]>([])
        return (ConnectionGuard(limits: limits) { r in drops.withLock { $0.append(r) } }, drops)
    }

    /// The oldest connection's request has arrived unread (the server behind a burst of idle
    /// connections): room is made from the oldest idle one instead. Before, the request's
    /// connection was closed without an answer (CI, ServeLimitsTests.testThousandIdleConnections
    /// under AddressSanitizer).
    func testRoomIsMadeFromIdleConnectionsNotFromOneWhoseRequestWaits() throws {
        let (g, drops) = guardWith(connections: 20)
        XCTAssertEqual(g.roomLimit, 10)
        g.opened(key: 1, socket: try pair(sending: "POST /detect HTTP/1.1\r\n"), peer: nil)
        for k in 2...10 {
            usleep(1_000)
            g.opened(key: UInt(k), socket: try pair(), peer: nil)
        }
        XCTAssertEqual(drops.withLock { $0 }, [])
        g.opened(key: 11, socket: try pair(), peer: nil)
        XCTAssertEqual(drops.withLock { $0 }, ["make_room"])
        XCTAssertTrue(g.isOpen(key: 1), "the connection whose request waits was closed for room")
        XCTAssertFalse(g.isOpen(key: 2), "the oldest idle connection was not the one closed")
        XCTAssertTrue(g.isOpen(key: 11))
    }

    /// Every older connection has bytes waiting: room is made from none of them, and the new
    /// one stays (libmicrohttpd's own limit holds the rest back).
    func testNoRoomIsMadeWhenEveryOtherConnectionHasBytesWaiting() throws {
        let (g, drops) = guardWith(connections: 20)
        for k in 1...11 { g.opened(key: UInt(k), socket: try pair(sending: "GET / HTTP/1.1\r\n"), peer: nil) }
        XCTAssertEqual(drops.withLock { $0 }, [])
        XCTAssertTrue((1...11).allSatisfy { g.isOpen(key: UInt($0)) })
    }

    /// Past the header deadline an idle connection is closed; one whose bytes wait unread is
    /// not, until they are read.
    func testTheHeaderDeadlineSparesAConnectionWhoseBytesWait() throws {
        let (g, drops) = guardWith(connections: 512, headerSeconds: 1)
        let waiting = try pair(sending: "GET /health HTTP/1.1\r\n")
        g.opened(key: 1, socket: waiting, peer: nil)
        g.opened(key: 2, socket: try pair(), peer: nil)
        g.sweep(now: monotonicNanoseconds() + 5_000_000_000)
        XCTAssertEqual(drops.withLock { $0 }, ["header_timeout"])
        XCTAssertTrue(g.isOpen(key: 1))
        XCTAssertFalse(g.isOpen(key: 2))
        var buffer = [UInt8](repeating: 0, count: 64)
        XCTAssertGreaterThan(read(waiting, &buffer, buffer.count), 0)
        g.sweep(now: monotonicNanoseconds() + 5_000_000_000)
        XCTAssertEqual(drops.withLock { $0 }, ["header_timeout", "header_timeout"])
        XCTAssertFalse(g.isOpen(key: 1), "a slow client whose bytes were read kept its connection past the deadline")
    }

    /// Each address other than loopback is counted on its own: at a cap of one, a second
    /// connection from 10.0.0.1 is refused while 10.0.0.2 is admitted, until the first closes.
    func testOtherAddressesAreCountedEachOnItsOwn() throws {
        var limits = ServeLimits()
        limits.maxConnectionsPerIP = 1
        let g = ConnectionGuard(limits: limits) { _ in }
        func address(_ text: String) -> sockaddr_in {
            var a = sockaddr_in()
            a.sin_family = sa_family_t(AF_INET)
            XCTAssertEqual(inet_pton(AF_INET, text, &a.sin_addr), 1)
            return a
        }
        func admits(_ a: sockaddr_in) -> Bool {
            withUnsafePointer(to: a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { g.admits($0) } }
        }
        func peer(_ a: sockaddr_in) -> ConnectionGuard.Peer? {
            withUnsafePointer(to: a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { ConnectionGuard.peer(of: $0) } }
        }
        let (one, two, local) = (address("10.0.0.1"), address("10.0.0.2"), address("127.0.0.1"))
        XCTAssertNil(peer(local))
        XCTAssertNotEqual(peer(one), peer(two))
        g.opened(key: 1, socket: try pair(), peer: peer(one))
        XCTAssertFalse(admits(one), "a second connection from 10.0.0.1 passed its cap of one")
        XCTAssertTrue(admits(two), "10.0.0.2 was refused for 10.0.0.1's connection")
        XCTAssertTrue(admits(local))
        g.closed(key: 1)
        XCTAssertTrue(admits(one))
    }
}
