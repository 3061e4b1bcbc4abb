// The AVX2 + FMA level, built with -target-cpu haswell (Package.swift): the generic kernels of
// YOLOKernels specialized for ymm registers, as one KernelSet.
#if arch(x86_64)
import YOLOKernels
import CHints

/// Private to this target: keeps its specializations of the generic kernels apart from every other
/// target's (distinct symbol names, so the linker never merges copies built for different CPUs).
enum AVX2Tag: GemmISA, WinogradISA {
    typealias Vector = SIMD8<Float>
    static var fusedMultiplyAdd: Bool { true }
    @inline(__always) static func prefetch(_ p: UnsafeRawPointer) { yolo_prefetch(p) }
}

public enum KernelsAVX2 {
    /// GEMM tiles of 4 x 24 (4 x 3 ymm accumulators); Winograd and direct convolution 8 lanes wide.
    public static var kernelSet: KernelSet {
        .make(name: "avx2", requires: [.avx2], gemm: GemmKernel4x3<SIMD8<Float>, AVX2Tag>.self,
              kc: 256, nc: 504, winograd: AVX2Tag.self, direct: SIMD8<Float>.self, AVX2Tag.self)
    }
}
#endif
