import XCTest
import YOLOKernels
import YOLOReference

/// The pair GEMM's micro-kernel for smlal by element (`Int16PairKernel8x3ByLane`, the neon level's)
/// on any CPU, through its Swift model of uzp1 / uzp2 and smlal (`Int16PairsByLaneModel`): the same
/// sums as the naive Int64 reference bit for bit (Int8WinogradTests.checkGemm), over tails of its
/// 8 x 12 tile, odd channels and k past a block. On 64-bit ARM the neon level runs the same kernel
/// with the instructions (testPairGemmAtEveryLevel under qemu: scripts/arm-linux-check.sh), and
/// scripts/arm-check.sh compares an INT8 forward's heads with x86's bit for bit.
final class Int16PairLaneTests: XCTestCase {
    enum Lanes: Int8Lanes {
        typealias Acc = SIMD4<Int32>
        typealias Floats = SIMD4<Float>
        static func floats(_ v: SIMD4<Int32>) -> SIMD4<Float> { SIMD4<Float>(v) }
        static func prefetch(_ p: UnsafeRawPointer) {}
    }
    typealias Model = Int16PairsByLaneModel<Lanes>

    /// The model's halves are uzp1 / uzp2's: word j of x (channel 2g of column j in bits 0-15,
    /// 2g + 1 above) gives half j of the lows and of the highs, y's words halves 4 + j.
    func testModelSplitsAsUzp() {
        let x = SIMD4<Int32>(0x0002_0001, -0x0000_0003 & 0xFFFF | 0x7FFF << 16, 0x0006_0005, Int32(bitPattern: 0x8000_0007))
        let y = SIMD4<Int32>(0x000A_0009, 0x000C_000B, 0x000E_000D, 0x0010_000F)
        let lows = Model.pairLows(x, y), highs = Model.pairHighs(x, y)
        func halves(_ v: SIMD4<Int32>) -> [Int16] { (0..<8).map { Int16(truncatingIfNeeded: v[$0 / 2] &>> Int32(16 * ($0 % 2))) } }
        XCTAssertEqual(halves(lows), [1, -3, 5, 7, 9, 11, 13, 15])
        XCTAssertEqual(halves(highs), [2, 0x7FFF, 6, Int16.min, 10, 12, 14, 16])
        // Row 1 of a: halves 2 and 3; the upper lanes are y's columns.
        let a = SIMD4<Int32>(0, 0x0003_0002 | 0, 0, 0)
        XCTAssertEqual(Model.pairDot(SIMD4(100, 0, 0, 0), lows: lows, highs: highs, a, row: 1, upper: false),
                       SIMD4(100 + 1 * 2 + 2 * 3, -3 * 2 + 0x7FFF * 3, 5 * 2 + 6 * 3, 7 * 2 + Int32(Int16.min) * 3))
        XCTAssertEqual(Model.pairDot(.zero, lows: lows, highs: highs, a, row: 1, upper: true),
                       SIMD4(9 * 2 + 10 * 3, 11 * 2 + 12 * 3, 13 * 2 + 14 * 3, 15 * 2 + 16 * 3))
    }

    func testKernelMatchesNaiveSums() {
        let kern = Int8Functions.make(dot: "smlal model", kernel: Int16PairKernel8x3ByLane<Model>.self, kc: 64, nc: 504)
        XCTAssertEqual(kern.mr, 8)
        XCTAssertEqual(kern.nr, 12)
        // Whole tiles, partial row bands and panels (the portable edge code), odd channels, k over
        // one, two and several blocks of 64 pairs.
        for (m, n, c) in [(8, 12, 2), (8, 24, 128), (1, 1, 1), (7, 17, 5), (9, 49, 36), (16, 600, 64), (17, 100, 129),
                          (33, 37, 257), (24, 36, 300)] {
            Int8WinogradTests.checkGemm("8x3 by lane", kern, m: m, n: n, channels: c)
        }
        Int8WinogradTests.checkGemm("8x3 by lane", kern, m: 16, n: 48, channels: 1100, extreme: true)
    }

    /// The direct conv + pool on int16 pairs (DirectConvPairs.swift) with the split dot (the neon
    /// level's, here its model) gives the portable dot's output bit for bit: 10-bit and 8-bit
    /// inputs, odd channels, filters past a block of 8, partial vectors, two row ranges.
    func testDirectConvWithSplitDotIsThePortables() {
        let split = DirectPairFunctions.make(Int16SplitPairDot<Model>.self, filters: 8, dot: "model", preferred: false)
        let portable = DirectPairFunctions.make(Int16PortablePairDot<Lanes>.self, filters: 8, dot: "portable", preferred: false)
        var rng = SeededRandom(seed: 7)
        for (c, h, w, m, levels) in [(3, 8, 10, 5, 1023), (16, 6, 34, 17, 1023), (5, 4, 20, 8, 255), (2, 10, 70, 9, 1023)] {
            let src = rng.floats(c * h * w, -1, 3)
            let weights = (0..<m * c * 9).map { _ in Float(rng.int(below: 255) - 127) }
            let scales = (0..<m).map { _ in rng.float(1e-3, 1e-2) }
            let q = Int8Quantization(min: -1, max: 3, levels: Int32(levels))
            func run(_ f: DirectPairFunctions) -> [Float] {
                var packed = [UInt32](repeating: 0, count: f.packedWords(m, c))
                var scratch = [Float](repeating: .nan, count: f.scratchSize(c, w))
                var out = [Float](repeating: .nan, count: m * (h / 2) * (w / 2))
                f.pack(weights, m, c, &packed)
                for rows in [0..<h / 4, h / 4..<h / 2] {
                    f.pooledRows(src, h, w, c, q, packed, scales, m, rows, &out, &scratch, nil)
                }
                return out
            }
            let (a, b) = (run(split), run(portable))
            XCTAssertFalse(b.contains { $0.isNaN }, "every output written")
            XCTAssertEqual(a.map(\.bitPattern), b.map(\.bitPattern), "c=\(c) \(h)x\(w) filters=\(m) levels=\(levels)")
        }
    }
}
