import XCTest
@testable @_spi(Kernels) import YOLOEngine
@testable import YOLOCore
import YOLOKernels
import YOLOReference

/// The BF16 GEMM (vdpbf16ps): `GemmKernelTests`' tail, stride, row-range and shape tests run it too
/// (`levels` includes it where this CPU has AVX-512 BF16; the reference rounds both inputs with
/// `bfloat16Rounded` and sums their exact products, within the FP32 GEMM's bound). Here: the
/// portable rounding model, that the instruction rounds B exactly as it, and which CPUs get it.
extension GemmKernelTests {
    /// The BF16 GEMMs this CPU runs (none without AVX-512 BF16).
    var bf16Levels: [GemmFunctions] { KernelLevel.supported.compactMap { $0.bf16Kernels?.gemm } }

    /// Skips (with the reason) on a CPU without AVX-512 BF16.
    func requireBF16() throws -> GemmFunctions {
        guard let kern = bf16Levels.first else {
            throw XCTSkip("this CPU has no AVX-512 BF16 (avx512_bf16): the BF16 GEMM cannot run here and is not tested")
        }
        return kern
    }

    /// Round to nearest even at bit 16, NaN kept (quiet), denormals as zeros, overflow to infinity.
    func testBF16RoundingModel() {
        let cases: [(UInt32, UInt16)] = [
            (0x3F80_0000, 0x3F80),          // 1
            (0x3F80_8000, 0x3F80),          // 1 + 2^-8: a tie, to the even 1
            (0x3F81_8000, 0x3F82),          // a tie from an odd bfloat16: up
            (0x3F80_8001, 0x3F81),          // just past the tie: up
            (0x3F80_7FFF, 0x3F80),          // just below: down
            (0xBF80_8001, 0xBF81),          // negative: by magnitude
            (0x7F7F_FFFF, 0x7F80),          // the largest float: infinity
            (0x7F80_0000, 0x7F80), (0xFF80_0000, 0xFF80),   // infinities
            (0x7F80_0001, 0x7FC0),          // a signalling NaN: quiet
            (0xFFC1_2345, 0xFFC1),          // a quiet NaN keeps its upper bits
            (0x0000_0001, 0x0000), (0x807F_FFFF, 0x8000),   // denormals: zeros of their sign
            (0x0080_0000, 0x0080),          // the smallest normal stays
            (0x0000_0000, 0x0000), (0x8000_0000, 0x8000),
        ]
        for (x, want) in cases {
            XCTAssertEqual(bfloat16Bits(Float(bitPattern: x)), want, String(format: "bfloat16 of 0x%08X", x))
        }
        XCTAssertEqual(bfloat16Rounded(1.5), 1.5)
        XCTAssertEqual(bfloat16Rounded(Float(bitPattern: 0x3F81_8000)), Float(bitPattern: 0x3F82_0000))
    }

    /// B through the GEMM with A = 1 (k = 1: C = 1 · bfloat16(B), exact): vcvtne2ps2bf16 rounds every
    /// value as the model does (random bit patterns, ties, NaN, infinities, denormals), in full
    /// vectors and in the partial one at the end of a row.
    func testBF16InstructionRoundsAsTheModel() throws {
        let kern = try requireBF16()
        var rng = SeededRandom(seed: 7)
        var b: [Float] = [1, -1, 0, Float(bitPattern: 0x3F80_8000), Float(bitPattern: 0x3F81_8000), Float(bitPattern: 0x7F7F_FFFF),
                          .infinity, -.infinity, .nan, Float(bitPattern: 0x0000_0001), Float(bitPattern: 0x807F_FFFF),
                          Float(bitPattern: 0x0080_0000)]
        while b.count < 16 * 40 + 11 {
            // Random exponents within 2^-60 ... 2^60 (finite, normal), random mantissas, half of them ties.
            let mantissa = UInt32(truncatingIfNeeded: rng.next()) & 0x007F_FFFF
            let exponent = UInt32(67 + rng.int(below: 120)) << 23, sign = UInt32(rng.int(below: 2)) << 31
            b.append(Float(bitPattern: sign | exponent | (b.count % 2 == 0 ? mantissa & ~0xFFFF | 0x8000 : mantissa)))
        }
        let n = b.count
        var packed = [Float](repeating: .nan, count: kern.packedASize(m: 1, k: 1))
        kern.packA([1], lda: 1, m: 1, k: 1, into: &packed)
        var c = [Float](repeating: .nan, count: n), scratch = [Float](repeating: .nan, count: kern.scratchSize(m: 1, n: n, k: 1))
        kern.gemm(m: 1, n: n, k: 1, packedA: packed, b: b, ldb: n, c: &c, ldc: n, scratch: &scratch)
        var bad = 0
        for j in 0..<n {
            let want = bfloat16Rounded(b[j])
            let same = want.isNaN ? c[j].isNaN : want == 0 ? c[j] == 0 : c[j].bitPattern == want.bitPattern
            if !same {
                bad += 1
                if bad <= 3 { XCTFail(String(format: "B = 0x%08X: C = 0x%08X, the model says 0x%08X", b[j].bitPattern, c[j].bitPattern, want.bitPattern)) }
            }
        }
        XCTAssertEqual(bad, 0, "\(bad) of \(n) values rounded unlike the model")
    }

    /// The BF16 GEMM is offered exactly where the CPU has AVX-512 BF16 (as /proc/cpuinfo says), and
    /// only with the avx512vnni and amx levels' sets.
    func testBF16OfferedExactlyWithTheFeature() throws {
        #if !compiler(>=6.1)
        throw XCTSkip("built by Swift 6.0, whose compiler crashes on the BF16 kernels: this build has none (KernelsAVX512BF16.swift)")
        #endif
        #if arch(x86_64)
        let has = HostCPU.features.contains(.avx512BF16)
        XCTAssertEqual(!bf16Levels.isEmpty, has && KernelLevel.supported.contains(.avx512VNNI))
        for level in KernelLevel.allCases where level != .avx512VNNI && level != .amx {
            XCTAssertNil(level.kernelSet?.bf16, "\(level) has BF16 kernels")
        }
        if !has { throw XCTSkip("this CPU has no AVX-512 BF16 (avx512_bf16): checked that no BF16 GEMM is offered") }
        #else
        XCTAssertTrue(bf16Levels.isEmpty)
        #endif
    }

    /// `precision bf16`'s check with the CPU features faked: a CPU without AVX-512 BF16 and a level
    /// without BF16 kernels each get their one-line reason; a CPU with it gets the kernels.
    func testBF16NeedsTheFeature() throws {
        #if !compiler(>=6.1)
        throw XCTSkip("built by Swift 6.0, whose compiler crashes on the BF16 kernels: this build has none (KernelsAVX512BF16.swift)")
        #endif
        #if arch(x86_64)
        let vnni = try XCTUnwrap(KernelRegistry.all.first { $0.name == "avx512vnni" })
        let avx2 = try XCTUnwrap(KernelRegistry.all.first { $0.name == "avx2" })
        let all: CPUFeatureSet = [.avx2, .avx512, .avx512VNNI, .avx512BF16]
        XCTAssertEqual(try vnni.bf16ForPrecision(on: all).dot, "vdpbf16ps")
        XCTAssertNil(vnni.half(.bf16, on: [.avx2, .avx512, .avx512VNNI]))
        XCTAssertEqual(vnni.bf16?.requires, [.avx2, .avx512, .avx512VNNI, .avx512BF16], "what -target-cpu cooperlake may use")
        XCTAssertThrowsError(try vnni.bf16ForPrecision(on: [.avx2, .avx512, .avx512VNNI])) { e in
            XCTAssertTrue("\(e)".contains("needs a CPU with AVX-512 BF16 (avx512_bf16"), "\(e)")
            XCTAssertFalse("\(e)".contains("\n"))
        }
        XCTAssertThrowsError(try avx2.bf16ForPrecision(on: all)) { e in
            XCTAssertTrue("\(e)".contains("kernel level avx2 has no BF16 kernels (avx512vnni, amx have them"), "\(e)")
        }
        #endif
    }
}
