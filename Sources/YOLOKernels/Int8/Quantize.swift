// Quantization for the INT8 convolutions: activations asymmetric u8 per tensor (scale and zero
// point from a calibrated range), weights symmetric s8 per filter, and the grouped layout both
// take for the INT8 GEMM (Int8Gemm.swift): 4 channels of one pixel in one UInt32.
//
// Layout: a convolution's input (channels x h x w floats) is quantized once into ceil(channels / 4)
// planes of h x w UInt32s, byte i of plane g holding channel 4g + i (the zero point past the last
// channel). The column matrix of the convolution is then im2col of those planes (im2col's rows are
// (group, ky, kx), each UInt32 holding 4 channels: the k-order is (group, ky, kx, channel % 4)),
// and a 1x1 convolution's column matrix is the planes themselves. The weights are reordered the
// same way at load (`quantizeWeights`), so the products are the convolution's.

/// How a tensor's floats map to u8: q = clamp(round(x / scale) + zeroPoint, 0, 255), with 0.0
/// exactly representable (q = zeroPoint), so padding is the zero point. With `levels` 1023 the
/// same over 0...1023 (10-bit activations): only INT8 Winograd F(2x2) takes those (its int16
/// transform holds 4 x 1023; the u8 kernels, `quantize` included, are for 255 alone).
public struct Int8Quantization: Sendable, Equatable {
    public let scale: Float
    public let inverseScale: Float
    public let zeroPoint: Int32
    /// The largest q: 255 (u8), 1023 (10 bits) or 4095 (12 bits: the pair 1x1 form).
    public let levels: Int32

    /// For values clipped to [min, max] (widened to hold 0), in `levels` + 1 steps.
    public init(min lo: Float, max hi: Float, levels: Int32 = 255) {
        precondition([255, 1023, 4095].contains(levels), "Int8Quantization: levels must be 255, 1023 or 4095")
        self.levels = levels
        let lo = Swift.min(lo, 0), hi = Swift.max(hi, 0)
        let range = hi - lo
        guard range.isFinite, range > 1e-30 else {
            (scale, inverseScale, zeroPoint) = (1, 1, 0)
            return
        }
        scale = range / Float(levels)
        inverseScale = 1 / scale
        zeroPoint = Int32(Swift.min(Float(levels), Swift.max(0, (-lo / scale).rounded(.toNearestOrEven))))
    }

    /// One value's u8 (the scalar reference of `Int8Quantize`, bit for bit): t = x * inverseScale +
    /// zeroPoint, clamped to [0, 255], rounded to nearest even by adding 1.5 * 2^23 (the sum's low
    /// mantissa bits are then the integer: no float-to-int conversion, in SIMD lanes neither).
    @inlinable @inline(__always)
    public func quantize(_ x: Float) -> UInt32 {
        int8QuantizeScalar(x, inverseScale: inverseScale, zeroPoint: Float(zeroPoint))
    }
}

/// `x` clamped to [0, top] lane by lane, on the bit patterns (`A` the same lanes as Int32s, `top`
/// the bit pattern of the largest level): a negative float's pattern is a negative int32, zeroed
/// by its sign mask; then, both non-negative, the patterns order as the floats, and min(b, top) =
/// top + min(b - top, 0). Generic SIMD compares would become a loop over the lanes; these are
/// shifts and ands. The same values as the scalar references' selects for every non-NaN x (-0
/// becomes +0, which rounds the same; infinities the ends). The 10-bit and 16-bit pair kernels'
/// quantizers round the result by adding 1.5 x 2^23.
@inlinable @inline(__always)
public func clampToLevels<F: SIMD, A: SIMD>(_ x: F, top: A) -> F where F.Scalar == Float, A.Scalar: FixedWidthInteger {
    // (A's scalar is Int32; generic rather than equal to it so that a vector's MaskStorage
    // qualifies.)
    let sign = A.Scalar(truncatingIfNeeded: A.Scalar.bitWidth - 1)
    var b = unsafeBitCast(x, to: A.self)
    b = b & ~(b &>> sign)
    let over = b &- top
    return unsafeBitCast(top &+ (over & (over &>> sign)), to: F.self)
}

@inlinable @inline(__always)
func int8QuantizeScalar(_ x: Float, inverseScale: Float, zeroPoint: Float) -> UInt32 {
    var t = x * inverseScale + zeroPoint
    t = t < 0 ? 0 : t
    t = t > 255 ? 255 : t
    return (t + 12_582_912).bitPattern & 0xFF
}

/// Weights w (filters x channels x k x k, Darknet's order) quantized per filter, symmetric:
/// scales[f] = max |w[f]| / 127 (1 for a filter of zeros), q = round(w / scales[f]) in -127...127,
/// reordered to the grouped layout: row f of `q` has groups(channels) x k x k x 4 columns, column
/// ((g * k + ky) * k + kx) * 4 + i holding channel 4g + i (zero past the last channel). `sums[f]`
/// is the sum of row f (the zero point's share of a product is zeroPoint x sums[f]).
public func quantizeWeights(_ w: UnsafePointer<Float>, filters: Int, channels: Int, kernel k: Int,
                            into q: UnsafeMutablePointer<Int8>, scales: UnsafeMutablePointer<Float>,
                            sums: UnsafeMutablePointer<Int32>) {
    let taps = k * k, groups = (channels + 3) / 4, columns = groups * taps * 4
    for f in 0..<filters {
        let row = w + f * channels * taps
        let scale = int8WeightScale(row, count: channels * taps)
        scales[f] = scale
        let out = q + f * columns
        var sum: Int32 = 0
        for g in 0..<groups {
            for t in 0..<taps {
                for i in 0..<4 {
                    let c = 4 * g + i
                    var v: Int8 = 0
                    if c < channels { v = Int8(int8Weight(row[c * taps + t], scale: scale)) }
                    out[(g * taps + t) * 4 + i] = v
                    sum &+= Int32(v)
                }
            }
        }
        sums[f] = sum
    }
}

/// A filter's INT8 weight scale: max |w| / 127 over its `count` weights (1 for a filter of zeros).
public func int8WeightScale(_ w: UnsafePointer<Float>, count: Int) -> Float {
    var largest: Float = 0
    for i in 0..<count { largest = max(largest, abs(w[i])) }
    return largest > 0 ? largest / 127 : 1
}

/// One weight quantized with its filter's scale: round(x / scale), to nearest even, in -127...127.
@inlinable @inline(__always)
public func int8Weight(_ x: Float, scale: Float) -> Float { max(-127, min(127, (x / scale).rounded(.toNearestOrEven))) }

/// Groups of 4 channels of a tensor in the grouped layout (see above).
@inlinable @inline(__always)
public func int8ChannelGroups(_ channels: Int) -> Int { (channels + 3) / 4 }

/// The grouped quantization of one level, vectorized with its dot product's lane count.
public enum Int8Quantize<D: Int8DotISA> {
    /// Planes `groups` of the grouped layout of `src` (channels planes of `plane` floats) into
    /// `dst` (plane g at dst + g * plane); bit for bit as `Int8Quantization.quantize`.
    @inlinable @inline(__always)
    public static func channels(_ src: UnsafePointer<Float>, channels: Int, plane: Int, groups: Range<Int>,
                                inverseScale: Float, zeroPoint: Int32, into dst: UnsafeMutablePointer<UInt32>) {
        let (inv, zp) = (inverseScale, Float(zeroPoint))
        for g in groups {
            // Channels past the last: the zero point (their weights are zero).
            let c = 4 * g, (has1, has2, has3) = (c + 1 < channels, c + 2 < channels, c + 3 < channels)
            let p0 = src + c * plane, p1 = has1 ? p0 + plane : p0, p2 = has2 ? p0 + 2 * plane : p0
            let p3 = has3 ? p0 + 3 * plane : p0
            if has3 {
                row(p0, p1, p2, p3, plane: plane, inv, zp, true, true, true, into: dst + g * plane)
            } else {
                row(p0, p1, p2, p3, plane: plane, inv, zp, has1, has2, has3, into: dst + g * plane)
            }
        }
    }

    /// One plane of 4 channels (those not `has`, the zero point).
    @inlinable @inline(__always)
    static func row(_ p0: UnsafePointer<Float>, _ p1: UnsafePointer<Float>, _ p2: UnsafePointer<Float>,
                    _ p3: UnsafePointer<Float>, plane: Int, _ inverse: Float, _ zero: Float, _ has1: Bool, _ has2: Bool,
                    _ has3: Bool, into out: UnsafeMutablePointer<UInt32>) {
        let w = D.Floats.scalarCount
        let zpq = D.Acc(repeating: Int32(zero))
        var i = 0
        while i + w <= plane {
            let q0 = D.quantize(p0 + i, inverseScale: inverse, zeroPoint: zero)
            let q1 = has1 ? D.quantize(p1 + i, inverseScale: inverse, zeroPoint: zero) : zpq
            let q2 = has2 ? D.quantize(p2 + i, inverseScale: inverse, zeroPoint: zero) : zpq
            let q3 = has3 ? D.quantize(p3 + i, inverseScale: inverse, zeroPoint: zero) : zpq
            UnsafeMutableRawPointer(out + i).storeBytes(of: q0 | (q1 &<< 8) | (q2 &<< 16) | (q3 &<< 24), as: D.Acc.self)
            i += w
        }
        let zpu = UInt32(zero)
        while i < plane {
            let q0 = int8QuantizeScalar(p0[i], inverseScale: inverse, zeroPoint: zero)
            let q1 = has1 ? int8QuantizeScalar(p1[i], inverseScale: inverse, zeroPoint: zero) : zpu
            let q2 = has2 ? int8QuantizeScalar(p2[i], inverseScale: inverse, zeroPoint: zero) : zpu
            let q3 = has3 ? int8QuantizeScalar(p3[i], inverseScale: inverse, zeroPoint: zero) : zpu
            out[i] = q0 | q1 << 8 | q2 << 16 | q3 << 24
            i += 1
        }
    }
}
