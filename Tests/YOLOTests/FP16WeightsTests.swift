import XCTest
@testable @_spi(Kernels) import YOLOEngine
@testable import YOLOCore
import YOLOKernels
import YOLOReference

/// Every level's FP32 GEMM on FP16-stored weights (FP16Weights.swift): `GemmKernelTests`' tail,
/// stride, row-range and shape tests run it against the naive product of FP16-rounded A and FP32 B
/// (`fp16WeightsLevels`). Here: it is exactly the level's FP32 GEMM on the rounded weights, in half
/// the memory, and which GEMM `precision fp16` gets on which CPU.
extension GemmKernelTests {
    /// The FP16-weights GEMM of the selected level (every level's: the test below): the generic
    /// driver is the same for all, and the shape tests take minutes per level under qemu.
    var fp16WeightsLevels: [GemmFunctions] { [KernelLevel.selected.fp16WeightsKernels?.gemm].compactMap { $0 } }

    /// Bit for bit the FP32 GEMM of the same level on A rounded to FP16 (same micro-kernel, same
    /// order of sums): across blocks of k (k > kc), partial panels of rows and columns, threads'
    /// row ranges, ldb and ldc beyond n; packed A takes half the FP32 GEMM's words.
    func testFP16WeightsAreTheFP32GemmOnRoundedWeights() throws {
        let levels = KernelLevel.supported.compactMap { l in l.kernelSet.flatMap { s in s.fp16Weights.map { (s.gemm, $0.gemm) } } }
        XCTAssertEqual(levels.count, KernelLevel.supported.count, "every level has an FP16-weights GEMM")
        for (fp32, half) in levels {
            XCTAssertEqual(half.kc, fp32.kc)
            for s in [Shape(m: 1, n: 1, k: 1), Shape(m: 13, n: 37, k: 2 * fp32.kc + 5, ldbPad: 3, ldcPad: 2),
                      Shape(m: 2 * fp32.mr + 3, n: 3 * fp32.nr + fp32.width + 1, k: 9),
                      Shape(m: 64, n: fp32.nc + 2 * fp32.nr + 5, k: fp32.kc + 1)] {
                let (m, n, k) = (s.m, s.n, s.k)
                let ldb = n + s.ldbPad, ldc = n + s.ldcPad
                var rng = SeededRandom(seed: UInt64(m * 7 + n * 3 + k))
                let a = rng.floats(m * k), b = rng.floats(k * ldb)
                func run(_ g: GemmFunctions, _ a: [Float], rows: [Range<Int>]) -> [Float] {
                    var packed = [Float](repeating: .nan, count: g.packedASize(m: m, k: k))
                    g.packA(a, lda: k, m: m, k: k, into: &packed)
                    var c = [Float](repeating: .nan, count: m * ldc)
                    var scratch = [Float](repeating: .nan, count: g.scratchSize(m: m, n: n, k: k))
                    for r in rows {
                        g.gemm(m: m, n: n, k: k, packedA: packed, b: b, ldb: ldb, c: &c, ldc: ldc, scratch: &scratch, rows: r)
                    }
                    return c
                }
                let split = m > half.mr ? [0..<half.mr, half.mr..<m] : [0..<m]
                let want = run(fp32, a.map(fp16Rounded), rows: [0..<m])
                let got = run(half, a, rows: split)
                XCTAssertTrue(zip(want, got).allSatisfy { $0 == $1 || ($0.isNaN && $1.isNaN) },
                              "\(half.level) \(s): differs from \(fp32.level) on FP16-rounded weights")
                XCTAssertFalse(zip(run(fp32, a, rows: [0..<m]), got).allSatisfy { $0 == $1 } && k > 1,
                               "\(half.level) \(s): the weights were not rounded")
                XCTAssertEqual(half.packedASize(m: m, k: k), (fp32.packedASize(m: m, k: k) + 1) / 2)
            }
        }
    }

    /// `precision fp16`'s GEMM: FP16 arithmetic where the CPU has it and the level has the kernels,
    /// else the level's FP32 GEMM on FP16-stored weights (x86 CPUs without AVX-512 FP16, a
    /// Raspberry Pi 4's A72, a level lowered by YOLO_KERNEL_LEVEL).
    func testPrecisionFP16TakesArithmeticWhereItCanWeightsElsewhere() throws {
        for set in KernelRegistry.all {
            let weights = try set.fp16ForPrecision(on: set.requires)
            XCTAssertTrue(weights.weightsOnly, set.name)
            XCTAssertEqual(weights.dot, "fp32 fma, fp16 weights")
            // (The amx level keeps avx512vnni's FP32 kernels, these among them.)
            XCTAssertEqual(weights.gemm.level, (set.name == "amx" ? "avx512vnni" : set.name) + "-fp16-weights")
            if let arithmetic = set.fp16 {
                let chosen = try set.fp16ForPrecision(on: set.requires.union(arithmetic.requires))
                XCTAssertEqual(chosen.dot, arithmetic.dot, set.name)
                XCTAssertTrue(["fmla .8h", "vfmadd231ph"].contains(chosen.dot), set.name)
                XCTAssertFalse(chosen.weightsOnly)
            }
        }
        #if arch(x86_64)
        XCTAssertFalse(HostCPU.features.contains(.fp16))
        let avx2 = try XCTUnwrap(KernelRegistry.all.first { $0.name == "avx2" })
        XCTAssertEqual(avx2.fp16?.requires, [.avx2, .fp16], "the FP16-arithmetic model is never offered on x86")
        XCTAssertNil(avx2.half(.fp16, on: HostCPU.features))
        // AVX-512 FP16's vfmadd231ph GEMM: the avx512vnni level's, offered where the CPU has it.
        let vnni = try XCTUnwrap(KernelRegistry.all.first { $0.name == "avx512vnni" })
        XCTAssertEqual(vnni.fp16?.dot, "vfmadd231ph")
        XCTAssertTrue(vnni.fp16?.requires.contains(.avx512FP16) == true)
        XCTAssertEqual(vnni.half(.fp16, on: HostCPU.features) != nil, HostCPU.features.isSuperset(of: vnni.requires.union(.avx512FP16)))
        XCTAssertNil(vnni.half(.fp16, on: vnni.requires.union(.avx512BF16)), "not without AVX-512 FP16 (a Zen 4)")
        #else
        let neon = try XCTUnwrap(KernelRegistry.all.first { $0.name == "neon" })
        XCTAssertNil(neon.fp16, "the ARMv8.0 level (Cortex-A72) has no FP16 arithmetic")
        #endif
    }
}
