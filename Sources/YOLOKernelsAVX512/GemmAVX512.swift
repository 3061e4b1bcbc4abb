// AVX-512 (F/CD/BW/DQ/VL) level: built with -target-cpu skylake-avx512 (Package.swift), 8 x 48 tiles in zmm registers.
#if arch(x86_64)
import YOLOKernels
import CHints

/// Private to this target: keeps its specializations of the generic kernels apart from every
/// other target's (distinct symbol names, so the linker never merges copies built for different CPUs).
enum GemmAVX512Tag: GemmISA {
    static var fusedMultiplyAdd: Bool { true }
    @inline(__always) static func prefetch(_ p: UnsafeRawPointer) { yolo_prefetch(p) }
}

typealias GemmAVX512Kernel = GemmKernel8x3<SIMD16<Float>, GemmAVX512Tag>

/// The packed GEMM of this level (see PackedGemm in YOLOKernels): C = A · B, row-major,
/// A packed once by `packA`, B packed per call into `scratch`.
public enum GemmAVX512 {
    public static var mr: Int { GemmAVX512Kernel.mr }
    public static var nr: Int { GemmAVX512Kernel.nr }
    /// SIMD width W in floats (NR is a multiple).
    public static var width: Int { GemmAVX512Kernel.Vector.scalarCount }
    public static var kc: Int { 256 }
    public static var nc: Int { 480 }

    public static func packedASize(m: Int, k: Int) -> Int {
        PackedGemm<GemmAVX512Kernel>.packedASize(m: m, k: k)
    }

    public static func packA(_ a: UnsafePointer<Float>, lda: Int, m: Int, k: Int, into p: UnsafeMutablePointer<Float>) {
        PackedGemm<GemmAVX512Kernel>.packA(a, lda: lda, m: m, k: k, kc: kc, into: p)
    }

    public static func scratchSize(m: Int, n: Int, k: Int) -> Int {
        PackedGemm<GemmAVX512Kernel>.scratchSize(m: m, n: n, k: k, kc: kc, nc: nc)
    }

    public static func gemm(m: Int, n: Int, k: Int, packedA: UnsafePointer<Float>, b: UnsafePointer<Float>, ldb: Int,
                            c: UnsafeMutablePointer<Float>, ldc: Int, scratch: UnsafeMutablePointer<Float>,
                            rows: Range<Int>) {
        PackedGemm<GemmAVX512Kernel>.gemm(m: m, n: n, k: k, packedA: packedA, b: b, ldb: ldb, c: c, ldc: ldc,
                                    scratch: scratch, kc: kc, nc: nc, rowStart: rows.lowerBound, rowEnd: rows.upperBound)
    }
}
#endif
