// `yolo serve` under pressure: back-pressure (503 with Retry-After, never an unbounded queue),
// hostile clients (scripts/serve/hostile.py: oversized and truncated bodies, a non-image, a
// decompression bomb, slowloris, 1,000 idle connections, malformed requests; a good client's
// requests succeed meanwhile), and a short local load (scripts/serve/load.py; the 30-second one
// is scripts/serve-load.sh, run by hand: this machine's cores are shared).
import Foundation
import XCTest

final class ServeLimitsTests: XCTestCase {
    nonisolated(unsafe) static var hostileServer: ServeProcess?

    override class func tearDown() {
        if let s = hostileServer { XCTAssertEqual(s.stop().status, 0) }
        hostileServer = nil
    }

    /// One session, two places in the queue, sixteen requests at once: each is answered 200 or
    /// 503 with Retry-After, and the refusals are counted in /metrics.
    func testBusyServerAnswers503WithRetryAfter() throws {
        try ServeClients.requireCurl()
        let s = try ServeProcess(["--sessions", "1", "--threads", "1", "--queue", "2"])
        defer { XCTAssertEqual(s.stop().status, 0) }
        let urls = (0..<16).flatMap { ["-o", "/dev/null", s.url("/detect?name=r\($0).png")] }
        let out = try runProcess("curl", ["-s", "--parallel", "--parallel-immediate", "--parallel-max", "16", "--data-binary",
                                          "@samples/coffee.png", "-w", "%{http_code} %header{retry-after}\\n"] + urls,
                                 in: repositoryRoot, timeout: 300)
        let answers = out.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        XCTAssertEqual(answers.count, 16, out.stdout + out.stderr)
        let ok = answers.filter { $0.first == "200" }.count
        let busy = answers.filter { $0.first == "503" }
        XCTAssertEqual(ok + busy.count, 16, "only 200 and 503 expected: \(answers)")
        XCTAssertGreaterThanOrEqual(ok, 2, "at least the two admitted into the queue are answered: \(answers)")
        XCTAssertGreaterThan(busy.count, 0, "16 requests at once cannot all fit 1 session and 2 places: \(answers)")
        XCTAssertTrue(busy.allSatisfy { $0.count == 2 && $0[1] == "1" }, "503 without Retry-After: \(answers)")
        let metrics = try curl([s.url("/metrics")]).text
        XCTAssertTrue(metrics.contains("yolo_http_rejected_total{reason=\"queue_full\"} \(busy.count)\n"), metrics)
        XCTAssertTrue(metrics.contains("yolo_queue_depth 0\n"), metrics)
        // Still serving once the burst is over.
        XCTAssertEqual(try curl(["--data-binary", "@samples/coffee.png", s.url("/detect")]).status, 200)
    }

    /// Runs one case of hostile.py against the shared server; returns what the server wrote to
    /// stderr meanwhile (shown with any failure: libmicrohttpd's log says why it closed a connection).
    @discardableResult
    func hostile(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        _ = try ServeClients.setUp()
        if Self.hostileServer == nil {
            Self.hostileServer = try ServeProcess(["--sessions", "2", "--threads", "1", "--max-body", "2000000", "--timeout", "2",
                                                   "--body-timeout", "3", "--max-connections-per-ip", "32"])
        }
        let s = try XCTUnwrap(Self.hostileServer)
        let before = s.stderr.utf8.count
        let r = try ServeClients.script("hostile.py", ["--port", "\(s.port)", "--case", name, "--image", repositoryRoot + "/samples/coffee.png"])
        let log = String(decoding: s.stderr.utf8.dropFirst(before), as: UTF8.self)
        let output = r.output + "\nthe server's stderr meanwhile:\n" + log
        XCTAssertEqual(r.status, 0, output, file: file, line: line)
        XCTAssertEqual(r.json["ok"] as? Bool, true, output, file: file, line: line)
        let good = r.json["good"] as? [String: Any]
        XCTAssertGreaterThan(good?["ok"] as? Int ?? 0, 0, "no good request succeeded during the attack: \(output)", file: file, line: line)
        XCTAssertTrue(s.process.isRunning, "the server died: \(s.stderr)", file: file, line: line)
        return log
    }

    /// 413 from the declared length, before the body is read; a chunked body is cut off.
    func testOversizedBody() throws { try hostile("oversized") }
    /// A multipart body without its end: 400.
    func testTruncatedMultipart() throws { try hostile("truncated_multipart") }
    /// A text file as the image: 415.
    func testNotAnImage() throws { try hostile("not_image") }
    /// 10000 x 10000 declared: 413; 5000 x 5000 in 65 bytes: 400 (decompression bomb).
    func testDecompressionBomb() throws { try hostile("bomb") }
    /// Headers, and then a body, at a byte a second: closed after --timeout and --body-timeout.
    func testSlowloris() throws { try hostile("slowloris") }
    /// 1,000 connections from 127.0.0.2 left idle: past the connection limit less a reserve the
    /// longest idle are closed for new ones, the timeout closes the rest; 127.0.0.1's requests
    /// succeed throughout.
    func testThousandIdleConnections() throws { try hostile("idle_flood") }
    /// A garbage request line, a non-numeric length, a 200 kB header, a wrong method, a path
    /// outside the endpoints: each its 4xx. libmicrohttpd's own refusals reach the server's log,
    /// without the HTML of its answer.
    func testMalformedRequests() throws {
        let log = try hostile("malformed")
        XCTAssertTrue(log.contains("yolo: serve: libmicrohttpd: Failed to parse `Content-Length' header. Closing connection.\n"), log)
        XCTAssertFalse(log.contains("<html>"), log)
    }

    /// A few seconds of 4 clients posting photos (until 4 answers at least, on a slow build):
    /// only 200 and 503, memory reported.
    func testShortLoad() throws {
        _ = try ServeClients.setUp()
        let s = try ServeProcess(["--sessions", "2", "--threads", "1"])
        defer { XCTAssertEqual(s.stop().status, 0) }
        let r = try ServeClients.script("load.py", ["--port", "\(s.port)", "--clients", "4", "--seconds", "4", "--warmup", "1", "--min-ok", "4",
                                                    "--pid", "\(s.process.processIdentifier)",
                                                    repositoryRoot + "/samples/coffee.png", repositoryRoot + "/samples/camera.png"])
        XCTAssertEqual(r.status, 0, r.output)
        XCTAssertEqual(r.json["errors"] as? Int, 0, r.output)
        let statuses = r.json["statuses"] as? [String: Int] ?? [:]
        XCTAssertGreaterThan(statuses["200"] ?? 0, 0, r.output)
        XCTAssertEqual(Set(statuses.keys).subtracting(["200", "503"]), [], r.output)
        print("serve short load: \(r.output)")
    }
}
