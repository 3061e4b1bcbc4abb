import YOLOCore
import YOLOKernels

/// A tensor shape: channels, height, width (batch 1, CHW order in memory).
public struct Shape: Equatable, Sendable, CustomStringConvertible {
    /// Channels.
    public var c: Int
    /// Rows.
    public var h: Int
    /// Values per row.
    public var w: Int
    /// A shape of `c` channels of `h` rows of `w` values.
    public init(c: Int, h: Int, w: Int) { self.c = c; self.h = h; self.w = w }
    /// The number of values: c x h x w.
    public var count: Int { c * h * w }
    public var description: String { "\(c)x\(h)x\(w)" }
}

/// What a layer does, for summaries and profiles.
public enum LayerKind: String, Sendable {
    /// `[convolutional]`: a convolution with its batch norm, bias and activation.
    case convolutional
    /// `[maxpool]`.
    case maxpool
    /// `[upsample]`: nearest-neighbour upsampling.
    case upsample
    /// `[route]`: earlier layers' outputs, concatenated by channel.
    case route
    /// `[shortcut]`: the sum with an earlier layer's output.
    case shortcut
    /// `[yolo]`: a YOLOv3-style detection head.
    case yolo
    /// `[reorg]`: YOLOv2's space-to-depth.
    case reorg
    /// `[region]`: a YOLOv2 detection head.
    case region
}

/// Where a layer sits in a network: its index, the outputs it reads, its input and output shapes.
struct LayerPlace: Sendable {
    /// The layer's index in the network (0-based, after [net]).
    let index: Int
    /// The layers whose outputs it reads (-1: the network input).
    let sources: [Int]
    /// Shape of the (first) input, and of the output.
    let input: Shape
    let output: Shape
}

/// One layer of a network as the cfg describes it: shapes, the earlier layers it reads and how
/// many parameters it takes from the weights file. Layers are built from their cfg section and
/// never change afterwards; how they are computed (which algorithm, fused with which neighbour)
/// is the planner's business (Sources/YOLO/Plan), and a layer never learns of it.
///
/// Layers are classes: Embedded Swift allows existentials of class-bound protocols only.
protocol Layer: AnyObject, Sendable {
    var kind: LayerKind { get }
    var place: LayerPlace { get }
    /// Multiply-adds x 2 per forward (0 for layers that do no arithmetic worth counting).
    var flops: Int { get }
    /// Kernel size and stride, for summaries (0 when they do not apply).
    var geometry: (size: Int, stride: Int) { get }
    /// Floats this layer reads from a weights file, in file order.
    var parameterCount: Int { get }
    /// The detection head this layer describes, if it is one.
    var head: HeadInfo? { get }
    /// This layer as its concrete kind, for the planner (Embedded Swift has no casts from
    /// existentials to protocols, so the layers say what they are).
    var computed: (any ComputedLayer)? { get }
    var convolution: ConvolutionalLayer? { get }
    var maxPool: MaxPoolLayer? { get }
}

extension Layer {
    var index: Int { place.index }
    var sources: [Int] { place.sources }
    var inputShape: Shape { place.input }
    var outputShape: Shape { place.output }
    var flops: Int { 0 }
    var geometry: (size: Int, stride: Int) { (0, 0) }
    var parameterCount: Int { 0 }
    var head: HeadInfo? { nil }
    var computed: (any ComputedLayer)? { nil }
    var convolution: ConvolutionalLayer? { nil }
    var maxPool: MaxPoolLayer? { nil }
}

/// A layer with one way of computing it, which runs as a plan step of its own (route, upsample,
/// shortcut, max pool, reorg, the [yolo] and [region] heads' activation).
protocol ComputedLayer: Layer {
    /// Floats of per-thread scratch memory `forward` needs.
    var workspaceFloats: Int { get }
    func forward(_ context: StepContext)
}

extension ComputedLayer {
    var computed: (any ComputedLayer)? { self }
    var workspaceFloats: Int { 0 }
    /// The first source's output.
    @inline(__always) func input(_ context: StepContext) -> UnsafeMutablePointer<Float> {
        context.buffer(sources[0])
    }
}

/// Bias + activation, applied by whichever step computes a convolution's output (or by the
/// max pool after it, on its smaller output, when the planner moved it there).
struct Epilogue: Sendable {
    private let biases: ParameterPointer
    let activation: Activation
    init(bias: UnsafePointer<Float>, activation: Activation) {
        biases = ParameterPointer(base: bias)
        self.activation = activation
    }
    /// Points into the model's immutable parameters.
    var bias: UnsafePointer<Float> { biases.base }
}

/// Public, read-only summary of a layer.
public struct LayerInfo: Sendable, CustomStringConvertible {
    /// The layer's index in the cfg (0-based, not counting [net]).
    public let index: Int
    /// What the layer does.
    public let kind: LayerKind
    /// The shape it reads.
    public let input: Shape
    /// The shape it writes.
    public let output: Shape
    /// Size and stride for conv and maxpool layers (0 otherwise).
    public let size: Int
    /// The stride of a conv or maxpool layer (0 otherwise).
    public let stride: Int
    /// The layer's floating-point operations in one forward pass.
    public let flops: Int
    /// The layers this one reads (-1: the network input).
    public let sources: [Int]
    public var description: String {
        let geom = size > 0 ? " \(size)x\(size)/\(stride)" : ""
        return "\(index) \(kind.rawValue)\(geom) \(input) -> \(output)"
    }
}

/// The product of `factors`, or nil when it overflows Int (cfg arithmetic on hostile numbers).
func checkedProduct(_ factors: [Int]) -> Int? {
    var product = 1
    for f in factors {
        let (p, overflow) = product.multipliedReportingOverflow(by: f)
        if overflow { return nil }
        product = p
    }
    return product
}
