// scripts/arm/KernelCheck.swift's checks of the direct 3x3 convolution + max pool and of the INT8
// GEMMs (one module with it: Embedded Swift builds both files as one).
import Glibc
import YOLOKernels
import YOLOKernelsBaseline
import YOLOReference
#if arch(arm64) || arch(aarch64)
import YOLOKernelsDotProd
#endif

// MARK: - Direct 3x3 convolution + 2x2 max pool

func checkDirectConv() {
    for (c, h, w, f) in [(3, 8, 10, 5), (1, 2, 2, 9), (4, 6, 34, 16), (16, 4, 20, 17), (3, 10, 70, 8)] {
        let src = randomTensor(c, h, w), weights = rng.floats(f * c * 9)
        let conv = Naive.convolution(src, filters: f, size: 3, stride: 1, pad: 1, weights: weights)
        let want = Naive.maxPool(conv, size: 2, stride: 2, padding: 0)
        let direct = baseline.direct
        var packed = [Float](repeating: .nan, count: direct.packedSize(filters: f, channels: c))
        var scratch = [Float](repeating: .nan, count: direct.scratchSize(channels: c, width: w))
        weights.withUnsafeBufferPointer { wp in ptr(&packed) { direct.pack(wp.baseAddress!, filters: f, channels: c, into: $0) } }
        var got = [Float](repeating: .nan, count: want.count)
        // In two row ranges, as two threads would.
        let oh = want.height
        for rows in [0..<oh / 2, oh / 2..<oh] {
            src.values.withUnsafeBufferPointer { sp in packed.withUnsafeBufferPointer { pp in ptr(&scratch) { sc in ptr(&got) { out in
                direct.pooledRows(sp.baseAddress!, height: h, width: w, channels: c, packed: pp.baseAddress!,
                                  filters: f, rows: rows, into: out, scratch: sc)
            } } } }
        }
        // FMA (NEON) or not (SSE): the sums differ per CPU by design, so no digest comparison.
        expect("directConv + 2x2 max pool c=\(c) \(h)x\(w) filters=\(f)", got, want.values,
               tolerance: 1e-5 * Float(c), crossArch: false)
    }
}

// MARK: - INT8 GEMM

/// One level's INT8 GEMM (packA, then gemm over two row ranges split at a multiple of MR) against
/// YOLOReference's Int8GemmCase bit for bit (the int32 sums are exact at every level): tails of
/// the tile, of k's groups of 4 and of the kc and nc blocks, padded strides, every value at the
/// end of its range 2100 deep (where 16-bit sums would wrap). `crossArch`: its digests are
/// compared with the host's (the baseline set: smull here, the portable dot on x86).
func checkInt8Gemm(_ name: String, _ kern: Int8Functions, crossArch: Bool) {
    let sentinel: Float = -12345
    for (m, n, k, pad, extreme) in [(1, 1, 1, 0, false), (3, 5, 3, 0, false), (4, 16, 4, 0, false), (7, 17, 5, 0, false),
                                    (8, 48, 27, 0, false), (9, 47, 36, 0, false), (17, 49, 144, 0, false), (33, 100, 257, 0, false),
                                    (16, 600, 28, 0, false), (5, 1, 1100, 0, false), (12, 97, 2100, 0, false), (11, 33, 19, 5, false),
                                    (9, 50, 2100, 0, true)] {
        let t = Int8GemmCase(m: m, n: n, k: k, ldbPad: pad, ldcPad: pad, extreme: extreme, rng: &rng)
        var packed = [UInt8](repeating: 0xEE, count: kern.packedASize(m: m, k: k))
        var scratch = [UInt8](repeating: 0xEE, count: kern.scratchSize(m: m, n: n, k: k))
        var c = [Float](repeating: sentinel, count: m * t.ldc)
        let split = min(m, (m / 2) / kern.mr * kern.mr)
        t.a.withUnsafeBufferPointer { pa in packed.withUnsafeMutableBytes { kern.packA(pa.baseAddress!, lda: k, m: m, k: k, into: $0.baseAddress!) } }
        for rows in [0..<split, split..<m] where !rows.isEmpty {
            packed.withUnsafeBytes { pa in t.b.withUnsafeBufferPointer { pb in scratch.withUnsafeMutableBytes { ps in ptr(&c) {
                kern.gemm(m: m, n: n, k: k, packedA: pa.baseAddress!, b: pb.baseAddress!, ldb: t.ldb, c: $0, ldc: t.ldc,
                          comp: t.comp, scale: t.scale, scratch: ps.baseAddress!, rows: rows)
            } } } }
        }
        expect("int8 gemm \(name) m=\(m) n=\(n) k=\(k)\(pad > 0 ? " strides +\(pad)" : "")\(extreme ? " extreme" : "") rows split at \(split)",
               c, t.expected(untouched: sentinel), crossArch: crossArch)
    }
}

/// One level's two-pass 10-bit GEMM (Int8TenBit.swift: the hi pass's sums shifted, the lo pass
/// added) against YOLOReference's TenBitGemmCase bit for bit, with the level's comp (sdot's
/// flipped bytes folded in): tails, kc blocks, every value at its limit, two row ranges.
func checkTenBitGemm(_ name: String, _ kern: Int8Functions, crossArch: Bool) {
    for (m, n, k, extreme) in [(3, 5, 3, false), (9, 47, 36, false), (17, 49, 144, false), (33, 100, 257, false),
                               (12, 97, 2100, false), (9, 50, 2100, true)] {
        let t = TenBitGemmCase(m: m, n: n, k: k, extreme: extreme, rng: &rng)
        let comp = (0..<m).map { tenBitComp(zeroPoint: t.zeroPoint, activationShift: kern.activationShift, weightSum: t.weightSum($0)) }
        var packed = [UInt8](repeating: 0xEE, count: kern.packedASize(m: m, k: k))
        var scratch = [UInt8](repeating: 0xEE, count: kern.scratchSize(m: m, n: n, k: k))
        var c = [Float](repeating: .nan, count: m * n)
        let split = min(m, (m / 2) / kern.mr * kern.mr)
        t.a.withUnsafeBufferPointer { pa in packed.withUnsafeMutableBytes { kern.packA(pa.baseAddress!, lda: k, m: m, k: k, into: $0.baseAddress!) } }
        for rows in [0..<split, split..<m] where !rows.isEmpty {
            packed.withUnsafeBytes { pa in scratch.withUnsafeMutableBytes { ps in ptr(&c) {
                kern.tenBitGemm(m: m, n: n, k: k, packedA: pa.baseAddress!, hi: t.hi, lo: t.lo, ldb: n, c: $0, ldc: n, comp: comp,
                                scale: t.scale, scratch: ps.baseAddress!, rows: rows)
            } } }
        }
        expect("10-bit gemm \(name) m=\(m) n=\(n) k=\(k)\(extreme ? " extreme" : "")", c, t.expected(untouched: .nan),
               crossArch: crossArch)
    }
}

/// The baseline set's 16-bit pair GEMM (INT8 Winograd, 10-bit layers: smlal by element on arm64,
/// the portable dot on x86) against YOLOReference's PairGemmCase (naive Int64 sums per block of
/// k), bit for bit: tails of the tile, odd channels, k over several blocks, every value at a limit.
func checkPairGemm() {
    let kern = baseline.int16Pairs!
    for (m, n, c, extreme) in [(8, 12, 2, false), (1, 1, 1, false), (7, 17, 5, false), (9, 49, 36, false), (16, 600, 64, false),
                               (17, 100, 129, false), (33, 37, 257, false), (9, 50, 1100, true)] {
        let t = PairGemmCase(m: m, n: n, channels: c, extreme: extreme, rng: &rng)
        var packed = [UInt8](repeating: 0xEE, count: kern.packedASize(m: m, k: 2 * c))
        var scratch = [UInt8](repeating: 0xEE, count: kern.scratchSize(m: m, n: n, k: 2 * c))
        var out = [Float](repeating: .nan, count: m * n)
        let comp = [Int32](repeating: 0, count: m)
        t.a.withUnsafeBytes { pa in packed.withUnsafeMutableBytes {
            kern.packA(pa.baseAddress!.assumingMemoryBound(to: Int8.self), lda: 2 * c, m: m, k: 2 * c, into: $0.baseAddress!)
        } }
        packed.withUnsafeBytes { pa in scratch.withUnsafeMutableBytes { ps in ptr(&out) {
            kern.gemm(m: m, n: n, k: 2 * c, packedA: pa.baseAddress!, b: t.grouped, ldb: n, c: $0, ldc: n, comp: comp,
                      scale: t.scale, scratch: ps.baseAddress!)
        } } }
        expect("pair gemm m=\(m) n=\(n) channels=\(c)\(extreme ? " extreme" : "")", out, t.expected(kc: kern.kc) ?? [])
    }
}

func checkInt8Gemms() {
    // Named alike on every CPU (the digests are compared with the host's); the dot is said apart.
    print("int8 gemm: the baseline kernel set's dot product is \(baseline.int8!.dot) (\(baseline.int8!.mr) x \(baseline.int8!.nr) tiles)")
    checkInt8Gemm("baseline kernel set", baseline.int8!, crossArch: true)
    checkTenBitGemm("baseline kernel set", baseline.int8!, crossArch: true)
    print("pair gemm: the baseline kernel set's is \(baseline.int16Pairs!.dot) (\(baseline.int16Pairs!.mr) x \(baseline.int16Pairs!.nr) tiles)")
    checkPairGemm()
    #if arch(arm64) || arch(aarch64)
    // AT_HWCAP (16), HWCAP_ASIMDDP (1 << 20): sdot would be an illegal instruction without it.
    if getauxval(16) & (1 << 20) != 0 {
        let dot = KernelsDotProd.kernelSet.int8!
        print("int8 gemm: the dotprod kernel set's dot product is \(dot.dot) (\(dot.mr) x \(dot.nr) tiles)")
        checkInt8Gemm("dotprod kernel set", dot, crossArch: false)
        checkTenBitGemm("dotprod kernel set", dot, crossArch: false)
    } else {
        print("int8 gemm: the dotprod kernel set skipped: this CPU has no asimddp")
    }
    #endif
}
