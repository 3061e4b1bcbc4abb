// A 1x1 stride-1 convolution as one GEMM: the input (channels x h*w) already is the column
// matrix, so output = weights (filters x channels) · input, no im2col.
import YOLOCore
import YOLOKernels

final class PointwiseGemm: ConvKernel {
    /// `.gemm1x1`, or its BF16 or FP16 form with that 16-bit GEMM.
    let algorithm: ConvAlgorithm
    let conv: ConvolutionalLayer
    let weights: GemmWeights
    let storage: ModelStorage

    init(_ conv: ConvolutionalLayer, weights: UnsafePointer<Float>, gemm: GemmFunctions?, algorithm: ConvAlgorithm = .gemm1x1) {
        precondition(conv.isPointwise, "PointwiseGemm: layer \(conv.index) is not 1x1 stride 1")
        self.conv = conv
        self.algorithm = algorithm
        let storage = ModelStorage()
        self.storage = storage
        self.weights = Gemm.prepare(weights, rows: conv.filters, columns: conv.columns, kernels: gemm, storage: storage,
                                    dataOutlivesLoad: false)
    }

    var workspaceFloats: Int { 0 }
    var parameterBytes: Int { 4 * storage.floats }

    func run(_ src: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>, epilogue: Epilogue?,
             context: StepContext) -> UInt64 {
        let n = conv.outputShape.h * conv.outputShape.w
        let elapsed = timed(context.timesGemm) {
            Gemm.multiply(weights, src, n: n, ldb: n, into: out, ldc: n, pool: context.pool, scratch: context.gemmScratch)
        }
        applyEpilogue(epilogue, out, shape: conv.outputShape, rows: 0..<conv.outputShape.h, pool: context.pool)
        return elapsed
    }
}
