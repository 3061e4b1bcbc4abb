// The AVX-512 level (F/CD/BW/DQ/VL), built with -target-cpu skylake-avx512 (Package.swift): the
// generic kernels of YOLOKernels specialized for zmm registers, as one KernelSet.
#if arch(x86_64)
import YOLOKernels
import CHints
import CDot

/// Private to this target: keeps its specializations of the generic kernels apart from every other
/// target's (distinct symbol names, so the linker never merges copies built for different CPUs).
enum AVX512Tag: GemmISA, WinogradISA {
    typealias Vector = SIMD16<Float>
    @inline(__always) static func poolMax(_ x: SIMD16<Float>, _ y: SIMD16<Float>) -> SIMD16<Float> { yolo_swift_max_512(x, y) }
    static var fusedMultiplyAdd: Bool { true }
    @inline(__always) static func prefetch(_ p: UnsafeRawPointer) { yolo_prefetch(p) }
    static var vectorRegisters: Int { 32 }
}

/// INT8 dots from vpmaddwd (16-bit halves: exact, see Int8MaddDot).
extension AVX512Tag: Int16MultiplyAdd {
    typealias Acc = SIMD16<Int32>
    typealias Floats = SIMD16<Float>
    @inline(__always) static func floats(_ v: SIMD16<Int32>) -> SIMD16<Float> { yolo_float_512(v) }
    @inline(__always) static func quantize(_ p: UnsafePointer<Float>, inverseScale: Float, zeroPoint: Float) -> SIMD16<Int32> {
        yolo_quantize_512(p, inverseScale, zeroPoint)
    }
    @inline(__always) static func multiplyAdd16(_ a: SIMD16<Int32>, _ b: SIMD16<Int32>) -> SIMD16<Int32> { yolo_madd16_512(a, b) }
    static var partialLanes: Bool { true }
    @inline(__always) static func loadLanes(_ p: UnsafeRawPointer, count: Int) -> SIMD16<Int32> {
        yolo_load_partial_512(p, Int32(count))
    }
    @inline(__always) static func storeLanes(_ v: SIMD16<Int32>, _ p: UnsafeMutableRawPointer, count: Int) {
        yolo_store_partial_512(p, v, Int32(count))
    }
}

public enum KernelsAVX512 {
    /// GEMM tiles of 8 x 48 (8 x 3 zmm accumulators); Winograd and direct convolution 16 lanes wide.
    public static var kernelSet: KernelSet {
        .make(name: "avx512", requires: [.avx2, .avx512], gemm: GemmKernel8x3<SIMD16<Float>, AVX512Tag>.self,
              kc: 256, nc: 480, winograd: AVX512Tag.self, direct: SIMD16<Float>.self, AVX512Tag.self)
            .adding(int8: .make(dot: "vpmaddwd", kernel: Int8Kernel4x2<Int8MaddDot<AVX512Tag>>.self, kc: 256, nc: 512))
            .adding(int16Pairs: .make(dot: "vpmaddwd", kernel: Int8Kernel8x3<Int16PairDot<AVX512Tag>>.self, kc: 64, nc: 512).preferringPointwise())
    }
}
#endif
