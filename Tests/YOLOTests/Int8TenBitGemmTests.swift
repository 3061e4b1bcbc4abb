import XCTest
import YOLOReference
@testable @_spi(Kernels) import YOLOEngine
import YOLOKernels

/// The two-pass 10-bit INT8 GEMM (Int8TenBit.swift: q = 32 hi + lo, the hi pass's int32 sums
/// shifted, the lo pass added) at every level this CPU runs and with the modelled arm64
/// instructions (sdot's flipped bytes, smull's widening dot), against YOLOReference's naive
/// Int64 sums bit for bit; and the split quantization against the scalar 10-bit rounding, which is
/// INT8 Winograd's (`winogradIntegerPlanes`).
final class Int8TenBitGemmTests: XCTestCase {
    /// Every level's INT8 kernels and the arm64 levels' (modelled instructions).
    var kernels: [(String, Int8Functions)] {
        KernelLevel.supported.compactMap { level in level.kernelSet?.int8.map { (level.rawValue, $0) } } + Int8KernelTests.armModels
    }

    func check(_ name: String, _ kern: Int8Functions, m: Int, n: Int, k: Int, ldbPad: Int = 0, ldcPad: Int = 0,
               extreme: Bool = false, rowRanges: [Range<Int>]? = nil) {
        var rng = SeededRandom(seed: UInt64(m * 131 + n * 17 + k * 7 + ldbPad))
        let t = TenBitGemmCase(m: m, n: n, k: k, ldbPad: ldbPad, ldcPad: ldcPad, extreme: extreme, rng: &rng)
        let comp = (0..<m).map { tenBitComp(zeroPoint: t.zeroPoint, activationShift: kern.activationShift, weightSum: t.weightSum($0)) }
        var c = [Float](repeating: .nan, count: m * t.ldc)
        var packed = [UInt8](repeating: 0xEE, count: kern.packedASize(m: m, k: k))
        var scratch = [UInt8](repeating: 0xEE, count: kern.scratchSize(m: m, n: n, k: k))
        t.a.withUnsafeBufferPointer { pa in
            packed.withUnsafeMutableBytes { kern.packA(pa.baseAddress!, lda: k, m: m, k: k, into: $0.baseAddress!) }
        }
        packed.withUnsafeBytes { pa in t.hi.withUnsafeBufferPointer { hi in t.lo.withUnsafeBufferPointer { lo in
            c.withUnsafeMutableBufferPointer { pc in scratch.withUnsafeMutableBytes { ps in
                for rows in rowRanges ?? [0..<m] {
                    kern.tenBitGemm(m: m, n: n, k: k, packedA: pa.baseAddress!, hi: hi.baseAddress!, lo: lo.baseAddress!,
                                    ldb: t.ldb, c: pc.baseAddress!, ldc: t.ldc, comp: comp, scale: t.scale,
                                    scratch: ps.baseAddress!, rows: rows)
                }
            } }
        } } }
        let want = t.expected(untouched: .nan)
        let bad = c.indices.filter { c[$0].bitPattern != want[$0].bitPattern }
        XCTAssertEqual(bad.count, 0, "\(name) \(m)x\(n)x\(k) ldb+\(ldbPad) ldc+\(ldcPad) extreme \(extreme): \(bad.count) wrong, "
                       + "first C[\(bad.first.map { $0 / t.ldc } ?? 0), \(bad.first.map { $0 % t.ldc } ?? 0)]")
    }

    func testTenBitGemmIsExactAtEveryLevel() {
        XCTAssertTrue(kernels.allSatisfy { $0.1.tenBitGemm != nil }, "every level's 8-bit dot keeps int32 sums")
        for (name, kern) in kernels {
            // Tails around the tiles, k groups, kc blocks (k 1100 and 2100: 2 and 3), nc blocks.
            for (m, n, k) in [(1, 1, 1), (3, 5, 3), (8, 48, 27), (9, 47, 36), (17, 49, 144), (33, 100, 257), (16, 600, 28),
                              (5, 1, 1100), (12, 97, 2100), (64, 169, 288)] {
                check(name, kern, m: m, n: n, k: k)
            }
            check(name, kern, m: 11, n: 33, k: 19, ldbPad: 5, ldcPad: 3)
            // Every product at its largest, 2100 deep.
            check(name, kern, m: 9, n: 50, k: 2100, extreme: true)
            let mr = kern.mr
            check(name, kern, m: 4 * mr + 3, n: 70, k: 40, rowRanges: [0..<mr, mr..<3 * mr, 3 * mr..<(4 * mr + 3)])
        }
    }

    func testTenBitQuantizationMatchesTheScalarRounding() {
        var rng = SeededRandom(seed: 61)
        for (lo, hi) in [(Float(0), Float(1)), (-0.37, 5.2), (-3, 2)] {
            let q = Int8Quantization(min: lo, max: hi, levels: 1023)
            for (channels, plane) in [(3, 173), (4, 16), (5, 37), (16, 100), (1, 1)] {
                // Values past the range (clamped) and exact halves (ties to even).
                let src: [Float] = (0..<channels * plane).map { i in
                    i % 7 == 0 ? (Float(i % 900) + 0.5 - Float(q.zeroPoint)) * q.scale : rng.float(lo - 1, hi + 1)
                }
                // The scalar rounding is INT8 Winograd's: d = q - zero point.
                var d = [Float](repeating: 0, count: src.count)
                src.withUnsafeBufferPointer { s in d.withUnsafeMutableBufferPointer {
                    winogradIntegerPlanes(s.baseAddress!, count: s.count, quantization: q, into: $0.baseAddress!)
                } }
                let scalar = src.map { tenBitQuantizeScalar($0, inverseScale: q.inverseScale, zeroPoint: Float(q.zeroPoint)) }
                XCTAssertEqual(scalar.map { Float($0) - Float(q.zeroPoint) }, d, "\(lo)...\(hi)")
                let groups = int8ChannelGroups(channels)
                var wantHi = [UInt32](repeating: 0, count: groups * plane), wantLo = wantHi
                for g in 0..<groups { for i in 0..<plane { for j in 0..<4 {
                    let v = 4 * g + j < channels ? scalar[(4 * g + j) * plane + i] : UInt32(q.zeroPoint)
                    wantHi[g * plane + i] |= (v >> 5) << UInt32(8 * j)
                    wantLo[g * plane + i] |= (v & 31) << UInt32(8 * j)
                } } }
                for (name, kern) in kernels {
                    var gotHi = [UInt32](repeating: 0xDEAD_BEEF, count: groups * plane), gotLo = gotHi
                    src.withUnsafeBufferPointer { s in gotHi.withUnsafeMutableBufferPointer { h in
                        gotLo.withUnsafeMutableBufferPointer { l in
                            kern.quantizeTenBit(s.baseAddress!, channels: channels, plane: plane, groups: 0..<groups, q,
                                                hi: h.baseAddress!, lo: l.baseAddress!)
                        }
                    } }
                    XCTAssertEqual(gotHi, wantHi, "\(name) \(channels)x\(plane) \(lo)...\(hi): hi")
                    XCTAssertEqual(gotLo, wantLo, "\(name) \(channels)x\(plane) \(lo)...\(hi): lo")
                }
            }
        }
        // The padding words: the zero point's halves in every byte.
        XCTAssertEqual(tenBitPadding(zeroPoint: 0x2A5).hi, 0x1515_1515)
        XCTAssertEqual(tenBitPadding(zeroPoint: 0x2A5).lo, 0x0505_0505)
    }

    /// The bit-pattern clamp the 10-bit and pair quantizers share, against min(max(x, 0), top)
    /// at the edges: signed zeros, subnormals, a ulp either side of 0 and of each top, infinities.
    func testClampToLevelsIsTheNaiveClamp() {
        for top: Float in [255, 1023, 32767] {
            let values: [Float] = [0, -0, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .leastNormalMagnitude, 0.5, -0.5,
                                   top, top.nextUp, top.nextDown, top * 2, -top, .infinity, -.infinity,
                                   .greatestFiniteMagnitude, -.greatestFiniteMagnitude, 12.25, 1e-30]
            let topBits = Int32(bitPattern: top.bitPattern)
            func check<F: SIMD, A: SIMD>(_: F.Type, _: A.Type) where F.Scalar == Float, A.Scalar == Int32 {
                for start in Swift.stride(from: 0, to: values.count, by: F.scalarCount) {
                    var x = F(), want = [Float]()
                    for i in 0..<F.scalarCount {
                        x[i] = values[(start + i) % values.count]
                        want.append(Swift.min(Swift.max(x[i], 0), top))
                    }
                    let got = clampToLevels(x, top: A(repeating: topBits))
                    // Bit for bit, but -0 may come out as +0 (both round to 0).
                    XCTAssertEqual((0..<F.scalarCount).map { got[$0] == 0 ? 0 : got[$0].bitPattern },
                                   want.map { $0 == 0 ? 0 : $0.bitPattern }, "top \(top), \(F.scalarCount) lanes from \(start)")
                }
            }
            check(SIMD4<Float>.self, SIMD4<Int32>.self)
            check(SIMD8<Float>.self, SIMD8<Int32>.self)
            check(SIMD16<Float>.self, SIMD16<Int32>.self)
        }
    }
}
