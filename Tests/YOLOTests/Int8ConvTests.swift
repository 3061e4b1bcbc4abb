import Foundation
import XCTest
import YOLOReference
@testable import YOLOEngine
@testable import YOLOCore
import YOLOKernels

/// The INT8 convolution through the planner (`ModelOptions(precision: .int8)` with a calibration
/// table) against a naive integer reference, bit for bit: input quantized with the table's range,
/// weights per filter, sums of (u8 - zero point) x s8 in Int64, dequantized, bias, activation.
/// Every kernel level this CPU runs, 1-3 threads, the inference plan and the plan that keeps every
/// output; shapes with tails (channels not a multiple of 4, odd sizes), strides, 1x1 and 5x5,
/// padding, several blocks of rows, every activation.
final class Int8ConvTests: XCTestCase {
    func random(_ n: Int, _ rng: inout SeededRandom, _ lo: Float = -1, _ hi: Float = 1) -> [Float] {
        (0..<n).map { _ in rng.float(lo, hi) }
    }

    /// The network's output for one convolution computed the INT8 way, naively.
    func reference(_ x: [Float], _ s: Shape, filters: Int, size k: Int, stride: Int, pad: Int, weights: [Float],
                   bias: [Float], activation: Activation, input q: Int8Quantization) -> [Float] {
        let oh = (s.h + 2 * pad - k) / stride + 1, ow = (s.w + 2 * pad - k) / stride + 1
        let groups = (s.c + 3) / 4, columns = groups * k * k * 4
        var qw = [Int8](repeating: 0, count: filters * columns)
        var scales = [Float](repeating: 0, count: filters), sums = [Int32](repeating: 0, count: filters)
        quantizeWeights(weights, filters: filters, channels: s.c, kernel: k, into: &qw, scales: &scales, sums: &sums)
        let qx = x.map { Int64(q.quantize($0)) }, zp = Int64(q.zeroPoint)
        var out = [Float](repeating: 0, count: filters * oh * ow)
        for f in 0..<filters {
            let scale = scales[f] * q.scale
            for oy in 0..<oh {
                for ox in 0..<ow {
                    var acc: Int64 = 0
                    for c in 0..<s.c {
                        for ky in 0..<k {
                            for kx in 0..<k {
                                let iy = oy * stride + ky - pad, ix = ox * stride + kx - pad
                                guard iy >= 0, iy < s.h, ix >= 0, ix < s.w else { continue }  // padding: zp - zp
                                let w = Int64(qw[f * columns + ((c / 4 * k + ky) * k + kx) * 4 + c % 4])
                                acc += (qx[(c * s.h + iy) * s.w + ix] - zp) * w
                            }
                        }
                    }
                    out[(f * oh + oy) * ow + ox] = activate(Float(Int32(acc)) * scale + bias[f], activation)
                }
            }
        }
        return out
    }

    func assertIdentical(_ a: UnsafeBufferPointer<Float>, _ b: [Float], _ what: String, line: UInt = #line) {
        XCTAssertEqual(a.count, b.count, what, line: line)
        let bad = (0..<min(a.count, b.count)).filter { a[$0].bitPattern != b[$0].bitPattern }
        if let i = bad.first {
            XCTFail("\(what): \(bad.count) of \(b.count) differ, first at \(i): \(a[i]) vs \(b[i])", line: line)
        }
    }

    func testInt8ConvolutionMatchesIntegerReference() throws {
        // (input, filters, size, stride, pad, activation)
        let table: [(Shape, Int, Int, Int, Int, Activation)] = [
            (Shape(c: 3, h: 13, w: 13), 5, 3, 1, 1, .leaky),        // 3 channels: one group, a channel short
            (Shape(c: 4, h: 9, w: 7), 6, 3, 2, 1, .linear),          // stride 2
            (Shape(c: 8, h: 6, w: 6), 9, 1, 1, 0, .relu),            // 1x1: the planes are the columns
            (Shape(c: 5, h: 5, w: 5), 3, 1, 2, 0, .logistic),        // 1x1 stride 2: im2col
            (Shape(c: 3, h: 7, w: 11), 2, 5, 1, 2, .mish),           // 5x5
            (Shape(c: 1, h: 1, w: 1), 3, 3, 1, 1, .swish),           // all padding but the centre
            (Shape(c: 17, h: 13, w: 13), 33, 3, 1, 1, .leaky),       // tails of groups, tiles
            (Shape(c: 6, h: 8, w: 9), 7, 3, 1, 0, .leaky),           // no padding
            (Shape(c: 16, h: 40, w: 66), 8, 3, 1, 1, .leaky),        // several blocks of rows
            (Shape(c: 64, h: 26, w: 26), 50, 1, 1, 0, .linear),      // a head-like 1x1
        ]
        var rng = SeededRandom(seed: 31)
        for (t, (s, filters, k, stride, pad, act)) in table.enumerated() {
            let bias = random(filters, &rng), w = random(filters * s.c * k * k, &rng)
            let input = random(s.count, &rng, -0.4, 3)
            // A range narrower than the values at the top: clamping is exercised.
            let range: ClosedRange<Float> = -0.3...2.5
            let cfg = "[net]\nwidth=\(s.w)\nheight=\(s.h)\nchannels=\(s.c)\n\n[convolutional]\nfilters=\(filters)\nsize=\(k)\n"
                + "stride=\(stride)\npadding=\(pad)\nactivation=\(act.rawValue)\n"
            let config = try DarknetConfig(text: cfg, file: "<cfg>")
            let calibration = Int8Calibration(ranges: [0: range], method: "test", imageCount: 1, cfgFingerprint: config.fingerprint)
            let ref = reference(input, s, filters: filters, size: k, stride: stride, pad: pad, weights: w, bias: bias,
                                activation: act, input: Int8Quantization(min: range.lowerBound, max: range.upperBound))
            for level in KernelLevel.supported {
                let model = try Model(config: config, weights: weightsFile(bias + w),
                                      options: ModelOptions(gemm: .kernels, kernelLevel: level, precision: .int8, calibration: calibration))
                XCTAssertEqual(model.inference.steps.map(\.algorithm), ["int8"], "case \(t) \(level)")
                XCTAssertEqual(model.inspection.steps.map(\.algorithm), ["int8"], "case \(t) \(level)")
                XCTAssertEqual(model.plan.entries.map(\.precision), [.int8])
                for threads in [1, 2, 3] {
                    let label = "int8 case \(t) \(s) \(k)x\(k)/\(stride) \(act) \(level) threads \(threads)"
                    let n = try Network(model: model, threads: threads)
                    try n.forward(input)
                    assertIdentical(n.output(ofLayer: 0), ref, label)
                    let session = try Session(model: model, threads: threads)
                    try session.forward(input)
                    assertIdentical(try session.output(ofLayer: 0), ref, label + " (inference plan)")
                }
            }
        }
    }

    func testInt8ConvThenMaxPoolAndBatchNorm() throws {
        // A batch-normalized conv before a 2x2/2 max pool (the planner moves the epilogue to the
        // pool): against the FP32 naive conv + pool, within the quantization error, at every level
        // with the same bits at each.
        var rng = SeededRandom(seed: 32)
        let s = Shape(c: 3, h: 16, w: 20), filters = 8
        let bias = random(filters, &rng), w = random(filters * 27, &rng)
        let scale = random(filters, &rng, 0.5, 2), mean = random(filters, &rng), variance = random(filters, &rng, 0.1, 3)
        let cfg = "[net]\nwidth=\(s.w)\nheight=\(s.h)\nchannels=3\n\n[convolutional]\nbatch_normalize=1\nfilters=\(filters)\n"
            + "size=3\nstride=1\npad=1\nactivation=leaky\n[maxpool]\nsize=2\nstride=2\n"
        let config = try DarknetConfig(text: cfg, file: "<cfg>")
        let calibration = Int8Calibration(ranges: [0: 0...1], method: "test", imageCount: 1, cfgFingerprint: config.fingerprint)
        let input = random(s.count, &rng, 0, 1)
        let fp32 = try Model(config: config, weights: weightsFile(bias + scale + mean + variance + w))
        let reference = try Session(model: fp32, threads: 1)
        try reference.forward(input)
        let expected = Array(try reference.output(ofLayer: 1))
        var first: [Float]? = nil
        for level in KernelLevel.supported {
            let model = try Model(config: config, weights: weightsFile(bias + scale + mean + variance + w),
                                  options: ModelOptions(kernelLevel: level, precision: .int8, calibration: calibration))
            XCTAssertEqual(model.inference.steps.map(\.algorithm), ["int8", "maxpool+epilogue"], "\(level)")
            let session = try Session(model: model, threads: 2)
            try session.forward(input)
            let got = Array(try session.output(ofLayer: 1))
            let range = expected.map { abs($0) }.max()!
            let worst = zip(got, expected).map { abs($0 - $1) }.max()!
            XCTAssertLessThanOrEqual(worst, 0.02 * range, "\(level): INT8 within 2% of the output's range")
            XCTAssertGreaterThan(worst, 0, "\(level): INT8 is not FP32")
            if let first {
                XCTAssertEqual(zip(got, first).filter { $0.bitPattern != $1.bitPattern }.count, 0, "\(level): the same bits")
            } else {
                first = got
            }
        }
    }
}
