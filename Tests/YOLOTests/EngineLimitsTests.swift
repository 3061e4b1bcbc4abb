import Foundation
import XCTest
@testable import YOLOEngine
@testable import YOLODetection
@testable import YOLOCore

/// Hostile cfgs and weights: limits are checked before memory is allocated, non-finite
/// numbers are refused instead of giving silently wrong detections.
final class EngineLimitsTests: XCTestCase {
    /// A conv (batch-normalized) + a 1x1 conv into a [yolo] head of 2 classes, 2 masks.
    func cfg(width: Int = 8, height: Int = 8, filters: Int = 4, pool: Bool = false) -> String {
        """
        [net]
        width=\(width)
        height=\(height)
        channels=3

        [convolutional]
        batch_normalize=1
        filters=\(filters)
        size=3
        stride=1
        pad=1
        activation=leaky
        \(pool ? "[maxpool]\nsize=2\nstride=2" : "")

        [convolutional]
        filters=14
        size=1
        activation=linear

        [yolo]
        mask=0,1
        anchors=1,1, 2,2, 3,3
        classes=2
        num=3
        """
    }

    /// Parameters of `cfg()`, in file order: BN conv (biases, scales, means, variances,
    /// weights), then the 1x1 conv (biases, weights).
    func parameters(bias: Float = 0.1, scale: Float = 1, variance: Float = 1, weight: Float = 0.05) -> [Float] {
        [Float](repeating: bias, count: 4) + [Float](repeating: scale, count: 4) + [Float](repeating: 0, count: 4)
            + [Float](repeating: variance, count: 4) + [Float](repeating: weight, count: 108)
            + [Float](repeating: 0, count: 14) + [Float](repeating: weight, count: 56)
    }

    func message(_ body: () throws -> Void) -> String {
        do { try body(); return "no error" } catch { return "\(error)" }
    }

    func peakRSSMiB() -> Double {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return (Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) / 1024
    }

    func testHugeLayerIsRefusedBeforeAllocating() {
        // Used to abort the process: "failed to allocate 86528021019648 bytes".
        let m = message { _ = try Model(cfgText: cfg(width: 416, height: 416, filters: 50_000_000), weights: [],
                                        cfgName: "huge.cfg") }
        XCTAssertTrue(m.contains("huge.cfg:6:") && m.contains("over the activation limit"), m)
    }

    func testWeightsAreCheckedBeforeActivationsExist() {
        // filters=4096 at 416x416: the arena (2.8 GB) used to be allocated before the weights
        // file was found to be wrong. Now the model allocates no activations at all.
        let before = peakRSSMiB()
        let m = message { _ = try Model(cfgText: cfg(width: 416, height: 416, filters: 4096),
                                        weights: weightsFile(parameters()), weightsName: "w.weights",
                                        options: ModelOptions(maxActivationBytes: 8 << 30)) }
        XCTAssertTrue(m.contains("w.weights") && m.contains("too short"), m)
        XCTAssertLessThan(peakRSSMiB() - before, 500, "no activation arena before the weights are checked")
    }

    func testHugeInputIsRefusedWithTheLimitAndHowToRaiseIt() {
        // width=100000 used to run with 8.4 GB.
        let m = message { _ = try Model(cfgText: cfg(width: 100_000, height: 416), weights: weightsFile(parameters())) }
        XCTAssertTrue(m.contains("over the activation limit") && m.contains("maxActivationBytes"), m)
        // A session checks its own arena too: keeping every output needs more than reusing.
        guard let probe = try? Model(cfgText: cfg(width: 64, height: 64, pool: true), weights: weightsFile(parameters())) else {
            return XCTFail("64x64 loads")
        }
        let lean = probe.sessionBytes(threads: 1), full = probe.sessionBytes(threads: 1, keepingAllOutputs: true)
        XCTAssertLessThan(lean, full)
        let model = try? Model(cfgText: cfg(width: 64, height: 64, pool: true), weights: weightsFile(parameters()),
                               options: ModelOptions(maxActivationBytes: lean))
        XCTAssertNotNil(model)
        if let model {
            XCTAssertNoThrow(try Session(model: model, threads: 1))
            XCTAssertTrue(message { _ = try Session(model: model, threads: 1, keepsAllOutputs: true) }.contains("over the limit"))
        }
    }

    func testHugeAnchorCountIsRefusedBeforeAllocating() {
        // Found by the cfg fuzzer's author: num=2000000000 without a mask allocated 16 GB.
        let m = message { _ = try Model(cfgText: "[net]\nwidth=32\nheight=32\nchannels=1\n[yolo]\nclasses=1\nnum=2000000000\n",
                                        weights: weightsFile([])) }
        XCTAssertTrue(m.contains("anchors has 0 numbers but num=2000000000 needs 4000000000"), m)
        let m2 = message { _ = try Model(cfgText: "[net]\nwidth=32\nheight=32\nchannels=1\n[yolo]\nclasses=1\nnum=\(Int.max)\n",
                                         weights: weightsFile([])) }
        XCTAssertTrue(m2.contains("num=\(Int.max) is out of range"), m2)
    }

    func testNumbersThatOverflowTheShapeArithmeticAreRefused() {
        // Each of these trapped on an Int overflow (CI's cfg fuzzer, stop 45).
        let net = "[net]\nwidth=8\nheight=8\nchannels=3\n"
        let cases: [(cfg: String, expected: String)] = [
            (net + "[maxpool]\nsize=2\nstride=2\npadding=\(Int.max)\n", "x.cfg:8: [maxpool] padding=\(Int.max) is out of range: cfg integers are 32-bit"),
            (net + "[upsample]\nstride=\(1 << 62)\n", "x.cfg:6: [upsample] stride=\(1 << 62) is out of range"),
            (net + "[convolutional]\nfilters=1\nsize=3\npadding=\(1 << 62)\n", "[convolutional] padding=\(1 << 62) is out of range"),
            (net + "[route]\nlayers=\(Int.min)\n", "[route] layers=\(Int.min) is out of range"),
            (net + "[convolutional]\nfilters=2\nsize=2147483647\npad=1\n",
             "[convolutional] filters=2 size=2147483647 on a 3x8x8 input needs more than 2147483647 weights"),
            ("[net]\nwidth=2147483647\nheight=2147483647\nchannels=1\n[maxpool]\nsize=2147483647\nstride=2147483647\n",
             "x.cfg:1: [net] the input 1x2147483647x2147483647 is too large to count, over the activation limit"),
        ]
        for c in cases {
            let m = message { _ = try Model(cfgText: c.cfg, weights: weightsFile([]), cfgName: "x.cfg",
                                            options: ModelOptions(maxActivationBytes: Int.max)) }
            XCTAssertTrue(m.contains(c.expected), "\(c.cfg)\n\(m)")
        }
        // The suggested size of an input size option near Int.max.
        let m = message { _ = try Model(cfgText: cfg(), weights: weightsFile(parameters()),
                                        options: ModelOptions(inputSize: .init(width: Int.max, height: 100))) }
        XCTAssertTrue(m.contains("e.g. \(Int.max / 32 * 32)x96"), m)
        XCTAssertEqual([0, 15, 16, 47, 48, -5].map(Model.multipleOf32(near:)), [32, 32, 32, 32, 64, 32])
    }

    func testNonFiniteWeightsAreRefusedAtLoad() {
        var p = parameters()
        p[20] = .nan
        var m = message { _ = try Model(cfgText: cfg(), weights: weightsFile(p), weightsName: "nan.weights") }
        XCTAssertTrue(m.contains("nan.weights") && m.contains("layer 0") && m.contains("nan") && m.contains("finite"), m)
        p = parameters()
        p[p.count - 60] = .infinity  // a bias of the 1x1 conv
        m = message { _ = try Model(cfgText: cfg(), weights: weightsFile(p)) }
        XCTAssertTrue(m.contains("layer 1") && m.contains("inf"), m)
        // All NaN, as in the report (0 detections, exit 0 before).
        m = message { _ = try Model(cfgText: cfg(), weights: weightsFile([Float](repeating: .nan, count: p.count))) }
        XCTAssertTrue(m.contains("finite"), m)
    }

    func testNegativeVarianceIsRefused() {
        let m = message { _ = try Model(cfgText: cfg(), weights: weightsFile(parameters(variance: -1))) }
        XCTAssertTrue(m.contains("variance -1"), m)
    }

    func testNonFiniteHeadsAreAnErrorNotDetections() throws {
        // Finite but huge weights overflow to infinity in the forward pass.
        let model = try Model(cfgText: cfg(), weights: weightsFile(parameters(weight: 3e37)))
        let detector = try Detector(model: model, threads: 1)
        let m = message { _ = try detector.detect(rgb: [UInt8](repeating: 200, count: 8 * 8 * 3), width: 8, height: 8) }
        XCTAssertTrue(m.contains("non-finite") && m.contains("[yolo] layer 2"), m)
        // A sane model is fine with the same frame.
        let sane = try Detector(model: Model(cfgText: cfg(), weights: weightsFile(parameters())), threads: 1)
        XCTAssertNoThrow(try sane.detect(rgb: [UInt8](repeating: 200, count: 8 * 8 * 3), width: 8, height: 8))
    }
}
