import Foundation
import XCTest
import YOLOReference
@testable import YOLOEngine
@testable import YOLOCore

/// Winograd convolutions that pool their own output (`ConvPoolStep`, WinogradPool.swift): the
/// plan fuses them where the pool allows, gives the convolution's map no buffer, and computes
/// heads bit-identical to the unfused steps (conv, then the pool with the epilogue) for every
/// Winograd form, FP32 and INT8 (8 and 10 bits), at 1-3 threads, on maps of one block and of
/// several, with a last tile row cut by the map's edge.
final class WinogradPoolTests: XCTestCase {
    /// Layer 0 (16 channels in: a conv + pool node, the direct kernel's candidate too) and layer 2
    /// (24 in: a conv whose epilogue the pool applies), each pooled 2x2 / 2; a 1x1 head.
    static func cfg(side: Int) -> String {
        """
        [net]
        width=\(side)
        height=\(side)
        channels=16
        [convolutional]
        filters=24
        size=3
        stride=1
        pad=1
        activation=leaky
        [maxpool]
        size=2
        stride=2
        [convolutional]
        filters=20
        size=3
        stride=1
        pad=1
        activation=leaky
        [maxpool]
        size=2
        stride=2
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
    }

    static let weights: [UInt8] = {
        var rng = SeededRandom(seed: 8)
        let counts = [24 + 24 * 16 * 9, 20 + 20 * 24 * 9, 18 + 18 * 20]
        return weightsFile((0..<counts.reduce(0, +)).map { _ in rng.float(-0.3, 0.3) })
    }()

    func model(side: Int, _ algorithm: ConvAlgorithm, fuses: Bool, tenBit: Bool = false) throws -> Model {
        let cfg = WinogradPoolTests.cfg(side: side)
        var options = ModelOptions(fusesLayers: fuses, algorithms: [0: algorithm, 2: algorithm])
        if algorithm.precision == .int8 {
            let fingerprint = try DarknetConfig(text: cfg, file: "<cfg>").fingerprint
            options.precision = .int8
            options.calibration = Int8Calibration(ranges: [0: 0...1, 2: -0.5...2, 4: -0.5...2], method: "test", imageCount: 1,
                                                  cfgFingerprint: fingerprint, tenBitLayers: tenBit ? [0, 2] : [])
        }
        return try Model(cfgText: cfg, weights: WinogradPoolTests.weights, options: options)
    }

    func testFusedStepsAndNoBufferForTheConvolution() throws {
        let fused = try model(side: 40, .winograd4, fuses: true)
        XCTAssertEqual(fused.inference.steps.map(\.algorithm), ["winograd4+pool", "winograd4+pool", "gemm1x1"])
        XCTAssertEqual(fused.inference.steps.map(\.layers), [0...1, 2...3, 4...4])
        XCTAssertEqual(fused.plan.entries.map(\.algorithm), ["winograd4+pool", "winograd4+pool", "gemm1x1"])
        // The plan that keeps every output does not fuse.
        XCTAssertEqual(fused.inspection.steps.map(\.algorithm), ["winograd4", "maxpool", "winograd4", "maxpool", "gemm1x1"])
        // Other algorithms keep the pool step.
        let im2col = try model(side: 40, .im2col, fuses: true)
        XCTAssertEqual(im2col.inference.steps.map(\.algorithm), ["im2col", "maxpool+epilogue", "im2col", "maxpool+epilogue", "gemm1x1"])
        // Without the convolution's 24x100x100 map (less the block's rows it pools from), a
        // session takes less memory than the same steps unfused.
        let (big, bigUnfused) = (try model(side: 100, .winograd4, fuses: true), try model(side: 100, .winograd4, fuses: false))
        let saved = try Session(model: bigUnfused, threads: 1).memoryBytes - Session(model: big, threads: 1).memoryBytes
        XCTAssertGreaterThan(saved, 4 * 24 * 100 * 100 / 2, "bytes saved: \(saved)")
    }

    func testFusedHeadsAreTheUnfusedOnes() throws {
        for (algorithm, tenBit) in [(ConvAlgorithm.winograd4, false), (.winograd2, false), (ConvAlgorithm(.winograd4, .int8), false),
                                    (ConvAlgorithm(.winograd2, .int8), false), (ConvAlgorithm(.winograd2, .int8), true)] {
            // 100: layer 0 in several blocks, layer 2's 50 rows end in a cut tile row (F(4x4));
            // 20: one block each, spread over the threads.
            for side in [100, 20] {
                let fused = try model(side: side, algorithm, fuses: true, tenBit: tenBit)
                XCTAssertEqual(fused.inference.steps.filter { $0.algorithm.hasSuffix("+pool") }.count, 2, "\(algorithm)")
                let unfused = try model(side: side, algorithm, fuses: false, tenBit: tenBit)
                XCTAssertFalse(unfused.inference.steps.contains { $0.algorithm.hasSuffix("+pool") })
                for threads in 1...3 {
                    // (Block boundaries depend on the thread count: compare at the same count.)
                    let reference = try PlanTests.heads(unfused, threads: threads)
                    let heads = try PlanTests.heads(fused, threads: threads)
                    XCTAssertGreaterThan(reference.map { abs($0) }.max()!, 0.01)
                    let differing = zip(heads, reference).filter { $0 != $1 }.count
                    XCTAssertEqual(differing, 0, "\(algorithm)\(tenBit ? " a10" : ""), side \(side), \(threads) threads: "
                                   + "\(differing) of \(heads.count) head values differ")
                }
            }
        }
    }

    func testNoFusionWhereThePoolDoesNotAllowIt() throws {
        // A 2x2 stride-1 pool (keeps the size), and a pool with a row of padding before.
        for pool in ["size=2\nstride=1", "size=2\nstride=2\npadding=2"] {
            let cfg = WinogradPoolTests.cfg(side: 40).replacingOccurrences(of: "size=2\nstride=2", with: pool)
            let model = try Model(cfgText: cfg, weights: WinogradPoolTests.weights,
                                  options: ModelOptions(algorithms: [0: .winograd4, 2: .winograd4]))
            XCTAssertFalse(model.inference.steps.contains { $0.algorithm.hasSuffix("+pool") }, pool)
        }
    }

    /// Blocks of tile rows (`WinogradConv.blockRows`): about 256K floats of transforms where 128
    /// tiles fit there; past that, F(2x2) takes up to `spill` floats in evened-out blocks, F(4x4)
    /// stays at 128 tiles.
    func testBlockRowsSpillPastTheCacheOnlyForF2x2() {
        // In the cache: 2 rows of 78K floats (52 tiles wide, 3 rows make 128 tiles: the larger).
        XCTAssertEqual(WinogradConv.blockRows(tile: 2, perRow: 79_872, tilesHigh: 104, tilesWide: 104), 3)
        XCTAssertEqual(WinogradConv.blockRows(tile: 2, perRow: 20_000, tilesHigh: 32, tilesWide: 33), 13)
        // yolov3-tiny's layer 21 in BF16 (13 x 13 tiles, 133K floats a row): one block, not 10 + 3.
        XCTAssertEqual(WinogradConv.blockRows(tile: 2, perRow: 133_120, tilesHigh: 13, tilesWide: 13), 13)
        XCTAssertEqual(WinogradConv.blockRows(tile: 4, perRow: 133_120, tilesHigh: 13, tilesWide: 13), 10)
        // Past the spill: 21 rows fit, 32 rows -> two blocks of 16, not 21 + 11.
        XCTAssertEqual(WinogradConv.blockRows(tile: 2, perRow: 98_304, tilesHigh: 32, tilesWide: 32), 16)
        XCTAssertEqual(WinogradConv.blockRows(tile: 2, perRow: 98_304, tilesHigh: 45, tilesWide: 32,
                                              spill: 1_000_000), 9)
        // 128 tiles at least (32 rows of 4), then evened out (50 rows: 25 + 25, not 32 + 18); never 0.
        XCTAssertEqual(WinogradConv.blockRows(tile: 2, perRow: 3_000_000, tilesHigh: 50, tilesWide: 4), 25)
        XCTAssertEqual(WinogradConv.blockRows(tile: 2, perRow: 0, tilesHigh: 1, tilesWide: 0), 1)
    }
}
