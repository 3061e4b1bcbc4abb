// Kernels are import-free free functions over raw buffers, so they build for any target
// (Embedded Swift on aarch64 included) and several layers can share them.

/// Activation functions of Darknet's conv and shortcut layers.
public enum Activation: String, Sendable, CaseIterable {
    case linear, leaky, relu, logistic
    /// x * tanh(softplus(x)) (YOLOv4's backbone).
    case mish
    /// x * logistic(x) (also called SiLU).
    case swish
}

extension Activation {
    /// Whether the activation never decreases (so max(act(a), act(b)) == act(max(a, b)) and a
    /// max pool may apply it after pooling). Mish and swish dip below zero before rising.
    public var isMonotonic: Bool {
        switch self {
        case .linear, .leaky, .relu, .logistic: return true
        case .mish, .swish: return false
        }
    }
}

/// Darknet's mish, x * tanh(softplus(x)), with its softplus threshold of 20 (above it,
/// softplus(x) = x and tanh of it is 1 in float). Evaluated in double through exp alone:
/// with e = exp(x), tanh(log(1 + e)) = e(e + 2) / (e(e + 2) + 2), so this file needs no libm.
@inline(__always)
public func mish(_ x: Float, exp: (Double) -> Double) -> Float {
    if x > 20 { return x }
    let e = exp(Double(x))
    let n = e * (e + 2)
    return Float(Double(x) * n / (n + 2))
}

/// Darknet's swish: x times its logistic (the logistic in double, as Darknet's).
@inline(__always)
public func swish(_ x: Float, exp: (Double) -> Double) -> Float {
    x * logistic(x, exp: exp)
}

/// One activation of one value (the scalar reference of the array kernels below).
@inline(__always)
public func activate(_ v: Float, _ activation: Activation, exp: (Double) -> Double) -> Float {
    switch activation {
    case .linear: return v
    case .leaky: return v > 0 ? v : v * 0.1
    case .relu: return v > 0 ? v : 0
    case .logistic: return logistic(v, exp: exp)
    case .mish: return mish(v, exp: exp)
    case .swish: return swish(v, exp: exp)
    }
}

/// Darknet's logistic, `1./(1. + exp(-x))`, is evaluated in double precision; so is ours,
/// to match it bit for bit. `exp` is passed in so this file needs no libm import.
@inline(__always)
public func logistic(_ x: Float, exp: (Double) -> Double) -> Float {
    Float(1.0 / (1.0 + exp(-Double(x))))
}

/// `data[c * channelStride + i] = act(data[...] + bias[c])` for i in 0..<spatial and the
/// channels in `channels`; one pass over memory. `channelStride` defaults to `spatial`. Leaky and
/// linear go through `biasActivateVectors` (16 floats a vector here, in this module's build).
public func biasActivate(_ data: UnsafeMutablePointer<Float>, bias: UnsafePointer<Float>, channels: Range<Int>,
                  spatial: Int, channelStride: Int? = nil, activation: Activation, exp: (Double) -> Double) {
    let cs = channelStride ?? spatial
    if biasActivateVectors(SIMD16<Float>.self, data, bias: bias, channels: channels, spatial: spatial, channelStride: cs,
                           activation: activation) { return }
    for c in channels {
        let row = data + c * cs
        let b = bias[c]
        switch activation {
        case .leaky, .linear:
            return  // (biasActivateVectors took them above)
        case .relu:
            for i in 0..<spatial { let v = row[i] + b; row[i] = v > 0 ? v : 0 }
        case .logistic:
            for i in 0..<spatial { row[i] = logistic(row[i] + b, exp: exp) }
        case .mish:
            for i in 0..<spatial { row[i] = mish(row[i] + b, exp: exp) }
        case .swish:
            for i in 0..<spatial { row[i] = swish(row[i] + b, exp: exp) }
        }
    }
}

/// Applies an activation in place to `count` floats.
public func activate(_ data: UnsafeMutablePointer<Float>, count: Int, activation: Activation, exp: (Double) -> Double) {
    switch activation {
    case .linear: return
    case .leaky: for i in 0..<count { let v = data[i]; data[i] = v > 0 ? v : v * 0.1 }
    case .relu: for i in 0..<count { let v = data[i]; data[i] = v > 0 ? v : 0 }
    case .logistic: for i in 0..<count { data[i] = logistic(data[i], exp: exp) }
    case .mish: for i in 0..<count { data[i] = mish(data[i], exp: exp) }
    case .swish: for i in 0..<count { data[i] = swish(data[i], exp: exp) }
    }
}

/// Per lane, `scaled` where `v`'s sign bit is set, else `v`: leaky's `v < 0 ? v * 0.1 : v` with
/// integer vector operations (the select of generic SIMD code compiled to a scalar loop over the
/// lanes in the AVX-512 levels). A negative zero takes -0 x 0.1 = -0: the same bits.
@inlinable @inline(__always)
func leakyBlend<V: SIMD>(_ v: V, _ scaled: V) -> V where V.Scalar == Float {
    let bits = unsafeBitCast(v, to: V.MaskStorage.self)
    let sign = bits &>> V.MaskStorage.Scalar(31)
    return unsafeBitCast((bits & ~sign) | (unsafeBitCast(scaled, to: V.MaskStorage.self) & sign), to: V.self)
}

/// `biasActivate` for leaky and linear in vectors of V: each kernel level compiles it for its CPU
/// (`KernelSet.biasActivate`; YOLOKernels itself is built for the baseline, 4-wide SSE on x86-64),
/// the same values at every width: the same add, multiply and compare per element, no fused
/// multiply-add. Returns false, touching nothing, for the other activations.
@inlinable
public func biasActivateVectors<V: SIMD>(_: V.Type, _ data: UnsafeMutablePointer<Float>, bias: UnsafePointer<Float>,
                                         channels: Range<Int>, spatial: Int, channelStride: Int,
                                         activation: Activation) -> Bool where V.Scalar == Float {
    guard activation == .leaky || activation == .linear else { return false }
    let w = V.scalarCount, vectorEnd = spatial - spatial % w, leaky = activation == .leaky
    let tenth = V(repeating: 0.1)
    for c in channels {
        let row = data + c * channelStride
        let b = bias[c], vb = V(repeating: b)
        var i = 0
        while i < vectorEnd {
            let raw = UnsafeMutableRawPointer(row + i)
            let v = raw.loadUnaligned(as: V.self) + vb
            raw.storeBytes(of: leaky ? leakyBlend(v, v * tenth) : v, as: V.self)
            i += w
        }
        while i < spatial {
            let v = row[i] + b
            row[i] = leaky && v < 0 ? v * 0.1 : v
            i += 1
        }
    }
    return true
}
