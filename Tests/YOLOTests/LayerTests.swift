import Foundation
import XCTest
@testable import YOLOEngine
@testable import YOLODetection
@testable import YOLOCore
import YOLOReference

/// Each layer type against a naive, obviously correct implementation, over tables of shapes.
/// Networks are built from cfg text and random weights, so the cfg parser, the weights
/// reader and batch-norm folding are exercised too.
final class LayerTests: XCTestCase {
    // MARK: helpers

    /// Darknet's convolutional layer (YOLOReference): convolution, batch norm, bias, activation.
    func naiveConv(_ x: [Float], _ s: Shape, filters: Int, size: Int, stride: Int, pad: Int, weights: [Float], bias: [Float],
                   bn: BatchNorm?, activation: String) throws -> Naive.Tensor {
        let act = try XCTUnwrap(NaiveActivation(rawValue: activation), "no naive reference for activation=\(activation)")
        let conv = Naive.convolution(Naive.Tensor(s, x), filters: filters, size: size, stride: stride, pad: pad, weights: weights,
                                     bias: bias, batchNorm: bn)
        return Naive.activate(conv, act, libm: libm)
    }

    func assertClose(_ a: UnsafeBufferPointer<Float>, _ b: [Float], tolerance: Float, _ what: String,
                     file: StaticString = #filePath, line: UInt = #line) {
        let result = compare(a, b, tolerance: tolerance)
        XCTAssertTrue(result.passed, "\(what): \(result)", file: file, line: line)
    }

    /// Every GEMM path this CPU can run: OpenBLAS (the reference) and our kernels at each level.
    static let backends: [(ModelOptions.GemmBackend, KernelLevel?)] =
        [(.openBLAS, nil)] + KernelLevel.supported.map { (.kernels, $0) }

    func net(_ s: Shape, _ body: String, weights: [Float], threads: Int = 1,
             options: ModelOptions = ModelOptions()) throws -> Network {
        let cfg = "[net]\nwidth=\(s.w)\nheight=\(s.h)\nchannels=\(s.c)\n\n" + body
        return try Network(cfgText: cfg, weights: weightsFile(weights), threads: threads, options: options)
    }

    // MARK: tests

    func testConvolutionMatchesNaive() throws {
        // (input, filters, size, stride, pad flag or explicit padding, batch norm, activation)
        let table: [(Shape, Int, Int, Int, String, Bool, String)] = [
            (Shape(c: 3, h: 13, w: 13), 5, 3, 1, "pad=1", true, "leaky"),
            (Shape(c: 4, h: 9, w: 7), 6, 3, 2, "pad=1", true, "leaky"),
            (Shape(c: 8, h: 6, w: 6), 4, 1, 1, "pad=1", false, "linear"),   // 1x1: pad=1 means 0
            (Shape(c: 2, h: 5, w: 5), 3, 1, 2, "pad=0", true, "relu"),
            (Shape(c: 3, h: 7, w: 11), 2, 5, 1, "pad=1", false, "logistic"),  // 5x5, 2 per side
            (Shape(c: 1, h: 1, w: 1), 3, 3, 1, "pad=1", true, "leaky"),
            (Shape(c: 5, h: 8, w: 9), 7, 3, 1, "padding=0", true, "leaky"),
            (Shape(c: 3, h: 10, w: 10), 4, 3, 2, "padding=2", false, "linear"),
            (Shape(c: 17, h: 13, w: 13), 33, 3, 1, "pad=1", true, "leaky"),
            (Shape(c: 2, h: 16, w: 15), 3, 2, 2, "pad=0", true, "leaky"),
            // Large enough for several im2col blocks (blocks of ~64K column floats).
            (Shape(c: 16, h: 30, w: 64), 8, 3, 1, "pad=1", true, "leaky"),
            (Shape(c: 16, h: 61, w: 90), 4, 3, 2, "pad=1", false, "linear"),
            // Winograd F(2x2, 3x3) candidates (3x3, stride 1, pad 1, >= 32 channels): odd and
            // tiny sizes (partial tiles), several blocks of tile rows.
            (Shape(c: 32, h: 7, w: 9), 5, 3, 1, "pad=1", true, "leaky"),
            (Shape(c: 40, h: 1, w: 1), 3, 3, 1, "pad=1", true, "linear"),
            (Shape(c: 32, h: 2, w: 3), 4, 3, 1, "pad=1", false, "relu"),
            (Shape(c: 32, h: 64, w: 66), 6, 3, 1, "pad=1", true, "leaky"),
            // F(4x4, 3x3) (24x24 and more): sizes that are not multiples of 4 (partial tiles).
            (Shape(c: 65, h: 25, w: 27), 7, 3, 1, "pad=1", true, "leaky"),
            (Shape(c: 64, h: 26, w: 26), 16, 3, 1, "pad=1", false, "linear"),
            (Shape(c: 70, h: 31, w: 24), 3, 3, 1, "pad=1", true, "relu"),
            (Shape(c: 48, h: 23, w: 26), 16, 3, 1, "pad=1", false, "linear"),   // F(2x2): a small map
        ]
        var rng = SeededRandom(seed: 1)
        for (t, (s, filters, size, stride, padding, bn, act)) in table.enumerated() {
            let k = s.c * size * size
            let bias = rng.floats(filters), w = rng.floats(filters * k)
            let scale = rng.floats(filters, 0.5, 2), mean = rng.floats(filters), variance = rng.floats(filters, 0.1, 3)
            let floats = bias + (bn ? scale + mean + variance : []) + w
            let body = "[convolutional]\nbatch_normalize=\(bn ? 1 : 0)\nfilters=\(filters)\nsize=\(size)\nstride=\(stride)\n\(padding)\nactivation=\(act)\n"
            let input = rng.floats(s.count)
            let pad = padding == "pad=1" ? size / 2 : (padding == "pad=0" ? 0 : Int(padding.dropFirst(8))!)
            let ref = try naiveConv(input, s, filters: filters, size: size, stride: stride, pad: pad, weights: w, bias: bias,
                                bn: bn ? BatchNorm(scale: scale, mean: mean, variance: variance) : nil, activation: act)
            if t == 10 || t == 11 {
                let n = try net(s, body, weights: floats)
                XCTAssertGreaterThanOrEqual((n.model.inference.steps[0].convKernel as! Im2colGemm).blockCount, 3,
                                            "case \(t) should span several blocks")
            }
            if t == 15 {
                let n = try net(s, body, weights: floats)
                XCTAssertGreaterThanOrEqual((n.model.inference.steps[0].convKernel as! WinogradConv).blockCount, 2,
                                            "case \(t) should span several blocks")
            }
            // Every algorithm that can compute the layer, through the planner (an override), at every
            // GEMM path; the plan that keeps every output (Network) and the inference plan (Session).
            let algorithms = ConvAlgorithm.allCases.filter { $0 != .directPool && $0.precision == .fp32 }  // INT8: Int8ConvTests
            let layer = try net(s, body, weights: floats).model.impl[0].convolution!
            // Under qemu: the selected level at 1 and 3 threads, and OpenBLAS at 1 on the inputs under
            // 16K floats (scripts/arm-check.sh checks each arm64 level's GEMM; the thread split is
            // the same code at every count).
            let emulated = ProcessInfo.processInfo.environment["YOLO_TEST_EMULATED"] != nil
            let backends = !emulated ? LayerTests.backends
                : LayerTests.backends.filter { $0.1 == KernelLevel.selected || ($0.1 == nil && s.count < 16_384) }
            for algorithm in algorithms where algorithm.method.fits(layer, pooledBy: nil, in: algorithm.precision) {
              for backend in backends {
                let model = try Model(cfgText: "[net]\nwidth=\(s.w)\nheight=\(s.h)\nchannels=\(s.c)\n\n" + body,
                                      weights: weightsFile(floats),
                                      options: ModelOptions(gemm: backend.0, kernelLevel: backend.1, algorithms: [0: algorithm]))
                XCTAssertEqual(model.gemmKernels, backend.1?.rawValue ?? "OpenBLAS")
                XCTAssertEqual(model.inference.steps.map(\.algorithm), [algorithm.rawValue], "case \(t)")
                XCTAssertEqual(model.inspection.steps.map(\.algorithm), [algorithm.rawValue], "case \(t)")
                XCTAssertEqual(model.plan.entries.first?.source, .override)
                // F(4x4, 3x3)'s transforms (factors up to 8 and 1/24) round more than im2col or
                // F(2x2, 3x3); a wrong transform is off by O(1).
                let tolerance = algorithm == .winograd4 ? max(2e-4, 1e-6 * Float(k)) : max(2e-5, 5e-8 * Float(k))
                for threads in !emulated ? [1, 2, 3] : backend.1 == nil ? [1] : [1, 3] {
                    let label = "conv case \(t) \(s) threads \(threads) \(algorithm) \(model.gemmKernels)"
                    let n = try Network(model: model, threads: threads)
                    try n.forward(input)
                    XCTAssertEqual(n.layers[0].output, ref.shape, "case \(t)")
                    assertClose(n.output(ofLayer: 0), ref.values, tolerance: tolerance, label)
                    let session = try Session(model: model, threads: threads)
                    try session.forward(input)
                    assertClose(try session.output(ofLayer: 0), ref.values, tolerance: tolerance, label + " (inference plan)")
                }
              }
            }
            // The table: F(4x4, 3x3) from 24x24 and 32 channels up, F(2x2) below 24x24, im2col
            // below 32 channels, a plain GEMM for 1x1 layers.
            let table = try net(s, body, weights: floats).model.inference.steps[0].algorithm
            let expected: ConvAlgorithm = layer.isPointwise ? .gemm1x1 : !layer.is3x3Same || s.c < 32 ? .im2col
                : min(s.h, s.w) >= 24 ? .winograd4 : .winograd2
            XCTAssertEqual(table, expected.rawValue, "case \(t): the table's choice")
        }
    }

    func testMaxPoolMatchesDarknetSemantics() throws {
        // (input, size, stride, explicit padding or nil for the default size-1)
        let table: [(Shape, Int, Int, Int?)] = [
            (Shape(c: 3, h: 13, w: 13), 2, 1, nil),   // yolov3-tiny layer 11: keeps 13x13
            (Shape(c: 2, h: 7, w: 9), 2, 2, nil),     // odd sizes: last window is partial
            (Shape(c: 2, h: 26, w: 26), 2, 2, nil),
            (Shape(c: 4, h: 5, w: 5), 2, 1, nil),
            (Shape(c: 1, h: 9, w: 8), 3, 2, nil),
            (Shape(c: 2, h: 6, w: 7), 3, 1, 2),       // padding split 1 before, 1 after
            (Shape(c: 1, h: 8, w: 8), 2, 2, 0),
            (Shape(c: 3, h: 11, w: 10), 5, 1, 4),     // SPP-style
        ]
        var rng = SeededRandom(seed: 2)
        for (t, (s, size, stride, padding)) in table.enumerated() {
            // All-negative inputs would expose zero padding; mix signs.
            let input = rng.floats(s.count, -3, 1)
            let body = "[maxpool]\nsize=\(size)\nstride=\(stride)\n" + (padding.map { "padding=\($0)\n" } ?? "")
            let ref = Naive.maxPool(Naive.Tensor(s, input), size: size, stride: stride, padding: padding ?? size - 1)
            for threads in [1, 2] {
                let n = try net(s, body, weights: [], threads: threads)
                try n.forward(input)
                XCTAssertEqual(n.layers[0].output, ref.shape, "maxpool case \(t)")
                assertClose(n.output(ofLayer: 0), ref.values, tolerance: 0, "maxpool case \(t) \(s)")
            }
        }
        // The 13x13 quirk in numbers: the last column of a size-2 stride-1 pool is the max of
        // the last input column only, never a zero.
        let s = Shape(c: 1, h: 13, w: 13)
        let n = try net(s, "[maxpool]\nsize=2\nstride=1\n", weights: [])
        try n.forward([Float](repeating: -5, count: s.count))
        XCTAssertEqual(n.layers[0].output, s)
        XCTAssertEqual(n.output(ofLayer: 0)[12], -5)
        XCTAssertEqual(n.output(ofLayer: 0)[168], -5)
    }

    func testConvThenMaxPoolFusedMatchesNaive() throws {
        // The network defers a conv's bias + activation to the max pool after it; check the
        // pair against the naive conv followed by the naive pool, for each activation.
        var rng = SeededRandom(seed: 4)
        for (s, act, size, stride) in [(Shape(c: 3, h: 9, w: 7), "leaky", 2, 2), (Shape(c: 4, h: 13, w: 13), "leaky", 2, 1),
                                       (Shape(c: 32, h: 13, w: 13), "leaky", 2, 1), (Shape(c: 32, h: 11, w: 10), "leaky", 2, 2),
                                       (Shape(c: 2, h: 8, w: 8), "logistic", 3, 2), (Shape(c: 2, h: 6, w: 5), "relu", 2, 2)] {
            let filters = 5, k = s.c * 9
            let bias = rng.floats(filters), w = rng.floats(filters * k)
            let scale = rng.floats(filters, 0.5, 2), mean = rng.floats(filters), variance = rng.floats(filters, 0.1, 3)
            let body = "[convolutional]\nbatch_normalize=1\nfilters=\(filters)\nsize=3\nstride=1\npad=1\nactivation=\(act)\n[maxpool]\nsize=\(size)\nstride=\(stride)\n"
            let input = rng.floats(s.count)
            let conv = try naiveConv(input, s, filters: filters, size: 3, stride: 1, pad: 1, weights: w, bias: bias,
                                     bn: BatchNorm(scale: scale, mean: mean, variance: variance), activation: act)
            let ref = Naive.maxPool(conv, size: size, stride: stride, padding: size - 1)
            for threads in [1, 2] {
                let floats = bias + scale + mean + variance + w
                let n = try net(s, body, weights: floats, threads: threads)
                XCTAssertTrue(n.model.inference.steps.contains { ["maxpool+epilogue", "direct+pool"].contains($0.algorithm) || $0.algorithm.hasSuffix("+pool") },
                              "fused by default: \(n.model.inference.steps.map(\.algorithm))")
                // The inference plan (fused): the pool's output is the network's, kept.
                let session = try Session(model: n.model, threads: threads)
                try session.forward(input)
                assertClose(try session.output(ofLayer: 1), ref.values, tolerance: 2e-5, "conv+maxpool \(s) \(act) fused")
                // Keeping every output, nothing is fused: the conv's exact output, then the pool.
                try n.forward(input)
                assertClose(n.output(ofLayer: 0), conv.values, tolerance: 2e-5, "conv \(s) \(act) kept")
                assertClose(n.output(ofLayer: 1), ref.values, tolerance: 2e-5, "conv+maxpool \(s) \(act) kept")
                let unfused = try net(s, body, weights: floats, threads: threads, options: ModelOptions(fusesLayers: false))
                XCTAssertEqual(unfused.model.inference.steps.map(\.algorithm).last, "maxpool", "not fused")
                let plain = try Session(model: unfused.model, threads: threads)
                try plain.forward(input)
                assertClose(try plain.output(ofLayer: 1), ref.values, tolerance: 2e-5, "conv+maxpool \(s) \(act) unfused")
            }
        }
    }

    func testDirectConvAbsorbsItsMaxPoolInSessions() throws {
        // A 3x3 conv with few input channels runs our direct kernel; followed by a 2x2/2 max pool
        // of an even-sized map, a session that does not keep every output computes the pooled
        // map in one pass (the conv's full-size output is never written). Check it against the
        // naive conv + pool at every kernel level and thread count, with filter counts around
        // the kernel's blocks of 8 and widths around its vectors.
        var rng = SeededRandom(seed: 7)
        for (s, filters, act) in [(Shape(c: 3, h: 16, w: 20), 5, "leaky"), (Shape(c: 4, h: 8, w: 34), 16, "leaky"),
                                  (Shape(c: 1, h: 2, w: 2), 9, "relu"), (Shape(c: 3, h: 40, w: 66), 17, "linear"),
                                  (Shape(c: 2, h: 6, w: 64), 8, "logistic")] {
            let k = s.c * 9
            let bias = rng.floats(filters), w = rng.floats(filters * k)
            let scale = rng.floats(filters, 0.5, 2), mean = rng.floats(filters), variance = rng.floats(filters, 0.1, 3)
            let body = "[convolutional]\nbatch_normalize=1\nfilters=\(filters)\nsize=3\nstride=1\npad=1\nactivation=\(act)\n[maxpool]\nsize=2\nstride=2\n"
            let input = rng.floats(s.count)
            let conv = try naiveConv(input, s, filters: filters, size: 3, stride: 1, pad: 1, weights: w, bias: bias,
                                     bn: BatchNorm(scale: scale, mean: mean, variance: variance), activation: act)
            let ref = Naive.maxPool(conv, size: 2, stride: 2, padding: 1)
            for level in KernelLevel.supported {
                let model = try Model(cfgText: "[net]\nwidth=\(s.w)\nheight=\(s.h)\nchannels=\(s.c)\n\n" + body,
                                      weights: weightsFile(bias + scale + mean + variance + w),
                                      options: ModelOptions(gemm: .kernels, kernelLevel: level))
                XCTAssertEqual(model.inference.steps.map(\.algorithm), ["direct+pool"], "\(s) \(level): the conv computes the pool")
                XCTAssertEqual(model.inspection.steps.map(\.algorithm), ["im2col", "maxpool"], "\(s) \(level): kept outputs")
                for threads in [1, 2, 3] {
                    let session = try Session(model: model, threads: threads)
                    try session.forward(input)
                    let pooled = try session.output(ofLayer: 1)
                    assertClose(pooled, ref.values, tolerance: 2e-5, "direct conv+pool \(s) \(act) \(level) threads \(threads)")
                    XCTAssertThrowsError(try session.output(ofLayer: 0), "the conv's own output is never written")
                    // Keeping every output, the conv writes its output and the pool runs.
                    let all = try Session(model: model, threads: threads, keepsAllOutputs: true)
                    try all.forward(input)
                    assertClose(try all.output(ofLayer: 1), ref.values, tolerance: 2e-5, "kept: pool \(s) \(level)")
                }
            }
            // Two conv + pool pairs in a row (yolov3-tiny's first four layers): the second conv
            // writes its pool's output while it still reads the first pool's, so the two buffers
            // must not share memory.
            let filters2 = 6
            let bias2 = rng.floats(filters2), w2 = rng.floats(filters2 * filters * 9)
            let body2 = body + "[convolutional]\nfilters=\(filters2)\nsize=3\nstride=1\npad=1\nactivation=leaky\n[maxpool]\nsize=2\nstride=2\n"
            let conv2 = try naiveConv(ref.values, ref.shape, filters: filters2, size: 3, stride: 1, pad: 1, weights: w2, bias: bias2,
                                      bn: nil, activation: "leaky")
            if ref.shape.h % 2 == 0 && ref.shape.w % 2 == 0 {
                let ref2 = Naive.maxPool(conv2, size: 2, stride: 2, padding: 1)
                let chain = try Model(cfgText: "[net]\nwidth=\(s.w)\nheight=\(s.h)\nchannels=\(s.c)\n\n" + body2,
                                      weights: weightsFile(bias + scale + mean + variance + w + bias2 + w2))
                XCTAssertEqual(chain.inference.steps.map(\.algorithm), ["direct+pool", "direct+pool"], "\(s): both pairs fused")
                for threads in [1, 2] {
                    let session = try Session(model: chain, threads: threads)
                    try session.forward(input)
                    assertClose(try session.output(ofLayer: 3), ref2.values, tolerance: 5e-5, "two conv+pool pairs \(s) threads \(threads)")
                }
            }
            // With OpenBLAS (the reference path) the conv is im2col + sgemm and nothing is absorbed.
            let reference = try Model(cfgText: "[net]\nwidth=\(s.w)\nheight=\(s.h)\nchannels=\(s.c)\n\n" + body,
                                      weights: weightsFile(bias + scale + mean + variance + w), options: ModelOptions(gemm: .openBLAS))
            XCTAssertEqual(reference.inference.steps.map(\.algorithm), ["im2col", "maxpool+epilogue"])
        }
    }

    func testUpsampleRouteShortcutAndYOLO() throws {
        var rng = SeededRandom(seed: 3)
        for (s, stride) in [(Shape(c: 3, h: 5, w: 4), 2), (Shape(c: 2, h: 3, w: 3), 3), (Shape(c: 1, h: 1, w: 1), 2)] {
            let input = rng.floats(s.count)
            let n = try net(s, "[upsample]\nstride=\(stride)\n", weights: [])
            try n.forward(input)
            let ref = Naive.upsample(Naive.Tensor(s, input), stride: stride)
            XCTAssertEqual(n.layers[0].output, ref.shape)
            assertClose(n.output(ofLayer: 0), ref.values, tolerance: 0, "upsample \(s) x\(stride)")
        }

        // route of two inputs (negative and absolute indices), then a single-input route, then shortcut.
        let s = Shape(c: 2, h: 4, w: 3)
        let body = """
        [maxpool]
        size=1
        stride=1
        [upsample]
        stride=1
        scale=2
        [route]
        layers=-1, 0
        [route]
        layers=-3
        [shortcut]
        from=0
        activation=leaky
        [route]
        layers=2
        groups=2
        group_id=1
        """
        let input = rng.floats(s.count)
        let n = try net(s, body, weights: [])
        try n.forward(input)
        XCTAssertEqual(n.layers[2].output, Shape(c: 4, h: 4, w: 3))
        let doubled = input.map { $0 * 2 }
        assertClose(n.output(ofLayer: 2), doubled + input, tolerance: 0, "route -1,0: layer 1 then layer 0")
        assertClose(n.output(ofLayer: 3), input, tolerance: 0, "route -3")
        assertClose(n.output(ofLayer: 4), input.map { let v = $0 + $0; return v > 0 ? v : v * 0.1 }, tolerance: 0, "shortcut")
        assertClose(n.output(ofLayer: 5), input, tolerance: 0, "route groups=2 group_id=1: second half of layer 2's channels")

        // [yolo]: logistic on x, y, objectness and classes; tw, th raw.
        let ys = Shape(c: 2 * 7, h: 3, w: 2)  // 2 anchors x (2 classes + 5)
        let yin = rng.floats(ys.count, -4, 4)
        let yn = try net(ys, "[yolo]\nmask=0,1\nanchors=1,2,3,4,5,6\nclasses=2\nnum=3\n", weights: [])
        try yn.forward(yin)
        let ref = Naive.yolo(Naive.Tensor(ys, yin), anchors: 2, classes: 2, libm: libm)
        assertClose(yn.heads[0].activated, ref.values, tolerance: 0, "yolo activation")
        assertClose(yn.heads[0].raw, yin, tolerance: 0, "yolo raw")
        XCTAssertEqual(yn.heads[0].anchors.map(\.width), [1, 3])
    }
}
