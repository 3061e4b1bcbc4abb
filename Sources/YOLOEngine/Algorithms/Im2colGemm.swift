// Convolution as im2col + GEMM: output (filters x outH*outW) = weights (filters x c*k*k) · columns,
// block by block of output rows so the column block stays in the core's L2 cache instead of
// making a round trip through memory. Computes any convolution; the reference algorithm. With the
// BF16 GEMM, `im2col-bf16`.
import YOLOCore
import YOLOKernels

final class Im2colGemm: ConvKernel {
    /// `.im2col`, or its BF16 or FP16 form with that 16-bit GEMM.
    let algorithm: ConvAlgorithm
    let conv: ConvolutionalLayer
    let weights: GemmWeights
    let storage: ModelStorage
    /// Output rows per block: about `blockFloats` column floats, and at least `minBlockColumns`
    /// pixels, below which the GEMM loses speed.
    let blockRows: Int
    static let blockFloats = 64 * 1024
    static let minBlockColumns = 512

    /// Packs the folded weights (filters x columns) for `gemm` (nil: OpenBLAS, which gets a copy).
    init(_ conv: ConvolutionalLayer, weights: UnsafePointer<Float>, gemm: GemmFunctions?, algorithm: ConvAlgorithm = .im2col) {
        self.conv = conv
        self.algorithm = algorithm
        let storage = ModelStorage()
        self.storage = storage
        self.weights = Gemm.prepare(weights, rows: conv.filters, columns: conv.columns, kernels: gemm, storage: storage,
                                    dataOutlivesLoad: false)
        let w = conv.outputShape.w
        let cached = Im2colGemm.blockFloats / max(1, conv.columns * w)
        let wide = (Im2colGemm.minBlockColumns + w - 1) / w
        blockRows = max(1, min(conv.outputShape.h, max(cached, wide)))
    }

    var blockCount: Int { (conv.outputShape.h + blockRows - 1) / blockRows }
    var workspaceFloats: Int { conv.columns * blockRows * conv.outputShape.w }
    var parameterBytes: Int { 4 * storage.floats }

    func run(_ src: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>, epilogue: Epilogue?,
             context: StepContext) -> UInt64 {
        runInBlocks(total: conv.outputShape.h, size: blockRows, count: blockCount, context: context) { rows, place in
            block(src, out, rows: rows, epilogue: epilogue, place)
        }
    }

    /// im2col + GEMM + epilogue for output rows `rows` (at most `blockRows`), spread over the
    /// place's pool or on the calling thread.
    private func block(_ src: UnsafePointer<Float>, _ out: UnsafeMutablePointer<Float>, rows: Range<Int>,
                       epilogue: Epilogue?, _ place: BlockPlace) -> UInt64 {
        let (workspace, pool) = (place.workspace, place.pool)
        let (h, w, k, s, p) = (conv.inputShape.h, conv.inputShape.w, conv.size, conv.stride, conv.pad)
        let (oh, ow, columns) = (conv.outputShape.h, conv.outputShape.w, conv.columns)
        if let pool {
            pool.parallelFor(columns) { r in
                im2col(src, height: h, width: w, kernel: k, stride: s, pad: p, outWidth: ow, outRows: rows, rows: r,
                       into: workspace)
            }
        } else {
            im2col(src, height: h, width: w, kernel: k, stride: s, pad: p, outWidth: ow, outRows: rows,
                   rows: 0..<columns, into: workspace)
        }
        let n = rows.count * ow
        let elapsed = timed(place.timed) {
            Gemm.multiply(weights, workspace, n: n, ldb: n, into: out + rows.lowerBound * ow, ldc: oh * ow, pool: pool,
                          scratch: place.scratch)
        }
        applyEpilogue(epilogue, out, shape: conv.outputShape, rows: rows, pool: pool)
        return elapsed
    }
}
