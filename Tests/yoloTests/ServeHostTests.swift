// `yolo serve` against web pages of other sites: the Host header must name this server (a
// DNS-rebinding page names its own), and a request that changes something must not come from
// another site's page (Origin); a text/plain body, which any page can make a browser send, is
// no image. The policy for addresses the tests may not listen on (another interface, 0.0.0.0)
// is checked on HostPolicy itself.
import Foundation
import XCTest
import YOLOServe

final class ServeHostTests: XCTestCase {
    nonisolated(unsafe) static var shared: ServeProcess?

    func server() throws -> ServeProcess {
        try ServeClients.requireCurl()
        if let s = Self.shared { return s }
        let s = try ServeProcess(["--sessions", "1", "--threads", "1", "--allow-host", "camera.lan"])
        Self.shared = s
        return s
    }

    override class func tearDown() {
        if let s = shared { XCTAssertEqual(s.stop().status, 0) }
        shared = nil
    }

    /// On loopback: localhost, 127.x and [::1] with any port, and --allow-host's names; any other
    /// name 403, saying how to allow it, on every endpoint (the live streams' included).
    func testHostMustNameThisServer() throws {
        let s = try server()
        for host in ["127.0.0.1:\(s.port)", "localhost", "LOCALHOST.:1", "127.0.0.5", "[::1]:8080", "camera.lan:80"] {
            let r = try curl(["-H", "Host: \(host)", s.url("/health")])
            XCTAssertEqual(r.status, 200, "\(host): \(r.text)")
        }
        for path in ["/health", "/video.mjpg", "/detections.ndjson", "/metrics", "/"] {
            let r = try curl(["-H", "Host: evil.example:\(s.port)", s.url(path)])
            XCTAssertEqual(r.status, 403, "\(path): \(r.text)")
            XCTAssertTrue(r.text.contains("Host 'evil.example:\(s.port)' is not allowed") && r.text.contains("--allow-host evil.example"),
                          r.text)
        }
        XCTAssertEqual(try curl(["-H", "Host: 10.0.0.5", s.url("/health")]).status, 403)
        XCTAssertEqual(try curl(["-H", "Host: a b", s.url("/health")]).status, 400)
    }

    /// A POST from another site's page (its Origin, or Sec-Fetch-Site: cross-site) is 403 before
    /// anything is read or done; the server's own page's (same Origin) goes through.
    func testCrossSitePostsAreRefused() throws {
        let s = try server()
        let image = "@samples/coffee.png"
        for (headers, what) in [(["Origin: http://evil.example"], "another site"), (["Origin: null"], "a sandboxed page"),
                                (["Origin: http://127.0.0.1:1"], "another port"), (["Sec-Fetch-Site: cross-site"], "cross-site")] {
            for path in ["/detect", "/v1/vision/detection", "/settings"] {
                let r = try curl(["-F", "image=\(image)"] + headers.flatMap { ["-H", $0] } + [s.url(path)])
                XCTAssertEqual(r.status, 403, "\(what) \(path): \(r.text)")
                XCTAssertTrue(r.text.contains("another site"), r.text)
            }
        }
        for origin in ["http://127.0.0.1:\(s.port)", "http://camera.lan:8080"] {
            let r = try curl(["--data-binary", image, "-H", "Origin: \(origin)", s.url("/detect")])
            XCTAssertEqual(r.status, 200, "\(origin): \(r.text)")
        }
        // GET is never refused for its Origin (an <img> of the stream shows the user their own camera).
        XCTAssertEqual(try curl(["-H", "Origin: http://evil.example", s.url("/health")]).status, 200)
    }

    /// A text/plain body (a form's enctype, or fetch without a preflight) is not an image: 415.
    func testTextPlainIsRefused() throws {
        let s = try server()
        let r = try curl(["--data-binary", "@samples/coffee.png", "-H", "Content-Type: text/plain", s.url("/detect")])
        XCTAssertEqual(r.status, 415, r.text)
        XCTAssertTrue(r.text.contains("a text/plain body is refused"), r.text)
        XCTAssertEqual(try curl(["--data-binary", "@samples/coffee.png", "-H", "Content-Type: image/png", s.url("/detect")]).status, 200)
    }

    /// The policy of each kind of address listened on.
    func testHostPolicyByAddress() {
        let cases: [(String, [String], [String], [String])] = [
            ("127.0.0.1", [], ["localhost", "127.0.0.1:8080", "127.1.2.3", "[::1]", "localhost:80"],
             ["evil.example", "192.168.1.20", "localhost.evil.example", "[::2]"]),
            ("::1", ["cam"], ["[::1]:8080", "localhost", "cam:8080", "CAM"], ["evil.example", "[::ffff:10.0.0.1]"]),
            ("192.168.1.20", [], ["192.168.1.20:8080", "localhost", "127.0.0.1"], ["192.168.1.21", "evil.example", "yolo.lan"]),
            ("192.168.1.20", ["yolo.lan"], ["yolo.lan:8080", "192.168.1.20"], ["evil.example"]),
            ("0.0.0.0", [], ["evil.example", "192.168.1.20", "yolo.lan"], []),
            ("::", ["yolo.lan"], ["yolo.lan", "192.168.1.20:8080", "[fe80::1]", "localhost"], ["evil.example"]),
            ("0.0.0.0", ["*"], ["evil.example"], []),
        ]
        for (listen, allowed, accepted, refused) in cases {
            let policy = HostPolicy(listen: listen, allowed: allowed)
            for host in accepted { XCTAssertNil(policy.hostProblem(host), "\(listen) \(allowed): \(host)") }
            for host in refused { XCTAssertEqual(policy.hostProblem(host)?.status, 403, "\(listen) \(allowed): \(host)") }
        }
        let loopback = HostPolicy(listen: "127.0.0.1", allowed: ["cam.lan"])
        XCTAssertNil(loopback.hostProblem(nil), "HTTP/1.0 without Host")
        XCTAssertEqual(loopback.hostProblem("a:b")?.status, 400)
        XCTAssertNil(loopback.originProblem(origin: nil, fetchSite: nil, host: "127.0.0.1:8080"))
        XCTAssertNil(loopback.originProblem(origin: "http://127.0.0.1:8080", fetchSite: "same-origin", host: "127.0.0.1:8080"))
        XCTAssertNil(loopback.originProblem(origin: "http://localhost", fetchSite: nil, host: "localhost:80"))
        XCTAssertNil(loopback.originProblem(origin: "https://cam.lan:8443", fetchSite: nil, host: "127.0.0.1:8080"))
        XCTAssertNotNil(loopback.originProblem(origin: "http://localhost:3000", fetchSite: nil, host: "localhost:8080"))
        XCTAssertNotNil(loopback.originProblem(origin: "https://127.0.0.1:8080", fetchSite: nil, host: "127.0.0.1"))
        XCTAssertNotNil(loopback.originProblem(origin: "file://", fetchSite: nil, host: "127.0.0.1"))
        XCTAssertNotNil(loopback.originProblem(origin: nil, fetchSite: "cross-site", host: "127.0.0.1"))
        for bad in ["a:80", "", "http://a", "*.lan"] { XCTAssertNotNil(HostPolicy.allowedHostProblem(bad), bad) }
        for good in ["camera.lan", "192.168.1.20", "*", "[::1]"] { XCTAssertNil(HostPolicy.allowedHostProblem(good), good) }
    }
}
