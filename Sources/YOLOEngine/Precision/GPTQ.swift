// GPTQ-style rounding of a convolution's INT8 weights (`yolo calibrate --gptq`): instead of each
// weight to its nearest step, the filter's weights one column at a time, each rounding error
// spread over the columns not yet rounded so that the layer's output on the calibration inputs
// moves least (H = sum of x x^T of its im2col columns). docs/int8-rounding.md has the measurements.
// Every sum here runs in Double in a fixed order: the same table run to run and at any thread count.
import YOLOCore
import YOLOKernels

/// H = sum over inputs of X X^T, X a convolution's im2col columns (`k` = channels x size x size
/// rows) of its input quantized as the table quantizes it, as integers q - zero point (the
/// scale would only scale H).
struct ColumnMoments {
    let conv: ConvolutionalLayer
    let quantization: Int8Quantization
    var k: Int { conv.columns }
    /// k x k, row-major; the upper triangle (j >= i) holds the sums.
    private(set) var h: [Double]
    /// The rows of X of one input (k x n padded to a multiple of 4), kept from one input to the next.
    private var x: [Double] = []

    init(_ conv: ConvolutionalLayer, quantization: Int8Quantization) {
        (self.conv, self.quantization) = (conv, quantization)
        h = [Double](repeating: 0, count: conv.columns * conv.columns)
    }

    /// Adds the columns of one input (the convolution's input tensor).
    mutating func add(_ input: UnsafeBufferPointer<Float>) {
        let (c, ih, iw) = (conv.inputShape.c, conv.inputShape.h, conv.inputShape.w)
        let (oh, ow, s, p, size) = (conv.outputShape.h, conv.outputShape.w, conv.stride, conv.pad, conv.size)
        let n = oh * ow, padded = (n + 3) & ~3, zero = Double(quantization.zeroPoint)
        // Rows of X (one per channel x tap), each n values long, padded with zeros to a multiple of 4.
        if x.count == k * padded { x.withUnsafeMutableBufferPointer { $0.update(repeating: 0) } } else { x = [Double](repeating: 0, count: k * padded) }
        for ch in 0..<c {
            for ky in 0..<size {
                for kx in 0..<size {
                    let row = ((ch * size + ky) * size + kx) * padded
                    for oy in 0..<oh {
                        let y = oy * s - p + ky
                        guard y >= 0 && y < ih else { continue }  // padding: the zero point, 0 here
                        for ox in 0..<ow {
                            let xx = ox * s - p + kx
                            guard xx >= 0 && xx < iw else { continue }
                            x[row + oy * ow + ox] = Double(quantization.quantize(input[(ch * ih + y) * iw + xx])) - zero
                        }
                    }
                }
            }
        }
        let k = self.k
        x.withUnsafeBufferPointer { x in
            h.withUnsafeMutableBufferPointer { h in
                for i in 0..<k {
                    let a = x.baseAddress! + i * padded
                    for j in i..<k { h[i * k + j] += ColumnMoments.dot(a, x.baseAddress! + j * padded, count: padded) }
                }
            }
        }
    }

    /// Sum of a[i] * b[i] over `count` (a multiple of 4): four lanes, then the lanes in order.
    @inline(__always)
    static func dot(_ a: UnsafePointer<Double>, _ b: UnsafePointer<Double>, count: Int) -> Double {
        var acc = SIMD4<Double>()
        let (va, vb) = (UnsafeRawPointer(a), UnsafeRawPointer(b))
        var i = 0
        while i < count {
            acc += va.loadUnaligned(fromByteOffset: 8 * i, as: SIMD4<Double>.self)
                * vb.loadUnaligned(fromByteOffset: 8 * i, as: SIMD4<Double>.self)
            i += 4
        }
        return ((acc[0] + acc[1]) + acc[2]) + acc[3]
    }
}

enum GPTQ {
    /// The damping added to H's diagonal, as a fraction of its mean: H of few inputs may be
    /// singular, and the damping keeps the spread errors small.
    static let damping = 0.01

    /// The steps (-1, 0, +1 from round-to-nearest) of `weights` (filters x k) that GPTQ chooses
    /// against `h` (k x k, upper triangle): columns in order, each rounded within one step of its
    /// nearest integer, its error spread over the later columns by the Cholesky factor of H^-1.
    /// A filter's largest weight keeps its nearest integer (it sets the filter's scale).
    static func steps(weights: UnsafePointer<Float>, filters: Int, k: Int, h upper: [Double]) -> [Int8] {
        var h = [Double](repeating: 0, count: k * k)
        var mean = 0.0
        for i in 0..<k {
            for j in i..<k { (h[i * k + j], h[j * k + i]) = (upper[i * k + j], upper[i * k + j]) }
            mean += h[i * k + i]
        }
        mean = max(mean / Double(max(1, k)), 1e-12)
        for i in 0..<k { h[i * k + i] = (h[i * k + i] == 0 ? mean : h[i * k + i]) + damping * mean }
        let u = upperFactorOfInverse(h, k: k)
        var steps = [Int8](repeating: 0, count: filters * k)
        var work = [Double](repeating: 0, count: k)
        for f in 0..<filters {
            let row = weights + f * k
            let scale = int8WeightScale(row, count: k)
            var largest = 0
            for i in 0..<k {
                work[i] = Double(row[i])
                if abs(row[i]) > abs(row[largest]) { largest = i }
            }
            for i in 0..<k {
                let nearest = Double(int8Weight(row[i], scale: scale))
                var q = (work[i] / Double(scale)).rounded(.toNearestOrEven)
                q = i == largest ? nearest : max(nearest - 1, min(nearest + 1, max(-127, min(127, q))))
                steps[f * k + i] = Int8(q - nearest)
                let err = (work[i] - q * Double(scale)) / u[i * k + i]
                for j in (i + 1)..<max(i + 1, k) { work[j] -= err * u[i * k + j] }
            }
        }
        return steps
    }

    /// U, upper triangular, with U^T U = H^-1 (H symmetric positive definite, k x k row-major):
    /// H = L L^T, H^-1 = L^-T L^-1, then the Cholesky factor of that, transposed.
    static func upperFactorOfInverse(_ h: [Double], k: Int) -> [Double] {
        let l = cholesky(h, k: k)
        // L^-1 (lower), kept transposed (t[col][i] = L^-1[i][col]) so that every sum runs along rows.
        var t = [Double](repeating: 0, count: k * k)
        for col in 0..<k {
            t[col * k + col] = 1 / l[col * k + col]
            for i in (col + 1)..<max(col + 1, k) {
                var sum = 0.0
                for p in col..<i { sum += l[i * k + p] * t[col * k + p] }
                t[col * k + i] = -sum / l[i * k + i]
            }
        }
        // H^-1 = L^-T L^-1: entry (i, j) sums L^-1[p][i] L^-1[p][j] over p >= max(i, j).
        var inverse = [Double](repeating: 0, count: k * k)
        for i in 0..<k {
            for j in i..<k {
                var sum = 0.0
                for p in j..<k { sum += t[i * k + p] * t[j * k + p] }
                (inverse[i * k + j], inverse[j * k + i]) = (sum, sum)
            }
        }
        let l2 = cholesky(inverse, k: k)
        var u = [Double](repeating: 0, count: k * k)
        for i in 0..<k { for j in i..<k { u[i * k + j] = l2[j * k + i] } }
        return u
    }

    /// The lower Cholesky factor of a symmetric positive definite matrix (k x k row-major); a
    /// pivot that rounding left at or below zero is floored at a tiny positive value.
    static func cholesky(_ a: [Double], k: Int) -> [Double] {
        var l = [Double](repeating: 0, count: k * k)
        for j in 0..<k {
            var sum = a[j * k + j]
            for p in 0..<j { sum -= l[j * k + p] * l[j * k + p] }
            let pivot = sum > 1e-300 ? sum.squareRoot() : 1e-150
            l[j * k + j] = pivot
            for i in (j + 1)..<max(j + 1, k) {
                var s = a[i * k + j]
                for p in 0..<j { s -= l[i * k + p] * l[j * k + p] }
                l[i * k + j] = s / pivot
            }
        }
        return l
    }
}

extension Int8Calibrator {
    /// Convolutions whose columns (channels x size x size) exceed this are not rounded by GPTQ:
    /// H and its inverse grow with the square, their work with the cube.
    public static let gptqMaxColumns = 2304

    /// `table` with the INT8 weights of convolutions `layers` rounded by GPTQ: H of each from the
    /// FP32 network's inputs to it on `count` inputs (written by `fill`), quantized as `table`
    /// says (10 bits where marked `a10`). `model` is the FP32 model loaded from a weights file.
    public static func round(_ table: Int8Calibration, layers: Set<Int>, model: Model, inputs count: Int, threads: Int = 1,
                             fill: (Int, UnsafeMutableBufferPointer<Float>) throws(YOLOError) -> Void,
                             progress: (Int) -> Void = { _ in }) throws(YOLOError) -> Int8Calibration {
        var moments: [Int: ColumnMoments] = [:]
        for index in layers.sorted() {
            guard let conv = model.impl.first(where: { $0.convolution?.index == index })?.convolution else {
                throw .invalidArgument("GPTQ rounding: layer \(index) is not a convolution")
            }
            guard let q = table.tenBitQuantization(ofLayer: index) ?? table.quantization(ofLayer: index) else {
                throw .invalidArgument("GPTQ rounding: layer \(index) does not run in INT8 under the table (FP32-marked or without a range)")
            }
            guard conv.columns <= gptqMaxColumns else {
                throw .invalidArgument("GPTQ rounding: layer \(index) has \(conv.columns) columns (channels x size x size); at most \(gptqMaxColumns) are rounded this way")
            }
            moments[index] = ColumnMoments(conv, quantization: q)
        }
        let weights = try model.foldedWeights(of: layers)
        let session = try Session(observing: model, threads: threads)
        for n in 0..<count {
            try fill(n, session.input)
            session.forward(observingConvolutionInputs: { layer, values in moments[layer]?.add(values) })
            progress(n)
        }
        var rounded = table
        for (index, m) in moments {
            let steps = weights[index]!.withUnsafeBufferPointer {
                GPTQ.steps(weights: $0.baseAddress!, filters: m.conv.filters, k: m.k, h: m.h)
            }
            rounded.rounding[index] = Int8Rounding(steps: steps)
        }
        return rounded
    }
}
