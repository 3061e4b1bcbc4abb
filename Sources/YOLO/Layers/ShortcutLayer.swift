#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import YOLOKernels

/// [shortcut]: the previous layer's output plus layer `from`'s (same shape), then activation.
final class ShortcutLayer: Layer, @unchecked Sendable {
    let kind = LayerKind.shortcut
    let index: Int
    let sources: [Int]
    let inputShape: Shape
    let outputShape: Shape
    let activation: Activation

    init(section: DarknetConfig.Section, index: Int, shapes: [Shape], inputShape: Shape) throws(YOLOError) {
        let from = try resolveLayer(section, key: "from", index: index)
        let fromShape = shapes[from]
        guard inputShape == fromShape else {
            throw section.error("from=\(from) is \(fromShape) but the previous layer is \(inputShape); only equal shapes are supported")
        }
        activation = try Activation(name: section.string("activation", default: "linear"), section: section)
        self.index = index
        sources = [index - 1, from]
        self.inputShape = inputShape
        outputShape = inputShape
    }

    func forward(_ context: inout ForwardContext) {
        let (a, b, dst, act) = (UnsafePointer(context.buffer(sources[0])), UnsafePointer(context.buffer(sources[1])),
                                context.buffer(index), activation)
        context.pool.parallelFor(outputShape.count) { range in
            add(a, b, range: range, into: dst)
            activate(dst + range.lowerBound, count: range.count, activation: act, exp: exp)
        }
    }
}
