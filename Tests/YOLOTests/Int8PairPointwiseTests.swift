import Foundation
import XCTest
import YOLOReference
@testable @_spi(Kernels) import YOLOEngine
@testable import YOLOCore
import YOLOKernels

/// 12-bit inputs (a calibration table's `a12`): a 1x1 layer's input quantized to 0...4095 and its
/// weights per filter to 12 bits run as one 16-bit pair GEMM (`gemm1x1-int8`,
/// PairPointwiseConv.swift): checked against naive Int64 sums at every level with the pair GEMM,
/// 1-3 threads, depths of one and several blocks and an odd channel count. The planner offers it
/// no other INT8 form, the fixed table takes it, the mark survives the table's text, and a mark on
/// a 3x3 layer is an error naming it.
final class Int8PairPointwiseTests: XCTestCase {
    var levels: [KernelLevel] { KernelLevel.supported.filter { $0.kernelSet?.int16Pairs != nil } }

    /// The layer naively: d = q - zero point on 4096 steps (as the engine rounds), weights per
    /// filter to round(w / (max |w| / 2047)), Int64 sums, then scale, bias and activation.
    static func naive(_ x: [Float], _ s: Shape, filters m: Int, weights: [Float], bias: [Float], activation: Activation,
                      quantization q: Int8Quantization, weightLimit limit: Float) -> [Float] {
        let top = Float(q.levels), plane = s.h * s.w
        let d: [Int64] = x.map {
            var t = $0 * q.inverseScale + Float(q.zeroPoint)
            t = min(top, max(0, t))
            return Int64(t.rounded(.toNearestOrEven)) - Int64(q.zeroPoint)
        }
        var out = [Float](repeating: 0, count: m * plane)
        for f in 0..<m {
            let row = Array(weights[f * s.c ..< (f + 1) * s.c])
            let largest = row.map { abs($0) }.max()!
            let scale: Float = largest > 0 ? largest / limit : 1
            let wq: [Int64] = row.map { Int64(max(-limit, min(limit, ($0 / scale).rounded(.toNearestOrEven)))) }
            for i in 0..<plane {
                var sum: Int64 = 0
                for ch in 0..<s.c { sum += wq[ch] * d[ch * plane + i] }
                out[f * plane + i] = activate(Float(Double(sum) * Double(scale) * Double(q.scale)) + bias[f], activation)
            }
        }
        return out
    }

    static func model(_ s: Shape, filters: Int, size: Int = 1, activation: Activation, seed: UInt64,
                      options: (DarknetConfig) -> ModelOptions) throws -> (Model, [Float], [Float]) {
        var rng = SeededRandom(seed: seed)
        let bias = rng.floats(filters), w = rng.floats(filters * s.c * size * size)
        let cfg = "[net]\nwidth=\(s.w)\nheight=\(s.h)\nchannels=\(s.c)\n\n[convolutional]\nfilters=\(filters)\nsize=\(size)\n"
            + "stride=1\npad=1\nactivation=\(activation.rawValue)\n"
        let config = try DarknetConfig(text: cfg, file: "<cfg>")
        return (try Model(config: config, weights: weightsFile(bias + w), options: options(config)), bias, w)
    }

    static func table(_ config: DarknetConfig, range: ClosedRange<Float>) -> Int8Calibration {
        var table = Int8Calibration(ranges: [0: range], method: "test", imageCount: 1, cfgFingerprint: config.fingerprint)
        table.twelveBitLayers = [0]
        return table
    }

    func testPairPointwiseComputesTheExactSums() throws {
        XCTAssertFalse(levels.isEmpty, "some level has the pair GEMM")
        // (300 channels: three blocks of the pair GEMM's depth; 37: an odd one; 13 x 13 and a row.)
        let range: ClosedRange<Float> = -0.7...7.6
        for (s, filters, act) in [(Shape(c: 37, h: 11, w: 9), 20, Activation.leaky), (Shape(c: 300, h: 13, w: 13), 33, .linear),
                                  (Shape(c: 8, h: 1, w: 70), 5, .linear)] {
            for level in levels {
                let algorithm = ConvAlgorithm(.gemm1x1, .int8)
                let (model, bias, w) = try Self.model(s, filters: filters, activation: act, seed: 61) {
                    ModelOptions(gemm: .kernels, kernelLevel: level, algorithms: [0: algorithm], precision: .int8,
                                 calibration: Self.table($0, range: range))
                }
                XCTAssertEqual(model.inference.steps.map(\.algorithm), [algorithm.rawValue], "\(s) \(level)")
                var rng = SeededRandom(seed: 67)
                let input = rng.floats(s.count, -1.5, 9)   // past the range too: clamped
                let q12 = Int8Quantization(min: range.lowerBound, max: range.upperBound, levels: 4095)
                let want = Self.naive(input, s, filters: filters, weights: w, bias: bias, activation: act, quantization: q12,
                                      weightLimit: 2047)
                // (Told apart from 10-bit inputs, and from 8-bit weights.)
                let tenBit = Self.naive(input, s, filters: filters, weights: w, bias: bias, activation: act,
                                        quantization: Int8Quantization(min: range.lowerBound, max: range.upperBound, levels: 1023),
                                        weightLimit: 2047)
                let eightBitWeights = Self.naive(input, s, filters: filters, weights: w, bias: bias, activation: act, quantization: q12,
                                                 weightLimit: 127)
                let top = want.map { abs($0) }.max()!
                for threads in [1, 2, 3] {
                    let session = try Session(model: model, threads: threads)
                    try session.forward(input)
                    let got = Array(try session.output(ofLayer: 0))
                    XCTAssertLessThanOrEqual(zip(got, want).map { abs($0 - $1) }.max()!, 4e-6 * top, "\(s) \(level) threads \(threads)")
                    for other in [tenBit, eightBitWeights] {
                        XCTAssertGreaterThan(zip(got, other).map { abs($0 - $1) }.max()!, 100 * 4e-6 * top, "\(s) \(level)")
                    }
                }
            }
        }
    }

    func testPlannerTableAndTextKeepTwelveBitLayersApart() throws {
        let s = Shape(c: 64, h: 13, w: 13)
        for level in levels {
            // Measured plans time the FP32 forms and the pair form alone in INT8 (a fresh cache directory).
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("yolo-a12-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let (measured, _, _) = try Self.model(s, filters: 32, activation: .linear, seed: 71) {
                var options = ModelOptions(gemm: .kernels, kernelLevel: level, planning: .measure(cacheDirectory: directory),
                                           tuningThreads: 1, precision: .int8, calibration: Self.table($0, range: -1...3))
                options.int8Fallback = .fp32
                return options
            }
            let timed = Set(measured.plan.entries.flatMap { $0.timings.map(\.algorithm) })
            XCTAssertEqual(timed.filter { $0.contains("int8") }, ["gemm1x1-int8"], "\(level): \(timed)")
            XCTAssertTrue(timed.contains("gemm1x1"), "\(level): \(timed)")
            // The fixed table takes it over FP32 where the level prefers it (a tile GEMM's 16-bit form would win: ChoicePolicy).
            let (fixed, _, _) = try Self.model(s, filters: 32, activation: .linear, seed: 71) {
                var options = ModelOptions(gemm: .kernels, kernelLevel: level, precision: .int8, calibration: Self.table($0, range: -1...3))
                options.int8Fallback = .fp32
                return options
            }
            let preferred = level.kernelSet?.int16Pairs?.pointwisePreferred == true
            XCTAssertEqual(fixed.inference.steps.map(\.algorithm), [preferred ? "gemm1x1-int8" : "gemm1x1"], "\(level)")
        }
        // Which levels prefer it: where the pair product is vpmaddwd or vpdpwssd.
        for level in levels {
            let pairs = level.kernelSet!.int16Pairs!
            XCTAssertEqual(pairs.pointwisePreferred, ["vpmaddwd", "vpdpwssd"].contains(pairs.dot), "\(level): \(pairs.dot)")
        }
        // The mark survives the table's text; with a10 on the same line it is refused.
        let config = try DarknetConfig(text: "[net]\nwidth=8\nheight=8\nchannels=3\n\n[convolutional]\nfilters=4\nsize=1\n", file: "<cfg>")
        let text = Self.table(config, range: -1...3).text
        XCTAssertTrue(text.contains(" a12\n"), text)
        XCTAssertEqual(try Int8Calibration(text: text, name: "t").twelveBitLayers, [0])
        XCTAssertThrowsError(try Int8Calibration(text: text.replacingOccurrences(of: " a12\n", with: " a10 a12\n"), name: "t")) {
            XCTAssertTrue("\($0)".contains("t: line 5: layer 0: unexpected 'a12'"), "\($0)")
        }
        // On a 3x3 layer the mark is an error that names the table and the layer.
        XCTAssertThrowsError(try Self.model(Shape(c: 8, h: 9, w: 9), filters: 4, size: 3, activation: .leaky, seed: 73) {
            var table = Self.table($0, range: -1...3)
            table.source = "t.int8"
            return ModelOptions(precision: .int8, calibration: table)
        }) {
            XCTAssertTrue("\($0)".contains("t.int8: layer 0 is marked a12, but only 1x1 stride-1 convolutions take 12-bit inputs"),
                          "\($0)")
        }
    }
}
