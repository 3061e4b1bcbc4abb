// The baseline level, compiled for the target's default CPU: SSE2 on x86-64 (GEMM tiles of 4 x 12
// in xmm registers, no FMA), NEON on arm64 (the "neon" level: 8 x 12 tiles in 32 q registers,
// fmla). The generic kernels of YOLOKernels specialized for 4-lane vectors, as one KernelSet. Its
// INT8 kernels: on arm64 NEON's widening multiplies (smull, smlal2, sadalp: Int8SignedB.swift; the
// dotprod level has sdot), on x86-64 the portable ones (exact, not fast); its 16-bit pair GEMM on
// arm64 smlal by element (Int16PairLaneKernel.swift).
import YOLOKernels
import CHints
#if arch(arm64) || arch(aarch64)
import CDot
#endif

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
    #if arch(arm64) || arch(aarch64)
    static var vectorRegisters: Int { 32 }        // NEON's q0-q31
    #endif
}

extension BaselineTag: Int8Lanes {
    typealias Acc = SIMD4<Int32>
    typealias Floats = SIMD4<Float>
    @inline(__always) static func floats(_ v: SIMD4<Int32>) -> SIMD4<Float> { SIMD4<Float>(v) }
}

#if arch(arm64) || arch(aarch64)
extension BaselineTag: Int8WideningMultiply {
    @inline(__always)
    static func wideningDot(_ acc: SIMD4<Int32>, _ b: SIMD4<Int32>, _ lo: SIMD4<Int32>, _ hi: SIMD4<Int32>) -> SIMD4<Int32> {
        yolo_smull_dot(acc, b, lo, hi)
    }
}

/// The pair GEMM's smlal by element (CDot).
extension BaselineTag: Int16PairsByLane {
    @inline(__always) static func pairLows(_ x: SIMD4<Int32>, _ y: SIMD4<Int32>) -> SIMD4<Int32> { yolo_pair_lows(x, y) }
    @inline(__always) static func pairHighs(_ x: SIMD4<Int32>, _ y: SIMD4<Int32>) -> SIMD4<Int32> { yolo_pair_highs(x, y) }
    @inline(__always)
    static func pairDot(_ acc: SIMD4<Int32>, lows: SIMD4<Int32>, highs: SIMD4<Int32>, _ a: SIMD4<Int32>,
                        row: Int, upper: Bool) -> SIMD4<Int32> {
        yolo_smlal_pair_lane(acc, lows, highs, a, Int32(row), upper ? 1 : 0)
    }
}
#endif

public enum KernelsBaseline {
    #if arch(arm64) || arch(aarch64)
    public static var kernelSet: KernelSet {
        .make(name: "neon", requires: [], gemm: GemmKernel8x3<SIMD4<Float>, BaselineTag>.self,
              kc: 256, nc: 504, winograd: BaselineTag.self, direct: SIMD4<Float>.self, BaselineTag.self)
            .adding(int8: .make(dot: "smull", kernel: Int8Kernel4x2<Int8WideningDot<BaselineTag>>.self, kc: 256, nc: 512))
            .adding(int16Pairs: .make(dot: "smlal", kernel: Int16PairKernel8x3ByLane<BaselineTag>.self, kc: 64, nc: 504))
            .adding(int16Direct: .make(Int16SplitPairDot<BaselineTag>.self, filters: 8, dot: "smlal", preferred: false))
    }
    #else
    public static var kernelSet: KernelSet {
        .make(name: "baseline", requires: [], gemm: GemmKernel4x3<SIMD4<Float>, BaselineTag>.self,
              kc: 256, nc: 504, winograd: BaselineTag.self, direct: SIMD4<Float>.self, BaselineTag.self)
            .adding(int8: .make(dot: "portable", kernel: Int8Kernel4x2<Int8PortableDot<BaselineTag>>.self, kc: 256, nc: 512))
            .adding(int16Pairs: .make(dot: "portable", kernel: Int8Kernel4x2<Int16PortablePairDot<BaselineTag>>.self, kc: 64, nc: 512))
            .adding(int16Direct: .make(Int16PortablePairDot<BaselineTag>.self, filters: 4, dot: "portable", preferred: false))
    }
    #endif
}
