import Foundation
import XCTest
import YOLO
import YOLOImage
import YOLOReference

/// End to end on image files: PNG decoding (YOLOImage), letterbox, network and decoding, each
/// checked against the original Darknet's outputs for scikit-image's photos (committed fixtures
/// derived from ../shared/reference/skimage).
final class DarknetImageTests: XCTestCase {
    static let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// One detector for the whole class: loading the network is the slow part.
    nonisolated(unsafe) static var sharedDetector: Detector?

    func detector() throws -> Detector {
        if let d = Self.sharedDetector { return d }
        let root = Self.repoRoot
        let weights = root + "/weights/yolov3-tiny.weights"
        guard FileManager.default.fileExists(atPath: weights) else {
            XCTFail("weights/yolov3-tiny.weights is missing: run weights/fetch.sh")
            throw XCTSkip("no weights")
        }
        let d = try Detector(cfgPath: root + "/weights/yolov3-tiny.cfg", weightsPath: weights,
                             namesPath: root + "/weights/coco.names", threads: 2)
        Self.sharedDetector = d
        return d
    }

    /// The bytes of a fixture of this target.
    func fixture(_ name: String) throws -> [UInt8] {
        let path = Bundle.module.path(forResource: "Fixtures/" + name, ofType: nil)
            ?? (Self.repoRoot + "/Tests/IntegrationTests/Fixtures/" + name)
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Loads samples/<name> as Darknet sees it (no EXIF rotation), failing with a hint if absent.
    func sample(_ name: String) throws -> RGBImage {
        let path = Self.repoRoot + "/samples/" + name
        guard FileManager.default.fileExists(atPath: path) else {
            XCTFail("samples/\(name) is missing: run scripts/fetch-samples.sh (CI fetches the samples before testing)")
            throw XCTSkip("no samples")
        }
        return try loadImage(path: path, applyEXIFOrientation: false)
    }

    /// Letterboxes `image` into the network input and runs the network.
    func run(_ detector: Detector, _ image: RGBImage) throws {
        try image.pixels.withUnsafeBytes {
            try detector.preprocess(pixels: $0, width: image.width, height: image.height, format: .rgb)
        }
        detector.session.forward()
    }

    func testLetterboxAndHeadsMatchDarknet() throws {
        let detector = try detector()
        // Under qemu, one photo (the arm64 detect step compares every sample with x86's).
        let emulated = ProcessInfo.processInfo.environment["YOLO_TEST_EMULATED"] != nil
        for name in emulated ? ["chelsea"] : ["astronaut", "chelsea", "coffee"] {
            let image = try sample(name + ".png")
            try run(detector, image)
            let input = try SampledTensor(parsing: fixture("\(name)_input_416.samples"))
            XCTAssertEqual(input.count, detector.session.input.count)
            let (inputMax, inputSums) = input.compare(UnsafeBufferPointer(detector.session.input))
            XCTAssertLessThanOrEqual(inputMax, 1e-6, "\(name): letterboxed input vs Darknet's")
            XCTAssertLessThanOrEqual(inputSums, 1e-6, "\(name): per-channel input sums vs Darknet's (per pixel)")
            for (head, layer) in zip(detector.session.heads, [15, 22]) {
                let ref = try SampledTensor(parsing: fixture("\(name)_conv\(layer).samples"))
                XCTAssertEqual(ref.count, head.raw.count)
                let (maxAbs, sums) = ref.compare(head.raw)
                print("\(name): input max |diff| \(inputMax); conv\(layer) max |diff| \(maxAbs), channel sums \(sums) per cell")
                XCTAssertLessThanOrEqual(maxAbs, 1e-3, "\(name) conv\(layer)")
                XCTAssertLessThanOrEqual(sums, 1e-3, "\(name) conv\(layer) channel sums")
            }
        }
    }

    func testDetectionsMatchDarknet() throws {
        let detector = try detector()
        let reference = try parseReferenceDetections(fixture("skimage_detections.txt"))
        XCTAssertGreaterThanOrEqual(reference.count, 7)
        for entry in reference {
            let name = entry.image
            let image = try sample(name)
            XCTAssertEqual(image.width, entry.width, name)
            XCTAssertEqual(image.height, entry.height, name)
            try run(detector, image)
            for (t, rows) in entry.thresholds {
                detector.options.threshold = t
                let dets = try detector.decodeHeads(imageWidth: image.width, imageHeight: image.height)
                let result = compare(dets.map(ReferenceDetection.init), rows)
                XCTAssertTrue(result.passed(tolerance: 1e-4), "\(name) at \(t): \(result)")
            }
            // The one-call API gives the same as the steps above.
            detector.options.threshold = 0.25
            let direct = try detector.detect(rgb: image.pixels, width: image.width, height: image.height)
            XCTAssertEqual(direct.map(\.classIndex), entry.thresholds.first { $0.threshold == 0.25 }?.detections.map(\.classIndex), name)
        }
        detector.options = DetectorOptions()
    }
}

extension ReferenceDetection {
    /// The engine's detection in the fixtures' terms.
    init(_ d: Detection) {
        self.init(boxIndex: d.boxIndex, classIndex: d.classIndex, prob: d.confidence, objectness: d.objectness,
                  box: [d.x, d.y, d.width, d.height])
    }
}
