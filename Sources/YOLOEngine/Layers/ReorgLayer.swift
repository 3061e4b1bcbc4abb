import YOLOCore

/// [reorg] (YOLOv2): Darknet's space to depth by `stride` (default 2), with the channel order of
/// pjreddie's reorg layer (reorg_cpu on the input's shape, forward=0), which OpenCV DNN shares and
/// the YOLOv2 weights were trained with. For an input of c x h x w and s = stride, its values in
/// memory order are read as a tensor X of c/s^2 x h*s x w*s, and the output's values in memory
/// order, as a tensor of c x h x w, are O[k][j][i] = X[k % (c/s^2)][j*s + q / s][i*s + q % s]
/// with q = k / (c/s^2); the output's shape is c*s^2 x h/s x w/s. (Not the space to depth of
/// AlexeyAB's later [reorg], which reads X as the input itself.)
final class ReorgLayer: ComputedLayer {
    let kind = LayerKind.reorg
    let place: LayerPlace
    let stride: Int

    init(section: DarknetConfig.Section, index: Int, inputShape: Shape) throws(YOLOError) {
        let s = try section.positive("stride", section.int("stride", default: 2))
        // Darknet's reverse=1 (depth to space), flatten and extra are not used by YOLO cfgs.
        for key in ["reverse", "flatten", "extra"] where try section.int(key, default: 0) != 0 {
            throw section.error("\(key)=1 is not supported (only space to depth: reverse=0, flatten=0, extra=0)",
                                line: section.options.last { $0.key == key }?.line)
        }
        guard inputShape.c % (s * s) == 0 else {
            throw section.error("stride=\(s) needs input channels divisible by stride*stride=\(s * s), but its input is \(inputShape)")
        }
        guard inputShape.h % s == 0, inputShape.w % s == 0 else {
            throw section.error("stride=\(s) does not divide its input \(inputShape) (height and width must be multiples of the stride)")
        }
        guard let c = checkedProduct([inputShape.c, s, s]) else { throw section.error("stride=\(s) is too large") }
        stride = s
        place = LayerPlace(index: index, sources: [index - 1], input: inputShape,
                           output: Shape(c: c, h: inputShape.h / s, w: inputShape.w / s))
    }

    var geometry: (size: Int, stride: Int) { (0, stride) }

    func forward(_ context: StepContext) {
        let (src, dst) = (UnsafePointer(input(context)), context.buffer(index))
        let (c, h, w, s) = (inputShape.c, inputShape.h, inputShape.w, stride)
        let groups = c / (s * s)
        context.pool.parallelFor(c) { channels in
            for k in channels {
                let (c2, q) = (k % groups, k / groups)
                for j in 0..<h {
                    // Row j*s + q/s of X's channel c2 (rows of w*s values), from column q % s.
                    let from = src + (c2 * h * s + j * s + q / s) * w * s + q % s, to = dst + (k * h + j) * w
                    for i in 0..<w { to[i] = from[i * s] }
                }
            }
        }
    }
}
