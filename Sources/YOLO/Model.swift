#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How a model is prepared at load. Everything here is decided once: a model never changes
/// after it is built, so any number of sessions and threads can share it.
public struct ModelOptions: Sendable, Equatable {
    /// How 3x3 stride-1 convolutions with 32 or more input channels are computed.
    public enum Convolution: String, Sendable, CaseIterable {
        /// Winograd, the variant chosen per layer by a measured table: F(4x4, 3x3) (4x fewer
        /// multiplications; its kernels take 4x those layers' weights) on maps of 24x24 and more
        /// with 64 or more input channels, F(2x2, 3x3) (2.25x fewer; 16/9 the weights) on the
        /// others (see `ConvolutionalLayer.winogradTile(for:)`).
        case winograd
        /// Winograd F(2x2, 3x3) wherever Winograd applies.
        case winograd2
        /// im2col + GEMM, like every other convolution.
        case im2col
    }
    public var convolution: Convolution
    /// When true, a convolution whose only consumer is the max pool right after it leaves its
    /// bias and activation to that pool, which applies them to its 4x smaller output (the
    /// results are bit-identical). That convolution's kept output then holds pre-activation
    /// values; set this to false to inspect every layer's exact output.
    public var fusesLayers: Bool
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
    public var gemm: GemmBackend
    /// The level of our kernels for this model (nil: `KernelLevel.selected`, the process's);
    /// for tests and benchmarks that compare levels. One the CPU cannot run is an error.
    public var kernelLevel: KernelLevel?

    /// An input width and height in pixels.
    public struct InputSize: Sendable, Equatable, CustomStringConvertible {
        public var width: Int
        public var height: Int
        public init(width: Int, height: Int) { self.width = width; self.height = height }
        public var description: String { "\(width)x\(height)" }
    }

    public init(convolution: Convolution = .winograd, fusesLayers: Bool = true, maxActivationBytes: Int = 2 << 30,
                inputSize: InputSize? = nil, gemm: GemmBackend = .automatic, kernelLevel: KernelLevel? = nil) {
        self.convolution = convolution
        self.fusesLayers = fusesLayers
        self.maxActivationBytes = maxActivationBytes
        self.inputSize = inputSize
        self.gemm = gemm
        self.kernelLevel = kernelLevel
    }
}

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

    deinit { for b in blocks { b.deallocate() } }
}

/// A Darknet network loaded from a `.cfg` and `.weights`: its layers, folded parameters and
/// everything derived from them at load (Winograd kernels). Immutable once built and
/// `Sendable`: share one model between any number of `Session`s (or `Detector`s), one per
/// thread or task; each session holds only its activations and scratch.
public final class Model: Sendable {
    public let inputWidth: Int
    public let inputHeight: Int
    public let inputChannels: Int
    /// One entry per cfg section after [net], in order.
    public let layers: [LayerInfo]
    /// The detection heads ([yolo] layers), in cfg order.
    public let heads: [HeadInfo]
    public let options: ModelOptions
    /// Multiply-adds x 2 of one forward pass.
    public let flops: Int
    /// Floats read from the weights file.
    public let parameterCount: Int

    let impl: [any Layer]
    let storage: ModelStorage
    /// Floats of scratch one thread of a session needs (at least 1).
    let workspacePerThread: Int
    /// The GEMM kernels the layers were prepared for (nil: OpenBLAS).
    let kernels: GemmKernels?
    /// Floats of GEMM scratch one thread of a session needs.
    let gemmScratchPerThread: Int

    /// What runs the GEMMs: "OpenBLAS" or our kernels' level ("avx512", "avx2", "neon", "baseline").
    public var gemmKernels: String { kernels?.level.rawValue ?? "OpenBLAS" }

    /// Loads a model from files.
    public convenience init(cfgPath: String, weightsPath: String, options: ModelOptions = ModelOptions()) throws(YOLOError) {
        let cfg = try DarknetConfig(path: cfgPath)
        // The parameters are read from the file straight into the model's storage: the file's
        // bytes are never held twice (for YOLOv3, 237 MiB less at the load's peak).
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
        Gemm.setUpProcess()
        var net = config.sections[0]
        net.trackReads()
        let cfgWidth = try net.positive("width", net.int("width"))
        let cfgHeight = try net.positive("height", net.int("height"))
        inputChannels = try net.positive("channels", net.int("channels"))
        try NoEffectKeys.check(net)
        if let size = options.inputSize {
            guard size.width > 0, size.height > 0, size.width % 32 == 0, size.height % 32 == 0 else {
                throw .invalidArgument("input size \(size): width and height must be positive multiples of 32 (YOLO networks downsample by 32), e.g. \(max(32, (size.width + 16) / 32 * 32))x\(max(32, (size.height + 16) / 32 * 32))")
            }
            (inputWidth, inputHeight) = (size.width, size.height)
        } else {
            (inputWidth, inputHeight) = (cfgWidth, cfgHeight)
        }
        guard config.sections.count > 1 else { throw net.error("the cfg has no layers after [net]") }
        self.options = options

        // 1. Layers and shapes, checked section by section; nothing is allocated yet. Every
        //    key of a section must be read by its layer or have no effect at inference.
        let inputShape = Shape(c: inputChannels, h: inputHeight, w: inputWidth)
        let kernels = try Gemm.kernels(for: options)
        var layers: [any Layer] = []
        var shapes: [Shape] = []
        for (i, cfgSection) in config.sections.dropFirst().enumerated() {
            var section = cfgSection
            section.trackReads()
            let layer: any Layer
            do {
                layer = try Model.makeLayer(section, index: i, input: i == 0 ? inputShape : shapes[i - 1], shapes: shapes,
                                            previousKind: layers.last?.kind, options: options, kernels: kernels)
            } catch {
                // A cfg size that is not a multiple of 32 shows up as a shape mismatch deep
                // in the network: say what is wrong.
                guard inputWidth % 32 != 0 || inputHeight % 32 != 0, case let .cfg(file, line, message) = error else { throw error }
                throw .cfg(file: file, line: line, message: "\(message) (the input size \(inputWidth)x\(inputHeight) is not a multiple of 32: YOLO networks downsample by 32, so use multiples of 32 such as \(max(32, (inputWidth + 16) / 32 * 32))x\(max(32, (inputHeight + 16) / 32 * 32)))")
            }
            try NoEffectKeys.check(section)
            try Model.checkSize(layer.outputShape, section: section, limit: options.maxActivationBytes)
            layers.append(layer)
            shapes.append(layer.outputShape)
        }

        // 2. Memory limits, before the weights are even looked at.
        workspacePerThread = max(layers.map { $0.workspaceCount }.max() ?? 0, 1)
        self.kernels = kernels
        gemmScratchPerThread = Gemm.scratchPerThread(kernels)
        let plan = ActivationPlan(layers: layers, input: inputShape, keepingAll: false)
        let needed = 4 * (plan.floats + workspacePerThread + gemmScratchPerThread)
        guard needed <= options.maxActivationBytes else {
            throw .invalidArgument("\(config.file): a forward pass at \(inputWidth)x\(inputHeight) needs \(needed >> 20) MiB of activations, over the limit of \(options.maxActivationBytes >> 20) MiB (ModelOptions.maxActivationBytes)")
        }

        // 3. Parameters: the weights file after its header, checked against the cfg, then
        //    handed to the layers in order, which fold and transform them.
        let counts = layers.map { $0.parameterCount }
        let floats = counts.reduce(0, +)
        storage = ModelStorage()
        var reader = try WeightsReader(source, name: weightsName, cfg: config.file, floats: floats)
        let loading = LoadContext(options: options, weightsName: weightsName, pool: WorkerPool(threads: availableCores()),
                                  storage: storage, kernels: kernels)
        // One layer's floats at a time: each layer keeps (folded, packed) copies of what it
        // needs, so the file is never held whole next to them.
        let largest = max(1, counts.max() ?? 0)
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: largest)
        defer { buffer.deallocate() }
        for i in layers.indices where counts[i] > 0 {
            try reader.next(counts[i], into: buffer)
            try layers[i].load(parameters: buffer, context: loading)
        }
        if options.fusesLayers { Model.fuse(layers) }

        impl = layers
        parameterCount = floats
        heads = layers.compactMap { $0.head }
        flops = layers.reduce(0) { $0 + $1.flops }
        self.layers = layers.map { l in
            LayerInfo(index: l.index, kind: l.kind, input: l.inputShape, output: l.outputShape,
                      size: l.geometry.size, stride: l.geometry.stride, flops: l.flops, sources: l.sources)
        }
    }

    /// Bytes of the parameters and what was derived from them at load (shared by all sessions).
    public var parameterBytes: Int { 4 * storage.floats }

    /// Bytes one session with `threads` threads allocates: activations and scratch.
    public func sessionBytes(threads: Int, keepingAllOutputs: Bool = false) -> Int {
        let plan = ActivationPlan(layers: impl, input: Shape(c: inputChannels, h: inputHeight, w: inputWidth),
                                  keepingAll: keepingAllOutputs)
        return 4 * (plan.floats + (workspacePerThread + gemmScratchPerThread) * max(1, threads))
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
                          previousKind: LayerKind?, options: ModelOptions, kernels: GemmKernels?) throws(YOLOError) -> any Layer {
        switch section.name {
        case "convolutional", "conv":
            return try ConvolutionalLayer(section: section, index: i, inputShape: input, convolution: options.convolution,
                                          kernels: kernels)
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
        default:
            throw .cfg(file: section.file, line: section.line,
                       message: "unknown section [\(section.name)] (supported: convolutional, maxpool, upsample, route, shortcut, yolo)")
        }
    }

    /// Refuses an output shape whose size overflows or exceeds the activation limit on its own.
    static func checkSize(_ s: Shape, section: DarknetConfig.Section, limit: Int) throws(YOLOError) {
        let (hw, o1) = s.h.multipliedReportingOverflow(by: s.w)
        let (chw, o2) = hw.multipliedReportingOverflow(by: s.c)
        let (bytes, o3) = chw.multipliedReportingOverflow(by: 4)
        guard !o1, !o2, !o3, bytes <= limit else {
            throw section.error("output \(s) is \(o1 || o2 || o3 ? "too large to count" : "\(bytes >> 20) MiB"), over the activation limit of \(limit >> 20) MiB (ModelOptions.maxActivationBytes)")
        }
    }

    /// Lets each layer whose only consumer is the next layer hand its bias + activation to it,
    /// when the next layer takes them.
    static func fuse(_ layers: [any Layer]) {
        var readers = [Int](repeating: 0, count: layers.count)
        for l in layers { for s in l.sources where s >= 0 { readers[s] += 1 } }
        for l in layers { if let h = l.head, h.inputLayer >= 0 { readers[h.inputLayer] += 1 } }  // the decoder reads it
        for i in 0..<layers.count - 1 {
            guard let e = layers[i].deferrableEpilogue, readers[i] == 1, layers[i + 1].sources == [i] else { continue }
            if layers[i + 1].takeEpilogue(e) {
                layers[i].deferEpilogue()
                // Sessions that do not keep every output may let the layer compute the next one's
                // output directly (a convolution its 2x2 max pool), skipping its own.
                if layers[i].absorb(layers[i + 1]) { layers[i + 1].absorbedByPrevious() }
            }
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

/// Where each layer's output lives in a session's arena. The network input comes first and
/// is kept; with `keepingAll` every layer has its own buffer (for inspecting any layer after a
/// forward); otherwise a buffer is reused once no later layer reads it, except the heads'
/// inputs, which the decoder reads after the forward, and the last layer's output.
struct ActivationPlan {
    /// Per layer, the float offset of its output.
    var offsets: [Int] = []
    /// Whether layer i's output is still intact after a forward.
    var kept: [Bool] = []
    /// Total floats.
    var floats = 0

    init(layers: [any Layer], input: Shape, keepingAll: Bool) {
        @inline(__always) func aligned(_ n: Int) -> Int { (n + 15) & ~15 }
        let inputFloats = aligned(input.count)
        var lastUse = [Int](repeating: -1, count: layers.count)
        for l in layers { for s in l.sources where s >= 0 { lastUse[s] = max(lastUse[s], l.index) } }
        for (i, l) in layers.enumerated() {
            if keepingAll || !l.runsInForward { lastUse[i] = Int.max }  // inspection-only layers: kept
            if let h = l.head, h.inputLayer >= 0 { lastUse[h.inputLayer] = Int.max }
        }
        if let last = layers.indices.last { lastUse[last] = Int.max }  // the network's output
        kept = lastUse.map { $0 == Int.max }
        // Greedy first fit over live intervals: (offset, size, last use).
        var live: [(offset: Int, size: Int, until: Int)] = []
        var top = inputFloats
        for (i, l) in layers.enumerated() {
            // A layer that computes the next layer's output in its place writes no output of its
            // own, and writes that one while it still reads its inputs: the buffer of layer i must
            // not reuse one that layer i - 1 reads.
            let absorbed = !keepingAll && i > 0 && layers[i - 1].writesNextOutput
            live.removeAll { $0.until < (absorbed ? i - 1 : i) }
            let size = !keepingAll && l.writesNextOutput ? 0 : aligned(l.outputShape.count)
            var offset = inputFloats
            for b in live.sorted(by: { $0.offset < $1.offset }) {
                if b.offset - offset >= size { break }
                offset = max(offset, b.offset + b.size)
            }
            live.append((offset, size, lastUse[i]))
            offsets.append(offset)
            top = max(top, offset + size)
        }
        floats = top
    }
}
