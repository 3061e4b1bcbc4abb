// Several 16-bit GEMMs in one model (KernelCapabilities.halves): their order (a tile GEMM first,
// then FP16 arithmetic, then BF16), the table's choice among them per layer, and, where the CPU
// has AMX and AVX-512 FP16, the plans INT8 and BF16 models get from it.
import XCTest
@_spi(Kernels) @testable import YOLOEngine
@testable import YOLOCore
import YOLOKernels

final class HalfChoiceTests: XCTestCase {
    /// The convolutions of PlanTests' small network: 0 (3x3 before a pool), 2, 4 (3x3), 5 (1x1).
    func convolutions() throws -> [ConvolutionalLayer] {
        try ParsedNetwork(config: DarknetConfig(text: PlanTests.cfg), options: ModelOptions()).layers.compactMap { $0.convolution }
    }

    func testTheTileGemmFirstThenFP16ThenBF16() throws {
        guard let set = KernelLevel.selected.kernelSet, let base = set.fp16Weights else {
            throw XCTSkip("this build has no FP16 kernels (Swift has no Float16 on macOS x86_64)")
        }
        let tile = base.replacingGemm(dot: "tile", requires: base.requires.union(.amx), gemm: base.gemm) { _, _, _, _, _, _, _, _, _, _ in }
        let plain = KernelCapabilities(kernelSet: set, ourKernels: true, halves: [.bf16: base, .fp16: base])
        XCTAssertEqual(plain.halfOrder, [.fp16, .bf16])
        XCTAssertNil(plain.tileHalf)
        let amx = KernelCapabilities(kernelSet: set, ourKernels: true, halves: [.bf16: tile, .fp16: base])
        XCTAssertEqual(amx.halfOrder, [.bf16, .fp16])
        XCTAssertEqual(amx.tileHalf, .bf16)
        XCTAssertEqual(amx.halfSummary, "\(base.gemm.level): tile, \(base.gemm.level): \(base.dot)")
        XCTAssertEqual(KernelCapabilities(kernelSet: set, ourKernels: true).halfOrder, [])
        XCTAssertNil(KernelCapabilities(kernelSet: set, ourKernels: true).halfSummary)
    }

    func testTheTableTakesTheFastestSixteenBitFormEachLayerHas() throws {
        let c = try convolutions()
        func table(_ conv: ConvolutionalLayer, _ candidates: [ConvAlgorithm], _ order: [Precision], tile: Precision?) -> ConvAlgorithm {
            ChoicePolicy.table(for: conv, candidates: candidates, halfOrder: order, tile: tile)
        }
        let (bf16, fp16) = (Precision.bf16, Precision.fp16)
        // The direct conv + pool has an FP16 form only: that one, whichever GEMM is faster.
        let pooled = [ConvAlgorithm.directPool, ConvAlgorithm(.directPool, fp16), .im2col, ConvAlgorithm(.im2col, bf16),
                      ConvAlgorithm(.im2col, fp16)]
        XCTAssertEqual(table(c[0], pooled, [bf16, fp16], tile: bf16), ConvAlgorithm(.directPool, fp16))
        // Without it: a tile GEMM's im2col rather than the FP32 direct conv + pool; vdpbf16ps's not.
        let noFP16 = [ConvAlgorithm.directPool, .im2col, ConvAlgorithm(.im2col, bf16)]
        XCTAssertEqual(table(c[0], noFP16, [bf16], tile: bf16), ConvAlgorithm(.im2col, bf16))
        XCTAssertEqual(table(c[0], noFP16, [bf16], tile: nil), .directPool)
        // A 1x1 layer: the faster GEMM's form.
        let pointwise = [ConvAlgorithm.gemm1x1, ConvAlgorithm(.gemm1x1, fp16), ConvAlgorithm(.gemm1x1, bf16)]
        XCTAssertEqual(table(c[3], pointwise, [bf16, fp16], tile: bf16), ConvAlgorithm(.gemm1x1, bf16))
        XCTAssertEqual(table(c[3], pointwise, [fp16, bf16], tile: nil), ConvAlgorithm(.gemm1x1, fp16))
        // One 16-bit GEMM: as before, its form of the FP32 choice.
        XCTAssertEqual(table(c[3], [.gemm1x1, ConvAlgorithm(.gemm1x1, bf16)], [bf16], tile: nil), ConvAlgorithm(.gemm1x1, bf16))
    }

    /// Where the tile precision has tap products: its im2col form for 3x3 stride-1 layers of up to
    /// `tapMaxChannels` input channels (over its Winograd F(2x2)), F(2x2) deeper, and not where a
    /// 16-bit direct conv + pool is a candidate; without taps, F(2x2) as before.
    func testTapProductsOverTheTilePrecisionsWinogradUpToTheirDepth() throws {
        func conv(_ channels: Int) throws -> ConvolutionalLayer {
            let cfg = "[net]\nwidth=13\nheight=13\nchannels=\(channels)\n\n[convolutional]\nfilters=8\nsize=3\nstride=1\npad=1\nactivation=leaky\n"
            return try XCTUnwrap(ParsedNetwork(config: DarknetConfig(text: cfg), options: ModelOptions()).layers.first?.convolution)
        }
        let bf16 = Precision.bf16
        let candidates = [ConvAlgorithm.im2col, .winograd2, .winograd4, ConvAlgorithm(.im2col, bf16), ConvAlgorithm(.winograd2, bf16)]
        func table(_ c: ConvolutionalLayer, taps: Bool, _ candidates: [ConvAlgorithm] = candidates) -> ConvAlgorithm {
            ChoicePolicy.table(for: c, candidates: candidates, halfOrder: [bf16], tile: bf16, tileTaps: taps)
        }
        let shallow = try conv(ChoicePolicy.tapMaxChannels), deep = try conv(ChoicePolicy.tapMaxChannels + 1)
        XCTAssertEqual(table(shallow, taps: true), ConvAlgorithm(.im2col, bf16))
        XCTAssertEqual(table(deep, taps: true), ConvAlgorithm(.winograd2, bf16))
        XCTAssertEqual(table(shallow, taps: false), ConvAlgorithm(.winograd2, bf16))
        // With a 16-bit direct conv + pool among them, the choice is left to its rules.
        let direct = candidates + [ConvAlgorithm(.directPool, .fp16)]
        XCTAssertNotEqual(table(shallow, taps: true, direct), ConvAlgorithm(.im2col, bf16))
    }

    /// At the amx level on a CPU with AVX-512 FP16 (Sapphire Rapids and later): a BF16 model's
    /// first layer (no BF16 there) FP16, the rest BF16 on tiles; an INT8 model's 3x3 layers left
    /// out of INT8 FP16 (the more exact), its 1x1 ones BF16 tiles; every one on tiles where asked
    /// for (`--int8-fallback bf16`), none with `fp16`.
    func testAtAMXTheTileGemmAndFP16Share() throws {
        guard KernelLevel.selected == .amx, let set = KernelLevel.amx.kernelSet, set.half(.fp16, on: HostCPU.features) != nil else {
            throw XCTSkip("needs the amx level and AVX-512 FP16 (\(KernelLevel.amx.unavailableReason ?? "YOLO_KERNEL_LEVEL or no AVX-512 FP16"))")
        }
        var ranges: [Int: ClosedRange<Float>] = [:]
        for l in [0, 2, 4, 5] { ranges[l] = l == 0 ? 0...1 : -0.5...4 }
        let table = Int8Calibration(ranges: ranges, method: "test", imageCount: 1, cfgFingerprint: Int8PlanTests.fingerprint,
                                    fp32Layers: [0, 5])
        let auto = try Model(cfgText: PlanTests.cfg, weights: Int8PlanTests.weights,
                             options: ModelOptions(planning: .table, precision: .int8, calibration: table))
        XCTAssertEqual(auto.inference.steps.map(\.algorithm).first, "direct+pool-fp16")
        XCTAssertEqual(auto.inference.steps.map(\.algorithm).last, "gemm1x1-bf16")
        var threeByThree = table
        threeByThree.fp32Layers = [0, 4, 5]
        let both = try Model(cfgText: PlanTests.cfg, weights: Int8PlanTests.weights,
                             options: ModelOptions(planning: .table, precision: .int8, calibration: threeByThree))
        let layer4 = try XCTUnwrap(both.inference.steps.first { $0.layers.lowerBound == 4 }?.algorithm)
        XCTAssertTrue(layer4.hasSuffix("-fp16"), "a 3x3 layer out of INT8: \(layer4)")
        XCTAssertEqual(both.inference.steps.map(\.algorithm).last, "gemm1x1-bf16")
        var fp16Only = ModelOptions(planning: .table, precision: .int8, calibration: table)
        fp16Only.int8Fallback = .fp16
        XCTAssertEqual(try Model(cfgText: PlanTests.cfg, weights: Int8PlanTests.weights, options: fp16Only)
            .inference.steps.map(\.algorithm).last, "gemm1x1-fp16")
        var tiles = ModelOptions(planning: .table, precision: .int8, calibration: table)
        tiles.int8Fallback = .bf16
        let int8 = try Model(cfgText: PlanTests.cfg, weights: Int8PlanTests.weights, options: tiles)
        XCTAssertEqual(int8.inference.steps.map(\.algorithm).last, "gemm1x1-bf16")
        XCTAssertTrue(int8.plan.halfGemm?.hasPrefix("amx") == true, int8.plan.halfGemm ?? "nil")
        let bf16 = try Model(cfgText: PlanTests.cfg, weights: Int8PlanTests.weights, options: ModelOptions(planning: .table, precision: .bf16))
        XCTAssertEqual(bf16.inference.steps.first?.algorithm, "direct+pool-fp16")
        // (Every convolution after the first; the 3x3 ones as tap products, each with its pool after it.)
        XCTAssertTrue(bf16.inference.steps.dropFirst().allSatisfy { $0.algorithm.contains("-bf16") || $0.convKernel == nil },
                      "\(bf16.inference.steps.map(\.algorithm))")
        XCTAssertTrue(bf16.inference.steps.contains { $0.convKernel is BF16TapConvolution }, "\(bf16.inference.steps.map(\.algorithm))")
        // Their heads stay near those of the same models with FP32 for the 16-bit layers.
        var strict = ModelOptions(planning: .table, precision: .int8, calibration: table)
        strict.int8Fallback = .fp32
        let pairs = [(int8, try Model(cfgText: PlanTests.cfg, weights: Int8PlanTests.weights, options: strict)),
                     (bf16, try Model(cfgText: PlanTests.cfg, weights: Int8PlanTests.weights))]
        for (model, reference) in pairs {
            let a = try PlanTests.heads(reference, threads: 1), b = try PlanTests.heads(model, threads: 1)
            let range = a.map { abs($0) }.max()!, apart = zip(a, b).map { abs($0 - $1) }.max()!
            XCTAssertGreaterThan(apart, 0, "16-bit products: \(model.inference.steps.map(\.algorithm))")
            XCTAssertLessThan(apart, 0.02 * range, "\(model.inference.steps.map(\.algorithm))")
        }
    }
}
