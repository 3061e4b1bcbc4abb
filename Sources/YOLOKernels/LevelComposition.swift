// A kernel level made from the level below it with some GEMMs replaced: the amx level is the
// avx512vnni level's set (Winograd transforms, direct convolutions, quantization, pair GEMMs, the
// FP32 GEMM) whose INT8 and BF16 GEMMs run on Intel's tile units (Sources/YOLOKernelsAMX). Every
// kernel not replaced is the lower level's own function, so what it computes is unchanged.

extension KernelSet {
    /// This set under another level name and requirement, every kernel kept.
    public func renamed(_ name: String, requires: CPUFeatureSet) -> KernelSet {
        var set = KernelSet(name: name, requires: requires, gemm: gemm, winograd2: winograd2, winograd4: winograd4,
                            direct: direct, fp16Weights: fp16Weights, biasActivate: biasActivate)
        if let int8 { set = set.adding(int8: int8) }
        if let int16Pairs { set = set.adding(int16Pairs: int16Pairs) }
        if let int16Direct { set = set.adding(int16Direct: int16Direct) }
        if let bf16 { set = set.adding(bf16: bf16) }
        if let fp16 { set = set.adding(fp16: fp16) }
        return set
    }
}

extension Int8Functions {
    /// These INT8 kernels with another GEMM (8-bit and 10-bit), its packed A and blocking: the same
    /// quantization, `activationShift` (the new GEMM must take B as the old one did) and
    /// `tenBitPreferred`; no `planeGemm` (it would need the old packed A).
    public func replacingGemm(
        dot: String, mr: Int, nr: Int, lanes: Int, kc: Int, nc: Int,
        packedASize: @escaping @Sendable (Int, Int) -> Int,
        packA: @escaping @Sendable (UnsafePointer<Int8>, Int, Int, Int, Range<Int>, UnsafeMutableRawPointer) -> Void,
        scratchSize: @escaping @Sendable (Int, Int, Int) -> Int,
        gemm: @escaping @Sendable (Int, Int, Int, UnsafeRawPointer, UnsafePointer<UInt32>, Int, UnsafeMutablePointer<Float>, Int,
                                   UnsafePointer<Int32>, UnsafePointer<Float>, UnsafeMutableRawPointer, Range<Int>) -> Void,
        tenBitGemm: @escaping @Sendable (Int, Int, Int, UnsafeRawPointer, UnsafePointer<UInt32>, UnsafePointer<UInt32>, Int,
                                         UnsafeMutablePointer<Float>, Int, UnsafePointer<Int32>, UnsafePointer<Float>,
                                         UnsafeMutableRawPointer, Range<Int>) -> Void
    ) -> Int8Functions {
        let replaced = Int8Functions(dot: dot, mr: mr, nr: nr, lanes: lanes, kc: kc, nc: nc, packedASize: packedASize, packA: packA,
                                     scratchSize: scratchSize, gemm: gemm, planeGemm: nil, quantize: quantize, tenBitGemm: tenBitGemm,
                                     quantizeTenBit: quantizeTenBit, activationShift: activationShift, quantizePairs: quantizePairs)
        return tenBitPreferred.map { replaced.preferringTenBit(over: $0) } ?? replaced
    }
}

extension HalfKernels {
    /// These kernels with another GEMM (`gemm`, and `winogradGemm` on the words of the Winograd
    /// F(2x2) input transform, whose transform is kept), named `dot`, needing `requires`.
    public func replacingGemm(
        dot: String, requires: CPUFeatureSet, gemm: GemmFunctions,
        winogradGemm: @escaping @Sendable (Int, Int, Int, UnsafePointer<Float>, UnsafePointer<UInt32>, Int,
                                           UnsafeMutablePointer<Float>, Int, UnsafeMutablePointer<Float>, Range<Int>) -> Void
    ) -> HalfKernels {
        HalfKernels(dot: dot, requires: requires, gemm: gemm, weightsOnly: weightsOnly, direct: direct,
                    winogradPairs: winogradPairs.map { BF16WinogradPairs(input: $0.input, gemm: winogradGemm) })
    }
}

extension GemmFunctions {
    /// A GEMM with the FP32 GEMM's calling convention from its functions (a level's tile GEMM).
    public static func make(
        level: String, mr: Int, nr: Int, width: Int, kc: Int, nc: Int,
        packedASize: @escaping @Sendable (Int, Int) -> Int,
        packA: @escaping @Sendable (UnsafePointer<Float>, Int, Int, Int, UnsafeMutablePointer<Float>) -> Void,
        scratchSize: @escaping @Sendable (Int, Int, Int) -> Int,
        gemm: @escaping @Sendable (Int, Int, Int, UnsafePointer<Float>, UnsafePointer<Float>, Int,
                                   UnsafeMutablePointer<Float>, Int, UnsafeMutablePointer<Float>, Range<Int>) -> Void
    ) -> GemmFunctions {
        GemmFunctions(level: level, mr: mr, nr: nr, width: width, kc: kc, nc: nc, packedASize: packedASize, packA: packA,
                      scratchSize: scratchSize, gemm: gemm)
    }
}
