import Foundation
import XCTest
import YOLOReference
@testable @_spi(Kernels) import YOLOEngine
@testable import YOLOCore
import YOLOKernels

/// The direct 3x3 conv + 2x2 stride-2 max pool on int16 pairs (`direct+pool-int8`,
/// DirectConvPairs.swift): with a 10-bit input, the exact integer sums of the naive reference
/// (Int8TenBitTests.naive) pooled; with an 8-bit input, INT8 im2col + max pool bit for bit; at
/// every level that has it, 1-3 threads, shapes around its vectors (W = 16 or 8 column pairs, a
/// partial last one), its blocks of 8 filters and odd channel counts. The table takes it for a
/// 10-bit layer where the level's is `preferred`, INT8 F(2x2) elsewhere.
final class DirectConvPairsTests: XCTestCase {
    var levels: [KernelLevel] { KernelLevel.supported.filter { $0.kernelSet?.int16Direct != nil } }

    /// A conv 3x3 (`filters`, `activation`) + maxpool 2x2/2 network on `s`.
    func config(_ s: Shape, filters: Int, activation: Activation) throws -> DarknetConfig {
        let cfg = "[net]\nwidth=\(s.w)\nheight=\(s.h)\nchannels=\(s.c)\n\n[convolutional]\nfilters=\(filters)\nsize=3\n"
            + "stride=1\npad=1\nactivation=\(activation.rawValue)\n\n[maxpool]\nsize=2\nstride=2\n"
        return try DarknetConfig(text: cfg, file: "<cfg>")
    }

    /// 2x2 stride-2 max pool of `filters` planes of h x w.
    func pooled(_ x: [Float], filters: Int, h: Int, w: Int) -> [Float] {
        var out: [Float] = []
        for f in 0..<filters {
            for y in 0..<h / 2 {
                for xx in 0..<w / 2 {
                    // (In steps: Swift 6.0's type checker gives up on the one-expression form.)
                    func at(_ dy: Int, _ dx: Int) -> Float {
                        let row: Int = f * h + 2 * y + dy
                        return x[row * w + 2 * xx + dx]
                    }
                    let upper: Float = max(at(0, 0), at(0, 1)), lower: Float = max(at(1, 0), at(1, 1))
                    out.append(max(upper, lower))
                }
            }
        }
        return out
    }

    func testTenBitInputGivesTheExactSumsPooled() throws {
        guard !levels.isEmpty else { throw XCTSkip("no level here has the direct conv + pool on int16 pairs") }
        var rng = SeededRandom(seed: 61)
        for (s, filters, act) in [(Shape(c: 3, h: 8, w: 10), 5, Activation.leaky), (Shape(c: 16, h: 12, w: 70), 13, .linear),
                                  (Shape(c: 5, h: 6, w: 34), 8, .leaky), (Shape(c: 16, h: 4, w: 32), 16, .leaky)] {
            let bias = rng.floats(filters), w = rng.floats(filters * s.c * 9)
            let input = rng.floats(s.count, -1, 3)   // past the range too: clamped
            let range: ClosedRange<Float> = -0.3...2.5
            let config = try config(s, filters: filters, activation: act)
            let table = Int8Calibration(ranges: [0: range], method: "test", imageCount: 1, cfgFingerprint: config.fingerprint,
                                        tenBitLayers: [0])
            let q10 = Int8Quantization(min: range.lowerBound, max: range.upperBound, levels: 1023)
            let want = pooled(Int8TenBitTests.naive(input, s, filters: filters, weights: w, bias: bias, activation: act,
                                                    quantization: q10), filters: filters, h: s.h, w: s.w)
            let eightBit = pooled(Int8TenBitTests.naive(input, s, filters: filters, weights: w, bias: bias, activation: act,
                                                        quantization: Int8Quantization(min: range.lowerBound, max: range.upperBound)),
                                  filters: filters, h: s.h, w: s.w)
            let top = want.map { abs($0) }.max()!
            for level in levels {
                let model = try Model(config: config, weights: weightsFile(bias + w),
                                      options: ModelOptions(gemm: .kernels, kernelLevel: level, algorithms: [0: ConvAlgorithm(.directPool, .int8)],
                                                            precision: .int8, calibration: table))
                XCTAssertEqual(model.inference.steps.map(\.algorithm), ["direct+pool-int8"], "\(s) \(level)")
                for threads in [1, 2, 3] {
                    let session = try Session(model: model, threads: threads)
                    try session.forward(input)
                    let got = Array(try session.output(ofLayer: 1))
                    XCTAssertEqual(got.count, want.count)
                    let worst = zip(got, want).map { abs($0 - $1) }.max()!
                    XCTAssertLessThanOrEqual(worst, 4e-6 * top, "\(s) \(filters) filters \(level) threads \(threads)")
                    // (And not the 8-bit sums: the test tells them apart.)
                    XCTAssertGreaterThan(zip(got, eightBit).map { abs($0 - $1) }.max()!, 100 * 4e-6 * top, "\(s) \(level)")
                }
            }
        }
    }

    func testEightBitInputIsInt8Im2colPooledBitForBit() throws {
        guard !levels.isEmpty else { throw XCTSkip("no level here has the direct conv + pool on int16 pairs") }
        var rng = SeededRandom(seed: 67)
        // (Leaky and linear go into the kernel's pool, `PooledEpilogue`; logistic after it.)
        for (s, filters, act) in [(Shape(c: 16, h: 10, w: 52), 11, Activation.leaky), (Shape(c: 4, h: 6, w: 18), 8, .linear),
                                  (Shape(c: 3, h: 8, w: 20), 5, .logistic)] {
            let bias = rng.floats(filters), w = rng.floats(filters * s.c * 9), input = rng.floats(s.count, -1, 3)
            let config = try config(s, filters: filters, activation: act)
            let table = Int8Calibration(ranges: [0: -0.5...2.0], method: "test", imageCount: 1, cfgFingerprint: config.fingerprint)
            for level in levels {
                func run(_ a: ConvAlgorithm) throws -> [Float] {
                    let model = try Model(config: config, weights: weightsFile(bias + w),
                                          options: ModelOptions(gemm: .kernels, kernelLevel: level, algorithms: [0: a],
                                                                precision: .int8, calibration: table))
                    XCTAssertEqual(model.inference.steps.first?.algorithm, a.rawValue, "\(level)")
                    let session = try Session(model: model, threads: 2)
                    try session.forward(input)
                    return Array(try session.output(ofLayer: 1))
                }
                let direct = try run(ConvAlgorithm(.directPool, .int8)), im2col = try run(ConvAlgorithm(.im2col, .int8))
                XCTAssertEqual(direct, im2col, "\(s) \(act) \(level): the same floats as INT8 im2col + max pool")
            }
        }
    }

    func testTableTakesItForTenBitLayersWherePreferred() throws {
        let s = Shape(c: 16, h: 12, w: 16)
        var rng = SeededRandom(seed: 71)
        let bias = rng.floats(8), w = rng.floats(8 * s.c * 9)
        let config = try config(s, filters: 8, activation: .leaky)
        let tenBit = Int8Calibration(ranges: [0: -1...3], method: "test", imageCount: 1, cfgFingerprint: config.fingerprint,
                                     tenBitLayers: [0])
        let eightBit = Int8Calibration(ranges: [0: -1...3], method: "test", imageCount: 1, cfgFingerprint: config.fingerprint)
        for level in KernelLevel.supported where level.kernelSet?.int16Pairs != nil {
            let pairs = level.kernelSet?.int16Direct
            let model = try Model(config: config, weights: weightsFile(bias + w),
                                  options: ModelOptions(gemm: .kernels, kernelLevel: level, precision: .int8, calibration: tenBit))
            let got = model.inference.steps.first?.algorithm ?? ""
            if level.kernelSet?.int8?.tenBitPreferred == .pairForms {
                XCTAssertEqual(got, "int8", "\(level): INT8 im2col in two passes, preferred to the pair forms")
            } else if pairs?.preferred == true {
                XCTAssertEqual(got, "direct+pool-int8", "\(level)")
            } else {
                XCTAssertTrue(got.hasPrefix("winograd2-int8"), "\(level): \(got)")
            }
            // Measured plans time it where the level has it (nothing cached: a fresh directory).
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("yolo-dpi8-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let measured = try Model(config: config, weights: weightsFile(bias + w),
                                     options: ModelOptions(gemm: .kernels, kernelLevel: level,
                                                           planning: .measure(cacheDirectory: directory), tuningThreads: 1,
                                                           precision: .int8, calibration: tenBit))
            let timed = Set(measured.plan.entries.flatMap { $0.timings.map(\.algorithm) })
            XCTAssertEqual(timed.contains("direct+pool-int8"), pairs != nil, "\(level): \(timed)")
            // 8-bit input: INT8 im2col stays the table's choice.
            let im2col = try Model(config: config, weights: weightsFile(bias + w),
                                   options: ModelOptions(gemm: .kernels, kernelLevel: level, precision: .int8, calibration: eightBit))
            XCTAssertEqual(im2col.inference.steps.first?.algorithm, "int8", "\(level)")
        }
    }
}
