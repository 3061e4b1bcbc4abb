import Foundation
import XCTest
import YOLOReference
@testable @_spi(Kernels) import YOLOEngine
@testable import YOLOCore
import YOLOKernels

/// `precision .fp16` through the planner: the FP16 forms of im2col, 1x1, Winograd F(2x2) and (with
/// FP16 arithmetic) the direct conv + pool, FP32 for the rest (F(4x4)), both reported; the heads near FP32's; measured plans
/// time the FP16 candidates and cache apart; where the CPU has no FP16 arithmetic, FP32 arithmetic
/// on FP16-stored weights, F(4x4) included. On 64-bit ARM with FP16 arithmetic (qemu's default CPU in scripts/arm-linux-check.sh)
/// with the real kernels; on x86 with the avx2 level's software model of them
/// (`ModelOptions.assumesFP16Arithmetic`).
final class FP16PlanTests: XCTestCase {
    /// Options for precision fp16 on this CPU: on x86, the avx2 level and its model.
    func fp16(_ options: ModelOptions = ModelOptions()) throws -> ModelOptions {
        var o = options
        o.precision = .fp16
        #if arch(x86_64)
        guard KernelLevel.supported.contains(.avx2) else { throw XCTSkip("no AVX2 on this CPU: no FP16 model") }
        o.kernelLevel = .avx2
        o.assumesFP16Arithmetic = true
        #else
        guard KernelLevel.selected.fp16Kernels != nil else {
            throw XCTSkip("this CPU (or YOLO_KERNEL_LEVEL) has no FP16 GEMM (FP16 arithmetic, asimdhp)")
        }
        #endif
        return o
    }

    /// With AVX-512 FP16 (Sapphire Rapids and later), `precision fp16` at the selected level
    /// computes in FP16 with vfmadd231ph: the forms of FP16 arithmetic (F(2x2), not F(4x4)), heads
    /// near the avx2 level's software model of the same sums.
    func testAVX512FP16ComputesInFP16() throws {
        #if arch(x86_64)
        guard KernelLevel.selected.kernelSet?.half(.fp16, on: HostCPU.features) != nil else {
            throw XCTSkip("this CPU (or YOLO_KERNEL_LEVEL) has no AVX-512 FP16")
        }
        let native = try model(ModelOptions(precision: .fp16))
        XCTAssertEqual(native.plan.halfGemm, "avx512fp16: vfmadd231ph")
        XCTAssertEqual(native.inference.steps.map(\.algorithm), ["direct+pool-fp16", "winograd2-fp16+pool", "winograd2-fp16", "gemm1x1-fp16"])
        let modelled = try model(try fp16())
        XCTAssertEqual(modelled.inference.steps.map(\.algorithm), native.inference.steps.map(\.algorithm))
        let reference = try heads(try model(ModelOptions()))
        let range = reference.map { abs($0) }.max()!
        let (a, b) = (try heads(native), try heads(modelled))
        let apart = zip(a, b).map { abs($0 - $1) }.max()!, fromFP32 = zip(reference, a).map { abs($0 - $1) }.max()!
        print("AVX-512 FP16 heads: from the software model \(apart / range), from FP32 \(fromFP32 / range) of the range")
        XCTAssertLessThan(apart, 0.01 * range, "vfmadd231ph's sums near the model's (the same FP16 sums, other rounding orders at the edges)")
        XCTAssertGreaterThan(fromFP32, 0, "FP16 arithmetic, not FP32")
        #else
        throw XCTSkip("x86 only")
        #endif
    }

    func model(_ options: ModelOptions) throws -> Model {
        try Model(cfgText: PlanTests.cfg, weights: Int8PlanTests.weights, options: options)
    }

    func heads(_ model: Model) throws -> [Float] { try PlanTests.heads(model, threads: 2) }

    func testFP16WhereItHasAFormFP32Elsewhere() throws {
        // Layers: 0 conv 3x3 3->32 + pool (direct+pool), 2 conv 32->32 at 32x32 (F(4x4) in FP32),
        // 4 at 16x16 (F(2x2)), 5 a 1x1.
        let half = try model(try fp16())
        XCTAssertEqual(half.inference.steps.map(\.algorithm),
                       ["direct+pool-fp16", "winograd2-fp16+pool", "winograd2-fp16", "gemm1x1-fp16"])
        XCTAssertEqual(half.plan.entries.map(\.precision), [.fp16, .fp16, .fp16, .fp16])
        XCTAssertTrue(half.plan.description.contains("0-1 conv 3x3/1 3x64x64 -> 32x64x64 + maxpool 2x2/2 32x64x64 -> 32x32x32: direct+pool-fp16 (table)"),
                      half.plan.description)
        XCTAssertTrue(half.plan.description.contains("5 conv 1x1/1 32x16x16 -> 18x16x16: gemm1x1-fp16 (table)"), half.plan.description)
        XCTAssertEqual(half.inspection.steps.map(\.algorithm), ["im2col-fp16", "maxpool", "winograd2-fp16", "maxpool", "winograd2-fp16", "gemm1x1-fp16"])
        // Without Winograd, im2col in FP16; F(2x2) only, the same as the default.
        let im2col = try model(try fp16(ModelOptions(convolution: .im2col)))
        XCTAssertEqual(im2col.inference.steps.map(\.algorithm), ["direct+pool-fp16", "im2col-fp16", "maxpool+epilogue", "im2col-fp16", "gemm1x1-fp16"])
        let small = try model(try fp16(ModelOptions(convolution: .winograd2)))
        XCTAssertEqual(small.inference.steps.map(\.algorithm), ["direct+pool-fp16", "winograd2-fp16+pool", "winograd2-fp16", "gemm1x1-fp16"])
        // Heads near FP32's (11-bit significands), not equal; also with OpenBLAS for the FP32 GEMMs.
        var fp32Options = ModelOptions()
        fp32Options.kernelLevel = try fp16().kernelLevel
        let reference = try heads(try model(fp32Options))
        let range = reference.map { abs($0) }.max()!
        var blas = try fp16()
        blas.gemm = .openBLAS
        for m in [half, im2col, small, try model(blas)] {
            let worst = zip(reference, try heads(m)).map { abs($0 - $1) }.max()!
            XCTAssertGreaterThan(worst, 0, "\(m.inference.steps.map(\.algorithm))")
            XCTAssertLessThan(worst, 0.005 * range, "FP16 heads within 0.5% of the FP32 heads' range: \(m.inference.steps.map(\.algorithm))")
        }
        // An override may name an FP16 algorithm only with precision fp16.
        let forced = try model(try fp16(ModelOptions(algorithms: [0: .directPool, 2: ConvAlgorithm(.im2col, .fp16), 4: .winograd2])))
        XCTAssertEqual(forced.inference.steps.map(\.algorithm), ["direct+pool", "im2col-fp16", "maxpool+epilogue", "winograd2", "gemm1x1-fp16"])
        XCTAssertThrowsError(try model(ModelOptions(algorithms: [0: ConvAlgorithm(.directPool, .fp16)]))) {
            XCTAssertTrue("\($0)".contains("direct+pool-fp16 cannot compute layer 0"), "\($0)")
        }
        XCTAssertThrowsError(try model(ModelOptions(algorithms: [2: ConvAlgorithm(.winograd2, .fp16)]))) {
            XCTAssertTrue("\($0)".contains("winograd2-fp16 cannot compute layer 2"), "\($0)")
        }
        XCTAssertThrowsError(try model(try fp16(ModelOptions(algorithms: [2: ConvAlgorithm(.winograd4, .fp16)])))) {
            XCTAssertTrue("\($0)".contains("winograd4-fp16 cannot compute layer 2"), "F(4x4) has no FP16-arithmetic form: \($0)")
        }
        XCTAssertEqual(half.plan.halfGemm?.hasSuffix(": fmla .8h"), true, "\(half.plan.halfGemm ?? "nil")")
    }

    func testMeasuredPlansTimeFP16CandidatesAndKeepThemApart() throws {
        let directory = NSTemporaryDirectory() + "yolo-fp16-tests-\(getpid())-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let measured = try model(try fp16(ModelOptions(planning: .measure(cacheDirectory: directory), tuningThreads: 1)))
        let timed = measured.plan.entries.filter { $0.source == .measured }
        XCTAssertEqual(timed.count, 4)
        XCTAssertTrue(timed.allSatisfy { $0.timings.contains { $0.algorithm.hasSuffix("-fp16") && $0.milliseconds > 0 } },
                      "\(timed.map(\.timings))")
        var fp32Options = ModelOptions(planning: .cached(cacheDirectory: directory), tuningThreads: 1)
        fp32Options.kernelLevel = measured.options.kernelLevel
        let fp32 = try model(fp32Options)
        XCTAssertEqual(fp32.plan.entries.first?.source, .table)
        XCTAssertNotEqual(fp32.plan.cacheFile, measured.plan.cacheFile)
        let again = try model(try fp16(ModelOptions(planning: .cached(cacheDirectory: directory), tuningThreads: 1)))
        XCTAssertEqual(again.plan.entries.first?.source, .cache)
        XCTAssertEqual(again.inference.steps.map(\.algorithm), measured.inference.steps.map(\.algorithm))
    }

    /// A level at which `precision fp16` stores the weights only: on ARM neon (below dotprod); on
    /// x86 the selected one (nil), or avx512 where the selected one computes in FP16 (AVX-512 FP16).
    static var weightsOnlyLevel: KernelLevel? {
        #if arch(x86_64)
        return KernelLevel.selected.kernelSet?.half(.fp16, on: HostCPU.features) == nil ? nil : .avx512
        #else
        return .neon
        #endif
    }

    /// Without FP16 arithmetic (x86 CPUs without AVX-512 FP16; on ARM a level below dotprod)
    /// `precision fp16` stores the weights in FP16 and computes in FP32: F(4x4) too, heads much
    /// nearer FP32's than FP16 arithmetic's, about half the parameter bytes.
    func testWithoutFP16ArithmeticTheWeightsAreStoredInFP16() throws {
        var options = ModelOptions(precision: .fp16), fp32Options = ModelOptions()
        if let level = FP16PlanTests.weightsOnlyLevel { (options.kernelLevel, fp32Options.kernelLevel) = (level, level) }
        let half = try model(options), fp32 = try model(fp32Options)
        XCTAssertEqual(half.inference.steps.map(\.algorithm),
                       ["direct+pool", "winograd4-fp16+pool", "winograd2-fp16", "gemm1x1-fp16"])
        XCTAssertEqual(fp32.inference.steps.map(\.algorithm),
                       ["direct+pool", "winograd4+pool", "winograd2", "gemm1x1"])
        XCTAssertEqual(half.plan.halfGemm, "\(half.gemmKernels)-fp16-weights: fp32 fma, fp16 weights")
        let reference = try heads(fp32)
        let range = reference.map { abs($0) }.max()!
        let worst = zip(reference, try heads(half)).map { abs($0 - $1) }.max()!
        XCTAssertGreaterThan(worst, 0)
        XCTAssertLessThan(worst, 0.002 * range, "FP16 weights, FP32 arithmetic: heads within 0.2% of FP32's range")
        if let arithmetic = try? model(try fp16()) {
            let heads16 = try heads(arithmetic)
            let worst16 = zip(reference, heads16).map { abs($0 - $1) }.max()!
            print("FP16 heads, largest difference from FP32's / range: weights only \(worst / range), FP16 arithmetic \(worst16 / range)")
            XCTAssertLessThan(worst, worst16, "FP32 arithmetic on FP16 weights nearer FP32 than FP16 arithmetic")
        }
        // The direct conv + pool (layer 0, 3 x 32 x 9 weights) stays FP32; the rest takes half.
        let ratio = Double(half.parameterBytes) / Double(fp32.parameterBytes)
        XCTAssertGreaterThan(ratio, 0.45)
        XCTAssertLessThan(ratio, 0.55)
    }
}
