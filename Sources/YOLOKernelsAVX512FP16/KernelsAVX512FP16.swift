// The FP16 GEMM for CPUs with AVX-512 FP16 (vfmadd231ph: 32 half-precision multiply-adds a zmm
// instruction, at the rate of vfmadd231ps's 16: twice FP32's products; Sapphire Rapids, Emerald
// Rapids and later Xeons), built with -target-cpu sapphirerapids (Package.swift). The same GEMM
// as ARM's fmla .8h (FP16Gemm.swift: FP16 products and sums within blocks of 128 steps of k,
// FP32 across them), on zmm vectors of 32 halves through intrinsics (CDot: x86 does not vectorize
// Swift's Float16 SIMD). Not a kernel level of its own: the engine adds it to the avx512vnni
// level's set (KernelLevel.swift) and offers it only where the CPU has AVX-512 FP16.
#if arch(x86_64)
import YOLOKernels
import CHints
import CDot

/// Private to this target (distinct specializations, see KernelsAVX512VNNI.swift).
enum FP16Tag: FP16ISA {
    typealias Halves = SIMD32<Float16>
    /// A's 8 rows of a step stay in memory: each is broadcast for the 3 multiply-adds of its row.
    typealias Rows = UnsafePointer<Float16>
    @inline(__always) static func prefetch(_ p: UnsafeRawPointer) { yolo_prefetch(p) }
    @inline(__always) static func rows(_ p: UnsafePointer<Float16>) -> UnsafePointer<Float16> { p }
    @inline(__always) static func fma(_ c: SIMD32<Float16>, _ b: SIMD32<Float16>, _ rows: UnsafePointer<Float16>, _ r: Int) -> SIMD32<Float16> {
        yolo_fmadd_ph_512(c, b, rows + r)
    }
    @inline(__always) static func halves(_ p: UnsafePointer<Float>) -> SIMD32<Float16> { yolo_halves_512(p) }
    @inline(__always) static func max(_ a: SIMD32<Float16>, _ b: SIMD32<Float16>) -> SIMD32<Float16> { yolo_max_ph_512(a, b) }
    /// Packed A's and the direct convolution's weights in pairs, broadcast by vpbroadcastd (a load)
    /// instead of vpbroadcastw (a load and a port-5 shuffle, the port of half the multiply-adds: a
    /// shuffle per 2 or 3 of them): faster on the direct conv and the 1x1 GEMMs, at twice the
    /// memory of FP16 weights (docs/performance.md, "Figures from code comments").
    static var weightCopies: Int { 2 }
    @inline(__always) static func weightFMA(_ c: SIMD32<Float16>, _ b: SIMD32<Float16>, _ rows: UnsafePointer<Float16>, _ r: Int) -> SIMD32<Float16> {
        yolo_fmadd_ph_512_pair(c, b, rows + 2 * r)
    }
    @inline(__always) static func store(_ h: SIMD32<Float16>, _ p: UnsafeMutablePointer<Float>, accumulate: Bool) {
        yolo_store_halves_512(h, p, accumulate ? 1 : 0)
    }
}

public enum KernelsAVX512FP16 {
    /// Tiles of 8 x 96 FP16 sums (8 x 3 zmm accumulators), blocks of 128 steps of k (as ARM's, so
    /// the sums round alike) x 480 columns. Requires what -target-cpu sapphirerapids may use of
    /// the CPU here: the VNNI level's features + AVX-512 BF16 + AVX-512 FP16.
    public static var fp16: HalfKernels? {
        HalfKernels.makeFP16(level: "avx512fp16", dot: "vfmadd231ph", requires: [.avx2, .avx512, .avx512VNNI, .avx512BF16, .avx512FP16],
                             FP16Tag.self, kc: 128, nc: 480)
    }
}
#endif
