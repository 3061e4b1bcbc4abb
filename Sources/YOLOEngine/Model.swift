import YOLOCore
import YOLOKernels

/// Memory a model owns: its parameters and what it computes from them at load. Freed with the
/// model; never written after load.
final class ModelStorage: @unchecked Sendable {
    private var blocks: [UnsafeMutablePointer<Float>] = []
    private(set) var floats = 0

    /// Only while the model loads (one thread).
    func allocate(_ count: Int) -> UnsafeMutablePointer<Float> {
        let p = UnsafeMutablePointer<Float>.allocate(capacity: max(count, 1))
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
    public let inputWidth: Int
    public let inputHeight: Int
    public let inputChannels: Int
    /// One entry per cfg section after [net], in order.
    public let layers: [LayerInfo]
    /// The detection heads ([yolo] or [region] layers), in cfg order.
    public let heads: [HeadInfo]
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

    public convenience init(config: DarknetConfig, weights: [UInt8], weightsName: String = "<weights>",
                            options: ModelOptions = ModelOptions()) throws(YOLOError) {
        try self.init(config: config, source: .bytes(weights), weightsName: weightsName, options: options)
    }

    init(config: DarknetConfig, source: WeightsReader.Origin, weightsName: String, options: ModelOptions) throws(YOLOError) {
        var net = config.sections[0]
        net.trackReads()
        let cfgWidth = try net.positive("width", net.int("width"))
        let cfgHeight = try net.positive("height", net.int("height"))
        inputChannels = try net.positive("channels", net.int("channels"))
        let letterBox = try net.has("letter_box") ? net.int("letter_box") : nil
        guard letterBox == nil || letterBox == 0 || letterBox == 1 else {
            throw net.error("letter_box=\(letterBox!) must be 0 (stretch) or 1 (letterbox)", line: net.option("letter_box")?.line)
        }
        self.letterBox = letterBox.map { $0 == 1 }
        try NoEffectKeys.check(net)
        if let size = options.inputSize {
            guard size.width > 0, size.height > 0, size.width % 32 == 0, size.height % 32 == 0 else {
                throw .invalidArgument("input size \(size): width and height must be positive multiples of 32 (YOLO networks downsample by 32), e.g. \(Model.multipleOf32(near: size.width))x\(Model.multipleOf32(near: size.height))")
            }
            (inputWidth, inputHeight) = (size.width, size.height)
        } else {
            (inputWidth, inputHeight) = (cfgWidth, cfgHeight)
        }
        guard config.sections.count > 1 else { throw net.error("the cfg has no layers after [net]") }
        if let t = options.tuningThreads, t < 1 { throw .invalidArgument("ModelOptions.tuningThreads must be at least 1") }
        self.options = options

        // 1. Layers and shapes, checked section by section; nothing is allocated yet. Every
        //    key of a section must be read by its layer or have no effect at inference.
        let inputShape = Shape(c: inputChannels, h: inputHeight, w: inputWidth)
        try Model.checkSize(inputShape, section: net, limit: options.maxActivationBytes, what: "the input")
        var layers: [any Layer] = []
        var shapes: [Shape] = []
        var totalFlops = 0
        for (i, cfgSection) in config.sections.dropFirst().enumerated() {
            var section = cfgSection
            section.trackReads()
            let layer: any Layer
            do {
                layer = try Model.makeLayer(section, index: i, input: i == 0 ? inputShape : shapes[i - 1], shapes: shapes,
                                            previousKind: layers.last?.kind)
            } catch {
                // A cfg size that is not a multiple of 32 shows up as a shape mismatch deep
                // in the network: say what is wrong.
                guard inputWidth % 32 != 0 || inputHeight % 32 != 0, case let .cfg(file, line, message) = error else { throw error }
                throw .cfg(file: file, line: line, message: "\(message) (the input size \(inputWidth)x\(inputHeight) is not a multiple of 32: YOLO networks downsample by 32, so use multiples of 32 such as \(Model.multipleOf32(near: inputWidth))x\(Model.multipleOf32(near: inputHeight)))")
            }
            try NoEffectKeys.check(section)
            try Model.checkSize(layer.outputShape, section: section, limit: options.maxActivationBytes)
            let (sum, overflow) = totalFlops.addingReportingOverflow(layer.flops)
            guard !overflow else { throw section.error("the network up to this layer needs more multiply-adds than can be counted") }
            totalFlops = sum
            layers.append(layer)
            shapes.append(layer.outputShape)
        }

        // 2. The plan's nodes, and the activations' memory limit before the weights are even
        //    looked at (every layer its own buffer where it is live: a bound of any plan's).
        var warnings: [String] = []
        let context = try PlanContext(options: options, layers: layers, fingerprint: config.fingerprint, cfg: config.file,
                                      weights: source, weightsName: weightsName, warnings: &warnings)
        let (kernelSet, openBLAS, half) = (context.kernelSet, context.usesOpenBLAS, context.kernels.half)
        self.kernelSet = kernelSet
        usesOpenBLAS = openBLAS
        cfgFingerprint = config.fingerprint
        gemmScratchPerThread = context.gemmScratchPerThread
        let planner = Planner(layers: layers, options: options, context: context)
        let order = layers.filter { $0.head == nil } + layers.filter { $0.head != nil }
        let bound = ActivationPlan(writes: order.map { ($0.index, $0.sources) }, deferred: Model.heads(layers).count,
                                   layers: layers, input: inputShape, keepingAll: false)
        guard 4 * (bound.floats + gemmScratchPerThread) <= options.maxActivationBytes else {
            throw .invalidArgument("\(config.file): a forward pass at \(inputWidth)x\(inputHeight) needs \(4 * bound.floats >> 20) MiB of activations, over the limit of \(options.maxActivationBytes >> 20) MiB (ModelOptions.maxActivationBytes)")
        }

        // 3. How choices are made: measured now, read from the plan cache, or by the table.
        let tuningThreads = options.tuningThreads ?? availableCores()
        var cached: [CachedChoice] = []
        var measuring = false, reads = true
        switch options.planning {
        case .measure: measuring = true
        case .remeasure: (measuring, reads) = (true, false)
        case .table, .cached: break
        }
        var cacheFile: String? = nil, cacheKey = ""
        if let directory = options.planning.cacheDirectory {
            cacheKey = PlanCache.key(config: config, input: inputShape, kernelSet: kernelSet.name, openBLAS: openBLAS, kernels: kernelSet.signature,
                                     threads: tuningThreads, options: options)
            cacheFile = PlanCache.path(directory: directory, key: cacheKey)
            switch reads ? PlanCache.read(directory: directory, key: cacheKey) : nil {
            case .success(let choices)?:
                if let problem = PlanBuilder.validate(choices, nodes: planner.inferenceNodes()) {
                    warnings.append("ignored the plan cache entry \(cacheFile!): \(problem)")
                } else {
                    cached = choices
                    measuring = false
                }
            case .failure(let problem)?:
                warnings.append("ignored the plan cache entry: \(problem.message)")
            case nil:
                if case .cached = options.planning { cacheFile = nil }
            }
        }
        let loadPool = WorkerPool(threads: availableCores())
        let tuner = measuring ? Tuner(pool: tuningThreads == loadPool.threadCount ? loadPool : WorkerPool(threads: tuningThreads),
                                      rounds: 5, gemmScratchPerThread: gemmScratchPerThread) : nil
        var builder = try PlanBuilder(planner: planner, loadPool: loadPool, tuner: tuner, cached: cached)
        if case .cached = options.planning, cached.isEmpty, let half, !half.weightsOnly, let gemm = context.gemm {
            let t = HalfProbe.measure(half: half.gemm, fp32: gemm)
            if !HalfProbe.pays(half: t.half, fp32: t.fp32) {
                builder.tableKeepsFP32 = true
                warnings.append(HalfProbe.note(options.precision, half: context.kernels.halfPrecision ?? options.precision,
                                               dot: half.dot, half: t.half, fp32: t.fp32))
            }
        }

        // 4. Parameters: the weights file after its header, checked against the cfg, then handed
        //    to the layers in order: each convolution folds batch norm and the planner prepares
        //    its kernels. One layer's floats at a time: the file is never held whole.
        let counts = layers.map { $0.parameterCount }
        let floats = counts.reduce(0, +)
        let largest = max(1, counts.max() ?? 0)
        if let refusal = checkDataSizeLimit(4 * (floats + largest), for: "\(config.file): loading the parameters") {
            throw .invalidArgument(refusal)
        }
        storage = ModelStorage()
        var reader = try WeightsReader(source, name: weightsName, cfg: config.file, floats: floats)
        // Each layer's own buffer, unmapped after it: the largest layer's (yolov3-tiny's layer
        // 12, 18 MiB) is not held while the rest are prepared (peak RSS with INT8 weights).
        for i in layers.indices where counts[i] > 0 {
            guard let buffer = mapPages(floats: counts[i]) else {
                throw .invalidArgument("\(config.file): no memory for layer \(i)'s \(4 * counts[i] >> 20) MiB of parameters")
            }
            defer { unmapPages(buffer, floats: counts[i]) }
            try reader.next(counts[i], into: buffer)
            guard let conv = layers[i].convolution else { continue }
            let (bias, weights) = try conv.fold(buffer, weightsName: weightsName, storage: storage)
            try builder.load(conv, bias: bias, weights: weights)
        }

        // 5. The plans, what they chose, and the measurements stored for the next load.
        let built = builder.build(input: inputShape)
        inference = built.inference
        inspection = built.inspection
        if tuner != nil, let directory = options.planning.cacheDirectory,
           let problem = PlanCache.write(directory: directory, key: cacheKey, choices: built.choices) {
            warnings.append("could not store the measured plan: \(problem)")
        }
        plan = PlanReport(entries: built.entries, kernels: kernelSet.name + (openBLAS ? " + OpenBLAS" : ""),
                          halfGemm: half.map { "\($0.gemm.level): \($0.dot)" },
                          measuredThreads: tuner != nil || !cached.isEmpty ? tuningThreads : nil, cacheFile: cacheFile,
                          tuningSeconds: Double(builder.tuningNanoseconds) / 1e9, warnings: warnings)
        let needed = 4 * (inference.activations.floats + inference.workspacePerThread + gemmScratchPerThread)
        guard needed <= options.maxActivationBytes else {
            throw .invalidArgument("\(config.file): a forward pass at \(inputWidth)x\(inputHeight) needs \(needed >> 20) MiB of activations and scratch, over the limit of \(options.maxActivationBytes >> 20) MiB (ModelOptions.maxActivationBytes)")
        }

        impl = layers
        parameterCount = floats
        heads = Model.heads(layers)
        flops = totalFlops
        self.layers = layers.map { l in
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

    // MARK: - Building

    /// Darknet's cfg-to-layer switch: builds layer `index` from its section. `input` is the
    /// previous layer's output shape (or the network's); `shapes` are the earlier layers'.
    static func makeLayer(_ section: DarknetConfig.Section, index i: Int, input: Shape, shapes: [Shape],
                          previousKind: LayerKind?) throws(YOLOError) -> any Layer {
        switch section.name {
        case "convolutional", "conv":
            return try ConvolutionalLayer(section: section, index: i, inputShape: input)
        case "maxpool", "max":
            return try MaxPoolLayer(section: section, index: i, inputShape: input)
        case "upsample":
            return try UpsampleLayer(section: section, index: i, inputShape: input)
        case "route":
            return try RouteLayer(section: section, index: i, shapes: shapes)
        case "shortcut":
            return try ShortcutLayer(section: section, index: i, shapes: shapes, inputShape: input)
        case "yolo":
            return try YOLOLayer(section: section, index: i, inputShape: input, previousKind: previousKind)
        case "region":
            return try RegionLayer(section: section, index: i, inputShape: input, previousKind: previousKind)
        case "reorg":
            return try ReorgLayer(section: section, index: i, inputShape: input)
        default:
            throw .cfg(file: section.file, line: section.line,
                       message: "unknown section [\(section.name)] (supported: convolutional, maxpool, upsample, route, shortcut, reorg, yolo, region)")
        }
    }

    /// The multiple of 32 nearest `v` (at least 32), for error messages: no overflow near Int.max.
    static func multipleOf32(near v: Int) -> Int { max(32, v / 32 * 32 + (v % 32 >= 16 && v <= Int.max - 32 ? 32 : 0)) }

    /// Refuses an output shape whose size overflows or exceeds the activation limit on its own.
    static func checkSize(_ s: Shape, section: DarknetConfig.Section, limit: Int, what: String = "output") throws(YOLOError) {
        let bytes = checkedProduct([s.c, s.h, s.w, 4])
        guard let bytes, bytes <= limit else {
            throw section.error("\(what) \(s) is \(bytes.map { "\($0 >> 20) MiB" } ?? "too large to count"), over the activation limit of \(limit >> 20) MiB (ModelOptions.maxActivationBytes)")
        }
    }

    /// Checks a weights file's header (its first 20 bytes or fewer) and total size against the
    /// cfg; returns the header's size.
    static func checkWeightsHeader(_ bytes: [UInt8], size: Int, name: String, cfg: String,
                                   floats: Int) throws(YOLOError) -> Int {
        func int32(_ at: Int) -> Int32 {
            Int32(bitPattern: UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24)
        }
        guard bytes.count >= 12 else {
            throw .weights(file: name, message: "is \(size) bytes, too short for a Darknet weights header (12 to 20 bytes)")
        }
        let major = int32(0), minor = int32(4), revision = int32(8)
        guard (0..<1000).contains(major), (0..<1000).contains(minor), (0..<100_000).contains(revision) else {
            throw .weights(file: name, message: "not a Darknet weights file: header version \(major).\(minor).\(revision) is implausible")
        }
        let header = major * 10 + minor >= 2 ? 20 : 16
        let expected = header + 4 * floats
        guard size == expected else {
            let what = size < expected ? "too short" : "too long"
            throw .weights(file: name, message: "is \(size) bytes but \(cfg) needs \(expected) (a \(header)-byte header for version \(major).\(minor).\(revision) + \(floats) floats): \(what) by \(abs(expected - size)) bytes")
        }
        return header
    }
}
