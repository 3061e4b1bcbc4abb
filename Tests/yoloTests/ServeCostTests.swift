// What one request may cost `yolo serve`: an image that is cheap to send but dear to decode (a
// progressive JPEG of hundreds of scans: 413 naming the scan limit; any image past
// --decode-timeout: 413), and a threshold near 0 (every candidate box for every class: refused
// under --min-thresh, and at most --max-det detections per image, 300 by default).
import Foundation
import XCTest

final class ServeCostTests: XCTestCase {
    static let manyScans = repositoryRoot + "/Tests/YOLOImageTests/Fixtures/many_scans.jpg"

    private func assertError(_ r: CurlResponse, _ status: Int, _ phrase: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r.status, status, r.text, file: file, line: line)
        XCTAssertTrue(r.text.contains(phrase), "'\(phrase)' not in \(r.text)", file: file, line: line)
    }

    /// Fixtures/many_scans.jpg (8 kB, 640 scans) is refused naming the limit, on both
    /// endpoints, and the server goes on answering.
    func testManyScanJPEGIsRefusedNamingTheLimit() throws {
        try ServeClients.requireCurl()
        let s = try ServeProcess(["--sessions", "1", "--threads", "1"])
        defer { XCTAssertEqual(s.stop().status, 0) }
        assertError(try curl(["--data-binary", "@" + Self.manyScans, s.url("/detect?name=scans.jpg")]), 413,
                    "scans.jpg: refused: the JPEG has more than 100 scans")
        assertError(try curl(["-F", "image=@" + Self.manyScans, s.url("/v1/vision/detection")]), 413, "more than 100 scans")
        XCTAssertEqual(try curl(["--data-binary", "@samples/coffee.png", s.url("/detect")]).status, 200)
    }

    /// An image still decoding at --decode-timeout is refused (here a limit no decode can meet).
    func testDecodeTimeout() throws {
        try ServeClients.requireCurl()
        let s = try ServeProcess(["--sessions", "1", "--threads", "1", "--decode-timeout", "0.000001"])
        defer { XCTAssertEqual(s.stop().status, 0) }
        assertError(try curl(["--data-binary", "@samples/coffee.png", s.url("/detect?name=coffee.png")]), 413,
                    "coffee.png: refused: decoding took longer than the time limit of 1e-06 s")
    }

    /// thresh=0 (137,809 detections on coffee.png before) is refused under the floor, on every
    /// endpoint that takes a threshold; with the floor lowered, the default cap of 300 holds.
    func testThresholdFloorAndDetectionCap() throws {
        try ServeClients.requireCurl()
        let s = try ServeProcess(["--sessions", "1", "--threads", "1"])
        for query in ["thresh=0", "thresh=0.009"] {
            assertError(try curl(["--data-binary", "@samples/coffee.png", s.url("/detect?\(query)")]), 400, "minimum is 0.01")
        }
        assertError(try curl(["-F", "image=@samples/coffee.png", "-F", "min_confidence=0", s.url("/v1/vision/detection")]), 400,
                    "minimum is 0.01 (yolo serve --min-thresh sets it")
        assertError(try curl(["--data-binary", "@samples/coffee.png", s.url("/detect?max_det=301")]), 400,
                    "max_det=301: this server reports at most 300 detections per image")
        XCTAssertEqual(try curl(["--data-binary", "@samples/coffee.png", s.url("/detect?thresh=0.01&max_det=300")]).status, 200)
        XCTAssertEqual(s.stop().status, 0)

        let low = try ServeProcess(["--sessions", "1", "--threads", "1", "--min-thresh", "0"])
        defer { XCTAssertEqual(low.stop().status, 0) }
        for (query, count) in [("thresh=0", 300), ("thresh=0&max_det=7", 7)] {
            let r = try curl(["--data-binary", "@samples/coffee.png", low.url("/detect?\(query)")])
            XCTAssertEqual(r.status, 200, r.text)
            XCTAssertEqual((try r.json()["detections"] as? [Any])?.count, count, query)
        }
        let deepstack = try curl(["-F", "image=@samples/coffee.png", "-F", "min_confidence=0", low.url("/v1/vision/detection")])
        XCTAssertEqual(try deepstack.json()["count"] as? Int, 300, deepstack.text)
    }

    /// The defaults of the command line are held to the same limits.
    func testCommandLineDefaultsWithinTheLimits() throws {
        let out = try runProcess(try yoloBinary(), ["serve", "--listen", "127.0.0.1:0", "--thresh", "0.001"], in: repositoryRoot, timeout: 60)
        XCTAssertEqual(out.status, 64, out.stderr)
        XCTAssertTrue(out.stderr.contains("--thresh 0.001 is under --min-thresh 0.01"), out.stderr)
    }
}
