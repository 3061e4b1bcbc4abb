import XCTest
import YOLOReference
@testable @_spi(Kernels) import YOLOEngine
@testable import YOLOCore
import YOLOKernels

/// The INT8 kernels of every kernel level this CPU runs (vpdpbusd, vpmaddwd, the portable path)
/// against naive integer references: the GEMM's int32 sums bit for bit (so all levels agree),
/// with tails around the register tiles and cache blocks, and the grouped quantization bit for
/// bit against the scalar `Int8Quantization.quantize`.
final class Int8KernelTests: XCTestCase {
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state >> 33
        }
        mutating func float(_ lo: Float, _ hi: Float) -> Float { lo + (hi - lo) * Float(next() & 0xFFFFFF) / Float(1 << 24) }
    }

    /// Every level's INT8 kernels (every level this CPU runs has them).
    var levels: [(String, Int8Functions)] {
        KernelLevel.supported.map { level in
            guard let k = level.kernelSet?.int8 else { XCTFail("\(level) has no INT8 kernels"); fatalError() }
            return (level.rawValue, k)
        }
    }

    /// C = Float(A · B - comp) * scale for A (m x k s8), B (k x n u8, grouped), against
    /// YOLOReference's `Int8GemmCase` (the naive Int64 sums); C starts as NaN and its padding
    /// columns must stay NaN. `extreme`: every value at the end of its range (255 and +-127),
    /// where a saturating 16-bit path would go wrong.
    func check(_ name: String, _ kern: Int8Functions, m: Int, n: Int, k: Int, ldbPad: Int = 0, ldcPad: Int = 0,
               extreme: Bool = false, rowRanges: [Range<Int>]? = nil, line: UInt = #line) {
        var rng = SeededRandom(seed: UInt64(m * 131 + n * 17 + k * 7 + ldbPad))
        let t = Int8GemmCase(m: m, n: n, k: k, ldbPad: ldbPad, ldcPad: ldcPad, extreme: extreme, rng: &rng)
        let c = Self.run(kern, t, rowRanges: rowRanges ?? [0..<m])
        let want = t.expected(untouched: .nan)
        var bad = 0
        for i in 0..<c.count where c[i].bitPattern != want[i].bitPattern {
            if bad < 3 { XCTFail("\(name) \(m)x\(n)x\(k): C[\(i / t.ldc), \(i % t.ldc)] = \(c[i]), want \(want[i])", line: line) }
            bad += 1
        }
        XCTAssertEqual(bad, 0, "\(name) \(m)x\(n)x\(k) ldb+\(ldbPad) ldc+\(ldcPad): \(bad) wrong entries", line: line)
    }

    /// `t` through `kern` (packA, then gemm over `rowRanges`), C starting as NaN.
    static func run(_ kern: Int8Functions, _ t: Int8GemmCase, rowRanges: [Range<Int>]) -> [Float] {
        var c = [Float](repeating: .nan, count: t.m * t.ldc)
        var packed = [UInt8](repeating: 0xEE, count: kern.packedASize(m: t.m, k: t.k))
        var scratch = [UInt8](repeating: 0xEE, count: kern.scratchSize(m: t.m, n: t.n, k: t.k))
        t.a.withUnsafeBufferPointer { pa in
            packed.withUnsafeMutableBytes { kern.packA(pa.baseAddress!, lda: t.k, m: t.m, k: t.k, into: $0.baseAddress!) }
        }
        packed.withUnsafeBytes { pa in t.b.withUnsafeBufferPointer { pb in c.withUnsafeMutableBufferPointer { pc in
            scratch.withUnsafeMutableBytes { ps in
                for rows in rowRanges {
                    kern.gemm(m: t.m, n: t.n, k: t.k, packedA: pa.baseAddress!, b: pb.baseAddress!, ldb: t.ldb, c: pc.baseAddress!,
                              ldc: t.ldc, comp: t.comp, scale: t.scale, scratch: ps.baseAddress!, rows: rows)
                }
            }
        } } }
        return c
    }

    func testGemmSumsAreExactAtEveryLevel() {
        XCTAssertTrue(levels.count >= 1)
        // What `yolo version` lists as built is the registry (it once listed a fixed three).
        XCTAssertEqual(BuildInfo.kernelLevels, KernelLevel.allCases)
        #if arch(x86_64)
        XCTAssertEqual(KernelLevel.allCases.map(\.rawValue), ["baseline", "avx2", "avxvnni", "avx512", "avx512vnni", "amx"])
        #endif
        for (name, kern) in levels { checkShapes(name, kern) }
    }

    /// The shapes every level's INT8 GEMM is checked on.
    func checkShapes(_ name: String, _ kern: Int8Functions, line: UInt = #line) {
        // Tails around MR (4, 8) and NR (8, 12, 16, 32, 48), k around a group (4) and the kc blocks
        // (256 groups = 1024 steps: k = 1100 and 2100 span 2 and 3 blocks), n past nc (480-512); last
        // panels of 2 whole vectors (n = 80, 32), of 1 whole and a partial one (47, 169, 600).
        for (m, n, k) in [(1, 1, 1), (3, 5, 3), (4, 16, 4), (7, 17, 5), (8, 48, 27), (9, 47, 36), (17, 49, 144),
                          (33, 100, 257), (16, 600, 28), (5, 1, 1100), (12, 97, 2100), (64, 169, 288), (16, 80, 40), (8, 32, 9)] {
            check(name, kern, m: m, n: n, k: k, line: line)
        }
        check(name, kern, m: 11, n: 33, k: 19, ldbPad: 5, ldcPad: 3, line: line)
        // Every product at its largest, 2100 deep: a 16-bit saturating path would fail.
        check(name, kern, m: 9, n: 50, k: 2100, extreme: true, line: line)
        // Row ranges as threads take them (lower bounds multiples of MR), the rest untouched.
        let mr = kern.mr
        check(name, kern, m: 4 * mr + 3, n: 70, k: 40, rowRanges: [0..<mr, mr..<3 * mr, 3 * mr..<(4 * mr + 3)], line: line)
    }

    /// Weights are packed a band of filters at a time at load (Int8Weights: the s8 copy of one band,
    /// not of the layer, exists while packing): bands of MR rows and a last, partial one give the
    /// bytes one call for all rows gives, corrections included, at every level.
    func testPackingInBandsEqualsPackingAtOnce() {
        var rng = Random(state: 41)
        for (name, kern) in levels {
            let mr = kern.mr
            for (m, k) in [(3 * mr + 1, 37), (2 * mr, 2100), (mr - 1, 5)] {
                let a = (0..<m * k).map { _ in Int8(truncatingIfNeeded: Int(rng.next() % 255) - 127) }
                let size = kern.packedASize(m: m, k: k)
                var whole = [UInt8](repeating: 0xEE, count: size), banded = whole
                a.withUnsafeBufferPointer { pa in
                    whole.withUnsafeMutableBytes { kern.packA(pa.baseAddress!, lda: k, m: m, k: k, into: $0.baseAddress!) }
                    banded.withUnsafeMutableBytes { p in
                        for f0 in stride(from: 0, to: m, by: mr) {
                            kern.packA(pa.baseAddress! + f0 * k, lda: k, m: m, k: k, rows: f0..<min(m, f0 + mr), into: p.baseAddress!)
                        }
                    }
                }
                let first = banded.indices.first { banded[$0] != whole[$0] }
                XCTAssertNil(first, "\(name) \(m)x\(k): packed in bands, byte \(first ?? 0) differs from packing at once")
                XCTAssertFalse(whole.allSatisfy { $0 == 0xEE }, "\(name): packA wrote nothing")
            }
        }
    }

    func testGroupedQuantizationMatchesScalarAtEveryLevel() {
        var rng = Random(state: 9)
        for (lo, hi) in [(Float(0), Float(1)), (-0.37, 5.2), (-3, 2), (0, 0)] {
            let q = Int8Quantization(min: lo, max: hi)
            XCTAssertEqual(q.quantize(0), UInt32(q.zeroPoint), "0.0 is exactly the zero point")
            for (channels, plane) in [(3, 173), (4, 16), (5, 37), (16, 100), (1, 1)] {
                // Values beyond the range (clamped) and exact halves (ties to even).
                let src: [Float] = (0..<channels * plane).map { i in
                    i % 7 == 0 ? (Float(i % 50) + 0.5) * q.scale - Float(q.zeroPoint) * q.scale : rng.float(lo - 1, hi + 1)
                }
                let groups = int8ChannelGroups(channels)
                var want = [UInt32](repeating: 0, count: groups * plane)
                for g in 0..<groups { for i in 0..<plane { for j in 0..<4 {
                    let x = 4 * g + j < channels ? src[(4 * g + j) * plane + i] : 0
                    want[g * plane + i] |= q.quantize(x) << UInt32(8 * j)
                } } }
                for (name, kern) in levels {
                    var got = [UInt32](repeating: 0xDEAD_BEEF, count: groups * plane)
                    src.withUnsafeBufferPointer { s in got.withUnsafeMutableBufferPointer { d in
                        kern.quantize(s.baseAddress!, channels: channels, plane: plane, groups: 0..<groups, q, into: d.baseAddress!)
                    } }
                    XCTAssertEqual(got, want, "\(name): \(channels) channels x \(plane), range \(lo)...\(hi)")
                }
            }
        }
        // The scalar rule itself: round(x / scale) + zero point, clamped.
        let q = Int8Quantization(min: -1, max: 254)
        XCTAssertEqual(q.scale, 1)
        XCTAssertEqual(q.zeroPoint, 1)
        // x + 1 rounded to even: -0.5 -> 0.5 -> 0, 0.5 -> 1.5 -> 2, 1.5 -> 2.5 -> 2, 2.5 -> 3.5 -> 4.
        XCTAssertEqual([-5, -1, -0.5, 0.49, 0.5, 1.5, 2.5, 253.6, 300].map { q.quantize($0) }, [0, 0, 0, 1, 2, 2, 4, 255, 255])
    }

    func testWeightsQuantizedPerFilterInGroupedOrder() {
        // 2 filters, 5 channels (2 groups, the last with one channel), 3x3.
        let (filters, channels, k) = (2, 5, 3)
        var rng = Random(state: 3)
        var w = (0..<filters * channels * 9).map { _ in rng.float(-1, 1) }
        w[7] = 2.54                          // filter 0's largest: scale 0.02
        for i in 0..<channels * 9 { w[channels * 9 + i] = 0 }  // filter 1: all zero
        let columns = 2 * 9 * 4
        var q = [Int8](repeating: 99, count: filters * columns)
        var scales = [Float](repeating: 0, count: filters), sums = [Int32](repeating: 7, count: filters)
        quantizeWeights(w, filters: filters, channels: channels, kernel: k, into: &q, scales: &scales, sums: &sums)
        XCTAssertEqual(scales[0], 2.54 / 127)
        XCTAssertEqual(scales[1], 1, "a filter of zeros")
        XCTAssertEqual(sums[1], 0)
        XCTAssertEqual(sums[0], q[0..<columns].reduce(Int32(0)) { $0 + Int32($1) })
        for g in 0..<2 { for t in 0..<9 { for i in 0..<4 {
            let c = 4 * g + i, got = q[(g * 9 + t) * 4 + i]
            let want: Int8 = c < channels ? Int8((w[c * 9 + t] / scales[0]).rounded(.toNearestOrEven)) : 0
            XCTAssertEqual(got, want, "group \(g) tap \(t) channel \(i)")
        } } }
        XCTAssertEqual(q[(0 * 9 + 7) * 4 + 0], 127, "the largest weight is 127")
    }
}
