import YOLOKernels
/// [upsample]: nearest neighbour by an integer stride (default 2), times `scale` (default 1).
final class UpsampleLayer: Layer {
    let kind = LayerKind.upsample
    let inputShape: Shape
    let outputShape: Shape
    let stride: Int
    let scale: Float
    var output: UnsafeMutablePointer<Float>!
    let input: UnsafePointer<Float>

    init(section: DarknetConfig.Section, input: UnsafePointer<Float>, inputShape: Shape) throws {
        self.input = input
        self.inputShape = inputShape
        let s = try section.int("stride", default: 2)
        // Darknet reads a negative stride as downsampling; no YOLO cfg uses it.
        guard s >= 1 else { throw section.error("stride=\(s) is not supported (only positive strides)") }
        stride = s
        scale = try section.float("scale", default: 1)
        outputShape = Shape(c: inputShape.c, h: inputShape.h * s, w: inputShape.w * s)
    }

    func forward(_ context: inout ForwardContext) {
        let (src, dst, h, w, s, scale) = (input, output!, inputShape.h, inputShape.w, stride, scale)
        context.pool.parallelFor(inputShape.c) { range in
            upsampleNearest(src, height: h, width: w, stride: s, scale: scale, channels: range, into: dst)
        }
    }
}
