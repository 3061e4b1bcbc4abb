// Bias + activation over the channels of a map, the epilogue every convolution algorithm applies
// after its products (or after its pool).
import YOLOCore
import YOLOKernels

/// `biasActivate` with leaky and linear in the vectors of the process's kernel level
/// (`KernelLevel.selected`; the values are the same at every level, bit for bit, so one level
/// serves every model), the other activations through `biasActivate`'s own loops. (On x86-64
/// `biasActivate` itself is built for the baseline, 4 floats a vector: 3% of an INT8 forward's
/// samples on a Xeon with AVX-512.)
func applyBiasActivation(_ data: UnsafeMutablePointer<Float>, bias: UnsafePointer<Float>, channels: Range<Int>, spatial: Int,
                         channelStride: Int? = nil, activation: Activation) {
    if !EpilogueKernels.vectors(data, bias, channels, spatial, channelStride ?? spatial, activation) {
        biasActivate(data, bias: bias, channels: channels, spatial: spatial, channelStride: channelStride, activation: activation,
                     exp: exp)
    }
}

enum EpilogueKernels {
    static let vectors = KernelLevel.selectedKernels.biasActivate
}
