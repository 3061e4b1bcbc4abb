import XCTest
import YOLOReference
@testable @_spi(Kernels) import YOLOEngine
@testable import YOLOCore
import YOLOKernels

/// F(2x2)'s fused input pass (`WinogradFunctions.inputPairs`) against the three steps it fuses,
/// bit for bit at every level: `winogradIntegerPlanes`, the level's FP32 `input`, `packWinogradPairs`.
final class Int8WinogradPairsTests: XCTestCase {
    func testFusedInputEqualsPlanesTransformAndPack() throws {
        var rng = SeededRandom(seed: 11)
        // (channels, height, width, tile rows, 8 or 10 bits): odd channel counts (a last pair of
        // one), rows and tiles not multiples of a vector, blocks inside the image and at its ends,
        // groups of tile rows past the 256-tile group size.
        let shapes: [(Int, Int, Int, Range<Int>, Int32)] = [
            (3, 9, 10, 0..<5, 255), (4, 13, 13, 1..<4, 1023), (1, 1, 1, 0..<1, 255), (5, 16, 7, 2..<6, 1023),
            (2, 40, 40, 3..<17, 1023), (7, 5, 33, 0..<3, 255), (6, 64, 52, 0..<32, 1023), (2, 3, 300, 1..<2, 1023)]
        var checked = 0
        for (c, h, w, rows, levels) in shapes {
            let x = rng.floats(c * h * w, -2, 7)     // past the range: clamped
            let q = Int8Quantization(min: -1.5, max: 5.5, levels: levels)
            let tw = (w + 1) / 2, tiles = rows.count * tw, pairs = (c + 1) / 2
            var planes = [Float](repeating: .nan, count: c * h * w)
            winogradIntegerPlanes(x, count: x.count, quantization: q, into: &planes)
            for level in KernelLevel.supported {
                let transforms = try XCTUnwrap(level.kernelSet?.winograd(tile: 2))
                let fused = try XCTUnwrap(transforms.inputPairs, "\(level): F(2x2) has the fused input")
                var v = [Float](repeating: .nan, count: 16 * c * tiles)
                transforms.input(planes, height: h, width: w, channelCount: c, channels: 0..<c, tileRows: rows, tilesWide: tw,
                                 into: &v)
                packWinogradPairs(&v, positions: 16, channels: c, tiles: tiles, columns: 0..<tiles)
                let expected = Array(v.prefix(16 * pairs * tiles).map(\.bitPattern))
                // In two ranges of pairs, as two threads would, the higher first.
                var words = [UInt32](repeating: 0xDEAD_BEEF, count: 16 * pairs * tiles + 64)
                words.withUnsafeMutableBufferPointer { out in
                    for part in [pairs / 2 ..< pairs, 0 ..< pairs / 2] {
                        fused(x, h, w, c, part, rows, tw, q, out.baseAddress!)
                    }
                }
                let first = zip(words, expected).enumerated().first { $0.element.0 != $0.element.1 }
                XCTAssertNil(first, "\(level) \(c)x\(h)x\(w) rows \(rows) \(levels): the first word that differs (index, fused, unfused)")
                XCTAssertEqual(Set(words.suffix(64)), [0xDEAD_BEEF], "\(level): nothing written past the words")
                checked += 1
            }
        }
        XCTAssertGreaterThanOrEqual(checked, shapes.count)
    }
}
