import Foundation
import XCTest
import YOLOReference
@testable @_spi(Kernels) import YOLOEngine
@testable import YOLOCore
import YOLOKernels

/// INT8 weights rounded by GPTQ (`yolo calibrate --gptq`): the rounding's math against naive
/// references, the table's `rounding` lines (round trip, bad lines refused), and the rounding
/// taken by the INT8 forms at load.
final class Int8RoundingTests: XCTestCase {
    /// The sum of term(0..<n), in order.
    static func sum(_ n: Int, _ term: (Int) -> Double) -> Double {
        var s = 0.0
        for i in 0..<n { s += term(i) }
        return s
    }
    func sum(_ n: Int, _ term: (Int) -> Double) -> Double { Int8RoundingTests.sum(n, term) }

    /// GPTQ's steps give a smaller output error on the inputs H was made of than rounding each
    /// weight to its nearest step, stay within one step, and keep each filter's largest weight.
    func testGPTQLowersTheOutputErrorOfRoundToNearest() {
        var rng = SeededRandom(seed: 31)
        let (filters, k, n) = (6, 27, 200)
        let w = (0..<filters * k).map { _ in rng.float(-1, 1) }
        // Correlated columns (as image patches are): each a mix of a few shared sources.
        let sources = (0..<4 * n).map { _ in rng.float(-1, 1) }
        let mix = (0..<k * 4).map { _ in rng.float(-1, 1) }
        var x = [Float](repeating: 0, count: k * n)
        for i in 0..<k { for j in 0..<n { for s in 0..<4 { x[i * n + j] += mix[i * 4 + s] * sources[s * n + j] } } }
        var h = [Double](repeating: 0, count: k * k)
        for i in 0..<k { for j in i..<k { h[i * k + j] = sum(n) { Double(x[i * n + $0]) * Double(x[j * n + $0]) } } }
        let steps = w.withUnsafeBufferPointer { GPTQ.steps(weights: $0.baseAddress!, filters: filters, k: k, h: h) }
        XCTAssertTrue(steps.allSatisfy { (-1...1).contains($0) })
        XCTAssertGreaterThan(steps.filter { $0 != 0 }.count, 0, "GPTQ moved some weights off their nearest step")
        func error(_ steps: [Int8]) -> Double {
            var total = 0.0
            for f in 0..<filters {
                let row = Array(w[f * k..<(f + 1) * k])
                let scale = row.withUnsafeBufferPointer { int8WeightScale($0.baseAddress!, count: k) }
                let q = (0..<k).map { (int8Weight(row[$0], scale: scale) + Float(steps[f * k + $0])) * scale }
                XCTAssertEqual(q.map(abs).max(), scale * 127, "filter \(f) keeps its largest weight at 127 steps")
                for j in 0..<n {
                    let d = Int8RoundingTests.sum(k) { Double(q[$0] - row[$0]) * Double(x[$0 * n + j]) }
                    total += d * d
                }
            }
            return total
        }
        let (gptq, nearest) = (error(steps), error([Int8](repeating: 0, count: filters * k)))
        XCTAssertLessThan(gptq, 0.8 * nearest, "output error: GPTQ \(gptq), nearest \(nearest)")
    }

    /// U^T U = H^-1 for a symmetric positive definite H, U upper triangular.
    func testUpperFactorOfTheInverse() {
        var rng = SeededRandom(seed: 4)
        let k = 7
        let a = (0..<k * k).map { _ in Double(rng.float(-1, 1)) }
        var h = [Double](repeating: 0, count: k * k)
        for i in 0..<k { for j in 0..<k { h[i * k + j] = sum(k) { a[i * k + $0] * a[j * k + $0] } + (i == j ? 0.5 : 0) } }
        let u = GPTQ.upperFactorOfInverse(h, k: k)
        for i in 0..<k { for j in 0..<i { XCTAssertEqual(u[i * k + j], 0) } }
        // (U^T U) H = I.
        for i in 0..<k {
            for j in 0..<k {
                var v = 0.0
                for p in 0..<k { v += sum(k) { u[$0 * k + i] * u[$0 * k + p] } * h[p * k + j] }
                XCTAssertEqual(v, i == j ? 1 : 0, accuracy: 1e-9, "(\(i), \(j))")
            }
        }
    }

    /// H of a strided, padded convolution is the second moment of its im2col columns of the
    /// input quantized as the table says (q - zero point; padding 0), computed naively here.
    func testColumnMomentsAreTheQuantizedColumnsSecondMoments() throws {
        let cfg = "[net]\nwidth=5\nheight=4\nchannels=2\n[convolutional]\nfilters=3\nsize=3\nstride=2\npad=1\nactivation=leaky\n"
        let network = try ParsedNetwork(config: DarknetConfig(text: cfg, file: "<cfg>"), options: ModelOptions())
        let conv = try XCTUnwrap(network.layers[0].convolution)
        var rng = SeededRandom(seed: 2)
        let q = Int8Quantization(min: -1, max: 3)
        var moments = ColumnMoments(conv, quantization: q)
        let inputs = (0..<2).map { _ in (0..<2 * 4 * 5).map { _ in rng.float(-1.5, 3.5) } }
        for input in inputs { input.withUnsafeBufferPointer { moments.add($0) } }
        let k = conv.columns
        var expected = [Double](repeating: 0, count: k * k)
        for input in inputs {
            for oy in 0..<conv.outputShape.h {
                for ox in 0..<conv.outputShape.w {
                    var column = [Double](repeating: 0, count: k)
                    for ch in 0..<2 { for ky in 0..<3 { for kx in 0..<3 {
                        let (y, x) = (oy * 2 - 1 + ky, ox * 2 - 1 + kx)
                        guard (0..<4).contains(y), (0..<5).contains(x) else { continue }
                        column[(ch * 3 + ky) * 3 + kx] = Double(q.quantize(input[(ch * 4 + y) * 5 + x])) - Double(q.zeroPoint)
                    } } }
                    for i in 0..<k { for j in i..<k { expected[i * k + j] += column[i] * column[j] } }
                }
            }
        }
        for i in 0..<k { for j in i..<k { XCTAssertEqual(moments.h[i * k + j], expected[i * k + j], "(\(i), \(j))") } }
    }

    func testRoundingLinesRoundTripAndBadOnesAreRefused() throws {
        var rng = SeededRandom(seed: 3)
        let steps = (0..<(Int8Rounding.perLine + 5)).map { _ in Int8(Int(rng.next() % 3) - 1) }
        var t = Int8Calibration(ranges: [0: 0...1, 2: -1...3], method: "mse", imageCount: 9, cfgFingerprint: "e61b9133a80c1ea7")
        XCTAssertTrue(t.text.hasPrefix("yolo-swift int8 1\n"), "no rounding: the format every build reads")
        t.rounding[2] = Int8Rounding(steps: steps)
        let text = t.text
        XCTAssertTrue(text.hasPrefix("yolo-swift int8 2\n"), text)
        XCTAssertTrue(text.contains("\nrounding 2 0 4096 ") && text.contains("\nrounding 2 4096 5 "), text)
        let back = try Int8Calibration(text: text, name: "t")
        XCTAssertEqual(back.rounding[2]?.steps, steps)
        XCTAssertEqual(back.text, text)
        let last = text.split(separator: "\n").last!
        let codes = String(last.split(separator: " ")[4])
        for (bad, message) in [(text.replacingOccurrences(of: "yolo-swift int8 2", with: "yolo-swift int8 3"), "expected 'yolo-swift int8 N', N from 1 to 2"),
                               (text.replacingOccurrences(of: "yolo-swift int8 2", with: "yolo-swift int8 1"), "unexpected 'rounding"),
                               (text.replacingOccurrences(of: "rounding 2 4096 5", with: "rounding 2 4095 5"), "starts at weight 4095; the lines before end at 4096"),
                               (text.replacingOccurrences(of: "rounding 2 4096 5", with: "rounding 2 4096 9"), "2 bytes of codes for 9 weights (expected 3)"),
                               (text.replacingOccurrences(of: codes, with: "AAQ="), "nonzero bits after its last code"),
                               (text.replacingOccurrences(of: codes, with: "AwA="), "code 3 at weight 0"),
                               (text.replacingOccurrences(of: codes, with: "%%%%"), "its codes are not base64"),
                               (text.replacingOccurrences(of: "rounding 2 4096 5", with: "rounding 2 4096 0"), "COUNT from 1 to 4096"),
                               (text.replacingOccurrences(of: "rounding 2 0", with: "rounding 3 0"), "rounding 2: starts at weight 4096; the lines before end at 0")] {
            if bad == text { XCTFail("\(message): the text did not change"); continue }
            XCTAssertThrowsError(try Int8Calibration(text: bad, name: "bad.int8")) {
                XCTAssertTrue("\($0)".contains("bad.int8: line") && "\($0)".contains(message), "\($0) should say \(message)")
            }
        }
        for bytes: [UInt8] in [[], [0], [1, 2], [255, 0, 7], [9, 8, 7, 6]] {
            XCTAssertEqual(Base64.decode(Base64.encode(bytes)), bytes)
        }
        XCTAssertEqual(Base64.encode(Array("Man".utf8)), "TWFu")
        XCTAssertEqual(Base64.decode("TWE="), Array("Ma".utf8))
        XCTAssertNil(Base64.decode("TWF="), "a group whose left-over bits are not zero")
    }

    /// The model's INT8 forms take the table's rounding: no steps give the same heads bit for
    /// bit (the rounded weights' own nearest steps are the original integers), steps change them;
    /// a rounding that moves a filter's largest weight, or of the wrong length, is refused.
    func testTheInt8FormsTakeTheRounding() throws {
        let ranges: [Int: ClosedRange<Float>] = [0: 0...1, 2: -0.5...4, 4: -0.5...4, 5: -0.5...4]
        let plain = Int8Calibration(ranges: ranges, method: "test", imageCount: 1, cfgFingerprint: Int8PlanTests.fingerprint)
        // The plan's forms, INT8 im2col alone, and layer 2 in INT8 Winograd F(2x2) and direct + pool.
        let forms: [(String, (inout ModelOptions) -> Void)] = [
            ("default", { _ in }), ("im2col", { $0.convolution = .im2col }),
            ("winograd2-int8", { $0.algorithms[2] = ConvAlgorithm(.winograd2, .int8) }),
            ("direct+pool-int8", { $0.algorithms[2] = ConvAlgorithm(.directPool, .int8) })]
        func heads(_ t: Int8Calibration, conv: String? = nil) throws -> [Float] {
            var o = ModelOptions()
            (o.precision, o.calibration, o.int8AllowsFP16) = (.int8, t, false)
            forms.first { $0.0 == conv }?.1(&o)
            return try PlanTests.heads(try Model(cfgText: PlanTests.cfg, weights: Int8PlanTests.weights, options: o))
        }
        let columns = [2: 32 * 9, 4: 32 * 9]
        for conv in forms.map(\.0) as [String?] {
            // A form this kernel level lacks cannot be forced: nothing to compare there.
            guard (try? heads(plain, conv: conv)) != nil else { continue }
            var zero = plain
            for (layer, k) in columns { zero.rounding[layer] = Int8Rounding(steps: [Int8](repeating: 0, count: 32 * k)) }
            XCTAssertEqual(try heads(zero, conv: conv), try heads(plain, conv: conv), "\(conv ?? "default"): no steps, the same bits")
            var moved = plain
            var rng = SeededRandom(seed: 12)
            // Steps on every weight but each filter's largest (which sets its scale).
            let w = try XCTUnwrap(try fileModel().foldedWeights(of: [2])[2])
            moved.rounding[2] = Int8Rounding(steps: (0..<32 * 288).map { i in
                let row = w[(i / 288) * 288..<(i / 288 + 1) * 288]
                return row.indices.max(by: { abs(w[$0]) < abs(w[$1]) }) == i ? 0 : Int8(Int(rng.next() % 3) - 1)
            })
            XCTAssertNotEqual(try heads(moved, conv: conv), try heads(plain, conv: conv), "\(conv ?? "default"): steps change the heads")
        }
        var bad = plain
        bad.rounding[2] = Int8Rounding(steps: [Int8](repeating: 1, count: 32 * 288))
        XCTAssertThrowsError(try heads(bad)) {
            // (A filter whose largest weight is positive stays at +127: the first negative one fails.)
            XCTAssertTrue("\($0)".contains("layer 2: the calibration table's rounding moves filter ") && "\($0)".contains("'s largest weight"), "\($0)")
        }
        var unranged = plain
        unranged.ranges[4] = nil
        unranged.rounding[4] = Int8Rounding(steps: [Int8](repeating: 0, count: 32 * 288))
        XCTAssertThrowsError(try heads(unranged)) {
            XCTAssertTrue("\($0)".contains("layer 4 has a rounding but no range"), "\($0)")
        }
        bad.rounding[2] = Int8Rounding(steps: [0, 0])
        XCTAssertThrowsError(try heads(bad)) {
            XCTAssertTrue("\($0)".contains("layer 2: the calibration table rounds 2 weights; the layer has 9216"), "\($0)")
        }
    }

    var directory = ""

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "yolo-rounding-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The test network, loaded from files (calibration reads its weights again).
    func fileModel() throws -> Model {
        try Data(PlanTests.cfg.utf8).write(to: URL(fileURLWithPath: directory + "/net.cfg"))
        try Data(Int8PlanTests.weights).write(to: URL(fileURLWithPath: directory + "/net.weights"))
        return try Model(cfgPath: directory + "/net.cfg", weightsPath: directory + "/net.weights")
    }

    /// `Int8Calibrator.round` rounds the layers asked, and refuses one that does not run in INT8.
    func testTheCalibratorRoundsTheLayersAsked() throws {
        let model = try fileModel()
        var rng = SeededRandom(seed: 9)
        let inputs = (0..<3).map { _ in (0..<3 * 64 * 64).map { _ in rng.float(0, 1) } }
        let fill = { (i: Int, b: UnsafeMutableBufferPointer<Float>) throws(YOLOError) in _ = b.update(fromContentsOf: inputs[i]) }
        let table = try Int8Calibrator.calibrate(inputs: 3, method: .minMax, maxEffect: nil, load: { _ in model }, fill: fill)
        let rounded = try Int8Calibrator.round(table, layers: [2, 4], model: model, inputs: 3, fill: fill)
        XCTAssertEqual(Set(rounded.rounding.keys), [2, 4])
        for layer in [2, 4] {
            let steps = try XCTUnwrap(rounded.rounding[layer]?.steps)
            XCTAssertEqual(steps.count, 32 * 288)
            XCTAssertTrue(steps.contains { $0 != 0 }, "layer \(layer): some weights rounded the other way")
        }
        XCTAssertEqual(try Int8Calibration(text: rounded.text, name: "t"), rounded.withSource("t"))
        XCTAssertThrowsError(try Int8Calibrator.round(table, layers: [0], model: model, inputs: 3, fill: fill)) {
            XCTAssertTrue("\($0)".contains("layer 0 does not run in INT8 under the table"), "\($0)")
        }
        XCTAssertThrowsError(try Int8Calibrator.round(table, layers: [1], model: model, inputs: 3, fill: fill)) {
            XCTAssertTrue("\($0)".contains("layer 1 is not a convolution"), "\($0)")
        }
    }
}

extension Int8Calibration {
    func withSource(_ name: String) -> Int8Calibration { var t = self; t.source = name; return t }
}
