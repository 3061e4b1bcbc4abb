// What a plan is made of: steps, each computing one layer's output (or, fused, the last of a few
// layers') from earlier outputs, and the context a session hands them during a forward pass.
import YOLOCore

/// One unit of work of a plan. Steps are built by the planner and never change; any number of
/// sessions run them at once, each with its own `StepContext`.
protocol Step: AnyObject, Sendable {
    /// The cfg layers this step computes; it writes the output of the last of them.
    var layers: ClosedRange<Int> { get }
    /// The layer outputs it reads (-1: the network input).
    var inputs: [Int] { get }
    /// How it computes them, for reports: "im2col", "winograd4", "direct+pool", "maxpool", ...
    var algorithm: String { get }
    /// Floats of per-thread scratch `run` needs.
    var workspaceFloats: Int { get }
    /// The prepared convolution it runs, if any.
    var convKernel: (any ConvKernel)? { get }
    /// Runs the step; returns the nanoseconds spent in GEMMs when `context.timesGemm` (else 0).
    func run(_ context: StepContext) -> UInt64
}

extension Step {
    /// The layer whose output this step writes.
    var output: Int { layers.upperBound }
    var convKernel: (any ConvKernel)? { nil }
}

/// What a session hands every step during a forward pass: where each layer's output lives,
/// scratch memory and the worker threads. Steps hold no buffers of their own.
struct StepContext {
    /// The session's activation arena and each layer's offset in it (the input at offset 0).
    let arena: UnsafeMutablePointer<Float>
    let offsets: UnsafePointer<Int>
    /// Scratch: `pool.threadCount` blocks of `workspacePerThread` floats.
    let workspace: UnsafeMutablePointer<Float>
    let workspacePerThread: Int
    /// Scratch of the GEMM kernels, per thread.
    let gemmScratch: GemmScratch
    let pool: WorkerPool
    /// Whether steps time their GEMMs (profiles).
    var timesGemm = false

    /// The output of layer `index`; -1 is the network input.
    @inline(__always) func buffer(_ index: Int) -> UnsafeMutablePointer<Float> {
        index < 0 ? arena : arena + offsets[index]
    }

    /// Thread `part`'s scratch block.
    @inline(__always) func workspace(part: Int) -> UnsafeMutablePointer<Float> {
        workspace + part * workspacePerThread
    }
}
