import YOLOKernels

/// A tensor shape: channels, height, width (batch 1, CHW order in memory).
public struct Shape: Equatable, Sendable, CustomStringConvertible {
    public var c: Int, h: Int, w: Int
    public init(c: Int, h: Int, w: Int) { self.c = c; self.h = h; self.w = w }
    public var count: Int { c * h * w }
    public var description: String { "\(c)x\(h)x\(w)" }
}

/// What a layer does, for summaries and profiles.
public enum LayerKind: String, Sendable {
    case convolutional, maxpool, upsample, route, shortcut, yolo
}

/// What a session hands every layer during a forward pass: where each layer's output lives,
/// scratch memory and the worker threads. Layers hold no buffers of their own.
struct ForwardContext {
    /// The session's activation arena and each layer's offset in it (the input at offset 0).
    let arena: UnsafeMutablePointer<Float>
    let offsets: UnsafePointer<Int>
    /// Scratch: `pool.threadCount` blocks of `workspacePerThread` floats.
    let workspace: UnsafeMutablePointer<Float>
    let workspacePerThread: Int
    /// Scratch of the GEMM kernels, per thread.
    let gemmScratch: GemmScratch
    let pool: WorkerPool
    /// When non-nil, a conv layer adds the nanoseconds it spent in GEMMs here.
    var gemmNanoseconds: UInt64? = nil
    /// Whether layers that absorbed the next one (`Layer.absorb`) compute its output in their
    /// place: true unless the session keeps every layer's output.
    var absorbs = true

    /// The output of layer `index`; -1 is the network input.
    @inline(__always) func buffer(_ index: Int) -> UnsafeMutablePointer<Float> {
        index < 0 ? arena : arena + offsets[index]
    }

    /// Thread `part`'s scratch block.
    @inline(__always) func workspace(part: Int) -> UnsafeMutablePointer<Float> {
        workspace + part * workspacePerThread
    }
}

/// What a model hands a layer while it loads: the process's GEMM kernels, the chosen
/// convolution algorithm, threads for load-time transforms, and storage owned by the model.
struct LoadContext {
    let options: ModelOptions
    /// The weights file's name, for error messages.
    let weightsName: String
    let pool: WorkerPool
    let storage: ModelStorage
    /// The GEMM kernels to prepare weights for (nil: OpenBLAS).
    let kernels: GemmKernels?
}

/// Bias + activation that a layer may leave to the layer consuming its output.
struct Epilogue: @unchecked Sendable {
    /// Points into the model's immutable parameters.
    let bias: UnsafePointer<Float>
    let activation: Activation
}

/// One layer of a network: an immutable description (shapes, the earlier layers it reads,
/// its parameters once loaded) and its forward pass over buffers the session provides.
///
/// The model asks layers, and never switches on their types: how many parameters they read,
/// which layers they read, whether they head the network, whether they can fuse.
///
/// Layers are classes (Embedded Swift allows existentials of class-bound protocols only) that
/// the model changes only while it loads (`load`, `deferEpilogue`, `takeEpilogue`); after that
/// they are immutable, which is why they can be `@unchecked Sendable`.
protocol Layer: AnyObject, Sendable {
    var kind: LayerKind { get }
    /// This layer's index in the network (0-based, after [net]).
    var index: Int { get }
    var outputShape: Shape { get }
    /// Shape of the (first) input.
    var inputShape: Shape { get }
    /// The layers whose outputs this layer reads (-1: the network input).
    var sources: [Int] { get }
    /// Multiply-adds x 2 per forward (0 for layers that do no arithmetic worth counting).
    var flops: Int { get }
    /// Floats of per-thread scratch memory the layer needs during forward.
    var workspaceCount: Int { get }
    /// Kernel size and stride, for summaries (0 when they do not apply).
    var geometry: (size: Int, stride: Int) { get }

    /// Floats this layer reads from a weights file, in file order.
    var parameterCount: Int { get }
    /// Takes this layer's parameters (`parameterCount` floats, which the layer may transform in
    /// place but must not keep: the buffer is reused for the next layer) and prepares, in the
    /// model's storage, whatever it computes from them.
    func load(parameters: UnsafeMutablePointer<Float>, context: LoadContext) throws(YOLOError)

    /// The bias + activation this layer can hand to a consumer that takes them (nil: none).
    var deferrableEpilogue: Epilogue? { get }
    /// Stop applying `deferrableEpilogue`: the consumer applies it.
    func deferEpilogue()
    /// Apply `epilogue` to this layer's output (after its own work). Returns false when the layer
    /// cannot; then nothing changes.
    func takeEpilogue(_ epilogue: Epilogue) -> Bool

    /// Lets this layer compute `next`'s output itself (called after `next` took this layer's
    /// epilogue). Returns false when it cannot; then nothing changes. When it can, forward passes
    /// that do not keep every output (`ForwardContext.absorbs`) write `next`'s buffer and not this
    /// layer's, and `next` does nothing.
    func absorb(_ next: any Layer) -> Bool
    /// Called on the layer after one that absorbed it.
    func absorbedByPrevious()
    /// Whether this layer absorbed the next one (then, unless every output is kept, it has no
    /// output buffer of its own).
    var writesNextOutput: Bool { get }
    /// The detection head this layer describes, if it is one.
    var head: HeadInfo? { get }
    /// False for layers whose output no later layer reads and that only serve inspection (the
    /// [yolo] heads: the decoder reads their input). A forward pass skips them; the session
    /// runs them when their output is asked for.
    var runsInForward: Bool { get }

    func forward(_ context: inout ForwardContext)

    /// For the benchmark: runs only this layer's GEMMs, full size, on whatever `columns` holds
    /// (`gemmAloneScratch` floats). Returns false for layers without GEMMs.
    func gemmAlone(columns: UnsafeMutablePointer<Float>, context: ForwardContext) -> Bool
    var gemmAloneScratch: Int { get }
}

extension Layer {
    var workspaceCount: Int { 0 }
    var flops: Int { 0 }
    var geometry: (size: Int, stride: Int) { (0, 0) }
    var parameterCount: Int { 0 }
    func load(parameters: UnsafeMutablePointer<Float>, context: LoadContext) throws(YOLOError) {}
    var deferrableEpilogue: Epilogue? { nil }
    func deferEpilogue() {}
    func takeEpilogue(_ epilogue: Epilogue) -> Bool { false }
    func absorb(_ next: any Layer) -> Bool { false }
    func absorbedByPrevious() {}
    var writesNextOutput: Bool { false }
    var head: HeadInfo? { nil }
    var runsInForward: Bool { true }
    func gemmAlone(columns: UnsafeMutablePointer<Float>, context: ForwardContext) -> Bool { false }
    var gemmAloneScratch: Int { 0 }
    /// The first source's output.
    @inline(__always) func input(_ context: ForwardContext) -> UnsafeMutablePointer<Float> {
        context.buffer(sources[0])
    }
}

/// Public, read-only summary of a layer.
public struct LayerInfo: Sendable, CustomStringConvertible {
    public let index: Int
    public let kind: LayerKind
    public let input: Shape
    public let output: Shape
    /// Size and stride for conv and maxpool layers (0 otherwise).
    public let size: Int
    public let stride: Int
    public let flops: Int
    /// The layers this one reads (-1: the network input).
    public let sources: [Int]
    public var description: String {
        let geom = size > 0 ? " \(size)x\(size)/\(stride)" : ""
        return "\(index) \(kind.rawValue)\(geom) \(input) -> \(output)"
    }
}
