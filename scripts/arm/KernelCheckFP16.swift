// scripts/arm-check.sh, the FP16 GEMM: the dotprod level's (fmla .8h, FP16Gemm.swift) where the CPU
// has FP16 arithmetic (asimdhp: the Cortex-A76 pass; the A72 has none), against YOLOReference's
// naive product of the inputs rounded to FP16 (sums in double), within the bound of FP16 sums over
// blocks of at most kc steps (each step rounds once: 2^-11 of the block's magnitude), and the
// blocks' arithmetic exactly (FP16 within a block, FP32 across). Nothing on other CPUs.
// The FP16 direct conv + pool of the same set, bit for bit against the naive FP16 one.
// And every level's FP32 GEMM on FP16-stored weights (FP16Weights.swift: the Cortex-A72's
// `precision fp16`), bit for bit the level's FP32 GEMM on the weights rounded to FP16.
import Glibc
import YOLOKernels
import YOLOKernelsBaseline
import YOLOReference
#if arch(arm64) || arch(aarch64)
import YOLOKernelsDotProd
#endif

func checkFP16WeightsGemms() {
    var sets = [KernelsBaseline.kernelSet]
    #if arch(arm64) || arch(aarch64)
    // AT_HWCAP (16), HWCAP_ASIMDDP (1 << 20): the dotprod level needs the dot product.
    if getauxval(16) & (1 << 20) != 0 { sets.append(KernelsDotProd.kernelSet) }
    #endif
    for set in sets {
        guard let half = set.fp16Weights?.gemm else {
            checks += 1; failures += 1
            print("MISMATCH fp16 weights: the \(set.name) kernel set has no FP16-weights GEMM")
            continue
        }
        let g = set.gemm
        for (m, n, k) in [(1, 1, 1), (7, 13, 9), (16, 169, 64), (19, 520, 300), (33, 49, 145), (8, 2, 513)] {
            let a = rng.floats(m * k), b = rng.floats(k * n)
            func run(_ kern: GemmFunctions, _ a: [Float]) -> [Float] {
                var packed = [Float](repeating: .nan, count: kern.packedASize(m: m, k: k))
                var scratch = [Float](repeating: .nan, count: kern.scratchSize(m: m, n: n, k: k))
                var c = [Float](repeating: .nan, count: m * n)
                a.withUnsafeBufferPointer { pa in ptr(&packed) { kern.packA(pa.baseAddress!, lda: k, m: m, k: k, into: $0) } }
                packed.withUnsafeBufferPointer { pa in b.withUnsafeBufferPointer { pb in ptr(&scratch) { ps in ptr(&c) {
                    kern.gemm(m: m, n: n, k: k, packedA: pa.baseAddress!, b: pb.baseAddress!, ldb: n, c: $0, ldc: n,
                              scratch: ps, rows: 0..<m)
                } } } }
                return c
            }
            expect("\(half.level) gemm m=\(m) n=\(n) k=\(k): the \(set.name) FP32 GEMM on FP16-rounded weights",
                   run(half, a), run(g, a.map { Float(Float16($0)) }), crossArch: false)
        }
    }
}

#if arch(arm64) || arch(aarch64)

func checkFP16Gemm() {
    // AT_HWCAP (16), HWCAP_ASIMDHP (1 << 10): fmla .8h would be an illegal instruction without it.
    guard getauxval(16) & (1 << 10) != 0 else {
        print("fp16 gemm: skipped: this CPU has no asimdhp")
        return
    }
    guard let kern = KernelsDotProd.kernelSet.fp16?.gemm else {
        checks += 1; failures += 1
        print("MISMATCH fp16 gemm: the dotprod kernel set has no FP16 GEMM")
        return
    }
    print("fp16 gemm: the dotprod kernel set's FP16 GEMM (\(kern.mr) x \(kern.nr) tiles, FP16 sums over blocks of \(kern.kc) steps)")
    let sentinel: Float = -12345
    for (m, n, k, pad) in [(1, 1, 1, 0), (3, 5, 3, 0), (8, 24, 8, 0), (7, 25, 9, 0), (9, 47, 36, 0), (17, 49, 129, 0),
                           (33, 100, 257, 0), (16, 600, 27, 0), (5, 1, 1100, 0), (11, 33, 19, 5), (19, 520, 300, 3)] {
        let ldb = n + pad, ldc = n + pad
        let a = rng.floats(m * k), b = rng.floats(k * ldb)
        let ra = a.map { Float(Float16($0)) }, rb = b.map { Float(Float16($0)) }
        let (want, magnitudes) = Naive.gemm(ra, lda: k, rb, ldb: ldb, m: m, n: n, k: k, ldc: ldc, untouched: sentinel)
        var packed = [Float](repeating: .nan, count: kern.packedASize(m: m, k: k))
        var scratch = [Float](repeating: .nan, count: kern.scratchSize(m: m, n: n, k: k))
        var c = [Float](repeating: sentinel, count: m * ldc)
        a.withUnsafeBufferPointer { pa in ptr(&packed) { kern.packA(pa.baseAddress!, lda: k, m: m, k: k, into: $0) } }
        let split = min(m, (m / 2) / kern.mr * kern.mr)
        for rows in [0..<split, split..<m] where !rows.isEmpty {
            packed.withUnsafeBufferPointer { pa in b.withUnsafeBufferPointer { pb in ptr(&scratch) { ps in ptr(&c) {
                kern.gemm(m: m, n: n, k: k, packedA: pa.baseAddress!, b: pb.baseAddress!, ldb: ldb, c: $0, ldc: ldc,
                          scratch: ps, rows: rows)
            } } } }
        }
        // Below 2^-14 FP16 sums are denormals, each rounding off by up to 2^-25: the scale's floor.
        expect("fp16 gemm m=\(m) n=\(n) k=\(k)\(pad > 0 ? " strides +\(pad)" : "") rows split at \(split)", c, want,
               tolerance: Float(min(k, kern.kc) + 1) * 0x1p-11, scales: magnitudes.map { max($0, 0x1p-14) }, crossArch: false)
    }
    // Blocks: row 0 of A is 1024 at the first step, 0.25 at each later block's first, 2^-14
    // elsewhere (under half an FP16 ulp of each block's sum: rounded away); B ones. FP16 within
    // blocks and FP32 across give 1024.75 exactly (FP32 within: 1024.78; FP16 across: 1024).
    let k = 4 * kern.kc, n = 8
    var a = [Float](repeating: 0x1p-14, count: k)
    for q in stride(from: 0, to: k, by: kern.kc) { a[q] = q == 0 ? 1024 : 0.25 }
    let b = [Float](repeating: 1, count: k * n)
    var packed = [Float](repeating: .nan, count: kern.packedASize(m: 1, k: k))
    var scratch = [Float](repeating: .nan, count: kern.scratchSize(m: 1, n: n, k: k))
    var c = [Float](repeating: .nan, count: n)
    a.withUnsafeBufferPointer { pa in ptr(&packed) { kern.packA(pa.baseAddress!, lda: k, m: 1, k: k, into: $0) } }
    packed.withUnsafeBufferPointer { pa in b.withUnsafeBufferPointer { pb in ptr(&scratch) { ps in ptr(&c) {
        kern.gemm(m: 1, n: n, k: k, packedA: pa.baseAddress!, b: pb.baseAddress!, ldb: n, c: $0, ldc: n, scratch: ps, rows: 0..<1)
    } } } }
    expect("fp16 gemm blocks of \(kern.kc): FP16 within, FP32 across", c, [Float](repeating: 1024.75, count: n), crossArch: false)
}

/// The direct 3x3 conv + pool in FP16 arithmetic (DirectConvHalf.swift, fmla .8h by element) against
/// the naive FP16 one: inputs and weights rounded to FP16, each multiply-add rounded once to FP16
/// in the kernel's order (channel, ky, kx, the padded taps included), the pool in FP32: bit for bit.
func checkFP16Direct() {
    guard getauxval(16) & (1 << 10) != 0 else {
        print("fp16 direct conv + pool: skipped: this CPU has no asimdhp")
        return
    }
    guard let direct = KernelsDotProd.kernelSet.fp16?.direct else {
        checks += 1; failures += 1
        print("MISMATCH fp16 direct: the dotprod kernel set has no FP16 direct conv + pool")
        return
    }
    for (c, h, w, f) in [(3, 6, 66, 16), (1, 2, 2, 5), (4, 4, 130, 9), (16, 4, 18, 8), (2, 8, 20, 17)] {
        let x = rng.floats(c * h * w), weights = rng.floats(f * c * 9)
        let (ph, pw) = (h / 2, w / 2)
        func conv(_ filter: Int, _ y: Int, _ xx: Int) -> Float {
            var acc = Float16(0)
            for ch in 0..<c {
                for ky in 0..<3 {
                    for kx in 0..<3 {
                        let (iy, ix) = (y + ky - 1, xx + kx - 1)
                        let v: Float = iy >= 0 && iy < h && ix >= 0 && ix < w ? Float(Float16(x[(ch * h + iy) * w + ix])) : 0
                        let wt = Float(Float16(weights[(filter * c + ch) * 9 + ky * 3 + kx]))
                        acc = Float16(Double(acc) + Double(wt) * Double(v))
                    }
                }
            }
            return Float(acc)
        }
        var want = [Float](repeating: 0, count: f * ph * pw)
        for filter in 0..<f {
            for py in 0..<ph {
                for px in 0..<pw {
                    want[(filter * ph + py) * pw + px] = max(max(conv(filter, 2 * py, 2 * px), conv(filter, 2 * py, 2 * px + 1)),
                                                             max(conv(filter, 2 * py + 1, 2 * px), conv(filter, 2 * py + 1, 2 * px + 1)))
                }
            }
        }
        var packed = [Float](repeating: .nan, count: direct.packedSize(filters: f, channels: c))
        var scratch = [Float](repeating: .nan, count: direct.scratchSize(channels: c, width: w))
        var out = [Float](repeating: .nan, count: want.count)
        weights.withUnsafeBufferPointer { pws in ptr(&packed) { direct.pack(pws.baseAddress!, filters: f, channels: c, into: $0) } }
        for rows in [0..<1, 1..<ph] where !rows.isEmpty {
            x.withUnsafeBufferPointer { px in packed.withUnsafeBufferPointer { pp in ptr(&scratch) { ps in ptr(&out) {
                direct.pooledRows(px.baseAddress!, height: h, width: w, channels: c, packed: pp.baseAddress!, filters: f,
                                  rows: rows, into: $0, scratch: ps)
            } } } }
        }
        expect("fp16 direct conv + pool c=\(c) \(h)x\(w) filters \(f)", out, want, crossArch: false)
    }
}
#else
func checkFP16Gemm() {}
func checkFP16Direct() {}
#endif
