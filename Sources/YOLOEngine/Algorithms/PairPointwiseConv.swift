// A 1x1 stride-1 convolution whose input the calibration table marks `a12` (`gemm1x1-int8`): the
// input quantized per tensor to 12 bits and packed as int16 pairs (the input itself is the column
// matrix), the weights per filter to 12 bits, one 16-bit pair GEMM (Int16Pairs.swift, exact
// int32 sums per block of 128 channels, added in float) dequantized with the input's scale x each
// filter's, then bias + activation (Int16Pointwise.swift). Why: the 1x1 layers before the heads
// lose detections at 8 or 10 bits, and the pair product runs at twice FP32's rate
// (docs/int8-eval.md, "The heads' 1x1 layers in 12 bits").
import YOLOCore
import YOLOKernels

final class PairPointwiseConv: ConvKernel {
    let algorithm = ConvAlgorithm(.gemm1x1, .int8)
    let conv: ConvolutionalLayer
    let input: Int8Quantization
    let pairs: Int8Functions
    let storage: ModelStorage
    private let packed: RawParameterPointer
    /// Per filter: the input's scale x the filter's.
    private let scales: ParameterPointer
    /// Zeros: the pair GEMM has no zero point (B holds q - zeroPoint).
    private let comp: RawParameterPointer

    init(_ conv: ConvolutionalLayer, weights: UnsafePointer<Float>, input: Int8Quantization, pairs: Int8Functions) {
        precondition(conv.isPointwise, "PairPointwiseConv: layer \(conv.index) is not 1x1 stride 1")
        precondition(input.levels == Int16Pointwise.inputLevels, "PairPointwiseConv: layer \(conv.index)'s input is not 12-bit")
        precondition(pairs.kc <= Int16Pairs.maxGroupsPerBlock, "PairPointwiseConv: the pair GEMM's blocks are too deep for 12-bit sums")
        (self.conv, self.input, self.pairs) = (conv, input, pairs)
        let storage = ModelStorage()
        self.storage = storage
        let (m, c) = (conv.filters, conv.inputShape.c)
        let q = UnsafeMutablePointer<Int16>.allocate(capacity: m * c)
        defer { q.deallocate() }
        let scales = storage.allocate(m)
        quantizeWeightsInt16(weights, filters: m, channels: c, into: q, scales: scales)
        for f in 0..<m { scales[f] *= input.scale }
        let packed = storage.allocateBytes(pairs.packedASize(m: m, k: 2 * c))
        UnsafeRawPointer(q).withMemoryRebound(to: Int8.self, capacity: 2 * m * c) {
            pairs.packA($0, lda: 2 * c, m: m, k: 2 * c, into: packed)
        }
        self.packed = RawParameterPointer(base: packed)
        self.scales = ParameterPointer(base: scales)
        let zeros = storage.allocateBytes(4 * m)
        zeros.initializeMemory(as: Int32.self, repeating: 0, count: m)
        comp = RawParameterPointer(base: zeros)
    }

    var pairCount: Int { (conv.inputShape.c + 1) / 2 }
    var plane: Int { conv.inputShape.h * conv.inputShape.w }
    /// The packed input: a word per pair of channels and pixel.
    var workspaceFloats: Int { pairCount * plane }
    var parameterBytes: Int { 4 * storage.floats }

    func run(_ src: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>, epilogue: Epilogue?,
             context: StepContext) -> UInt64 {
        let (pool, c, n, m) = (context.pool, conv.inputShape.c, plane, conv.filters)
        let words = UnsafeMutableRawPointer(context.workspace).bindMemory(to: UInt32.self, capacity: pairCount * n)
        let (quantization, quantize) = (input, pairs.quantizePairs)
        pool.parallelFor(pairCount) { p in quantize(src, c, n, p, quantization, words) }
        let (pairs, packed, scale, scratch) = (pairs, packed.base, scales.base, context.gemmScratch)
        let comp = self.comp.base.assumingMemoryBound(to: Int32.self)
        let elapsed = timed(context.timesGemm) {
            Gemm.split(m: m, n: n, rowPanel: pairs.mr, columnPanel: pairs.nr, pool: pool) { rows, cols, part in
                pairs.gemm(m: m, n: cols.count, k: 2 * c, packedA: packed, b: words + cols.lowerBound, ldb: n,
                           c: out + cols.lowerBound, ldc: n, comp: comp, scale: scale,
                           scratch: UnsafeMutableRawPointer(scratch.part(part)), rows: rows)
            }
        }
        applyEpilogue(epilogue, out, shape: conv.outputShape, rows: 0..<conv.outputShape.h, pool: pool)
        return elapsed
    }
}
