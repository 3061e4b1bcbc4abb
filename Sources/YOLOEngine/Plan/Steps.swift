// The kinds of plan steps: a layer computed on its own, a convolution by a prepared algorithm
// (with or without its epilogue; fused with the max pool after it for `.directPool`), and a max
// pool that applies the epilogue of the convolution before it; a Winograd convolution that pools
// its own output (`ConvPoolStep`).
import YOLOCore

/// A layer with one way of computing it (route, upsample, shortcut, max pool, [yolo]).
final class LayerStep: Step {
    let layer: any ComputedLayer
    init(_ layer: any ComputedLayer) { self.layer = layer }
    var layers: ClosedRange<Int> { layer.index...layer.index }
    var inputs: [Int] { layer.sources }
    var algorithm: String { layer.kind.rawValue }
    var workspaceFloats: Int { layer.workspaceFloats }
    func run(_ context: StepContext) -> UInt64 { layer.forward(context); return 0 }
}

/// A convolution by a prepared algorithm. `epilogue` nil: the planner moved the bias +
/// activation to the max pool after it. For `.directPool` (and its FP16 form) the step covers the pool too and
/// writes its output.
final class ConvStep: Step {
    let conv: ConvolutionalLayer
    let kernel: any ConvKernel
    let epilogue: Epilogue?
    let layers: ClosedRange<Int>

    init(_ conv: ConvolutionalLayer, kernel: any ConvKernel, epilogue: Epilogue?) {
        self.conv = conv
        self.kernel = kernel
        self.epilogue = epilogue
        layers = conv.index...(kernel.algorithm.fusesPool ? conv.index + 1 : conv.index)
    }

    var inputs: [Int] { conv.sources }
    var convKernel: (any ConvKernel)? { kernel }
    var algorithm: String { kernel.algorithm.rawValue }
    var workspaceFloats: Int { kernel.workspaceFloats }
    func run(_ context: StepContext) -> UInt64 {
        kernel.run(context.buffer(conv.sources[0]), into: context.buffer(output), epilogue: epilogue, context: context)
    }
}

/// A max pool that applies the bias + activation of the convolution before it (see
/// `MaxPoolLayer.pool(_:epilogue:)`).
final class PoolEpilogueStep: Step {
    let pool: MaxPoolLayer
    let epilogue: Epilogue
    init(_ pool: MaxPoolLayer, epilogue: Epilogue) { self.pool = pool; self.epilogue = epilogue }
    var layers: ClosedRange<Int> { pool.index...pool.index }
    var inputs: [Int] { pool.sources }
    var algorithm: String { "maxpool+epilogue" }
    var workspaceFloats: Int { 0 }
    func run(_ context: StepContext) -> UInt64 { pool.pool(context, epilogue: epilogue); return 0 }
}

/// A convolution whose kernel also computes the 2x2 stride-2 max pool after it and applies the
/// epilogue to the pooled map (Winograd: WinogradPool.swift): the convolution's map is never made.
final class ConvPoolStep: Step {
    let conv: ConvolutionalLayer
    let kernel: any PoolFusingConvKernel
    let epilogue: Epilogue
    let layers: ClosedRange<Int>

    init(_ conv: ConvolutionalLayer, _ pool: MaxPoolLayer, kernel: any PoolFusingConvKernel, epilogue: Epilogue) {
        self.conv = conv
        self.kernel = kernel
        self.epilogue = epilogue
        layers = conv.index...pool.index
    }

    var inputs: [Int] { conv.sources }
    var convKernel: (any ConvKernel)? { kernel }
    var algorithm: String { kernel.algorithm.rawValue + "+pool" }
    var workspaceFloats: Int { kernel.pooledWorkspaceFloats }
    func run(_ context: StepContext) -> UInt64 {
        kernel.run(context.buffer(conv.sources[0]), pooledInto: context.buffer(output), epilogue: epilogue, context: context)
    }
}
