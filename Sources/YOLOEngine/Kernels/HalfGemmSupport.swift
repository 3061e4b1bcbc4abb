// Where the 16-bit GEMMs may run: a kernel set's `bf16` and `fp16` parts, offered only when this
// CPU has what each needs (`HalfKernels.requires`: AVX-512 BF16, or FP16 arithmetic, besides the
// set's own features), and the one-line error `precision bf16` gets where it cannot; `fp16`
// falls back to the level's FP32 GEMM on FP16-stored weights.
import YOLOCore
import YOLOKernels

extension KernelSet {
    /// This set's 16-bit GEMM in `precision` (.bf16 or .fp16; nil for the others) if a CPU with
    /// `features` runs it, else nil.
    func half(_ precision: Precision, on features: CPUFeatureSet) -> HalfKernels? {
        let kernels: HalfKernels?
        switch precision {
        case .bf16: kernels = bf16
        case .fp16: kernels = fp16
        case .fp32, .int8: kernels = nil
        }
        guard let k = kernels, features.isSuperset(of: requires.union(k.requires)) else { return nil }
        return k
    }

    /// The GEMM of `precision` when it is .bf16 or .fp16 (nil for the others), or why there is
    /// none.
    func halfGemm(for precision: Precision, on features: CPUFeatureSet) throws(YOLOError) -> HalfKernels? {
        switch precision {
        case .bf16: return try bf16ForPrecision(on: features)
        case .fp16: return try fp16ForPrecision(on: features)
        case .fp32, .int8: return nil
        }
    }

    /// The 16-bit GEMM of an INT8 model's other layers (`ModelOptions.int8Fallback`) with its
    /// precision, none for FP32, or why the one asked for cannot run here. `.auto` takes FP16
    /// arithmetic, else BF16: those layers are the ones INT8 costs detections on, and FP16's
    /// 11-bit significand holds them where bfloat16's 8 bits did not (docs/int8-eval.md); with
    /// FP16, a tile BF16 GEMM (AMX) too, which the policy gives the 1x1 layers only
    /// (`ChoicePolicy.offers`); `HalfProbe` still keeps FP32 where it does not pay.
    func int8Fallbacks(_ fallback: Int8Fallback, on features: CPUFeatureSet) throws(YOLOError) -> [(kernels: HalfKernels, precision: Precision)] {
        switch fallback {
        case .fp32: return []
        case .auto:
            if let k = half(.fp16, on: features) {
                guard let tile = half(.bf16, on: features), tile.requires.contains(.amx) else { return [(k, .fp16)] }
                return [(k, .fp16), (tile, .bf16)]
            }
            return half(.bf16, on: features).map { [($0, .bf16)] } ?? []
        case .bf16:
            if let k = half(.bf16, on: features) { return [(k, .bf16)] }
            guard features.contains(.avx512BF16) else {
                throw .invalidArgument("int8 fallback bf16 needs a CPU with AVX-512 BF16 (avx512_bf16: Cooper Lake, Sapphire Rapids, Zen 4 and later); this one lacks it: use auto, fp16 or fp32")
            }
            throw .invalidArgument("int8 fallback bf16: kernel level \(name) has no BF16 kernels (YOLO_KERNEL_LEVEL or ModelOptions.kernelLevel chose a lower level): use auto or fp32")
        case .fp16:
            if let k = half(.fp16, on: features) { return [(k, .fp16)] }
            throw .invalidArgument("int8 fallback fp16 needs a CPU that computes in FP16 (AVX-512 FP16: Sapphire Rapids and later Xeons; 64-bit ARM with asimdhp: Cortex-A55, A76) and a kernel level with FP16 kernels; this CPU, or the level YOLO_KERNEL_LEVEL or ModelOptions.kernelLevel chose, has none: use auto, bf16 or fp32")
        }
    }

    /// The BF16 GEMM for `precision bf16`, or why there is none: this CPU lacks AVX-512 BF16, or
    /// the level in use (YOLO_KERNEL_LEVEL, `ModelOptions.kernelLevel`) has no BF16 kernels.
    func bf16ForPrecision(on features: CPUFeatureSet) throws(YOLOError) -> HalfKernels {
        if let k = half(.bf16, on: features) { return k }
        guard features.contains(.avx512BF16) else {
            throw .invalidArgument("precision bf16 needs a CPU with AVX-512 BF16 (avx512_bf16, vdpbf16ps: Cooper Lake, Sapphire Rapids, Zen 4 and later); this one lacks it: use fp32 or int8")
        }
        let with = KernelRegistry.all.filter { $0.bf16 != nil }.map { $0.name }
        guard !with.isEmpty else {  // (KernelsAVX512BF16.swift says why Swift 6.0 builds none)
            throw .invalidArgument("precision bf16: this build has no BF16 kernels (Swift 6.0 cannot compile them: build with Swift 6.1 or later): use fp32 or int8")
        }
        throw .invalidArgument("precision bf16: kernel level \(name) has no BF16 kernels (\(with.joined(separator: ", ")) \(with.count == 1 ? "has" : "have") them; YOLO_KERNEL_LEVEL or ModelOptions.kernelLevel chose a lower level)")
    }

    /// The GEMM for `precision fp16`: FP16 arithmetic where this CPU has it and the level has its
    /// kernels (64-bit ARM with asimdhp at the dotprod level), else the level's FP32 GEMM on
    /// FP16-stored weights (every x86 CPU; ARMv8.0 cores such as a Raspberry Pi 4's Cortex-A72;
    /// a level lowered below dotprod by YOLO_KERNEL_LEVEL or ModelOptions.kernelLevel).
    func fp16ForPrecision(on features: CPUFeatureSet) throws(YOLOError) -> HalfKernels {
        if let k = half(.fp16, on: features) ?? fp16Weights { return k }
        throw .invalidArgument("precision fp16: this build has no FP16 kernels (Swift has no Float16 on macOS x86_64): use fp32 or int8")
    }
}

extension KernelLevel {
    /// This level's BF16 GEMM where this CPU runs it (for kernel tests and benchmarks).
    @_spi(Kernels) public var bf16Kernels: HalfKernels? { kernelSet?.half(.bf16, on: HostCPU.features) }
    /// This level's FP16 GEMM where this CPU runs it (for kernel tests and benchmarks).
    @_spi(Kernels) public var fp16Kernels: HalfKernels? { kernelSet?.half(.fp16, on: HostCPU.features) }
    /// This level's FP32 GEMM on FP16-stored weights (for kernel tests and benchmarks).
    @_spi(Kernels) public var fp16WeightsKernels: HalfKernels? { kernelSet?.fp16Weights }
}
