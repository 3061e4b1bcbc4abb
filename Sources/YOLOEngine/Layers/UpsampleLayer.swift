import YOLOCore
import YOLOKernels

/// [upsample]: nearest neighbour by an integer stride (default 2), times `scale` (default 1).
final class UpsampleLayer: ComputedLayer {
    let kind = LayerKind.upsample
    let index: Int
    let sources: [Int]
    let inputShape: Shape
    let outputShape: Shape
    let stride: Int
    let scale: Float

    init(section: DarknetConfig.Section, index: Int, inputShape: Shape) throws(YOLOError) {
        self.index = index
        sources = [index - 1]
        self.inputShape = inputShape
        let s = try section.int("stride", default: 2)
        // Darknet reads a negative stride as downsampling; no YOLO cfg uses it.
        guard s >= 1 else { throw section.error("stride=\(s) is not supported (only positive strides)") }
        stride = s
        scale = try section.float("scale", default: 1)
        outputShape = Shape(c: inputShape.c, h: inputShape.h * s, w: inputShape.w * s)
    }

    func forward(_ context: StepContext) {
        let (src, dst, h, w, s, scale) = (UnsafePointer(input(context)), context.buffer(index), inputShape.h, inputShape.w, stride, scale)
        context.pool.parallelFor(inputShape.c) { range in
            upsampleNearest(src, height: h, width: w, stride: s, scale: scale, channels: range, into: dst)
        }
    }
}
