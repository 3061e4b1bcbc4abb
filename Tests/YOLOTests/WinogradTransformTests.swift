import XCTest
@testable @_spi(Kernels) import YOLOEngine
@testable import YOLODetection
@testable import YOLOCore
import YOLOKernels
import YOLOReference

/// The SIMD Winograd transforms of every kernel level this CPU can run against the scalar
/// reference functions of YOLOKernels: bit-identical results (the SIMD versions evaluate the
/// same expressions in the same order), and nothing written outside what the scalar code writes
/// (buffers start as NaN and are compared whole, bit for bit).
final class WinogradTransformTests: XCTestCase {
    /// Every kernel set this CPU runs.
    var levels: [KernelSet] {
        KernelLevel.supported.map { level in
            guard let t = level.kernelSet else { XCTFail("\(level) is supported but has no kernels"); fatalError() }
            return t
        }
    }

    /// Map sizes (h x w): odd and even, tiny, and tile rows of 1 ... 65 tiles (few multiples of
    /// 16); rows of fewer than 2W tiles take another output path than longer ones; 140 x 60
    /// (F(4x4): 35 x 15 tiles) makes the input transforms work in several groups of tile rows.
    static let sizes: [(h: Int, w: Int)] = [(13, 13), (26, 26), (7, 9), (9, 7), (1, 1), (2, 3), (52, 52), (33, 33),
                                            (5, 70), (6, 64), (3, 130), (140, 60)]

    /// Sub-ranges of 0..<count: all of it, and (when there are enough) a middle part, the first
    /// and the last element.
    static func ranges(_ count: Int) -> [Range<Int>] {
        var r = [0..<count]
        if count > 2 { r.append(1..<count - 1) }
        if count > 1 { r += [0..<1, count - 1..<count] }
        return r
    }

    func testInputTransformsMatchScalar() {
        var cases = 0
        for tile in [2, 4] {
            for (h, w) in Self.sizes {
                let (th, tw) = ((h + tile - 1) / tile, (w + tile - 1) / tile)
                for channelCount in [1, 3, 16, 37] {
                    var rng = SeededRandom(seed: UInt64(h * 1000 + w * 10 + channelCount))
                    let src = rng.floats(channelCount * h * w)
                    for channels in Self.ranges(channelCount) {
                        for rows in Self.ranges(th) {
                            let size = (tile + 2) * (tile + 2) * channelCount * rows.count * tw
                            var expected = [Float](repeating: .nan, count: size)
                            src.withUnsafeBufferPointer { s in expected.withUnsafeMutableBufferPointer { v in
                                if tile == 4 {
                                    winograd4Input(s.baseAddress!, height: h, width: w, channelCount: channelCount,
                                                   channels: channels, tileRows: rows, tilesWide: tw, into: v.baseAddress!)
                                } else {
                                    winogradInput(s.baseAddress!, height: h, width: w, channelCount: channelCount,
                                                  channels: channels, tileRows: rows, tilesWide: tw, into: v.baseAddress!)
                                }
                            } }
                            for t in levels {
                                var got = [Float](repeating: .nan, count: size)
                                src.withUnsafeBufferPointer { s in got.withUnsafeMutableBufferPointer { v in
                                    t.winograd(tile: tile).input(s.baseAddress!, height: h, width: w, channelCount: channelCount,
                                            channels: channels, tileRows: rows, tilesWide: tw, into: v.baseAddress!)
                                } }
                                assertBitEqual(got, expected, "\(t.name) input F(\(tile)) \(h)x\(w) c \(channels) of \(channelCount) rows \(rows)")
                                cases += 1
                            }
                        }
                    }
                }
            }
        }
        XCTAssertGreaterThan(cases, 200)
    }

    func testOutputTransformsMatchScalar() {
        var cases = 0
        for tile in [2, 4] {
            for (h, w) in Self.sizes {
                let (th, tw) = ((h + tile - 1) / tile, (w + tile - 1) / tile)
                for filterCount in [1, 3, 16, 37] {
                    for rows in Self.ranges(th) {
                        let tiles = rows.count * tw
                        var rng = SeededRandom(seed: UInt64(h * 1000 + w * 10 + filterCount + 7 * rows.lowerBound))
                        let m = rng.floats((tile + 2) * (tile + 2) * filterCount * tiles)
                        for filters in Self.ranges(filterCount) {
                            var expected = [Float](repeating: .nan, count: filterCount * h * w)
                            m.withUnsafeBufferPointer { pm in expected.withUnsafeMutableBufferPointer { o in
                                if tile == 4 {
                                    winograd4Output(pm.baseAddress!, filterCount: filterCount, filters: filters, tileRows: rows,
                                                    tilesWide: tw, outHeight: h, outWidth: w, into: o.baseAddress!)
                                } else {
                                    winogradOutput(pm.baseAddress!, filterCount: filterCount, filters: filters, tileRows: rows,
                                                   tilesWide: tw, outHeight: h, outWidth: w, into: o.baseAddress!)
                                }
                            } }
                            for t in levels {
                                var got = [Float](repeating: .nan, count: filterCount * h * w)
                                m.withUnsafeBufferPointer { pm in got.withUnsafeMutableBufferPointer { o in
                                    t.winograd(tile: tile).output(pm.baseAddress!, filterCount: filterCount, filters: filters,
                                             tileRows: rows, tilesWide: tw, outHeight: h, outWidth: w, into: o.baseAddress!)
                                } }
                                assertBitEqual(got, expected, "\(t.name) output F(\(tile)) \(h)x\(w) f \(filters) of \(filterCount) rows \(rows)")
                                cases += 1
                            }
                        }
                    }
                }
            }
        }
        XCTAssertGreaterThan(cases, 200)
    }

    /// F(2x2)'s output transform fused with the 2x2 / 2 max pool against the scalar output transform
    /// then `maxPool2x2`, on even maps (the fused pool's only case), including -0 and +0 ties.
    func testPooledOutputMatchesOutputThenPool() {
        var cases = 0
        for (h, w) in [(26, 26), (2, 2), (52, 52), (6, 64), (4, 130), (140, 60), (10, 34)] {
            let (th, tw) = (h / 2, w / 2)
            for filterCount in [1, 3, 16, 37] {
                for rows in Self.ranges(th) {
                    let tiles = rows.count * tw
                    var rng = SeededRandom(seed: UInt64(h * 1000 + w * 10 + filterCount + 3 * rows.lowerBound))
                    // Small integers: many ties between a tile's outputs, and zeros of both signs; a
                    // few NaNs (max(x, NaN) is x, max(NaN, y) NaN: the order of the maxima shows).
                    let m = (0..<16 * filterCount * tiles).map { i in i % 97 == 5 ? .nan : Float(Int(rng.float(-3, 3))) }
                    for filters in Self.ranges(filterCount) {
                        var image = [Float](repeating: .nan, count: filterCount * h * w)
                        var expected = [Float](repeating: .nan, count: filterCount * th * tw)
                        m.withUnsafeBufferPointer { pm in image.withUnsafeMutableBufferPointer { o in
                            winogradOutput(pm.baseAddress!, filterCount: filterCount, filters: filters, tileRows: rows,
                                           tilesWide: tw, outHeight: h, outWidth: w, into: o.baseAddress!)
                        } }
                        image.withUnsafeBufferPointer { src in expected.withUnsafeMutableBufferPointer { o in
                            // The block's rows, pooled into the pool's map at its first pooled row.
                            let rowsOut = 2 * rows.count
                            for f in filters {
                                maxPool2x2(src.baseAddress! + f * h * w + 2 * rows.lowerBound * w, height: rowsOut, width: w,
                                           outHeight: rows.count, outWidth: tw, channels: 0..<1,
                                           into: o.baseAddress! + f * th * tw + rows.lowerBound * tw)
                            }
                        } }
                        for t in levels {
                            guard let pooled = t.winograd2.outputPooled else { XCTFail("\(t.name): no pooled output"); continue }
                            var got = [Float](repeating: .nan, count: filterCount * th * tw)
                            m.withUnsafeBufferPointer { pm in got.withUnsafeMutableBufferPointer { o in
                                pooled(pm.baseAddress!, filterCount, filters, tiles, th * tw, o.baseAddress! + rows.lowerBound * tw, nil)
                            } }
                            assertBitEqual(got, expected, "\(t.name) pooled F(2) \(h)x\(w) f \(filters) of \(filterCount) rows \(rows)")
                            // With a leaky epilogue: biasActivate's values on the pooled ones.
                            let bias = (0..<filterCount).map { Float($0 % 5) * 0.37 - 0.8 }
                            var activated = expected
                            for f in filters {
                                for i in f * th * tw ..< (f + 1) * th * tw where !activated[i].isNaN {
                                    let v = activated[i] + bias[f]
                                    activated[i] = v < 0 ? v * 0.1 : v
                                }
                            }
                            got = [Float](repeating: .nan, count: filterCount * th * tw)
                            m.withUnsafeBufferPointer { pm in got.withUnsafeMutableBufferPointer { o in bias.withUnsafeBufferPointer { b in
                                pooled(pm.baseAddress!, filterCount, filters, tiles, th * tw, o.baseAddress! + rows.lowerBound * tw,
                                       PooledEpilogue(bias: b.baseAddress!, leaky: true))
                            } } }
                            assertBitEqual(got, activated, "\(t.name) pooled F(2) + leaky \(h)x\(w) f \(filters) rows \(rows)")
                            cases += 1
                        }
                    }
                }
            }
        }
        XCTAssertGreaterThan(cases, 100)
    }

    /// Same bits everywhere (NaN sentinels included); reports the first difference.
    func assertBitEqual(_ got: [Float], _ expected: [Float], _ what: @autoclosure () -> String,
                        file: StaticString = #filePath, line: UInt = #line) {
        let result = compareBits(got, expected)
        XCTAssertTrue(result.passed, "\(what()): \(result)", file: file, line: line)
    }
}
