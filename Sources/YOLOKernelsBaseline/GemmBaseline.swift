// Baseline level, compiled for the target's default CPU: SSE2 on x86-64 (4 x 12 tiles in xmm registers),
// NEON on arm64 (8 x 12 tiles in 32 q registers).
import YOLOKernels
import CHints

/// Private to this target: keeps its specializations of the generic kernels apart from every
/// other target's (distinct symbol names, so the linker never merges copies built for different CPUs).
enum GemmBaselineTag: GemmISA {
    #if arch(arm64) || arch(aarch64)
    static var fusedMultiplyAdd: Bool { true }    // NEON fmla
    #else
    static var fusedMultiplyAdd: Bool { false }   // x86-64 baseline has no FMA
    #endif
    @inline(__always) static func prefetch(_ p: UnsafeRawPointer) { yolo_prefetch(p) }
}

#if arch(arm64) || arch(aarch64)
typealias GemmBaselineKernel = GemmKernel8x3<SIMD4<Float>, GemmBaselineTag>
#else
typealias GemmBaselineKernel = GemmKernel4x3<SIMD4<Float>, GemmBaselineTag>
#endif

/// The packed GEMM of this level (see PackedGemm in YOLOKernels): C = A · B, row-major,
/// A packed once by `packA`, B packed per call into `scratch`.
public enum GemmBaseline {
    public static var mr: Int { GemmBaselineKernel.mr }
    public static var nr: Int { GemmBaselineKernel.nr }
    /// SIMD width W in floats (NR is a multiple).
    public static var width: Int { GemmBaselineKernel.Vector.scalarCount }
    public static var kc: Int { 256 }
    public static var nc: Int { 504 }

    public static func packedASize(m: Int, k: Int) -> Int {
        PackedGemm<GemmBaselineKernel>.packedASize(m: m, k: k)
    }

    public static func packA(_ a: UnsafePointer<Float>, lda: Int, m: Int, k: Int, into p: UnsafeMutablePointer<Float>) {
        PackedGemm<GemmBaselineKernel>.packA(a, lda: lda, m: m, k: k, kc: kc, into: p)
    }

    public static func scratchSize(m: Int, n: Int, k: Int) -> Int {
        PackedGemm<GemmBaselineKernel>.scratchSize(m: m, n: n, k: k, kc: kc, nc: nc)
    }

    public static func gemm(m: Int, n: Int, k: Int, packedA: UnsafePointer<Float>, b: UnsafePointer<Float>, ldb: Int,
                            c: UnsafeMutablePointer<Float>, ldc: Int, scratch: UnsafeMutablePointer<Float>,
                            rows: Range<Int>) {
        PackedGemm<GemmBaselineKernel>.gemm(m: m, n: n, k: k, packedA: packedA, b: b, ldb: ldb, c: c, ldc: ldc,
                                    scratch: scratch, kc: kc, nc: nc, rowStart: rows.lowerBound, rowEnd: rows.upperBound)
    }
}
