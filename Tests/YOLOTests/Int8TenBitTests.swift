import Foundation
import XCTest
import YOLOReference
@testable @_spi(Kernels) import YOLOEngine
@testable import YOLOCore
import YOLOKernels

/// 10-bit activations (a calibration table's `a10`): INT8 Winograd F(2x2) quantizes such a layer's
/// input to 0...1023 (its int16 transform holds 4 x 1023) and computes the exact integer sums of
/// the s8 weights and those inputs, checked against naive Int64 sums at every level with the pair
/// GEMM, 1-3 threads, and a map of several blocks of tile rows; so does INT8 im2col in two passes
/// (Int8TenBit.swift) at every level, 3x3 and 1x1. The planner offers no 8-bit INT8 form for such
/// a layer; the fixed table takes the pair forms where the level does not prefer the two passes
/// (`Int8Functions.tenBitPreferred`: sdot), and INT8 im2col where no pair form is a candidate
/// (`--conv im2col`); the table's text keeps the mark.
final class Int8TenBitTests: XCTestCase {
    var levels: [KernelLevel] { KernelLevel.supported.filter { $0.kernelSet?.int16Pairs != nil } }

    /// The layer naively: d = q - zero point on `levels` + 1 steps (as the engine rounds), s8
    /// weights per filter, Int64 sums, then scale, bias and activation in float.
    static func naive(_ x: [Float], _ s: Shape, filters m: Int, weights: [Float], bias: [Float], activation: Activation,
                      quantization q: Int8Quantization, size: Int = 3) -> [Float] {
        let taps = s.c * size * size, top = Float(q.levels), pad = size / 2
        let d: [Int64] = x.map {
            var t = $0 * q.inverseScale + Float(q.zeroPoint)
            t = min(top, max(0, t))
            return Int64(t.rounded(.toNearestOrEven)) - Int64(q.zeroPoint)
        }
        var out = [Float](repeating: 0, count: m * s.h * s.w)
        for f in 0..<m {
            let row = Array(weights[f * taps ..< (f + 1) * taps])
            // (The engine's rule: max |w| / 127 per filter, round to nearest even, -127...127.)
            let largest = row.map { abs($0) }.max()!
            let scale: Float = largest > 0 ? largest / 127 : 1
            let wq: [Int64] = row.map { Int64(max(-127, min(127, ($0 / scale).rounded(.toNearestOrEven)))) }
            for y in 0..<s.h {
                for xx in 0..<s.w {
                    var sum: Int64 = 0
                    for ch in 0..<s.c {
                        for ky in 0..<size {
                            for kx in 0..<size {
                                let (iy, ix) = (y + ky - pad, xx + kx - pad)
                                guard iy >= 0, iy < s.h, ix >= 0, ix < s.w else { continue }
                                let (wi, di) = ((ch * size + ky) * size + kx, (ch * s.h + iy) * s.w + ix)
                                sum += wq[wi] * d[di]
                            }
                        }
                    }
                    let v = Float(Double(sum) * Double(scale) * Double(q.scale)) + bias[f]
                    out[(f * s.h + y) * s.w + xx] = activate(v, activation)
                }
            }
        }
        return out
    }

    func testTenBitF2x2ComputesTheExactSums() throws {
        // (16 x 72 x 128: 36 tile rows in 3 blocks, so blocks after the first read their halo.)
        XCTAssertFalse(levels.isEmpty, "some level has the pair GEMM")
        try checkExactSums(ConvAlgorithm(.winograd2, .int8), levels: levels, seed: 47,
                           [(Shape(c: 3, h: 13, w: 13), 5, 3, .leaky), (Shape(c: 17, h: 9, w: 22), 9, 3, .linear),
                            (Shape(c: 16, h: 72, w: 128), 8, 3, .leaky), (Shape(c: 300, h: 5, w: 6), 3, 3, .linear)])
    }

    func testTenBitIm2colComputesTheExactSums() throws {
        // (17 x 72 x 128: several blocks of output rows; 300 channels: many kc blocks; a 1x1 layer.)
        let levels = KernelLevel.supported.filter { $0.kernelSet?.int8?.tenBitGemm != nil }
        XCTAssertFalse(levels.isEmpty, "some level has the 10-bit INT8 GEMM")
        try checkExactSums(ConvAlgorithm(.im2col, .int8), levels: levels, seed: 59,
                           [(Shape(c: 3, h: 13, w: 13), 5, 3, .leaky), (Shape(c: 17, h: 72, w: 128), 9, 3, .linear),
                            (Shape(c: 300, h: 5, w: 6), 3, 3, .linear), (Shape(c: 37, h: 11, w: 9), 20, 1, .leaky)])
    }

    /// One convolution (shape, filters, size, activation) with a 10-bit input, forced to
    /// `algorithm` at each level, 1-3 threads: the naive 10-bit sums, and not the 8-bit ones.
    func checkExactSums(_ algorithm: ConvAlgorithm, levels: [KernelLevel], seed: UInt64,
                        _ cases: [(Shape, Int, Int, Activation)]) throws {
        var rng = SeededRandom(seed: seed)
        for (s, filters, size, act) in cases {
            let bias = rng.floats(filters), w = rng.floats(filters * s.c * size * size)
            let input = rng.floats(s.count, -1, 3)   // past the range too: clamped
            let range: ClosedRange<Float> = -0.3...2.5
            let cfg = "[net]\nwidth=\(s.w)\nheight=\(s.h)\nchannels=\(s.c)\n\n[convolutional]\nfilters=\(filters)\nsize=\(size)\n"
                + "stride=1\npad=1\nactivation=\(act.rawValue)\n"
            let config = try DarknetConfig(text: cfg, file: "<cfg>")
            let table = Int8Calibration(ranges: [0: range], method: "test", imageCount: 1, cfgFingerprint: config.fingerprint,
                                        tenBitLayers: [0])
            let q10 = Int8Quantization(min: range.lowerBound, max: range.upperBound, levels: 1023)
            let want = Self.naive(input, s, filters: filters, weights: w, bias: bias, activation: act, quantization: q10, size: size)
            let eightBit = Self.naive(input, s, filters: filters, weights: w, bias: bias, activation: act,
                                      quantization: Int8Quantization(min: range.lowerBound, max: range.upperBound), size: size)
            let top = want.map { abs($0) }.max()!
            for level in levels {
                let model = try Model(config: config, weights: weightsFile(bias + w),
                                      options: ModelOptions(gemm: .kernels, kernelLevel: level, algorithms: [0: algorithm],
                                                            precision: .int8, calibration: table))
                XCTAssertEqual(model.inference.steps.map(\.algorithm), [algorithm.rawValue], "\(s) \(level)")
                for threads in [1, 2, 3] {
                    let session = try Session(model: model, threads: threads)
                    try session.forward(input)
                    let got = Array(try session.output(ofLayer: 0))
                    let worst = zip(got, want).map { abs($0 - $1) }.max()!
                    XCTAssertLessThanOrEqual(worst, 4e-6 * top, "\(s) \(level) threads \(threads): against the 10-bit sums")
                    // (And not the 8-bit ones: the test tells them apart.)
                    XCTAssertGreaterThan(zip(got, eightBit).map { abs($0 - $1) }.max()!, 100 * 4e-6 * top, "\(s) \(level)")
                }
            }
        }
    }

    /// Which levels the fixed table lets take two 8-bit passes for a 10-bit input, and over what.
    func testTenBitPreferencesByLevel() {
        #if arch(x86_64)
        let want: [KernelLevel: Int8Functions.TenBitPreference] = [.avxVNNI: .fp32, .avx512VNNI: .fp32, .amx: .winograd]
        for level in KernelLevel.supported { XCTAssertEqual(level.kernelSet?.int8?.tenBitPreferred, want[level], "\(level)") }
        #endif
        XCTAssertTrue(KernelLevel.supported.allSatisfy { $0.kernelSet?.int8?.tenBitGemm != nil })
    }

    func testPlannerAndTableKeepTenBitLayersApart() throws {
        let s = Shape(c: 32, h: 26, w: 26)
        var rng = SeededRandom(seed: 53)
        let bias = rng.floats(16), w = rng.floats(16 * s.c * 9)
        let cfg = "[net]\nwidth=\(s.w)\nheight=\(s.h)\nchannels=\(s.c)\n\n[convolutional]\nfilters=16\nsize=3\n"
            + "stride=1\npad=1\nactivation=leaky\n"
        let config = try DarknetConfig(text: cfg, file: "<cfg>")
        let table = Int8Calibration(ranges: [0: -1...3], method: "test", imageCount: 1, cfgFingerprint: config.fingerprint,
                                    tenBitLayers: [0])
        for level in levels {
            // Measured plans time FP32 forms and F(2x2) alone in INT8 (nothing cached: a fresh directory).
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("yolo-a10-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let measured = try Model(config: config, weights: weightsFile(bias + w),
                                     options: ModelOptions(gemm: .kernels, kernelLevel: level,
                                                           planning: .measure(cacheDirectory: directory), tuningThreads: 1,
                                                           precision: .int8, calibration: table))
            let timed = Set(measured.plan.entries.flatMap { $0.timings.map(\.algorithm) })
            XCTAssertTrue(timed.contains("winograd2-int8") && timed.contains("int8"), "\(level): \(timed)")
            XCTAssertFalse(timed.contains("winograd4-int8"), "\(level): \(timed)")
            // The fixed table: F(2x2) where the level does not prefer two 8-bit passes to the pair GEMM
            // (no pool follows: no direct conv + pool here).
            let rank = level.kernelSet?.int8?.tenBitPreferred
            let fixed = try Model(config: config, weights: weightsFile(bias + w),
                                  options: ModelOptions(gemm: .kernels, kernelLevel: level, precision: .int8, calibration: table))
            XCTAssertEqual(fixed.inference.steps.map(\.algorithm), [rank == .pairForms || rank == .winograd ? "int8" : "winograd2-int8"], "\(level)")
            // Without Winograd: INT8 im2col on the 10 bits where the level prefers it to FP32 (VNNI,
            // sdot), else FP32 im2col (two passes of vpmaddwd lost to it); never 8 bits of the range.
            let im2col = try Model(config: config, weights: weightsFile(bias + w),
                                   options: ModelOptions(convolution: .im2col, gemm: .kernels, kernelLevel: level,
                                                         precision: .int8, calibration: table))
            XCTAssertEqual(im2col.inference.steps.map(\.algorithm), [rank == nil ? "im2col" : "int8"], "\(level)")
        }
        // The mark survives the table's text; a word after it is refused.
        let text = table.text
        XCTAssertTrue(text.contains(" a10\n"), text)
        XCTAssertEqual(try Int8Calibration(text: text, name: "t").tenBitLayers, [0])
        XCTAssertThrowsError(try Int8Calibration(text: text.replacingOccurrences(of: " a10\n", with: " a10 a12\n"), name: "t")) {
            XCTAssertTrue("\($0)".contains("t: line 5: layer 0: unexpected 'a12'"), "\($0)")
        }
    }
}
