import YOLOCore

/// [route]: concatenates earlier layers' outputs along channels, in the listed order.
/// `groups`/`group_id` (AlexeyAB) take one slice of each input's channels.
final class RouteLayer: ComputedLayer {
    let kind = LayerKind.route
    let place: LayerPlace
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
        self.slices = slices
        place = LayerPlace(index: index, sources: sources, input: first, output: Shape(c: channels, h: first.h, w: first.w))
    }

    /// Copies in chunks over the pool's threads: a concatenation of large maps (yolov4's first
    /// routes move 47 MB) is as much a step as a layer's arithmetic.
    func forward(_ context: StepContext) {
        let dst = context.buffer(index), total = slices.reduce(0) { $0 + $1.count }
        func copy(_ range: Range<Int>) {
            var start = 0
            for (source, slice) in zip(sources, slices) {
                let lo = max(range.lowerBound, start), hi = min(range.upperBound, start + slice.count)
                if lo < hi { (dst + lo).update(from: context.buffer(source) + slice.offset + (lo - start), count: hi - lo) }
                start += slice.count
            }
        }
        if total < Chunking.copyOnOneThread { copy(0..<total) } else { context.pool.parallelFor(total, copy) }
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
