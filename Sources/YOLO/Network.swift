import YOLOKernels
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import COpenBLAS

/// A Darknet network built from a `.cfg` and `.weights`, ready to run forward passes.
///
/// The network owns every buffer (input, each layer's output, scratch, parameters), allocated
/// once when it is built; `forward` allocates nothing. One network runs one forward at a time:
/// use one network per thread for concurrent inference.
public final class Network {
    public let inputWidth: Int
    public let inputHeight: Int
    public let inputChannels: Int
    /// One entry per cfg section after [net], in order.
    public let layers: [LayerInfo]

    /// The network's input buffer (CHW, `inputChannels * inputHeight * inputWidth` floats).
    /// Fill it and call `forward()`, or pass an input to `forward(_:)`.
    public let input: UnsafeMutableBufferPointer<Float>

    /// Threads for a forward pass: the network's own workers (im2col, epilogues, pooling, and
    /// the GEMMs with `.split`) or OpenBLAS's (the GEMMs with `.openBLAS`). OpenBLAS's thread
    /// count is process-wide: each forward sets it (to 1 with `.split`).
    public var threads: Int {
        didSet {
            threads = max(1, threads)
            if threads != pool.threadCount {
                pool = WorkerPool(threads: threads)
                workspace.deallocate()
                workspace = .allocate(capacity: workspacePerThread * threads)
            }
        }
    }

    /// When true (the default), a convolution whose only consumer is the max pool right after
    /// it leaves its bias and activation to that pool, which applies them to its 4x smaller
    /// output (the results are bit-identical). That convolution's `output(ofLayer:)` then holds
    /// pre-activation values; set this to false to inspect every layer's exact output.
    public var fusesLayers = true {
        didSet { configureFusion() }
    }

    /// How GEMMs use several threads: `.openBLAS` lets OpenBLAS thread each GEMM; `.split`
    /// splits each GEMM across the network's own threads, each calling OpenBLAS single-threaded.
    public enum GemmThreading: String, Sendable { case openBLAS = "openblas", split }
    public var gemmThreading: GemmThreading = .split

    /// 3x3 stride-1 convolutions with 32 or more input channels use `.winograd` (F(2x2, 3x3):
    /// 2.25x fewer multiplications; the transformed kernels take 16/9 of those layers' weights
    /// in extra memory, freed when switching to `.im2col`) or `.im2col` (im2col + sgemm, like
    /// every other convolution). Both agree with Darknet to float precision.
    public enum ConvolutionAlgorithm: String, Sendable { case winograd, im2col }
    public var convolution: ConvolutionAlgorithm = .winograd {
        didSet { configureConvolution() }
    }
    /// Winograd kernels per layer index, made when first needed and kept.
    private var winogradKernels: [Int: UnsafeMutablePointer<Float>] = [:]

    private func configureConvolution() {
        for (i, layer) in impl.enumerated() {
            guard let conv = layer as? ConvolutionalLayer, conv.supportsWinograd else { continue }
            if convolution == .winograd {
                if winogradKernels[i] == nil {
                    let u = UnsafeMutablePointer<Float>.allocate(capacity: 16 * conv.filters * conv.inputShape.c)
                    conv.makeWinogradKernels(into: u, pool: pool)
                    winogradKernels[i] = u
                }
                conv.winogradKernels = winogradKernels[i]
            } else {
                conv.winogradKernels = nil
                winogradKernels.removeValue(forKey: i)?.deallocate()
            }
        }
    }

    let impl: [any Layer]
    private var pool: WorkerPool
    private let parameters: UnsafeMutablePointer<Float>
    private let activations: UnsafeMutablePointer<Float>
    /// Per-thread column blocks: `threads` x `workspacePerThread` floats.
    private var workspace: UnsafeMutablePointer<Float>
    private let workspacePerThread: Int
    private let yoloLayers: [Int]

    /// Builds the network from files.
    public convenience init(cfgPath: String, weightsPath: String, threads: Int = 1) throws {
        let cfg = try DarknetConfig(path: cfgPath)
        let bytes = try readFileBytes(weightsPath)
        try self.init(config: cfg, weights: bytes, weightsName: weightsPath, threads: threads)
    }

    /// Builds the network from a cfg's text and a weights file's bytes.
    public convenience init(cfgText: String, weights: [UInt8], cfgName: String = "<cfg>",
                            weightsName: String = "<weights>", threads: Int = 1) throws {
        try self.init(config: DarknetConfig(text: cfgText, file: cfgName), weights: weights,
                      weightsName: weightsName, threads: threads)
    }

    public init(config: DarknetConfig, weights: [UInt8], weightsName: String = "<weights>", threads: Int = 1) throws {
        let net = config.sections[0]
        inputWidth = try net.positive("width", net.int("width"))
        inputHeight = try net.positive("height", net.int("height"))
        inputChannels = try net.positive("channels", net.int("channels"))
        guard config.sections.count > 1 else { throw net.error("the cfg has no layers after [net]") }

        // Two passes over the cfg with the same layer constructors: the first, with a dummy
        // address for every buffer, checks each section and yields the shapes, so one arena
        // can hold every output; the second builds the layers on the arena.
        let sections = Array(config.sections.dropFirst())
        let inputShape = Shape(c: inputChannels, h: inputHeight, w: inputWidth)
        var shapes: [Shape] = []
        var kinds: [LayerKind] = []
        let dummy = UnsafeMutablePointer<Float>(bitPattern: 16)!
        for (i, section) in sections.enumerated() {
            let layer = try Network.makeLayer(section, index: i, input: inputShape, shapes: shapes, kinds: kinds,
                                              buffer: { _ in dummy })
            shapes.append(layer.outputShape)
            kinds.append(layer.kind)
        }
        let inputCount = inputShape.count
        var offsets: [Int] = []
        var total = inputCount
        for s in shapes { offsets.append(total); total += (s.count + 15) & ~15 }
        let arena = UnsafeMutablePointer<Float>.allocate(capacity: total)
        arena.initialize(repeating: 0, count: total)
        // Layer i's output; -1 is the network input.
        let buffer = { (i: Int) in i < 0 ? arena : arena + offsets[i] }

        var layers: [any Layer] = []
        for (i, section) in sections.enumerated() {
            let layer = try! Network.makeLayer(section, index: i, input: inputShape, shapes: shapes, kinds: kinds,
                                               buffer: buffer)  // the first pass checked everything
            layer.output = buffer(i)
            layers.append(layer)
        }
        let infos = layers.enumerated().map { i, layer in
            let geometry = (layer as? ConvolutionalLayer).map { ($0.size, $0.stride) }
                ?? (layer as? MaxPoolLayer).map { ($0.size, $0.stride) } ?? (0, 0)
            return LayerInfo(index: i, kind: layer.kind, input: layer.inputShape, output: layer.outputShape,
                             size: geometry.0, stride: geometry.1, flops: layer.flops)
        }
        let yolo = layers.indices.filter { layers[$0] is YOLOLayer }

        // Parameters: the weights file after its header, folded in place and kept as one block.
        let params: UnsafeMutablePointer<Float>
        let convs = layers.compactMap { $0 as? ConvolutionalLayer }
        let floats = convs.reduce(0) { $0 + $1.parameterCount }
        do {
            params = try Network.readParameters(weights, name: weightsName, cfg: config.file, floats: floats)
        } catch {
            arena.deallocate()
            throw error
        }
        var p = params
        for conv in convs { conv.loadParameters(p); p += conv.parameterCount }

        workspacePerThread = max(layers.map(\.workspaceCount).max() ?? 0, 1)
        workspace = .allocate(capacity: workspacePerThread * max(1, threads))
        activations = arena
        parameters = params
        input = UnsafeMutableBufferPointer(start: arena, count: inputCount)
        impl = layers
        self.layers = infos
        yoloLayers = yolo
        self.threads = max(1, threads)
        pool = WorkerPool(threads: max(1, threads))
        configureFusion()
        configureConvolution()
    }

    private func configureFusion() {
        var referenced = Set<Int>()
        for layer in impl {
            if let r = layer as? RouteLayer { referenced.formUnion(r.sourceLayers) }
            if let s = layer as? ShortcutLayer { referenced.insert(s.fromIndex) }
        }
        for i in 0..<impl.count - 1 {
            guard let conv = impl[i] as? ConvolutionalLayer, let pool = impl[i + 1] as? MaxPoolLayer else { continue }
            let fuse = fusesLayers && !referenced.contains(i)
            conv.epilogueDeferred = fuse
            pool.epilogue = fuse ? (conv.biases, conv.activation) : nil
        }
    }

    deinit {
        activations.deallocate()
        parameters.deallocate()
        workspace.deallocate()
        for u in winogradKernels.values { u.deallocate() }
    }

    /// Runs the network on the contents of `input`.
    public func forward() {
        var context = makeContext()
        for layer in impl where !(layer is YOLOLayer) { layer.forward(&context) }
        headsActivated = false
    }

    /// [yolo] layers only apply the logistic for inspection: the decoder reads the raw heads
    /// and takes the logistic of the few entries it needs, so a forward pass skips them and
    /// `heads` / `output(ofLayer:)` compute them on first use.
    private var headsActivated = false

    private func activateHeads() {
        guard !headsActivated else { return }
        var context = makeContext()
        for i in yoloLayers { impl[i].forward(&context) }
        headsActivated = true
    }

    private func makeContext() -> ForwardContext {
        let split = gemmThreading == .split && threads > 1
        // Process-wide in OpenBLAS: see `threads`.
        openblas_set_num_threads(split ? 1 : Int32(threads))
        return ForwardContext(workspace: workspace, pool: pool, splitGemm: split)
    }

    /// Copies `data` (CHW floats) into the input buffer and runs the network.
    public func forward(_ data: UnsafeBufferPointer<Float>) throws {
        guard data.count == input.count else {
            throw YOLOError.invalidArgument("input has \(data.count) floats; the network takes \(inputChannels)x\(inputHeight)x\(inputWidth) = \(input.count)")
        }
        _ = input.update(fromContentsOf: data)
        forward()
    }

    public func forward(_ data: [Float]) throws {
        try data.withUnsafeBufferPointer { try forward($0) }
    }

    /// Per-layer wall time of one forward pass, with the part of each conv spent in sgemm.
    public struct Profile: Sendable {
        public var layerNanoseconds: [UInt64]
        public var gemmNanoseconds: [UInt64]
    }

    /// Runs a forward pass and times each layer.
    public func forwardProfiled() -> Profile {
        var context = makeContext()
        var profile = Profile(layerNanoseconds: [], gemmNanoseconds: [])
        headsActivated = false
        for layer in impl {
            context.gemmNanoseconds = 0
            if layer is YOLOLayer {  // skipped by forward(); see activateHeads()
                profile.layerNanoseconds.append(0)
                profile.gemmNanoseconds.append(0)
                continue
            }
            let start = monotonicNanoseconds()
            layer.forward(&context)
            profile.layerNanoseconds.append(monotonicNanoseconds() - start)
            profile.gemmNanoseconds.append(context.gemmNanoseconds ?? 0)
        }
        return profile
    }

    /// Runs only the sgemm calls of a forward pass, one full-size call per conv layer, threaded
    /// as `forward` would thread them, and returns each layer's nanoseconds (0 for layers
    /// without a GEMM). For benchmarks: the floor that im2col + sgemm cannot beat.
    public func gemmOnlyNanoseconds() -> [UInt64] {
        let context = makeContext()
        let convs = impl.compactMap { $0 as? ConvolutionalLayer }
        let size = convs.map(\.gemmAloneScratch).max() ?? 0
        let columns = UnsafeMutablePointer<Float>.allocate(capacity: max(size, 1))
        columns.initialize(repeating: 0.5, count: max(size, 1))
        defer { columns.deallocate() }
        return impl.map { layer in
            guard let conv = layer as? ConvolutionalLayer else { return 0 }
            let start = monotonicNanoseconds()
            conv.gemmAlone(columns: columns, pool: context.splitGemm ? pool : nil)
            return monotonicNanoseconds() - start
        }
    }

    /// The output of layer `index` after the last forward (CHW, `layers[index].output` shape).
    public func output(ofLayer index: Int) -> UnsafeBufferPointer<Float> {
        if impl[index] is YOLOLayer { activateHeads() }
        return UnsafeBufferPointer(start: impl[index].output, count: impl[index].outputShape.count)
    }

    /// The YOLO heads of the last forward, in cfg order (empty for a cfg without [yolo] layers).
    public var heads: [HeadView] {
        activateHeads()
        return rawHeads
    }

    /// The heads without computing their `activated` buffers (which may be stale): for the
    /// decoder, which reads `raw`.
    var rawHeads: [HeadView] {
        yoloLayers.map { i in
            let y = impl[i] as! YOLOLayer
            return HeadView(layerIndex: i, gridWidth: y.outputShape.w, gridHeight: y.outputShape.h,
                            classes: y.classes, anchors: y.anchors, mask: y.mask,
                            raw: UnsafeBufferPointer(start: y.input, count: y.inputShape.count),
                            activated: UnsafeBufferPointer(start: y.output, count: y.outputShape.count))
        }
    }

    /// Multiply-adds x 2 of one forward pass.
    public var flops: Int { layers.reduce(0) { $0 + $1.flops } }

    // MARK: - Building

    static func unknownSection(_ section: DarknetConfig.Section) -> YOLOError {
        .cfg(file: section.file, line: section.line,
             message: "unknown section [\(section.name)] (supported: convolutional, maxpool, upsample, route, shortcut, yolo)")
    }

    /// Resolves a layer reference (negative = relative to `index`) to an absolute earlier layer.
    static func resolve(_ section: DarknetConfig.Section, key: String, value: Int? = nil, index: Int) throws -> Int {
        let v = try value ?? section.int(key)
        let abs = v < 0 ? index + v : v
        guard abs >= 0 && abs < index else {
            throw section.error("\(key)=\(v) refers to layer \(abs), but only layers 0..<\(index) come before this one (layer \(index))",
                                line: section.options.last { $0.key == key }?.line)
        }
        return abs
    }

    static func routeSources(_ section: DarknetConfig.Section, index: Int) throws -> [Int] {
        guard let list = try section.intList("layers") else { throw section.error("missing required key 'layers'") }
        return try list.map { try resolve(section, key: "layers", value: $0, index: index) }
    }

    /// Darknet's cfg-to-layer switch: builds layer `index` from its section. `shapes` and
    /// `kinds` describe the layers before it; `buffer(i)` is layer i's output (-1: the input).
    static func makeLayer(_ section: DarknetConfig.Section, index i: Int, input: Shape, shapes: [Shape],
                          kinds: [LayerKind], buffer: (Int) -> UnsafeMutablePointer<Float>) throws -> any Layer {
        let prev = UnsafePointer(buffer(i - 1))
        let prevShape = i == 0 ? input : shapes[i - 1]
        switch section.name {
        case "convolutional", "conv":
            return try ConvolutionalLayer(section: section, input: prev, inputShape: prevShape)
        case "maxpool", "max":
            return try MaxPoolLayer(section: section, input: prev, inputShape: prevShape)
        case "upsample":
            return try UpsampleLayer(section: section, input: prev, inputShape: prevShape)
        case "route":
            let sources = try routeSources(section, index: i)
            return try RouteLayer(section: section, inputs: sources.map {
                (index: $0, pointer: UnsafePointer(buffer($0)), shape: shapes[$0])
            })
        case "shortcut":
            let from = try resolve(section, key: "from", index: i)
            return try ShortcutLayer(section: section, previous: prev, previousShape: prevShape,
                                     from: UnsafePointer(buffer(from)), fromIndex: from, fromShape: shapes[from])
        case "yolo":
            return try YOLOLayer(section: section, input: prev, inputShape: prevShape,
                                 previousIsConv: i > 0 && kinds[i - 1] == .convolutional, previousIndex: i - 1)
        default:
            throw unknownSection(section)
        }
    }

    /// Checks the weights header and size against the cfg and returns the parameter floats.
    static func readParameters(_ bytes: [UInt8], name: String, cfg: String, floats: Int) throws -> UnsafeMutablePointer<Float> {
        func int32(_ at: Int) -> Int32 {
            Int32(bitPattern: UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24)
        }
        guard bytes.count >= 12 else {
            throw YOLOError.weights(file: name, message: "is \(bytes.count) bytes, too short for a Darknet weights header (12 to 20 bytes)")
        }
        let major = int32(0), minor = int32(4), revision = int32(8)
        guard (0..<1000).contains(major), (0..<1000).contains(minor), (0..<100_000).contains(revision) else {
            throw YOLOError.weights(file: name, message: "not a Darknet weights file: header version \(major).\(minor).\(revision) is implausible")
        }
        let header = major * 10 + minor >= 2 ? 20 : 16
        let expected = header + 4 * floats
        guard bytes.count == expected else {
            let what = bytes.count < expected ? "too short" : "too long"
            throw YOLOError.weights(file: name, message: "is \(bytes.count) bytes but \(cfg) needs \(expected) (a \(header)-byte header for version \(major).\(minor).\(revision) + \(floats) floats): \(what) by \(abs(expected - bytes.count)) bytes")
        }
        let params = UnsafeMutablePointer<Float>.allocate(capacity: max(floats, 1))
        bytes.withUnsafeBytes { raw in
            UnsafeMutableRawPointer(params).copyMemory(from: raw.baseAddress! + header, byteCount: 4 * floats)
        }
        #if _endian(big)
        for i in 0..<floats { params[i] = Float(bitPattern: UInt32(littleEndian: params[i].bitPattern)) }
        #endif
        return params
    }
}
