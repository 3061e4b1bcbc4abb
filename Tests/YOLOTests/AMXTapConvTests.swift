import XCTest
import YOLOReference
@testable @_spi(Kernels) import YOLOEngine
@testable import YOLOCore
import YOLOKernels

/// The amx level's INT8 3x3 convolutions straight from padded planes (Int8TapConv, AMXTapConv):
/// taken by INT8 im2col's 3x3 stride-1 layers, with the floats of the avx512vnni level's im2col
/// + GEMM bit for bit (the same exact sums), 8-bit and 10-bit inputs, at 1-3 threads; shapes
/// around its blocks (32 filters, 32 or 16 pixels of padded rows, 256-pixel work items) and both
/// layouts (`TapConv.Layout`: a multiple of 16 groups, or the planes shifted).
final class AMXTapConvTests: XCTestCase {
    func config(_ s: Shape, filters: Int, activation: Activation) throws -> DarknetConfig {
        let cfg = "[net]\nwidth=\(s.w)\nheight=\(s.h)\nchannels=\(s.c)\n\n[convolutional]\nfilters=\(filters)\nsize=3\n"
            + "stride=1\npad=1\nactivation=\(activation.rawValue)\n"
        return try DarknetConfig(text: cfg, file: "<cfg>")
    }

    func testTapProductsGiveTheIm2colFloats() throws {
        _ = try AMXKernelTests.amxSet()
        var rng = SeededRandom(seed: 83)
        let cases: [(Shape, Int, Activation, Bool)] = [
            (Shape(c: 64, h: 7, w: 9), 48, .leaky, false), (Shape(c: 128, h: 13, w: 13), 64, .linear, true),
            (Shape(c: 64, h: 5, w: 30), 32, .leaky, true), (Shape(c: 192, h: 3, w: 17), 16, .linear, false),
            (Shape(c: 64, h: 20, w: 26), 40, .leaky, false), (Shape(c: 64, h: 1, w: 1), 33, .leaky, true),
            // Shifted planes (groups not a multiple of 16): 4, 8, 1, 5 and 20 groups.
            (Shape(c: 16, h: 12, w: 40), 32, .leaky, true), (Shape(c: 32, h: 9, w: 11), 64, .leaky, false),
            (Shape(c: 3, h: 6, w: 17), 16, .linear, false), (Shape(c: 18, h: 4, w: 5), 17, .leaky, true),
            (Shape(c: 80, h: 7, w: 7), 32, .leaky, false),
        ]
        for (s, filters, act, tenBit) in cases {
            let bias = rng.floats(filters), w = rng.floats(filters * s.c * 9), input = rng.floats(s.count, -1, 3)
            let config = try config(s, filters: filters, activation: act)
            let table = Int8Calibration(ranges: [0: -0.5...2.0], method: "test", imageCount: 1, cfgFingerprint: config.fingerprint,
                                        tenBitLayers: tenBit ? [0] : [])
            func run(_ level: KernelLevel, threads: Int) throws -> [Float] {
                let model = try Model(config: config, weights: weightsFile(bias + w),
                                      options: ModelOptions(gemm: .kernels, kernelLevel: level, algorithms: [0: ConvAlgorithm(.im2col, .int8)],
                                                            precision: .int8, calibration: table))
                let conv = try XCTUnwrap(model.inference.steps.first?.convKernel as? Int8Conv)
                XCTAssertEqual(conv.taps != nil, level == .amx, "\(s) \(level): tap products at the amx level only")
                let session = try Session(model: model, threads: threads)
                try session.forward(input)
                return Array(try session.output(ofLayer: 0))
            }
            let want = try run(.avx512VNNI, threads: 1)
            for threads in [1, 2, 3] {
                let got = try run(.amx, threads: threads)
                let bad = zip(got, want).filter { $0.bitPattern != $1.bitPattern }.count
                XCTAssertEqual(bad, 0, "\(s) \(filters) filters \(tenBit ? "10" : "8")-bit, \(threads) threads: \(bad) floats unlike im2col's")
            }
        }
    }

    /// Only 3x3 stride-1 padded layers take them.
    func testOtherLayersKeepTheColumnMatrix() throws {
        _ = try AMXKernelTests.amxSet()
        var rng = SeededRandom(seed: 89)
        for (s, size, stride) in [(Shape(c: 64, h: 8, w: 8), 3, 2), (Shape(c: 64, h: 8, w: 8), 1, 1)] {
            let cfg = "[net]\nwidth=\(s.w)\nheight=\(s.h)\nchannels=\(s.c)\n\n[convolutional]\nfilters=16\nsize=\(size)\n"
                + "stride=\(stride)\npad=1\nactivation=leaky\n"
            let config = try DarknetConfig(text: cfg, file: "<cfg>")
            let table = Int8Calibration(ranges: [0: -1...2], method: "test", imageCount: 1, cfgFingerprint: config.fingerprint)
            let model = try Model(config: config, weights: weightsFile(rng.floats(16) + rng.floats(16 * s.c * size * size)),
                                  options: ModelOptions(gemm: .kernels, kernelLevel: .amx, algorithms: [0: ConvAlgorithm(.im2col, .int8)],
                                                        precision: .int8, calibration: table))
            let conv = try XCTUnwrap(model.inference.steps.first?.convKernel as? Int8Conv)
            XCTAssertNil(conv.taps, "\(s) \(size)x\(size)/\(stride)")
        }
    }
}

/// The BF16 tap products (BF16TapConv) in a BF16 model's `im2col-bf16` layers at the amx level:
/// the same bfloat16 products as the avx512vnni level's vdpbf16ps GEMM over im2col, so within the
/// rounding of their FP32 sums' other order; both layouts, shapes around the blocks.
final class AMXBF16TapConvTests: XCTestCase {
    func testTapProductsGiveTheGemmsSums() throws {
        #if !compiler(>=6.1)
        throw XCTSkip("built by Swift 6.0, whose compiler crashes on the BF16 kernels: this build has none (KernelsAVX512BF16.swift)")
        #endif
        _ = try AMXKernelTests.amxSet()
        guard KernelLevel.avx512VNNI.kernelSet?.bf16 != nil else { throw XCTSkip("no vdpbf16ps GEMM to compare with") }
        var rng = SeededRandom(seed: 97)
        // (A 1x1 layer first: the policy keeps a model's first layer out of BF16.)
        for (s, filters) in [(Shape(c: 64, h: 9, w: 11), 48), (Shape(c: 32, h: 13, w: 13), 64), (Shape(c: 16, h: 12, w: 40), 32),
                             (Shape(c: 6, h: 5, w: 7), 17), (Shape(c: 96, h: 3, w: 30), 16), (Shape(c: 33, h: 4, w: 4), 8)] {
            let cfg = "[net]\nwidth=\(s.w)\nheight=\(s.h)\nchannels=3\n\n[convolutional]\nfilters=\(s.c)\nsize=1\nstride=1\npad=0\n"
                + "activation=linear\n\n[convolutional]\nfilters=\(filters)\nsize=3\nstride=1\npad=1\nactivation=leaky\n"
            let config = try DarknetConfig(text: cfg, file: "<cfg>")
            let weights = rng.floats(s.c) + rng.floats(s.c * 3) + rng.floats(filters) + rng.floats(filters * s.c * 9)
            let input = rng.floats(3 * s.h * s.w, -1, 1)
            func run(_ level: KernelLevel) throws -> [Float] {
                let model = try Model(config: config, weights: weightsFile(weights),
                                      options: ModelOptions(gemm: .kernels, kernelLevel: level, algorithms: [1: ConvAlgorithm(.im2col, .bf16)],
                                                            precision: .bf16))
                XCTAssertEqual(model.inference.steps.last?.algorithm, "im2col-bf16", "\(level)")
                XCTAssertEqual(model.inference.steps.last?.convKernel is BF16TapConvolution, level == .amx, "\(s) \(level)")
                let session = try Session(model: model, threads: 2)
                try session.forward(input)
                return Array(try session.output(ofLayer: 1))
            }
            let got = try run(.amx), want = try run(.avx512VNNI)
            let top = want.map { abs($0) }.max()!, worst = zip(got, want).map { abs($0 - $1) }.max()!
            XCTAssertLessThanOrEqual(worst, 1e-5 * top, "\(s) \(filters) filters")
        }
    }
}

extension AMXBF16TapConvTests {
    /// The pair planes: every word of the layout's planes written (the shifted layout's planes past
    /// 3 x groups zeroed: a NaN left there times a weight of zero would be NaN), each pixel the
    /// bfloat16 pair of its two channels, shifted by its copy's kx, zero round it. Failed before:
    /// the planes past 3 x groups kept what was there.
    func testPairPlanesWriteEveryWordOfTheLayout() throws {
        #if !compiler(>=6.1)
        throw XCTSkip("built by Swift 6.0, whose compiler crashes on the BF16 kernels: this build has none (KernelsAVX512BF16.swift)")
        #endif
        let set = try AMXKernelTests.amxSet()
        let taps = try XCTUnwrap(set.bf16?.taps, "the amx level's BF16 kernels have tap products")
        for (c, h, w) in [(16, 5, 7), (3, 4, 19), (64, 3, 3)] {
            let layout = TapConv.Layout(groups: (c + 1) / 2), stride = TapConv.planeStride(height: h, width: w)
            var rng = SeededRandom(seed: UInt64(c))
            let src = rng.floats(c * h * w, -2, 2)
            var dst = [UInt32](repeating: 0xFFFF_FFFF, count: layout.planes * stride)
            dst.withUnsafeMutableBufferPointer { taps.planes(src, c, h, w, 0..<TapConv.planeJobs(layout), stride, $0.baseAddress!) }
            XCTAssertFalse(dst.contains(0xFFFF_FFFF), "\(c) channels: a word left unwritten")
            let wp = w + 2
            for kx in 0..<(layout.shifted ? 3 : 1) {
                for j in 0..<layout.groups {
                    let plane = Array(dst[(kx * layout.groups + j) * stride..<(kx * layout.groups + j + 1) * stride])
                    for y in 0..<h + 2 {
                        for x in 0..<wp where (y * wp + x - kx) >= 0 {
                            let inside = (1...h).contains(y) && (1...w).contains(x)
                            func bits(_ ch: Int) -> UInt32 { ch < c ? UInt32(bfloat16Bits(src[(ch * h + y - 1) * w + x - 1])) : 0 }
                            let want = inside ? bits(2 * j) | bits(2 * j + 1) << 16 : 0
                            XCTAssertEqual(plane[y * wp + x - kx], want, "\(c) channels, copy \(kx), pair \(j), (\(y), \(x))")
                        }
                    }
                }
            }
        }
    }
}

extension AMXTapConvTests {
    /// At the amx level `direct+pool-int8` is the tap products with the pool in their store (the
    /// 10-bit sums and their pooled floats checked in DirectConvPairsTests at every level): the
    /// pooled floats of INT8 im2col + max pool bit for bit, 8 and 10 bits, filters past a block of 32.
    func testPooledTapProductsAreIm2colPooled() throws {
        _ = try AMXKernelTests.amxSet()
        var rng = SeededRandom(seed: 101)
        for (s, filters, tenBit) in [(Shape(c: 16, h: 12, w: 40), 48, true), (Shape(c: 16, h: 6, w: 18), 33, false),
                                     (Shape(c: 8, h: 4, w: 34), 7, true)] {
            let cfg = "[net]\nwidth=\(s.w)\nheight=\(s.h)\nchannels=\(s.c)\n\n[convolutional]\nfilters=\(filters)\nsize=3\n"
                + "stride=1\npad=1\nactivation=leaky\n\n[maxpool]\nsize=2\nstride=2\n"
            let config = try DarknetConfig(text: cfg, file: "<cfg>")
            let table = Int8Calibration(ranges: [0: -0.5...2.0], method: "test", imageCount: 1, cfgFingerprint: config.fingerprint,
                                        tenBitLayers: tenBit ? [0] : [])
            let weights = rng.floats(filters) + rng.floats(filters * s.c * 9), input = rng.floats(s.count, -1, 3)
            func run(_ a: ConvAlgorithm) throws -> [Float] {
                let model = try Model(config: config, weights: weightsFile(weights),
                                      options: ModelOptions(gemm: .kernels, kernelLevel: .amx, algorithms: [0: a], precision: .int8,
                                                            calibration: table))
                XCTAssertEqual((model.inference.steps.first?.convKernel as? Int8Conv)?.taps != nil, true, "\(s) \(a)")
                let session = try Session(model: model, threads: 3)
                try session.forward(input)
                return Array(try session.output(ofLayer: 1))
            }
            let pooled = try run(ConvAlgorithm(.directPool, .int8)), im2col = try run(ConvAlgorithm(.im2col, .int8))
            XCTAssertEqual(pooled.map(\.bitPattern), im2col.map(\.bitPattern), "\(s) \(filters) filters, \(tenBit ? 10 : 8) bits")
        }
    }
}
