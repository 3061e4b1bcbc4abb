// The ways this engine computes a convolution, which of them fit a layer, and the interface each
// one implements once prepared for a layer (`ConvKernel`). One file per algorithm beside this one.
import YOLOCore
import YOLOKernels

/// How a convolution is computed.
public enum ConvAlgorithm: String, Sendable, CaseIterable, CustomStringConvertible {
    /// im2col + GEMM: any convolution (Im2colGemm.swift).
    case im2col
    /// A 1x1 stride-1 convolution as one GEMM on the input itself (PointwiseGemm.swift).
    case gemm1x1
    /// Winograd F(2x2, 3x3): 2.25x fewer multiplications (WinogradConv.swift).
    case winograd2
    /// Winograd F(4x4, 3x3): 4x fewer multiplications, 4x the weights (WinogradConv.swift).
    case winograd4
    /// The direct 3x3 convolution that computes the 2x2 stride-2 max pool after it in the same
    /// pass: the full-size output never exists (DirectConvPool.swift). Replaces two layers.
    case directPool = "direct+pool"
    /// INT8: the input quantized (u8) with its calibrated range, im2col (none for 1x1) + the INT8
    /// GEMM, float outputs (Int8Conv.swift). Any convolution, whichever library computes FP32 GEMMs.
    case int8
    /// INT8 Winograd F(4x4, 3x3): the input quantized as for `.int8` and transformed in integers,
    /// 10-bit transformed kernels, 16-bit pair GEMMs (WinogradInt8Conv.swift).
    case winograd4Int8 = "winograd4-int8"
    /// INT8 Winograd F(2x2, 3x3): the same with the s8 weights' exact int16 transforms, so INT8
    /// im2col's integer sums with 2.25x fewer products, in 3.6 bytes per weight (WinogradInt8Conv.swift).
    case winograd2Int8 = "winograd2-int8"
    /// BF16: im2col, the 1x1 GEMM and Winograd F(2x2) (its GEMM stage) with the BF16 GEMM (weights
    /// and GEMM inputs rounded to bfloat16, FP32 sums and outputs: BF16Gemm.swift); where the CPU
    /// has AVX-512 BF16. Everything but the GEMM as in the FP32 form. F(4x4) has no BF16 form: its
    /// transforms (coefficients up to 8, sums that cancel) magnify bfloat16's rounding; measured on
    /// yolov3-tiny (16 photos, threshold 0.25), F(4x4) in BF16 moved confidences by 0.0072 on
    /// average (0.025 at most) and lost a detection, F(2x2) by 0.0021 (0.008), im2col by 0.0017.
    case im2colBF16 = "im2col-bf16"
    case gemm1x1BF16 = "gemm1x1-bf16"
    case winograd2BF16 = "winograd2-bf16"
    /// FP16: the same three with the FP16 GEMM of the model's kernels: FP16 products and sums over
    /// blocks of k, FP32 across them (FP16Gemm.swift) where the CPU has FP16 arithmetic (64-bit
    /// ARM), else FP32 arithmetic on FP16-stored weights (FP16Weights.swift). With FP16 arithmetic
    /// F(4x4) has no FP16 form: its GEMM sums, in FP16, values much larger than the outputs they
    /// cancel down to. Measured on yolov3-tiny (16 photos, threshold 0.25, the FP16 GEMM's model):
    /// F(4x4) in FP16 moved confidences by 0.0061 on average (0.028 at most), F(2x2) by 0.0016
    /// (0.0052), im2col by 0.0015 (0.0058); all 28 detections kept.
    case im2colFP16 = "im2col-fp16"
    case gemm1x1FP16 = "gemm1x1-fp16"
    case winograd2FP16 = "winograd2-fp16"
    /// F(4x4) on FP16-stored transformed weights, FP32 arithmetic: only where the FP16 GEMM is the
    /// weights-only one (`HalfKernels.weightsOnly`).
    case winograd4FP16 = "winograd4-fp16"
    /// The direct 3x3 convolution + pool in FP16 arithmetic (DirectConvHalf.swift): where the
    /// FP16 GEMM is FP16 arithmetic (`HalfKernels.direct`), with precision .fp16 and, in an INT8
    /// model, for a layer left out of INT8 (yolov3-tiny's first).
    case directPoolFP16 = "direct+pool-fp16"
    /// The direct 3x3 convolution + pool on the INT8-quantized input (8 or 10 bits, as the table
    /// gives the layer), in exact 16-bit pair products (DirectConvPairs.swift): where the level has
    /// it (`KernelSet.int16Direct`), for a calibrated layer.
    case directPoolInt8 = "direct+pool-int8"

    public var description: String { rawValue }

    /// The arithmetic it computes in.
    public var precision: Precision {
        switch self {
        case .int8, .winograd4Int8, .winograd2Int8, .directPoolInt8: return .int8
        case .im2colBF16, .gemm1x1BF16, .winograd2BF16: return .bf16
        case .im2colFP16, .gemm1x1FP16, .winograd2FP16, .winograd4FP16, .directPoolFP16: return .fp16
        default: return .fp32
        }
    }

    /// The FP32 algorithm a BF16 or FP16 one computes as (itself for the others).
    var fp32Form: ConvAlgorithm {
        switch self {
        case .im2colBF16, .im2colFP16: return .im2col
        case .gemm1x1BF16, .gemm1x1FP16: return .gemm1x1
        case .winograd2BF16, .winograd2FP16: return .winograd2
        case .winograd4FP16: return .winograd4
        case .directPoolFP16, .directPoolInt8: return .directPool
        default: return self
        }
    }

    /// Whether it computes as an FP32 algorithm with a 16-bit GEMM (BF16 or FP16), or (the direct
    /// conv + pool) with the 16-bit kernels' own.
    var isHalfGemm: Bool { precision == .bf16 || precision == .fp16 }

    /// Whether it computes the max pool after the convolution in the same pass (a fused pair's
    /// step covers both layers).
    var fusesPool: Bool { fp32Form == .directPool }

    /// The form of an FP32 algorithm in `precision` (.bf16 or .fp16), where it has one.
    func form(in precision: Precision) -> ConvAlgorithm? {
        ConvAlgorithm.allCases.first { $0.precision == precision && $0.fp32Form == self }
    }

    /// Whether this algorithm can compute `conv` (for `.directPool`, `pooledBy` is the max pool
    /// after it, which must be a 2x2 stride-2 pool of its whole, even-sized output that reads only
    /// it), with `kernels` our kernel set (nil: GEMMs in OpenBLAS, no direct kernel).
    func applies(to conv: ConvolutionalLayer, pooledBy next: MaxPoolLayer?, ourKernels: Bool) -> Bool {
        switch self {
        case .im2colBF16, .gemm1x1BF16, .winograd2BF16, .im2colFP16, .gemm1x1FP16, .winograd2FP16, .winograd4FP16,
             .directPoolFP16, .directPoolInt8:
            return fp32Form.applies(to: conv, pooledBy: next, ourKernels: ourKernels)
        case .im2col: return !conv.isPointwise
        case .gemm1x1: return conv.isPointwise
        case .winograd2, .winograd4, .winograd4Int8, .winograd2Int8: return conv.is3x3Same
        case .int8: return true   // (the planner offers it where calibrated and the level has INT8 kernels)
        case .directPool:
            guard ourKernels, conv.is3x3Same, conv.inputShape.c <= ConvAlgorithm.directMaxChannels, let next,
                  next.geometry == (2, 2), next.sources == [conv.index], conv.activation.isMonotonic else { return false }
            let out = conv.outputShape
            return out.h % 2 == 0 && out.w % 2 == 0 && next.outputShape == Shape(c: out.c, h: out.h / 2, w: out.w / 2)
        }
    }

    /// Whether the model options allow it: `.im2col` leaves out Winograd (whose kernels need more
    /// memory), `.winograd2` leaves out F(4x4).
    func allowed(by option: ModelOptions.Convolution) -> Bool {
        switch (fp32Form, option) {
        case (.winograd2, .im2col), (.winograd4, .im2col), (.winograd4, .winograd2),
             (.winograd4Int8, .im2col), (.winograd4Int8, .winograd2), (.winograd2Int8, .im2col): return false
        default: return true
        }
    }

    /// The fixed table (`ModelOptions.Planning.table`: deterministic, measured once on a Zen 5
    /// core with AVX-512; the figures: docs/performance.md, "Figures from code comments"), among
    /// the algorithms that apply:
    /// - INT8 wherever it is a candidate (precision .int8 and a calibrated layer): with vpdpbusd
    ///   it beat every FP32 algorithm on every yolov3-tiny layer, F(4x4) Winograd and the direct
    ///   conv + pool included; never `.winograd4Int8`, whose int16 kernels take 4x the memory of
    ///   INT8 im2col's (on an AVX2 Zen 3 it is the faster INT8 form of the 3x3 layers of 32 or
    ///   more channels: `yolo tune`), and `.winograd2Int8` (1.8x) only where the calibration table
    ///   gives a layer 10-bit input (`a10`), which INT8 im2col cannot take;
    /// - direct+pool for 3x3 layers with at most 16 input channels before a 2x2/2 pool (faster
    ///   than im2col + pool, and it needs no full-size buffer);
    /// - Winograd for 3x3 layers with 32 or more input channels (with 16, im2col was faster):
    ///   F(4x4) on maps of 24x24 and more, F(2x2) on smaller ones (at 13x13 they tie, and F(4x4)
    ///   needs 2.25x the memory);
    /// - a plain GEMM for 1x1 layers; im2col + GEMM for the rest;
    /// - with BF16 candidates (precision .bf16), the BF16 form of that choice where it has one, and
    ///   F(2x2) in BF16 for F(4x4) (the direct conv + pool stays FP32), though F(4x4) FP32 was
    ///   faster on some layers: measuring (`yolo tune --precision bf16`) keeps it where it is; the
    ///   same with FP16 candidates (precision .fp16) and their FP16 forms, F(4x4) in FP16 where it
    ///   is a candidate (FP16-stored weights, FP32 arithmetic), the direct conv + pool in FP16 where
    ///   the CPU computes in FP16 (also an INT8 model's uncalibrated first layer).
    static func table(for conv: ConvolutionalLayer, candidates: [ConvAlgorithm]) -> ConvAlgorithm {
        // (INT8 without INT8 im2col beside it: a 10-bit input, which only the direct conv + pool
        // and F(2x2) take; the direct one where it applies and its level is `preferred`: with
        // vpdpwssd it won, with vpmaddwd + vpaddd it lost, so those levels do not have it;
        // docs/performance.md, "Figures from code comments".)
        if !candidates.contains(.int8) {
            if candidates.contains(.directPoolInt8) { return .directPoolInt8 }
            if candidates.contains(.winograd2Int8) { return .winograd2Int8 }
        }
        if candidates.contains(.int8) { return .int8 }
        if let half = candidates.first(where: { $0.isHalfGemm })?.precision {
            let choice = table(for: conv, candidates: candidates.filter { $0.precision == .fp32 })
            let form = [choice, choice == .winograd4 ? .winograd2 : choice].compactMap { $0.form(in: half) }
            return form.first { candidates.contains($0) } ?? choice
        }
        if candidates.contains(.directPool) { return .directPool }
        if candidates.contains(.gemm1x1) { return .gemm1x1 }
        if conv.is3x3Same && conv.inputShape.c >= 32 {
            let large = min(conv.outputShape.h, conv.outputShape.w) >= 24
            if large && candidates.contains(.winograd4) { return .winograd4 }
            if candidates.contains(.winograd2) { return .winograd2 }
        }
        return .im2col
    }

    /// This algorithm prepared for `conv` from its folded weights (filters x channels x k x k),
    /// with `kernelSet`'s kernels and GEMMs by `gemm` (nil: OpenBLAS); `pool` runs load-time
    /// transforms. The one place that maps algorithms to their implementations.
    /// `input` is the quantization of the layer's input (INT8 only), `half` the BF16 or FP16 GEMM
    /// of the model's precision (BF16 and FP16 only).
    func prepare(_ conv: ConvolutionalLayer, weights: UnsafePointer<Float>, kernelSet: KernelSet, gemm: GemmFunctions?,
                 pool: WorkerPool, input: Int8Quantization?, half: HalfKernels?) -> any ConvKernel {
        var gemm = gemm
        if isHalfGemm {
            guard let half else { fatalError("\(self) for layer \(conv.index) without the \(precision) kernels") }
            gemm = half.gemm
        }
        switch self {
        case .int8:
            guard let input, let kernels = kernelSet.int8 else { fatalError("int8 for layer \(conv.index) without its quantization or kernels") }
            return Int8Conv(conv, weights: weights, input: input, kernels: kernels)
        case .winograd4Int8, .winograd2Int8:
            guard let input else { fatalError("\(self) for layer \(conv.index) without its quantization") }
            return WinogradInt8Conv(conv, algorithm: self, weights: weights, input: input, kernelSet: kernelSet, pool: pool)
        case .directPoolInt8:
            guard let input, let pairs = kernelSet.int16Direct else { fatalError("\(self) for layer \(conv.index) without its quantization or kernels") }
            return DirectConvPool(conv, algorithm: self, weights: weights, pairs: pairs, input: input)
        case .im2col, .im2colBF16, .im2colFP16: return Im2colGemm(conv, weights: weights, gemm: gemm, algorithm: self)
        case .gemm1x1, .gemm1x1BF16, .gemm1x1FP16: return PointwiseGemm(conv, weights: weights, gemm: gemm, algorithm: self)
        case .winograd2, .winograd4, .winograd2BF16, .winograd2FP16, .winograd4FP16:
            return WinogradConv(conv, algorithm: self, weights: weights, kernelSet: kernelSet, gemm: gemm, pool: pool,
                                pairs: self == .winograd2BF16 ? half?.winogradPairs : nil)
        case .directPool: return DirectConvPool(conv, algorithm: self, weights: weights, direct: kernelSet.direct)
        case .directPoolFP16:
            guard let direct = half?.direct else { fatalError("\(self) for layer \(conv.index) without FP16 direct kernels") }
            return DirectConvPool(conv, algorithm: self, weights: weights, direct: direct)
        }
    }

    /// About the bytes `prepare` allocates for `conv` (its prepared weights, plus what it holds
    /// only while preparing), for the data-size check before it: Winograd keeps 16 (F(2x2)) or
    /// 36 (F(4x4)) transformed values per 9 weights and transforms them into a buffer first.
    func loadBytes(_ conv: ConvolutionalLayer) -> Int {
        let weights = conv.filters * conv.columns
        switch self {
        case .int8: return weights + 16 * conv.filters
        // int16 kernels (36 per 9 weights) and 4 filters' bytes per position.
        case .winograd4Int8: return 2 * 4 * weights + 4 * 36 * conv.filters + WinogradInt8Conv.bandBytes
        case .winograd2Int8: return 2 * weights / 9 * 16 + 4 * 16 * conv.filters + WinogradInt8Conv.bandBytes
        case .im2col, .gemm1x1, .directPool: return 4 * weights
        // s8 weights as floats while packing, then a word per pair of channels and tap.
        case .directPoolInt8: return 4 * weights + 2 * weights + 8 * conv.filters
        case .winograd2: return 2 * 4 * weights / 9 * 16
        case .winograd4: return 2 * 4 * weights / 9 * 36
        // Packed in 16 bits from the FP32 form's buffers: at most what that form needs.
        case .im2colBF16, .gemm1x1BF16, .winograd2BF16, .im2colFP16, .gemm1x1FP16, .winograd2FP16, .winograd4FP16,
             .directPoolFP16:
            return fp32Form.loadBytes(conv)
        }
    }

    /// Input channels up to which the direct kernel is a candidate: beyond, a 3x3 layer has
    /// enough depth for GEMM-based algorithms to win.
    static let directMaxChannels = 16
}

/// A convolution algorithm prepared for one layer: it owns its transformed, packed weights, and
/// computes the layer's output (or, for `.directPool`, the pooled output) for any session.
protocol ConvKernel: AnyObject, Sendable {
    var algorithm: ConvAlgorithm { get }
    /// Floats of per-thread scratch `run` needs.
    var workspaceFloats: Int { get }
    /// Bytes of prepared parameters it holds.
    var parameterBytes: Int { get }
    /// Computes the output from `src` into `dst`, then applies `epilogue` (nil: raw sums, whose
    /// bias + activation a later step applies). Returns GEMM nanoseconds when timed.
    func run(_ src: UnsafePointer<Float>, into dst: UnsafeMutablePointer<Float>, epilogue: Epilogue?,
             context: StepContext) -> UInt64
    /// Itself, where it can also compute the max pool after it (Winograd), else nil. (A
    /// requirement, not a dynamic cast: Embedded Swift has none.)
    var poolFusing: (any PoolFusingConvKernel)? { get }
}

extension ConvKernel {
    var poolFusing: (any PoolFusingConvKernel)? { nil }
}

/// Bias + activation over output rows `rows` of every channel of a `shape` output, spread over
/// `pool`'s threads (nil: on the calling thread).
func applyEpilogue(_ epilogue: Epilogue?, _ output: UnsafeMutablePointer<Float>, shape: Shape, rows: Range<Int>,
                   pool: WorkerPool?) {
    guard let epilogue else { return }
    let plane = shape.h * shape.w
    let (out, count) = (output + rows.lowerBound * shape.w, rows.count * shape.w)
    let (bias, act) = (epilogue.bias, epilogue.activation)
    if let pool {
        pool.parallelFor(shape.c) { f in
            applyBiasActivation(out, bias: bias, channels: f, spatial: count, channelStride: plane, activation: act)
        }
    } else {
        applyBiasActivation(out, bias: bias, channels: 0..<shape.c, spatial: count, channelStride: plane, activation: act)
    }
}

/// Where one block of a blocked algorithm runs: its scratch, and the pool to spread it over
/// (nil: the calling thread alone, with that thread's GEMM scratch).
struct BlockPlace {
    let workspace: UnsafeMutablePointer<Float>
    let pool: WorkerPool?
    let scratch: GemmScratch
    let timed: Bool
}

/// Runs `block(range, place)` over 0..<total (output rows, tile rows) in `count` blocks of at
/// most `size`, evened out (`count` is total / size rounded up). With several threads and at
/// least as many blocks, the threads claim whole blocks as they are free, each on its own
/// scratch; otherwise one block at a time, each spread over all threads. The blocks are the
/// same at every thread count (a block's GEMM sums its last columns in another order than the
/// rest: other blocks, other bits). Returns thread 0's summed result (GEMM time).
func runInBlocks(total: Int, size: Int, count: Int, context: StepContext,
                 _ block: (Range<Int>, BlockPlace) -> UInt64) -> UInt64 {
    precondition(count >= (total + size - 1) / max(1, size), "runInBlocks: \(count) blocks cannot hold \(total) in \(size)s")
    let pool = context.pool
    guard pool.threadCount > 1 && count >= pool.threadCount else {
        var sum: UInt64 = 0
        let place = BlockPlace(workspace: context.workspace, pool: pool, scratch: context.gemmScratch, timed: context.timesGemm)
        for b in 0..<count { sum &+= block(total * b / count ..< total * (b + 1) / count, place) }
        return sum
    }
    let ctx = context
    return withUnsafeTemporaryAllocation(of: UInt64.self, capacity: pool.threadCount) { times in
        times.initialize(repeating: 0)
        pool.forEachChunk(count) { b, thread in
            let place = BlockPlace(workspace: ctx.workspace(part: thread), pool: nil, scratch: ctx.gemmScratch.only(thread),
                                   timed: ctx.timesGemm)
            times[thread] &+= block(total * b / count ..< total * (b + 1) / count, place)
        }
        return times[0]
    }
}

/// Elapsed nanoseconds of `body` when `timed`, else 0.
@inline(__always) func timed(_ timed: Bool, _ body: () -> Void) -> UInt64 {
    guard timed else { body(); return 0 }
    let start = monotonicNanoseconds()
    body()
    return monotonicNanoseconds() - start
}
