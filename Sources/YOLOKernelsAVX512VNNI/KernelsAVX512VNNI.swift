// The AVX-512 VNNI level (AVX-512 F/CD/BW/DQ/VL + VNNI: Cascade Lake, Ice Lake and later, Zen 4
// and later), built with -target-cpu cascadelake (Package.swift): the FP32 kernels as the avx512
// level has them, and INT8 GEMMs whose dot product is vpdpbusd (64 u8 x s8 products a
// zmm instruction) and, for INT8 Winograd's 16-bit pairs, vpdpwssd, as one KernelSet.
#if arch(x86_64)
import YOLOKernels
import CHints
import CDot

/// Private to this target: keeps its specializations of the generic kernels apart from every other
/// target's (distinct symbol names, so the linker never merges copies built for different CPUs).
enum VNNITag: GemmISA, WinogradISA, Int8DotISA {
    typealias Vector = SIMD16<Float>
    @inline(__always) static func poolMax(_ x: SIMD16<Float>, _ y: SIMD16<Float>) -> SIMD16<Float> { yolo_swift_max_512(x, y) }
    static var fusedMultiplyAdd: Bool { true }
    @inline(__always) static func prefetch(_ p: UnsafeRawPointer) { yolo_prefetch(p) }
    static var vectorRegisters: Int { 32 }

    typealias Acc = SIMD16<Int32>
    typealias Floats = SIMD16<Float>
    typealias BOperand = SIMD16<Int32>
    typealias AOperand = SIMD16<Int32>
    static var aBytes: Int { 4 }
    @inline(__always) static func packA(_ w0: Int8, _ w1: Int8, _ w2: Int8, _ w3: Int8, into p: UnsafeMutableRawPointer) {
        p.storeBytes(of: (w0, w1, w2, w3), as: (Int8, Int8, Int8, Int8).self)
    }
    @inline(__always) static func loadB(_ p: UnsafeRawPointer) -> SIMD16<Int32> { p.loadUnaligned(as: SIMD16<Int32>.self) }
    @inline(__always) static func loadA(_ p: UnsafeRawPointer) -> SIMD16<Int32> {
        SIMD16<Int32>(repeating: p.loadUnaligned(as: Int32.self))
    }
    @inline(__always) static func dot(_ acc: SIMD16<Int32>, _ b: SIMD16<Int32>, _ a: SIMD16<Int32>) -> SIMD16<Int32> {
        yolo_dpbusd_512(acc, b, a)
    }
    @inline(__always) static func floats(_ v: SIMD16<Int32>) -> SIMD16<Float> { yolo_float_512(v) }
    @inline(__always) static func quantize(_ p: UnsafePointer<Float>, inverseScale: Float, zeroPoint: Float) -> SIMD16<Int32> {
        yolo_quantize_512(p, inverseScale, zeroPoint)
    }
    static var partialLanes: Bool { true }
    @inline(__always) static func loadLanes(_ p: UnsafeRawPointer, count: Int) -> SIMD16<Int32> {
        yolo_load_partial_512(p, Int32(count))
    }
    @inline(__always) static func storeLanes(_ v: SIMD16<Int32>, _ p: UnsafeMutableRawPointer, count: Int) {
        yolo_store_partial_512(p, v, Int32(count))
    }
    static var partialVectors: Bool { true }
    @inline(__always) static func loadPartial(_ p: UnsafeRawPointer, count: Int) -> SIMD16<Int32> { loadLanes(p, count: count) }
    @inline(__always) static func storePartial(_ v: SIMD16<Int32>, _ p: UnsafeMutableRawPointer, count: Int) {
        storeLanes(v, p, count: count)
    }
}

/// The 16-bit pair GEMM of INT8 Winograd (`Int16PairDot<VNNITag>`) with vpdpwssd: one instruction
/// where the level below has two (vpmaddwd + vpaddd), the same exact sums.
extension VNNITag: Int16MultiplyAdd {
    @inline(__always) static func multiplyAdd16(_ a: SIMD16<Int32>, _ b: SIMD16<Int32>) -> SIMD16<Int32> { yolo_madd16_512(a, b) }
    @inline(__always) static func multiplyAccumulate16(_ acc: SIMD16<Int32>, _ a: SIMD16<Int32>, _ b: SIMD16<Int32>) -> SIMD16<Int32> {
        yolo_dpwssd_512(acc, a, b)
    }
}

public enum KernelsAVX512VNNI {
    /// FP32: GEMM tiles of 8 x 48, Winograd and direct convolution 16 lanes wide (as avx512).
    /// INT8: tiles of 8 x 48 int32 sums (8 x 3 zmm accumulators), 4 steps of k per vpdpbusd; INT8
    /// Winograd's 16-bit pairs the same tiles, 2 steps per vpdpwssd.
    public static var kernelSet: KernelSet {
        KernelSet.make(name: "avx512vnni", requires: [.avx2, .avx512, .avx512VNNI], gemm: GemmKernel8x3<SIMD16<Float>, VNNITag>.self,
                       kc: 256, nc: 480, winograd: VNNITag.self, direct: SIMD16<Float>.self, VNNITag.self)
            .adding(int8: Int8Functions.make(dot: "vpdpbusd", kernel: Int8Kernel8x3<VNNITag>.self, kc: 256, nc: 480)
                .preferringTenBit(over: .fp32))
            .adding(int16Pairs: .make(dot: "vpdpwssd", kernel: Int8Kernel8x3<Int16PairDot<VNNITag>>.self, kc: 64, nc: 512).preferringPointwise())
            .adding(int16Direct: .make(Int16PairDot<VNNITag>.self, filters: 8, dot: "vpdpwssd", preferred: true))
    }
}
#endif
