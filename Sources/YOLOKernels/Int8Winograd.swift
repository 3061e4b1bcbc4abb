// INT8 Winograd F(4x4, 3x3) (the engine's `winograd4-int8`), what surrounds its 16-bit pair GEMM
// (Int16Pairs.swift). The input is quantized as for INT8 im2col (u8 per tensor, the calibrated
// scale and zero point) and its d = q - zeroPoint (-255...255; padding is 0) transformed exactly:
// V = Bᵀ d B is at most 100 x 255 in magnitude, an int16, and is computed by the level's SIMD FP32
// transform, exact on integers this small, then packed as int16 pairs. The kernels'
// transforms U = G g Gᵀ (Winograd4.swift, in float) are quantized per (position, filter) to
// 10 bits (`Int16Pairs.kernelLimit`). M[xi] = U[xi] · V[xi] then comes out of the GEMM as floats
// (scaled by the input's scale x the kernel's), and the output transform is the FP32 one.
// Accuracy measured before building (scripts/int8-winograd-error.py): with 10-bit kernels as
// close to FP32 as INT8 im2col on every yolov3-tiny 3x3 layer.

/// d = q - zeroPoint of `count` floats, as exact integers in floats (-255...255): q as
/// `Int8Quantization.quantize` rounds it (the same float operations; the rounded value read back
/// as a float, not from the mantissa bits). The FP32 input transform of F(4x4) is then exact on
/// these planes: its sums of small integers stay below 2^24 (at most 100 x 255).
public func winogradIntegerPlanes(_ src: UnsafePointer<Float>, count: Int, quantization q: Int8Quantization,
                                  into dst: UnsafeMutablePointer<Float>) {
    let (inverse, zero) = (q.inverseScale, Float(q.zeroPoint))
    for i in 0..<count {
        var t = src[i] * inverse + zero
        t = t < 0 ? 0 : t
        t = t > 255 ? 255 : t
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

/// V in place: 36 matrices of `channels` x `tiles` floats (exact integers, |v| < 2^15, as the
/// F(4x4) input transform of `winogradIntegerPlanes` makes them) become 36 matrices of
/// ceil(channels / 2) x tiles UInt32s from the start of `v`, each the int16 values of channels 2g
/// (bits 0-15) and 2g + 1 (bits 16-31; 0 past the last channel): the B operand of the pair GEMM.
/// In place because every word is written at or before the first float it is made from.
public func packWinogradPairs(_ v: UnsafeMutablePointer<Float>, channels: Int, tiles: Int) {
    let pairs = (channels + 1) / 2
    let words = UnsafeMutableRawPointer(v).assumingMemoryBound(to: UInt32.self)
    for xi in 0..<36 {
        for g in 0..<pairs {
            let lo = v + (xi * channels + 2 * g) * tiles, dst = words + (xi * pairs + g) * tiles
            if 2 * g + 1 < channels {
                let hi = lo + tiles
                for t in 0..<tiles { dst[t] = winogradInt16(lo[t]) | winogradInt16(hi[t]) << 16 }
            } else {
                for t in 0..<tiles { dst[t] = winogradInt16(lo[t]) }
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
