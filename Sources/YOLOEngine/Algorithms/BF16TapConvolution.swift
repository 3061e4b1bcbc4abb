// `im2col-bf16` at a level with BF16 tap products (`HalfKernels.taps`: amx) for a 3x3 stride-1
// layer: the input rounded once into padded bfloat16 pair planes, the products read straight from
// them (TapConv.swift), no column matrix; bias + activation after, as Im2colGemm's.
import YOLOCore
import YOLOKernels

final class BF16TapConvolution: ConvKernel {
    let algorithm: ConvAlgorithm
    let conv: ConvolutionalLayer
    let taps: BF16TapConv
    let storage: ModelStorage
    private let packed: ParameterPointer
    let geometry: TapConv.Geometry

    /// The folded weights (filters x channels x 3 x 3) in tap order, packed by `gemm` (the level's
    /// BF16 tile GEMM, whose packed A the taps read).
    init(_ conv: ConvolutionalLayer, weights: UnsafePointer<Float>, gemm: GemmFunctions, taps: BF16TapConv, algorithm: ConvAlgorithm) {
        precondition(conv.is3x3Same, "BF16TapConvolution: a 3x3 stride-1 padded convolution")
        (self.conv, self.taps, self.algorithm) = (conv, taps, algorithm)
        let (c, h, w) = (conv.inputShape.c, conv.inputShape.h, conv.inputShape.w)
        geometry = TapConv.Geometry(filters: conv.filters, groups: (c + 1) / 2, height: h, width: w,
                                    planeStride: TapConv.planeStride(height: h, width: w))
        let storage = ModelStorage()
        self.storage = storage
        let depth = geometry.layout.depth / 2, matrix = BF16TapConv.tapOrder(weights, filters: conv.filters, channels: c,
                                                                           layout: geometry.layout)
        let p = storage.allocateBytes(4 * gemm.packedASize(conv.filters, depth)).bindMemory(to: Float.self,
                                                                                          capacity: gemm.packedASize(conv.filters, depth))
        matrix.withUnsafeBufferPointer { gemm.packA($0.baseAddress!, depth, conv.filters, depth, p) }
        packed = ParameterPointer(base: p)
    }

    var workspaceFloats: Int { geometry.layout.planes * geometry.planeStride }
    var parameterBytes: Int { 4 * storage.floats }

    func run(_ src: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>, epilogue: Epilogue?,
             context: StepContext) -> UInt64 {
        let pool = context.pool, g = geometry, taps = taps, packed = packed.base
        let planes = UnsafeMutableRawPointer(context.workspace).bindMemory(to: UInt32.self, capacity: workspaceFloats)
        pool.parallelFor(TapConv.planeJobs(g.layout)) { jobs in
            taps.planes(src, conv.inputShape.c, g.height, g.width, jobs, g.planeStride, planes)
        }
        let elapsed = timed(context.timesGemm) {
            pool.parallelFor(TapConv.items(g)) { items in taps.run(g, packed, planes, out, items) }
        }
        applyEpilogue(epilogue, out, shape: conv.outputShape, rows: 0..<conv.outputShape.h, pool: pool)
        return elapsed
    }
}
