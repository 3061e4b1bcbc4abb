// The AVX2 + FMA level, built with -target-cpu haswell (Package.swift): the generic kernels of
// YOLOKernels specialized for ymm registers, as one KernelSet.
#if arch(x86_64)
import YOLOKernels
import CHints
import CDot

/// Private to this target: keeps its specializations of the generic kernels apart from every other
/// target's (distinct symbol names, so the linker never merges copies built for different CPUs).
enum AVX2Tag: GemmISA, WinogradISA {
    typealias Vector = SIMD8<Float>
    @inline(__always) static func poolMax(_ x: SIMD8<Float>, _ y: SIMD8<Float>) -> SIMD8<Float> { yolo_swift_max_256(x, y) }
    static var fusedMultiplyAdd: Bool { true }
    @inline(__always) static func prefetch(_ p: UnsafeRawPointer) { yolo_prefetch(p) }
}

/// INT8 dots from vpmaddwd (16-bit halves: exact, see Int8MaddDot).
extension AVX2Tag: Int16MultiplyAdd {
    typealias Acc = SIMD8<Int32>
    typealias Floats = SIMD8<Float>
    @inline(__always) static func floats(_ v: SIMD8<Int32>) -> SIMD8<Float> { yolo_float_256(v) }
    @inline(__always) static func quantize(_ p: UnsafePointer<Float>, inverseScale: Float, zeroPoint: Float) -> SIMD8<Int32> {
        yolo_quantize_256(p, inverseScale, zeroPoint)
    }
    @inline(__always) static func multiplyAdd16(_ a: SIMD8<Int32>, _ b: SIMD8<Int32>) -> SIMD8<Int32> { yolo_madd16_256(a, b) }
    static var partialLanes: Bool { true }
    @inline(__always) static func loadLanes(_ p: UnsafeRawPointer, count: Int) -> SIMD8<Int32> {
        yolo_load_partial_256(p, Int32(count))
    }
    @inline(__always) static func storeLanes(_ v: SIMD8<Int32>, _ p: UnsafeMutableRawPointer, count: Int) {
        yolo_store_partial_256(p, v, Int32(count))
    }
}

/// FP16 arithmetic in software (F16C conversions around FP32 arithmetic, each result rounded to
/// FP16): a model of the ARM FP16 GEMM, for tests on x86 only.
extension AVX2Tag: FP16ISA {}

public enum KernelsAVX2 {
    /// GEMM tiles of 4 x 24 (4 x 3 ymm accumulators); Winograd and direct convolution 8 lanes wide.
    public static var kernelSet: KernelSet {
        .make(name: "avx2", requires: [.avx2], gemm: GemmKernel4x3<SIMD8<Float>, AVX2Tag>.self,
              kc: 256, nc: 504, winograd: AVX2Tag.self, direct: SIMD8<Float>.self, AVX2Tag.self)
            .adding(int8: .make(dot: "vpmaddwd", kernel: Int8Kernel4x2<Int8MaddDot<AVX2Tag>>.self, kc: 256, nc: 512))
            .adding(int16Pairs: .make(dot: "vpmaddwd", kernel: Int16PairKernel6x2<Int16PairDot<AVX2Tag>>.self, kc: 64, nc: 512).preferringPointwise())
            .adding(fp16: fp16Model)
    }

    /// The FP16 GEMM of the ARM dotprod level (same blocks of k), its arithmetic modelled in
    /// software: never offered (it requires FP16 arithmetic, which no x86 CPU reports), so that
    /// the tests on x86 run the FP16 GEMM's driver, packing and tails, and the FP16 plans.
    static var fp16Model: HalfKernels {
        .makeFP16(level: "avx2-fp16-model", requires: [.avx2, .fp16], AVX2Tag.self, kc: 128, nc: 504)
    }
}
#endif
