import XCTest
@testable @_spi(Kernels) import YOLOEngine
@testable import YOLOCore
import YOLOKernels
import YOLOReference

/// BF16 Winograd F(2x2) on bfloat16 pairs (`BF16WinogradPairs`, WinogradBF16.swift): its input
/// transform writes, bit for bit, the pairs of the scalar reference's V rounded as the instruction
/// rounds (`bfloat16Bits`), and its GEMM on those words gives, bit for bit, the BF16 GEMM's C on
/// the floats; a BF16 model takes it for its F(2x2) layers, at any thread count.
final class WinogradBF16Tests: XCTestCase {
    func requirePairs() throws -> (BF16WinogradPairs, GemmFunctions) {
        guard let bf16 = KernelLevel.supported.lazy.compactMap({ $0.bf16Kernels }).first else {
            throw XCTSkip("this CPU has no AVX-512 BF16 (avx512_bf16): the BF16 GEMM cannot run here and is not tested")
        }
        return (try XCTUnwrap(bf16.winogradPairs, "the BF16 GEMM has its Winograd pairs"), bf16.gemm)
    }

    func testInputPairsAreTheReferenceRounded() throws {
        let (pairs, _) = try requirePairs()
        var rng = SeededRandom(seed: 71)
        // Odd and even channel counts (a last pair with no second channel), maps narrower than a
        // vector of tiles and wider, partial tiles, blocks that start inside the map, and pair ranges.
        for (c, h, w, rows, part) in [(3, 13, 13, 0..<7, 0..<2), (8, 26, 26, 3..<9, 1..<3), (17, 9, 40, 0..<5, 0..<9),
                                      (4, 104, 104, 20..<23, 0..<2), (33, 7, 70, 1..<4, 5..<17)] {
            let tw = (w + 1) / 2, tiles = rows.count * tw, g = (c + 1) / 2
            let src = rng.floats(c * h * w, -3, 3)
            var v = [Float](repeating: .nan, count: 16 * c * tiles)
            winogradInput(src, height: h, width: w, channelCount: c, channels: 0..<c, tileRows: rows, tilesWide: tw, into: &v)
            var words = [UInt32](repeating: 0xDEAD_BEEF, count: 16 * g * tiles)
            words.withUnsafeMutableBufferPointer { pairs.input(src, h, w, c, part, rows, tw, $0.baseAddress!) }
            var bad = 0
            for xi in 0..<16 {
                for p in 0..<g {
                    for t in 0..<tiles {
                        let got = words[(xi * g + p) * tiles + t]
                        guard part.contains(p) else {
                            if got != 0xDEAD_BEEF { bad += 1 }   // only the pairs asked for are written
                            continue
                        }
                        let lo = UInt32(bfloat16Bits(v[(xi * c + 2 * p) * tiles + t]))
                        let hi = 2 * p + 1 < c ? UInt32(bfloat16Bits(v[(xi * c + 2 * p + 1) * tiles + t])) : 0
                        if got != lo | hi << 16 { bad += 1 }
                    }
                }
            }
            XCTAssertEqual(bad, 0, "\(c)x\(h)x\(w) tile rows \(rows) pairs \(part): words unlike the reference's")
        }
    }

    func testGemmOnWordsIsTheGemmOnFloats() throws {
        let (pairs, gemm) = try requirePairs()
        var rng = SeededRandom(seed: 73)
        // Odd k (a last pair of one row), n around the panels (48) and the column kernel's tail,
        // k past the block of pairs (kc 512), row ranges.
        for (m, n, k, rows) in [(8, 49, 16, 0..<8), (32, 169, 33, 0..<32), (20, 97, 1, 8..<20), (64, 700, 1030, 16..<40),
                                (3, 7, 6, 0..<3)] {
            let a = rng.floats(m * k), b = rng.floats(k * n, -2, 2)
            var packed = [Float](repeating: .nan, count: gemm.packedASize(m: m, k: k))
            gemm.packA(a, lda: k, m: m, k: k, into: &packed)
            // B's words as the transform writes them: rows 2q and 2q + 1 rounded, the second's bits high.
            let g = (k + 1) / 2
            var words = [UInt32](repeating: 0, count: g * n)
            for q in 0..<g {
                for j in 0..<n {
                    let lo = UInt32(bfloat16Bits(b[2 * q * n + j]))
                    words[q * n + j] = 2 * q + 1 < k ? lo | UInt32(bfloat16Bits(b[(2 * q + 1) * n + j])) << 16 : lo
                }
            }
            var want = [Float](repeating: .nan, count: m * n), got = want
            var scratch = [Float](repeating: .nan, count: gemm.scratchSize(m: m, n: n, k: k))
            gemm.gemm(m: m, n: n, k: k, packedA: packed, b: b, ldb: n, c: &want, ldc: n, scratch: &scratch, rows: rows)
            scratch = [Float](repeating: .nan, count: scratch.count)
            pairs.gemm(m, n, k, packed, words, n, &got, n, &scratch, rows)
            let differ = (rows.lowerBound * n ..< rows.upperBound * n).filter { want[$0].bitPattern != got[$0].bitPattern }.count
            XCTAssertEqual(differ, 0, "\(m)x\(n)x\(k) rows \(rows): C on words unlike C on floats")
            XCTAssertTrue(got[..<(rows.lowerBound * n)].allSatisfy(\.isNaN), "rows before \(rows) written")
        }
    }

    /// A BF16 model's F(2x2) layer, with and without the pool after it, at 1-3 threads: the same
    /// values at every thread count, and the BF16 model's bound against FP32.
    func testModelTakesThemAtAnyThreadCount() throws {
        _ = try requirePairs()
        let cfg = WinogradPoolTests.cfg(side: 52)
        let weights = WinogradPoolTests.weights
        let bf16 = try Model(cfgText: cfg, weights: weights,
                             options: ModelOptions(algorithms: [0: .winograd2, 2: ConvAlgorithm(.winograd2, .bf16)], precision: .bf16))
        // (Layer 0 reads the image: FP32 only.)
        XCTAssertEqual(bf16.inference.steps.prefix(2).map { $0.algorithm }, ["winograd2+pool", "winograd2-bf16+pool"])
        let fp32 = try Model(cfgText: cfg, weights: weights, options: ModelOptions(algorithms: [0: .winograd2, 2: .winograd2]))
        let reference = try PlanTests.heads(fp32, threads: 1)
        let one = try PlanTests.heads(bf16, threads: 1)
        let top = reference.map { abs($0) }.max()!
        XCTAssertLessThan(zip(one, reference).map { abs($0 - $1) }.max()!, 0.02 * top, "BF16 against FP32")
        for threads in 2...3 {
            XCTAssertEqual(try PlanTests.heads(bf16, threads: threads).map { $0.bitPattern }, one.map { $0.bitPattern }, "\(threads) threads")
        }
    }
}
