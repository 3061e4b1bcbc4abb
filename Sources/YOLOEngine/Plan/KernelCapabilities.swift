// What a model's kernels can compute: one small value, built once at load from the kernel set,
// the GEMM backend and the precision options, that each method asks whether it can run a layer in
// a precision. What the planner then chooses among those is ChoicePolicy.swift's.
import YOLOCore
import YOLOKernels

struct KernelCapabilities {
    /// Whether our kernels compute the GEMMs (false: OpenBLAS, which has no direct kernel).
    let ourKernels: Bool
    /// The 16-bit GEMM a model may use (its precision's, or in an INT8 model `int8Fallback`'s)
    /// and its precision (.bf16 or .fp16); nil: none.
    let half: HalfKernels?
    let halfPrecision: Precision?
    /// Whether the level has the INT8 GEMM, and whether it takes 10-bit inputs in two passes
    /// (Int8TenBit.swift).
    let int8: Bool
    let int8TenBit: Bool
    /// Whether the level has the 16-bit pair GEMM of INT8 Winograd (Int16Pairs.swift).
    let int8Winograd: Bool
    /// Whether the level has the direct conv + pool on int16 pairs (DirectConvPairs.swift).
    let int8Direct: Bool

    init(kernelSet: KernelSet, ourKernels: Bool, half: HalfKernels? = nil, halfPrecision: Precision? = nil) {
        self.ourKernels = ourKernels
        (self.half, self.halfPrecision) = half == nil ? (nil, nil) : (half, halfPrecision)
        int8 = kernelSet.int8 != nil
        int8TenBit = kernelSet.int8?.tenBitGemm != nil
        int8Winograd = kernelSet.int16Pairs != nil
        int8Direct = kernelSet.int16Direct != nil
    }

    /// The capabilities of `kernelSet` for a model with `options` on a CPU with `features`: the
    /// 16-bit GEMM is the precision's, or with .int8 that of `ModelOptions.int8Fallback` where the
    /// CPU has it; throws where the precision asked for has none here.
    static func make(kernelSet: KernelSet, openBLAS: Bool, options: ModelOptions,
                     features: CPUFeatureSet) throws(YOLOError) -> KernelCapabilities {
        if options.precision == .int8 {
            let fallback = try kernelSet.int8Fallback(options.int8Fallback, on: features)
            return KernelCapabilities(kernelSet: kernelSet, ourKernels: !openBLAS, half: fallback?.kernels,
                                      halfPrecision: fallback?.precision)
        }
        return KernelCapabilities(kernelSet: kernelSet, ourKernels: !openBLAS,
                                  half: try kernelSet.halfGemm(for: options.precision, on: features),
                                  halfPrecision: options.precision)
    }
}

extension ConvAlgorithm.Method {
    /// Whether `kernels` compute this method in `precision`, for a layer whose INT8 input is
    /// 10-bit where `tenBitInput` (the calibration table's `a10`).
    func runs(in precision: Precision, tenBitInput: Bool, on kernels: KernelCapabilities) -> Bool {
        // (The direct conv + pool is our kernels' in every precision.)
        if self == .directPool && !kernels.ourKernels { return false }
        switch precision {
        case .fp32: return true
        case .int8:
            switch self {
            case .im2col: return kernels.int8 && (!tenBitInput || kernels.int8TenBit)
            case .gemm1x1: return false   // (INT8 im2col reads a 1x1 layer's input as it is)
            case .winograd2: return kernels.int8Winograd
            case .winograd4: return kernels.int8Winograd && !tenBitInput
            case .directPool: return kernels.int8Direct
            }
        case .bf16, .fp16:
            guard let half = kernels.half, kernels.halfPrecision == precision else { return false }
            switch self {
            case .im2col, .gemm1x1, .winograd2: return true
            // F(4x4)'s transforms magnify 16-bit rounding: only where just the weights are 16-bit.
            case .winograd4: return half.weightsOnly
            case .directPool: return half.direct != nil
            }
        }
    }
}
