#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import YOLOKernels

/// [maxpool] with Darknet's padding: `padding` (default size-1) in total, pad/2 of it before
/// the input. So size=2 stride=1 keeps 13x13, its last row and column taking the max of the
/// taps that exist.
final class MaxPoolLayer: Layer, @unchecked Sendable {
    let kind = LayerKind.maxpool
    let index: Int
    let sources: [Int]
    let inputShape: Shape
    let outputShape: Shape
    let size: Int, stride: Int, padding: Int
    /// Bias + activation of the convolution before, when it deferred them to this layer.
    private(set) var epilogue: Epilogue?
    /// Set at load when the convolution before computes this layer's output itself (in
    /// forward passes with `ForwardContext.absorbs`).
    private(set) var absorbed = false

    init(section: DarknetConfig.Section, index: Int, inputShape: Shape) throws(YOLOError) {
        self.index = index
        sources = [index - 1]
        self.inputShape = inputShape
        stride = try section.positive("stride", section.int("stride", default: 1))
        size = try section.positive("size", section.int("size", default: stride))
        padding = try section.positive("padding", section.int("padding", default: size - 1), minimum: 0)
        guard inputShape.h + padding >= size, inputShape.w + padding >= size else {
            throw section.error("size=\(size) is larger than the padded input \(inputShape)")
        }
        outputShape = Shape(c: inputShape.c, h: (inputShape.h + padding - size) / stride + 1,
                            w: (inputShape.w + padding - size) / stride + 1)
    }

    var geometry: (size: Int, stride: Int) { (size, stride) }

    /// Bias and a monotonic activation commute with the max, so applying them after it is
    /// exact; mish and swish are not monotonic and stay with the convolution.
    func takeEpilogue(_ epilogue: Epilogue) -> Bool {
        guard epilogue.activation.isMonotonic else { return false }
        self.epilogue = epilogue
        return true
    }

    func absorbedByPrevious() { absorbed = true }

    func forward(_ context: inout ForwardContext) {
        if absorbed && context.absorbs { return }
        let (src, dst) = (UnsafePointer(input(context)), context.buffer(index))
        let (h, w, oh, ow) = (inputShape.h, inputShape.w, outputShape.h, outputShape.w)
        let (k, s, p) = (size, stride, padding)
        let epilogue = epilogue
        context.pool.parallelFor(inputShape.c) { range in
            maxPool(src, height: h, width: w, size: k, stride: s, pad: p, outHeight: oh, outWidth: ow,
                    channels: range, into: dst)
            if let epilogue {
                biasActivate(dst, bias: epilogue.bias, channels: range, spatial: oh * ow, activation: epilogue.activation, exp: exp)
            }
        }
    }
}
