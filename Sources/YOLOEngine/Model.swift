// The loaded model: `Model` (its layers, plans and parameters, shared by sessions), the memory it
// owns, and its initializers; the steps of loading are ModelLoading.swift's and Plan/'s.
import YOLOCore
import YOLOKernels

/// Memory a model owns: its parameters and what it computes from them at load. Freed with the
/// model; never written after load.
final class ModelStorage: @unchecked Sendable {
    private var blocks: [UnsafeMutablePointer<Float>] = []
    private(set) var floats = 0

    /// Only while the model loads (one thread).
    /// 64-byte aligned: a tile or vector row of packed weights then spans one cache line, not two
    /// (docs/performance-amx.md, "Tap products").
    func allocate(_ count: Int) -> UnsafeMutablePointer<Float> {
        let p = UnsafeMutableRawPointer.allocate(byteCount: 4 * max(count, 1), alignment: 64).bindMemory(to: Float.self,
                                                                                                      capacity: max(count, 1))
        blocks.append(p)
        floats += count
        return p
    }

    /// `count` bytes (rounded up to whole floats), for parameters of other types.
    func allocateBytes(_ count: Int) -> UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(allocate((count + 3) / 4))
    }

    deinit { for b in blocks { b.deallocate() } }
}

/// A pointer into a model's parameters, safe to share between threads: nothing writes through
/// it once the model is loaded.
struct ParameterPointer: @unchecked Sendable {
    let base: UnsafePointer<Float>
}

/// A Darknet network loaded from a `.cfg` and `.weights`: its layers, and the plan that computes
/// them with the parameters prepared for it (folded batch norm, packed and transformed weights).
/// Immutable once built and `Sendable`: share one model between any number of `Session`s (or
/// `Detector`s), one per thread or task; each session holds only its activations and scratch.
public final class Model: Sendable {
    /// The network's input width in pixels (the cfg's, or `ModelOptions.inputSize`).
    public let inputWidth: Int
    /// The network's input height in pixels.
    public let inputHeight: Int
    /// The input's channels (3 for the cfgs of this family).
    public let inputChannels: Int
    /// One entry per cfg section after [net], in order.
    public let layers: [LayerInfo]
    /// The detection heads ([yolo] or [region] layers), in cfg order.
    public let heads: [HeadInfo]
    /// The options the model was loaded with.
    public let options: ModelOptions
    /// [net] letter_box: true (1) letterbox, false (0) stretch, as AlexeyAB's Darknet preprocesses
    /// for this model; nil when the cfg does not say (a `Detector` then letterboxes).
    public let letterBox: Bool?
    /// Multiply-adds x 2 of one forward pass.
    public let flops: Int
    /// Floats read from the weights file.
    public let parameterCount: Int
    /// How the inference plan computes each step, and why.
    public let plan: PlanReport

    let impl: [any Layer]
    /// The plan of forward passes, and the plan of sessions that keep every layer's output.
    let inference: Plan
    let inspection: Plan
    /// Biases (the kernels own the rest of the prepared parameters).
    let storage: ModelStorage
    /// The kernel set the plans run, and whether OpenBLAS computes their GEMMs.
    let kernelSet: KernelSet
    let usesOpenBLAS: Bool
    /// Floats of GEMM scratch one thread of a session needs.
    let gemmScratchPerThread: Int
    /// The cfg's fingerprint (what calibration tables are made for).
    let cfgFingerprint: String
    /// The cfg's file name and the weights file (nil when loaded from bytes), for reading the
    /// weights again (`foldedWeights`, calibration).
    let cfgFile: String, weightsFile: String?

    /// What runs the GEMMs: "OpenBLAS" or our kernels' level ("avx512", "avx2", "neon", "baseline").
    public var gemmKernels: String { usesOpenBLAS ? "OpenBLAS" : kernelSet.name }

    /// Loads a model from files.
    public convenience init(cfgPath: String, weightsPath: String, options: ModelOptions = ModelOptions()) throws(YOLOError) {
        let cfg = try DarknetConfig(path: cfgPath)
        var options = options
        if options.precision == .int8 && options.calibration == nil {
            let table = Int8Calibration.defaultPath(weights: weightsPath)
            do {
                options.calibration = try Int8Calibration(path: table)
            } catch {
                guard case .file(_, let reason) = error, reason == FileReadFailure.notFound.reason else { throw error }
                throw .invalidArgument("INT8 needs a calibration table: none was given and there is none next to the weights (\(table)); make one with 'yolo calibrate IMAGES... --out \(table)' or give one (--int8-table F, ModelOptions.calibration)")
            }
        }
        // The parameters are read from the file one layer at a time: the file's bytes are never
        // held whole (for YOLOv3, 237 MiB less at the load's peak).
        try self.init(config: cfg, source: .file(weightsPath), weightsName: weightsPath, options: options)
    }

    /// Loads a model from a cfg's text and a weights file's bytes.
    public convenience init(cfgText: String, weights: [UInt8], cfgName: String = "<cfg>", weightsName: String = "<weights>",
                            options: ModelOptions = ModelOptions()) throws(YOLOError) {
        try self.init(config: DarknetConfig(text: cfgText, file: cfgName), weights: weights, weightsName: weightsName,
                      options: options)
    }

    /// Loads a model from a parsed cfg and a weights file's bytes (`weightsName` names it in errors).
    public convenience init(config: DarknetConfig, weights: [UInt8], weightsName: String = "<weights>",
                            options: ModelOptions = ModelOptions()) throws(YOLOError) {
        try self.init(config: config, source: .bytes(weights), weightsName: weightsName, options: options)
    }

    /// Loads a model in steps: the cfg's layers, the planning context, how choices are made, the
    /// weights (each convolution's kernels chosen and prepared as its weights load), the plans.
    init(config: DarknetConfig, source: WeightsReader.Origin, weightsName: String, options: ModelOptions) throws(YOLOError) {
        // 1. Parse: the layers and shapes the cfg describes, checked; nothing allocated yet.
        let network = try ParsedNetwork(config: config, options: options)
        // 2. Plan context: the kernels, what they can compute, the INT8 inputs; the activations'
        //    bound before the weights are even looked at.
        var warnings: [String] = []
        let context = try PlanContext(options: options, layers: network.layers, fingerprint: config.fingerprint, cfg: config.file,
                                      weights: source, weightsName: weightsName, warnings: &warnings)
        let planner = Planner(layers: network.layers, options: options, context: context)
        try network.checkActivationBound(scratch: context.gemmScratchPerThread, file: config.file, options: options)
        // 3. How choices are made: measured now, read from the plan cache, or by the table.
        let loadPool = WorkerPool(threads: availableCores())
        let choice = PlanChoice(config: config, input: network.inputShape, planner: planner, loadPool: loadPool, warnings: &warnings)
        var builder = try choice.builder(planner, loadPool: loadPool, warnings: &warnings)
        // 4. Weights: each convolution's algorithm decided and its kernels prepared as its weights load.
        let storage = ModelStorage()
        parameterCount = try network.loadParameters(source, weightsName: weightsName, cfg: config.file, storage: storage,
                                                    into: &builder)
        // 5. Plan: both plans, their report (and the measured choices stored), the sessions' memory.
        let built = builder.build(input: network.inputShape)
        plan = choice.report(built, builder: builder, context: context, options: options, warnings: &warnings)
        try network.checkSessionBytes(built.inference, scratch: context.gemmScratchPerThread, file: config.file, options: options)

        (inputWidth, inputHeight, inputChannels, letterBox) = (network.width, network.height, network.channels, network.letterBox)
        (self.options, self.storage, inference, inspection) = (options, storage, built.inference, built.inspection)
        (kernelSet, usesOpenBLAS, gemmScratchPerThread) = (context.kernelSet, context.usesOpenBLAS, context.gemmScratchPerThread)
        (impl, cfgFingerprint, heads, flops) = (network.layers, config.fingerprint, Model.heads(network.layers), network.flops)
        cfgFile = config.file
        if case .file(let path) = source { weightsFile = path } else { weightsFile = nil }
        layers = network.layers.map { l in
            LayerInfo(index: l.index, kind: l.kind, input: l.inputShape, output: l.outputShape,
                      size: l.geometry.size, stride: l.geometry.stride, flops: l.flops, sources: l.sources)
        }
    }

    /// Bytes of the parameters and what was derived from them at load (shared by all sessions):
    /// the kernels of both plans, each counted once, and the biases.
    public var parameterBytes: Int {
        // Both plans share a kernel where they use the same algorithm for the same layer.
        var seen: Set<String> = []
        var bytes = 4 * storage.floats
        for step in inference.steps + inspection.steps {
            guard let kernel = step.convKernel, seen.insert("\(step.layers.lowerBound) \(kernel.algorithm)").inserted else { continue }
            bytes += kernel.parameterBytes
        }
        return bytes
    }

    static func heads(_ layers: [any Layer]) -> [HeadInfo] { layers.compactMap { $0.head } }

    /// The plan a session runs.
    func plan(keepingAll: Bool) -> Plan { keepingAll ? inspection : inference }

    /// Bytes one session with `threads` threads allocates: activations and scratch.
    public func sessionBytes(threads: Int, keepingAllOutputs: Bool = false) -> Int {
        let p = plan(keepingAll: keepingAllOutputs)
        return 4 * (p.activations.floats + (p.workspacePerThread + gemmScratchPerThread) * max(1, threads))
    }

    /// `count` sessions that will run at the same time, sharing this model and the cores:
    /// each gets `threads` threads (default: the cores divided among them, at least 1).
    public func makeSessions(_ count: Int, threads: Int? = nil) throws(YOLOError) -> [Session] {
        let each = threads ?? max(1, availableCores() / max(1, count))
        var sessions: [Session] = []
        for _ in 0..<count { sessions.append(try Session(model: self, threads: each)) }
        return sessions
    }
}
