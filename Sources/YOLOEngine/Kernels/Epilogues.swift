// Bias + activation over the channels of a map, the epilogue every convolution algorithm applies
// after its products (or after its pool).
import YOLOCore
import YOLOKernels

/// `biasActivate` in the vectors of the process's kernel level (`KernelLevel.selected`; leaky,
/// linear, and mish, swish and logistic through one float exp: the values are the same at every
/// level, bit for bit, so one level serves every model), relu through `biasActivate`'s own loop.
/// (On x86-64 `biasActivate` itself is built for the baseline, 4 floats a vector.)
func applyBiasActivation(_ data: UnsafeMutablePointer<Float>, bias: UnsafePointer<Float>, channels: Range<Int>, spatial: Int,
                         channelStride: Int? = nil, activation: Activation) {
    if !EpilogueKernels.vectors(data, bias, channels, spatial, channelStride ?? spatial, activation) {
        biasActivate(data, bias: bias, channels: channels, spatial: spatial, channelStride: channelStride, activation: activation)
    }
}

enum EpilogueKernels {
    static let vectors = KernelLevel.selectedKernels.biasActivate
}
