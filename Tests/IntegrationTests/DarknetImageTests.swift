import Foundation
import XCTest
import YOLO
import YOLOImage

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

    func fixture(_ name: String) -> String {
        Bundle.module.path(forResource: "Fixtures/" + name, ofType: nil)
            ?? (Self.repoRoot + "/Tests/IntegrationTests/Fixtures/" + name)
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
        for name in ["astronaut", "chelsea", "coffee"] {
            let image = try sample(name + ".png")
            try run(detector, image)
            let input = try SampledTensor(path: fixture("\(name)_input_416.samples"))
            XCTAssertEqual(input.count, detector.session.input.count)
            let (inputMax, inputSums) = input.compare(UnsafeBufferPointer(detector.session.input))
            XCTAssertLessThanOrEqual(inputMax, 1e-6, "\(name): letterboxed input vs Darknet's")
            XCTAssertLessThanOrEqual(inputSums, 1e-6, "\(name): per-channel input sums vs Darknet's (per pixel)")
            for (head, layer) in zip(detector.session.heads, [15, 22]) {
                let ref = try SampledTensor(path: fixture("\(name)_conv\(layer).samples"))
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
        let reference = try readDetections(fixture("skimage_detections.txt"))
        XCTAssertGreaterThanOrEqual(reference.count, 7)
        for (name, entry) in reference.sorted(by: { $0.key < $1.key }) {
            let image = try sample(name)
            XCTAssertEqual(image.width, entry.width, name)
            XCTAssertEqual(image.height, entry.height, name)
            try run(detector, image)
            for (t, rows) in entry.rows.sorted(by: { $0.key > $1.key }) {
                detector.options.threshold = t
                let dets = try detector.decodeHeads(imageWidth: image.width, imageHeight: image.height)
                XCTAssertEqual(dets.count, rows.count, "\(name) at \(t)")
                var maxProb: Float = 0, maxRel: Float = 0
                for (d, r) in zip(dets, rows) {
                    XCTAssertEqual(d.classIndex, r.classIndex, "\(name) at \(t)")
                    XCTAssertEqual(d.boxIndex, r.boxIndex, "\(name) at \(t)")
                    maxProb = max(maxProb, abs(d.confidence - r.prob), abs(d.objectness - r.objectness))
                    maxRel = max(maxRel, zip([d.x, d.y, d.width, d.height], r.rel).map { abs($0 - $1) }.max()!)
                }
                XCTAssertLessThanOrEqual(maxProb, 1e-4, "\(name) at \(t)")
                XCTAssertLessThanOrEqual(maxRel, 1e-4, "\(name) at \(t)")
            }
            // The one-call API gives the same as the steps above.
            detector.options.threshold = 0.25
            let direct = try detector.detect(rgb: image.pixels, width: image.width, height: image.height)
            XCTAssertEqual(direct.map(\.classIndex), entry.rows[0.25]?.map(\.classIndex), name)
        }
        detector.options = DetectorOptions()
    }
}

/// A `.samples` fixture (scripts/make-fixtures.py): '# shape C H W', then 'index value' lines at
/// sampled positions, then 'sum c value' lines with each channel's float64 sum.
struct SampledTensor {
    var shape: (c: Int, h: Int, w: Int) = (0, 0, 0)
    var samples: [(index: Int, value: Float)] = []
    var sums: [Double] = []
    var count: Int { shape.c * shape.h * shape.w }

    init(path: String) throws {
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            let p = line.split(separator: " ")
            if p[0] == "#" { shape = (Int(p[2])!, Int(p[3])!, Int(p[4])!) }
            else if p[0] == "sum" { sums.append(Double(p[2])!) }
            else { samples.append((Int(p[0])!, Float(p[1])!)) }
        }
    }

    /// Max |difference| over the samples, and max |channel sum difference| divided by the plane size.
    func compare(_ values: UnsafeBufferPointer<Float>) -> (maxAbs: Float, sums: Double) {
        let maxAbs = samples.map { abs(values[$0.index] - $0.value) }.max() ?? 0
        let plane = shape.h * shape.w
        var worst = 0.0
        for c in 0..<shape.c {
            var s = 0.0
            for i in 0..<plane { s += Double(values[c * plane + i]) }
            worst = max(worst, abs(s - sums[c]) / Double(plane))
        }
        return (maxAbs, worst)
    }
}

/// Darknet's detections for one image from `skimage_detections.txt`.
struct ReferenceImage {
    var width = 0, height = 0
    var rows: [Float: [(boxIndex: Int, classIndex: Int, prob: Float, objectness: Float, rel: [Float])]] = [:]
}

func readDetections(_ path: String) throws -> [String: ReferenceImage] {
    var out: [String: ReferenceImage] = [:]
    for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") where !line.hasPrefix("#") {
        let p = line.split(separator: " ").map(String.init)
        let t = Float(p[3])!
        out[p[0], default: ReferenceImage()].width = Int(p[1])!
        out[p[0]]!.height = Int(p[2])!
        out[p[0]]!.rows[t, default: []] += p[4] == "none" ? [] : [(Int(p[4])!, Int(p[5])!, Float(p[6])!, Float(p[7])!,
                                                                    p[8...11].map { Float($0)! })]
    }
    return out
}
