// libmicrohttpd's log lines reach the operator at a bounded rate, without the HTML it answers with.
import XCTest
@testable import YOLOServe
import YOLOCore

final class LibraryLogTests: XCTestCase {
    func testAtMostABurstPerWindowAndTheRestCounted() {
        let lines = Locked<[String]>([])
        let log = RateLimitedLog(burst: 3, windowSeconds: 10) { l in lines.withLock { $0.append(l) } }
        let second: UInt64 = 1_000_000_000
        for i in 0..<8 { log.log("line \(i)", now: 100 * second + UInt64(i)) }
        XCTAssertEqual(lines.withLock { $0 }, ["line 0", "line 1", "line 2"])
        // Still the same window: held.
        log.log("line 8", now: 109 * second)
        XCTAssertEqual(lines.withLock { $0.count }, 3)
        // The next window says how many were held, then passes lines again.
        log.log("line 9", now: 110 * second)
        XCTAssertEqual(lines.withLock { Array($0.dropFirst(3)) },
                       ["(6 more lines of libmicrohttpd's not shown)", "line 9"])
        log.log("line 10", now: 125 * second)
        XCTAssertEqual(lines.withLock { $0.last }, "line 10")
        XCTAssertEqual(lines.withLock { $0.count }, 6, "nothing was held in the second window: no count line")
    }

    func testTheErrorPageIsCutFromTheLine() {
        XCTAssertEqual(HTTPServer.withoutPage("Error processing request (HTTP response code is 400 ('<html><head><title>Request malformed</title></head><body>x</body></html>')). Closing connection."),
                       "Error processing request (HTTP response code is 400). Closing connection.")
        XCTAssertEqual(HTTPServer.withoutPage("Failed to parse `Content-Length' header. Closing connection."),
                       "Failed to parse `Content-Length' header. Closing connection.")
        XCTAssertEqual(HTTPServer.withoutPage("odd ('<html> never closed"), "odd ('<html> never closed")
    }
}
