// The baseline level, compiled for the target's default CPU: SSE2 on x86-64 (GEMM tiles of 4 x 12
// in xmm registers, no FMA), NEON on arm64 (the "neon" level: 8 x 12 tiles in 32 q registers,
// fmla). The generic kernels of YOLOKernels specialized for 4-lane vectors, as one KernelSet.
import YOLOKernels
import CHints

/// Private to this target: keeps its specializations of the generic kernels apart from every other
/// target's (distinct symbol names, so the linker never merges copies built for different CPUs).
enum BaselineTag: GemmISA, WinogradISA {
    typealias Vector = SIMD4<Float>
    #if arch(arm64) || arch(aarch64)
    static var fusedMultiplyAdd: Bool { true }    // NEON fmla
    #else
    static var fusedMultiplyAdd: Bool { false }   // x86-64 baseline has no FMA
    #endif
    @inline(__always) static func prefetch(_ p: UnsafeRawPointer) { yolo_prefetch(p) }
}

public enum KernelsBaseline {
    #if arch(arm64) || arch(aarch64)
    public static var kernelSet: KernelSet {
        .make(name: "neon", requires: [], gemm: GemmKernel8x3<SIMD4<Float>, BaselineTag>.self,
              kc: 256, nc: 504, winograd: BaselineTag.self, direct: SIMD4<Float>.self, BaselineTag.self)
    }
    #else
    public static var kernelSet: KernelSet {
        .make(name: "baseline", requires: [], gemm: GemmKernel4x3<SIMD4<Float>, BaselineTag>.self,
              kc: 256, nc: 504, winograd: BaselineTag.self, direct: SIMD4<Float>.self, BaselineTag.self)
    }
    #endif
}
