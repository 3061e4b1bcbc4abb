import XCTest
import YOLOReference
@testable @_spi(Kernels) import YOLOEngine
import YOLOKernels

/// Swift models of the NEON instructions the arm64 INT8 levels use, lane by lane as the Arm
/// architecture defines them, so the layouts around them (Int8SignedB.swift: B's bytes shifted to
/// s8, the row corrections folded into comp, the widening dot's deinterleaved B) run here through
/// the real generic driver, against the naive reference. The instructions themselves are checked
/// on aarch64 under qemu (scripts/arm-check.sh, the same shapes in scripts/arm/KernelCheck.swift).
enum SdotModel: Int8SignedDotProduct {
    typealias Acc = SIMD4<Int32>
    typealias Floats = SIMD4<Float>
    static func floats(_ v: SIMD4<Int32>) -> SIMD4<Float> { SIMD4<Float>(v) }
    static func prefetch(_ p: UnsafeRawPointer) {}
    /// sdot: per 32-bit lane, + the 4 products of its s8 bytes.
    static func signedDot(_ acc: SIMD4<Int32>, _ b: SIMD4<Int32>, _ a: SIMD4<Int32>) -> SIMD4<Int32> {
        let (x, y) = (unsafeBitCast(b, to: SIMD16<Int8>.self), unsafeBitCast(a, to: SIMD16<Int8>.self))
        var r = acc
        for j in 0..<4 { for i in 0..<4 { r[j] &+= Int32(x[4 * j + i]) * Int32(y[4 * j + i]) } }
        return r
    }
}

extension SdotModel: Int8SignedDotByLane {
    /// sdot by element: the 4 bytes of lane `lane` of `a` for every lane of `b`.
    static func signedDot(_ acc: SIMD4<Int32>, _ b: SIMD4<Int32>, _ a: SIMD4<Int32>, lane: Int) -> SIMD4<Int32> {
        signedDot(acc, b, SIMD4<Int32>(repeating: a[lane]))
    }
}

enum SmullModel: Int8WideningMultiply {
    typealias Floats = SIMD4<Float>
    static func floats(_ v: SIMD4<Int32>) -> SIMD4<Float> { SIMD4<Float>(v) }
    static func prefetch(_ p: UnsafeRawPointer) {}
    /// smull (low 8 bytes, s8 x s8 -> s16), smlal2 (high 8 bytes, added modulo 2^16 as the
    /// instruction does), sadalp (pairs of s16 lanes into the s32 lanes).
    static func wideningDot(_ acc: SIMD4<Int32>, _ b: SIMD4<Int32>, _ lo: SIMD4<Int32>, _ hi: SIMD4<Int32>) -> SIMD4<Int32> {
        let x = unsafeBitCast(b, to: SIMD16<Int8>.self)
        let (l, h) = (unsafeBitCast(lo, to: SIMD16<Int8>.self), unsafeBitCast(hi, to: SIMD16<Int8>.self))
        var p = SIMD8<Int16>()
        for i in 0..<8 { p[i] = Int16(x[i]) &* Int16(l[i]) &+ Int16(x[8 + i]) &* Int16(h[8 + i]) }
        var r = acc
        for j in 0..<4 { r[j] &+= Int32(p[2 * j]) &+ Int32(p[2 * j + 1]) }
        return r
    }
}

extension Int8KernelTests {
    /// The arm64 levels' INT8 kernels as they are made there (KernelsDotProd, KernelsBaseline),
    /// with the modelled instructions.
    static var armModels: [(String, Int8Functions)] {
        [("sdot model 8x12", .make(dot: "sdot", kernel: Int8Kernel8x3ByLane<SdotModel>.self, kc: 256, nc: 504)),
         ("sdot model, broadcast weights, 4x8", .make(dot: "sdot", kernel: Int8Kernel4x2<Int8SignedDot<SdotModel>>.self, kc: 256, nc: 512)),
         ("smull model 4x8", .make(dot: "smull", kernel: Int8Kernel4x2<Int8WideningDot<SmullModel>>.self, kc: 256, nc: 512))]
    }

    /// Bit for bit with the naive sums over the shapes of `testGemmSumsAreExactAtEveryLevel`
    /// (tails around tiles, k groups, kc and nc blocks; extreme values 2100 deep; row ranges):
    /// the +128 shift is exactly undone by the corrected comp, and the widening dot's 16-bit
    /// pair sums never wrap.
    func testArmINT8LayoutsWithModelledInstructionsAreExact() {
        for (name, kern) in Self.armModels {
            XCTAssertEqual(kern.lanes, 4)
            checkShapes(name, kern)
        }
    }

    /// What packed B and packed A hold for the arm layouts: B's bytes with the top bit flipped
    /// (the widening dot's 16-bit halves deinterleaved per vector), and after A's panels each
    /// row's 128 x weight sum (the padding rows' 0).
    func testArmINT8PackedLayouts() {
        let v = SIMD4<Int32>(Int32(bitPattern: 0x0302_0100), 0x0706_0504, 0x0B0A_0908, 0x0F0E_0D0C)
        XCTAssertEqual(unsafeBitCast(Int8SignedDot<SdotModel>.prepareB(v), to: SIMD16<UInt8>.self),
                       SIMD16<UInt8>((0..<16).map { UInt8($0) ^ 0x80 }))
        XCTAssertEqual(unsafeBitCast(Int8WideningDot<SmullModel>.prepareB(v), to: SIMD16<UInt8>.self),
                       SIMD16<UInt8>([0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15].map { UInt8($0) ^ 0x80 }))
        XCTAssertEqual(Int8SignedDot<SdotModel>.activationShift, 128)
        XCTAssertEqual(Int8PortableDot<SmullModel>.activationShift, 0, "the other levels keep B as it is")
        typealias G = Int8PackedGemm<Int8Kernel8x3<Int8SignedDot<SdotModel>>>
        let (m, k) = (3, 6)
        let a: [Int8] = [1, 2, 3, 4, 5, 6, -127, 0, 0, 0, 0, 1, 127, 127, -1, 0, 0, 0]
        var packed = [UInt8](repeating: 0xEE, count: G.packedASize(m: m, k: k))
        XCTAssertEqual(packed.count, 8 * 2 * 4 + 8 * 4, "8 padded rows x 2 groups x 4 bytes, then 8 corrections")
        a.withUnsafeBufferPointer { pa in packed.withUnsafeMutableBytes { G.packA(pa.baseAddress!, lda: k, m: m, k: k, kc: 256, rows: 0..<m, into: $0.baseAddress!) } }
        let corrections = packed.withUnsafeBytes { p in (0..<8).map { p.loadUnaligned(fromByteOffset: 64 + 4 * $0, as: Int32.self) } }
        XCTAssertEqual(corrections, [Int32(128 * 21), Int32(128 * -126), Int32(128 * 253), 0, 0, 0, 0, 0])
    }
}
