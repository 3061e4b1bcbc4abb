import Foundation
import XCTest
import YOLO
@testable @_spi(Kernels) import YOLOEngine
import YOLOImage

/// FP16 (`--precision fp16`) against FP32 on the sample photos and Darknet's images, as issue #20
/// measures it (PrecisionAccuracy): recall and precision >= 0.97 at threshold 0.25, the confidence
/// drift of matched detections under 0.02. Both of its forms: FP16 arithmetic (on 64-bit ARM with
/// asimdhp, qemu's default CPU in scripts/arm-linux-check.sh, the real kernels; on x86 the avx2
/// level's software model of them; measured on x86: drift 0.0052 at most) and FP32 arithmetic on
/// FP16-stored weights (every x86 CPU, ARM levels without FP16 arithmetic).
final class FP16AccuracyTests: XCTestCase {
    func testFP16ArithmeticDetectionsMatchFP32() throws {
        var half = ModelOptions(precision: .fp16), reference = ModelOptions()
        #if arch(x86_64)
        guard KernelLevel.supported.contains(.avx2) else { throw XCTSkip("no AVX2 on this CPU: no FP16 model") }
        (half.kernelLevel, half.assumesFP16Arithmetic, reference.kernelLevel) = (.avx2, true, .avx2)
        #else
        guard KernelLevel.selected.fp16Kernels != nil else { throw XCTSkip("this CPU has no FP16 arithmetic") }
        #endif
        try check(half, reference: reference, form: "winograd2-fp16", arithmetic: true, maxDrift: 0.02)
    }

    /// With AVX-512 FP16 (Sapphire Rapids and later): vfmadd231ph's FP16 arithmetic.
    func testAVX512FP16DetectionsMatchFP32() throws {
        #if arch(x86_64)
        guard KernelLevel.selected.kernelSet?.half(.fp16, on: HostCPU.features) != nil else { throw XCTSkip("this CPU has no AVX-512 FP16") }
        try check(ModelOptions(precision: .fp16), reference: ModelOptions(), form: "winograd2-fp16", arithmetic: true, maxDrift: 0.02)
        #else
        throw XCTSkip("x86 only")
        #endif
    }

    func testFP16WeightsDetectionsMatchFP32() throws {
        var half = ModelOptions(precision: .fp16), reference = ModelOptions()
        // (Where the CPU computes in FP16, a level that does not: FP16PlanTests.weightsOnlyLevel's rule.)
        #if arch(x86_64)
        let weightsOnly: KernelLevel? = KernelLevel.selected.kernelSet?.half(.fp16, on: HostCPU.features) == nil ? nil : .avx512
        #else
        let weightsOnly: KernelLevel? = .neon
        #endif
        if let level = weightsOnly { (half.kernelLevel, reference.kernelLevel) = (level, level) }
        try check(half, reference: reference, form: "winograd4-fp16", arithmetic: false, maxDrift: 0.01)
    }

    /// Detections of `half` against `reference`'s on every photo; its plan in FP16, with `form`
    /// among its algorithms; the two direct conv + pool steps (layers 0-1 and 2-3) in FP16 too with
    /// FP16 `arithmetic`, else FP32.
    func check(_ half: ModelOptions, reference: ModelOptions, form: String, arithmetic: Bool, maxDrift: Float) throws {
        let (cfg, weights, names) = try PrecisionAccuracy.paths()
        let photos = try PrecisionAccuracy.samples() + PrecisionAccuracy.darknetImages()
        let options = DetectorOptions(threshold: 0.1)
        let fp32 = try Detector(cfgPath: cfg, weightsPath: weights, namesPath: names, options: options, threads: 2,
                                modelOptions: reference)
        let fp16 = try Detector(cfgPath: cfg, weightsPath: weights, namesPath: names, options: options, threads: 2,
                                modelOptions: half)
        let plan = fp16.model.plan
        let convs = plan.entries.filter { $0.source != nil }
        XCTAssertEqual(convs.filter { $0.precision == .fp16 }.count, arithmetic ? 13 : 11, plan.description)
        XCTAssertEqual(convs.filter { $0.precision == .fp32 }.map(\.algorithm), arithmetic ? [] : ["direct+pool", "direct+pool"],
                       plan.description)
        XCTAssertEqual(convs.filter { $0.algorithm == "direct+pool-fp16" }.count, arithmetic ? 2 : 0, plan.description)
        XCTAssertTrue(plan.description.contains(": \(form) (table)"), plan.description)
        let results = try photos.map { p in
            (try fp32.detect(rgb: p.pixels, width: p.width, height: p.height), try fp16.detect(rgb: p.pixels, width: p.width, height: p.height))
        }
        let f = PrecisionAccuracy.compare(results, threshold: 0.25)
        let summary = "FP16 (\(plan.halfGemm ?? "?")) on \(photos.count) photos at threshold 0.25: \(f)"
        print(summary)
        XCTAssertGreaterThanOrEqual(f.reference, 4, summary)
        XCTAssertGreaterThanOrEqual(f.recall, 0.97, summary)
        XCTAssertGreaterThanOrEqual(f.precision, 0.97, summary)
        XCTAssertLessThan(f.maxDrift, maxDrift, summary + ": the largest confidence change of a matched detection")
        print("FP16 on \(photos.count) photos at threshold 0.1: \(PrecisionAccuracy.compare(results, threshold: 0.1))")
    }
}
