/// [route]: concatenates earlier layers' outputs along channels, in the listed order.
/// `groups`/`group_id` (AlexeyAB) take one slice of each input's channels.
final class RouteLayer: Layer {
    let kind = LayerKind.route
    let inputShape: Shape
    let outputShape: Shape
    /// Source pointers (already offset to the group's channels) and float counts.
    let sources: [(pointer: UnsafePointer<Float>, count: Int)]
    let sourceLayers: [Int]
    var output: UnsafeMutablePointer<Float>!

    /// `inputs` are (layer index, output pointer, shape) of the layers named by `layers=`.
    init(section: DarknetConfig.Section, inputs: [(index: Int, pointer: UnsafePointer<Float>, shape: Shape)]) throws {
        let groups = try section.positive("groups", section.int("groups", default: 1))
        let groupID = try section.int("group_id", default: 0)
        guard (0..<groups).contains(groupID) else {
            throw section.error("group_id=\(groupID) must be in 0..<\(groups)")
        }
        let first = inputs[0].shape
        var channels = 0
        var sources: [(UnsafePointer<Float>, Int)] = []
        for input in inputs {
            guard input.shape.h == first.h && input.shape.w == first.w else {
                throw section.error("layer \(input.index) is \(input.shape) but layer \(inputs[0].index) is \(first): route inputs must share height and width")
            }
            guard input.shape.c % groups == 0 else {
                throw section.error("layer \(input.index) has \(input.shape.c) channels, not divisible by groups=\(groups)")
            }
            let part = input.shape.c / groups
            let plane = input.shape.h * input.shape.w
            sources.append((input.pointer + groupID * part * plane, part * plane))
            channels += part
        }
        self.sources = sources
        sourceLayers = inputs.map(\.index)
        inputShape = first
        outputShape = Shape(c: channels, h: first.h, w: first.w)
    }

    func forward(_ context: inout ForwardContext) {
        var dst = output!
        for (src, count) in sources {
            dst.update(from: src, count: count)
            dst += count
        }
    }
}
