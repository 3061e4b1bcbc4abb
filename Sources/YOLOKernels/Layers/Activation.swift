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

/// Mish, x tanh(softplus(x)), in float through one exp (SmoothActivations.swift's lane form, so
/// the scalar and vector paths give the same bits); x itself above Darknet's softplus threshold 20.
@inline(__always)
public func mish(_ x: Float) -> Float { mishLanes(SIMD4<Float>(repeating: x))[0] }

/// Swish, x logistic(x), as `mish`.
@inline(__always)
public func swish(_ x: Float) -> Float { swishLanes(SIMD4<Float>(repeating: x))[0] }

/// Logistic, 1 / (1 + exp(-x)), as `mish`. (The [yolo] heads' logistic is the decoder's own, in
/// double as Darknet's.)
@inline(__always)
public func logistic(_ x: Float) -> Float { logisticLanes(SIMD4<Float>(repeating: x))[0] }

/// One activation of one value (the scalar reference of the array kernels below).
@inline(__always)
public func activate(_ v: Float, _ activation: Activation) -> Float {
    switch activation {
    case .linear: return v
    case .leaky: return v > 0 ? v : v * 0.1
    case .relu: return v > 0 ? v : 0
    case .logistic: return logistic(v)
    case .mish: return mish(v)
    case .swish: return swish(v)
    }
}

/// `data[c * channelStride + i] = act(data[...] + bias[c])` for i in 0..<spatial and the
/// channels in `channels`; one pass over memory. `channelStride` defaults to `spatial`. Leaky and
/// linear go through `biasActivateVectors` (16 floats a vector here, in this module's build).
public func biasActivate(_ data: UnsafeMutablePointer<Float>, bias: UnsafePointer<Float>, channels: Range<Int>,
                  spatial: Int, channelStride: Int? = nil, activation: Activation) {
    let cs = channelStride ?? spatial
    if biasActivateVectors(SIMD16<Float>.self, PortableBuild.self, data, bias: bias, channels: channels, spatial: spatial, channelStride: cs,
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
            for i in 0..<spatial { row[i] = logistic(row[i] + b) }
        case .mish:
            for i in 0..<spatial { row[i] = mish(row[i] + b) }
        case .swish:
            for i in 0..<spatial { row[i] = swish(row[i] + b) }
        }
    }
}

/// Applies an activation in place to `count` floats.
public func activate(_ data: UnsafeMutablePointer<Float>, count: Int, activation: Activation) {
    switch activation {
    case .linear: return
    case .leaky: for i in 0..<count { let v = data[i]; data[i] = v > 0 ? v : v * 0.1 }
    case .relu: for i in 0..<count { let v = data[i]; data[i] = v > 0 ? v : 0 }
    case .logistic: for i in 0..<count { data[i] = logistic(data[i]) }
    case .mish: for i in 0..<count { data[i] = mish(data[i]) }
    case .swish: for i in 0..<count { data[i] = swish(data[i]) }
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

/// Names YOLOKernels' own build of the vector epilogues (`biasActivate`), apart from the levels'.
public enum PortableBuild {}

/// `biasActivate` for leaky and linear in vectors of V (mish, swish and logistic through
/// `biasActivateSmooth`; relu returns false): each kernel level compiles it for its CPU, with
/// its own `Tag` (`KernelSet.biasActivate`; a specialization named by V alone is one symbol in
/// every level, and the linker keeps one CPU's build of it for all: the baseline's, 4-wide SSE,
/// for the AVX-512 levels before the tag), the same values at every width: the same add, multiply and compare per element, no fused
/// multiply-add. Returns false, touching nothing, for the other activations.
@inlinable
public func biasActivateVectors<V: SIMD, Tag>(_: V.Type, _: Tag.Type, _ data: UnsafeMutablePointer<Float>, bias: UnsafePointer<Float>,
                                         channels: Range<Int>, spatial: Int, channelStride: Int,
                                         activation: Activation) -> Bool where V.Scalar == Float {
    guard activation == .leaky || activation == .linear else {
        return biasActivateSmooth(V.self, Tag.self, data, bias: bias, channels: channels, spatial: spatial, channelStride: channelStride,
                                  activation: activation)
    }
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
