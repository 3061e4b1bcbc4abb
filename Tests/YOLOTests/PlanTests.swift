import Foundation
import XCTest
@_spi(Kernels) @testable import YOLOEngine
@testable import YOLODetection
@testable import YOLOCore
import YOLOReference

/// The planner: fusion rewrites, the choice of algorithms (table, override, measurement), the
/// plan cache (reused when it fits, ignored with a warning when it does not).
final class PlanTests: XCTestCase {
    var directory = ""

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "yolo-plan-tests-\(getpid())-\(UUID().uuidString)"
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A small network with every kind of node: conv + pool pairs (direct+pool, epilogue moved),
    /// Winograd-sized and 1x1 convolutions, a route and a head.
    static let cfg = """
    [net]
    width=64
    height=64
    channels=3
    [convolutional]
    filters=32
    size=3
    stride=1
    pad=1
    activation=leaky
    [maxpool]
    size=2
    stride=2
    [convolutional]
    filters=32
    size=3
    stride=1
    pad=1
    activation=leaky
    [maxpool]
    size=2
    stride=2
    [convolutional]
    filters=32
    size=3
    stride=1
    pad=1
    activation=leaky
    [convolutional]
    filters=18
    size=1
    stride=1
    activation=linear
    [yolo]
    mask=0,1,2
    anchors=10,14,23,27,37,58
    classes=1
    num=3
    """

    func smallModel(_ options: ModelOptions) throws -> Model {
        var rng = SeededRandom(seed: 21)
        let counts = [32 + 32 * 27, 32 + 32 * 288, 32 + 32 * 288, 18 + 18 * 32]
        let floats = (0..<counts.reduce(0, +)).map { _ in rng.float(-0.5, 0.5) }
        return try Model(cfgText: PlanTests.cfg, weights: weightsFile(floats), options: options)
    }

    func output(_ model: Model) throws -> [Float] { try PlanTests.heads(model) }

    /// The first head's raw values for a seeded random input (also for Int8PlanTests, BF16PlanTests).
    static func heads(_ model: Model, threads: Int = 1) throws -> [Float] {
        var rng = SeededRandom(seed: 5)
        let session = try Session(model: model, threads: threads)
        try session.forward((0..<session.input.count).map { _ in rng.float(0, 1) })
        return Array(session.heads[0].raw)
    }

    func testRewritesAndTable() throws {
        let model = try smallModel(ModelOptions())
        XCTAssertEqual(model.inference.steps.map(\.algorithm), ["direct+pool", "winograd4+pool", "winograd2", "gemm1x1"])
        XCTAssertEqual(model.inference.steps.map(\.layers), [0...1, 2...3, 4...4, 5...5])
        XCTAssertEqual(model.inference.deferred.map(\.layers), [6...6], "the [yolo] activation runs on demand")
        XCTAssertEqual(model.inspection.steps.map(\.algorithm), ["im2col", "maxpool", "winograd4", "maxpool", "winograd2", "gemm1x1"])
        XCTAssertEqual(model.plan.entries.map(\.source), [.table, .table, .table, .table])
        let unfused = try smallModel(ModelOptions(fusesLayers: false))
        XCTAssertEqual(unfused.inference.steps.map(\.algorithm), ["im2col", "maxpool", "winograd4", "maxpool", "winograd2", "gemm1x1"])
        let low = try smallModel(ModelOptions(convolution: .im2col))
        XCTAssertEqual(low.inference.steps.map(\.algorithm), ["direct+pool", "im2col", "maxpool+epilogue", "im2col", "gemm1x1"])
        let openBLAS = try smallModel(ModelOptions(gemm: .openBLAS))
        XCTAssertEqual(openBLAS.inference.steps.first?.algorithm, "im2col", "no direct kernel with OpenBLAS")
        // Every plan computes the same heads.
        let reference = try output(model)
        for other in [unfused, low, openBLAS] {
            let diff = zip(reference, try output(other)).map { abs($0 - $1) }.max()!
            XCTAssertLessThanOrEqual(diff, 1e-4)
        }
    }

    func testOverridesAreChecked() throws {
        let forced = try smallModel(ModelOptions(algorithms: [0: .im2col, 2: .winograd2, 4: .im2col]))
        XCTAssertEqual(forced.inference.steps.map(\.algorithm), ["im2col", "maxpool+epilogue", "winograd2+pool", "im2col", "gemm1x1"])
        XCTAssertEqual(forced.plan.entries.first?.source, .override)
        for (options, message) in [(ModelOptions(algorithms: [5: .winograd2]), "winograd2 cannot compute layer 5"),
                                   (ModelOptions(algorithms: [1: .im2col]), "layer 1 is not a convolution"),
                                   (ModelOptions(algorithms: [2: .directPool]), "direct+pool cannot compute layer 2"),
                                   (ModelOptions(convolution: .im2col, algorithms: [2: .winograd4]), "winograd4 cannot compute layer 2")] {
            XCTAssertThrowsError(try smallModel(options)) { XCTAssertTrue("\($0)".contains(message), "\($0)") }
        }
    }

    func testMeasuredPlanIsStoredAndReused() throws {
        let measured = try smallModel(ModelOptions(planning: .measure(cacheDirectory: directory), tuningThreads: 1))
        let decided = measured.plan.entries.filter { $0.source != nil }
        XCTAssertEqual(decided.map(\.source), [.measured, .measured, .measured, .measured])
        XCTAssertEqual(decided.map { $0.timings.count }, [4, 3, 3, 1], "every candidate timed: direct+pool, im2col, F2, F4 ...")
        XCTAssertTrue(decided.allSatisfy { e in e.timings.allSatisfy { $0.milliseconds > 0 } })
        XCTAssertEqual(measured.plan.measuredThreads, 1)
        XCTAssertGreaterThan(measured.plan.tuningSeconds, 0)
        XCTAssertTrue(measured.plan.warnings.isEmpty, "\(measured.plan.warnings)")
        let file = try XCTUnwrap(measured.plan.cacheFile)
        XCTAssertTrue(FileManager.default.fileExists(atPath: file))
        let reference = try output(try smallModel(ModelOptions()))
        XCTAssertLessThanOrEqual(zip(reference, try output(measured)).map { abs($0 - $1) }.max()!, 1e-4)

        for planning in [Planning.measure(cacheDirectory: directory), .cached(cacheDirectory: directory)] {
            let again = try smallModel(ModelOptions(planning: planning, tuningThreads: 1))
            XCTAssertEqual(again.plan.entries.filter { $0.source != nil }.map(\.source), [.cache, .cache, .cache, .cache])
            XCTAssertEqual(again.plan.tuningSeconds, 0, "nothing measured")
            XCTAssertEqual(again.inference.steps.map(\.algorithm), measured.inference.steps.map(\.algorithm))
            XCTAssertEqual(again.plan.entries.map(\.timings), measured.plan.entries.map(\.timings).map { t in
                t.map { PlanReport.Timing(algorithm: $0.algorithm, milliseconds: (($0.milliseconds * 1000).rounded()) / 1000) }
            })
        }
        // Another thread count is another key: nothing cached for it.
        let other = try smallModel(ModelOptions(planning: .cached(cacheDirectory: directory), tuningThreads: 2))
        XCTAssertEqual(other.plan.entries.first?.source, .table)
        // remeasure ignores the entry and writes a new one.
        let fresh = try smallModel(ModelOptions(planning: .remeasure(cacheDirectory: directory), tuningThreads: 1))
        XCTAssertEqual(fresh.plan.entries.first?.source, .measured)
    }

    func testBadCacheEntriesAreIgnoredWithAWarning() throws {
        let measured = try smallModel(ModelOptions(planning: .measure(cacheDirectory: directory), tuningThreads: 1))
        let file = try XCTUnwrap(measured.plan.cacheFile)
        let good = try String(contentsOfFile: file, encoding: .utf8)
        let lines = good.split(separator: "\n").map(String.init)
        let variants: [(String, String)] = [
            ("garbage \u{0}\u{1}", "not a plan"),
            (good.replacingOccurrences(of: "key engine", with: "key other-engine"), "another CPU, cfg or setting"),
            (good.replacingOccurrences(of: PlanCache.buildField + PlanCache.build, with: PlanCache.buildField + "0.0.9 revision 1"),
             "measured by another build of the engine"),
            (good.replacingOccurrences(of: "; kernels ", with: "; kernels other "), "measured by another build of the engine"),
            (good.replacingOccurrences(of: "node 5 gemm1x1", with: "node 5 winograd4"), "winograd4 cannot compute layer 5"),
            (lines.dropLast().joined(separator: "\n"), "3 choices for 4 convolutions"),
            (good.replacingOccurrences(of: "node 0-1", with: "node x"), "bad layer range"),
            (good + "node 9 im2col | im2col nan\n", "bad timing"),
        ]
        for (text, why) in variants {
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            let cachedOnly = try smallModel(ModelOptions(planning: .cached(cacheDirectory: directory), tuningThreads: 1))
            XCTAssertEqual(cachedOnly.plan.entries.first?.source, .table, why)
            XCTAssertEqual(cachedOnly.plan.warnings.count, 1, why)
            XCTAssertTrue(cachedOnly.plan.warnings.first?.contains(why) == true, "\(cachedOnly.plan.warnings) vs \(why)")
            let remeasured = try smallModel(ModelOptions(planning: .measure(cacheDirectory: directory), tuningThreads: 1))
            XCTAssertEqual(remeasured.plan.entries.first?.source, .measured, why)
            XCTAssertTrue(remeasured.plan.warnings.first?.contains("ignored the plan cache entry") == true, why)
        }
        // A directory that cannot be made: measured all the same, with a warning.
        let blocked = directory + "/file"
        try "x".write(toFile: blocked, atomically: true, encoding: .utf8)
        let unstored = try smallModel(ModelOptions(planning: .measure(cacheDirectory: blocked + "/plans"), tuningThreads: 1))
        XCTAssertEqual(unstored.plan.entries.first?.source, .measured)
        XCTAssertTrue(unstored.plan.warnings.first?.contains("could not store the measured plan") == true, "\(unstored.plan.warnings)")
    }

    func testTheKeyEndsWithTheBuildWhichDoesNotNameTheFile() throws {
        // (The lowest level: baseline on x86, neon on arm64.)
        let lowest = KernelLevel.supported[0], set = try XCTUnwrap(lowest.kernelSet)
        XCTAssertTrue(set.signature.hasPrefix("\(lowest.rawValue): fp32 "), set.signature)
        let key = "a; b" + PlanCache.buildField + PlanCache.build + "; kernels " + set.signature
        XCTAssertEqual(PlanCache.withoutBuild(key), "a; b")
        XCTAssertEqual(PlanCache.path(directory: "/d", key: key), PlanCache.path(directory: "/d", key: "a; b" + PlanCache.buildField + "x"))
        XCTAssertNotEqual(PlanCache.path(directory: "/d", key: key), PlanCache.path(directory: "/d", key: "a; c" + PlanCache.buildField + "x"))
        // The levels' signatures differ (each names its level and instructions).
        let levels = KernelLevel.supported.map { $0.kernelSet!.signature }
        XCTAssertEqual(Set(levels).count, levels.count, "\(levels)")
    }

    func testChoiceAndEncoding() {
        // The fastest wins; a candidate with less memory within 2% of it wins instead.
        XCTAssertEqual(Tuner.choose(times: [2.0, 1.0, 1.5], parameterBytes: [1, 9, 1]), 1)
        XCTAssertEqual(Tuner.choose(times: [1.01, 1.0, 1.5], parameterBytes: [1, 9, 1]), 0)
        XCTAssertEqual(Tuner.choose(times: [1.03, 1.0, 1.5], parameterBytes: [1, 9, 1]), 1)
        let choices = [CachedChoice(layers: 0...1, chosen: .directPool,
                                    timings: [PlanReport.Timing(algorithm: "direct+pool", milliseconds: 1.25),
                                              PlanReport.Timing(algorithm: "im2col", milliseconds: 2.5)]),
                       CachedChoice(layers: 4...4, chosen: .winograd4, timings: [])]
        let text = PlanCache.encode(key: "k", choices: choices)
        guard case .success(let back) = PlanCache.decode(text, key: "k") else { return XCTFail("decode failed: \(text)") }
        XCTAssertEqual(back, choices)
        XCTAssertEqual(PlanCache.formatMilliseconds(0.0421), "0.042")
        XCTAssertEqual(PlanCache.formatMilliseconds(12.5), "12.500")
    }
}
