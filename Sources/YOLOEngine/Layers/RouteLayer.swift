import YOLOCore

/// [route]: concatenates earlier layers' outputs along channels, in the listed order.
/// `groups`/`group_id` (AlexeyAB) take one slice of each input's channels.
final class RouteLayer: ComputedLayer {
    let kind = LayerKind.route
    let index: Int
    let sources: [Int]
    let inputShape: Shape
    let outputShape: Shape
    /// Per source: the float offset of the group's channels in its output, and the count.
    let slices: [(offset: Int, count: Int)]

    /// `shapes` are the output shapes of the layers before this one.
    init(section: DarknetConfig.Section, index: Int, shapes: [Shape]) throws(YOLOError) {
        guard let list = try section.intList("layers"), !list.isEmpty else {
            throw section.error("missing required key 'layers'")
        }
        var sources: [Int] = []
        for v in list { sources.append(try resolveLayer(section, key: "layers", value: v, index: index)) }
        let groups = try section.positive("groups", section.int("groups", default: 1))
        let groupID = try section.int("group_id", default: 0)
        guard (0..<groups).contains(groupID) else {
            throw section.error("group_id=\(groupID) must be in 0..<\(groups)")
        }
        let first = shapes[sources[0]]
        var channels = 0
        // Labelled like the stored property: converting an array of unlabelled tuples would be a
        // dynamic cast, which Embedded Swift (scripts/arm-check.sh) does not have.
        var slices: [(offset: Int, count: Int)] = []
        for s in sources {
            let shape = shapes[s]
            guard shape.h == first.h && shape.w == first.w else {
                throw section.error("layer \(s) is \(shape) but layer \(sources[0]) is \(first): route inputs must share height and width")
            }
            guard shape.c % groups == 0 else {
                throw section.error("layer \(s) has \(shape.c) channels, not divisible by groups=\(groups)")
            }
            let part = shape.c / groups
            let plane = shape.h * shape.w
            slices.append((offset: groupID * part * plane, count: part * plane))
            channels += part
        }
        self.index = index
        self.sources = sources
        self.slices = slices
        inputShape = first
        outputShape = Shape(c: channels, h: first.h, w: first.w)
    }

    func forward(_ context: StepContext) {
        var dst = context.buffer(index)
        for (source, slice) in zip(sources, slices) {
            dst.update(from: context.buffer(source) + slice.offset, count: slice.count)
            dst += slice.count
        }
    }
}

/// Resolves a layer reference (negative = relative to `index`) to an absolute earlier layer.
func resolveLayer(_ section: DarknetConfig.Section, key: String, value: Int? = nil, index: Int) throws(YOLOError) -> Int {
    let v: Int
    if let value { v = value } else { v = try section.int(key) }
    let abs = v < 0 ? index + v : v
    guard abs >= 0 && abs < index else {
        throw section.error("\(key)=\(v) refers to layer \(abs), but only layers 0..<\(index) come before this one (layer \(index))",
                            line: section.options.last { $0.key == key }?.line)
    }
    return abs
}
