import YOLOCore

/// [yolo]: marks a detection head. Its output is its input with the logistic applied to
/// x, y, objectness and the class scores of each anchor (tw, th stay raw; none with
/// new_coords=1), then x and y scaled by scale_x_y, as in AlexeyAB's Darknet.
/// Only for inspection: the decoder reads the raw input, so a forward pass skips this layer.
final class YOLOLayer: ComputedLayer {
    let kind = LayerKind.yolo
    let place: LayerPlace
    let info: HeadInfo

    init(section: DarknetConfig.Section, index: Int, inputShape: Shape, previousKind: LayerKind?) throws(YOLOError) {
        place = LayerPlace(index: index, sources: [index - 1], input: inputShape, output: inputShape)
        let classes = try section.positive("classes", section.int("classes", default: 20))
        let num = try section.positive("num", section.int("num", default: 1))
        // The anchors first: they bound num (a huge num without anchors must not allocate; num
        // itself is 32-bit, so 2 * num is exact).
        let all = try section.floatList("anchors") ?? []
        guard all.count % 2 == 0, all.count / 2 == num else {
            throw section.error("anchors has \(all.count) numbers but num=\(num) needs \(2 * num)")
        }
        let mask = try section.intList("mask") ?? Array(0..<num)
        guard !mask.isEmpty else {
            throw section.error("mask is empty")
        }
        for m in mask where !(0..<num).contains(m) {
            throw section.error("mask value \(m) is out of range 0..<\(num)")
        }
        let expected = (classes + 5) * mask.count
        guard inputShape.c == expected else {
            let what = previousKind == .convolutional
                ? "the [convolutional] before it (layer \(index - 1)) has filters=\(inputShape.c)"
                : "its input (layer \(index - 1)) has \(inputShape.c) channels"
            throw section.error("\(what); for classes=\(classes) and \(mask.count) masks it should be filters=(\(classes)+5)*\(mask.count)=\(expected)")
        }
        var info = HeadInfo(layerIndex: index, inputLayer: index - 1, gridWidth: inputShape.w, gridHeight: inputShape.h,
                            classes: classes, anchors: mask.map { (all[2 * $0], all[2 * $0 + 1]) }, mask: mask)
        info.scaleXY = try section.float("scale_x_y", default: 1)
        let newCoords = try section.int("new_coords", default: 0)
        guard newCoords == 0 || newCoords == 1 else {
            throw section.error("new_coords=\(newCoords) must be 0 or 1", line: section.options.last { $0.key == "new_coords" }?.line)
        }
        info.newCoords = newCoords == 1
        // Darknet: "default" and unknown names mean do_nms_sort, "greedynms" is the same,
        // "diounms" DIoU-NMS; "cornersnms" is not implemented here. An unknown name is
        // refused rather than silently read as the default.
        let kind = try section.string("nms_kind", default: "default")
        switch kind {
        case "default", "greedynms": info.nmsKind = .greedy
        case "diounms": info.nmsKind = .diou
        default:
            throw section.error("nms_kind=\(kind) is not supported (default, greedynms, diounms)",
                                line: section.options.last { $0.key == "nms_kind" }?.line)
        }
        info.betaNMS = try section.float("beta_nms", default: 0.6)
        self.info = info
    }

    var head: HeadInfo? { info }

    func forward(_ context: StepContext) {
        let plane = inputShape.h * inputShape.w
        let entries = info.classes + 5
        let (src, dst) = (UnsafePointer(input(context)), context.buffer(index))
        let (newCoords, scale) = (info.newCoords, info.scaleXY)
        let shift = Float(-0.5 * (Double(scale) - 1))
        context.pool.parallelFor(info.mask.count * entries) { rows in
            for row in rows {
                let entry = row % entries
                let from = src + row * plane, to = dst + row * plane
                if entry == 2 || entry == 3 || newCoords {
                    to.update(from: from, count: plane)
                } else {
                    // Darknet's logistic is computed in double: 1./(1. + exp(-x)).
                    for i in 0..<plane { to[i] = Float(1.0 / (1.0 + exp(-Double(from[i])))) }
                }
                if entry < 2 { for i in 0..<plane { to[i] = to[i] * scale + shift } }
            }
        }
    }
}
