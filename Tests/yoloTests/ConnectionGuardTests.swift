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
        g.opened(key: 1, socket: try pair(sending: "POST /detect HTTP/1.1\r\n"), loopback: true)
        for k in 2...10 {
            usleep(1_000)
            g.opened(key: UInt(k), socket: try pair(), loopback: true)
        }
        XCTAssertEqual(drops.withLock { $0 }, [])
        g.opened(key: 11, socket: try pair(), loopback: true)
        XCTAssertEqual(drops.withLock { $0 }, ["make_room"])
        XCTAssertTrue(g.isOpen(key: 1), "the connection whose request waits was closed for room")
        XCTAssertFalse(g.isOpen(key: 2), "the oldest idle connection was not the one closed")
        XCTAssertTrue(g.isOpen(key: 11))
    }

    /// Every older connection has bytes waiting: room is made from none of them, and the new
    /// one stays (libmicrohttpd's own limit holds the rest back).
    func testNoRoomIsMadeWhenEveryOtherConnectionHasBytesWaiting() throws {
        let (g, drops) = guardWith(connections: 20)
        for k in 1...11 { g.opened(key: UInt(k), socket: try pair(sending: "GET / HTTP/1.1\r\n"), loopback: true) }
        XCTAssertEqual(drops.withLock { $0 }, [])
        XCTAssertTrue((1...11).allSatisfy { g.isOpen(key: UInt($0)) })
    }

    /// Past the header deadline an idle connection is closed; one whose bytes wait unread is
    /// not, until they are read.
    func testTheHeaderDeadlineSparesAConnectionWhoseBytesWait() throws {
        let (g, drops) = guardWith(connections: 512, headerSeconds: 1)
        let waiting = try pair(sending: "GET /health HTTP/1.1\r\n")
        g.opened(key: 1, socket: waiting, loopback: true)
        g.opened(key: 2, socket: try pair(), loopback: true)
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
}
