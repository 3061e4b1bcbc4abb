// INT8 Winograd F(4x4, 3x3) and F(2x2, 3x3) (the engine's `winograd4-int8`, `winograd2-int8`),
// what surrounds their 16-bit pair GEMM (Int16Pairs.swift). The input is quantized as for INT8
// im2col (u8 per tensor, the calibrated scale and zero point) and its d = q - zeroPoint
// (-255...255; padding is 0) transformed exactly: V = Bᵀ d B is at most 100 x 255 in magnitude for
// F(4x4), 4 x 255 for F(2x2), an int16, and is computed by the level's SIMD FP32 transform, exact
// on integers this small, then packed as int16 pairs. M[xi] = U[xi] · V[xi] comes out of the GEMM
// as floats (scaled by the input's scale x the kernel's), and the output transform is the FP32 one.
// - F(4x4): the kernels' transforms U = G g Gᵀ (Winograd4.swift, in float) are quantized per
//   (position, filter) to 10 bits (`Int16Pairs.kernelLimit`). Accuracy measured before building
//   (scripts/int8-winograd-error.py): as close to FP32 as INT8 im2col on every yolov3-tiny 3x3 layer.
// - F(2x2): the weights are quantized per filter as INT8 im2col quantizes them (s8, `quantizeWeights`),
//   and 4 G g Gᵀ of those integers is an exact int16 (at most 9 x 127): every product sum is INT8
//   im2col's, only the float output transform rounds differently. 16 positions of int16 kernels
//   take 3.6 bytes per weight, F(4x4)'s 36 take 8.

/// d = q - zeroPoint of `count` floats, as exact integers in floats (-levels...levels: 255, or
/// 1023 for 10-bit activations): q as `Int8Quantization.quantize` rounds it (the same float
/// operations; the rounded value read back as a float, not from the mantissa bits). The FP32 input
/// transforms are then exact on these planes: their sums of small integers stay below 2^24 (at
/// most 100 x 255 for F(4x4), 4 x 1023 for F(2x2)).
public func winogradIntegerPlanes(_ src: UnsafePointer<Float>, count: Int, quantization q: Int8Quantization,
                                  into dst: UnsafeMutablePointer<Float>) {
    let (inverse, zero, top) = (q.inverseScale, Float(q.zeroPoint), Float(q.levels))
    for i in 0..<count {
        var t = src[i] * inverse + zero
        t = t < 0 ? 0 : t
        t = t > top ? top : t
        dst[i] = ((t + 12_582_912) - 12_582_912) - zero
    }
}

/// An exact integer float (|x| < 2^22) as the 16 low bits of its two's complement: x + 1.5 x 2^23
/// has the exponent of 2^23, so its bit pattern is that of 1.5 x 2^23 plus x (no conversion that
/// could trap, so the loops vectorize).
@inline(__always)
func winogradInt16(_ x: Float) -> UInt32 {
    ((x + 12_582_912).bitPattern &- Float(12_582_912).bitPattern) & 0xFFFF
}

/// V in place: `positions` (36 for F(4x4), 16 for F(2x2)) matrices of `channels` x `tiles` floats
/// (exact integers, |v| < 2^15, as the input transform of `winogradIntegerPlanes` makes them)
/// become as many matrices of ceil(channels / 2) x tiles UInt32s from the start of `v`, each the
/// int16 values of channels 2g (bits 0-15) and 2g + 1 (bits 16-31; 0 past the last channel): the B
/// operand of the pair GEMM; here the columns (tiles) `columns` of them. In place because every
/// word is written at or before the first float it is made from; a word and a float alias only in
/// the same column, so threads may pack disjoint column ranges at once.
public func packWinogradPairs(_ v: UnsafeMutablePointer<Float>, positions: Int, channels: Int, tiles: Int,
                              columns: Range<Int>) {
    let pairs = (channels + 1) / 2
    let words = UnsafeMutableRawPointer(v).assumingMemoryBound(to: UInt32.self)
    for xi in 0..<positions {
        for g in 0..<pairs {
            let lo = v + (xi * channels + 2 * g) * tiles, dst = words + (xi * pairs + g) * tiles
            if 2 * g + 1 < channels {
                let hi = lo + tiles
                for t in columns { dst[t] = winogradInt16(lo[t]) | winogradInt16(hi[t]) << 16 }
            } else {
                for t in columns { dst[t] = winogradInt16(lo[t]) }
            }
        }
    }
}

/// One position's transformed kernels (filters x channels floats, row stride `channels`)
/// quantized per filter, symmetric, to `Int16Pairs.kernelLimit`: q = round(u / scale) with
/// scale = max |u[f]| / limit (1 for a row of zeros), stored as int16 (row stride `channels`),
/// the scales in `scales`.
public func quantizeWinogradKernels(_ u: UnsafePointer<Float>, filters: Int, channels: Int,
                                    into q: UnsafeMutablePointer<Int16>, scales: UnsafeMutablePointer<Float>) {
    let limit = Float(Int16Pairs.kernelLimit)
    for f in 0..<filters {
        let row = u + f * channels, out = q + f * channels
        var largest: Float = 0
        for c in 0..<channels { largest = max(largest, abs(row[c])) }
        let scale = largest > 0 ? largest / limit : 1
        scales[f] = scale
        let inverse = 1 / scale
        for c in 0..<channels {
            out[c] = Int16(max(-limit, min(limit, (row[c] * inverse).rounded(.toNearestOrEven))))
        }
    }
}

/// The weights of `filters` (filters x `taps` floats each) quantized per filter as
/// `quantizeWeights` quantizes them (scale max |w| / 127, round to nearest even, -127...127), the
/// integers stored as floats in the same layout (for F(2x2)'s kernel transform, exact on them).
public func quantizeWeightsAsFloats(_ w: UnsafePointer<Float>, filters: Int, taps: Int,
                                    into q: UnsafeMutablePointer<Float>, scales: UnsafeMutablePointer<Float>) {
    for f in 0..<filters {
        let row = w + f * taps, out = q + f * taps
        let scale = int8WeightScale(row, count: taps)
        scales[f] = scale
        for i in 0..<taps { out[i] = int8Weight(row[i], scale: scale) }
    }
}

/// `count` floats that are exact multiples of 1/4 (F(2x2)'s G g Gᵀ of integer kernels), times 4,
/// as int16 (|4u| <= 9 x 127).
public func winograd2IntegerKernels(_ u: UnsafePointer<Float>, count: Int, into q: UnsafeMutablePointer<Int16>) {
    for i in 0..<count { q[i] = Int16(4 * u[i]) }
}
