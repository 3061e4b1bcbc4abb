import Foundation
import XCTest

/// The `yolo-bench` binary, with run counts small enough for a debug build: `--json` writes
/// JSON alone to stdout, the defaults come from $YOLO_WEIGHTS, a missing default names its path
/// and where defaults come from, and a busy machine is reported.
final class BenchTests: XCTestCase {
    /// The quickest measurement: one algorithm, one thread count, no layer table.
    let quick = ["--threads", "1", "--warmup", "0", "--conv", "winograd", "--no-layers"]

    func weightsDirectory() throws -> String {
        let dir = repositoryRoot + "/weights"
        guard FileManager.default.fileExists(atPath: dir + "/yolov3-tiny.weights") else {
            XCTFail("weights/yolov3-tiny.weights is missing: run weights/fetch.sh")
            throw XCTSkip("no weights")
        }
        return dir
    }

    func bench(_ args: [String], environment: [String: String]) throws -> ProcessOutput {
        // From a directory without weights/: the defaults must come from $YOLO_WEIGHTS.
        try runProcess(try builtExecutable("yolo-bench"), args, in: try temporaryDirectory(), environment: environment)
    }

    func jsonObject(_ text: String) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                      "stdout is not one JSON object: \(text)")
    }

    func testJSONGoesAloneToStdoutAndTheDefaultsComeFromYOLO_WEIGHTS() throws {
        let weights = try weightsDirectory()
        let r = try bench(["--json", "--runs", "3", "--inflight", "1", "--seconds", "0.2",
                           "--image", repositoryRoot + "/samples/coffee.png"] + quick,
                          environment: ["YOLO_WEIGHTS": weights + "/"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let json = try jsonObject(r.stdout)  // the whole of stdout: `yolo-bench --json | jq` works
        XCTAssertGreaterThan(json["median_ms"] as? Double ?? 0, 0)
        XCTAssertEqual((json["results"] as? [[String: Any]])?.count, 1)
        XCTAssertGreaterThan(json["throughput_fps"] as? Double ?? 0, 0)
        XCTAssertNotNil(json["machine_quiet"] as? Bool, "\(json)")
        XCTAssertGreaterThanOrEqual(json["other_cores_max"] as? Double ?? -1, 0)
        XCTAssertNotNil(json["warnings"] as? [String])
        XCTAssertNotNil((json["results"] as? [[String: Any]])?.first?["other_cores"] as? Double)
        // The text, to stderr, names the cfg found through $YOLO_WEIGHTS.
        XCTAssertTrue(r.stderr.contains("yolo-bench: \(weights)/yolov3-tiny.cfg at 416x416"), r.stderr)
        XCTAssertTrue(r.stderr.contains("best:"), r.stderr)
    }

    func testMissingDefaultFilesNameTheirPathAndWhereDefaultsComeFrom() throws {
        let hint = "The default cfg, weights and names are read from $YOLO_WEIGHTS (a directory), else weights/."
        let plain = try bench(["--runs", "1"] + quick, environment: ["YOLO_WEIGHTS": ""])
        XCTAssertEqual(plain.status, 1)
        XCTAssertTrue(plain.stderr.contains("yolo-bench: weights/yolov3-tiny.cfg: No such file or directory\n\(hint)"), plain.stderr)
        let elsewhere = try temporaryDirectory() + "/none"
        let set = try bench(["--runs", "1"] + quick, environment: ["YOLO_WEIGHTS": elsewhere])
        XCTAssertEqual(set.status, 1)
        XCTAssertTrue(set.stderr.contains("yolo-bench: \(elsewhere)/yolov3-tiny.cfg: No such file or directory\n\(hint)"), set.stderr)
        // A file given on the command line gets no hint about defaults.
        let given = try bench(["--cfg", elsewhere + "/my.cfg", "--runs", "1"] + quick, environment: [:])
        XCTAssertEqual(given.status, 1)
        XCTAssertTrue(given.stderr.contains("\(elsewhere)/my.cfg: No such file or directory"), given.stderr)
        XCTAssertFalse(given.stderr.contains(hint), given.stderr)
    }

    /// Another process keeps a core busy for the whole measurement (a shell loop, ended when the
    /// test ends and in any case by `timeout` after 120 s): yolo-bench must say so.
    func testABusyMachineIsReported() throws {
        let weights = try weightsDirectory()
        let busy = Process()
        busy.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        busy.arguments = ["120", "/bin/sh", "-c", "while :; do :; done"]
        try busy.run()
        defer { busy.terminate(); busy.waitUntilExit() }
        usleep(200_000)  // let it get going
        let r = try bench(["--json", "--runs", "6", "--inflight", "0"] + quick, environment: ["YOLO_WEIGHTS": weights])
        XCTAssertEqual(r.status, 0, r.stderr)
        let json = try jsonObject(r.stdout)
        XCTAssertEqual(json["machine_quiet"] as? Bool, false, "\(json)")
        XCTAssertGreaterThan(json["other_cores_max"] as? Double ?? 0, 0.3, "\(json)")
        let warnings = json["warnings"] as? [String] ?? []
        XCTAssertTrue(warnings.contains { $0.contains("other processes used") && $0.contains("not quiet") }, "\(warnings)")
        XCTAssertTrue(r.stderr.contains("warning: the machine was not quiet"), r.stderr)
    }
}
