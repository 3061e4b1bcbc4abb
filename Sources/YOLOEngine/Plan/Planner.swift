// The planner's first half: layers are lowered to plan nodes, and fusion is a rewrite of that list,
// one function per pattern (as ncnn's ncnnoptimize does it): layers never learn they were fused.
// Each convolution node carries the algorithms that can compute it; which one runs is decided
// afterwards (by the table, by an override, from the plan cache or by measuring: PlanChoice.swift)
// and the steps are built from the nodes and the decisions (PlanBuilder.swift).
import YOLOCore
import YOLOKernels

/// One node of a plan being made.
enum PlanNode {
    /// A layer computed on its own.
    case layer(any ComputedLayer)
    /// A convolution, by one of `candidates`; `epilogue` false when the max pool after it applies
    /// its bias + activation.
    case conv(ConvolutionalLayer, epilogue: Bool, candidates: [ConvAlgorithm])
    /// A max pool that applies the bias + activation of the convolution before it.
    case poolEpilogue(MaxPoolLayer, conv: ConvolutionalLayer)
    /// A convolution and the 2x2 stride-2 max pool after it (which applies the conv's epilogue):
    /// computed by `.directPool` (or its FP16 form) in one pass, or by one of the conv's other
    /// `candidates` followed by the pool.
    case convPool(ConvolutionalLayer, MaxPoolLayer, candidates: [ConvAlgorithm])

    /// The convolution whose algorithm this node needs decided, if any.
    var conv: ConvolutionalLayer? {
        switch self {
        case .conv(let c, _, _), .convPool(let c, _, _): return c
        default: return nil
        }
    }

    /// The algorithms among which one is chosen (for a fused pair, the direct conv + pool forms
    /// are among its candidates).
    var choices: [ConvAlgorithm] {
        switch self {
        case .conv(_, _, let candidates), .convPool(_, _, let candidates): return candidates
        default: return []
        }
    }
}

struct Planner {
    let layers: [any Layer]
    let options: ModelOptions
    /// The kernels, what they can compute, and the INT8 inputs.
    let context: PlanContext
    /// How many steps read each layer's output (the decoder counts for the heads' inputs).
    let readers: [Int]

    init(layers: [any Layer], options: ModelOptions, context: PlanContext) {
        (self.layers, self.options, self.context) = (layers, options, context)
        var readers = [Int](repeating: 0, count: layers.count)
        for l in layers { for s in l.sources where s >= 0 { readers[s] += 1 } }
        for l in layers { if let h = l.head, h.inputLayer >= 0 { readers[h.inputLayer] += 1 } }
        self.readers = readers
    }

    var policy: ChoicePolicy { ChoicePolicy(options: options, context: context) }

    /// Whether `algorithm` may compute `conv` (pooled by `next` for the direct conv + pool): its
    /// method fits the layer, the kernels run it in its precision, and the policy offers it.
    func isCandidate(_ algorithm: ConvAlgorithm, for conv: ConvolutionalLayer, pooledBy next: MaxPoolLayer? = nil) -> Bool {
        return algorithm.method.fits(conv, pooledBy: next, in: algorithm.precision)
            && algorithm.method.runs(in: algorithm.precision, inputBits: context.inputBits(conv.index), on: context.kernels)
            && policy.allows(algorithm, for: conv)
    }

    /// The algorithms that can compute `conv` on its own under the model's options.
    func standaloneCandidates(_ conv: ConvolutionalLayer) -> [ConvAlgorithm] {
        ConvAlgorithm.allCases.filter { !$0.fusesPool && isCandidate($0, for: conv) }
    }

    /// Every layer a node of its own, each convolution with its bias + activation: the plan of
    /// sessions that keep every layer's output (exact per-layer outputs).
    func lowered() -> [PlanNode] {
        layers.map { l in
            if let conv = l.convolution {
                return .conv(conv, epilogue: true, candidates: standaloneCandidates(conv))
            }
            return .layer(l.computed!)
        }
    }

    /// The inference plan's nodes: lowered, then each fusion pattern rewritten in turn (unless
    /// `ModelOptions.fusesLayers` is false).
    func inferenceNodes() -> [PlanNode] {
        var nodes = lowered()
        guard options.fusesLayers else { return nodes }
        nodes = moveEpilogueToPool(nodes)
        nodes = fuseDirectConvPool(nodes)
        return nodes
    }

    /// Pattern: a convolution whose only reader is the max pool right after it, with a monotonic
    /// activation -> the pool applies the bias + activation on its smaller output (bit-identical:
    /// max(act(x + b)) == act(max(x) + b)).
    func moveEpilogueToPool(_ nodes: [PlanNode]) -> [PlanNode] {
        var out: [PlanNode] = []
        var i = 0
        while i < nodes.count {
            if case .conv(let conv, true, let candidates) = nodes[i], i + 1 < nodes.count,
               case .layer(let next) = nodes[i + 1], let pool = next.maxPool,
               readers[conv.index] == 1, pool.sources == [conv.index], conv.activation.isMonotonic {
                out.append(.conv(conv, epilogue: false, candidates: candidates))
                out.append(.poolEpilogue(pool, conv: conv))
                i += 2
                continue
            }
            out.append(nodes[i])
            i += 1
        }
        return out
    }

    /// Pattern: a 3x3 convolution with few input channels followed by the 2x2 stride-2 max pool
    /// that applies its epilogue -> one node that the direct kernel may compute in one pass.
    func fuseDirectConvPool(_ nodes: [PlanNode]) -> [PlanNode] {
        var out: [PlanNode] = []
        var i = 0
        while i < nodes.count {
            if case .conv(let conv, false, let candidates) = nodes[i], i + 1 < nodes.count,
               case .poolEpilogue(let pool, _) = nodes[i + 1], isCandidate(.directPool, for: conv, pooledBy: pool) {
                let direct = ConvAlgorithm.allCases.filter { $0.fusesPool && isCandidate($0, for: conv, pooledBy: pool) }
                out.append(.convPool(conv, pool, candidates: direct + candidates))
                i += 2
                continue
            }
            out.append(nodes[i])
            i += 1
        }
        return out
    }
}
