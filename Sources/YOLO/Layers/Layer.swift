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

/// What the forward pass hands every layer: scratch memory and the worker threads.
struct ForwardContext {
    /// Scratch buffer of `Network.workspaceCount` floats (im2col columns).
    let workspace: UnsafeMutablePointer<Float>
    let pool: WorkerPool
    /// When true, conv layers split each GEMM across the pool's threads themselves (OpenBLAS
    /// single-threaded); when false, OpenBLAS threads each GEMM.
    var splitGemm: Bool = false
    /// When non-nil, a conv layer adds the nanoseconds it spent in sgemm here.
    var gemmNanoseconds: UInt64? = nil
}

/// One layer of the network. Buffers belong to the network: a layer receives its input and
/// output pointers when the network is built and never allocates during `forward`.
protocol Layer: AnyObject {
    var kind: LayerKind { get }
    var outputShape: Shape { get }
    /// Shape of the (first) input.
    var inputShape: Shape { get }
    /// Multiply-adds x 2 per forward (0 for layers that do no arithmetic worth counting).
    var flops: Int { get }
    /// Floats of shared scratch memory the layer needs during forward.
    var workspaceCount: Int { get }
    /// Where the layer writes its output; set by the network before the first forward.
    var output: UnsafeMutablePointer<Float>! { get set }
    func forward(_ context: inout ForwardContext)
}

extension Layer {
    var workspaceCount: Int { 0 }
    var flops: Int { 0 }
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
    public var description: String {
        let geom = size > 0 ? " \(size)x\(size)/\(stride)" : ""
        return "\(index) \(kind.rawValue)\(geom) \(input) -> \(output)"
    }
}
