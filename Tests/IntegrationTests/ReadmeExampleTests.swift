import Foundation
import XCTest
import YOLO
import YOLOImage

/// The README's concurrency example, as it stands there (run from the repository root), checked
/// against one detector doing the same photos in turn.
final class ReadmeExampleTests: XCTestCase {
    func testTwoDetectorsOnTwoCoresShareOneModel() async throws {
        let root = DarknetImageTests.repoRoot
        let previous = FileManager.default.currentDirectoryPath
        defer { _ = FileManager.default.changeCurrentDirectoryPath(previous) }
        guard FileManager.default.changeCurrentDirectoryPath(root),
              FileManager.default.fileExists(atPath: "weights/yolov3-tiny.weights"),
              FileManager.default.fileExists(atPath: "samples/coffee.png") else {
            XCTFail("weights/ or samples/ missing: run scripts/bootstrap.sh")
            return
        }
        // --- README: "Two detectors on two cores, one model" ---
        let model = try Model(cfgPath: "weights/yolov3-tiny.cfg", weightsPath: "weights/yolov3-tiny.weights")
        let names = try Detector.readClassNames(path: "weights/coco.names")
        let photos = try ["samples/coffee.png", "samples/astronaut.png"].map { try loadImage(path: $0) }
        let results = try await withThrowingTaskGroup(of: [Detection].self) { group in
            for photo in photos {
                group.addTask {   // each task: its own detector (1 thread), the shared model
                    let detector = try Detector(model: model, classNames: names, threads: 1)
                    return try detector.detect(rgb: photo.pixels, width: photo.width, height: photo.height)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        // --- end of the README's code ---
        let one = try Detector(model: model, classNames: names, threads: 1)
        let expected = try photos.map { try one.detect(rgb: $0.pixels, width: $0.width, height: $0.height) }
        XCTAssertEqual(results.count, 2)
        // Tasks finish in any order.
        for r in results { XCTAssertTrue(expected.contains(r), "\(r)") }
        XCTAssertNotEqual(expected[0], expected[1])
        XCTAssertTrue(expected[0].contains { $0.className == "cup" })
    }
}
