// The dotprod level (64-bit ARM with the ARMv8.2 dot product: Cortex-A55, A76 / Raspberry Pi 5,
// Neoverse N1 and later), built with -target-cpu cortex-a76 (Package.swift): the FP32 kernels as
// the neon level has them, and INT8 GEMMs whose dot product is sdot (16 s8 x s8 products a q
// register instruction, B's bytes shifted to s8: Int8SignedB.swift), as one KernelSet. Empty on
// other architectures.
#if arch(arm64) || arch(aarch64)
import YOLOKernels
import CHints
import CDot

/// Private to this target: keeps its specializations of the generic kernels apart from every other
/// target's (distinct symbol names, so the linker never merges copies built for different CPUs).
enum DotProdTag: GemmISA, WinogradISA {
    typealias Vector = SIMD4<Float>
    static var fusedMultiplyAdd: Bool { true }
    @inline(__always) static func prefetch(_ p: UnsafeRawPointer) { yolo_prefetch(p) }
    static var vectorRegisters: Int { 32 }
}

/// The INT8 dot: sdot (CDot), plain and by element.
extension DotProdTag: Int8SignedDotByLane {
    @inline(__always) static func floats(_ v: SIMD4<Int32>) -> SIMD4<Float> { SIMD4<Float>(v) }
    @inline(__always) static func signedDot(_ acc: SIMD4<Int32>, _ b: SIMD4<Int32>, _ a: SIMD4<Int32>) -> SIMD4<Int32> {
        yolo_sdot(acc, b, a)
    }
    @inline(__always)
    static func signedDot(_ acc: SIMD4<Int32>, _ b: SIMD4<Int32>, _ a: SIMD4<Int32>, lane: Int) -> SIMD4<Int32> {
        yolo_sdot_lane(acc, b, a, Int32(lane))
    }
}

/// FP16 arithmetic: Swift's Float16 SIMD, which -target-cpu cortex-a76 compiles to fmla .8h.
extension DotProdTag: FP16ISA {}

public enum KernelsDotProd {
    /// FP32: GEMM tiles of 8 x 12 with fmla (as neon). INT8: tiles of 8 x 12 int32 sums (24 q
    /// accumulators), 4 steps of k per sdot, by element (Int8LaneKernel.swift).
    /// Its body is not exported (Swift 6.3's `@export(interface)`): Embedded Swift would otherwise
    /// let a client (scripts/arm-check.sh's programs, built for any ARMv8-A) compile these kernels
    /// itself instead of calling this module's, built for the A76.
    #if compiler(>=6.3)
    public static var kernelSet: KernelSet { @export(interface) get { levelSet } }
    #else
    public static var kernelSet: KernelSet { levelSet }
    #endif

    static var levelSet: KernelSet {
        .make(name: "dotprod", requires: [.dotProduct], gemm: GemmKernel8x3<SIMD4<Float>, DotProdTag>.self,
              kc: 256, nc: 504, winograd: DotProdTag.self, direct: SIMD4<Float>.self, DotProdTag.self)
            // (10-bit inputs, `a10`: two sdot passes, 16 products an instruction, against the pair
            // forms' smlal, 4: Int8TenBit.swift.)
            .adding(int8: Int8Functions.make(dot: "sdot", kernel: Int8Kernel8x3ByLane<DotProdTag>.self, kc: 256, nc: 504)
                .preferringTenBit(over: .pairForms))
            .adding(fp16: fp16)
    }

    /// The FP16 GEMM: 8 x 24 tiles of FP16 sums (24 q accumulators), fmla .8h by element, over
    /// blocks of at most 128 steps of k (then FP32); needs the CPU's FP16 arithmetic (asimdhp:
    /// Cortex-A55, A76 and later; -target-cpu cortex-a76 may use it anywhere in this target).
    static var fp16: HalfKernels {
        .makeFP16(level: "dotprod-fp16", requires: [.dotProduct, .fp16], DotProdTag.self, kc: 128, nc: 504)
    }
}
#endif
