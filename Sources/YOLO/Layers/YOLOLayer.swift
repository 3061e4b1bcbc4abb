#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// [yolo]: marks a detection head. Its output is its input with the logistic applied to
/// x, y, objectness and the class scores of each anchor (tw, th stay raw), as in Darknet.
final class YOLOLayer: Layer {
    let kind = LayerKind.yolo
    let inputShape: Shape
    let outputShape: Shape
    let classes: Int
    let mask: [Int]
    let anchors: [(width: Float, height: Float)]
    var output: UnsafeMutablePointer<Float>!
    let input: UnsafePointer<Float>

    init(section: DarknetConfig.Section, input: UnsafePointer<Float>, inputShape: Shape,
         previousIsConv: Bool, previousIndex: Int) throws {
        self.input = input
        self.inputShape = inputShape
        outputShape = inputShape
        classes = try section.positive("classes", section.int("classes", default: 20))
        let num = try section.positive("num", section.int("num", default: 1))
        mask = try section.intList("mask") ?? Array(0..<num)
        let all = try section.floatList("anchors") ?? []
        guard all.count == 2 * num else {
            throw section.error("anchors has \(all.count) numbers but num=\(num) needs \(2 * num)")
        }
        for m in mask where !(0..<num).contains(m) {
            throw section.error("mask value \(m) is out of range 0..<\(num)")
        }
        anchors = mask.map { (all[2 * $0], all[2 * $0 + 1]) }
        let expected = (classes + 5) * mask.count
        guard inputShape.c == expected else {
            let what = previousIsConv ? "the [convolutional] before it (layer \(previousIndex)) has filters=\(inputShape.c)"
                                      : "its input (layer \(previousIndex)) has \(inputShape.c) channels"
            throw section.error("\(what); for classes=\(classes) and \(mask.count) masks it should be filters=(\(classes)+5)*\(mask.count)=\(expected)")
        }
    }

    func forward(_ context: inout ForwardContext) {
        let plane = inputShape.h * inputShape.w
        let entries = classes + 5
        let (src, dst) = (input, output!)
        context.pool.parallelFor(mask.count * entries) { rows in
            for row in rows {
                let entry = row % entries
                let from = src + row * plane, to = dst + row * plane
                if entry == 2 || entry == 3 {
                    to.update(from: from, count: plane)
                } else {
                    // Darknet's logistic is computed in double: 1./(1. + exp(-x)).
                    for i in 0..<plane { to[i] = Float(1.0 / (1.0 + exp(-Double(from[i])))) }
                }
            }
        }
    }
}
