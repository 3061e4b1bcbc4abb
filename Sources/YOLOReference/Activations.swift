// Naive references of Darknet's activations (activations.h, AlexeyAB's mish and swish) and of
// its [yolo] layer's activation, evaluated through libm, not the kernels' exp-only forms.

/// Darknet's activations, by their cfg names.
public enum NaiveActivation: String, CaseIterable, Sendable {
    case linear, leaky, relu, logistic, mish, swish

    /// The activation of one value, at T's precision where Darknet computes in the value's type
    /// (leaky, relu, swish's product) and in double where it calls libm: at T = Float, Darknet's
    /// float semantics; at T = Double, the double-precision reference.
    public func apply<T: BinaryFloatingPoint>(_ x: T, libm: Libm) -> T {
        switch self {
        case .linear: return x
        case .leaky: return x > 0 ? x : x * 0.1
        case .relu: return x > 0 ? x : 0
        case .logistic: return T(Naive.logistic(Double(x), libm: libm))
        // Darknet's softplus threshold 20: above it softplus(x) = x and tanh of it rounds to 1.
        case .mish: return x > 20 ? x : T(Double(x) * libm.tanh(libm.log1p(libm.exp(Double(x)))))
        case .swish: return x * T(Naive.logistic(Double(x), libm: libm))
        }
    }
}

extension Naive {
    /// 1 / (1 + e^-x), in double.
    public static func logistic(_ x: Double, libm: Libm) -> Double { 1 / (1 + libm.exp(-x)) }

    /// `activation` applied to every value (Darknet's activate_array, on floats).
    public static func activate(_ t: Tensor, _ activation: NaiveActivation, libm: Libm) -> Tensor {
        var out = t
        for i in 0..<out.values.count { out.values[i] = activation.apply(t.values[i], libm: libm) }
        return out
    }

    /// Darknet's [yolo] layer output: per anchor (`classes + 5` channels: x, y, w, h,
    /// objectness, classes) the logistic of x, y, objectness and the classes, w and h raw;
    /// AlexeyAB's scale_x_y: x, y = logistic * s - (s - 1) / 2 (the shift from the float s).
    public static func yolo(_ t: Tensor, anchors: Int, classes: Int, scaleXY: Float = 1, libm: Libm) -> Tensor {
        let entries = classes + 5, plane = t.height * t.width
        precondition(t.channels == anchors * entries, "a [yolo] input has anchors x (classes + 5) channels")
        let shift = Float(-0.5 * (Double(scaleXY) - 1))
        var out = t
        for a in 0..<anchors {
            for e in 0..<entries where e != 2 && e != 3 {
                for i in 0..<plane {
                    let j = (a * entries + e) * plane + i
                    out.values[j] = Float(logistic(Double(t.values[j]), libm: libm))
                    if e < 2 && scaleXY != 1 { out.values[j] = out.values[j] * scaleXY + shift }
                }
            }
        }
        return out
    }
}
