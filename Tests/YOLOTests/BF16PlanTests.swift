import Foundation
import XCTest
import YOLOReference
@testable @_spi(Kernels) import YOLOEngine
@testable import YOLOCore
import YOLOKernels

/// `precision .bf16` through the planner: the BF16 forms of im2col, 1x1 and Winograd F(2x2) where
/// the CPU has AVX-512 BF16, FP32 for the rest (the direct conv + pool), both reported; the heads
/// near FP32's; measured plans time the BF16 candidates and cache apart from FP32; and a clear
/// one-line refusal where the CPU or the kernel level has no BF16 GEMM.
final class BF16PlanTests: XCTestCase {
    func model(_ options: ModelOptions) throws(YOLOError) -> Model {
        try Model(cfgText: PlanTests.cfg, weights: Int8PlanTests.weights, options: options)
    }

    func heads(_ model: Model) throws -> [Float] { try PlanTests.heads(model, threads: 2) }

    func requireBF16() throws {
        guard KernelLevel.selected.bf16Kernels != nil else {
            throw XCTSkip("this CPU (or YOLO_KERNEL_LEVEL) has no BF16 GEMM (AVX-512 BF16): --precision bf16 is refused here")
        }
    }

    func testBF16WhereItHasAFormFP32Elsewhere() throws {
        try requireBF16()
        // Layers: 0 conv 3x3 3->32 + pool (direct+pool), 2 conv 32->32 at 32x32 (F(4x4) in FP32),
        // 4 at 16x16 (F(2x2)), 5 a 1x1. Layer 0 (no BF16: it reads the image) in FP32, or FP16
        // where the CPU computes in FP16.
        let fp16 = KernelLevel.selected.kernelSet?.half(.fp16, on: HostCPU.features) != nil
        let (direct, first) = fp16 ? ("direct+pool-fp16", "im2col-fp16") : ("direct+pool", "im2col")
        // (Where BF16 has tap products, amx, they take the 3x3 layers: im2col-bf16, a pool after it.)
        let taps = KernelLevel.selected.bf16Kernels?.taps != nil
        let bf16 = try model(ModelOptions(precision: .bf16))
        XCTAssertEqual(bf16.inference.steps.map(\.algorithm),
                       taps ? [direct, "im2col-bf16", "maxpool+epilogue", "im2col-bf16", "gemm1x1-bf16"]
                            : [direct, "winograd2-bf16+pool", "winograd2-bf16", "gemm1x1-bf16"])
        XCTAssertEqual(bf16.plan.entries.map(\.precision),
                       taps ? [fp16 ? .fp16 : .fp32, .bf16, .fp32, .bf16, .bf16] : [fp16 ? .fp16 : .fp32, .bf16, .bf16, .bf16])
        XCTAssertTrue(bf16.plan.description.contains("0-1 conv 3x3/1 3x64x64 -> 32x64x64 + maxpool 2x2/2 32x64x64 -> 32x32x32: "
                                                     + (fp16 ? "direct+pool-fp16 (table)" : "direct+pool, fp32 (table)")),
                      bf16.plan.description)
        XCTAssertTrue(bf16.plan.description.contains("5 conv 1x1/1 32x16x16 -> 18x16x16: gemm1x1-bf16 (table)"), bf16.plan.description)
        // The plan that keeps every output: layer 0 alone, not in BF16 (it reads the image).
        let three = taps ? "im2col-bf16" : "winograd2-bf16"
        XCTAssertEqual(bf16.inspection.steps.map(\.algorithm), [first, "maxpool", three, "maxpool", three, "gemm1x1-bf16"])
        // FP32 by default; without Winograd, im2col in BF16.
        let fp32 = try model(ModelOptions())
        XCTAssertFalse(fp32.inference.steps.contains { $0.algorithm.hasSuffix("-bf16") })
        XCTAssertFalse(fp32.plan.description.contains(", fp32"))
        let im2col = try model(ModelOptions(convolution: .im2col, precision: .bf16))
        XCTAssertEqual(im2col.inference.steps.map(\.algorithm), [direct, "im2col-bf16", "maxpool+epilogue", "im2col-bf16", "gemm1x1-bf16"])
        // Heads near FP32's (bfloat16 keeps 8 bits of mantissa), not equal; the same with OpenBLAS
        // computing the FP32 GEMMs.
        let reference = try heads(fp32)
        let range = reference.map { abs($0) }.max()!
        for m in [bf16, im2col, try model(ModelOptions(gemm: .openBLAS, precision: .bf16))] {
            let worst = zip(reference, try heads(m)).map { abs($0 - $1) }.max()!
            XCTAssertGreaterThan(worst, 0, "\(m.inference.steps.map(\.algorithm))")
            XCTAssertLessThan(worst, 0.02 * range, "BF16 heads within 2% of the FP32 heads' range: \(m.inference.steps.map(\.algorithm))")
        }
        // An override may name a BF16 algorithm only with precision bf16.
        let forced = try model(ModelOptions(algorithms: [2: ConvAlgorithm(.im2col, .bf16), 4: .winograd2], precision: .bf16))
        XCTAssertEqual(forced.inference.steps.map(\.algorithm), [direct, "im2col-bf16", "maxpool+epilogue", "winograd2", "gemm1x1-bf16"])
        XCTAssertThrowsError(try model(ModelOptions(algorithms: [2: ConvAlgorithm(.im2col, .bf16)]))) {
            XCTAssertTrue("\($0)".contains("im2col-bf16 cannot compute layer 2"), "\($0)")
        }
    }

    /// No BF16 on the first layer (it reads the image: `ChoicePolicy.offers` says what it cost),
    /// in BF16 and INT8 models, whatever the GEMM: with OpenBLAS's (no direct conv + pool) the
    /// table took im2col-bf16 there before. A BF16 model computes it in FP32, or in FP16 where the
    /// CPU computes in FP16 (more exact than bfloat16).
    func testTheFirstLayerStaysFP32() throws {
        try requireBF16()
        let openBLAS = try model(ModelOptions(gemm: .openBLAS, planning: .table, precision: .bf16))
        let fp16 = KernelLevel.selected.kernelSet?.half(.fp16, on: HostCPU.features) != nil
        XCTAssertEqual(openBLAS.inference.steps.first?.algorithm, fp16 ? "im2col-fp16" : "im2col")
        XCTAssertEqual(openBLAS.plan.entries.first?.precision, fp16 ? .fp16 : .fp32)
        XCTAssertTrue(openBLAS.inference.steps.dropFirst().contains { $0.algorithm.hasSuffix("-bf16") })
        XCTAssertThrowsError(try model(ModelOptions(algorithms: [0: ConvAlgorithm(.im2col, .bf16)], precision: .bf16))) {
            XCTAssertTrue("\($0)".contains("im2col-bf16 cannot compute layer 0"), "\($0)")
        }
        // INT8 with layer 0 left out of INT8 (marked fp32) and BF16 for such layers.
        var ranges: [Int: ClosedRange<Float>] = [0: 0...1]
        for l in [2, 4, 5] { ranges[l] = -0.5...4 }
        var options = ModelOptions(gemm: .openBLAS, planning: .table)
        (options.precision, options.int8Fallback) = (.int8, .bf16)
        options.calibration = Int8Calibration(ranges: ranges, method: "test", imageCount: 1, cfgFingerprint: Int8PlanTests.fingerprint,
                                              fp32Layers: [0])
        let int8 = try Model(cfgText: PlanTests.cfg, weights: Int8PlanTests.weights, options: options)
        XCTAssertEqual(int8.inference.steps.first?.algorithm, "im2col")
    }

    func testMeasuredPlansTimeBF16CandidatesAndKeepThemApart() throws {
        try requireBF16()
        let directory = NSTemporaryDirectory() + "yolo-bf16-tests-\(getpid())-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let measured = try model(ModelOptions(planning: .measure(cacheDirectory: directory), tuningThreads: 1, precision: .bf16))
        let timed = measured.plan.entries.filter { $0.source == .measured }
        XCTAssertEqual(timed.count, 4)
        // Every layer but the first (which reads the image: FP32 only) times its BF16 forms.
        XCTAssertTrue(timed.dropFirst().allSatisfy { $0.timings.contains { $0.algorithm.hasSuffix("-bf16") && $0.milliseconds > 0 } },
                      "\(timed.map(\.timings))")
        XCTAssertFalse(timed[0].timings.contains { $0.algorithm.hasSuffix("-bf16") }, "\(timed[0].timings)")
        XCTAssertFalse(timed.contains { $0.timings.contains { $0.algorithm == "winograd4-bf16" } })
        let fp32 = try model(ModelOptions(planning: .cached(cacheDirectory: directory), tuningThreads: 1))
        XCTAssertEqual(fp32.plan.entries.first?.source, .table)
        XCTAssertNotEqual(fp32.plan.cacheFile, measured.plan.cacheFile)
        let again = try model(ModelOptions(planning: .cached(cacheDirectory: directory), tuningThreads: 1, precision: .bf16))
        XCTAssertEqual(again.plan.entries.first?.source, .cache)
        XCTAssertEqual(again.inference.steps.map(\.algorithm), measured.inference.steps.map(\.algorithm))
    }

    /// `.cached` without a stored plan (the tools' default before `yolo tune`): the table, with
    /// BF16 forms only where one probe GEMM measured BF16 clearly faster than FP32 on this CPU
    /// (HalfProbe; on an Emerald Rapids vdpbf16ps runs at half FP32's rate and it keeps FP32 on
    /// every layer, saying why); `.table` probes nothing.
    func testTheCachedPlansTableTakesBF16OnlyWhereItPays() throws {
        try requireBF16()
        XCTAssertTrue(HalfProbe.pays(half: 90, fp32: 100))
        XCTAssertFalse(HalfProbe.pays(half: 91, fp32: 100))
        XCTAssertFalse(HalfProbe.pays(half: 200, fp32: 100))
        XCTAssertTrue(HalfProbe.note(.bf16, half: .bf16, dot: "vdpbf16ps", half: 161, fp32: 100)
            .contains("bf16: the table keeps FP32 on every layer: on this CPU the bf16 GEMM (vdpbf16ps) took 1.61x the FP32 GEMM's time"))
        XCTAssertTrue(HalfProbe.note(.int8, half: .fp16, dot: "vfmadd231ph", half: 95, fp32: 100)
            .contains("int8: the table keeps FP32 on the layers not in INT8: on this CPU the fp16 GEMM (vfmadd231ph) took 0.95x"))
        let set = KernelLevel.selected.kernelSet!
        let t = HalfProbe.measure(half: try XCTUnwrap(KernelLevel.selected.bf16Kernels).gemm, fp32: set.gemm, rounds: 2)
        XCTAssertGreaterThan(t.half, 0)
        XCTAssertGreaterThan(t.fp32, 0)

        let directory = NSTemporaryDirectory() + "yolo-bf16-probe-\(getpid())-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let table = try model(ModelOptions(precision: .bf16))
        XCTAssertFalse(table.plan.warnings.contains { $0.contains("keeps FP32") }, "\(table.plan.warnings)")
        let fp32 = try model(ModelOptions(planning: .cached(cacheDirectory: directory), tuningThreads: 1))
        let cached = try model(ModelOptions(planning: .cached(cacheDirectory: directory), tuningThreads: 1, precision: .bf16))
        XCTAssertEqual(cached.plan.entries.first?.source, .table)
        let kept = cached.plan.warnings.filter { $0.contains("bf16: the table keeps FP32 on every layer") }
        if kept.isEmpty {
            XCTAssertEqual(cached.inference.steps.map(\.algorithm), table.inference.steps.map(\.algorithm))
            XCTAssertEqual(cached.plan.warnings, [])
        } else {
            XCTAssertEqual(kept.count, 1)
            XCTAssertEqual(cached.inference.steps.map(\.algorithm), fp32.inference.steps.map(\.algorithm))
            XCTAssertEqual(cached.inspection.steps.map(\.algorithm), fp32.inspection.steps.map(\.algorithm))
            XCTAssertTrue(cached.plan.entries.allSatisfy { $0.precision == .fp32 }, "\(cached.plan)")
        }
        print("BF16 probe on this CPU: \(t); cached plan: \(cached.inference.steps.map(\.algorithm)) \(kept)")
    }

    /// Without a BF16 GEMM, `precision bf16` is refused at load with one line naming what is
    /// missing: here a kernel level without BF16 kernels (any x86 CPU with AVX2), and on a CPU
    /// without AVX-512 BF16 the feature (`GemmKernelTests.testBF16NeedsTheFeature` fakes that CPU).
    func testRefusedWithoutTheBF16Kernels() throws {
        #if arch(x86_64)
        guard KernelLevel.supported.contains(.avx2) else { throw XCTSkip("no AVX2 level on this CPU") }
        XCTAssertThrowsError(try model(ModelOptions(kernelLevel: .avx2, precision: .bf16))) {
            let text = "\($0)"
            XCTAssertTrue(text.contains("precision bf16: kernel level avx2 has no BF16 kernels (avx512vnni")
                          || text.contains("precision bf16: this build has no BF16 kernels (Swift 6.0 cannot compile them")
                          || text.contains("precision bf16 needs a CPU with AVX-512 BF16 (avx512_bf16"), text)
            XCTAssertFalse(text.contains("\n"), text)
        }
        if !HostCPU.features.contains(.avx512BF16) {
            XCTAssertThrowsError(try model(ModelOptions(precision: .bf16))) {
                XCTAssertTrue("\($0)".contains("precision bf16 needs a CPU with AVX-512 BF16 (avx512_bf16"), "\($0)")
            }
        }
        #else
        XCTAssertThrowsError(try model(ModelOptions(precision: .bf16)))
        #endif
    }
}
