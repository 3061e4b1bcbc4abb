// Mish, swish and logistic in the vectors of a kernel level: one float exp each, by range
// reduction and a polynomial; a double exp from libm per value cost as much as a mish model's
// GEMMs (docs/performance.md, "Smooth activations"). The same operations in every lane, in the
// tail and in Activation.swift's scalar forms, no fused multiply-adds: the same bits at every
// level and thread count.

/// All ones in the lanes whose sign bit is set (an arithmetic shift of the bits).
@inlinable @inline(__always)
func signLanes<V: SIMD>(_ v: V) -> V.MaskStorage where V.Scalar == Float {
    unsafeBitCast(v, to: V.MaskStorage.self) &>> V.MaskStorage.Scalar(31)
}

/// `b` in the lanes of `mask`, else `a`, by integer operations (the generic select and the
/// stdlib's min and max compile to loops over the lanes).
@inlinable @inline(__always)
func blendLanes<V: SIMD>(_ a: V, _ b: V, _ mask: V.MaskStorage) -> V where V.Scalar == Float {
    unsafeBitCast((unsafeBitCast(a, to: V.MaskStorage.self) & ~mask) | (unsafeBitCast(b, to: V.MaskStorage.self) & mask), to: V.self)
}

/// exp(x) for float lanes: 0 below -87, x taken as 88 above (normal results), x = n ln2 + r with
/// n the nearest integer (a magic-number add, round to nearest even) and |r| <= ln2/2 (ln2 in two
/// parts), e^r by its Taylor series to r^7 (error below 1e-8 relative), times 2^n built in the
/// exponent bits.
@inlinable @inline(__always)
func expLanes<V: SIMD>(_ x: V) -> V where V.Scalar == Float {
    let low = signLanes(x + V(repeating: 87))
    let high = signLanes(V(repeating: 88) - x)
    let clamped = blendLanes(blendLanes(x, V(repeating: -87), low), V(repeating: 88), high)
    let magic = V(repeating: 12_582_912)  // 1.5 * 2^23: adding it leaves round(t) in the low bits
    let shifted = clamped * V(repeating: 1.442_695_04) + magic
    let n = shifted - magic
    let r = (clamped - n * V(repeating: 0.693_359_375)) - n * V(repeating: -2.121_944_4e-4)
    var p = V(repeating: 1.0 / 5040)
    p = p * r + V(repeating: 1.0 / 720)
    p = p * r + V(repeating: 1.0 / 120)
    p = p * r + V(repeating: 1.0 / 24)
    p = p * r + V(repeating: 1.0 / 6)
    p = p * r + V(repeating: 0.5)
    p = p * r + V(repeating: 1)
    p = p * r + V(repeating: 1)
    typealias I = V.MaskStorage
    let exponent = (unsafeBitCast(shifted, to: I.self) &- unsafeBitCast(magic, to: I.self) &+ I(repeating: 127)) &<< I(repeating: 23)
    let e = p * unsafeBitCast(exponent, to: V.self)
    return unsafeBitCast(unsafeBitCast(e, to: I.self) & ~low, to: V.self)
}

/// Mish, x tanh(softplus(x)), as x (n / (n + 2)) with n = e (e + 2), e = exp(x) (tanh(log(1 + e))
/// written out); x itself above Darknet's softplus threshold of 20.
@inlinable @inline(__always)
func mishLanes<V: SIMD>(_ x: V) -> V where V.Scalar == Float {
    let e = expLanes(x)
    let n = e * (e + V(repeating: 2))
    return blendLanes(x * (n / (n + V(repeating: 2))), x, signLanes(V(repeating: 20) - x))
}

/// Logistic, 1 / (1 + exp(-x)), as e / (e + 1) with e = exp(x): 0 far below zero and 1 far above,
/// never an overflow.
@inlinable @inline(__always)
func logisticLanes<V: SIMD>(_ x: V) -> V where V.Scalar == Float {
    let e = expLanes(x)
    return e / (e + V(repeating: 1))
}

/// Swish, x logistic(x).
@inlinable @inline(__always)
func swishLanes<V: SIMD>(_ x: V) -> V where V.Scalar == Float { x * logisticLanes(x) }

/// One of the activations above, as a type: the row loop is specialized for it, its lanes inlined.
@usableFromInline protocol SmoothLanes { static func apply<V: SIMD>(_ x: V) -> V where V.Scalar == Float }
@usableFromInline enum MishLanes: SmoothLanes {
    @inlinable @inline(__always) static func apply<V: SIMD>(_ x: V) -> V where V.Scalar == Float { mishLanes(x) }
}
@usableFromInline enum SwishLanes: SmoothLanes {
    @inlinable @inline(__always) static func apply<V: SIMD>(_ x: V) -> V where V.Scalar == Float { swishLanes(x) }
}
@usableFromInline enum LogisticLanes: SmoothLanes {
    @inlinable @inline(__always) static func apply<V: SIMD>(_ x: V) -> V where V.Scalar == Float { logisticLanes(x) }
}

/// `data[c * channelStride + i] = act(data[...] + bias[c])` for mish, swish and logistic in
/// vectors of V; a row's tail goes through one vector too (padded), so every value is computed
/// the same way. Returns false, touching nothing, for the other activations.
@inlinable
public func biasActivateSmooth<V: SIMD, Tag>(_: V.Type, _: Tag.Type, _ data: UnsafeMutablePointer<Float>, bias: UnsafePointer<Float>,
                                        channels: Range<Int>, spatial: Int, channelStride: Int,
                                        activation: Activation) -> Bool where V.Scalar == Float {
    switch activation {
    case .mish: smoothRows(MishLanes.self, V.self, Tag.self, data, bias, channels, spatial, channelStride)
    case .swish: smoothRows(SwishLanes.self, V.self, Tag.self, data, bias, channels, spatial, channelStride)
    case .logistic: smoothRows(LogisticLanes.self, V.self, Tag.self, data, bias, channels, spatial, channelStride)
    case .linear, .leaky, .relu: return false
    }
    return true
}

@inlinable
func smoothRows<F: SmoothLanes, V: SIMD, Tag>(_: F.Type, _: V.Type, _: Tag.Type, _ data: UnsafeMutablePointer<Float>, _ bias: UnsafePointer<Float>,
                                         _ channels: Range<Int>, _ spatial: Int, _ channelStride: Int) where V.Scalar == Float {
    let w = V.scalarCount, vectorEnd = spatial - spatial % w
    for c in channels {
        let row = data + c * channelStride
        let vb = V(repeating: bias[c])
        var i = 0
        while i < vectorEnd {
            let raw = UnsafeMutableRawPointer(row + i)
            raw.storeBytes(of: F.apply(raw.loadUnaligned(as: V.self) + vb), as: V.self)
            i += w
        }
        if i < spatial {
            var tail = V(repeating: 0)
            for j in 0..<(spatial - i) { tail[j] = row[i + j] }
            let out = F.apply(tail + vb)
            for j in 0..<(spatial - i) { row[i + j] = out[j] }
        }
    }
}
