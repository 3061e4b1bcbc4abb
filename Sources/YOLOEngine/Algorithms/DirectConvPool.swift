// The direct 3x3 convolution that also computes the 2x2 stride-2 max pool after it, for layers
// with few input channels (a network's first layers), with the kernel set's DirectConv3x3: each
// pair of conv rows is pooled as it is made, so the conv's full-size output never exists. Its
// output is the pool's; the conv's bias + activation are applied to the pooled rows (exact for
// the monotonic activations the planner allows here).
import YOLOCore
import YOLOKernels

final class DirectConvPool: ConvKernel {
    let algorithm: ConvAlgorithm
    let conv: ConvolutionalLayer
    let direct: DirectConvFunctions
    let packed: ParameterPointer
    let storage: ModelStorage

    /// `direct`: the kernel set's (FP32, `.directPool`) or the FP16 kernels' (`.directPoolFP16`).
    init(_ conv: ConvolutionalLayer, algorithm: ConvAlgorithm, weights: UnsafePointer<Float>, direct: DirectConvFunctions) {
        precondition(conv.is3x3Same, "DirectConvPool: layer \(conv.index) is not 3x3 stride 1 pad 1")
        precondition(algorithm.fusesPool, "DirectConvPool: \(algorithm)")
        self.conv = conv
        self.algorithm = algorithm
        self.direct = direct
        let storage = ModelStorage()
        self.storage = storage
        let p = storage.allocate(direct.packedSize(filters: conv.filters, channels: conv.inputShape.c))
        direct.pack(weights, filters: conv.filters, channels: conv.inputShape.c, into: p)
        packed = ParameterPointer(base: p)
    }

    var workspaceFloats: Int { direct.scratchSize(channels: conv.inputShape.c, width: conv.inputShape.w) }
    var parameterBytes: Int { 4 * storage.floats }

    /// `dst` receives the pooled output (filters x h/2 x w/2); pooled rows are split over the threads.
    func run(_ src: UnsafePointer<Float>, into dst: UnsafeMutablePointer<Float>, epilogue: Epilogue?,
             context: StepContext) -> UInt64 {
        let (c, h, w, m) = (conv.inputShape.c, conv.inputShape.h, conv.inputShape.w, conv.filters)
        let (count, rowWidth) = (conv.outputShape.h / 2, conv.outputShape.w / 2)
        let (packed, direct, ctx, pool) = (packed.base, direct, context, context.pool)
        let parts = min(pool.threadCount, count)
        pool.run { part in
            guard part < parts else { return }
            let rows = count * part / parts ..< count * (part + 1) / parts
            direct.pooledRows(src, height: h, width: w, channels: c, packed: packed, filters: m, rows: rows, into: dst,
                              scratch: ctx.workspace(part: part))
            if let epilogue {
                applyBiasActivation(dst + rows.lowerBound * rowWidth, bias: epilogue.bias, channels: 0..<m,
                                    spatial: rows.count * rowWidth, channelStride: count * rowWidth,
                                    activation: epilogue.activation)
            }
        }
        return 0
    }
}
