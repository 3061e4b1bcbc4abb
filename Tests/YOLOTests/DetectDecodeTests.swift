// Decoding [yolo] heads into boxes (thresholds, order, letterbox correction) and NMS, on hand-built
// heads; the Detector end to end is in DetectorTests.swift (an extension of this suite).
import Foundation
import XCTest
@testable import YOLOEngine
@testable import YOLODetection
@testable import YOLOCore
import YOLOReference

/// A hand-built [yolo] head: set the activated entries of chosen cells, the rest stay 0.
fileprivate final class TestHead {
    let gridWidth: Int, gridHeight: Int, classes: Int
    let anchors: [(width: Float, height: Float)]
    let storage: UnsafeMutableBufferPointer<Float>

    init(gridWidth: Int, gridHeight: Int, classes: Int, anchors: [(width: Float, height: Float)]) {
        self.gridWidth = gridWidth; self.gridHeight = gridHeight; self.classes = classes; self.anchors = anchors
        storage = .allocate(capacity: anchors.count * (classes + 5) * gridWidth * gridHeight)
        storage.initialize(repeating: 0)
    }
    deinit { storage.deallocate() }

    /// x, y, objectness and class scores as the [yolo] layer outputs them (after the logistic).
    func set(row: Int, col: Int, anchor: Int, x: Float, y: Float, tw: Float = 0, th: Float = 0,
             objectness: Float, scores: [Float]) {
        let plane = gridWidth * gridHeight
        let base = anchor * (classes + 5) * plane + row * gridWidth + col
        let values = [x, y, tw, th, objectness] + scores + [Float](repeating: 0, count: classes - scores.count)
        // The decoder reads the raw head and applies Darknet's logistic itself: store the raw
        // value whose logistic is exactly the wanted activation (tw, th stay raw).
        for (e, v) in values.enumerated() { storage[base + e * plane] = e == 2 || e == 3 ? v : Self.logit(v) }
    }

    static func logistic(_ r: Float) -> Float { Float(1.0 / (1.0 + exp(-Double(r)))) }

    /// A raw value r with logistic(r) == p (the nearest one when no float maps exactly).
    static func logit(_ p: Float) -> Float {
        if p <= 0 { return -.infinity }
        if p >= 1 { return .infinity }
        var r = Float(log(Double(p) / (1 - Double(p))))
        var best = r
        for _ in 0..<256 {
            let v = logistic(r)
            if v == p { return r }
            if abs(v - p) < abs(logistic(best) - p) { best = r }
            r = v < p ? r.nextUp : r.nextDown
        }
        return best
    }

    var view: HeadView {
        HeadView(info: HeadInfo(layerIndex: 1, inputLayer: 0, gridWidth: gridWidth, gridHeight: gridHeight, classes: classes,
                                anchors: anchors, mask: Array(0..<anchors.count)),
                 raw: UnsafeBufferPointer(storage), activated: UnsafeBufferPointer(storage))
    }
}

/// Runs the detector's postprocessing on hand-built heads.
fileprivate func postprocess(_ heads: [TestHead], net: Int = 100, image: (Int, Int) = (100, 100),
                 options: DetectorOptions = DetectorOptions()) throws -> [Detection] {
    var p = Postprocessor()
    return try p.run(heads: heads.map(\.view), netWidth: net, netHeight: net, imageWidth: image.0, imageHeight: image.1,
                 options: options, classCount: heads[0].classes, names: [])
}

/// A tiny network: a 1x1 conv (no BN, linear) straight into a [yolo] head of 1 anchor and
/// 2 classes, so every cell gets the conv's biases as its raw values.
/// (Shared with DetectorTests.swift.)
func tinyModel(width: Int, height: Int, biases: [Float] = [0, 0, 0, 0, 5, 5, -5]) throws -> Model {
    let cfg = """
    [net]
    width=\(width)
    height=\(height)
    channels=3

    [convolutional]
    filters=7
    size=1
    stride=1
    pad=1
    activation=linear

    [yolo]
    mask=0
    anchors=4,4
    classes=2
    num=1
    """
    return try Model(cfgText: cfg, weights: weightsFile(biases + [Float](repeating: 0, count: 21)))
}

/// Deterministic random bytes.
func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var r = SeededRandom(seed: seed)
    return r.bytes(count)
}

final class DetectDecodeTests: XCTestCase {
    // MARK: Decoding

    func testDecodesAKnownBox() throws {
        let head = TestHead(gridWidth: 2, gridHeight: 2, classes: 2, anchors: [(10, 20)])
        head.set(row: 1, col: 0, anchor: 0, x: 0.5, y: 0.25, tw: 0, th: Float(log(2.0)), objectness: 0.8, scores: [0.5, 0.9])
        let dets = try postprocess([head])
        XCTAssertEqual(dets.count, 2)
        XCTAssertEqual(dets.map(\.classIndex), [0, 1])
        XCTAssertEqual(dets.map(\.boxIndex), [0, 0])
        XCTAssertEqual(dets[0].className, "class 0")
        let d = dets[1]
        XCTAssertEqual(d.x, 0.25)
        XCTAssertEqual(d.y, 0.625)
        XCTAssertEqual(d.width, 0.1, accuracy: 1e-7)
        XCTAssertEqual(d.height, Float(exp(Double(Float(log(2.0)))) * 20 / 100))
        XCTAssertEqual(d.confidence, 0.8 * 0.9)
        XCTAssertEqual(d.objectness, 0.8)
        XCTAssertEqual(dets[0].confidence, 0.4)
        XCTAssertEqual(d.left, (0.25 - 0.05) * 100, accuracy: 1e-4)
        XCTAssertEqual(d.bottom, (0.625 + d.height / 2) * 100, accuracy: 1e-4)
    }

    func testThresholdsAreStrict() throws {
        // objectness == threshold: no box.
        let a = TestHead(gridWidth: 1, gridHeight: 1, classes: 2, anchors: [(10, 10)])
        a.set(row: 0, col: 0, anchor: 0, x: 0.5, y: 0.5, objectness: 0.375, scores: [1, 1])
        XCTAssertTrue(try postprocess([a], options: DetectorOptions(threshold: 0.375)).isEmpty)
        // objectness * class == threshold (0.75 * 0.5, exact): that class is not reported.
        let b = TestHead(gridWidth: 1, gridHeight: 1, classes: 2, anchors: [(10, 10)])
        b.set(row: 0, col: 0, anchor: 0, x: 0.5, y: 0.5, objectness: 0.75, scores: [0.5, Float(0.5).nextUp])
        let dets = try postprocess([b], options: DetectorOptions(threshold: 0.375))
        XCTAssertEqual(dets.map(\.classIndex), [1])
        XCTAssertEqual(dets[0].confidence, 0.75 * Float(0.5).nextUp)
    }

    func testDecodeOrderIsHeadsThenCellsThenAnchors() throws {
        // Far-apart boxes with equal probabilities keep their decode order through NMS.
        let h1 = TestHead(gridWidth: 3, gridHeight: 3, classes: 1, anchors: [(5, 5), (6, 6)])
        let h2 = TestHead(gridWidth: 3, gridHeight: 3, classes: 1, anchors: [(5, 5)])
        h1.set(row: 2, col: 0, anchor: 0, x: 0.5, y: 0.5, objectness: 0.5, scores: [1])
        h1.set(row: 0, col: 2, anchor: 1, x: 0.5, y: 0.5, objectness: 0.5, scores: [1])
        h1.set(row: 0, col: 2, anchor: 0, x: 0.1, y: 0.1, objectness: 0.5, scores: [1])
        h2.set(row: 0, col: 0, anchor: 0, x: 0.5, y: 0.5, objectness: 0.5, scores: [1])
        let dets = try postprocess([h1, h2])
        XCTAssertEqual(dets.count, 4)
        XCTAssertEqual(dets.map(\.boxIndex), [0, 1, 2, 3])
        // Cell (0,2) anchor 0, cell (0,2) anchor 1, cell (2,0), then the second head.
        let two: Float = 2, zero: Float = 0
        let xs: [Float] = [(two + 0.1) / 3, (two + 0.5) / 3, (zero + 0.5) / 3, (zero + 0.5) / 3]
        XCTAssertEqual(dets.map(\.x), xs)
        XCTAssertEqual(dets.map(\.width), [0.05, 0.06, 0.05, 0.05])
    }

    func testLetterboxCorrectionAndStretch() throws {
        let head = TestHead(gridWidth: 1, gridHeight: 1, classes: 1, anchors: [(20, 10)])
        head.set(row: 0, col: 0, anchor: 0, x: 0.5, y: 0.5, objectness: 0.9, scores: [1])
        // 200x100 in 100x100: resized to 100x50 at row offset 25.
        let d = try postprocess([head], image: (200, 100))[0]
        XCTAssertEqual(d.x, 0.5)
        XCTAssertEqual(d.y, Float((0.5 - 25.0 / 100) / 0.5))
        XCTAssertEqual(d.width, 0.2)
        XCTAssertEqual(d.height, 0.1 * 2)
        XCTAssertEqual(d.top, (0.5 - 0.1) * 100, accuracy: 1e-4)
        XCTAssertEqual(d.left, (0.5 - 0.1) * 200, accuracy: 1e-4)
        // Odd padding: 100x33 -> (100, 33), offset (100-33)/2 = 33 rows; the offset is the
        // integer difference halved in double, as Darknet's correct_yolo_boxes.
        let e = try postprocess([head], image: (300, 99))[0]
        XCTAssertEqual(e.y, Float((0.5 - Double(100 - 33) / 2 / 100) / Double(Float(33) / 100)))
        XCTAssertEqual(e.height, 0.1 * (Float(100) / 33))
        // Stretch: no correction.
        let s = try postprocess([head], image: (200, 100), options: DetectorOptions(resize: .stretch))[0]
        XCTAssertEqual([s.x, s.y, s.width, s.height], [0.5, 0.5, 0.2, 0.1])
        XCTAssertEqual(s.right, 0.6 * 200, accuracy: 1e-4)
    }

    // MARK: NMS

    /// Two heavily overlapping boxes in neighbouring cells (IoU 0.5) and one far away.
    fileprivate func overlapping(scoresA: [Float], scoresB: [Float], objectnessA: Float = 0.9, objectnessB: Float = 0.8) -> TestHead {
        let head = TestHead(gridWidth: 10, gridHeight: 10, classes: 2, anchors: [(30, 30)])
        head.set(row: 5, col: 5, anchor: 0, x: 0.5, y: 0.5, objectness: objectnessA, scores: scoresA)
        head.set(row: 5, col: 6, anchor: 0, x: 0.5, y: 0.5, objectness: objectnessB, scores: scoresB)
        return head
    }

    func testPerClassNMSSuppressesWithinAClassOnly() throws {
        // Same class: the lower one goes.
        var dets = try postprocess([overlapping(scoresA: [1, 0], scoresB: [1, 0])])
        XCTAssertEqual(dets.count, 1)
        XCTAssertEqual(dets[0].objectness, 0.9)
        // Different classes: both stay.
        dets = try postprocess([overlapping(scoresA: [1, 0], scoresB: [0, 1])])
        XCTAssertEqual(dets.map(\.classIndex).sorted(), [0, 1])
        // One box with both classes, the other with class 1 only, better: box A keeps class 0
        // and loses class 1 to box B.
        dets = try postprocess([overlapping(scoresA: [0.9, 0.5], scoresB: [0, 1], objectnessA: 0.9, objectnessB: 0.95)])
        XCTAssertEqual(dets.map(\.classIndex), [1, 0])
        XCTAssertEqual(dets.map(\.objectness), [0.95, 0.9])
        // With a higher NMS threshold nothing is suppressed.
        dets = try postprocess([overlapping(scoresA: [1, 0], scoresB: [1, 0])], options: DetectorOptions(nmsThreshold: 0.7))
        XCTAssertEqual(dets.count, 2)
    }

    func testClassAgnosticNMS() throws {
        var o = DetectorOptions()
        o.classAgnostic = true
        let dets = try postprocess([overlapping(scoresA: [1, 0], scoresB: [0, 1], objectnessA: 0.7, objectnessB: 0.9)], options: o)
        XCTAssertEqual(dets.count, 1)
        XCTAssertEqual(dets[0].classIndex, 1)
        XCTAssertEqual(dets[0].boxIndex, 0)
        // Boxes that do not overlap survive.
        let far = TestHead(gridWidth: 10, gridHeight: 10, classes: 2, anchors: [(10, 10)])
        far.set(row: 1, col: 1, anchor: 0, x: 0.5, y: 0.5, objectness: 0.9, scores: [1, 0])
        far.set(row: 8, col: 8, anchor: 0, x: 0.5, y: 0.5, objectness: 0.8, scores: [0, 1])
        XCTAssertEqual(try postprocess([far], options: o).count, 2)
    }

    func testMaxDetectionsKeepsTheMostConfidentInOrder() throws {
        let head = TestHead(gridWidth: 10, gridHeight: 10, classes: 2, anchors: [(5, 5)])
        head.set(row: 1, col: 1, anchor: 0, x: 0.5, y: 0.5, objectness: 0.9, scores: [0.5, 0.9])   // 0.45, 0.81
        head.set(row: 5, col: 5, anchor: 0, x: 0.5, y: 0.5, objectness: 0.6, scores: [1, 0])       // 0.6
        head.set(row: 8, col: 8, anchor: 0, x: 0.5, y: 0.5, objectness: 0.7, scores: [1, 0])       // 0.7
        let all = try postprocess([head])
        XCTAssertEqual(all.count, 4)
        var o = DetectorOptions()
        o.maxDetections = 2
        let top = try postprocess([head], options: o)
        // [Float]: Swift 6.2.3 infers the literal as [Double] (and rejects the key path); 6.3 infers [Float].
        XCTAssertEqual(top.map(\.confidence).sorted(by: >), [0.9 * 0.9, 0.7] as [Float])
        // Kept in Darknet's order: the same relative order as in the full list.
        XCTAssertEqual(top, all.filter { top.contains($0) })
        o.maxDetections = 0
        XCTAssertTrue(try postprocess([head], options: o).isEmpty)
    }

    /// The cap stops NMS early (a class that has kept enough boxes clears the less confident
    /// rest unexamined): the detections must be exactly those of NMS run to the end and then cut
    /// to the most confident, ties included (scores on a coarse grid tie often), per class and
    /// class-agnostic, with and without a class filter.
    func testMaxDetectionsStopsNMSEarlyWithTheSameResult() throws {
        var r = SeededRandom(seed: 11)
        func level(_ n: UInt64) -> Float { Float(r.next() % n + 1) / Float(n) }
        let head = TestHead(gridWidth: 8, gridHeight: 8, classes: 3, anchors: [(20, 20), (35, 25)])
        for row in 0..<8 {
            for col in 0..<8 {
                for anchor in 0..<2 {
                    head.set(row: row, col: col, anchor: anchor, x: level(4) - 0.1, y: level(4) - 0.1,
                             objectness: level(8), scores: [level(4), level(4), level(5)])
                }
            }
        }
        // Two far-apart boxes tied in class 0 (0.72), A first in class 0's order, B first in the
        // reporting order (class 1's: 0.45 > 0.09): the one detection to report is B's.
        let tie = TestHead(gridWidth: 10, gridHeight: 10, classes: 3, anchors: [(5, 5)])
        tie.set(row: 1, col: 1, anchor: 0, x: 0.5, y: 0.5, objectness: 0.9, scores: [0.8, 0.1])
        tie.set(row: 8, col: 8, anchor: 0, x: 0.5, y: 0.5, objectness: 0.9, scores: [0.8, 0.5])
        for (name, h) in [("random", head), ("tie", tie)] {
            for agnostic in [false, true] {
                for filter in [nil, Set([0, 2])] as [Set<Int>?] {
                    var o = DetectorOptions(threshold: 0.05, classAgnostic: agnostic, classFilter: filter)
                    let all = try postprocess([h], options: o)
                    if name == "random" { XCTAssertGreaterThan(all.count, 40) }
                    for m in [0, 1, 2, 5, 17, 40, all.count, all.count + 3] {
                        o.maxDetections = m
                        let ranked = all.indices.sorted { all[$0].confidence != all[$1].confidence ? all[$0].confidence > all[$1].confidence : $0 < $1 }
                        let keep = Set(ranked.prefix(m))
                        let expected = all.indices.filter(keep.contains).map { all[$0] }
                        XCTAssertEqual(try postprocess([h], options: o), expected, "\(name), agnostic \(agnostic), filter \(String(describing: filter)), max \(m)")
                    }
                }
            }
        }
    }

    func testClassFilter() throws {
        var o = DetectorOptions()
        o.classFilter = [1]
        let dets = try postprocess([overlapping(scoresA: [1, 0], scoresB: [0, 1])], options: o)
        XCTAssertEqual(dets.map(\.classIndex), [1])
        // Filtered-out classes do not suppress in agnostic mode either.
        o.classAgnostic = true
        XCTAssertEqual(try postprocess([overlapping(scoresA: [1, 0], scoresB: [0, 1])], options: o).map(\.classIndex), [1])
    }

    func testStableSortMatchesANaiveStableSort() {
        var r = SeededRandom(seed: 7)
        for n in [0, 1, 2, 15, 16, 17, 33, 100, 257, 1000] {
            let keys = (0..<n).map { _ in Float(r.next() % 5) / 4 }   // many ties
            var order = Array(0..<n), scratch: [Int] = []
            stableSortDescending(&order, scratch: &scratch) { keys[$0] }
            let expected = (0..<n).sorted { keys[$0] != keys[$1] ? keys[$0] > keys[$1] : $0 < $1 }
            XCTAssertEqual(order, expected, "n = \(n)")
        }
    }

    func testEmptyBoxesAreSwappedLastAsDarknetDoes() {
        var boxes = CandidateBoxes()
        boxes.reset(classes: 1)
        for o: Float in [0, 0.5, 0, 0.7, 0] { boxes.appendBox(x: 0, y: 0, w: 1, h: 1, objectness: o); boxes.probs.append(o) }
        var order: [Int] = []
        XCTAssertEqual(moveEmptyBoxesLast(boxes, order: &order), 2)
        // i=0 empty: swap with 4 (empty again), then with 3 -> [3,1,2,4,0]; i=2 empty: swap with itself.
        XCTAssertEqual(order, [3, 1, 2, 4, 0])
    }

    func testIoU() {
        let a = (x: Float(0.5), y: Float(0.5), w: Float(0.2), h: Float(0.2))
        XCTAssertEqual(darknetIoU(a, a), 1, accuracy: 1e-6)
        XCTAssertEqual(darknetIoU(a, (x: 0.6, y: 0.5, w: 0.2, h: 0.2)), 1.0 / 3, accuracy: 1e-6)
        XCTAssertEqual(darknetIoU(a, (x: 0.9, y: 0.5, w: 0.2, h: 0.2)), 0)
    }

    // MARK: Preprocessing
}

/// A 3-class network of three 3x3 convolutions of 64 filters (leaky) and a 1x1 conv into a
/// [yolo] head of 3 anchors on a 32x32 input, and its count of weights (no batch norm).
func overflowingNetwork() -> (cfg: String, weights: Int) {
    let conv = "[convolutional]\nfilters=64\nsize=3\nstride=1\npad=1\nactivation=leaky\n\n"
    let cfg = "[net]\nwidth=32\nheight=32\nchannels=3\n\n" + String(repeating: conv, count: 3)
        + "[convolutional]\nfilters=24\nsize=1\nstride=1\npad=1\nactivation=linear\n\n"
        + "[yolo]\nmask=0,1,2\nanchors=10,14,23,27,37,58\nclasses=3\nnum=3\n"
    return (cfg, 64 + 64 * 27 + 2 * (64 + 64 * 576) + 24 + 24 * 64)
}
