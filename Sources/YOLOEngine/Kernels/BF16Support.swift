// Where the BF16 GEMM may run: a kernel set's `bf16` part, offered only when this CPU has what it
// needs (`BF16Kernels.requires`: AVX-512 BF16 besides the set's own features), and the one-line
// error `precision bf16` gets where it cannot.
import YOLOCore
import YOLOKernels

extension KernelSet {
    /// This set's BF16 GEMM if a CPU with `features` runs it, else nil.
    func bf16(on features: CPUFeatureSet) -> BF16Kernels? {
        guard let k = bf16, features.isSuperset(of: requires.union(k.requires)) else { return nil }
        return k
    }

    /// The BF16 GEMM for `precision bf16`, or why there is none: this CPU lacks AVX-512 BF16, or
    /// the level in use (YOLO_KERNEL_LEVEL, `ModelOptions.kernelLevel`) has no BF16 kernels.
    func bf16ForPrecision(on features: CPUFeatureSet) throws(YOLOError) -> BF16Kernels {
        if let k = bf16(on: features) { return k }
        guard features.contains(.avx512BF16) else {
            throw .invalidArgument("precision bf16 needs a CPU with AVX-512 BF16 (avx512_bf16, vdpbf16ps: Cooper Lake, Sapphire Rapids, Zen 4 and later); this one lacks it: use fp32 or int8")
        }
        let with = KernelRegistry.all.filter { $0.bf16 != nil }.map { $0.name }.joined(separator: ", ")
        throw .invalidArgument("precision bf16: kernel level \(name) has no BF16 kernels (\(with) has them; YOLO_KERNEL_LEVEL or ModelOptions.kernelLevel chose a lower level)")
    }
}

extension KernelLevel {
    /// This level's BF16 GEMM where this CPU runs it (for kernel tests and benchmarks).
    @_spi(Kernels) public var bf16Kernels: BF16Kernels? { kernelSet?.bf16(on: HostCPU.features) }
}
