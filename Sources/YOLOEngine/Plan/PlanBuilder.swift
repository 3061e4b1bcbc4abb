// The planner's second half, run while the weights load, one convolution at a time: decide each
// node's algorithm (an override, the table, the plan cache or a measurement), prepare the chosen
// kernels from the folded weights (shared by both plans where they agree), then build the steps
// of the inference plan and of the plan that keeps every output.
import YOLOCore
import YOLOKernels

/// A model's plan: the steps of a forward pass, in order; the steps run only when the heads'
/// activated values are read ([yolo] layers); where each output lives.
struct Plan: Sendable {
    let steps: [any Step]
    let deferred: [any Step]
    let activations: ActivationPlan
    /// Floats of scratch one thread needs (at least 1).
    let workspacePerThread: Int

    init(steps: [any Step], deferred: [any Step], layers: [any Layer], input: Shape, keepingAll: Bool) {
        self.steps = steps
        self.deferred = deferred
        activations = ActivationPlan(steps: steps, deferred: deferred, layers: layers, input: input, keepingAll: keepingAll)
        workspacePerThread = max(1, (steps + deferred).map { $0.workspaceFloats }.max() ?? 0)
    }
}

struct PlanBuilder {
    let planner: Planner
    let inference: [PlanNode]
    let inspection: [PlanNode]
    let loadPool: WorkerPool
    /// Set when measuring without a usable cache entry.
    let tuner: Tuner?
    /// Choices read from the plan cache, by the node's first layer.
    let cached: [Int: CachedChoice]
    /// Per convolution: its node in each plan.
    private var inferenceNode: [Int: PlanNode] = [:]
    private var inspectionNode: [Int: PlanNode] = [:]
    /// Per convolution: the prepared kernels and the epilogue.
    private var kernels: [Int: [ConvAlgorithm: any ConvKernel]] = [:]
    private var epilogues: [Int: Epilogue] = [:]
    /// Per convolution whose epilogue the max pool after it applies: that pool.
    private var poolAfter: [Int: MaxPoolLayer] = [:]
    /// Per convolution: the inference choice, its source and measured times.
    private var chosen: [Int: (ConvAlgorithm, PlanReport.Source, [PlanReport.Timing])] = [:]
    private(set) var tuningNanoseconds: UInt64 = 0
    /// The 16-bit precisions whose forms the table does not take (HalfProbe: their GEMM does not
    /// pay here).
    var tableLeavesOut: Set<Precision> = []

    init(planner: Planner, loadPool: WorkerPool, tuner: Tuner?, cached: [CachedChoice]) throws(YOLOError) {
        self.planner = planner
        self.loadPool = loadPool
        self.tuner = tuner
        inference = planner.inferenceNodes()
        inspection = planner.lowered()
        // (A loop: Dictionary(_:uniquingKeysWith:) casts dynamically, which Embedded Swift cannot.)
        var byLayer: [Int: CachedChoice] = [:]
        for c in cached where byLayer[c.layers.lowerBound] == nil { byLayer[c.layers.lowerBound] = c }
        self.cached = byLayer
        for n in inference {
            if let c = n.conv { inferenceNode[c.index] = n }
            if case .poolEpilogue(let p, let c) = n { poolAfter[c.index] = p }
        }
        for n in inspection { if let c = n.conv { inspectionNode[c.index] = n } }
        for (layer, algorithm) in planner.options.algorithms.sorted(by: { $0.key < $1.key }) {
            guard let node = inferenceNode[layer] else {
                throw .invalidArgument("ModelOptions.algorithms: layer \(layer) is not a convolution of this network")
            }
            guard node.choices.contains(algorithm) else {
                let can = node.choices.map { $0.rawValue }.joined(separator: ", ")
                throw .invalidArgument("ModelOptions.algorithms: \(algorithm) cannot compute layer \(layer) (it can: \(can))")
            }
        }
    }

    /// Whether a cache entry fits these nodes: one choice per node that has choices, each among
    /// the node's candidates, and nothing else.
    static func validate(_ choices: [CachedChoice], nodes: [PlanNode]) -> String? {
        let decided = nodes.filter { !$0.choices.isEmpty }
        guard choices.count == decided.count else { return "\(choices.count) choices for \(decided.count) convolutions" }
        for (c, node) in zip(choices, decided) {
            guard let conv = node.conv, c.layers.lowerBound == conv.index else { return "layers \(c.layers) do not match" }
            guard node.choices.contains(c.chosen) else { return "\(c.chosen) cannot compute layer \(conv.index)" }
        }
        return nil
    }

    /// Decides and prepares layer `conv`'s kernels from its folded weights.
    /// Refuses (names the data-size limit) when preparing an algorithm would not fit in memory.
    mutating func load(_ conv: ConvolutionalLayer, bias: UnsafePointer<Float>, weights: UnsafePointer<Float>) throws(YOLOError) {
        let i = conv.index
        epilogues[i] = Epilogue(bias: bias, activation: conv.activation)
        var prepared: [ConvAlgorithm: any ConvKernel] = [:]
        let context = planner.context
        let (kernelSet, gemm, loadPool, int8Input, halves) = (context.kernelSet, context.gemm, loadPool, context.int8Inputs[i],
                                                              context.kernels.halves)
        let (tenBitInput, twelveBitInput) = (context.tenBitInputs[i], context.twelveBitInputs[i])
        // The INT8 forms take the weights as the table rounds them, where it does (GPTQ).
        let rounded = try context.int8Rounding[i]?.apply(to: weights, filters: conv.filters, columns: conv.columns, layer: i)
        let prepare = { (a: ConvAlgorithm) throws(YOLOError) -> any ConvKernel in
            if let refusal = checkDataSizeLimit(a.loadBytes(conv), for: "preparing layer \(i) (\(a.rawValue))") {
                throw .invalidArgument(refusal)
            }
            let input = a.readsTwelveBitInput ? twelveBitInput : a.readsTenBitInput ? tenBitInput ?? int8Input : int8Input
            guard a.precision == .int8, let rounded else {
                return a.prepare(conv, weights: weights, kernelSet: kernelSet, gemm: gemm, pool: loadPool, input: input,
                                 half: halves[a.precision])
            }
            return rounded.withUnsafeBufferPointer {
                a.prepare(conv, weights: $0.baseAddress!, kernelSet: kernelSet, gemm: gemm, pool: loadPool, input: input,
                          half: halves[a.precision])
            }
        }
        guard let node = inferenceNode[i] else { return }
        let options = planner.options
        if let forced = options.algorithms[i] {
            chosen[i] = (forced, .override, [])
        } else if let c = cached[i] {
            chosen[i] = (c.chosen, .cache, c.timings)
        } else if let tuner {
            let candidates = try node.choices.map(prepare)
            let start = monotonicNanoseconds()
            let times = tuner.measure(node, candidates: candidates, bias: bias, layerCount: planner.layers.count,
                                      poolAfter: poolAfter[i])
            tuningNanoseconds &+= monotonicNanoseconds() - start
            let best = Tuner.choose(times: times, parameterBytes: candidates.map { $0.parameterBytes })
            prepared[node.choices[best]] = candidates[best]
            chosen[i] = (node.choices[best], .measured,
                         zip(node.choices, times).map { PlanReport.Timing(algorithm: $0.0.rawValue, milliseconds: $0.1) })
        } else {
            chosen[i] = (table(conv, node.choices), .table, [])
        }
        let algorithm = chosen[i]!.0
        if prepared[algorithm] == nil { prepared[algorithm] = try prepare(algorithm) }
        // The plan that keeps every output computes each layer on its own: the same algorithm
        // unless that one is fused with the pool.
        if let standalone = inspectionNode[i]?.choices, !standalone.contains(algorithm) {
            let own = table(conv, standalone)
            if prepared[own] == nil { prepared[own] = try prepare(own) }
        }
        kernels[i] = prepared
    }

    /// The algorithm the plan that keeps every output uses for `conv`.
    private func inspectionAlgorithm(_ conv: ConvolutionalLayer) -> ConvAlgorithm {
        let a = chosen[conv.index]!.0
        let standalone = inspectionNode[conv.index]!.choices
        return standalone.contains(a) ? a : table(conv, standalone)
    }

    /// The fixed table's choice among `candidates` (ChoicePolicy.swift).
    private func table(_ conv: ConvolutionalLayer, _ candidates: [ConvAlgorithm]) -> ConvAlgorithm {
        planner.policy.table(conv, candidates, leavingOut: tableLeavesOut)
    }

    /// The steps of `nodes`, deferred ([yolo]) ones apart.
    private func steps(_ nodes: [PlanNode], inspection: Bool) -> (steps: [any Step], deferred: [any Step]) {
        var steps: [any Step] = [], deferred: [any Step] = []
        var skip: Int? = nil   // a pool node whose convolution pools its own output
        for (n, node) in nodes.enumerated() where n != skip {
            switch node {
            case .layer(let l):
                if l.head != nil { deferred.append(LayerStep(l)) } else { steps.append(LayerStep(l)) }
            case .conv(let c, let withEpilogue, _):
                let a = inspection ? inspectionAlgorithm(c) : chosen[c.index]!.0
                if !withEpilogue, n + 1 < nodes.count, case .poolEpilogue(let p, _) = nodes[n + 1],
                   let fused = poolFused(c, p, kernels[c.index]![a]!) {
                    steps.append(fused)
                    skip = n + 1
                } else {
                    steps.append(ConvStep(c, kernel: kernels[c.index]![a]!, epilogue: withEpilogue ? epilogues[c.index] : nil))
                }
            case .poolEpilogue(let p, let c):
                steps.append(PoolEpilogueStep(p, epilogue: epilogues[c.index]!))
            case .convPool(let c, let p, _):
                let kernel = kernels[c.index]![chosen[c.index]!.0]!
                if kernel.algorithm.fusesPool {
                    steps.append(ConvStep(c, kernel: kernel, epilogue: epilogues[c.index]))
                } else if let fused = poolFused(c, p, kernel) {
                    steps.append(fused)
                } else {
                    steps.append(ConvStep(c, kernel: kernel, epilogue: nil))
                    steps.append(PoolEpilogueStep(p, epilogue: epilogues[c.index]!))
                }
            }
        }
        return (steps, deferred)
    }

    /// The convolution and the max pool after it (which applies its epilogue) as one step, where
    /// the kernel pools its own output (Winograd) and the pool's geometry allows.
    private func poolFused(_ conv: ConvolutionalLayer, _ pool: MaxPoolLayer, _ kernel: any ConvKernel) -> ConvPoolStep? {
        guard let fusing = kernel.poolFusing, poolFusingFits(conv, pool) else { return nil }
        return ConvPoolStep(conv, pool, kernel: fusing, epilogue: epilogues[conv.index]!)
    }

    /// What `build` makes.
    typealias Built = (inference: Plan, inspection: Plan, entries: [PlanReport.Entry], choices: [CachedChoice])

    /// Both plans, with the report of the inference plan and the choices to cache.
    func build(input: Shape) -> Built {
        let layers = planner.layers
        let (s, d) = steps(inference, inspection: false)
        let (si, di) = steps(inspection, inspection: true)
        let inferencePlan = Plan(steps: s, deferred: d, layers: layers, input: input, keepingAll: false)
        let inspectionPlan = Plan(steps: si, deferred: di, layers: layers, input: input, keepingAll: true)
        let entries = s.map { step -> PlanReport.Entry in
            let what = step.layers.map { PlanBuilder.describe(layers[$0]) }.joined(separator: " + ")
            let decided = layers[step.layers.lowerBound].convolution.flatMap { chosen[$0.index] }
            return PlanReport.Entry(layers: step.layers, what: what, algorithm: step.algorithm,
                                    precision: step.convKernel?.algorithm.precision ?? .fp32, source: decided?.1,
                                    timings: decided?.2 ?? [])
        }
        let choices = inference.compactMap { node -> CachedChoice? in
            guard let conv = node.conv, let (a, _, timings) = chosen[conv.index] else { return nil }
            let last: Int
            if case .convPool(_, let p, _) = node { last = p.index } else { last = conv.index }
            return CachedChoice(layers: conv.index...last, chosen: a, timings: timings)
        }
        return (inferencePlan, inspectionPlan, entries, choices)
    }

    /// "conv 3x3/1 16x208x208 -> 32x208x208", "maxpool 2x2/2 ...", "route ...".
    static func describe(_ l: any Layer) -> String {
        let g = l.geometry
        let geometry = g.size > 0 ? " \(g.size)x\(g.size)/\(g.stride)" : ""
        let kind = l.kind == .convolutional ? "conv" : l.kind.rawValue
        return "\(kind)\(geometry) \(l.inputShape) -> \(l.outputShape)"
    }
}
