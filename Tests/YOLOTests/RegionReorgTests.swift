// YOLOv2's [reorg] and [region] against the naive references (YOLOReference/Region.swift), the
// [region] decode on a hand-built head, [net] letter_box, and every cfg of ../shared/cfg loading.
import Foundation
import XCTest
@testable import YOLOEngine
@testable import YOLODetection
@testable import YOLOCore
import YOLOReference

final class RegionReorgTests: XCTestCase {
    func net(_ s: Shape, _ body: String, netKeys: String = "") throws -> Network {
        let cfg = "[net]\nwidth=\(s.w)\nheight=\(s.h)\nchannels=\(s.c)\n\(netKeys)\n" + body
        return try Network(cfgText: cfg, weights: weightsFile([]), threads: 2)
    }

    func assertClose(_ a: UnsafeBufferPointer<Float>, _ b: [Float], tolerance: Float, _ what: String,
                     file: StaticString = #filePath, line: UInt = #line) {
        let result = compare(a, b, tolerance: tolerance)
        XCTAssertTrue(result.passed, "\(what): \(result)", file: file, line: line)
    }

    func testReorgMatchesNaive() throws {
        var rng = SeededRandom(seed: 51)
        for (s, stride) in [(Shape(c: 4, h: 4, w: 6), 2), (Shape(c: 9, h: 6, w: 9), 3), (Shape(c: 64, h: 26, w: 26), 2), (Shape(c: 8, h: 2, w: 2), 2)] {
            let input = rng.floats(s.count)
            // As the first layer (reading the network input) and after a pass-through max pool.
            let out = Shape(c: s.c * stride * stride, h: s.h / stride, w: s.w / stride)
            let ref = Naive.reorg(Naive.Tensor(s, input), stride: stride)
            for (body, layer) in [("[reorg]\nstride=\(stride)\n", 0), ("[maxpool]\nsize=1\nstride=1\n\n[reorg]\nstride=\(stride)\n", 1)] {
                let n = try net(s, body)
                try n.forward(input)
                XCTAssertEqual(n.layers[layer].output, out)
                XCTAssertEqual(n.layers[layer].kind, .reorg)
                assertClose(n.output(ofLayer: layer), ref.values, tolerance: 0, "reorg \(s) stride \(stride), layer \(layer)")
            }
        }
        // Darknet's order, by hand (what OpenCV DNN's reorg gives for this input too).
        let n = try net(Shape(c: 4, h: 2, w: 2), "[reorg]\nstride=2\n")
        try n.forward((0..<16).map(Float.init))
        XCTAssertEqual(Array(n.output(ofLayer: 0)), [0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15])
    }

    func testReorgRefusals() {
        XCTAssertThrowsError(try net(Shape(c: 4, h: 6, w: 5), "[reorg]\nstride=2\n")) { e in
            XCTAssertTrue("\(e)".contains("[reorg] stride=2 does not divide its input 4x6x5"), "\(e)")
        }
        XCTAssertThrowsError(try net(Shape(c: 6, h: 4, w: 4), "[reorg]\nstride=2\n")) { e in
            XCTAssertTrue("\(e)".contains("stride=2 needs input channels divisible by stride*stride=4, but its input is 6x4x4"), "\(e)")
        }
        XCTAssertThrowsError(try net(Shape(c: 4, h: 4, w: 4), "[reorg]\nstride=2\nreverse=1\n")) { e in
            XCTAssertTrue("\(e)".contains("reverse=1 is not supported"), "\(e)")
        }
        XCTAssertThrowsError(try net(Shape(c: 1, h: 4, w: 4), "[reorg]\nstride=0\n")) { e in
            XCTAssertTrue("\(e)".contains("stride=0 must be at least 1"), "\(e)")
        }
    }

    static let region = "[region]\nanchors=0.5,1.5, 2,3\nclasses=3\ncoords=4\nnum=2\nsoftmax=1\n"
        + "bias_match=1\njitter=.2\nrescore=1\nobject_scale=5\nnoobject_scale=1\nclass_scale=1\ncoord_scale=1\nabsolute=1\nthresh=.6\nrandom=1\n"

    /// The [region] layer's activation (for inspection) and every box the decoder keeps, against
    /// the naive reference, on random raw values.
    func testRegionMatchesNaive() throws {
        var rng = SeededRandom(seed: 52)
        for softmax in [true, false] {
            let s = Shape(c: 2 * 8, h: 5, w: 4)
            let body = "[maxpool]\nsize=1\nstride=1\n\n" + Self.region.replacingOccurrences(of: "softmax=1", with: "softmax=\(softmax ? 1 : 0)")
            let n = try net(s, body)
            let raw = rng.floats(s.count, -4, 4)
            try n.forward(raw)
            let head = n.heads[0]
            XCTAssertTrue(head.info.region)
            XCTAssertEqual(head.info.softmax, softmax)
            XCTAssertEqual(head.anchors.map(\.width), [0.5, 2])
            let ref = Naive.regionBoxes(Naive.Tensor(s, raw), classes: 3, anchors: head.anchors, softmax: softmax, libm: libm)
            // The activation: logistic x, y, objectness; softmax (or raw) classes; tw, th raw.
            var activated = raw
            for b in ref {
                let i = b.row * s.w + b.col, base = b.anchor * 8 * 20 + i
                activated[base] = Float(b.x * 4 - Double(b.col))
                activated[base + 20] = Float(b.y * 5 - Double(b.row))
                activated[base + 80] = Float(b.objectness)
                for k in 0..<3 { activated[base + (5 + k) * 20] = Float(b.probs[k] / b.objectness) }
            }
            assertClose(head.activated, activated, tolerance: 1e-5, "region activation softmax=\(softmax)")
            // Decoding: boxes with objectness > threshold, in Darknet's order (anchor, then cell).
            var boxes = CandidateBoxes()
            boxes.reset(classes: 3)
            decodeHead(head, netWidth: 4 * 32, netHeight: 5 * 32, threshold: 0.3, allowed: nil, exp: { Foundation.exp($0) }, into: &boxes)
            let kept = ref.filter { $0.objectness > 0.3 }
            XCTAssertGreaterThan(kept.count, 5)
            XCTAssertEqual(boxes.count, kept.count)
            for (i, b) in kept.enumerated() where i < boxes.count {
                let got = [boxes.x[i], boxes.y[i], boxes.w[i], boxes.h[i], boxes.objectness[i]].map(Double.init)
                let want = [b.x, b.y, b.w, b.h, b.objectness]
                for (g, w) in zip(got, want) { XCTAssertEqual(g, w, accuracy: 1e-6 * max(1, abs(w)), "box \(i) of anchor \(b.anchor)") }
                for k in 0..<3 {
                    let want = b.probs[k] > 0.3 ? b.probs[k] : 0
                    XCTAssertEqual(Double(boxes.probs[i * 3 + k]), want, accuracy: 1e-6, "box \(i) class \(k)")
                }
            }
        }
    }

    /// A hand-built [region] head through the detector's postprocessing: known boxes, their
    /// classes, the letterbox correction and NMS between two overlapping boxes.
    func testRegionDecodesKnownBoxes() throws {
        let grid = 13, plane = grid * grid, entries = 8
        let n = try net(Shape(c: 16, h: grid, w: grid), "[maxpool]\nsize=1\nstride=1\n\n" + Self.region)
        var raw = [Float](repeating: -20, count: 16 * plane)
        func put(row: Int, col: Int, anchor: Int, t: [Float], scores: [Float]) {
            let base = anchor * entries * plane + row * grid + col
            for (e, v) in (t + scores).enumerated() { raw[base + e * plane] = v }
        }
        // logistic(0) = 0.5: centre of the cell; exp(0) = 1: the anchor's size; obj logistic(3).
        put(row: 6, col: 6, anchor: 1, t: [0, 0, 0, 0, 3], scores: [0, 4, 0])
        // The same place, slightly smaller, worse: suppressed by NMS (same class).
        put(row: 6, col: 6, anchor: 0, t: [0, 0, log(1.8 / 0.5), log(2.8 / 1.5), 2], scores: [0, 4, 0])
        // A box far away of class 2.
        put(row: 1, col: 2, anchor: 0, t: [1, -1, 0.5, 0.25, 4], scores: [0, 0, 5])
        try n.forward(raw)
        var p = Postprocessor()
        let found = try p.run(heads: n.heads, netWidth: 416, netHeight: 416, imageWidth: 416, imageHeight: 416,
                              options: DetectorOptions(), classCount: 3, names: [])
        XCTAssertEqual(found.map(\.classIndex), [2, 1])
        let objectness = Float(1 / (1 + exp(-3.0)))
        let softmax = Float(exp(4.0) / (exp(4.0) + 2))
        let big = try XCTUnwrap(found.first { $0.classIndex == 1 })
        XCTAssertEqual(big.x, 6.5 / 13, accuracy: 1e-6)
        XCTAssertEqual(big.y, 6.5 / 13, accuracy: 1e-6)
        XCTAssertEqual(big.width, 2 / 13, accuracy: 1e-6)
        XCTAssertEqual(big.height, 3 / 13, accuracy: 1e-6)
        XCTAssertEqual(big.objectness, objectness, accuracy: 1e-6)
        XCTAssertEqual(big.confidence, objectness * softmax, accuracy: 1e-6)
        let small = try XCTUnwrap(found.first { $0.classIndex == 2 })
        XCTAssertEqual(small.x, (2 + 1 / (1 + exp(-1))) / 13, accuracy: 1e-6)
        XCTAssertEqual(small.y, (1 + 1 / (1 + exp(1))) / 13, accuracy: 1e-6)
        XCTAssertEqual(small.width, Float(exp(0.5) * 0.5 / 13), accuracy: 1e-6)
        XCTAssertEqual(small.height, Float(exp(0.25) * 1.5 / 13), accuracy: 1e-6)
        // Letterboxed into an image twice as wide: x stays centred, heights double.
        let wide = try p.run(heads: n.heads, netWidth: 416, netHeight: 416, imageWidth: 832, imageHeight: 416,
                             options: DetectorOptions(), classCount: 3, names: [])
        let w = try XCTUnwrap(wide.first { $0.classIndex == 1 })
        XCTAssertEqual(w.x, 0.5, accuracy: 1e-6)
        XCTAssertEqual(w.height, 6 / 13, accuracy: 1e-5)
        XCTAssertEqual(w.width, 2 / 13, accuracy: 1e-6)
    }

    func testRegionRefusals() {
        let s = Shape(c: 16, h: 4, w: 4)
        let region = "[maxpool]\nsize=1\nstride=1\n\n[region]\nanchors=0.5,1.5, 2,3\nclasses=3\nnum=2\n"
        for (body, message) in [
            ("coords=5\n", "coords=5 is not supported"),
            ("tree=x.tree\n", "unknown key 'tree'"),
            ("softmax=2\n", "softmax=2 must be 0 or 1"),
            ("background=1\n", "unknown key 'background'"),
        ] {
            XCTAssertThrowsError(try net(s, region + body)) { XCTAssertTrue("\($0)".contains(message), "\($0)") }
        }
        XCTAssertThrowsError(try net(Shape(c: 15, h: 4, w: 4), region)) { e in
            XCTAssertTrue("\(e)".contains("should be filters=(3+4+1)*2=16"), "\(e)")
        }
    }

    /// [net] letter_box: the model's default preprocessing (0 stretch, 1 letterbox, absent:
    /// letterbox), which DetectorOptions.resize overrides.
    func testLetterBoxKey() throws {
        let body = "[maxpool]\nsize=1\nstride=1\n\n" + Self.region
        let s = Shape(c: 16, h: 4, w: 4)
        XCTAssertEqual(try net(s, body).model.letterBox, nil)
        XCTAssertEqual(try net(s, body).model.defaultResize, .letterbox)
        XCTAssertEqual(try net(s, body, netKeys: "letter_box=1").model.defaultResize, .letterbox)
        let stretched = try net(s, body, netKeys: "letter_box=0").model
        XCTAssertEqual(stretched.letterBox, false)
        XCTAssertEqual(stretched.defaultResize, .stretch)
        XCTAssertThrowsError(try net(s, body, netKeys: "letter_box=2")) { e in
            XCTAssertTrue("\(e)".contains("letter_box=2 must be 0 (stretch) or 1 (letterbox)"), "\(e)")
        }
        // A frame twice as wide as high through a Detector: a 1x1 convolution of zero weights
        // gives every cell the same raw values (its biases): anchor 1 (2x3 cells) found, class 1.
        // Letterboxed, its height in the image's units doubles; stretched, not.
        let biases: [Float] = [0, 0, 0, 0, -20, 0, 0, 0] + [0, 0, 0, 0, 3, 0, 4, 0]
        let conv = "[convolutional]\nfilters=16\nsize=1\nstride=1\nactivation=linear\n\n"
        func detect(_ keys: String, _ resize: ResizeMode?) throws -> Detection {
            let cfg = "[net]\nwidth=32\nheight=32\nchannels=3\n\(keys)\n" + conv + Self.region
            let model = try Model(cfgText: cfg, weights: weightsFile(biases + [Float](repeating: 0, count: 48)))
            let detector = try Detector(model: model, options: DetectorOptions(resize: resize), threads: 1)
            return try XCTUnwrap(detector.detect(rgb: [UInt8](repeating: 9, count: 256 * 128 * 3), width: 256, height: 128).first)
        }
        XCTAssertEqual(try detect("letter_box=1", nil).height, 6 / 32, accuracy: 1e-6)
        XCTAssertEqual(try detect("letter_box=0", nil).height, 3 / 32, accuracy: 1e-6)
        XCTAssertEqual(try detect("", nil).height, 6 / 32, accuracy: 1e-6)
        XCTAssertEqual(try detect("letter_box=0", .letterbox).height, 6 / 32, accuracy: 1e-6)
        XCTAssertEqual(try detect("letter_box=1", .stretch).height, 3 / 32, accuracy: 1e-6)
    }
}
