import Foundation
import XCTest
import YOLO
import YOLOImage

/// Real photos from scripts/fetch-samples.sh (gitignored); skipped when absent. The committed
/// fixtures carry the real coverage.
final class SampleTests: XCTestCase {
    private func samplePath(_ name: String) throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let path = root.appendingPathComponent("samples/\(name)").path
        guard FileManager.default.fileExists(atPath: path) else {
            throw XCTSkip("\(name) missing; run scripts/fetch-samples.sh")
        }
        return path
    }

    func testSamplePhotosLoad() throws {
        let expected: [(String, Int, Int)] = [
            ("astronaut.png", 512, 512), ("camera.png", 512, 512), ("horse.png", 400, 328),
            ("logo.png", 500, 500), ("hubble_deep_field.jpg", 1000, 872), ("rocket.jpg", 640, 427),
        ]
        for (name, width, height) in expected {
            let image = try loadImage(path: try samplePath(name))
            XCTAssertEqual(image.width, width, name)
            XCTAssertEqual(image.height, height, name)
            XCTAssertGreaterThan(Set(image.pixels).count, 16, name)
        }
    }

    func testDrawOnAstronautAndRoundTrip() throws {
        var image = try loadImage(path: try samplePath("astronaut.png"))
        let original = image
        let person = Detection(classIndex: 0, className: "person", confidence: 0.93, objectness: 0.95,
                               x: 0.5, y: 0.55, width: 0.7, height: 0.85, imageWidth: 512, imageHeight: 512, boxIndex: 0)
        drawDetections([person], on: &image)
        XCTAssertNotEqual(image, original)
        let path = try temporaryDirectory(self).appendingPathComponent("astronaut.png").path
        try writePNG(image, to: path)
        XCTAssertEqual(try loadImage(path: path), image)
    }
}
