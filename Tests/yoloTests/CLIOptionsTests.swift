import Foundation
import XCTest

/// `--classes`, `--max-det`, `--size` and the YOLO_WEIGHTS directory.
extension CLITests {
    func testClassFilterMaxDetectionsSizeAndWeightsDirectory() throws {
        let images = try ["astronaut.png", "coffee.png", "chelsea.png", "motorcycle_left.png"].map { try sample($0) }
        // No --cfg/--weights/--names, from another directory: the defaults come from $YOLO_WEIGHTS.
        let env = ["YOLO_WEIGHTS": Self.repoRoot + "/weights"]
        let all = try yolo(["detect", "--json", "--no-draw", "--thresh", "0.1"] + images, environment: env)
        XCTAssertEqual(all.status, 0, all.stderr)
        let counts = try jsonLines(all.stdout).map { ($0["detections"] as? [[String: Any]] ?? []) }
        let classes = Set(counts.flatMap { $0.compactMap { $0["class"] as? String } })
        XCTAssertTrue(classes.count >= 3, "\(classes)")
        XCTAssertTrue(classes.contains("cup") && classes.contains("motorbike"), "\(classes)")

        let filtered = try yolo(["detect", "--json", "--no-draw", "--thresh", "0.1", "--classes", "motorbike,cup"] + images, environment: env)
        XCTAssertEqual(filtered.status, 0, filtered.stderr)
        let kept = try jsonLines(filtered.stdout).flatMap { ($0["detections"] as? [[String: Any]] ?? []).compactMap { $0["class"] as? String } }
        XCTAssertFalse(kept.isEmpty)
        XCTAssertEqual(Set(kept), Set(["motorbike", "cup"]))
        XCTAssertEqual(kept.count, counts.flatMap { $0 }.filter { ["motorbike", "cup"].contains($0["class"] as? String) }.count)

        let one = try yolo(["detect", "--json", "--no-draw", "--thresh", "0.1", "--max-det", "1"] + images, environment: env)
        XCTAssertEqual(one.status, 0, one.stderr)
        XCTAssertTrue(try jsonLines(one.stdout).allSatisfy { ($0["detections"] as? [Any])?.count ?? 0 <= 1 })

        let wide = try yolo(["detect", "--json", "--no-draw", "--size", "608x352", images[1]], environment: env)
        XCTAssertEqual(wide.status, 0, wide.stderr)
        XCTAssertTrue(wide.stdout.contains("\"cup\""), wide.stdout)

        for (args, message) in [(["--classes", "unicorn"], "'unicorn' is not a class name"),
                                (["--size", "400x416"], "multiples of 32"), (["--size", "big"], "expected WIDTHxHEIGHT"),
                                (["--max-det", "-2"], "--max-det -2"),
                                (["--stretch", "--letterbox"], "--stretch and --letterbox exclude each other"),
                                (["--cores", "4096"], "--cores 4096: CPU 4096 is not one this process may run on")] {
            let r = try yolo(["detect", "--no-draw", images[1]] + args, environment: env)
            XCTAssertEqual(r.status, 64, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(message), "\(args): \(r.stderr)")
        }
        // Without YOLO_WEIGHTS and without weights/ here, the error names the default path.
        let missing = try yolo(["detect", "--no-draw", images[1]])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains("weights/yolov3-tiny"), missing.stderr)
    }
}
