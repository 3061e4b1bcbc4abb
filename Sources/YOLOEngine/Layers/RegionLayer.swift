import YOLOCore

/// [region] (YOLOv2): a detection head whose anchors are in grid cells. Its output is its input
/// with the logistic applied to x, y and objectness of each anchor and, with softmax=1, a softmax
/// over the class scores (without it they stay raw), as pjreddie's forward_region_layer.
/// Only for inspection, like [yolo]: the decoder reads the raw input.
final class RegionLayer: ComputedLayer {
    let kind = LayerKind.region
    let place: LayerPlace
    let info: HeadInfo

    init(section: DarknetConfig.Section, index: Int, inputShape: Shape, previousKind: LayerKind?) throws(YOLOError) {
        place = LayerPlace(index: index, sources: [index - 1], input: inputShape, output: inputShape)
        let classes = try section.positive("classes", section.int("classes", default: 20))
        let num = try section.positive("num", section.int("num", default: 1))
        let coords = try section.int("coords", default: 4)
        guard coords == 4 else {
            throw section.error("coords=\(coords) is not supported (only 4: x, y, w, h)",
                                line: section.options.last { $0.key == "coords" }?.line)
        }
        let all = try section.floatList("anchors") ?? []
        guard all.count % 2 == 0, all.count / 2 == num else {
            throw section.error("anchors has \(all.count) numbers but num=\(num) needs \(2 * num)")
        }
        let softmax = try section.int("softmax", default: 0)
        guard softmax == 0 || softmax == 1 else {
            throw section.error("softmax=\(softmax) must be 0 or 1", line: section.options.last { $0.key == "softmax" }?.line)
        }
        // Darknet's softmax trees (tree=), background and coords other than 4 are YOLO9000's.
        let expected = (classes + coords + 1) * num
        guard inputShape.c == expected else {
            let what = previousKind == .convolutional
                ? "the [convolutional] before it (layer \(index - 1)) has filters=\(inputShape.c)"
                : "its input (layer \(index - 1)) has \(inputShape.c) channels"
            throw section.error("\(what); for classes=\(classes), coords=\(coords) and num=\(num) it should be filters=(\(classes)+\(coords)+1)*\(num)=\(expected)")
        }
        var info = HeadInfo(layerIndex: index, inputLayer: index - 1, gridWidth: inputShape.w, gridHeight: inputShape.h,
                            classes: classes, anchors: (0..<num).map { (all[2 * $0], all[2 * $0 + 1]) }, mask: Array(0..<num))
        info.region = true
        info.softmax = softmax == 1
        self.info = info
    }

    var head: HeadInfo? { info }

    func forward(_ context: StepContext) {
        let plane = inputShape.h * inputShape.w
        let entries = info.classes + 5
        let (src, dst) = (UnsafePointer(input(context)), context.buffer(index))
        let softmax = info.softmax, classes = info.classes
        context.pool.parallelFor(info.anchors.count) { anchors in
            for n in anchors {
                let from = src + n * entries * plane, to = dst + n * entries * plane
                to.update(from: from, count: entries * plane)
                for entry in [0, 1, 4] {
                    for i in 0..<plane { to[entry * plane + i] = regionLogistic(from[entry * plane + i]) }
                }
                guard softmax else { continue }
                for i in 0..<plane { regionSoftmax(from + 5 * plane + i, count: classes, stride: plane, into: to + 5 * plane + i) }
            }
        }
    }
}

/// Darknet's logistic_activate, in double: 1./(1. + exp(-x)).
@inline(__always) func regionLogistic(_ x: Float) -> Float { Float(1.0 / (1.0 + exp(-Double(x)))) }

/// Darknet's softmax (temperature 1): the largest subtracted in float, exp in double, the sum in
/// float, each value divided by it.
func regionSoftmax(_ x: UnsafePointer<Float>, count: Int, stride: Int, into out: UnsafeMutablePointer<Float>) {
    var largest = -Float.greatestFiniteMagnitude
    for k in 0..<count where x[k * stride] > largest { largest = x[k * stride] }
    var sum: Float = 0
    for k in 0..<count {
        let e = Float(exp(Double(x[k * stride] - largest)))
        sum += e
        out[k * stride] = e
    }
    for k in 0..<count { out[k * stride] /= sum }
}
