import YOLOCore
import YOLOKernels

/// [maxpool] with Darknet's padding: `padding` (default size-1) in total, pad/2 of it before
/// the input. So size=2 stride=1 keeps 13x13, its last row and column taking the max of the
/// taps that exist.
final class MaxPoolLayer: ComputedLayer {
    let kind = LayerKind.maxpool
    let place: LayerPlace
    let size: Int, stride: Int, padding: Int

    init(section: DarknetConfig.Section, index: Int, inputShape: Shape) throws(YOLOError) {
        stride = try section.positive("stride", section.int("stride", default: 1))
        size = try section.positive("size", section.int("size", default: stride))
        padding = try section.positive("padding", section.int("padding", default: size - 1), minimum: 0)
        guard inputShape.h + padding >= size, inputShape.w + padding >= size else {
            throw section.error("size=\(size) is larger than the padded input \(inputShape)")
        }
        let output = Shape(c: inputShape.c, h: (inputShape.h + padding - size) / stride + 1,
                           w: (inputShape.w + padding - size) / stride + 1)
        place = LayerPlace(index: index, sources: [index - 1], input: inputShape, output: output)
    }

    var geometry: (size: Int, stride: Int) { (size, stride) }
    var maxPool: MaxPoolLayer? { self }

    func forward(_ context: StepContext) { pool(context, epilogue: nil) }

    /// The pool of this layer's input into its output, then `epilogue` (the bias + activation of
    /// the convolution before, when the planner moved them here: with a monotonic activation
    /// max(act(x + b)) == act(max(x) + b) exactly, on a 4x smaller map).
    func pool(_ context: StepContext, epilogue: Epilogue?) {
        let (src, dst) = (UnsafePointer(input(context)), context.buffer(index))
        let (h, w, oh, ow) = (inputShape.h, inputShape.w, outputShape.h, outputShape.w)
        let (k, s, p) = (size, stride, padding)
        context.pool.parallelFor(inputShape.c) { range in
            YOLOKernels.maxPool(src, height: h, width: w, size: k, stride: s, pad: p, outHeight: oh, outWidth: ow,
                    channels: range, into: dst)
            if let epilogue {
                applyBiasActivation(dst, bias: epilogue.bias, channels: range, spatial: oh * ow, activation: epilogue.activation)
            }
        }
    }
}
