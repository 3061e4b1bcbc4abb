// `yolo serve` with real clients nobody here wrote: deepstack-python (Home Assistant's DeepStack
// client, from PyPI) and headless Chromium (Debian's) on the live view. The scripts they run are
// in scripts/serve/; scripts/serve-test-setup.sh installs the clients (or the tests skip,
// saying why, when they cannot be installed at all).
import Foundation
import XCTest

final class ServeClientsTests: XCTestCase {
    /// The client's predictions equal `yolo detect --json` on the same files (labels, confidences
    /// to 1e-4, boxes to 1 px), through /v1/vision/detection and /v1/vision/custom/NAME.
    func testDeepStackPythonClient() throws {
        _ = try ServeClients.setUp()
        let samples = ["coffee.png", "motorcycle_left.png", "camera.png", "rocket.jpg"]
        let s = try ServeProcess(["--sessions", "2", "--threads", "1"])
        defer { XCTAssertEqual(s.stop().status, 0) }
        let expected = try temporaryDirectory() + "/expected.jsonl"
        try (detectJSONLines(samples).joined(separator: "\n") + "\n").write(toFile: expected, atomically: true, encoding: .utf8)
        let r = try ServeClients.script("deepstack_check.py", ["--port", "\(s.port)", "--expected", expected, "--custom", "yolov3-tiny"]
                                        + samples.map { repositoryRoot + "/samples/" + $0 })
        XCTAssertEqual(r.status, 0, r.output)
        XCTAssertEqual(r.json["problems"] as? [String], [], r.output)
        XCTAssertEqual(r.json["checked"] as? Int, 3 * samples.count, r.output)
        XCTAssertGreaterThan(r.json["predictions"] as? Int ?? 0, 0, r.output)
    }

    /// The live view in headless Chromium on a synthetic video: the page shows the video, an
    /// FPS figure and the detections; moving the threshold slider to its top empties them.
    /// The screenshots stay in .build/serve-screenshots/ to be looked at.
    func testLiveViewInChromium() throws {
        _ = try ServeClients.setUp()
        let dir = try temporaryDirectory()
        let s = try ServeProcess(["--sessions", "2", "--threads", "1", "--input", try LiveClip.make(in: dir), "--loop"])
        defer { XCTAssertEqual(s.stop().status, 0) }
        let shots = repositoryRoot + "/.build/serve-screenshots"
        try FileManager.default.createDirectory(atPath: shots, withIntermediateDirectories: true)
        let r = try ServeClients.script("live_view_check.py", ["--url", s.url("/"), "--out", shots, "--timeout", "180"], timeout: 600)
        XCTAssertEqual(r.status, 0, r.output)
        let before = r.json["before"] as? [String: Any] ?? [:], after = r.json["after"] as? [String: Any] ?? [:]
        XCTAssertGreaterThan(Double(before["fps"] as? String ?? "") ?? 0, 0, r.output)
        XCTAssertGreaterThan(before["count"] as? Int ?? 0, 0, r.output)
        XCTAssertEqual(before["video"] as? Int, 640, "the MJPEG image did not load: \(r.output)")
        XCTAssertGreaterThan(r.json["slider"] as? Double ?? 0, 0.9, r.output)
        XCTAssertEqual(after["count"] as? Int, 0, r.output)
        for name in ["live-view.png", "live-view-threshold.png"] {
            XCTAssertTrue(FileManager.default.fileExists(atPath: shots + "/" + name), name)
        }
        print("serve live view: screenshots in \(shots): \(r.output)")
    }
}
