import XCTest
@testable @_spi(Kernels) import YOLOEngine
@testable import YOLOCore
import YOLOKernels
import YOLOReference

/// The FP16 GEMM (FP16Gemm.swift: fmla .8h on 64-bit ARM with FP16 arithmetic; on x86 the avx2
/// level's software model of it and, with AVX-512 FP16, vfmadd231ph): `GemmKernelTests`' tail, stride, row-range and shape tests run it
/// too (`fp16Levels`; the reference rounds both inputs to FP16 and sums their exact products, within
/// the FP16 sums' bound). Here: FP16's rounding and range, and the blocks of k (which CPUs get it:
/// FP16WeightsTests.swift).
extension GemmKernelTests {
    /// The FP16 GEMMs tested here: on ARM the one this CPU runs, on x86 the software model.
    var fp16Levels: [GemmFunctions] {
        #if arch(x86_64)
        // The avx2 level's model (it requires `.fp16`, which no x86 CPU reports) and, where the
        // CPU has AVX-512 FP16, the avx512vnni level's vfmadd231ph GEMM.
        return KernelLevel.supported.compactMap { $0.kernelSet?.fp16 }
            .filter { HostCPU.features.union(.fp16).isSuperset(of: $0.requires) }.map(\.gemm)
        #else
        return KernelLevel.supported.compactMap { $0.fp16Kernels?.gemm }
        #endif
    }

    func requireFP16() throws -> [GemmFunctions] {
        guard !fp16Levels.isEmpty else {
            throw XCTSkip("no FP16 GEMM here (a 64-bit ARM CPU without FP16 arithmetic, or an x86 one without AVX2)")
        }
        return fp16Levels
    }

    /// B through the GEMM with A = 1 (k = 1: C = FP16(B), exact): rounded to nearest even, FP16's
    /// denormals kept, past 65504 infinity, NaN kept; in full vectors and the partial one.
    func testFP16RoundsBToNearestHalf() throws {
        for kern in try requireFP16() {
            var rng = SeededRandom(seed: 11)
            var b: [Float] = [1, -1, 0, 65504, 65520, -65520, 1 + 0x1p-11, 1 + 3 * 0x1p-11, 0x1p-24, 0x1p-25, 0x1.8p-25,
                              .infinity, .nan, 0.1, -3.14159]
            while b.count < 24 * 9 + 5 {
                b.append(Float(bitPattern: UInt32(truncatingIfNeeded: rng.next()) & 0x7FFF_FFFF | (b.count % 2 == 0 ? 0 : 0x8000_0000))
                    * 0x1p-100 * Float(1 << rng.int(below: 30)))
            }
            let n = b.count
            var packed = [Float](repeating: .nan, count: kern.packedASize(m: 1, k: 1))
            kern.packA([1], lda: 1, m: 1, k: 1, into: &packed)
            var c = [Float](repeating: .nan, count: n), scratch = [Float](repeating: .nan, count: kern.scratchSize(m: 1, n: n, k: 1))
            kern.gemm(m: 1, n: n, k: 1, packedA: packed, b: b, ldb: n, c: &c, ldc: n, scratch: &scratch)
            for j in 0..<n {
                let want = fp16Rounded(b[j])
                XCTAssertTrue(want.isNaN ? c[j].isNaN : c[j] == want, "\(kern.level): B = \(b[j]): C = \(c[j]), FP16 says \(want)")
            }
            XCTAssertEqual(fp16Rounded(65520), .infinity)
            XCTAssertEqual(fp16Rounded(1 + 0x1p-11), 1, "a tie, to the even 1")
            XCTAssertEqual(fp16Rounded(1 + 3 * 0x1p-11), 1 + 0x1p-9, "a tie from an odd half: up")
        }
    }

    /// Sums are FP16 within a block of k (at most kc steps) and FP32 across blocks. Row 0 of A:
    /// 1024 at the first block's first step, 0.25 at each other block's, 2^-14 elsewhere; B ones.
    /// In FP16 each 2^-14 is under half an ulp of the block's sum and rounds away, so the blocks
    /// sum to 1024, 0.25, 0.25, 0.25 and C (FP32 across) to 1024.75. Summed in FP32 within
    /// blocks C would be 1024.78; in FP16 across blocks 1024 (0.25 is a quarter of 1024's ulp).
    func testFP16SumsPerBlockFP32Across() throws {
        for kern in try requireFP16() {
            let kc = kern.kc, k = 4 * kc, n = 8
            var a = [Float](repeating: 0x1p-14, count: k)
            for q in stride(from: 0, to: k, by: kc) { a[q] = q == 0 ? 1024 : 0.25 }
            let b = [Float](repeating: 1, count: k * n)
            var packed = [Float](repeating: .nan, count: kern.packedASize(m: 1, k: k))
            kern.packA(a, lda: k, m: 1, k: k, into: &packed)
            var c = [Float](repeating: .nan, count: n), scratch = [Float](repeating: .nan, count: kern.scratchSize(m: 1, n: n, k: k))
            kern.gemm(m: 1, n: n, k: k, packedA: packed, b: b, ldb: n, c: &c, ldc: n, scratch: &scratch)
            XCTAssertEqual(c, [Float](repeating: 1024.75, count: n), "\(kern.level): FP16 sums per block of \(kc) steps, FP32 across")
        }
    }
}

/// `x` rounded to FP16 (nearest even), as a float.
func fp16Rounded(_ x: Float) -> Float { Float(Float16(x)) }
