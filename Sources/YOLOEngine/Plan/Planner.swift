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
    /// Whether our kernels compute the GEMMs (false: OpenBLAS, and no direct kernel).
    let ourKernels: Bool
    /// How many steps read each layer's output (the decoder counts for the heads' inputs).
    let readers: [Int]
    /// The quantization of each convolution's input that may run in INT8 (precision .int8, our
    /// kernels with INT8 ones, and a calibrated range), by layer.
    let int8Inputs: [Int: Int8Quantization]
    /// The 10-bit quantization of the inputs the calibration table marks `a10` (INT8 Winograd
    /// F(2x2) takes them; where the level has it, the other INT8 forms are not offered there).
    let tenBitInputs: [Int: Int8Quantization]
    /// The BF16 or FP16 GEMM (precision .bf16 or .fp16 on a CPU that runs it; with .int8, that of
    /// `ModelOptions.int8Fallback` where the CPU has it), else nil: no candidates in those precisions.
    let half: HalfKernels?
    /// `half`'s arithmetic, .bf16 or .fp16 (nil without `half`).
    let halfPrecision: Precision?
    /// Whether the level has the pair GEMM of INT8 Winograd (`.winograd4Int8`, `.winograd2Int8` candidates).
    let winogradInt8: Bool
    /// Whether the level has the direct conv + pool on int16 pairs (`.directPoolInt8` candidates).
    let directInt8: Bool
    /// Whether the level's INT8 GEMM takes 10-bit inputs in two passes (Int8TenBit.swift): `.int8`
    /// is then a candidate for the `a10` layers too.
    let tenBitInt8: Bool

    init(layers: [any Layer], options: ModelOptions, ourKernels: Bool, int8Inputs: [Int: Int8Quantization] = [:],
         tenBitInputs: [Int: Int8Quantization] = [:], half: HalfKernels? = nil, halfPrecision: Precision? = nil,
         winogradInt8: Bool = false, directInt8: Bool = false, tenBitInt8: Bool = false) {
        self.directInt8 = directInt8
        self.tenBitInt8 = tenBitInt8
        self.tenBitInputs = tenBitInputs
        self.layers = layers
        self.winogradInt8 = winogradInt8
        self.options = options
        self.ourKernels = ourKernels
        self.int8Inputs = int8Inputs
        self.half = half
        self.halfPrecision = half == nil ? nil : halfPrecision
        var readers = [Int](repeating: 0, count: layers.count)
        for l in layers { for s in l.sources where s >= 0 { readers[s] += 1 } }
        for l in layers { if let h = l.head, h.inputLayer >= 0 { readers[h.inputLayer] += 1 } }
        self.readers = readers
    }

    /// The algorithms that can compute `conv` on its own under the model's options.
    func standaloneCandidates(_ conv: ConvolutionalLayer) -> [ConvAlgorithm] {
        let all = ConvAlgorithm.allCases.filter {
            !$0.fusesPool && (($0 != .winograd4Int8 && $0 != .winograd2Int8) || winogradInt8) && ($0 != .winograd4FP16 || half?.weightsOnly == true)
                && $0.applies(to: conv, pooledBy: nil, ourKernels: ourKernels)
                && $0.allowed(by: options.convolution) && offers($0.precision, for: conv)
        }
        // A 10-bit input: its INT8 forms are F(2x2) and, where the level's dot keeps int32 sums,
        // INT8 im2col in two passes (Int8TenBit.swift); F(4x4) quantizes to 8 bits. FP32 forms
        // stay (more exact still), and are all there is where neither is a candidate. Before, the
        // 8-bit forms stood in there: `--conv im2col` on the 16 photos at threshold 0.25 gave
        // precision 0.966 (29 detections for FP32's 28), the fixed table's plan 1.000.
        guard tenBitInputs[conv.index] != nil else { return all }
        return all.filter { ($0 != .int8 || tenBitInt8) && $0 != .winograd4Int8 }
    }

    /// Whether `conv` may compute in `precision`: FP32 always, INT8 where calibrated, BF16 or FP16
    /// (the model's precision) with its GEMM; in an INT8 model, that of `half` too (FP16
    /// arithmetic or BF16: `ModelOptions.int8Fallback`), but not on a layer the calibration table
    /// gives 10-bit inputs (`a10`): it was marked because 8-bit inputs cost detections, and 16-bit
    /// sums and products cost them too (the FP16 direct conv + pool on layer 2 was faster and lost
    /// detections: docs/performance.md, "Figures from code comments").
    /// Nor BF16 on the first layer, which reads the image: bfloat16's 8 bits of mantissa there cost
    /// detections in BF16 and INT8 models alike (measured with `scripts/int8-accuracy.py`: the same
    /// section). FP16 (11 bits) computes it as FP32 does on those photos.
    func offers(_ precision: Precision, for conv: ConvolutionalLayer) -> Bool {
        switch precision {
        case .fp32: return true
        case .int8: return int8Inputs[conv.index] != nil
        case .bf16, .fp16:
            return halfPrecision == precision && !(precision == .bf16 && conv.index == 0)
                && (options.precision == precision || (options.precision == .int8 && tenBitInputs[conv.index] == nil))
        }
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
               case .poolEpilogue(let pool, _) = nodes[i + 1],
               ConvAlgorithm.directPool.applies(to: conv, pooledBy: pool, ourKernels: ourKernels) {
                // (FP16 where the FP16 kernels have a direct form: FP16 arithmetic.)
                let fp16 = half?.direct != nil && offers(.fp16, for: conv) && ConvAlgorithm.directPoolFP16.allowed(by: options.convolution)
                // (INT8 where the level has the pair kernel and the layer is calibrated.)
                let int8 = directInt8 && offers(.int8, for: conv)
                out.append(.convPool(conv, pool, candidates: [.directPool] + (fp16 ? [.directPoolFP16] : [])
                                         + (int8 ? [.directPoolInt8] : []) + candidates))
                i += 2
                continue
            }
            out.append(nodes[i])
            i += 1
        }
        return out
    }
}
