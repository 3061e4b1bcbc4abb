import YOLOCore

/// The state of forward passes over one shared `Model`: the input, every activation, scratch
/// memory and the worker threads; it runs the model's plan (`Model.plan`), or with
/// `keepsAllOutputs` the plan that computes every layer on its own and keeps its output. Cheap
/// next to the model (yolov3-tiny at 416x416: about 13 MiB with one thread, against 34-69 MiB
/// of weights), allocated once; `forward` allocates nothing.
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
    /// The model this session runs (shared with any other sessions of it).
    public let model: Model
    /// Threads of this session's forward passes (the calling thread included).
    public let threads: Int
    /// Whether every layer's output stays readable after a forward (`output(ofLayer:)`);
    /// otherwise buffers are reused and only the heads' and the input survive.
    public let keepsAllOutputs: Bool

    /// The network's input buffer (CHW, `inputChannels * inputHeight * inputWidth` floats).
    /// Fill it and call `forward()`, or pass an input to `forward(_:)`.
    public let input: UnsafeMutableBufferPointer<Float>

    private let plan: Plan
    private let arena: UnsafeMutablePointer<Float>
    private let offsets: UnsafeMutablePointer<Int>
    private let workspace: UnsafeMutablePointer<Float>
    private let pool: WorkerPool
    private let lock = Locked<Void>()
    /// [yolo] layers only apply the logistic for inspection; `heads` runs them on first read.
    private var headsActivated = false
    /// Bytes of activations and scratch this session allocated.
    public let memoryBytes: Int

    /// Makes a session of `model` with `threads` threads (default: every core this process
    /// may use; when several sessions run at once, give each a share, e.g. 1, or use
    /// `Model.makeSessions`). With `keepsAllOutputs`, every layer's output stays readable.
    public convenience init(model: Model, threads: Int? = nil, keepsAllOutputs: Bool = false) throws(YOLOError) {
        try self.init(model: model, threads: threads, keepsAllOutputs: keepsAllOutputs, plan: model.plan(keepingAll: keepsAllOutputs))
    }

    /// A session for `forward(observingConvolutionInputs:)` (calibration): the steps of the plan
    /// that keeps every output (the same values), with buffers reused once read, planned here:
    /// only calibration needs it.
    package convenience init(observing model: Model, threads: Int? = nil) throws(YOLOError) {
        let steps = model.plan(keepingAll: true)
        let plan = Plan(steps: steps.steps, deferred: steps.deferred, layers: model.impl,
                        input: Shape(c: model.inputChannels, h: model.inputHeight, w: model.inputWidth), keepingAll: false)
        try self.init(model: model, threads: threads, keepsAllOutputs: false, plan: plan)
    }

    private init(model: Model, threads: Int?, keepsAllOutputs: Bool, plan: Plan) throws(YOLOError) {
        let threads = max(1, threads ?? availableCores())
        let inputShape = Shape(c: model.inputChannels, h: model.inputHeight, w: model.inputWidth)
        let floats = plan.activations.floats
        let (scratch, o1) = (plan.workspacePerThread + model.gemmScratchPerThread).multipliedReportingOverflow(by: threads)
        let bytes = 4 * (floats + scratch)
        // The limit counts one thread's scratch, as the model's check does.
        guard !o1, 4 * (floats + plan.workspacePerThread + model.gemmScratchPerThread) <= model.options.maxActivationBytes else {
            throw .invalidArgument("a session with \(threads) threads\(keepsAllOutputs ? " keeping every layer's output" : "") needs \(bytes >> 20) MiB of activations, over the limit of \(model.options.maxActivationBytes >> 20) MiB (ModelOptions.maxActivationBytes)")
        }
        // With OpenBLAS, each thread's first GEMM maps OpenBLAS's buffer (Gemm.swift says why
        // that must not fail).
        let blas = model.usesOpenBLAS ? threads * OpenBLAS.bufferBytes : 0
        if let refusal = checkDataSizeLimit(bytes + blas, for: "a session with \(threads) threads"
                                            + (blas > 0 ? " and OpenBLAS's buffers" : "")) {
            throw .invalidArgument(refusal)
        }
        self.model = model
        self.threads = threads
        self.keepsAllOutputs = keepsAllOutputs
        self.plan = plan
        // 64-byte aligned (a cache line): tile rows and vectors of planes and scratch then split none.
        arena = UnsafeMutableRawPointer.allocate(byteCount: 4 * max(floats, 1), alignment: 64)
            .bindMemory(to: Float.self, capacity: max(floats, 1))
        arena.initialize(repeating: 0, count: floats)
        offsets = .allocate(capacity: max(1, plan.activations.offsets.count))
        offsets.initialize(from: plan.activations.offsets, count: plan.activations.offsets.count)
        workspace = UnsafeMutableRawPointer.allocate(byteCount: 4 * max(scratch, 1), alignment: 64)
            .bindMemory(to: Float.self, capacity: max(scratch, 1))
        pool = WorkerPool(threads: threads)
        input = UnsafeMutableBufferPointer(start: arena, count: inputShape.count)
        memoryBytes = bytes
    }

    deinit {
        arena.deallocate()
        offsets.deallocate()
        workspace.deallocate()
    }

    private func makeContext() -> StepContext {
        StepContext(arena: arena, offsets: offsets, workspace: workspace, workspacePerThread: plan.workspacePerThread,
                    gemmScratch: GemmScratch(base: workspace + threads * plan.workspacePerThread,
                                             perThread: model.gemmScratchPerThread),
                    pool: pool)
    }

    private func run() {
        let context = makeContext()
        for step in plan.steps { _ = step.run(context) }
        headsActivated = false
    }

    /// Runs the network on the contents of `input`, calling `body(layer, values)` before each
    /// convolution step with the tensor it is about to read (`layer`: the convolution's cfg
    /// index; `values`: the network input or an earlier layer's output, valid only during the
    /// call): what calibration records, whatever buffers the plan reuses.
    package func forward(observingConvolutionInputs body: (Int, UnsafeBufferPointer<Float>) -> Void) {
        lock.withLock {
            let context = makeContext()
            for step in plan.steps {
                if step.convKernel != nil, let source = step.inputs.first {
                    let count = source < 0 ? input.count : model.impl[source].outputShape.count
                    body(step.layers.lowerBound, UnsafeBufferPointer(start: context.buffer(source), count: count))
                }
                _ = step.run(context)
            }
            headsActivated = false
        }
    }

    /// Runs the network on the contents of `input`.
    public func forward() {
        lock.withLock { run() }
    }

    /// Copies `data` (CHW floats) into the input buffer and runs the network.
    public func forward(_ data: UnsafeBufferPointer<Float>) throws(YOLOError) {
        guard data.count == input.count else {
            throw .invalidArgument("input has \(data.count) floats; the network takes \(model.inputChannels)x\(model.inputHeight)x\(model.inputWidth) = \(input.count)")
        }
        lock.withLock {
            _ = input.update(fromContentsOf: data)
            run()
        }
    }

    /// Copies `data` (CHW floats, the input's size) into the input and runs a forward pass.
    public func forward(_ data: [Float]) throws(YOLOError) {
        // (withUnsafeBufferPointer would erase the error type.)
        try data.withUnsafeBufferPointer { p in Result { () throws(YOLOError) in try forward(p) } }.get()
    }

    /// Runs `body` with this session to itself: no other thread's call on the session starts
    /// before `body` returns (for a caller that fills the input, runs and reads the heads).
    package func exclusively<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        try lock.withLock(body)
    }

    /// `forward()` for a caller already inside `exclusively`.
    package func forwardLocked() { run() }

    /// Per-step wall time of one forward pass, with the part of each step spent in GEMMs.
    public struct Profile: Sendable {
        /// The plan's steps in order: the layers each computes and how.
        public var steps: [(layers: ClosedRange<Int>, algorithm: String)]
        /// Each step's wall time, in `steps` order.
        public var stepNanoseconds: [UInt64]
        /// The part of each step's time spent in GEMMs.
        public var gemmNanoseconds: [UInt64]
    }

    /// Runs a forward pass and times each step.
    public func forwardProfiled() -> Profile {
        lock.withLock {
            var context = makeContext()
            context.timesGemm = true
            var profile = Profile(steps: plan.steps.map { ($0.layers, $0.algorithm) }, stepNanoseconds: [], gemmNanoseconds: [])
            for step in plan.steps {
                let start = monotonicNanoseconds()
                let gemm = step.run(context)
                profile.stepNanoseconds.append(monotonicNanoseconds() - start)
                profile.gemmNanoseconds.append(gemm)
            }
            headsActivated = false
            return profile
        }
    }

    /// The output of layer `index` after the last forward (CHW, `model.layers[index].output`
    /// shape). Throws when the session reuses that layer's buffer (see `keepsAllOutputs`).
    public func output(ofLayer index: Int) throws(YOLOError) -> UnsafeBufferPointer<Float> {
        guard model.impl.indices.contains(index) else {
            throw .invalidArgument("layer \(index) does not exist (the network has layers 0..<\(model.impl.count))")
        }
        guard plan.activations.kept[index] else {
            throw .invalidArgument("layer \(index)'s output is not kept after a forward: make the session with keepsAllOutputs: true")
        }
        if plan.deferred.contains(where: { $0.output == index }) { lock.withLock { activateHeads() } }
        return UnsafeBufferPointer(start: arena + offsets[index], count: model.impl[index].outputShape.count)
    }

    private func activateHeads() {
        guard !headsActivated else { return }
        let context = makeContext()
        for step in plan.deferred { _ = step.run(context) }
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
    package var rawHeads: [HeadView] {
        model.heads.map { h in
            HeadView(info: h, raw: UnsafeBufferPointer(start: h.inputLayer < 0 ? arena : arena + offsets[h.inputLayer],
                                                       count: model.layers[h.layerIndex].input.count),
                     activated: UnsafeBufferPointer(start: arena + offsets[h.layerIndex], count: model.layers[h.layerIndex].output.count))
        }
    }
}
