// How a model is prepared at load: ModelOptions.
import YOLOCore

/// How a model is prepared at load. Everything here is decided once: a model never changes
/// after it is built, so any number of sessions and threads can share it.
public struct ModelOptions: Sendable, Equatable {
    /// Which algorithms 3x3 stride-1 convolutions may use (`ConvAlgorithm`), and the fixed
    /// table's choice among them.
    public enum Convolution: String, Sendable, CaseIterable {
        /// Any: with the table, F(4x4, 3x3) Winograd (4x fewer multiplications; its kernels take
        /// 4x those layers' weights) on maps of 24x24 and more with 32 or more input channels,
        /// F(2x2, 3x3) (2.25x fewer; 16/9 the weights) on the others (`ChoicePolicy.table`).
        case winograd
        /// Winograd F(2x2, 3x3) but not F(4x4).
        case winograd2
        /// No Winograd: im2col + GEMM (the least memory), and the direct kernel + pool.
        case im2col
    }
    /// Which convolution forms the plan may use (default: Winograd where it pays).
    public var convolution: Convolution
    /// Whether the inference plan fuses layers (the planner's rewrites: a convolution's bias +
    /// activation applied by the max pool after it, on its 4x smaller output, bit-identical; the
    /// direct conv + pool in one pass). Sessions that keep every output never fuse.
    public var fusesLayers: Bool
    /// How each convolution's algorithm is chosen: the fixed table (default, deterministic) or
    /// measured on this CPU at load, with a plan cache.
    public var planning: Planning
    /// The threads measurements run on: those of the sessions that will run the model (nil:
    /// every core this process may use).
    public var tuningThreads: Int?
    /// Per layer index, an algorithm to use instead of the plan's choice (it must apply to the
    /// layer: a load error otherwise). For tests and experiments.
    public var algorithms: [Int: ConvAlgorithm]
    /// The most activation memory (input, layer outputs, scratch for one thread) one session
    /// may need; a cfg that asks for more is refused before anything is allocated.
    public var maxActivationBytes: Int
    /// The network's input size, overriding the cfg's [net] width and height (nil: the cfg's).
    /// Both must be multiples of 32, as YOLO networks downsample by 32.
    public var inputSize: InputSize?

    /// Which GEMM kernels run the convolutions.
    public enum GemmBackend: String, Sendable, CaseIterable {
        /// Ours at the CPU's level (`KernelLevel.selected`: AVX-512, AVX2 + FMA or NEON),
        /// OpenBLAS where only the x86-64 baseline (SSE2) is available.
        case automatic
        /// Ours at `KernelLevel.selected`, whatever it is.
        case kernels
        /// OpenBLAS's `cblas_sgemm` (the reference path).
        case openBLAS = "openblas"
    }
    /// Whose GEMM runs the products (default: this package's kernels).
    public var gemm: GemmBackend
    /// The level of our kernels for this model (nil: `KernelLevel.selected`, the process's);
    /// for tests and benchmarks that compare levels. One the CPU cannot run is an error.
    public var kernelLevel: KernelLevel?

    /// The arithmetic of the convolutions: `.fp32` (the default and the reference); `.int8`,
    /// where each convolution whose input the calibration table covers may run in INT8; or
    /// `.bf16` (CPUs with AVX-512 BF16 only: a load error elsewhere), where each convolution whose
    /// algorithm has a BF16 form may run in BF16; or `.fp16`, the same with the FP16 forms (FP16
    /// arithmetic on 64-bit ARM CPUs that have it and x86 CPUs with AVX-512 FP16; elsewhere FP32
    /// arithmetic on FP16-stored weights). The planner picks per layer, as for algorithms:
    /// the table's choice, or the faster when measured; the others stay FP32, and `Model.plan`
    /// says which is which.
    public var precision: Precision
    /// The INT8 calibration table (`.int8`): per convolution, its input's range. nil: the table
    /// next to the weights file (`Int8Calibration.defaultPath(weights:)`) when loading from files.
    public var calibration: Int8Calibration?
    /// With `.int8`, the arithmetic of the layers not in INT8 (`Int8Fallback`): by default the
    /// 16-bit form this CPU runs fast, FP16 where it computes in FP16, else BF16 where it has
    /// AVX-512 BF16; the 16-bit forms are then candidates on every convolution but those the
    /// table gives 10-bit inputs (`a10`), so that the layers left out of INT8 (not calibrated,
    /// marked `fp32` by the table) take them where `.fp16` or `.bf16` would (the table's choice),
    /// and a measured plan takes whichever of FP32, 16 bits and INT8 (where calibrated) is fastest.
    /// No effect elsewhere.
    public var int8Fallback: Int8Fallback = .auto
    /// `int8Fallback` as it was first offered: true for `.auto`, false for `.fp32`.
    public var int8AllowsFP16: Bool {
        get { int8Fallback != .fp32 }
        set { int8Fallback = newValue ? .auto : .fp32 }
    }
    /// Tests only: the CPU counts as having FP16 arithmetic, so that on x86 `precision .fp16`
    /// plans and runs with the software model of the FP16 GEMM (the avx2 level's).
    var assumesFP16Arithmetic = false

    /// An input width and height in pixels.
    public struct InputSize: Sendable, Equatable, CustomStringConvertible {
        /// Pixels across.
        public var width: Int
        /// Pixels down.
        public var height: Int
        /// A size of `width` x `height` pixels.
        public init(width: Int, height: Int) { self.width = width; self.height = height }
        public var description: String { "\(width)x\(height)" }
    }

    /// Options, each defaulting to what the library does without them.
    public init(convolution: Convolution = .winograd, fusesLayers: Bool = true, maxActivationBytes: Int = 2 << 30,
                inputSize: InputSize? = nil, gemm: GemmBackend = .automatic, kernelLevel: KernelLevel? = nil,
                planning: Planning = .table, tuningThreads: Int? = nil, algorithms: [Int: ConvAlgorithm] = [:],
                precision: Precision = .fp32, calibration: Int8Calibration? = nil) {
        self.precision = precision
        self.calibration = calibration
        self.convolution = convolution
        self.fusesLayers = fusesLayers
        self.planning = planning
        self.tuningThreads = tuningThreads
        self.algorithms = algorithms
        self.maxActivationBytes = maxActivationBytes
        self.inputSize = inputSize
        self.gemm = gemm
        self.kernelLevel = kernelLevel
    }
}


/// The arithmetic of an INT8 model's layers that are not in INT8 (`ModelOptions.int8Fallback`).
public enum Int8Fallback: String, Sendable, CaseIterable, CustomStringConvertible {
    /// FP16 where the CPU computes in FP16 (AVX-512 FP16, 64-bit ARM with asimdhp), more exact than
    /// bfloat16 on the layers INT8 left out, with BF16 on AMX tiles for the 1x1 ones where the CPU
    /// has them; else BF16 where it has AVX-512 BF16 (Zen 4 and later, Cooper Lake), else FP32.
    case auto
    /// FP16 arithmetic; loading fails where the CPU has none.
    case fp16
    /// BF16 products (vdpbf16ps); loading fails where the CPU lacks AVX-512 BF16.
    case bf16
    /// FP32 always: the same bits on every CPU for those layers.
    case fp32
    public var description: String { rawValue }
}

/// The arithmetic of a model's convolutions (`ModelOptions.precision`).
public enum Precision: String, Sendable, CaseIterable, CustomStringConvertible {
    /// 32-bit floats everywhere (the reference).
    case fp32
    /// 8-bit integers where calibrated: u8 activations (per tensor) x s8 weights (per filter),
    /// int32 sums, float outputs; FP32 elsewhere (or 16 bits where the CPU computes them fast:
    /// `ModelOptions.int8Fallback`).
    case int8
    /// bfloat16 products (8-bit mantissas, FP32's range) with FP32 sums where the CPU has AVX-512
    /// BF16 (vdpbf16ps: twice FP32's multiply-adds per instruction): weights rounded at load, GEMM
    /// inputs as they are packed; FP32 elsewhere. No calibration.
    case bf16
    /// IEEE half-precision (FP16: 11-bit significands, at most 65504) weights, rounded at load, in
    /// the GEMMs of im2col, 1x1 and Winograd layers (half their memory). Where the CPU has FP16
    /// arithmetic (64-bit ARM with asimdhp: Cortex-A55, A76 / Raspberry Pi 5 and later; fmla .8h:
    /// twice FP32's multiply-adds per instruction) the GEMM inputs are rounded too, and products
    /// and sums are FP16 over blocks of at most 128 steps of each dot product, FP32 across blocks
    /// and outputs; elsewhere (every x86 CPU, a Pi 4's A72) the arithmetic stays FP32. FP32 in
    /// the other layers. No calibration.
    case fp16

    public var description: String { rawValue }
}
