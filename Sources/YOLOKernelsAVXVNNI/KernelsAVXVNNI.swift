// The AVX-VNNI level (AVX2 + FMA + the VEX-encoded vpdpbusd and vpdpwssd on ymm registers: Alder
// Lake and later client cores, the N100's and Sierra Forest's Gracemont/Crestmont cores, Zen 5),
// built with -target-cpu alderlake (Package.swift): the FP32 kernels as the avx2 level has them,
// INT8 GEMMs whose dot product is vpdpbusd (32 u8 x s8 products a ymm instruction, where avx2
// needs four vpmaddwd + adds for them) and INT8 Winograd's 16-bit pair GEMM with vpdpwssd, as one
// KernelSet. A CPU with AVX-512 VNNI too runs the avx512vnni level; this one can be forced there
// (YOLO_KERNEL_LEVEL=avxvnni), which is how its kernels are tested on such a CPU.
#if arch(x86_64)
import YOLOKernels
import CHints
import CDot

/// Private to this target: keeps its specializations of the generic kernels apart from every other
/// target's (distinct symbol names, so the linker never merges copies built for different CPUs).
enum AVXVNNITag: GemmISA, WinogradISA, Int8DotISA {
    typealias Vector = SIMD8<Float>
    @inline(__always) static func poolMax(_ x: SIMD8<Float>, _ y: SIMD8<Float>) -> SIMD8<Float> { yolo_swift_max_256(x, y) }
    static var fusedMultiplyAdd: Bool { true }
    @inline(__always) static func prefetch(_ p: UnsafeRawPointer) { yolo_prefetch(p) }

    typealias Acc = SIMD8<Int32>
    typealias Floats = SIMD8<Float>
    typealias BOperand = SIMD8<Int32>
    typealias AOperand = SIMD8<Int32>
    static var aBytes: Int { 4 }
    @inline(__always) static func packA(_ w0: Int8, _ w1: Int8, _ w2: Int8, _ w3: Int8, into p: UnsafeMutableRawPointer) {
        p.storeBytes(of: (w0, w1, w2, w3), as: (Int8, Int8, Int8, Int8).self)
    }
    @inline(__always) static func loadB(_ p: UnsafeRawPointer) -> SIMD8<Int32> { p.loadUnaligned(as: SIMD8<Int32>.self) }
    @inline(__always) static func loadA(_ p: UnsafeRawPointer) -> SIMD8<Int32> {
        SIMD8<Int32>(repeating: p.loadUnaligned(as: Int32.self))
    }
    @inline(__always) static func dot(_ acc: SIMD8<Int32>, _ b: SIMD8<Int32>, _ a: SIMD8<Int32>) -> SIMD8<Int32> {
        yolo_dpbusd_256(acc, b, a)
    }
    @inline(__always) static func floats(_ v: SIMD8<Int32>) -> SIMD8<Float> { yolo_float_256(v) }
    @inline(__always) static func quantize(_ p: UnsafePointer<Float>, inverseScale: Float, zeroPoint: Float) -> SIMD8<Int32> {
        yolo_quantize_256(p, inverseScale, zeroPoint)
    }
}

/// The 16-bit pair GEMM of INT8 Winograd (`Int16PairDot<AVXVNNITag>`) with vpdpwssd: one instruction
/// where the level below has two (vpmaddwd + vpaddd), the same exact sums.
extension AVXVNNITag: Int16MultiplyAdd {
    @inline(__always) static func multiplyAdd16(_ a: SIMD8<Int32>, _ b: SIMD8<Int32>) -> SIMD8<Int32> { yolo_madd16_256(a, b) }
    @inline(__always) static func multiplyAccumulate16(_ acc: SIMD8<Int32>, _ a: SIMD8<Int32>, _ b: SIMD8<Int32>) -> SIMD8<Int32> {
        yolo_dpwssd_256(acc, a, b)
    }
}

public enum KernelsAVXVNNI {
    /// FP32: as avx2 (GEMM tiles of 4 x 24, Winograd and direct convolution 8 lanes wide). INT8 and
    /// the pair GEMM: tiles of 6 x 16 int32 sums (12 ymm accumulators + 2 B vectors + 1 broadcast,
    /// 15 of the 16 ymm registers), 4 steps of k per vpdpbusd, 2 per vpdpwssd.
    public static var kernelSet: KernelSet {
        .make(name: "avxvnni", requires: [.avx2, .avxVNNI], gemm: GemmKernel4x3<SIMD8<Float>, AVXVNNITag>.self,
              kc: 256, nc: 504, winograd: AVXVNNITag.self, direct: SIMD8<Float>.self, AVXVNNITag.self)
            .adding(int8: Int8Functions.make(dot: "vpdpbusd", kernel: Int16PairKernel6x2<AVXVNNITag>.self, kc: 256, nc: 512)
                .preferringTenBit(over: .fp32))
            .adding(int16Pairs: .make(dot: "vpdpwssd", kernel: Int16PairKernel6x2<Int16PairDot<AVXVNNITag>>.self, kc: 64, nc: 512).preferringPointwise())
            .adding(int16Direct: .make(Int16PairDot<AVXVNNITag>.self, filters: 4, dot: "vpdpwssd", preferred: true))
    }
}
#endif
