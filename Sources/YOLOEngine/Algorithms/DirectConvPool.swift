// The direct 3x3 convolution that also computes the 2x2 stride-2 max pool after it, for layers
// with few input channels (a network's first layers), with the kernel set's DirectConv3x3 (FP32),
// the FP16 kernels' DirectConv3x3Half, or the level's DirectConv3x3Pairs (INT8-quantized input,
// int16 pair products; a level with tap products runs INT8 in Int8Conv instead): each pair of conv rows is pooled as it is made, so the conv's full-size
// output never exists. Its output is the pool's; the conv's bias + activation are applied to the
// pooled rows (exact for the monotonic activations the planner allows here).
import YOLOCore
import YOLOKernels

final class DirectConvPool: ConvKernel {
    let algorithm: ConvAlgorithm
    let conv: ConvolutionalLayer
    let storage: ModelStorage
    let workspaceFloats: Int
    /// (src, pooled rows, dst, scratch, epilogue): the kernel with its packed weights.
    private let pooledRows: @Sendable (UnsafePointer<Float>, Range<Int>, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>,
                                       PooledEpilogue?) -> Void

    /// `direct`: the kernel set's (FP32, `.directPool`) or the FP16 kernels' (`direct+pool-fp16`).
    init(_ conv: ConvolutionalLayer, algorithm: ConvAlgorithm, weights: UnsafePointer<Float>, direct: DirectConvFunctions) {
        DirectConvPool.check(conv, algorithm)
        let storage = ModelStorage()
        let (c, h, w, m) = (conv.inputShape.c, conv.inputShape.h, conv.inputShape.w, conv.filters)
        let p = storage.allocate(direct.packedSize(m, c))
        direct.pack(weights, m, c, p)
        let packed = ParameterPointer(base: p)
        (self.conv, self.algorithm, self.storage) = (conv, algorithm, storage)
        workspaceFloats = direct.scratchSize(c, w)
        pooledRows = { src, rows, dst, scratch, epilogue in
            direct.pooledRows(src, h, w, c, packed.base, m, rows, dst, scratch, epilogue)
        }
    }

    /// `direct+pool-int8`: the weights quantized per filter as INT8 im2col quantizes them (s8), the
    /// pooled sums scaled by input scale x weight scale, as INT8 im2col scales its sums.
    init(_ conv: ConvolutionalLayer, algorithm: ConvAlgorithm, weights: UnsafePointer<Float>, pairs: DirectPairFunctions,
         input: Int8Quantization) {
        DirectConvPool.check(conv, algorithm)
        let storage = ModelStorage()
        let (c, h, w, m) = (conv.inputShape.c, conv.inputShape.h, conv.inputShape.w, conv.filters)
        let integers = UnsafeMutablePointer<Float>.allocate(capacity: m * c * 9)
        defer { integers.deallocate() }
        let scales = storage.allocate(m)
        quantizeWeightsAsFloats(weights, filters: m, taps: c * 9, into: integers, scales: scales)
        for f in 0..<m { scales[f] *= input.scale }
        let words = storage.allocateBytes(4 * pairs.packedWords(m, c)).bindMemory(to: UInt32.self, capacity: pairs.packedWords(m, c))
        pairs.pack(integers, m, c, words)
        let (packed, scale) = (RawParameterPointer(base: UnsafeRawPointer(words)), ParameterPointer(base: scales))
        (self.conv, self.algorithm, self.storage) = (conv, algorithm, storage)
        workspaceFloats = pairs.scratchSize(c, w)
        pooledRows = { src, rows, dst, scratch, epilogue in
            pairs.pooledRows(src, h, w, c, input, packed.base.assumingMemoryBound(to: UInt32.self), scale.base, m, rows, dst,
                             scratch, epilogue)
        }
    }

    private static func check(_ conv: ConvolutionalLayer, _ algorithm: ConvAlgorithm) {
        precondition(conv.is3x3Same, "DirectConvPool: layer \(conv.index) is not 3x3 stride 1 pad 1")
        precondition(algorithm.fusesPool, "DirectConvPool: \(algorithm)")
    }

    var parameterBytes: Int { 4 * storage.floats }

    /// `dst` receives the pooled output (filters x h/2 x w/2); pooled rows are shared out in chunks.
    /// A leaky or linear epilogue goes into the kernel's pool (`PooledEpilogue`), others after it.
    func run(_ src: UnsafePointer<Float>, into dst: UnsafeMutablePointer<Float>, epilogue: Epilogue?,
             context: StepContext) -> UInt64 {
        let m = conv.filters
        let (count, rowWidth) = (conv.outputShape.h / 2, conv.outputShape.w / 2)
        let (pooledRows, ctx, pool) = (pooledRows, context, context.pool)
        let fused = epilogue.flatMap { e in
            e.activation == .leaky || e.activation == .linear ? PooledEpilogue(bias: e.bias, leaky: e.activation == .leaky) : nil
        }
        pool.forEach(count, grain: Chunking.grain(count, threads: pool.threadCount)) { rows, thread in
            pooledRows(src, rows, dst, ctx.workspace(part: thread), fused)
            if fused == nil, let epilogue {
                applyBiasActivation(dst + rows.lowerBound * rowWidth, bias: epilogue.bias, channels: 0..<m,
                                    spatial: rows.count * rowWidth, channelStride: count * rowWidth,
                                    activation: epilogue.activation)
            }
        }
        return 0
    }
}
