// The ways this engine computes a convolution (a method in a precision), which methods fit a
// layer's geometry, and the interface each implements once prepared for a layer (`ConvKernel`).
// One file per method beside this one.
import YOLOCore
import YOLOKernels

/// How a convolution is computed: a method in a precision. Which forms exist and may run is
/// the capabilities' (`KernelCapabilities`) and the policy's (`ChoicePolicy`) to say.
public struct ConvAlgorithm: Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The computation, whatever the arithmetic.
    public enum Method: String, Sendable, CaseIterable {
        /// im2col + GEMM: any convolution (Im2colGemm.swift); in INT8 (Int8Conv.swift) 1x1 layers
        /// too, their input read as it is.
        case im2col
        /// A 1x1 stride-1 convolution as one GEMM on the input itself (PointwiseGemm.swift; INT8:
        /// PairPointwiseConv.swift, for inputs the table marks `a12`).
        case gemm1x1
        /// Winograd F(2x2, 3x3) (WinogradConv.swift; INT8: WinogradInt8Conv.swift).
        case winograd2
        /// Winograd F(4x4, 3x3): fewer multiplications than F(2x2), more weights (the same files).
        case winograd4
        /// The direct 3x3 convolution that computes the 2x2 stride-2 max pool after it in the same
        /// pass: the full-size output never exists (DirectConvPool.swift; INT8 at amx: Int8Conv's
        /// pooled tap products). Replaces two layers.
        case directPool = "direct+pool"
    }

    /// The computation (im2col, 1x1 GEMM, Winograd, direct conv + pool).
    public let method: Method
    /// The arithmetic it computes in: .fp32; .int8 (the input quantized with its calibrated
    /// range); .bf16 or .fp16 (the method's GEMM, or the direct kernel, in 16 bits: `HalfKernels`).
    public let precision: Precision

    /// `method` in `precision` (FP32 by default), e.g. `ConvAlgorithm(.winograd2, .int8)`.
    public init(_ method: Method, _ precision: Precision = .fp32) {
        (self.method, self.precision) = (method, precision)
    }

    /// im2col + GEMM in FP32.
    public static let im2col = ConvAlgorithm(.im2col)
    /// A 1x1 layer as one FP32 GEMM.
    public static let gemm1x1 = ConvAlgorithm(.gemm1x1)
    /// Winograd F(2x2, 3x3) in FP32.
    public static let winograd2 = ConvAlgorithm(.winograd2)
    /// Winograd F(4x4, 3x3) in FP32.
    public static let winograd4 = ConvAlgorithm(.winograd4)
    /// The direct 3x3 convolution + 2x2 max pool in FP32.
    public static let directPool = ConvAlgorithm(.directPool)

    /// Every algorithm that has an implementation, in the order nodes list their candidates (a
    /// measured tie and the messages follow it, so it is the order of the names' introduction).
    public static let allCases: [ConvAlgorithm] = [
        .im2col, .gemm1x1, .winograd2, .winograd4, .directPool,
        ConvAlgorithm(.im2col, .int8), ConvAlgorithm(.winograd4, .int8), ConvAlgorithm(.winograd2, .int8),
        ConvAlgorithm(.im2col, .bf16), ConvAlgorithm(.gemm1x1, .bf16), ConvAlgorithm(.winograd2, .bf16),
        ConvAlgorithm(.im2col, .fp16), ConvAlgorithm(.gemm1x1, .fp16), ConvAlgorithm(.winograd2, .fp16),
        ConvAlgorithm(.winograd4, .fp16), ConvAlgorithm(.directPool, .fp16),
        ConvAlgorithm(.directPool, .int8), ConvAlgorithm(.gemm1x1, .int8)]

    /// The name plans, caches and reports use: the method's, with "-" and the precision unless
    /// FP32; INT8 im2col is "int8" (the first INT8 form, named before the others existed).
    public var rawValue: String {
        if method == .im2col && precision == .int8 { return "int8" }
        return precision == .fp32 ? method.rawValue : method.rawValue + "-" + precision.rawValue
    }

    /// The algorithm named `rawValue`, if it is one of `allCases`.
    public init?(rawValue: String) {
        guard let a = ConvAlgorithm.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = a
    }

    public var description: String { rawValue }

    /// Whether it computes the max pool after the convolution in the same pass (a fused pair's
    /// step covers both layers).
    var fusesPool: Bool { method == .directPool }

    /// Whether it takes a layer's 10-bit quantized input where the calibration table marks one
    /// (`a10`): INT8 forms but F(4x4), whose integer transform needs 8-bit inputs.
    var readsTenBitInput: Bool { precision == .int8 && method != .winograd4 && method != .gemm1x1 }
    /// Whether it takes a layer's 12-bit quantized input (`a12`): the INT8 1x1 form on int16 pairs.
    var readsTwelveBitInput: Bool { precision == .int8 && method == .gemm1x1 }

    /// This algorithm prepared for `conv` from its folded weights (filters x channels x k x k),
    /// with `kernelSet`'s kernels and GEMMs by `gemm` (nil: OpenBLAS); `pool` runs load-time
    /// transforms. The one place that maps algorithms to their implementations.
    /// `input` is the quantization of the layer's input (INT8 only), `half` the BF16 or FP16 GEMM
    /// of the model's precision (BF16 and FP16 only).
    func prepare(_ conv: ConvolutionalLayer, weights: UnsafePointer<Float>, kernelSet: KernelSet, gemm: GemmFunctions?,
                 pool: WorkerPool, input: Int8Quantization?, half: HalfKernels?) -> any ConvKernel {
        var gemm = gemm
        if precision.isSixteenBit {
            guard let half else { fatalError("\(self) for layer \(conv.index) without the \(precision) kernels") }
            gemm = half.gemm
        }
        switch (precision, method) {
        case (.int8, .im2col):
            guard let input, let kernels = kernelSet.int8 else { fatalError("int8 for layer \(conv.index) without its quantization or kernels") }
            return Int8Conv(conv, weights: weights, input: input, kernels: kernels)
        case (.int8, .gemm1x1):
            guard let input, let pairs = kernelSet.int16Pairs else { fatalError("\(self) for layer \(conv.index) without its quantization or the pair GEMM") }
            return PairPointwiseConv(conv, weights: weights, input: input, pairs: pairs)
        case (.int8, .winograd4), (.int8, .winograd2):
            guard let input else { fatalError("\(self) for layer \(conv.index) without its quantization") }
            return WinogradInt8Conv(conv, algorithm: self, weights: weights, input: input, kernelSet: kernelSet, pool: pool)
        case (.int8, .directPool):
            // Tap products with the pool in their store where the level has them (amx), else int16 pairs.
            if let input, let kernels = kernelSet.int8, kernels.taps != nil {
                return Int8Conv(conv, weights: weights, input: input, kernels: kernels, pooled: true)
            }
            guard let input, let pairs = kernelSet.int16Direct else { fatalError("\(self) for layer \(conv.index) without its quantization or kernels") }
            return DirectConvPool(conv, algorithm: self, weights: weights, pairs: pairs, input: input)
        case (_, .im2col):
            // BF16 3x3 stride-1 layers as tap products where the level has them (amx).
            if precision == .bf16, conv.is3x3Same, let half, let taps = half.taps {
                return BF16TapConvolution(conv, weights: weights, gemm: half.gemm, taps: taps, algorithm: self)
            }
            return Im2colGemm(conv, weights: weights, gemm: gemm, algorithm: self)
        case (_, .gemm1x1): return PointwiseGemm(conv, weights: weights, gemm: gemm, algorithm: self)
        case (_, .winograd2), (_, .winograd4):
            return WinogradConv(conv, algorithm: self, weights: weights, kernelSet: kernelSet, gemm: gemm, pool: pool,
                                pairs: precision == .bf16 ? half?.winogradPairs : nil)
        case (.fp32, .directPool): return DirectConvPool(conv, algorithm: self, weights: weights, direct: kernelSet.direct)
        case (_, .directPool):
            guard let direct = half?.direct else { fatalError("\(self) for layer \(conv.index) without \(precision) direct kernels") }
            return DirectConvPool(conv, algorithm: self, weights: weights, direct: direct)
        }
    }

    /// About the bytes `prepare` allocates for `conv` (its prepared weights, plus what it holds
    /// only while preparing), for the data-size check before it: Winograd keeps 16 (F(2x2)) or
    /// 36 (F(4x4)) transformed values per 9 weights and transforms them into a buffer first.
    func loadBytes(_ conv: ConvolutionalLayer) -> Int {
        let weights = conv.filters * conv.columns
        switch (precision, method) {
        case (.int8, .im2col): return weights + 16 * conv.filters
        // int16 weights, then packed, and a scale and a zero a filter.
        case (.int8, .gemm1x1): return 4 * weights + 8 * conv.filters
        // int16 kernels (36 per 9 weights) and 4 filters' bytes per position.
        case (.int8, .winograd4): return 2 * 4 * weights + 4 * 36 * conv.filters + WinogradInt8Conv.bandBytes
        case (.int8, .winograd2): return 2 * weights / 9 * 16 + 4 * 16 * conv.filters + WinogradInt8Conv.bandBytes
        // s8 weights as floats while packing, then a word per pair of channels and tap.
        case (.int8, .directPool): return 4 * weights + 2 * weights + 8 * conv.filters
        // (16-bit forms are packed from the FP32 form's buffers: at most what that form needs.)
        case (_, .im2col), (_, .gemm1x1), (_, .directPool): return 4 * weights
        case (_, .winograd2): return 2 * 4 * weights / 9 * 16
        case (_, .winograd4): return 2 * 4 * weights / 9 * 36
        }
    }
}

extension ConvAlgorithm.Method {
    /// Whether this method can compute `conv` in `precision` by its geometry alone (for
    /// `.directPool`, `pooledBy` is the max pool after it, which must be a 2x2 stride-2 pool of
    /// its whole, even-sized output that reads only it).
    func fits(_ conv: ConvolutionalLayer, pooledBy next: MaxPoolLayer?, in precision: Precision) -> Bool {
        switch self {
        case .im2col: return !conv.isPointwise || precision == .int8   // (INT8 has no separate 1x1 form)
        case .gemm1x1: return conv.isPointwise
        case .winograd2, .winograd4: return conv.is3x3Same
        case .directPool:
            guard conv.is3x3Same, conv.inputShape.c <= ConvAlgorithm.directMaxChannels, let next,
                  next.geometry == (2, 2), next.sources == [conv.index], conv.activation.isMonotonic else { return false }
            let out = conv.outputShape
            return out.h % 2 == 0 && out.w % 2 == 0 && next.outputShape == Shape(c: out.c, h: out.h / 2, w: out.w / 2)
        }
    }
}

extension ConvAlgorithm {
    /// Input channels up to which the direct kernel is a candidate: beyond, a 3x3 layer has
    /// enough depth for GEMM-based algorithms to win.
    static let directMaxChannels = 16
}

extension Precision {
    /// BF16 or FP16: the precisions of the 16-bit GEMMs (`HalfKernels`).
    var isSixteenBit: Bool { self == .bf16 || self == .fp16 }
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
