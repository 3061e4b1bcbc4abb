// The planner's choice policy in one place: beyond what the kernels can run (KernelCapabilities),
// which precisions and methods a layer is offered, and the fixed table's rules among them. Each
// rule says why in one line; the measurements behind them are in docs/performance.md.
import YOLOCore
import YOLOKernels

struct ChoicePolicy {
    let options: ModelOptions
    let context: PlanContext

    /// Whether the options let `algorithm` compute `conv` (its kernels aside).
    func allows(_ algorithm: ConvAlgorithm, for conv: ConvolutionalLayer) -> Bool {
        allowed(algorithm.method, by: options.convolution)
            && (offers(algorithm.precision, for: conv)
                // A BF16 model's FP16 direct conv + pool wherever it fits: BF16 has no direct form, and
                // FP16's finer rounding beats BF16 im2col + pool there (docs/precision-bf16-fp16.md, "BF16").
                || options.precision == .bf16 && algorithm == ConvAlgorithm(.directPool, .fp16))
    }

    /// Whether `ModelOptions.convolution` allows `method`.
    func allowed(_ method: ConvAlgorithm.Method, by option: ModelOptions.Convolution) -> Bool {
        switch (method, option) {
        // `.im2col` leaves out Winograd, whose kernels need more memory.
        case (.winograd2, .im2col), (.winograd4, .im2col): return false
        // `.winograd2` leaves out F(4x4), whose kernels need 2.25x F(2x2)'s.
        case (.winograd4, .winograd2): return false
        default: return true
        }
    }

    /// Whether `conv` may compute in `precision`.
    func offers(_ precision: Precision, for conv: ConvolutionalLayer) -> Bool {
        switch precision {
        // The reference: always.
        case .fp32: return true
        // Only where the calibration table gives the input's range.
        case .int8: return context.int8Inputs[conv.index] != nil
        case .bf16, .fp16:
            // Not BF16 on the first layer: bfloat16's 8-bit mantissa on the image costs detections.
            if precision == .bf16 && conv.index == 0 { return false }
            // The model's own precision elsewhere.
            if options.precision == precision { return true }
            // A BF16 model's FP16: only on the layer BF16 may not take.
            if options.precision == .bf16 { return conv.index == 0 }
            // An INT8 model's BF16 beside FP16 (AMX tiles): 1x1 layers only; on 3x3 ones bfloat16's
            // rounding of the input cost detections where FP16's did not (docs/int8-eval.md).
            if precision == .bf16 && context.kernels.halves[.fp16] != nil && !conv.isPointwise { return false }
            // An INT8 model's other layers, but not those marked `a10`: narrow sums cost detections there too.
            return options.precision == .int8 && context.tenBitInputs[conv.index] == nil
        }
    }

    /// The fixed table's choice (`ModelOptions.Planning.table`) among `candidates`, none in the
    /// 16-bit precisions `leavingOut` (HalfProbe: their GEMM does not pay on this CPU).
    func table(_ conv: ConvolutionalLayer, _ candidates: [ConvAlgorithm], leavingOut: Set<Precision>) -> ConvAlgorithm {
        let kernelSet = context.kernelSet
        // The INT8 direct conv + pool only where its level marks it `preferred` (its dot product wins there).
        let directInt8 = kernelSet.int16Direct?.preferred == true
        let pairForms = candidates.contains {
            ($0 == ConvAlgorithm(.directPool, .int8) && directInt8) || $0 == ConvAlgorithm(.winograd2, .int8)
        }
        let directPair = directInt8 && candidates.contains(ConvAlgorithm(.directPool, .int8))
        // INT8 im2col on a 10-bit input only where the level ranks its two passes above what is left.
        let rank = kernelSet.int8?.tenBitPreferred
        let tenBitIm2col = context.tenBitInputs[conv.index] == nil || rank == .pairForms || (rank == .winograd && !directPair)
            || (rank == .fp32 && !pairForms)
        // The pair 1x1 form only where the level's pair product outruns FP32.
        let pairPointwise = kernelSet.int16Pairs?.pointwisePreferred == true
        let kept = candidates.filter {
            !leavingOut.contains($0.precision) && ($0 != ConvAlgorithm(.directPool, .int8) || directInt8)
                && ($0 != ConvAlgorithm(.im2col, .int8) || tenBitIm2col) && ($0 != ConvAlgorithm(.gemm1x1, .int8) || pairPointwise)
        }
        return ChoicePolicy.table(for: conv, candidates: kept, halfOrder: context.kernels.halfOrder, tile: context.kernels.tileHalf,
                                  tileTaps: context.kernels.tileHalfTaps)
    }

    /// The table's order of preference among the algorithms that apply; `halfOrder` the 16-bit
    /// precisions, faster GEMM first, `tile` the one whose GEMM is a tile GEMM (AMX), if any, and
    /// `tileTaps` whether its im2col form runs 3x3 stride-1 layers as tap products.
    static func table(for conv: ConvolutionalLayer, candidates: [ConvAlgorithm], halfOrder: [Precision] = [.fp16, .bf16],
                      tile: Precision? = nil, tileTaps: Bool = false) -> ConvAlgorithm {
        let int8Im2col = ConvAlgorithm(.im2col, .int8)
        // A 12-bit input (`a12`): the pair 1x1 form (twice FP32's products an instruction where the
        // caller keeps it), unless a tile GEMM (AMX) has a 16-bit form of it.
        let pair1x1 = ConvAlgorithm(.gemm1x1, .int8)
        if candidates.contains(pair1x1) && !(tile.map { candidates.contains(ConvAlgorithm(.gemm1x1, $0)) } ?? false) {
            return pair1x1
        }
        // A 10-bit input without INT8 im2col: the INT8 forms that take it, the direct one first.
        if !candidates.contains(int8Im2col) {
            if candidates.contains(ConvAlgorithm(.directPool, .int8)) { return ConvAlgorithm(.directPool, .int8) }
            if candidates.contains(ConvAlgorithm(.winograd2, .int8)) { return ConvAlgorithm(.winograd2, .int8) }
        }
        // INT8 im2col wherever it is a candidate: with a dot-product instruction it beat every other
        // form; INT8 F(4x4) never (its int16 kernels take 4x the memory: `yolo tune` measures it).
        if candidates.contains(int8Im2col) { return int8Im2col }
        // With 16-bit candidates: the 16-bit form of the FP32 choice in the fastest 16-bit GEMM
        // that has it, F(2x2) for F(4x4) where F(4x4) has none.
        let halves = halfOrder.filter { h in candidates.contains { $0.precision == h } }
        // Tap products read the input once, with no column matrix or transforms: over the tile
        // precision's Winograd and im2col + GEMM up to `tapMaxChannels`; deeper, F(2x2)'s fewer
        // products win (docs/performance-amx.md, "Tap products").
        if tileTaps, let tile, conv.is3x3Same, conv.inputShape.c <= ChoicePolicy.tapMaxChannels,
           candidates.contains(ConvAlgorithm(.im2col, tile)),
           !candidates.contains(where: { $0.method == .directPool && $0.precision != .fp32 }) {
            return ConvAlgorithm(.im2col, tile)
        }
        if !halves.isEmpty {
            let choice = table(for: conv, candidates: candidates.filter { $0.precision == .fp32 })
            for method in [choice.method, choice.method == .winograd4 ? .winograd2 : choice.method] {
                if let form = halves.map({ ConvAlgorithm(method, $0) }).first(where: candidates.contains) { return form }
            }
            // A tile GEMM (AMX) outruns the FP32 direct conv + pool: its im2col form instead.
            if choice.method == .directPool, let tile, candidates.contains(ConvAlgorithm(.im2col, tile)) {
                return ConvAlgorithm(.im2col, tile)
            }
            return choice
        }
        // The direct conv + pool where it applies: no full-size buffer, fewer passes.
        if candidates.contains(.directPool) { return .directPool }
        // A 1x1 layer is one GEMM.
        if candidates.contains(.gemm1x1) { return .gemm1x1 }
        // Winograd for 3x3 layers deep enough for its transforms to pay; F(4x4) on larger maps.
        if conv.is3x3Same && conv.inputShape.c >= ChoicePolicy.winogradMinChannels {
            let large = min(conv.outputShape.h, conv.outputShape.w) >= ChoicePolicy.winograd4MinSide
            if large && candidates.contains(.winograd4) { return .winograd4 }
            if candidates.contains(.winograd2) { return .winograd2 }
        }
        // Anything else: im2col + GEMM.
        return .im2col
    }

    /// Input channels up to which the table takes the tile precision's tap products for a 3x3 layer.
    static let tapMaxChannels = 256
    /// Input channels from which the table takes Winograd for a 3x3 layer (with fewer, im2col won).
    static let winogradMinChannels = 32
    /// Output side from which the table takes F(4x4) over F(2x2) (below, they tie and F(4x4) needs more memory).
    static let winograd4MinSide = 24
}
