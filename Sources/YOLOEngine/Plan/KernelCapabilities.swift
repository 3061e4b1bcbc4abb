// What a model's kernels can compute: one small value, built once at load from the kernel set,
// the GEMM backend and the precision options, that each method asks whether it can run a layer in
// a precision. What the planner then chooses among those is ChoicePolicy.swift's.
import YOLOCore
import YOLOKernels

struct KernelCapabilities {
    /// Whether our kernels compute the GEMMs (false: OpenBLAS, which has no direct kernel).
    let ourKernels: Bool
    /// The 16-bit GEMMs a model may use, by precision (.bf16, .fp16): its precision's (and, in a
    /// BF16 model, FP16 arithmetic for the layer BF16 may not take), or in an INT8 model
    /// `int8Fallback`'s. Empty: none.
    let halves: [Precision: HalfKernels]
    /// `halves`' precisions, the one whose GEMM is faster first: a tile GEMM (AMX), then FP16
    /// arithmetic, then BF16 (vdpbf16ps runs at half FP32's rate on some CPUs: HalfProbe.swift).
    let halfOrder: [Precision]
    /// Whether the level has the INT8 GEMM, and whether it takes 10-bit inputs in two passes
    /// (Int8TenBit.swift).
    let int8: Bool
    let int8TenBit: Bool
    /// Whether the level has the 16-bit pair GEMM of INT8 Winograd (Int16Pairs.swift).
    let int8Winograd: Bool
    /// Whether the level has the direct conv + pool on int16 pairs (DirectConvPairs.swift).
    let int8Direct: Bool

    init(kernelSet: KernelSet, ourKernels: Bool, halves: [Precision: HalfKernels] = [:]) {
        self.ourKernels = ourKernels
        self.halves = halves
        let rank = { (p: Precision) in halves[p]?.requires.contains(.amx) == true ? 0 : p == .fp16 ? 1 : 2 }
        halfOrder = halves.keys.sorted { rank($0) < rank($1) }
        int8 = kernelSet.int8 != nil
        int8TenBit = kernelSet.int8?.tenBitGemm != nil
        int8Winograd = kernelSet.int16Pairs != nil
        int8Direct = kernelSet.int16Direct != nil
    }

    /// The capabilities of `kernelSet` for a model with `options` on a CPU with `features`: the
    /// 16-bit GEMMs are the precision's, or with .int8 those of `ModelOptions.int8Fallback` where
    /// the CPU has them; throws where the precision asked for has none here.
    static func make(kernelSet: KernelSet, openBLAS: Bool, options: ModelOptions,
                     features: CPUFeatureSet) throws(YOLOError) -> KernelCapabilities {
        var halves: [Precision: HalfKernels] = [:]
        if options.precision == .int8 {
            for (k, p) in try kernelSet.int8Fallbacks(options.int8Fallback, on: features) { halves[p] = k }
        } else if let k = try kernelSet.halfGemm(for: options.precision, on: features) {
            halves[options.precision] = k
            // (FP16 is more exact than bfloat16: it takes a BF16 model's layers that BF16 may not.)
            if options.precision == .bf16, let f = kernelSet.half(.fp16, on: features) { halves[.fp16] = f }
        }
        return KernelCapabilities(kernelSet: kernelSet, ourKernels: !openBLAS, halves: halves)
    }

    /// The 16-bit precision whose GEMM is a tile GEMM (AMX), if any.
    var tileHalf: Precision? { halfOrder.first { halves[$0]?.requires.contains(.amx) == true } }
    /// Whether that tile GEMM's precision has tap products (BF16TapConv: im2col without a column matrix).
    var tileHalfTaps: Bool { tileHalf.flatMap { halves[$0]?.taps } != nil }

    /// The 16-bit GEMMs, for reports: "level: dot" each, in `halfOrder`.
    var halfSummary: String? {
        halfOrder.isEmpty ? nil : halfOrder.compactMap { halves[$0].map { "\($0.gemm.level): \($0.dot)" } }.joined(separator: ", ")
    }
}

extension ConvAlgorithm.Method {
    /// Whether `kernels` compute this method in `precision`, for a layer whose INT8 input has
    /// `inputBits` bits (8; 10 or 12 where the calibration table marks it `a10` or `a12`).
    func runs(in precision: Precision, inputBits: Int, on kernels: KernelCapabilities) -> Bool {
        // (The direct conv + pool is our kernels' in every precision.)
        if self == .directPool && !kernels.ourKernels { return false }
        switch precision {
        case .fp32: return true
        case .int8:
            switch self {
            case .im2col: return kernels.int8 && (inputBits == 8 || inputBits == 10 && kernels.int8TenBit)
            // (INT8 im2col reads an 8- or 10-bit 1x1 layer's input as it is; 12 bits take the pair GEMM.)
            case .gemm1x1: return kernels.int8Winograd && inputBits == 12
            case .winograd2: return kernels.int8Winograd && inputBits <= 10
            case .winograd4: return kernels.int8Winograd && inputBits == 8
            case .directPool: return kernels.int8Direct && inputBits <= 10
            }
        case .bf16, .fp16:
            guard let half = kernels.halves[precision] else { return false }
            switch self {
            case .im2col, .gemm1x1, .winograd2: return true
            // F(4x4)'s transforms magnify 16-bit rounding: only where just the weights are 16-bit.
            case .winograd4: return half.weightsOnly
            case .directPool: return half.direct != nil
            }
        }
    }
}
