#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import COpenBLAS

/// [convolutional]: convolution (groups = 1) + batch norm folded in at load + activation,
/// computed as im2col + sgemm: output (filters x outH*outW) = weights (filters x c*k*k) · columns.
final class ConvolutionalLayer: Layer {
    let kind = LayerKind.convolutional
    let inputShape: Shape
    let outputShape: Shape
    let filters: Int, size: Int, stride: Int, pad: Int
    let batchNormalize: Bool
    let activation: Activation
    var output: UnsafeMutablePointer<Float>!
    let input: UnsafePointer<Float>
    /// Folded weights (filters x c*size*size, row-major) and biases; set by `loadParameters`.
    private(set) var weights: UnsafePointer<Float>!
    private(set) var biases: UnsafePointer<Float>!
    /// Set by the network when the only consumer is a max pool that applies bias + activation.
    var epilogueDeferred = false

    init(section: DarknetConfig.Section, input: UnsafePointer<Float>, inputShape: Shape) throws {
        self.input = input
        self.inputShape = inputShape
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
        let outH = (inputShape.h + 2 * pad - size) / stride + 1
        let outW = (inputShape.w + 2 * pad - size) / stride + 1
        guard inputShape.h + 2 * pad >= size, inputShape.w + 2 * pad >= size else {
            throw section.error("size=\(size) is larger than the padded input \(inputShape)")
        }
        outputShape = Shape(c: filters, h: outH, w: outW)
    }

    var columns: Int { inputShape.c * size * size }
    var needsIm2col: Bool { !(size == 1 && stride == 1 && pad == 0) }
    var workspaceCount: Int { needsIm2col ? columns * outputShape.h * outputShape.w : 0 }
    var flops: Int { 2 * filters * columns * outputShape.h * outputShape.w }

    /// Floats this layer reads from a weights file.
    var parameterCount: Int { filters * (batchNormalize ? 4 : 1) + filters * columns }

    /// Takes this layer's parameters from `params` (laid out as in a Darknet weights file:
    /// biases; scales, rolling mean, rolling variance when batch-normalized; weights) and folds
    /// batch norm into weights and biases in place, with Darknet's epsilon outside the root.
    func loadParameters(_ params: UnsafeMutablePointer<Float>) {
        let bias = params
        let weights = params + filters * (batchNormalize ? 4 : 1)
        if batchNormalize {
            let scales = params + filters, mean = params + 2 * filters, variance = params + 3 * filters
            for f in 0..<filters {
                let factor = scales[f] / (variance[f].squareRoot() + 0.000001)
                let row = weights + f * columns
                for i in 0..<columns { row[i] *= factor }
                bias[f] = bias[f] - mean[f] * factor
            }
        }
        self.weights = UnsafePointer(weights)
        self.biases = UnsafePointer(bias)
    }

    func forward(_ context: inout ForwardContext) {
        let n = outputShape.h * outputShape.w
        var b = input
        if needsIm2col {
            let ws = context.workspace
            let (h, w, k, s, p, oh, ow) = (inputShape.h, inputShape.w, size, stride, pad, outputShape.h, outputShape.w)
            let src = input
            context.pool.parallelFor(columns) { rows in
                im2col(src, height: h, width: w, kernel: k, stride: s, pad: p,
                       outHeight: oh, outWidth: ow, rows: rows, into: ws)
            }
            b = UnsafePointer(ws)
        }
        let start = context.gemmNanoseconds == nil ? 0 : monotonicNanoseconds()
        if context.splitGemm && context.pool.threadCount > 1 {
            // Our own split: rows of the output when there are more filters than pixels (the
            // 13x13 layers), else columns in multiples of 16 so each part stays vector-aligned.
            let (out, w, m, k, cols) = (output!, weights!, filters, columns, b)
            let parts = context.pool.threadCount
            if m >= n {
                context.pool.parallelFor(m) { rows in
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Int32(rows.count), Int32(n), Int32(k),
                                1, w + rows.lowerBound * k, Int32(k), cols, Int32(n), 0, out + rows.lowerBound * n, Int32(n))
                }
            } else {
                let chunk = (n + parts * 16 - 1) / (parts * 16) * 16
                context.pool.run { part in
                    let lo = min(n, part * chunk), hi = min(n, lo + chunk)
                    guard hi > lo else { return }
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Int32(m), Int32(hi - lo), Int32(k),
                                1, w, Int32(k), cols + lo, Int32(n), 0, out + lo, Int32(n))
                }
            }
        } else {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Int32(filters), Int32(n), Int32(columns),
                        1, weights, Int32(columns), b, Int32(n), 0, output, Int32(n))
        }
        if let t = context.gemmNanoseconds { context.gemmNanoseconds = t + (monotonicNanoseconds() - start) }
        // A following max pool applies bias and activation to its (4x smaller) output instead:
        // both are monotonic, so max(act(x + b)) == act(max(x) + b) exactly.
        if epilogueDeferred { return }
        let (out, bias, act) = (output!, biases!, activation)
        context.pool.parallelFor(filters) { range in
            biasActivate(out, bias: bias, channels: range, spatial: n, activation: act, exp: exp)
        }
    }
}
