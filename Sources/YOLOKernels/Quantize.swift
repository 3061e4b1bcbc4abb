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
/// exactly representable (q = zeroPoint), so padding is the zero point.
public struct Int8Quantization: Sendable, Equatable {
    public let scale: Float
    public let inverseScale: Float
    public let zeroPoint: Int32

    /// For values clipped to [min, max] (widened to hold 0).
    public init(min lo: Float, max hi: Float) {
        let lo = Swift.min(lo, 0), hi = Swift.max(hi, 0)
        let range = hi - lo
        guard range.isFinite, range > 1e-30 else {
            (scale, inverseScale, zeroPoint) = (1, 1, 0)
            return
        }
        scale = range / 255
        inverseScale = 1 / scale
        zeroPoint = Int32(Swift.min(255, Swift.max(0, (-lo / scale).rounded(.toNearestOrEven))))
    }

    /// One value's u8 (the scalar reference of `Int8Quantize`, bit for bit): t = x * inverseScale +
    /// zeroPoint, clamped to [0, 255], rounded to nearest even by adding and subtracting 1.5 * 2^23.
    @inlinable @inline(__always)
    public func quantize(_ x: Float) -> UInt32 {
        int8QuantizeScalar(x, inverseScale: inverseScale, zeroPoint: Float(zeroPoint))
    }
}

@inlinable @inline(__always)
func int8QuantizeScalar(_ x: Float, inverseScale: Float, zeroPoint: Float) -> UInt32 {
    var t = x * inverseScale + zeroPoint
    t = t < 0 ? 0 : t
    t = t > 255 ? 255 : t
    t = (t + 12_582_912) - 12_582_912
    return UInt32(t)
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
        var largest: Float = 0
        for i in 0..<channels * taps { largest = max(largest, abs(row[i])) }
        let scale = largest > 0 ? largest / 127 : 1
        scales[f] = scale
        let out = q + f * columns
        var sum: Int32 = 0
        for g in 0..<groups {
            for t in 0..<taps {
                for i in 0..<4 {
                    let c = 4 * g + i
                    var v: Int8 = 0
                    if c < channels {
                        let x = (row[c * taps + t] / scale).rounded(.toNearestOrEven)
                        v = Int8(max(-127, min(127, x)))
                    }
                    out[(g * taps + t) * 4 + i] = v
                    sum &+= Int32(v)
                }
            }
        }
        sums[f] = sum
    }
}

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
        typealias F = D.Floats
        let w = F.scalarCount
        let inv = F(repeating: inverseScale), zp = F(repeating: Float(zeroPoint))
        let low = F(repeating: 0), high = F(repeating: 255), magic = F(repeating: 12_582_912)
        let zpScalar = Float(zeroPoint)
        @inline(__always) func q(_ x: F) -> D.Acc {
            D.integers(((x * inv + zp).clamped(lowerBound: low, upperBound: high) + magic) - magic)
        }
        @inline(__always) func load(_ p: UnsafePointer<Float>?, _ i: Int) -> F {
            guard let p else { return low }
            return UnsafeRawPointer(p + i).loadUnaligned(as: F.self)
        }
        for g in groups {
            let out = dst + g * plane
            let p = (0..<4).map { i -> UnsafePointer<Float>? in 4 * g + i < channels ? src + (4 * g + i) * plane : nil }
            let (p0, p1, p2, p3) = (p[0], p[1], p[2], p[3])
            var i = 0
            while i + w <= plane {
                let v = q(load(p0, i)) | (q(load(p1, i)) &<< 8) | (q(load(p2, i)) &<< 16) | (q(load(p3, i)) &<< 24)
                UnsafeMutableRawPointer(out + i).storeBytes(of: v, as: D.Acc.self)
                i += w
            }
            while i < plane {
                var v: UInt32 = 0
                for j in 0..<4 {
                    let x = p[j].map { $0[i] } ?? 0
                    v |= int8QuantizeScalar(x, inverseScale: inverseScale, zeroPoint: zpScalar) << UInt32(8 * j)
                }
                out[i] = v
                i += 1
            }
        }
    }
}
