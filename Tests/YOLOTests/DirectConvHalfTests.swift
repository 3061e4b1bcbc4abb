import XCTest
@testable @_spi(Kernels) import YOLOEngine
@testable import YOLOCore
import YOLOKernels
import YOLOReference

/// The direct 3x3 conv + 2x2/2 max pool in FP16 arithmetic (DirectConvHalf.swift), against a naive
/// FP16 reference: inputs and weights rounded to FP16, each multiply-add rounded once to FP16 in
/// the kernel's order (channel, ky, kx, padded taps included), the pool of the sums in FP32. With
/// AVX-512 FP16 (vfmadd231ph, one rounding) bit for bit; the avx2 level's software model of ARM's
/// FP16 arithmetic rounds each multiply-add twice (FP32, then FP16), so within a few FP16 ulps.
final class DirectConvHalfTests: XCTestCase {
    /// (name, kernels, exact): the FP16 direct kernels this machine runs (on x86 the avx2 level's
    /// model too, as `GemmKernelTests.fp16Levels`).
    var levels: [(String, DirectConvFunctions, Bool)] {
        #if arch(x86_64)
        let sets = KernelLevel.supported.compactMap { $0.kernelSet?.fp16 }
            .filter { HostCPU.features.union(.fp16).isSuperset(of: $0.requires) }
        return sets.compactMap { k in k.direct.map { (k.gemm.level, $0, k.dot == "vfmadd231ph") } }
        #else
        return KernelLevel.supported.compactMap { $0.fp16Kernels }.compactMap { k in k.direct.map { (k.gemm.level, $0, true) } }
        #endif
    }

    /// The FP16 sums of conv (no bias) then the pool, as the kernel is specified.
    func reference(_ x: [Float], c: Int, h: Int, w: Int, weights: [Float], filters: Int) -> [Float] {
        let (ph, pw) = (h / 2, w / 2)
        var out = [Float](repeating: 0, count: filters * ph * pw)
        let xs = x.map { Float(Float16($0)) }, ws = weights.map { Float(Float16($0)) }
        func conv(_ f: Int, _ y: Int, _ xx: Int) -> Float {
            var acc = Float16(0)
            for ch in 0..<c {
                for ky in 0..<3 {
                    for kx in 0..<3 {
                        let (iy, ix) = (y + ky - 1, xx + kx - 1)
                        let v = iy >= 0 && iy < h && ix >= 0 && ix < w ? xs[(ch * h + iy) * w + ix] : 0
                        // One rounding: the product of two halves and the sum are exact in Double.
                        acc = Float16(Double(acc) + Double(ws[(f * c + ch) * 9 + ky * 3 + kx]) * Double(v))
                    }
                }
            }
            return Float(acc)
        }
        for f in 0..<filters {
            for py in 0..<ph {
                for px in 0..<pw {
                    out[(f * ph + py) * pw + px] = max(max(conv(f, 2 * py, 2 * px), conv(f, 2 * py, 2 * px + 1)),
                                                       max(conv(f, 2 * py + 1, 2 * px), conv(f, 2 * py + 1, 2 * px + 1)))
                }
            }
        }
        return out
    }

    /// Shapes around the vectors (8 and 32 column pairs), the blocks of 8 filters and the channel
    /// limit (16), split into row ranges as threads split them.
    func testMatchesTheFP16Reference() throws {
        let levels = self.levels
        guard !levels.isEmpty else { throw XCTSkip("no FP16 direct kernels here (no FP16 arithmetic, nor its model)") }
        var rng = SeededRandom(seed: 23)
        for (c, h, w, filters) in [(3, 6, 66, 16), (1, 2, 2, 5), (4, 4, 130, 9), (16, 4, 18, 8), (2, 8, 64, 17), (3, 2, 16, 24)] {
            let x = rng.floats(c * h * w), weights = rng.floats(filters * c * 9)
            let want = reference(x, c: c, h: h, w: w, weights: weights, filters: filters)
            for (name, k, exact) in levels {
                var packed = [Float](repeating: .nan, count: k.packedSize(filters: filters, channels: c))
                k.pack(weights, filters: filters, channels: c, into: &packed)
                for split in [[0..<h / 2], [0..<1, 1..<h / 2]] where split.allSatisfy({ !$0.isEmpty }) {
                    var got = [Float](repeating: .nan, count: want.count)
                    var scratch = [Float](repeating: .nan, count: k.scratchSize(channels: c, width: w))
                    for rows in split {
                        k.pooledRows(x, height: h, width: w, channels: c, packed: packed, filters: filters, rows: rows,
                                     into: &got, scratch: &scratch)
                    }
                    var worst: Float = 0
                    for i in 0..<want.count {
                        let ulp = Float(Float16(want[i]).ulp)
                        worst = max(worst, abs(got[i] - want[i]) / ulp)
                    }
                    let what = "\(name) c \(c) \(h)x\(w) filters \(filters) rows \(split)"
                    if exact {
                        XCTAssertEqual(got, want, what)
                    } else {
                        XCTAssertLessThanOrEqual(worst, 4, "\(what): \(worst) FP16 ulps from the reference")
                    }
                    XCTAssertFalse(got.contains { $0.isNaN }, what)
                    XCTAssertEqual(try Self.withEpilogue(k, x, c: c, h: h, w: w, packed: packed, filters: filters, split: split),
                                   Self.leakyAfter(got, filters: filters), what)
                }
            }
        }
    }

    /// The kernel's fused bias + leaky (`PooledEpilogue`) is biasActivate's values on its raw
    /// pooled sums, bit for bit: here and for the FP32 direct kernels of every level.
    func testFusedEpilogueIsTheSeparatePass() throws {
        var rng = SeededRandom(seed: 29)
        let (c, h, w, filters) = (3, 6, 70, 11)
        let x = rng.floats(c * h * w), weights = rng.floats(filters * c * 9)
        for set in KernelLevel.supported.compactMap(\.kernelSet) {
            let k = set.direct
            var packed = [Float](repeating: .nan, count: k.packedSize(filters: filters, channels: c))
            k.pack(weights, filters: filters, channels: c, into: &packed)
            var raw = [Float](repeating: .nan, count: filters * h / 2 * w / 2)
            var scratch = [Float](repeating: .nan, count: k.scratchSize(channels: c, width: w))
            k.pooledRows(x, height: h, width: w, channels: c, packed: packed, filters: filters, rows: 0..<h / 2, into: &raw,
                         scratch: &scratch)
            XCTAssertEqual(try Self.withEpilogue(k, x, c: c, h: h, w: w, packed: packed, filters: filters, split: [0..<1, 1..<h / 2]),
                           Self.leakyAfter(raw, filters: filters), set.name)
        }
    }

    static func bias(_ filters: Int) -> [Float] { (0..<filters).map { Float($0 % 4) * 0.9 - 1.3 } }

    /// v + bias, then 0.1 v where negative (biasActivate's leaky), per filter plane.
    static func leakyAfter(_ raw: [Float], filters: Int) -> [Float] {
        let plane = raw.count / filters, b = bias(filters)
        return raw.enumerated().map { (i: Int, x: Float) -> Float in
            let v: Float = x + b[i / plane]
            return v < 0 ? v * 0.1 : v
        }
    }

    static func withEpilogue(_ k: DirectConvFunctions, _ x: [Float], c: Int, h: Int, w: Int, packed: [Float], filters: Int,
                             split: [Range<Int>]) throws -> [Float] {
        var got = [Float](repeating: .nan, count: filters * h / 2 * w / 2)
        var scratch = [Float](repeating: .nan, count: k.scratchSize(channels: c, width: w))
        bias(filters).withUnsafeBufferPointer { b in
            for rows in split {
                k.pooledRows(x, height: h, width: w, channels: c, packed: packed, filters: filters, rows: rows, into: &got,
                             scratch: &scratch, epilogue: PooledEpilogue(bias: b.baseAddress!, leaky: true))
            }
        }
        return got
    }

    /// Sums round to FP16 as they go (an ulp of 2 past 2048). A 2x2 input of ones, weight 2048 at
    /// the center tap and 1 elsewhere: output (1, 0) sums 1, 1, 2048 (2050) and then 1: 2051, a tie,
    /// to the even 2052; (1, 1) likewise. FP32 sums give 2051 at every output.
    func testSumsRoundToFP16() throws {
        let levels = self.levels
        guard !levels.isEmpty else { throw XCTSkip("no FP16 direct kernels here") }
        let (h, w) = (2, 2)
        let x = [Float](repeating: 1, count: h * w)
        var weights = [Float](repeating: 1, count: 9)
        weights[4] = 2048
        for (name, k, _) in levels {
            var packed = [Float](repeating: 0, count: k.packedSize(filters: 1, channels: 1))
            k.pack(weights, filters: 1, channels: 1, into: &packed)
            var out: [Float] = [.nan]
            var scratch = [Float](repeating: .nan, count: k.scratchSize(channels: 1, width: w))
            k.pooledRows(x, height: h, width: w, channels: 1, packed: packed, filters: 1, rows: 0..<1, into: &out, scratch: &scratch)
            XCTAssertEqual(out[0], 2052, "\(name): FP16 sums (FP32 sums give 2051)")
        }
    }
}
