// The 16-bit GEMM kernel set of a level: a GEMM with the FP32 GEMM's calling convention whose
// weights (and, but for the weights-only form, inputs and products) are BF16 or FP16, and the
// forms around it (the FP16 direct conv + pool, BF16 Winograd F(2x2)'s input pairs). Made by
// BF16Gemm.swift, FP16Gemm.swift and FP16Weights.swift; the engine picks one per model.

/// A level's 16-bit (BF16 or FP16) GEMM and what the CPU needs for it (which may be more than its
/// kernel set's FP32 kernels need: the engine checks `requires` before it offers it).
public struct HalfKernels: Sendable {
    /// What computes the products ("vdpbf16ps"), for reports.
    public let dot: String
    public let requires: CPUFeatureSet
    /// The GEMM, with the FP32 GEMM's calling convention: packed A in float-sized words, B and C
    /// FP32, scratch in floats.
    public let gemm: GemmFunctions
    /// Whether only the weights are 16-bit (FP16Weights.swift: the GEMM inputs, products and sums
    /// stay FP32), so that the GEMMs of Winograd F(4x4), whose transforms magnify the rounding of
    /// 16-bit inputs and sums, may run on it.
    public let weightsOnly: Bool
    /// The direct 3x3 convolution + pool in this arithmetic (FP16 only, where the CPU computes
    /// in FP16: DirectConvHalf.swift), packed weights and scratch counted in floats.
    public let direct: DirectConvFunctions?
    /// BF16 Winograd F(2x2) with the input transform in this GEMM's words (WinogradBF16.swift),
    /// where the level has it (nil: FP16, and levels without).
    public let winogradPairs: BF16WinogradPairs?
    /// 3x3 stride-1 convolutions from padded bfloat16 pair planes, no column matrix
    /// (BF16TapConv.swift), where the level has them (`withTaps`: amx).
    public private(set) var taps: BF16TapConv? = nil

    @usableFromInline
    init(dot: String, requires: CPUFeatureSet, gemm: GemmFunctions, weightsOnly: Bool = false,
         direct: DirectConvFunctions? = nil, winogradPairs: BF16WinogradPairs? = nil) {
        (self.dot, self.requires, self.gemm, self.weightsOnly, self.direct) = (dot, requires, gemm, weightsOnly, direct)
        self.winogradPairs = winogradPairs
    }

    /// These kernels with `direct` as their direct convolution + pool.
    @usableFromInline func adding(direct: DirectConvFunctions) -> HalfKernels {
        var copy = HalfKernels(dot: dot, requires: requires, gemm: gemm, weightsOnly: weightsOnly, direct: direct,
                               winogradPairs: winogradPairs)
        copy.taps = taps
        return copy
    }

    /// These kernels with `pairs` as their Winograd F(2x2) on bfloat16 pairs.
    public func adding(winogradPairs pairs: BF16WinogradPairs) -> HalfKernels {
        var copy = HalfKernels(dot: dot, requires: requires, gemm: gemm, weightsOnly: weightsOnly, direct: direct, winogradPairs: pairs)
        copy.taps = taps
        return copy
    }

    /// These kernels with `taps`.
    public func withTaps(_ taps: BF16TapConv) -> HalfKernels {
        var copy = self
        copy.taps = taps
        return copy
    }
}
