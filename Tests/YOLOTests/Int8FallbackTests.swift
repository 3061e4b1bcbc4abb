import Foundation
import XCTest
import YOLOReference
@testable @_spi(Kernels) import YOLOEngine
@testable import YOLOCore
import YOLOKernels

/// `ModelOptions.int8Fallback`: the arithmetic of an INT8 model's layers that are not in INT8.
/// `.auto` takes FP16 arithmetic where the CPU has it (on AMX too: the more exact), else BF16
/// where it has AVX-512 BF16 (a Zen 4: no FP16 arithmetic), else FP32; `.bf16` and `.fp16` ask for one and are refused with one
/// line where the CPU or level lacks it; `.fp32` keeps FP32. The plan cache keys them apart.
final class Int8FallbackTests: XCTestCase {
    func model(_ options: ModelOptions) throws(YOLOError) -> Model {
        try Model(cfgText: PlanTests.cfg, weights: Int8PlanTests.weights, options: options)
    }

    /// Layers 0 and 5 calibrated, 2 and 4 not (2 marked fp32).
    var options: ModelOptions {
        var ranges: [Int: ClosedRange<Float>] = [:]
        for l in [0, 5] { ranges[l] = l == 0 ? 0...1 : -0.5...4 }
        let table = Int8Calibration(ranges: ranges, method: "test", imageCount: 1, cfgFingerprint: Int8PlanTests.fingerprint,
                                    fp32Layers: [2])
        return ModelOptions(precision: .int8, calibration: table)
    }

    /// With BF16 kernels and no FP16 arithmetic (the default level of a Zen 4; a CPU with both
    /// takes FP16 under `.auto`), the layers left out of INT8 take their BF16 forms, reported per
    /// layer, with heads near the FP32-rest plan's. Failed before: INT8 models offered no BF16
    /// forms (FP32 for layers 2 and 4).
    func testLayersLeftOutOfInt8TakeBF16() throws {
        guard KernelLevel.selected.bf16Kernels != nil else { throw XCTSkip("this CPU (or YOLO_KERNEL_LEVEL) has no BF16 GEMM") }
        var bf16 = options
        bf16.int8Fallback = .bf16
        let mixed = try model(bf16)
        // (Where BF16 has tap products, amx, they take the 3x3 layers: im2col-bf16, a pool after it.)
        if KernelLevel.selected.bf16Kernels?.taps != nil {
            XCTAssertEqual(mixed.inference.steps.map(\.algorithm),
                           ["int8", "maxpool+epilogue", "im2col-bf16", "maxpool+epilogue", "im2col-bf16", "int8"])
            XCTAssertEqual(mixed.plan.entries.map(\.precision), [.int8, .fp32, .bf16, .fp32, .bf16, .int8])
        } else {
            XCTAssertEqual(mixed.inference.steps.map(\.algorithm), ["int8", "maxpool+epilogue", "winograd2-bf16+pool", "winograd2-bf16", "int8"])
            XCTAssertEqual(mixed.plan.entries.map(\.precision), [.int8, .fp32, .bf16, .bf16, .int8])
        }
        let four = KernelLevel.selected.bf16Kernels?.taps != nil ? "im2col-bf16" : "winograd2-bf16"
        XCTAssertTrue(mixed.plan.description.contains("4 conv 3x3/1 32x16x16 -> 32x16x16: \(four) (table)"), mixed.plan.description)
        var strict = options
        strict.int8Fallback = .fp32
        let fp32Rest = try model(strict)
        XCTAssertEqual(fp32Rest.inference.steps.map(\.algorithm), ["int8", "maxpool+epilogue", "winograd4+pool", "winograd2", "int8"])
        let a = try PlanTests.heads(fp32Rest), b = try PlanTests.heads(mixed)
        let range = a.map { abs($0) }.max()!
        let worst = zip(a, b).map { abs($0 - $1) }.max()!
        XCTAssertGreaterThan(worst, 0, "BF16 products on layers 2 and 4")
        XCTAssertLessThan(worst, 0.02 * range, "within 2% of the heads' range of the FP32-rest plan's")
        // `.auto` is BF16 here unless the CPU also computes in FP16, AMX tiles or not.
        let auto = try model(options)
        let expected: Precision = KernelLevel.selected.fp16Kernels.map { HostCPU.features.isSuperset(of: $0.requires) } == true ? .fp16 : .bf16
        XCTAssertEqual(auto.plan.entries.map(\.precision), [.int8, .fp32, expected, expected, .int8])
        // The plan cache keys the fallbacks apart.
        let config = try DarknetConfig(text: PlanTests.cfg, file: "<cfg>")
        let key = { (o: ModelOptions) in
            PlanCache.key(config: config, input: Shape(c: 3, h: 64, w: 64), kernelSet: "k", openBLAS: false, kernels: "k",
                          threads: 1, options: o)
        }
        XCTAssertEqual(Set([options, bf16, strict].map(key)).count, 3)
        XCTAssertTrue(key(bf16).contains("; precision int8 fallback bf16"), key(bf16))
    }

    /// A fallback the CPU or level cannot run is refused at load, with one line naming it.
    /// Failed before: there was no way to ask for BF16, and FP16 fell back to FP32 unsaid.
    func testAFallbackTheCPUCannotRunIsRefused() throws {
        #if arch(x86_64)
        guard KernelLevel.supported.contains(.avx2) else { throw XCTSkip("no AVX2 level on this CPU") }
        var bf16 = options
        (bf16.int8Fallback, bf16.kernelLevel) = (.bf16, .avx2)
        XCTAssertThrowsError(try model(bf16)) {
            let text = "\($0)"
            XCTAssertTrue(text.contains("int8 fallback bf16: kernel level avx2 has no BF16 kernels")
                          || text.contains("int8 fallback bf16 needs a CPU with AVX-512 BF16"), text)
            XCTAssertFalse(text.contains("\n"), text)
        }
        // FP16 at the avx2 level is FP16 arithmetic only where the CPU has it (or tests model it).
        var fp16 = options
        (fp16.int8Fallback, fp16.kernelLevel) = (.fp16, .avx2)
        if HostCPU.features.contains(.fp16) {
            XCTAssertNoThrow(try model(fp16))
        } else {
            XCTAssertThrowsError(try model(fp16)) {
                XCTAssertTrue("\($0)".contains("int8 fallback fp16 needs a CPU that computes in FP16"), "\($0)")
            }
            fp16.assumesFP16Arithmetic = true
            XCTAssertEqual(try model(fp16).plan.entries.map(\.precision), [.int8, .fp32, .fp16, .fp16, .int8])
        }
        #endif
        var fp32 = options
        fp32.int8Fallback = .fp32
        XCTAssertEqual(try model(fp32).plan.entries.map(\.precision), [.int8, .fp32, .fp32, .fp32, .int8])
    }
}
