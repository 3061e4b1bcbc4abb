import Foundation
import XCTest

/// Issue #22's Spark example (examples/spark/yolo_spark.py) run for real: PySpark in local[2]
/// mode (scripts/spark-test-setup.sh installs Java and pyspark; the test skips, saying why, only
/// when Java cannot be installed) over the sample photos copied to many files, through
/// scripts/spark/check.py: the Parquet rows equal `yolo detect --json` on the same files (no
/// image lost or duplicated) for the RDD job, for the RDD job with one task's yolo killed
/// (SIGKILL) half-way through its partition and retried by Spark, and for the mapInPandas variant.
/// 24 files by default (12 a partition, the kill after 6 of them: 25 s on 2 quiet cores with the
/// debug build, most of it Spark's own start and tasks); the 500 with YOLO_SPARK_FILES=500
/// (7 1/2 minutes on 2 cores under a load of 5, before the debug build's model load got 8x faster).
final class SparkTests: XCTestCase {
    func testSparkJobRowsEqualYoloDetect() throws {
        let root = repositoryRoot
        let samples = (try? FileManager.default.contentsOfDirectory(atPath: root + "/samples")) ?? []
        guard FileManager.default.fileExists(atPath: root + "/weights/yolov3-tiny.weights"), !samples.isEmpty else {
            XCTFail("weights/yolov3-tiny.weights or samples/ is missing: run scripts/bootstrap.sh")
            throw XCTSkip("no weights or samples")
        }
        let count = Int(ProcessInfo.processInfo.environment["YOLO_SPARK_FILES"] ?? "") ?? 24
        let setUp = try runProcess(root + "/scripts/spark-test-setup.sh", [], in: root, timeout: 1800)
        if setUp.status == 2 {
            throw XCTSkip("Java could not be installed, so Spark cannot run (scripts/spark-test-setup.sh): \(setUp.stderr)")
        }
        XCTAssertEqual(setUp.status, 0, "scripts/spark-test-setup.sh failed: \(setUp.stderr)")
        let python = try XCTUnwrap(setUp.stdout.split(separator: "\n").last.map(String.init))
        let r = try runProcess(python, [root + "/scripts/spark/check.py", "--yolo", try yoloBinary(), "--weights", root + "/weights",
                                        "--samples", root + "/samples", "--count", "\(count)"],
                               in: root, timeout: Double(600 + 6 * count))
        let last = r.stdout.split(separator: "\n").last.map(String.init) ?? ""
        let report = try XCTUnwrap((try? JSONSerialization.jsonObject(with: Data(last.utf8))) as? [String: Any],
                                   "check.py printed no report: \(r.stdout.suffix(2000)) \(r.stderr.suffix(3000))")
        XCTAssertEqual(report["problems"] as? [String], [], "\(report)")
        XCTAssertEqual(r.status, 0, "\(report)")
        XCTAssertEqual(report["images"] as? Int, count)
        for run in ["rdd", "rdd_killed", "pandas"] {
            let got = try XCTUnwrap(report[run] as? [String: Any], "no \(run) in \(report)")
            XCTAssertEqual(got["images"] as? Int, count, run)
            XCTAssertEqual(got["rows"] as? Int, report["rows"] as? Int, run)
        }
        XCTAssertEqual(report["attempts"] as? Int, 3, "two partitions, one killed and retried: \(report)")
        XCTAssertTrue((report["killed"] as? String)?.contains("status -9") == true, "\(report)")
        XCTAssertGreaterThan(report["detections"] as? Int ?? 0, count / 4, "the photos' detections: \(report)")
        print("SparkTests: \(last)")
    }
}
