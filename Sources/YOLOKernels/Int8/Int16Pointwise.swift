// What surrounds the 16-bit pair GEMM (Int16Pairs.swift) for a 1x1 convolution whose input the
// calibration table marks `a12` (the engine's `gemm1x1-int8`, PairPointwiseConv.swift): the input
// quantized per tensor to 12 bits (0...4095) and its d = q - zeroPoint packed as int16 pairs, the
// weights per filter to 12 bits (-2047...2047). Products reach 4095 x 2047; a block of the pair
// GEMM (`Int16Pairs.maxGroupsPerBlock`: 128 channels) sums at most 1.07e9 of them in magnitude,
// below 2^31, so every block's sum is exact and the blocks add in float as for Winograd.
// Why 12 bits: the 1x1 layers before yolov3-tiny's heads lose detections at 8 or 10 (docs/int8-eval.md).

public enum Int16Pointwise {
    /// The largest magnitude of a quantized weight.
    public static let weightLimit: Float = 2047
    /// The input's levels (`Int8Quantization.levels`).
    public static let inputLevels: Int32 = 4095
}

/// Weights of a 1x1 convolution (filters x channels) quantized per filter, symmetric, to
/// `Int16Pointwise.weightLimit`: scales[f] = max |w[f]| / 2047 (1 for a filter of zeros),
/// q = round(w / scales[f]) to nearest even, row f at q + f * channels.
public func quantizeWeightsInt16(_ w: UnsafePointer<Float>, filters: Int, channels: Int,
                                 into q: UnsafeMutablePointer<Int16>, scales: UnsafeMutablePointer<Float>) {
    let limit = Int16Pointwise.weightLimit
    for f in 0..<filters {
        let row = w + f * channels
        var largest: Float = 0
        for i in 0..<channels { largest = max(largest, abs(row[i])) }
        let scale = largest > 0 ? largest / limit : 1
        scales[f] = scale
        for i in 0..<channels { q[f * channels + i] = Int16(max(-limit, min(limit, (row[i] / scale).rounded(.toNearestOrEven)))) }
    }
}

/// Pairs `pairs` of channels of `src` (channels planes of `plane` floats), pixels `columns`,
/// quantized as `q` into the pair GEMM's B: word (p, i) at dst + p * plane + i holds d = q -
/// zeroPoint of channel 2p at pixel i (bits 0-15, two's complement) and of channel 2p + 1 (bits
/// 16-31; 0 past the last channel), q rounded as `winogradIntegerPlanes` rounds it (the same float
/// operations). The scalar reference of `Int16PointwiseQuantize`, and its last columns.
public func quantizePointwisePairs(_ src: UnsafePointer<Float>, channels: Int, plane: Int, pairs: Range<Int>,
                                   columns: Range<Int>, quantization q: Int8Quantization, into dst: UnsafeMutablePointer<UInt32>) {
    let (inverse, zero, top) = (q.inverseScale, Float(q.zeroPoint), Float(q.levels))
    @inline(__always) func d(_ x: Float) -> UInt32 {
        var t = x * inverse + zero
        t = t < 0 ? 0 : t
        t = t > top ? top : t
        return winogradInt16(((t + 12_582_912) - 12_582_912) - zero)
    }
    for p in pairs {
        let a = src + 2 * p * plane, out = dst + p * plane
        if 2 * p + 1 < channels {
            let b = a + plane
            for i in columns { out[i] = d(a[i]) | d(b[i]) << 16 }
        } else {
            for i in columns { out[i] = d(a[i]) }
        }
    }
}

/// `quantizePointwisePairs` over whole planes, a vector of the level's lanes at a time (bit for
/// bit the same: rounded by adding 1.5 x 2^23, whose bit pattern less 1.5 x 2^23's is q).
public enum Int16PointwiseQuantize<D: Int8DotISA> {
    @inlinable
    public static func pairs(_ src: UnsafePointer<Float>, channels: Int, plane: Int, pairs: Range<Int>, quantization q: Int8Quantization,
                             into dst: UnsafeMutablePointer<UInt32>) {
        let w = D.Floats.scalarCount
        let (inverse, zero, magic) = (D.Floats(repeating: q.inverseScale), D.Floats(repeating: Float(q.zeroPoint)),
                                      D.Floats(repeating: 12_582_912))
        let top = D.Acc(repeating: Int32(bitPattern: Float(q.levels).bitPattern))
        let offset = D.Acc(repeating: Int32(bitPattern: Float(12_582_912).bitPattern) &+ q.zeroPoint), low = D.Acc(repeating: 0xFFFF)
        @inline(__always) func d(_ p: UnsafePointer<Float>) -> D.Acc {
            let t = clampToLevels(UnsafeRawPointer(p).loadUnaligned(as: D.Floats.self) * inverse + zero, top: top)
            return (unsafeBitCast(t + magic, to: D.Acc.self) &- offset) & low
        }
        for p in pairs {
            let a = src + 2 * p * plane, out = UnsafeMutableRawPointer(dst + p * plane), second = 2 * p + 1 < channels
            var i = 0
            while i + w <= plane {
                var v = d(a + i)
                if second { v |= d(a + plane + i) &<< 16 }
                out.storeBytes(of: v, toByteOffset: 4 * i, as: D.Acc.self)
                i += w
            }
            if i < plane {
                quantizePointwisePairs(src, channels: channels, plane: plane, pairs: p..<p + 1, columns: i..<plane, quantization: q,
                                       into: dst)
            }
        }
    }
}
