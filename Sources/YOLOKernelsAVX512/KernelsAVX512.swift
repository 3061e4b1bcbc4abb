// The AVX-512 level (F/CD/BW/DQ/VL), built with -target-cpu skylake-avx512 (Package.swift): the
// generic kernels of YOLOKernels specialized for zmm registers, as one KernelSet.
#if arch(x86_64)
import YOLOKernels
import CHints

/// Private to this target: keeps its specializations of the generic kernels apart from every other
/// target's (distinct symbol names, so the linker never merges copies built for different CPUs).
enum AVX512Tag: GemmISA, WinogradISA {
    typealias Vector = SIMD16<Float>
    static var fusedMultiplyAdd: Bool { true }
    @inline(__always) static func prefetch(_ p: UnsafeRawPointer) { yolo_prefetch(p) }
}

public enum KernelsAVX512 {
    /// GEMM tiles of 8 x 48 (8 x 3 zmm accumulators); Winograd and direct convolution 16 lanes wide.
    public static var kernelSet: KernelSet {
        .make(name: "avx512", requires: [.avx2, .avx512], gemm: GemmKernel8x3<SIMD16<Float>, AVX512Tag>.self,
              kc: 256, nc: 480, winograd: AVX512Tag.self, direct: SIMD16<Float>.self, AVX512Tag.self)
    }
}
#endif
