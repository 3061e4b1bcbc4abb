import Foundation
import XCTest
@testable import YOLOEngine
import YOLOKernels
import YOLOReference

/// The max pool's kernel against the naive reference bit for bit (windows of every size, the SPP
/// block's 5, 9 and 13, strides, paddings, windows wider than the input; ties of +0 and -0,
/// infinities, NaN), and [route] through a network at 1-3 threads, its copy split over threads
/// or not, against the concatenation written out.
final class PoolingRouteTests: XCTestCase {
    /// Values with many ties, signed zeros, infinities and a NaN.
    func awkward(_ count: Int, rng: inout SeededRandom) -> [Float] {
        let specials: [Float] = [0, -0.0, .infinity, -.infinity, .nan, -Float.greatestFiniteMagnitude, 1, -1]
        return (0..<count).map { _ in
            let r = rng.next() % 8
            return r < 3 ? specials[Int(rng.next() % UInt64(specials.count))] : Float(Int(rng.next() % 7)) - 3
        }
    }

    func testMaxPoolKernelMatchesNaiveBitForBit() {
        // (channels, height, width, size, stride, padding)
        let table: [(Int, Int, Int, Int, Int, Int)] = [
            (3, 19, 19, 5, 1, 4), (3, 19, 19, 9, 1, 8), (2, 19, 19, 13, 1, 12),   // yolov4's SPP
            (2, 10, 7, 3, 2, 2), (1, 11, 9, 3, 3, 2), (2, 6, 5, 7, 1, 6),          // window wider than the input
            (1, 9, 12, 4, 2, 3), (2, 8, 8, 3, 1, 0), (1, 5, 13, 5, 2, 4), (1, 1, 1, 3, 1, 2),
        ]
        var rng = SeededRandom(seed: 11)
        for (t, (c, h, w, size, stride, padding)) in table.enumerated() {
            let input = awkward(c * h * w, rng: &rng)
            let ref = Naive.maxPool(Naive.Tensor(channels: c, height: h, width: w, values: input), size: size, stride: stride,
                                    padding: padding)
            var out = [Float](repeating: 7, count: ref.values.count)
            input.withUnsafeBufferPointer { src in
                out.withUnsafeMutableBufferPointer { dst in
                    maxPool(src.baseAddress!, height: h, width: w, size: size, stride: stride, pad: padding,
                            outHeight: ref.height, outWidth: ref.width, channels: 0..<c, into: dst.baseAddress!)
                }
            }
            XCTAssertEqual(out.map(\.bitPattern), ref.values.map(\.bitPattern), "case \(t): \(c)x\(h)x\(w) size \(size) stride \(stride)")
        }
    }

    func testMaxPoolChannelRangeLeavesTheOthers() {
        var rng = SeededRandom(seed: 12)
        let (c, h, w) = (4, 9, 9)
        let input = awkward(c * h * w, rng: &rng)
        var out = [Float](repeating: 42, count: c * h * w)
        input.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                maxPool(src.baseAddress!, height: h, width: w, size: 5, stride: 1, pad: 4, outHeight: h, outWidth: w,
                        channels: 1..<3, into: dst.baseAddress!)
            }
        }
        XCTAssertTrue(out[0..<(h * w)].allSatisfy { $0 == 42 } && out[(3 * h * w)...].allSatisfy { $0 == 42 })
        XCTAssertFalse(out[(h * w)..<(3 * h * w)].contains(42))
    }

    /// Two routes: one above the size copied on one thread (split over the pool), one below, with
    /// groups, at 1, 2 and 3 threads.
    func testRouteConcatenatesAtEveryThreadCount() throws {
        let s = Shape(c: 8, h: 128, w: 160)   // 163,840 floats a layer; the first route copies 327,680
        XCTAssertGreaterThan(2 * s.count, Chunking.copyOnOneThread)
        XCTAssertLessThan(s.count / 2, Chunking.copyOnOneThread)
        let cfg = "[net]\nwidth=\(s.w)\nheight=\(s.h)\nchannels=\(s.c)\n\n"
            + "[maxpool]\nsize=3\nstride=1\n\n[route]\nlayers=-1,0\n\n[route]\nlayers=0\ngroups=2\ngroup_id=1\n"
        var rng = SeededRandom(seed: 13)
        let input = (0..<s.count).map { _ in rng.float() }
        let pooled = Naive.maxPool(Naive.Tensor(channels: s.c, height: s.h, width: s.w, values: input), size: 3, stride: 1,
                                   padding: 2).values
        let plane = s.h * s.w
        for threads in [1, 2, 3] {
            let n = try Network(cfgText: cfg, weights: weightsFile([]), threads: threads)
            try n.forward(input)
            XCTAssertEqual(Array(n.output(ofLayer: 1)), pooled + pooled, "\(threads) threads: route -1,0")
            XCTAssertEqual(Array(n.output(ofLayer: 2)), Array(pooled[(4 * plane)...]), "\(threads) threads: group 1 of 2")
        }
    }
}
