// AVX2+FMA level: built with -target-cpu haswell (Package.swift), 4 x 24 tiles in ymm registers.
#if arch(x86_64)
import YOLOKernels
import CHints

/// Private to this target: keeps its specializations of the generic kernels apart from every
/// other target's (distinct symbol names, so the linker never merges copies built for different CPUs).
enum GemmAVX2Tag: GemmISA {
    static var fusedMultiplyAdd: Bool { true }
    @inline(__always) static func prefetch(_ p: UnsafeRawPointer) { yolo_prefetch(p) }
}

typealias GemmAVX2Kernel = GemmKernel4x3<SIMD8<Float>, GemmAVX2Tag>

/// The packed GEMM of this level (see PackedGemm in YOLOKernels): C = A · B, row-major,
/// A packed once by `packA`, B packed per call into `scratch`.
public enum GemmAVX2 {
    public static var mr: Int { GemmAVX2Kernel.mr }
    public static var nr: Int { GemmAVX2Kernel.nr }
    /// SIMD width W in floats (NR is a multiple).
    public static var width: Int { GemmAVX2Kernel.Vector.scalarCount }
    public static var kc: Int { 256 }
    public static var nc: Int { 504 }

    public static func packedASize(m: Int, k: Int) -> Int {
        PackedGemm<GemmAVX2Kernel>.packedASize(m: m, k: k)
    }

    public static func packA(_ a: UnsafePointer<Float>, lda: Int, m: Int, k: Int, into p: UnsafeMutablePointer<Float>) {
        PackedGemm<GemmAVX2Kernel>.packA(a, lda: lda, m: m, k: k, kc: kc, into: p)
    }

    public static func scratchSize(m: Int, n: Int, k: Int) -> Int {
        PackedGemm<GemmAVX2Kernel>.scratchSize(m: m, n: n, k: k, kc: kc, nc: nc)
    }

    public static func gemm(m: Int, n: Int, k: Int, packedA: UnsafePointer<Float>, b: UnsafePointer<Float>, ldb: Int,
                            c: UnsafeMutablePointer<Float>, ldc: Int, scratch: UnsafeMutablePointer<Float>,
                            rows: Range<Int>) {
        PackedGemm<GemmAVX2Kernel>.gemm(m: m, n: n, k: k, packedA: packedA, b: b, ldb: ldb, c: c, ldc: ldc,
                                    scratch: scratch, kc: kc, nc: nc, rowStart: rows.lowerBound, rowEnd: rows.upperBound)
    }
}
#endif
