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

    /// Worker threads for the non-GEMM work and OpenBLAS threads for the GEMMs.
    /// OpenBLAS's thread count is process-wide: the last network to run sets it.
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

        // Plan: build every layer against a temporary address for its input, then allocate one
        // arena for all outputs. Layers take raw pointers, so we lay the arena out first.
        var shapes: [Shape] = []
        var kinds: [String] = []
        let sections = Array(config.sections.dropFirst())
        for section in sections {
            shapes.append(try Network.outputShape(of: section, index: shapes.count, shapes: shapes, kinds: kinds,
                                                  input: Shape(c: inputChannels, h: inputHeight, w: inputWidth)))
            kinds.append(section.name)
        }
        let inputCount = inputChannels * inputHeight * inputWidth
        var offsets: [Int] = []
        var total = inputCount
        for s in shapes { offsets.append(total); total += (s.count + 15) & ~15 }
        let arena = UnsafeMutablePointer<Float>.allocate(capacity: total)
        arena.initialize(repeating: 0, count: total)

        var layers: [any Layer] = []
        var infos: [LayerInfo] = []
        var yolo: [Int] = []
        do {
            for (i, section) in sections.enumerated() {
                let prev = i == 0 ? UnsafePointer(arena) : UnsafePointer(arena + offsets[i - 1])
                let prevShape = i == 0 ? Shape(c: inputChannels, h: inputHeight, w: inputWidth) : shapes[i - 1]
                let layer: any Layer
                var size = 0, stride = 0
                switch section.name {
                case "convolutional", "conv":
                    let c = try ConvolutionalLayer(section: section, input: prev, inputShape: prevShape)
                    (size, stride) = (c.size, c.stride); layer = c
                case "maxpool", "max":
                    let m = try MaxPoolLayer(section: section, input: prev, inputShape: prevShape)
                    (size, stride) = (m.size, m.stride); layer = m
                case "upsample":
                    layer = try UpsampleLayer(section: section, input: prev, inputShape: prevShape)
                case "route":
                    let idx = try Network.routeSources(section, index: i)
                    layer = try RouteLayer(section: section, inputs: idx.map {
                        (index: $0, pointer: UnsafePointer(arena + offsets[$0]), shape: shapes[$0])
                    })
                case "shortcut":
                    let from = try Network.resolve(section, key: "from", index: i)
                    layer = try ShortcutLayer(section: section, previous: prev, previousShape: prevShape,
                                              from: UnsafePointer(arena + offsets[from]), fromIndex: from,
                                              fromShape: shapes[from])
                case "yolo":
                    layer = try YOLOLayer(section: section, input: prev, inputShape: prevShape,
                                          previousIsConv: i > 0 && layers[i - 1] is ConvolutionalLayer,
                                          previousIndex: i - 1)
                    yolo.append(i)
                default:
                    throw Network.unknownSection(section)
                }
                precondition(layer.outputShape == shapes[i], "shape plan disagrees with layer \(i)")
                layer.output = arena + offsets[i]
                layers.append(layer)
                infos.append(LayerInfo(index: i, kind: layer.kind, input: layer.inputShape, output: layer.outputShape,
                                       size: size, stride: stride, flops: layer.flops))
            }
        } catch {
            arena.deallocate()
            throw error
        }

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
        let size = convs.map { $0.needsIm2col ? $0.columns * $0.outputShape.h * $0.outputShape.w : 0 }.max() ?? 0
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

    /// The output shape of a section, checked without building the layer, so the network can
    /// lay out one arena for all outputs before any layer holds a pointer into it.
    static func outputShape(of section: DarknetConfig.Section, index i: Int, shapes: [Shape], kinds: [String],
                            input: Shape) throws -> Shape {
        let prevShape = i == 0 ? input : shapes[i - 1]
        let dummy = UnsafePointer<Float>(bitPattern: 16)!
        switch section.name {
        case "convolutional", "conv":
            return try ConvolutionalLayer(section: section, input: dummy, inputShape: prevShape).outputShape
        case "maxpool", "max":
            return try MaxPoolLayer(section: section, input: dummy, inputShape: prevShape).outputShape
        case "upsample":
            return try UpsampleLayer(section: section, input: dummy, inputShape: prevShape).outputShape
        case "route":
            let idx = try routeSources(section, index: i)
            return try RouteLayer(section: section, inputs: idx.map { (index: $0, pointer: dummy, shape: shapes[$0]) }).outputShape
        case "shortcut":
            let from = try resolve(section, key: "from", index: i)
            return try ShortcutLayer(section: section, previous: dummy, previousShape: prevShape, from: dummy,
                                     fromIndex: from, fromShape: shapes[from]).outputShape
        case "yolo":
            return try YOLOLayer(section: section, input: dummy, inputShape: prevShape,
                                 previousIsConv: i > 0 && (kinds[i - 1] == "convolutional" || kinds[i - 1] == "conv"),
                                 previousIndex: i - 1).outputShape
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
