import YOLOKernels
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// [shortcut]: the previous layer's output plus layer `from`'s (same shape), then activation.
final class ShortcutLayer: Layer {
    let kind = LayerKind.shortcut
    let inputShape: Shape
    let outputShape: Shape
    let activation: Activation
    let previous: UnsafePointer<Float>
    let from: UnsafePointer<Float>
    let fromIndex: Int
    var output: UnsafeMutablePointer<Float>!

    init(section: DarknetConfig.Section, previous: UnsafePointer<Float>, previousShape: Shape,
         from: UnsafePointer<Float>, fromIndex: Int, fromShape: Shape) throws {
        guard previousShape == fromShape else {
            throw section.error("from=\(fromIndex) is \(fromShape) but the previous layer is \(previousShape); only equal shapes are supported")
        }
        activation = try Activation(name: section.string("activation", default: "linear"), section: section)
        self.previous = previous
        self.from = from
        self.fromIndex = fromIndex
        inputShape = previousShape
        outputShape = previousShape
    }

    func forward(_ context: inout ForwardContext) {
        let (a, b, dst, act) = (previous, from, output!, activation)
        context.pool.parallelFor(outputShape.count) { range in
            add(a, b, range: range, into: dst)
            activate(dst + range.lowerBound, count: range.count, activation: act, exp: exp)
        }
    }
}
