import YOLOCore
import YOLOKernels

/// [shortcut]: the previous layer's output plus the outputs of the layers in `from`, then the
/// activation. As AlexeyAB's Darknet (shortcut_multilayer_cpu): the output has the previous
/// layer's shape, and a `from` layer with a different channel count adds only the channels
/// both have (the smaller count): with more channels its extra ones are ignored, with fewer
/// the previous layer's extra channels pass through unchanged. Heights and widths must match
/// (Darknet would add by flat index, mixing rows; no cfg relies on that).
final class ShortcutLayer: ComputedLayer {
    let kind = LayerKind.shortcut
    let place: LayerPlace
    let activation: Activation
    /// Per `from` layer (sources[1...]): how many leading floats of the output it adds to.
    let addCounts: [Int]

    init(section: DarknetConfig.Section, index: Int, shapes: [Shape], inputShape: Shape) throws(YOLOError) {
        guard let list = try section.intList("from") else { throw section.error("missing required key 'from'") }
        var froms: [Int] = []
        var counts: [Int] = []
        for v in list {
            let from = try resolveLayer(section, key: "from", value: v, index: index)
            let fromShape = shapes[from]
            guard fromShape.h == inputShape.h && fromShape.w == inputShape.w else {
                throw section.error("from=\(v) (layer \(from)) is \(fromShape) but the previous layer is \(inputShape): a shortcut needs equal heights and widths",
                                    line: section.options.last { $0.key == "from" }?.line)
            }
            froms.append(from)
            counts.append(min(fromShape.c, inputShape.c) * inputShape.h * inputShape.w)
        }
        // Weighted shortcuts (weights_type=per_feature/per_channel) read weights: not supported.
        for key in ["weights_type", "weights_normalization"] {
            let v = try section.string(key, default: "none")
            guard v == "none" else {
                throw section.error("\(key)=\(v) is not supported (only none)", line: section.options.last { $0.key == key }?.line)
            }
        }
        activation = try Activation(name: section.string("activation", default: "linear"), section: section)
        addCounts = counts
        place = LayerPlace(index: index, sources: [index - 1] + froms, input: inputShape, output: inputShape)
    }

    func forward(_ context: StepContext) {
        let (a, dst, act) = (UnsafePointer(context.buffer(sources[0])), context.buffer(index), activation)
        let adds = zip(sources.dropFirst(), addCounts).map { (UnsafePointer(context.buffer($0.0)), $0.1) }
        context.pool.parallelFor(outputShape.count) { range in
            if adds.count == 1 && adds[0].1 >= range.upperBound {
                add(a, adds[0].0, range: range, into: dst)
            } else {
                (dst + range.lowerBound).update(from: a + range.lowerBound, count: range.count)
                for (b, count) in adds where count > range.lowerBound {
                    add(UnsafePointer(dst), b, range: range.lowerBound ..< min(range.upperBound, count), into: dst)
                }
            }
            activate(dst + range.lowerBound, count: range.count, activation: act)
        }
    }
}
