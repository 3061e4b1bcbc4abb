// Loading a model, the steps `Model.init` lists: the cfg parsed into layers and shapes
// (`ParsedNetwork`), the memory checks of a forward pass, the weights file read one layer at a
// time into the plan builder; and the cfg-to-layer switch and the checks they use.
import YOLOCore
import YOLOKernels

/// A cfg's network before any weights: the input, every layer checked section by section (every
/// key of a section read by its layer or without effect at inference); nothing is allocated yet.
struct ParsedNetwork {
    let width: Int, height: Int, channels: Int
    /// [net] letter_box, nil when the cfg does not say.
    let letterBox: Bool?
    let layers: [any Layer]
    /// Multiply-adds x 2 of one forward pass.
    let flops: Int

    var inputShape: Shape { Shape(c: channels, h: height, w: width) }

    init(config: DarknetConfig, options: ModelOptions) throws(YOLOError) {
        var net = config.sections[0]
        net.trackReads()
        let cfgWidth = try net.positive("width", net.int("width"))
        let cfgHeight = try net.positive("height", net.int("height"))
        channels = try net.positive("channels", net.int("channels"))
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
            (width, height) = (size.width, size.height)
        } else {
            (width, height) = (cfgWidth, cfgHeight)
        }
        guard config.sections.count > 1 else { throw net.error("the cfg has no layers after [net]") }
        if let t = options.tuningThreads, t < 1 { throw .invalidArgument("ModelOptions.tuningThreads must be at least 1") }

        let (inputWidth, inputHeight) = (width, height)
        let inputShape = Shape(c: channels, h: inputHeight, w: inputWidth)
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
        (self.layers, flops) = (layers, totalFlops)
    }

    /// Refuses a network whose activations exceed `ModelOptions.maxActivationBytes` before the
    /// weights are even looked at (every layer its own buffer where it is live: a bound of any plan's).
    func checkActivationBound(scratch: Int, file: String, options: ModelOptions) throws(YOLOError) {
        let order = layers.filter { $0.head == nil } + layers.filter { $0.head != nil }
        let bound = ActivationPlan(writes: order.map { ($0.index, $0.sources) }, deferred: Model.heads(layers).count,
                                   layers: layers, input: inputShape, keepingAll: false)
        guard 4 * (bound.floats + scratch) <= options.maxActivationBytes else {
            throw .invalidArgument("\(file): a forward pass at \(width)x\(height) needs \(4 * bound.floats >> 20) MiB of activations, over the limit of \(options.maxActivationBytes >> 20) MiB (ModelOptions.maxActivationBytes)")
        }
    }

    /// Refuses an inference plan whose activations and scratch exceed the limit.
    func checkSessionBytes(_ inference: Plan, scratch: Int, file: String, options: ModelOptions) throws(YOLOError) {
        let needed = 4 * (inference.activations.floats + inference.workspacePerThread + scratch)
        guard needed <= options.maxActivationBytes else {
            throw .invalidArgument("\(file): a forward pass at \(width)x\(height) needs \(needed >> 20) MiB of activations and scratch, over the limit of \(options.maxActivationBytes >> 20) MiB (ModelOptions.maxActivationBytes)")
        }
    }

    /// Reads the weights file after its header, checked against the cfg, and hands the layers
    /// their parameters in order: each convolution folds batch norm (biases into `storage`) and
    /// `builder` prepares its kernels. One layer's floats at a time: the file is never held whole.
    /// Returns the floats read.
    func loadParameters(_ source: WeightsReader.Origin, weightsName: String, cfg: String, storage: ModelStorage,
                        into builder: inout PlanBuilder) throws(YOLOError) -> Int {
        let counts = layers.map { $0.parameterCount }
        let floats = counts.reduce(0, +)
        let largest = max(1, counts.max() ?? 0)
        if let refusal = checkDataSizeLimit(4 * (floats + largest), for: "\(cfg): loading the parameters") {
            throw .invalidArgument(refusal)
        }
        var reader = try WeightsReader(source, name: weightsName, cfg: cfg, floats: floats)
        // Each layer's own buffer, unmapped after it: the largest layer's is not held while the
        // rest are prepared (peak RSS with INT8 weights).
        for i in layers.indices where counts[i] > 0 {
            guard let buffer = mapPages(floats: counts[i]) else {
                throw .invalidArgument("\(cfg): no memory for layer \(i)'s \(4 * counts[i] >> 20) MiB of parameters")
            }
            defer { unmapPages(buffer, floats: counts[i]) }
            try reader.next(counts[i], into: buffer)
            guard let conv = layers[i].convolution else { continue }
            let (bias, weights) = try conv.fold(buffer, weightsName: weightsName, storage: storage)
            try builder.load(conv, bias: bias, weights: weights)
        }
        return floats
    }
}

extension Model {
    /// The folded weights (filters x columns) of the convolutions `wanted`, read again from the
    /// model's weights file (the kernels keep only their prepared forms).
    func foldedWeights(of wanted: Set<Int>) throws(YOLOError) -> [Int: [Float]] {
        guard let weightsFile else { throw .invalidArgument("the model was loaded from bytes: its weights cannot be read again") }
        let counts = impl.map { $0.parameterCount }
        var reader = try WeightsReader(.file(weightsFile), name: weightsFile, cfg: cfgFile, floats: counts.reduce(0, +))
        var out: [Int: [Float]] = [:]
        let storage = ModelStorage()
        for (i, layer) in impl.enumerated() where counts[i] > 0 && i <= (wanted.max() ?? -1) {
            let buffer = UnsafeMutablePointer<Float>.allocate(capacity: counts[i])
            defer { buffer.deallocate() }
            try reader.next(counts[i], into: buffer)
            guard let conv = layer.convolution, wanted.contains(conv.index) else { continue }
            let (_, weights) = try conv.fold(buffer, weightsName: weightsFile, storage: storage)
            out[conv.index] = Array(UnsafeBufferPointer(start: weights, count: conv.filters * conv.columns))
        }
        return out
    }

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
