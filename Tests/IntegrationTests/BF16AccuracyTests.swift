import Foundation
import XCTest
import YOLO
import YOLOImage
@testable @_spi(Kernels) import YOLOEngine

/// BF16 (`--precision bf16`) against FP32 on the sample photos and Darknet's images, as issue #20
/// measures it (PrecisionAccuracy): recall and precision >= 0.97 at threshold 0.25, the confidence
/// drift of matched detections under 0.05. Darknet's images only where ../shared/images exists. Only where the CPU has AVX-512 BF16 (elsewhere
/// the load must refuse bf16 with its one-line reason, and the test skips saying so).
final class BF16AccuracyTests: XCTestCase {
    func testBF16DetectionsMatchFP32() throws {
        let (cfg, weights, names) = try PrecisionAccuracy.paths()
        let photos = try PrecisionAccuracy.samples() + PrecisionAccuracy.darknetImages()
        let options = DetectorOptions(threshold: 0.1)
        let fp32 = try Detector(cfgPath: cfg, weightsPath: weights, namesPath: names, options: options, threads: 2)
        let bf16: Detector
        do {
            bf16 = try Detector(cfgPath: cfg, weightsPath: weights, namesPath: names, options: options, threads: 2,
                                modelOptions: ModelOptions(precision: .bf16))
        } catch {
            let text = "\(error)"
            guard text.contains("needs a CPU with AVX-512 BF16 (avx512_bf16") else { throw error }
            throw XCTSkip("this CPU has no AVX-512 BF16: --precision bf16 is refused (\(text)); BF16 accuracy not tested")
        }
        // Every convolution in BF16 but the two direct conv + pool steps (layers 0-1 and 2-3), which
        // have no BF16 form: both FP16 where the CPU computes in FP16; else layer 0 FP32 and layer 2
        // the tile GEMM's im2col on AMX, else FP32.
        let plan = bf16.model.plan
        let convs = plan.entries.filter { $0.source != nil }
        let set = KernelLevel.selected.kernelSet
        let fp16 = KernelLevel.selected.fp16Kernels.map { HostCPU.features.isSuperset(of: $0.requires) } == true
        let tiles = set?.bf16?.requires.contains(.amx) == true
        XCTAssertEqual(convs.filter { $0.precision == .bf16 }.count, tiles && !fp16 ? 12 : 11, plan.description)
        XCTAssertEqual(convs.filter { $0.precision == .fp16 }.map(\.algorithm), fp16 ? ["direct+pool-fp16", "direct+pool-fp16"] : [],
                       plan.description)
        XCTAssertEqual(convs.filter { $0.precision == .fp32 }.map(\.algorithm),
                       Array(repeating: "direct+pool", count: fp16 ? 0 : tiles ? 1 : 2), plan.description)
        XCTAssertTrue(plan.description.contains(": winograd2-bf16 (table)"), plan.description)
        let results = try photos.map { p in
            (try fp32.detect(rgb: p.pixels, width: p.width, height: p.height), try bf16.detect(rgb: p.pixels, width: p.width, height: p.height))
        }
        let f = PrecisionAccuracy.compare(results, threshold: 0.25)
        let summary = "BF16 on \(photos.count) photos at threshold 0.25: \(f)"
        print(summary)
        XCTAssertGreaterThanOrEqual(f.reference, 4, summary)
        XCTAssertGreaterThanOrEqual(f.recall, 0.97, summary)
        XCTAssertGreaterThanOrEqual(f.precision, 0.97, summary)
        XCTAssertLessThan(f.maxDrift, 0.05, summary + ": the largest confidence change of a matched detection")
        // For the record (not asserted: at 0.1 a few detections sit within BF16's drift of the threshold).
        print("BF16 on \(photos.count) photos at threshold 0.1: \(PrecisionAccuracy.compare(results, threshold: 0.1))")
    }
}
