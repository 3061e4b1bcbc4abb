// INT8 im2col on 10-bit inputs (the calibration table's `a10` layers) with the level's 8-bit dot
// product, in two passes: q (0...1023) = 32 hi + lo with hi and lo in 0...31, each a u8 that
// every 8-bit dot takes, so
//
//     Σ w (q - zp) = 32 Σ w hi + Σ w lo - zp Σ w
//
// The INT8 GEMM (Int8Gemm.swift) runs over the hi planes leaving int32 sums in C, C is shifted
// left by 5, and the same GEMM over the lo planes adds to them and finishes: the exact integer
// sums of the 10-bit input, at half the 8-bit rate. Where the dot flips bytes to signed ones
// (`activationShift` s: sdot takes b - 128), each pass is short of s Σ w and the driver's
// correction adds it back once: the zero point's share becomes (zp - 32 s) Σ w
// (`tenBitComp`). Sums wrap in int32 as the 8-bit ones do; the true sum fits (at most
// 9 x channels x 1023 x 127), so the wrapped arithmetic is exact.
//
// Why: on ARM with dotprod (a Cortex-A76), the other 10-bit forms run on 16-bit pair products
// (`smlal`, 4 a cycle on an A76, Int16PairLaneKernel.swift) against `sdot`'s 16 per instruction,
// two a cycle: two sdot passes over 9 products beat one smlal pass over F(2x2)'s 4 (docs/precision.md). (LLVM's A55 model, the same level, says the reverse; `yolo tune` measures it.)
// Dots that accumulate floats (the pair dots) have no int32 sums to shift: none there.

/// The 10-bit product and quantization of micro-kernel `K`'s level.
public enum Int8TenBit<K: Int8MicroKernel> {
    /// C = the dequantized product of A (packed by `Int8PackedGemm<K>.packA`) with the 10-bit
    /// input's column matrices `hi` and `lo` (grouped, as for the 8-bit GEMM; row stride ldb),
    /// `comp` the zero point's share as `tenBitComp` gives it. Rows `rows` (from a multiple of MR).
    @inlinable @inline(__always)
    public static func gemm(m: Int, n: Int, k: Int, packedA: UnsafeRawPointer, hi: UnsafePointer<UInt32>,
                            lo: UnsafePointer<UInt32>, ldb: Int, c: UnsafeMutablePointer<Float>, ldc: Int,
                            comp: UnsafePointer<Int32>, scale: UnsafePointer<Float>, scratch: UnsafeMutableRawPointer,
                            kc: Int, nc: Int, rows: Range<Int>) {
        precondition(!K.Dot.accumulatesFloats, "Int8TenBit: the dot must keep int32 sums")
        let rows = rows.lowerBound..<min(m, rows.upperBound)
        guard !rows.isEmpty, n > 0, k > 0 else { return }
        Int8PackedGemm<K>.gemm(m: m, n: n, k: k, packedA: packedA, b: hi, ldb: ldb, c: c, ldc: ldc, comp: comp, scale: scale,
                               scratch: scratch, kc: kc, nc: nc, rowStart: rows.lowerBound, rowEnd: rows.upperBound,
                               finishLast: false)
        shiftSums(c, ldc: ldc, rows: rows, n: n)
        Int8PackedGemm<K>.gemm(m: m, n: n, k: k, packedA: packedA, b: lo, ldb: ldb, c: c, ldc: ldc, comp: comp, scale: scale,
                               scratch: scratch, kc: kc, nc: nc, rowStart: rows.lowerBound, rowEnd: rows.upperBound,
                               accumulateFirst: true)
    }

    /// The int32 sums in C (as bit patterns) times 32, wrapping.
    @inlinable @inline(__always)
    static func shiftSums(_ c: UnsafeMutablePointer<Float>, ldc: Int, rows: Range<Int>, n: Int) {
        let w = K.Dot.Acc.scalarCount
        for r in rows {
            let line = UnsafeMutableRawPointer(c + r * ldc)
            var j = 0
            while j + w <= n {
                line.storeBytes(of: line.loadUnaligned(fromByteOffset: 4 * j, as: K.Dot.Acc.self) &<< 5,
                                toByteOffset: 4 * j, as: K.Dot.Acc.self)
                j += w
            }
            while j < n {
                line.storeBytes(of: line.load(fromByteOffset: 4 * j, as: Int32.self) &<< 5, toByteOffset: 4 * j, as: Int32.self)
                j += 1
            }
        }
    }

    /// Planes `groups` of the grouped layout of `src` (channels planes of `plane` floats),
    /// quantized to 10 bits (q as `Int8Quantization.quantize` rounds, clamped to 0...1023: the
    /// rounding of `winogradIntegerPlanes`) and split: q >> 5 into `hi`, q & 31 into `lo` (plane g
    /// at + g * plane in each). Channels past the last: the zero point's halves.
    @inlinable @inline(__always)
    public static func quantize(_ src: UnsafePointer<Float>, channels: Int, plane: Int, groups: Range<Int>,
                                inverseScale: Float, zeroPoint: Int32, hi: UnsafeMutablePointer<UInt32>,
                                lo: UnsafeMutablePointer<UInt32>) {
        typealias A = K.Dot.Acc
        typealias F = K.Dot.Floats
        let w = A.scalarCount
        let inverse = F(repeating: inverseScale), zero = F(repeating: Float(zeroPoint))
        let top = A(repeating: Int32(bitPattern: Float(1023).bitPattern))
        let magic = F(repeating: 12_582_912), magicBits = A(repeating: Int32(bitPattern: Float(12_582_912).bitPattern))
        @inline(__always) func q(_ p: UnsafePointer<Float>) -> A {
            let t = clampToLevels(UnsafeRawPointer(p).loadUnaligned(as: F.self) * inverse + zero, top: top)
            return unsafeBitCast(t + magic, to: A.self) &- magicBits
        }
        let zq = A(repeating: zeroPoint), (m5, m31) = (A(repeating: 5), A(repeating: 31))
        for g in groups {
            let c = 4 * g
            @inline(__always) func channel(_ b: Int) -> UnsafePointer<Float>? { c + b < channels ? src + (c + b) * plane : nil }
            let p = (channel(0), channel(1), channel(2), channel(3))
            @inline(__always) func source(_ b: Int) -> UnsafePointer<Float>? { b == 0 ? p.0 : b == 1 ? p.1 : b == 2 ? p.2 : p.3 }
            let (dh, dl) = (hi + g * plane, lo + g * plane)
            var i = 0
            while i + w <= plane {
                var h = A(), l = A()
                for b in 0..<4 {
                    let v = source(b).map { q($0 + i) } ?? zq
                    h |= (v &>> m5) &<< A(repeating: Int32(8 * b))
                    l |= (v & m31) &<< A(repeating: Int32(8 * b))
                }
                UnsafeMutableRawPointer(dh + i).storeBytes(of: h, as: A.self)
                UnsafeMutableRawPointer(dl + i).storeBytes(of: l, as: A.self)
                i += w
            }
            while i < plane {
                var h: UInt32 = 0, l: UInt32 = 0
                for b in 0..<4 {
                    let v = source(b).map { tenBitQuantizeScalar($0[i], inverseScale: inverseScale, zeroPoint: Float(zeroPoint)) }
                        ?? UInt32(zeroPoint)
                    h |= (v >> 5) << (8 * b)
                    l |= (v & 31) << (8 * b)
                }
                dh[i] = h
                dl[i] = l
                i += 1
            }
        }
    }
}

/// One value's 10-bit q: x * inverseScale + zeroPoint clamped to [0, 1023], rounded to nearest
/// even (as `winogradIntegerPlanes`).
@inlinable @inline(__always)
public func tenBitQuantizeScalar(_ x: Float, inverseScale: Float, zeroPoint: Float) -> UInt32 {
    var t = x * inverseScale + zeroPoint
    t = t < 0 ? 0 : t
    t = t > 1023 ? 1023 : t
    return (t + 12_582_912).bitPattern & 0x3FF
}

/// The zero point's share of a 10-bit product for filter weight sum `sum`, as `Int8TenBit.gemm`
/// takes it at a level whose dot flips bytes by `activationShift`.
@inlinable @inline(__always)
public func tenBitComp(zeroPoint: Int32, activationShift: Int32, weightSum: Int32) -> Int32 {
    (zeroPoint &- 32 &* activationShift) &* weightSum
}

/// The padding word of a 10-bit input's hi or lo planes (the zero point's half in every byte).
@inlinable @inline(__always)
public func tenBitPadding(zeroPoint: Int32) -> (hi: UInt32, lo: UInt32) {
    let z = UInt32(truncatingIfNeeded: zeroPoint)
    return ((z >> 5) &* 0x0101_0101, (z & 31) &* 0x0101_0101)
}
