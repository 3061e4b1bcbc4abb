/// The state of forward passes over one shared `Model`: the input, every activation, scratch
/// memory and the worker threads. Cheap next to the model (yolov3-tiny at 416x416: about
/// 17 MiB plus 1 MiB of scratch per thread, against 34 MiB of weights), allocated once;
/// `forward` allocates nothing.
///
/// One session runs one forward at a time. For frames in flight, or one detector per thread
/// or task, make a session each from the same model. Calls from two threads at once on the
/// same session are served one after the other (never interleaved), but the results of the
/// first may be overwritten by the second before its caller reads them.
///
/// `Sendable`, unchecked: whatever a call changes (the activations, the heads' activation, the
/// worker pool's hand-offs) is changed under the session's lock, and the rest is immutable after
/// `init`. What it lends as unsafe pointers (`input`, `output(ofLayer:)`, `heads`) stays valid
/// until the next forward from any thread: callers sharing a session must order their writes to
/// `input` and reads of outputs with the others' forwards (`Detector` holds the session from the
/// filled input to the decoded heads).
public final class Session: @unchecked Sendable {
    public let model: Model
    /// Threads of this session's forward passes (the calling thread included).
    public let threads: Int
    /// Whether every layer's output stays readable after a forward (`output(ofLayer:)`);
    /// otherwise buffers are reused and only the heads' and the input survive.
    public let keepsAllOutputs: Bool

    /// The network's input buffer (CHW, `inputChannels * inputHeight * inputWidth` floats).
    /// Fill it and call `forward()`, or pass an input to `forward(_:)`.
    public let input: UnsafeMutableBufferPointer<Float>

    private let arena: UnsafeMutablePointer<Float>
    private let offsets: UnsafeMutablePointer<Int>
    private let kept: [Bool]
    private let workspace: UnsafeMutablePointer<Float>
    private let pool: WorkerPool
    private let lock = Lock()
    /// [yolo] layers only apply the logistic for inspection; `heads` runs them on first read.
    private var headsActivated = false
    /// Bytes of activations and scratch this session allocated.
    public let memoryBytes: Int

    /// Makes a session of `model` with `threads` threads (default: every core this process
    /// may use; when several sessions run at once, give each a share, e.g. 1, or use
    /// `Model.makeSessions`). With `keepsAllOutputs`, every layer's output stays readable.
    public init(model: Model, threads: Int? = nil, keepsAllOutputs: Bool = false) throws(YOLOError) {
        let threads = max(1, threads ?? availableCores())
        let inputShape = Shape(c: model.inputChannels, h: model.inputHeight, w: model.inputWidth)
        let plan = ActivationPlan(layers: model.impl, input: inputShape, keepingAll: keepsAllOutputs)
        let (scratch, o1) = (model.workspacePerThread + model.gemmScratchPerThread).multipliedReportingOverflow(by: threads)
        let bytes = 4 * (plan.floats + scratch)
        // The limit counts one thread's scratch, as the model's check does.
        guard !o1, 4 * (plan.floats + model.workspacePerThread + model.gemmScratchPerThread) <= model.options.maxActivationBytes else {
            throw .invalidArgument("a session with \(threads) threads\(keepsAllOutputs ? " keeping every layer's output" : "") needs \(bytes >> 20) MiB of activations, over the limit of \(model.options.maxActivationBytes >> 20) MiB (ModelOptions.maxActivationBytes)")
        }
        self.model = model
        self.threads = threads
        self.keepsAllOutputs = keepsAllOutputs
        arena = .allocate(capacity: plan.floats)
        arena.initialize(repeating: 0, count: plan.floats)
        offsets = .allocate(capacity: max(1, plan.offsets.count))
        offsets.initialize(from: plan.offsets, count: plan.offsets.count)
        kept = plan.kept
        workspace = .allocate(capacity: scratch)
        pool = WorkerPool(threads: threads)
        input = UnsafeMutableBufferPointer(start: arena, count: inputShape.count)
        memoryBytes = bytes
    }

    deinit {
        arena.deallocate()
        offsets.deallocate()
        workspace.deallocate()
    }

    private func makeContext() -> ForwardContext {
        ForwardContext(arena: arena, offsets: offsets, workspace: workspace, workspacePerThread: model.workspacePerThread,
                       gemmScratch: GemmScratch(base: workspace + threads * model.workspacePerThread,
                                                perThread: model.gemmScratchPerThread),
                       pool: pool, absorbs: !keepsAllOutputs)
    }

    private func run(_ context: inout ForwardContext) {
        for layer in model.impl where layer.runsInForward { layer.forward(&context) }
        headsActivated = false
    }

    /// Runs the network on the contents of `input`.
    public func forward() {
        lock.withLock {
            var context = makeContext()
            run(&context)
        }
    }

    /// Copies `data` (CHW floats) into the input buffer and runs the network.
    public func forward(_ data: UnsafeBufferPointer<Float>) throws(YOLOError) {
        guard data.count == input.count else {
            throw .invalidArgument("input has \(data.count) floats; the network takes \(model.inputChannels)x\(model.inputHeight)x\(model.inputWidth) = \(input.count)")
        }
        lock.withLock {
            _ = input.update(fromContentsOf: data)
            var context = makeContext()
            run(&context)
        }
    }

    public func forward(_ data: [Float]) throws(YOLOError) {
        // (withUnsafeBufferPointer would erase the error type.)
        try data.withUnsafeBufferPointer { p in Result { () throws(YOLOError) in try forward(p) } }.get()
    }

    /// Runs `body` with this session to itself: no other thread's call on the session starts
    /// before `body` returns (for a caller that fills the input, runs and reads the heads).
    func exclusively<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        try lock.withLock(body)
    }

    /// `forward()` for a caller already inside `exclusively`.
    func forwardLocked() {
        var context = makeContext()
        run(&context)
    }

    /// Per-layer wall time of one forward pass, with the part of each conv spent in GEMMs.
    public struct Profile: Sendable {
        public var layerNanoseconds: [UInt64]
        public var gemmNanoseconds: [UInt64]
    }

    /// Runs a forward pass and times each layer (0 for layers a forward pass skips).
    public func forwardProfiled() -> Profile {
        lock.withLock {
            var context = makeContext()
            var profile = Profile(layerNanoseconds: [], gemmNanoseconds: [])
            for layer in model.impl {
                guard layer.runsInForward else {
                    profile.layerNanoseconds.append(0)
                    profile.gemmNanoseconds.append(0)
                    continue
                }
                context.gemmNanoseconds = 0
                let start = monotonicNanoseconds()
                layer.forward(&context)
                profile.layerNanoseconds.append(monotonicNanoseconds() - start)
                profile.gemmNanoseconds.append(context.gemmNanoseconds ?? 0)
            }
            headsActivated = false
            return profile
        }
    }

    /// Runs only the GEMMs of a forward pass, one full-size call per conv layer, threaded as
    /// `forward` would thread them, and returns each layer's nanoseconds (0 for layers
    /// without a GEMM). For benchmarks: the floor that the convolutions cannot beat.
    public func gemmOnlyNanoseconds() -> [UInt64] {
        lock.withLock {
            let context = makeContext()
            let size = max(model.impl.map { $0.gemmAloneScratch }.max() ?? 0, 1)
            let columns = UnsafeMutablePointer<Float>.allocate(capacity: size)
            columns.initialize(repeating: 0.5, count: size)
            defer { columns.deallocate() }
            let times = model.impl.map { layer in
                let start = monotonicNanoseconds()
                return layer.gemmAlone(columns: columns, context: context) ? monotonicNanoseconds() - start : 0
            }
            headsActivated = false
            return times
        }
    }

    /// The output of layer `index` after the last forward (CHW, `model.layers[index].output`
    /// shape). Throws when the session reuses that layer's buffer (see `keepsAllOutputs`).
    public func output(ofLayer index: Int) throws(YOLOError) -> UnsafeBufferPointer<Float> {
        guard model.impl.indices.contains(index) else {
            throw .invalidArgument("layer \(index) does not exist (the network has layers 0..<\(model.impl.count))")
        }
        guard kept[index] else {
            throw .invalidArgument("layer \(index)'s output is not kept after a forward: make the session with keepsAllOutputs: true")
        }
        if !model.impl[index].runsInForward { lock.withLock { activateHeads() } }
        return UnsafeBufferPointer(start: arena + offsets[index], count: model.impl[index].outputShape.count)
    }

    private func activateHeads() {
        guard !headsActivated else { return }
        var context = makeContext()
        for layer in model.impl where !layer.runsInForward { layer.forward(&context) }
        headsActivated = true
    }

    /// The YOLO heads of the last forward, in cfg order (empty for a cfg without [yolo] layers),
    /// raw and activated.
    public var heads: [HeadView] {
        lock.withLock { activateHeads() }
        return rawHeads
    }

    /// The heads without computing their `activated` buffers (which may be stale): for the
    /// decoder, which reads `raw`.
    var rawHeads: [HeadView] {
        model.heads.map { h in
            HeadView(info: h, raw: UnsafeBufferPointer(start: h.inputLayer < 0 ? arena : arena + offsets[h.inputLayer],
                                                       count: model.layers[h.layerIndex].input.count),
                     activated: UnsafeBufferPointer(start: arena + offsets[h.layerIndex], count: model.layers[h.layerIndex].output.count))
        }
    }
}
