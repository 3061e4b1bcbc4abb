import Foundation
import XCTest
@testable import YOLOEngine
@testable import YOLODetection
@testable import YOLOCore
import YOLOKernels
import YOLOReference

/// The Darknet semantics beyond yolov3-tiny: every activation, shortcuts of unequal channel
/// counts, [yolo] scale_x_y / new_coords / nms_kind / beta_nms, input sizes, and cfg keys that
/// are read, have no effect, or are refused.
extension LayerTests {
    func testEveryActivationMatchesNaive() throws {
        var rng = SeededRandom(seed: 11)
        let s = Shape(c: 3, h: 7, w: 6)
        for act in Activation.allCases.map(\.rawValue) {
            let filters = 4, k = s.c * 9
            let bias = rng.floats(filters), w = rng.floats(filters * k, -2, 2)
            let scale = rng.floats(filters, 0.5, 2), mean = rng.floats(filters), variance = rng.floats(filters, 0.1, 3)
            let input = rng.floats(s.count, -3, 3)
            let ref = try naiveConv(input, s, filters: filters, size: 3, stride: 1, pad: 1, weights: w, bias: bias,
                                    bn: BatchNorm(scale: scale, mean: mean, variance: variance), activation: act)
            // conv alone; conv + max pool (fused only for monotonic activations); shortcut's activation.
            let body = "[convolutional]\nbatch_normalize=1\nfilters=\(filters)\nsize=3\nstride=1\npad=1\nactivation=\(act)\n"
                + "[maxpool]\nsize=2\nstride=2\n"
            let n = try net(s, body, weights: bias + scale + mean + variance + w)
            let fused = n.model.inference.steps.contains { ["maxpool+epilogue", "direct+pool"].contains($0.algorithm) || $0.algorithm.hasSuffix("+pool") }
            XCTAssertEqual(fused, Activation(rawValue: act)!.isMonotonic, act)
            let pooled = Naive.maxPool(ref, size: 2, stride: 2, padding: 1)
            let session = try Session(model: n.model, threads: 1)
            try session.forward(input)
            assertClose(try session.output(ofLayer: 1), pooled.values, tolerance: 2e-5, "conv(\(act)) + maxpool, inference plan")
            try n.forward(input)
            assertClose(n.output(ofLayer: 1), pooled.values, tolerance: 2e-5, "conv(\(act)) + maxpool")
            let unfused = try net(s, body, weights: bias + scale + mean + variance + w, options: ModelOptions(fusesLayers: false))
            try unfused.forward(input)
            assertClose(unfused.output(ofLayer: 0), ref.values, tolerance: 2e-5, "conv activation=\(act)")

            // The shortcut's activation: the naive conv with one 1x1 identity filter per channel.
            let sc = try net(s, "[maxpool]\nsize=1\nstride=1\n[shortcut]\nfrom=0\nactivation=\(act)\n", weights: [])
            try sc.forward(input)
            let identity = (0..<s.c * s.c).map { Float($0 % (s.c + 1) == 0 ? 1 : 0) }
            let doubled = try naiveConv(input.map { $0 + $0 }, s, filters: s.c, size: 1, stride: 1, pad: 0, weights: identity,
                                    bias: [Float](repeating: 0, count: s.c), bn: nil, activation: act)
            assertClose(sc.output(ofLayer: 1), doubled.values, tolerance: 2e-6, "shortcut activation=\(act)")
        }
    }

    /// AlexeyAB's shortcut_multilayer_cpu: the output has the previous layer's shape; each
    /// `from` layer adds to the channels both have.
    func testShortcutOfUnequalChannels() throws {
        var rng = SeededRandom(seed: 12)
        let s = Shape(c: 4, h: 3, w: 5)
        let plane = s.h * s.w
        let body = """
        [maxpool]
        size=1
        stride=1
        [route]
        layers=0
        groups=2
        group_id=1
        [route]
        layers=0,0
        [route]
        layers=0
        [shortcut]
        from=1
        activation=linear
        [route]
        layers=0
        [shortcut]
        from=2
        activation=leaky
        [route]
        layers=0
        [shortcut]
        from=-7,-6
        activation=linear
        """
        let x = rng.floats(s.count)
        let n = try net(s, body, weights: [])
        try n.forward(x)
        // from=1 has 2 channels (x's channels 2, 3): added to channels 0, 1; channels 2, 3 pass.
        var fewer = x
        for i in 0..<2 * plane { fewer[i] += x[2 * plane + i] }
        XCTAssertEqual(n.layers[4].output, s)
        assertClose(n.output(ofLayer: 4), fewer, tolerance: 0, "shortcut from a layer with fewer channels")
        // from=2 has 8 channels ([x, x]): its first 4 are added.
        assertClose(n.output(ofLayer: 6), x.map { let v = $0 + $0; return v > 0 ? v : v * 0.1 }, tolerance: 0,
                    "shortcut from a layer with more channels")
        // Two layers at once: x + (x's channels 2, 3 on 0, 1) + x.
        var both = x
        for i in 0..<s.count { both[i] = (i < 2 * plane ? x[i] + x[2 * plane + i] : x[i]) + x[i] }
        assertClose(n.output(ofLayer: 8), both, tolerance: 0, "shortcut from=-7,-6")

        // Heights and widths must agree.
        do {
            _ = try net(s, "[maxpool]\nsize=2\nstride=2\n[upsample]\nstride=2\n[maxpool]\nsize=2\nstride=2\n[shortcut]\nfrom=0\n", weights: [])
        } catch {
            XCTFail("equal shapes: \(error)")
        }
        XCTAssertThrowsError(try net(s, "[maxpool]\nsize=2\nstride=2\n[upsample]\nstride=2\n[shortcut]\nfrom=0\n", weights: [])) { e in
            XCTAssertTrue("\(e)".contains("equal heights and widths"), "\(e)")
        }
    }

    /// [yolo] scale_x_y as AlexeyAB's forward_yolo_layer: x = logistic(tx) * s - (s - 1) / 2.
    func testYOLOLayerScalesXY() throws {
        var rng = SeededRandom(seed: 13)
        let ys = Shape(c: 2 * 7, h: 3, w: 2)
        let yin = rng.floats(ys.count, -4, 4)
        let yn = try net(ys, "[yolo]\nmask=0,1\nanchors=1,2,3,4,5,6\nclasses=2\nnum=3\nscale_x_y=1.05\n", weights: [])
        try yn.forward(yin)
        XCTAssertEqual(yn.heads[0].info.scaleXY, 1.05)
        let ref = Naive.yolo(Naive.Tensor(ys, yin), anchors: 2, classes: 2, scaleXY: 1.05, libm: libm)
        assertClose(yn.heads[0].activated, ref.values, tolerance: 0, "yolo activation with scale_x_y")
    }
}

final class CfgSemanticsTests: XCTestCase {
    /// yolov4-tiny.cfg's [yolo] sections, verbatim but for the mask (one anchor set of three).
    static let yolov4TinyHead = """
    [yolo]
    mask = 3,4,5
    anchors = 10,14,  23,27,  37,58,  81,82,  135,169,  344,319
    classes=2
    num=6
    jitter=.3
    scale_x_y = 1.05
    cls_normalizer=1.0
    iou_normalizer=0.07
    iou_loss=ciou
    ignore_thresh = .7
    truth_thresh = 1
    random=0
    resize=1.5
    nms_kind=greedynms
    beta_nms=0.6
    """

    /// A network whose [yolo] input is its own input (a 1x1 max pool passes it through), so a
    /// test can hand-build the raw head. `grid` x `grid` cells, 3 anchors, 2 classes.
    func passThrough(_ head: String, grid: Int = 13, net: String = "") throws -> Network {
        let cfg = "[net]\nwidth=\(grid)\nheight=\(grid)\nchannels=21\n\(net)\n[maxpool]\nsize=1\nstride=1\n\n" + head
        return try Network(cfgText: cfg, weights: weightsFile([]))
    }

    static func logit(_ p: Double) -> Float { Float(log(p / (1 - p))) }
    static func logistic(_ r: Float) -> Float { Float(1.0 / (1.0 + exp(-Double(r)))) }

    /// yolov4-tiny's scale_x_y = 1.05 moves every box centre: x = (col + logistic(tx) * 1.05 -
    /// 0.025) / grid_w (Darknet's formula, in its float arithmetic), likewise y; w, h as before.
    func testYOLOv4TinyScaleXYAppliedToDetections() throws {
        let n = try passThrough(Self.yolov4TinyHead)
        let info = n.heads[0].info
        XCTAssertEqual(info.scaleXY, 1.05)
        XCTAssertEqual(info.nmsKind, .greedy)
        XCTAssertEqual(info.betaNMS, 0.6)
        XCTAssertEqual(info.anchors.map(\.width), [81, 135, 344])
        let plane = 13 * 13, entries = 7
        var raw = [Float](repeating: -20, count: 21 * plane)
        // Three boxes far apart: (row, col, anchor, tx, ty, tw, th, class).
        let boxes: [(Int, Int, Int, Float, Float, Float, Float, Int)] = [
            (2, 3, 0, 2.5, -1.0, 0.2, -0.3, 0), (9, 11, 1, -3.0, 4.0, -0.5, 0.1, 1), (6, 0, 2, 8.0, -8.0, -2, -2, 0),
        ]
        for (row, col, a, tx, ty, tw, th, k) in boxes {
            let base = a * entries * plane + row * 13 + col
            raw[base] = tx; raw[base + plane] = ty; raw[base + 2 * plane] = tw; raw[base + 3 * plane] = th
            raw[base + 4 * plane] = Self.logit(0.9)
            raw[base + (5 + k) * plane] = Self.logit(0.8)
        }
        try n.forward(raw)
        var p = Postprocessor()
        let netSize = 416
        let found = try p.run(heads: n.heads, netWidth: netSize, netHeight: netSize, imageWidth: netSize, imageHeight: netSize,
                          options: DetectorOptions(), classCount: 2, names: [])
        XCTAssertEqual(found.count, 3)
        let scale: Float = 1.05, shift = Float(-0.5 * (Double(Float(1.05)) - 1))
        for (row, col, a, tx, ty, tw, th, k) in boxes {
            let x = (Float(col) + (Self.logistic(tx) * scale + shift)) / 13
            let y = (Float(row) + (Self.logistic(ty) * scale + shift)) / 13
            let w = Float(exp(Double(tw)) * Double(info.anchors[a].width) / Double(netSize))
            let h = Float(exp(Double(th)) * Double(info.anchors[a].height) / Double(netSize))
            guard let d = found.first(where: { $0.classIndex == k && abs($0.x - x) < 1e-3 }) else {
                XCTFail("no detection at x \(x) (row \(row), col \(col)) in \(found.map { ($0.x, $0.y) })"); continue
            }
            // Exact: the same float operations as Darknet (the letterbox is the identity here).
            XCTAssertEqual(d.x, x, "x of (\(row), \(col))")
            XCTAssertEqual(d.y, y, "y of (\(row), \(col))")
            XCTAssertEqual(d.width, w)
            XCTAssertEqual(d.height, h)
            // ... and not the unscaled centre.
            XCTAssertNotEqual(d.x, (Float(col) + Self.logistic(tx)) / 13)
        }
        // The box pushed to the cell edge (logistic(8) ~ 1) goes past it, as in Darknet.
        let edge = found.first { abs($0.y - 6.5 / 13) < 0.1 }!
        XCTAssertGreaterThan(edge.x, 1.0 / 13)
    }

    /// Without scale_x_y the decoder is pjreddie's formula, bit for bit.
    func testDefaultHeadIsUnscaledGreedy() throws {
        let n = try passThrough("[yolo]\nmask=0,1,2\nanchors=10,14,23,27,37,58\nclasses=2\nnum=3\n")
        let info = n.heads[0].info
        XCTAssertEqual(info.scaleXY, 1)
        XCTAssertFalse(info.newCoords)
        XCTAssertEqual(info.nmsKind, .greedy)
        var raw = [Float](repeating: -20, count: 21 * 169)
        raw[5 * 13 + 7] = 1.3; raw[169 + 5 * 13 + 7] = -0.7; raw[4 * 169 + 5 * 13 + 7] = 3; raw[5 * 169 + 5 * 13 + 7] = 3
        try n.forward(raw)
        var p = Postprocessor()
        let d = try p.run(heads: n.heads, netWidth: 416, netHeight: 416, imageWidth: 416, imageHeight: 416,
                      options: DetectorOptions(), classCount: 2, names: [])
        XCTAssertEqual(d.count, 1)
        XCTAssertEqual(d[0].x, (7 + Self.logistic(1.3)) / 13)
        XCTAssertEqual(d[0].y, (5 + Self.logistic(-0.7)) / 13)
    }

    /// new_coords=1: the head is already activated (no logistic), w = tw^2 * 4 * anchor / net.
    func testNewCoords() throws {
        let n = try passThrough("[yolo]\nmask=0,1,2\nanchors=10,14,23,27,37,58\nclasses=2\nnum=3\nnew_coords=1\nscale_x_y=2.0\n")
        XCTAssertTrue(n.heads[0].info.newCoords)
        var raw = [Float](repeating: 0, count: 21 * 169)
        let cell = 4 * 13 + 9, anchor = 1, base = anchor * 7 * 169 + cell
        raw[base] = 0.3; raw[base + 169] = 0.9; raw[base + 2 * 169] = 0.6; raw[base + 3 * 169] = 0.45
        raw[base + 4 * 169] = 0.8; raw[base + 6 * 169] = 0.7
        try n.forward(raw)
        var p = Postprocessor()
        let d = try p.run(heads: n.heads, netWidth: 416, netHeight: 416, imageWidth: 416, imageHeight: 416,
                      options: DetectorOptions(), classCount: 2, names: [])
        XCTAssertEqual(d.count, 1)
        XCTAssertEqual(d[0].classIndex, 1)
        XCTAssertEqual(d[0].objectness, 0.8)
        XCTAssertEqual(d[0].confidence, Float(0.8) * Float(0.7))
        let shift = Float(-0.5 * (2.0 - 1))
        XCTAssertEqual(d[0].x, (9 + (Float(0.3) * 2 + shift)) / 13)
        XCTAssertEqual(d[0].y, (4 + (Float(0.9) * 2 + shift)) / 13)
        XCTAssertEqual(d[0].width, Float(0.6) * Float(0.6) * 4 * 23 / 416)
        XCTAssertEqual(d[0].height, Float(0.45) * Float(0.45) * 4 * 27 / 416)
    }

    /// nms_kind=diounms: a box is suppressed when IoU - (d^2 / c^2)^beta_nms exceeds the
    /// threshold (AlexeyAB's diounms_sort), so overlapping boxes with distant centres survive.
    func testDIoUNMS() throws {
        var boxes = CandidateBoxes()
        boxes.reset(classes: 1)
        // Same height, shifted sideways: IoU 0.6 (> 0.5), centre distance 0.25, enclosing box
        // 1.25 x 0.5: DIoU = 0.6 - (0.0625 / 1.8125)^0.6 = 0.467 (< 0.5).
        boxes.appendBox(x: 0.5, y: 0.5, w: 1, h: 0.5, objectness: 0.9); boxes.probs.append(0.9)
        boxes.appendBox(x: 0.75, y: 0.5, w: 1, h: 0.5, objectness: 0.8); boxes.probs.append(0.8)
        let a: CenterBox = (0.5, 0.5, 1, 0.5), b: CenterBox = (0.75, 0.5, 1, 0.5)
        let iou = darknetIoU(a, b)
        XCTAssertEqual(iou, 0.6, accuracy: 1e-6)
        let c: Float = 1.25 * 1.25 + 0.5 * 0.5, d: Float = 0.25 * 0.25
        XCTAssertEqual(darknetDIoU(a, b, beta: 0.6), iou - Float(pow(Double(d / c), Double(Float(0.6)))))
        var order: [Int] = [], scratch: [Int] = []
        var greedy = boxes
        nmsPerClass(&greedy, classes: [0], threshold: 0.5, rule: Suppression(kind: .greedy, beta: 0.6), order: &order, scratch: &scratch)
        XCTAssertEqual(greedy.probs, [0.9, 0])
        var diou = boxes
        nmsPerClass(&diou, classes: [0], threshold: 0.5, rule: Suppression(kind: .diou, beta: 0.6), order: &order, scratch: &scratch)
        XCTAssertEqual(diou.probs, [0.9, 0.8], "DIoU \(darknetDIoU(a, b, beta: 0.6)) is below 0.5")
        var agnostic = boxes
        nmsAgnostic(&agnostic, classes: [0], threshold: 0.5, rule: Suppression(kind: .diou, beta: 0.6), order: &order, scratch: &scratch)
        XCTAssertEqual(agnostic.probs, [0.9, 0.8])

        // The detector takes the kind from the (last) [yolo] layer.
        let n = try passThrough("[yolo]\nmask=0,1,2\nanchors=10,14,23,27,37,58\nclasses=2\nnum=3\nnms_kind=diounms\nbeta_nms=0.8\n")
        XCTAssertEqual(n.heads[0].info.nmsKind, .diou)
        XCTAssertEqual(n.heads[0].info.betaNMS, 0.8)
        XCTAssertThrowsError(try passThrough("[yolo]\nmask=0,1,2\nanchors=10,14,23,27,37,58\nclasses=2\nnum=3\nnms_kind=cornersnms\n")) { e in
            XCTAssertTrue("\(e)".contains("nms_kind=cornersnms"), "\(e)")
        }
    }

    // MARK: keys

    func testTrainingOnlyKeysAreAccepted() throws {
        let net = "batch=64\nsubdivisions=8\nmomentum=0.949\ndecay=0.0005\nangle=0\nsaturation=1.5\nexposure=1.5\nhue=.1\n"
            + "learning_rate=0.00261\nburn_in=1000\nmax_batches=500500\npolicy=steps\nsteps=400000,450000\nscales=.1,.1\nmosaic=1\n"
        let n = try passThrough(Self.yolov4TinyHead + "\ncounters_per_class=1,2\nlabel_smooth_eps=0.1\nmax_delta=5\niou_thresh=0.213\n",
                                net: net)
        XCTAssertEqual(n.heads.count, 1)
    }

    func testUnknownKeyIsAnErrorNamingFileLineAndKey() {
        let cfg = "[net]\nwidth=32\nheight=32\nchannels=3\n\n[convolutional]\nfilters=2\nsize=1\nactivation=leaky\nfliters=3\n"
        XCTAssertThrowsError(try Model(cfgText: cfg, weights: weightsFile([Float](repeating: 0, count: 8)), cfgName: "my.cfg")) { e in
            XCTAssertEqual(e as? YOLOError, .cfg(file: "my.cfg", line: 10, message: "[convolutional] unknown key 'fliters': it is not used by this engine's [convolutional] and not an option without effect at inference (training, augmentation); remove it or check its spelling"))
            XCTAssertTrue("\(e)".hasPrefix("my.cfg:10: [convolutional] unknown key 'fliters'"), "\(e)")
        }
        // A key that would change results if Darknet read it, misspelt: refused, not ignored.
        XCTAssertThrowsError(try passThrough(Self.yolov4TinyHead + "\nscale_xy=1.1\n")) { e in
            XCTAssertTrue("\(e)".contains("unknown key 'scale_xy'"), "\(e)")
        }
        XCTAssertThrowsError(try passThrough("[yolo]\nmask=0,1,2\nanchors=10,14,23,27,37,58\nclasses=2\nnum=3\n",
                                             net: "letterbox=1\n")) { e in
            XCTAssertTrue("\(e)".contains(":5: [net] unknown key 'letterbox'"), "\(e)")
        }
    }

    /// A key given twice in one section is an error naming the key and both lines (which one
    /// Darknet takes is not what a reader of the cfg would guess); in two sections it is fine.
    func testAKeyGivenTwiceInASectionIsAnError() throws {
        let cfg = "[net]\nwidth=32\nheight=32\nchannels=3\n\n[convolutional]\nfilters=2\nsize=1\n# comment\n size = 3\nactivation=leaky\n"
        XCTAssertThrowsError(try DarknetConfig(text: cfg, file: "my.cfg")) { e in
            XCTAssertEqual(e as? YOLOError, .cfg(file: "my.cfg", line: 10, message: "[convolutional] the key 'size' is given twice: on lines 8 and 10; keep one"))
        }
        XCTAssertThrowsError(try DarknetConfig(text: "[net]\nwidth=32\r\nheight=32\r\nwidth=64\r\n", file: "n.cfg")) { e in
            XCTAssertTrue("\(e)".hasPrefix("n.cfg:4: [net] the key 'width' is given twice: on lines 2 and 4"), "\(e)")
        }
        let two = try DarknetConfig(text: "[net]\nwidth=32\n[maxpool]\nsize=2\n[maxpool]\nsize=2\n")
        XCTAssertEqual(two.sections.count, 3)
    }

    // MARK: input sizes

    func testInputSizeOverrideAndMultiplesOf32() throws {
        let cfg = """
        [net]
        width=64
        height=64
        channels=3
        [maxpool]
        size=1
        stride=16
        [maxpool]
        size=2
        stride=2
        [upsample]
        stride=2
        [route]
        layers=-1,0
        """
        let wide = try Model(cfgText: cfg, weights: weightsFile([]), options: ModelOptions(inputSize: .init(width: 96, height: 32)))
        XCTAssertEqual(wide.inputWidth, 96)
        XCTAssertEqual(wide.inputHeight, 32)
        XCTAssertEqual(wide.layers[3].output, Shape(c: 6, h: 2, w: 6))
        XCTAssertThrowsError(try Model(cfgText: cfg, weights: weightsFile([]), options: ModelOptions(inputSize: .init(width: 100, height: 64)))) { e in
            XCTAssertTrue("\(e)".contains("multiples of 32"), "\(e)")
        }
        // A cfg size that is not a multiple of 32: the shape mismatch says why.
        XCTAssertThrowsError(try Model(cfgText: cfg.replacingOccurrences(of: "width=64", with: "width=80"), weights: weightsFile([]))) { e in
            XCTAssertTrue("\(e)".contains("80x64 is not a multiple of 32"), "\(e)")
        }
    }
}
