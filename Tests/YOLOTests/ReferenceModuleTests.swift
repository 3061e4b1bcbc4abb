import Foundation
import XCTest
import YOLOKernels
import YOLOReference

/// YOLOReference itself (the references, fixture parsers and comparisons that the other suites
/// and scripts/arm-check.sh's harness rely on): its comparisons, its parsers on every committed
/// fixture and on bad ones, and a reference for every activation the kernels offer.
final class ReferenceModuleTests: XCTestCase {
    func testCompareModes() {
        XCTAssertTrue(compare([1, -0.0, .nan], [1, 0, .nan]).passed, "exact: same bits or equal values")
        XCTAssertFalse(compare([1, 2], [1, 2.0000002]).passed, "exact: one ulp is off")
        let off = compare([1, 2, 3], [1, 2.5, 3.5])
        XCTAssertEqual(off.firstMismatch?.index, 1)
        XCTAssertEqual(off.maxAbsDiff, 0.5)
        XCTAssertFalse(compare([1], [1, 2]).passed, "counts differ")
        XCTAssertFalse(compare([.nan], [1], tolerance: 1).passed, "NaN is never within a tolerance")
        XCTAssertTrue(compare([10.5], [10], tolerance: 0.05).passed, "relative to max(1, |want|)")
        XCTAssertFalse(compare([10.5], [10], tolerance: 0.01).passed)
        XCTAssertTrue(compare([0.6], [0.5], tolerance: 2e-3, scales: [100]).passed, "scaled")
        XCTAssertFalse(compare([0.6], [0.5], tolerance: 2e-3, scales: [10]).passed)
        XCTAssertFalse(compareBits([-0.0], [0]).passed, "bits: -0 is not 0")
        XCTAssertFalse(compareBits([1, 2], [1, .nan]).passed, "bits: a NaN sentinel overwritten")
        XCTAssertTrue(compareBits([1, .nan], [1, .nan]).passed)
    }

    func testEveryKernelActivationHasAReference() {
        XCTAssertEqual(Activation.allCases.map(\.rawValue), NaiveActivation.allCases.map(\.rawValue))
    }

    func testEveryCommittedSamplesFixtureParses() throws {
        let dirs = ["/Tests/YOLOTests/Fixtures", "/Tests/IntegrationTests/Fixtures"].map { repoRoot + $0 }
        var parsed = 0
        for dir in dirs {
            for name in try FileManager.default.contentsOfDirectory(atPath: dir) where name.hasSuffix(".samples") {
                let t = try SampledTensor(parsing: [UInt8](Data(contentsOf: URL(fileURLWithPath: dir + "/" + name))))
                XCTAssertEqual(t.channelSums.count, t.channels, name)
                XCTAssertGreaterThan(t.samples.count, 100, name)
                parsed += 1
            }
        }
        XCTAssertGreaterThanOrEqual(parsed, 30)
        XCTAssertEqual(try referenceDetections("detect_darknet_detections.txt").map { $0.thresholds.map(\.threshold) }, [[0.25, 0.1], [0.25, 0.1]])
    }

    func testBadFixturesSayWhatIsWrong() {
        func message(_ text: String) -> String {
            do { _ = try SampledTensor(parsing: Array(text.utf8)); return "parsed" } catch { return error.description }
        }
        XCTAssertEqual(message("# shape 2 1 1\n0 1.5\nsum 0 1\n"), "1 channel sums for 2 channels")
        XCTAssertEqual(message("# shape 1 1 2\n2 1.5\nsum 0 1\n"), "line 2: index 2 outside 0..<2")
        XCTAssertEqual(message("# shape 1 1 1\n0 x\nsum 0 1\n"), "line 2: not 'INDEX VALUE', 'sum CHANNEL VALUE' or '# shape C H W'")
        XCTAssertEqual(message("0 1\n"), "line 1: a sample before the '# shape' header")
        XCTAssertEqual(message(""), "no '# shape C H W' header")
        XCTAssertEqual(message("# shape 1 1 1\r\n0 1.5\r\nsum 0 1.5"), "parsed", "CRLF, no final newline")
        do {
            _ = try parseReferenceDetections(Array("a.png 4 4 0.25 0 1 0.9 0.9 0.5 0.5 0.1\n".utf8))
            XCTFail("a short line parsed")
        } catch {
            XCTAssertEqual(error.description, "line 1: not '... BOX_INDEX CLASS_INDEX PROB OBJECTNESS X Y W H' or '... none'")
        }
    }
}
