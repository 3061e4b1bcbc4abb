// [convolutional]: the layer as the cfg describes it (groups = 1), and its parameters with batch
// norm folded in. How it is computed is chosen by the planner among Sources/YOLO/Algorithms.
import YOLOCore
import YOLOKernels

/// [convolutional]: convolution + batch norm (folded into weights and biases at load) + activation.
final class ConvolutionalLayer: Layer {
    let kind = LayerKind.convolutional
    let place: LayerPlace
    let filters: Int, size: Int, stride: Int, pad: Int
    let batchNormalize: Bool
    let activation: Activation

    init(section: DarknetConfig.Section, index: Int, inputShape: Shape) throws(YOLOError) {
        filters = try section.positive("filters", section.int("filters", default: 1))
        size = try section.positive("size", section.int("size", default: 1))
        stride = try section.positive("stride", section.int("stride", default: 1))
        // Darknet: pad=1 means size/2 on each side; otherwise `padding` gives it directly.
        let padFlag = try section.int("pad", default: 0)
        pad = padFlag != 0 ? size / 2 : try section.positive("padding", section.int("padding", default: 0), minimum: 0)
        batchNormalize = try section.int("batch_normalize", default: 0) != 0
        activation = try Activation(name: section.string("activation", default: "logistic"), section: section)
        for (key, neutral) in [("groups", 1), ("dilation", 1), ("binary", 0), ("xnor", 0)] {
            let v = try section.int(key, default: neutral)
            if v != neutral { throw section.error("\(key)=\(v) is not supported (only \(key)=\(neutral))") }
        }
        guard inputShape.h + 2 * pad >= size, inputShape.w + 2 * pad >= size else {
            throw section.error("size=\(size) is larger than the padded input \(inputShape)")
        }
        let outH = (inputShape.h + 2 * pad - size) / stride + 1
        let outW = (inputShape.w + 2 * pad - size) / stride + 1
        place = LayerPlace(index: index, sources: [index - 1], input: inputShape,
                           output: Shape(c: filters, h: outH, w: outW))
        // Darknet counts a layer's weights in a C int; beyond it the products below overflow.
        guard let weights = checkedProduct([filters, inputShape.c, size, size]), weights <= Int(Int32.max) else {
            throw section.error("filters=\(filters) size=\(size) on a \(inputShape) input needs more than \(Int32.max) weights, Darknet's limit for a layer")
        }
        guard let flops = checkedProduct([2, weights, outH, outW]) else {
            throw section.error("filters=\(filters) size=\(size) on a \(inputShape) input needs more multiply-adds than can be counted")
        }
        self.flops = flops
    }

    /// Depth of the GEMM: input channels x kernel taps.
    var columns: Int { inputShape.c * size * size }
    let flops: Int
    var geometry: (size: Int, stride: Int) { (size, stride) }
    var convolution: ConvolutionalLayer? { self }
    /// 3x3, stride 1, padding 1: the shape Winograd and the direct kernel compute.
    var is3x3Same: Bool { size == 3 && stride == 1 && pad == 1 }
    /// 1x1, stride 1, no padding: the input already is the GEMM's column matrix.
    var isPointwise: Bool { size == 1 && stride == 1 && pad == 0 }

    /// Floats this layer reads from a weights file: biases; scales, rolling mean, rolling
    /// variance when batch-normalized; weights.
    var parameterCount: Int { filters * (batchNormalize ? 4 : 1) + filters * columns }

    /// Folds batch norm into the weights and biases of `params` (`parameterCount` floats in file
    /// order) in place, Darknet's epsilon outside the square root, and refuses non-finite values.
    /// Returns the biases (kept in `storage`) and the folded weights (filters x columns, row-major,
    /// inside `params`: valid until the buffer is reused for the next layer).
    func fold(_ params: UnsafeMutablePointer<Float>, weightsName: String,
              storage: ModelStorage) throws(YOLOError) -> (bias: UnsafePointer<Float>, weights: UnsafePointer<Float>) {
        let bias = params
        let weights = params + filters * (batchNormalize ? 4 : 1)
        if let bad = firstNonFinite(params, count: parameterCount) {
            throw .weights(file: weightsName, message: "layer \(index) [convolutional]: parameter \(bad) of \(parameterCount) is \(params[bad]); the weights must be finite numbers")
        }
        if batchNormalize {
            let scales = params + filters, mean = params + 2 * filters, variance = params + 3 * filters
            foldBatchNorm(weights: weights, bias: bias, scales: scales, mean: mean, variance: variance,
                          filters: filters, columns: columns)
            if let f = (0..<filters).first(where: { !bias[$0].isFinite || !(variance[$0] >= 0) }) {
                throw .weights(file: weightsName, message: "layer \(index) [convolutional]: filter \(f) has batch-norm variance \(variance[f]) and scale \(scales[f]); folding them gives a non-finite bias")
            }
            if let i = firstNonFinite(weights, count: filters * columns) {
                throw .weights(file: weightsName, message: "layer \(index) [convolutional]: weight \(i) is not finite after folding batch norm (scale / sqrt(variance) overflows)")
            }
        }
        let kept = storage.allocate(filters)
        kept.update(from: bias, count: filters)
        return (UnsafePointer(kept), UnsafePointer(weights))
    }
}
