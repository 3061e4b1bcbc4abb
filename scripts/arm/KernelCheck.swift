// scripts/arm-check.sh, part 1: every kernel of YOLOKernels (built with Embedded Swift for
// aarch64, where the SIMD types are NEON) against the naive references of YOLOReference
// (Sources/YOLOReference, the same ones the XCTest suites use), on inputs from its
// SeededRandom, over the tables of shapes below (odd sizes, vector tails, borders). Not part of
// the SwiftPM package. Exit status 0 when everything matches, 1 otherwise. Also builds for the
// host (plain swiftc), so the same checks can run on x86_64; each check prints a digest of the
// kernel's output bits, which arm-check.sh compares between the two. The INT8 GEMMs: the baseline
// set's (smull on aarch64) and, on a CPU with the dot product, the dotprod level's (sdot).
import Glibc
import YOLOKernels
import YOLOKernelsBaseline
import YOLOReference
#if arch(arm64) || arch(aarch64)
import YOLOKernelsDotProd
#endif

// MARK: - Bookkeeping

var failures = 0
var checks = 0
var lines: [String] = []
var verbose = false

/// FNV-1a over the bits of the floats: equal digests on two machines mean equal results.
func digest(_ a: [Float]) -> UInt64 {
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    for v in a { h = (h ^ UInt64(v.bitPattern)) &* 0x100_0000_01b3 }
    return h
}

func hex(_ v: UInt64) -> String {
    let digits: [Character] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f"]
    var s = ""
    for i in (0..<16).reversed() { s.append(digits[Int((v >> (4 * UInt64(i))) & 15)]) }
    return s
}

/// Compares a kernel's output with the reference (YOLOReference's `compare`: exactly with
/// `tolerance` 0, else relative to max(1, |reference|) or to `scales`). Records and prints the
/// result. `crossArch: false` keeps the digest out of the comparison with the host (a kernel
/// that differs by design per CPU).
func expect(_ what: String, _ got: [Float], _ want: [Float], tolerance: Float = 0, scales: [Float]? = nil,
            crossArch: Bool = true) {
    checks += 1
    let result = compare(got, want, tolerance: tolerance, scales: scales)
    let line = "\(what): \(got.count) values, max abs diff \(result.maxAbsDiff) digest \(hex(digest(got)))"
    if !result.passed {
        failures += 1
        print("MISMATCH \(what): \(result)")
    } else if verbose {
        print("ok \(line)")
    }
    lines.append((crossArch ? "digest " : "digest-local ") + line)
}

var rng = SeededRandom(seed: 2024)
let libm = Libm(exp: { Glibc.exp($0) }, tanh: { Glibc.tanh($0) }, log1p: { Glibc.log1p($0) })

func ptr(_ a: inout [Float], _ body: (UnsafeMutablePointer<Float>) -> Void) {
    a.withUnsafeMutableBufferPointer { body($0.baseAddress!) }
}

/// A tensor of random values in [lo, hi).
func randomTensor(_ c: Int, _ h: Int, _ w: Int, _ lo: Float = -1, _ hi: Float = 1) -> Naive.Tensor {
    Naive.Tensor(channels: c, height: h, width: w, values: rng.floats(c * h * w, lo, hi))
}

// MARK: - Activations

func checkActivations() {
    for a in Activation.allCases {
        guard let ref = NaiveActivation(rawValue: a.rawValue) else {
            checks += 1; failures += 1
            print("MISMATCH activation \(a.rawValue): YOLOReference has no naive reference for it")
            continue
        }
        // Exact except mish, swish and logistic: ours take one float exp (SmoothActivations.swift),
        // the reference libm in double; within 4e-7 of the value, |values| < 6 here.
        let tolerance: Float = [.mish, .swish, .logistic].contains(a) ? 3e-6 : 0
        for count in [1, 15, 16, 17, 33, 100, 1000] {
            let x = rng.floats(count, -6, 6)
            var got = x
            ptr(&got) { activate($0, count: count, activation: a) }
            expect("activate \(a.rawValue) n=\(count)", got, x.map { ref.apply($0, libm: libm) }, tolerance: tolerance)
            expect("activate(_:_:) \(a.rawValue) n=\(count)", x.map { activate($0, a) }, got)
        }
        // Channels with a stride larger than the plane, a sub-range of channels, vector tails.
        for (channels, spatial, stride, range) in [(3, 13, 13, 0..<3), (5, 16, 16, 1..<4), (4, 17, 20, 0..<4),
                                                   (2, 1, 1, 0..<2), (6, 47, 50, 2..<6), (3, 169, 169, 0..<3)] {
            let x = rng.floats(channels * stride, -4, 4)
            let bias = rng.floats(channels, -1, 1)
            var got = x
            got.withUnsafeMutableBufferPointer { d in
                bias.withUnsafeBufferPointer { b in
                    biasActivate(d.baseAddress!, bias: b.baseAddress!, channels: range, spatial: spatial,
                                 channelStride: stride == spatial ? nil : stride, activation: a)
                }
            }
            var want = x
            for c in range { for i in 0..<spatial { want[c * stride + i] = ref.apply(x[c * stride + i] + bias[c], libm: libm) } }
            expect("biasActivate \(a.rawValue) c=\(channels) spatial=\(spatial) stride=\(stride) channels \(range.lowerBound)..<\(range.upperBound)",
                   got, want, tolerance: tolerance)
        }
    }
}

// MARK: - im2col

func checkIm2col() {
    for (c, h, w, k, s, p) in [(1, 5, 7, 3, 1, 1), (3, 13, 11, 3, 1, 1), (2, 9, 10, 3, 2, 1), (4, 8, 8, 1, 1, 0),
                                (2, 7, 5, 5, 1, 2), (3, 6, 9, 3, 2, 0), (2, 1, 1, 3, 1, 1), (1, 12, 17, 2, 2, 0)] {
        let oh = (h + 2 * p - k) / s + 1, ow = (w + 2 * p - k) / s + 1
        let src = randomTensor(c, h, w)
        let rows = c * k * k
        // The whole matrix, and a block of output rows with a sub-range of its rows.
        for (outRows, rowRange) in [(0..<oh, 0..<rows), (oh / 3..<oh, rows / 2..<rows)] {
            var got = [Float](repeating: .nan, count: rows * outRows.count * ow)
            src.values.withUnsafeBufferPointer { sp in
                ptr(&got) { im2col(sp.baseAddress!, height: h, width: w, kernel: k, stride: s, pad: p,
                                   outWidth: ow, outRows: outRows, rows: rowRange, into: $0) }
            }
            expect("im2col c=\(c) \(h)x\(w) k=\(k) stride=\(s) pad=\(p) outRows \(outRows.lowerBound)..<\(outRows.upperBound) rows \(rowRange.lowerBound)..<\(rowRange.upperBound)",
                   got, Naive.im2col(src, kernel: k, stride: s, pad: p, outRows: outRows, rows: rowRange))
        }
    }
}

// MARK: - Pooling

func checkPooling() {
    // (channels, h, w, size, stride, pad): Darknet's output size (h + pad - size) / stride + 1.
    for (c, h, w, size, s, p) in [(3, 8, 8, 2, 2, 1), (2, 9, 7, 2, 2, 1), (4, 13, 13, 2, 1, 1), (2, 5, 6, 2, 1, 1),
                                   (3, 10, 12, 3, 2, 2), (2, 7, 7, 3, 1, 2), (1, 6, 5, 2, 2, 0), (2, 11, 9, 5, 3, 4),
                                   (1, 1, 1, 2, 1, 1), (3, 26, 26, 2, 2, 1)] {
        let oh = (h + p - size) / s + 1, ow = (w + p - size) / s + 1
        let src = randomTensor(c, h, w, -3, 3)
        var got = [Float](repeating: .nan, count: c * oh * ow)
        src.values.withUnsafeBufferPointer { sp in
            ptr(&got) { maxPool(sp.baseAddress!, height: h, width: w, size: size, stride: s, pad: p,
                                outHeight: oh, outWidth: ow, channels: 0..<c, into: $0) }
        }
        expect("maxPool c=\(c) \(h)x\(w) size=\(size) stride=\(s) pad=\(p) -> \(oh)x\(ow)", got,
               Naive.maxPool(src, size: size, stride: s, padding: p).values)
        // The specialised variants, called directly (a sub-range of channels).
        if size == 2 && s == 2 && h >= 2 && w >= 2 {
            let oh2 = h / 2, ow2 = w / 2
            let want2 = Naive.maxPool(src, size: 2, stride: 2, padding: 0).values
            var got2 = want2
            let range = (c > 1 ? 1 : 0)..<c
            for ch in range { for i in 0..<(oh2 * ow2) { got2[ch * oh2 * ow2 + i] = .nan } }
            src.values.withUnsafeBufferPointer { sp in
                ptr(&got2) { maxPool2x2(sp.baseAddress!, height: h, width: w, outHeight: oh2, outWidth: ow2,
                                        channels: range, into: $0) }
            }
            expect("maxPool2x2 c=\(c) \(h)x\(w) channels \(range.lowerBound)..<\(range.upperBound)", got2, want2)
        }
        if size == 2 && s == 1 && p == 1 {
            var got1 = [Float](repeating: .nan, count: c * h * w)
            src.values.withUnsafeBufferPointer { sp in
                ptr(&got1) { maxPool2x2Stride1(sp.baseAddress!, height: h, width: w, channels: 0..<c, into: $0) }
            }
            expect("maxPool2x2Stride1 c=\(c) \(h)x\(w)", got1, Naive.maxPool(src, size: 2, stride: 1, padding: 1).values)
        }
    }
}

// MARK: - Resampling and add

func checkResample() {
    for (c, h, w, s, scale) in [(3, 13, 13, 2, Float(1)), (2, 5, 7, 2, 0.5), (1, 3, 4, 3, 1), (4, 1, 1, 2, 2), (2, 6, 9, 1, 1)] {
        let src = randomTensor(c, h, w)
        var got = [Float](repeating: .nan, count: c * h * s * w * s)
        src.values.withUnsafeBufferPointer { sp in
            ptr(&got) { upsampleNearest(sp.baseAddress!, height: h, width: w, stride: s, scale: scale, channels: 0..<c, into: $0) }
        }
        expect("upsampleNearest c=\(c) \(h)x\(w) stride=\(s) scale=\(scale)", got, Naive.upsample(src, stride: s, scale: scale).values)
    }
    for (n, range) in [(1, 0..<1), (17, 0..<17), (100, 3..<97), (1031, 0..<1031)] {
        let a = rng.floats(n), b = rng.floats(n)
        var want = [Float](repeating: -7, count: n)
        for i in range { want[i] = a[i] + b[i] }
        var got = [Float](repeating: -7, count: n)
        a.withUnsafeBufferPointer { ap in b.withUnsafeBufferPointer { bp in
            ptr(&got) { add(ap.baseAddress!, bp.baseAddress!, range: range, into: $0) }
        } }
        expect("add n=\(n) range \(range.lowerBound)..<\(range.upperBound)", got, want)
    }
}

// MARK: - Winograd

/// One Winograd variant's kernels, checked against YOLOReference's matrices of the same F(m x m, 3x3).
struct WinogradKernels {
    let name: String
    let reference: Naive.Winograd
    let transformKernels: (UnsafePointer<Float>, Int, Int, Range<Int>, UnsafeMutablePointer<Float>) -> Void
    let input: (UnsafePointer<Float>, Int, Int, Int, Range<Int>, Range<Int>, Int, UnsafeMutablePointer<Float>) -> Void
    let output: (UnsafePointer<Float>, Int, Range<Int>, Range<Int>, Int, Int, Int, UnsafeMutablePointer<Float>) -> Void
}

/// The scalar kernels, and the SIMD input and output transforms of the baseline level (NEON
/// here; SIMD4 in YOLOKernelsBaseline), checked alike (and bit-identical to them by design).
let baseline = KernelsBaseline.kernelSet
let winogradVariants = [
    WinogradKernels(name: "F(2x2,3x3)", reference: .f2x2,
        transformKernels: { winogradTransformKernels($0, filterCount: $1, channels: $2, filters: $3, into: $4) },
        input: { winogradInput($0, height: $1, width: $2, channelCount: $3, channels: $4, tileRows: $5, tilesWide: $6, into: $7) },
        output: { winogradOutput($0, filterCount: $1, filters: $2, tileRows: $3, tilesWide: $4, outHeight: $5, outWidth: $6, into: $7) }),
    WinogradKernels(name: "F(4x4,3x3)", reference: .f4x4,
        transformKernels: { winograd4TransformKernels($0, filterCount: $1, channels: $2, filters: $3, into: $4) },
        input: { winograd4Input($0, height: $1, width: $2, channelCount: $3, channels: $4, tileRows: $5, tilesWide: $6, into: $7) },
        output: { winograd4Output($0, filterCount: $1, filters: $2, tileRows: $3, tilesWide: $4, outHeight: $5, outWidth: $6, into: $7) }),
]
let simdVariants = [
    WinogradKernels(name: "F(2x2,3x3) baseline kernel set", reference: .f2x2, transformKernels: winogradVariants[0].transformKernels,
                    input: baseline.winograd2.input, output: baseline.winograd2.output),
    WinogradKernels(name: "F(4x4,3x3) baseline kernel set", reference: .f4x4, transformKernels: winogradVariants[1].transformKernels,
                    input: baseline.winograd4.input, output: baseline.winograd4.output),
]

func checkWinograd(_ v: WinogradKernels) {
    let ref = v.reference, m = ref.m, positions = ref.positions
    for (f, c, h, w) in [(3, 2, 5, 5), (4, 3, 13, 13), (5, 2, 8, 11), (2, 3, 1, 1), (3, 4, 26, 7), (6, 1, 10, 9)] {
        let weights = rng.floats(f * c * 9)
        let src = randomTensor(c, h, w)
        let th = (h + m - 1) / m, tw = (w + m - 1) / m, tiles = th * tw

        // Kernel transform, all filters, then a sub-range written alone.
        var u = [Float](repeating: .nan, count: positions * f * c)
        weights.withUnsafeBufferPointer { wp in ptr(&u) { v.transformKernels(wp.baseAddress!, f, c, 0..<f, $0) } }
        expect("winograd \(v.name) kernel transform f=\(f) c=\(c)", u, ref.kernels(weights, filters: f, channels: c), tolerance: 2e-6)
        var uPart = [Float](repeating: .nan, count: positions * f * c)
        let fr = (f / 2)..<f
        weights.withUnsafeBufferPointer { wp in ptr(&uPart) { v.transformKernels(wp.baseAddress!, f, c, fr, $0) } }
        var uPartRef = uPart
        for xi in 0..<positions { for fi in fr { for ci in 0..<c { uPartRef[xi * f * c + fi * c + ci] = u[xi * f * c + fi * c + ci] } } }
        expect("winograd \(v.name) kernel transform f=\(f) c=\(c) filters \(fr.lowerBound)..<\(fr.upperBound)", uPart, uPartRef)

        // Input transform, in two blocks of tile rows.
        let blocks = th > 1 ? [0..<(th / 2), (th / 2)..<th] : [0..<th]
        var mAll = [Float](repeating: 0, count: positions * f * tiles)   // the products, all tiles
        for rowsBlock in blocks {
            let bt = rowsBlock.count * tw
            var vIn = [Float](repeating: .nan, count: positions * c * bt)
            src.values.withUnsafeBufferPointer { sp in ptr(&vIn) { v.input(sp.baseAddress!, h, w, c, 0..<c, rowsBlock, tw, $0) } }
            expect("winograd \(v.name) input transform c=\(c) \(h)x\(w) tile rows \(rowsBlock.lowerBound)..<\(rowsBlock.upperBound)",
                   vIn, ref.input(src, tileRows: rowsBlock, tilesWide: tw),
                   tolerance: m == 2 ? 2e-6 : 2e-5)   // F(4x4): coefficients up to 5, cancellation
            // The products of the kernels' U and V (naive, in double), then the output transform of this block.
            let mBlock = ref.products(u, vIn, filters: f, channels: c, tiles: bt)
            for xi in 0..<positions { for fi in 0..<f { for t in 0..<bt {
                mAll[xi * f * tiles + fi * tiles + rowsBlock.lowerBound * tw + t] = mBlock[xi * f * bt + fi * bt + t]
            } } }
            var out = [Float](repeating: .nan, count: f * h * w)
            for fi in 0..<f { for y in 0..<h where !rowsBlock.contains(y / m) { for x in 0..<w { out[(fi * h + y) * w + x] = -9 } } }
            mBlock.withUnsafeBufferPointer { mp in ptr(&out) { v.output(mp.baseAddress!, f, 0..<f, rowsBlock, tw, h, w, $0) } }
            var outRef = [Float](repeating: -9, count: f * h * w)
            ref.output(mBlock, filters: f, tileRows: rowsBlock, tilesWide: tw, height: h, width: w, into: &outRef)
            expect("winograd \(v.name) output transform f=\(f) \(h)x\(w) tile rows \(rowsBlock.lowerBound)..<\(rowsBlock.upperBound)",
                   out, outRef, tolerance: m == 2 ? 2e-5 : 1e-4)
        }
        // End to end: the three kernels and the products against a direct 3x3 convolution (pad 1).
        var out = [Float](repeating: .nan, count: f * h * w)
        mAll.withUnsafeBufferPointer { mp in ptr(&out) { v.output(mp.baseAddress!, f, 0..<f, 0..<th, tw, h, w, $0) } }
        expect("winograd \(v.name) convolution f=\(f) c=\(c) \(h)x\(w) vs direct 3x3", out,
               Naive.convolution(src, filters: f, size: 3, stride: 1, pad: 1, weights: weights).values, tolerance: 1e-4)
    }
}

// MARK: - Packed GEMM

enum CheckFMA: GemmISA { static var fusedMultiplyAdd: Bool { true } }
enum CheckNoFMA: GemmISA { static var fusedMultiplyAdd: Bool { false } }

/// C = A · B through a packed GEMM (`pack` packs A, `run` computes rows of C) against the naive
/// product in double, within 1e-5 of the sum of |a||b| per element. C has a wider row stride
/// than n, B too; what the GEMM must not write (columns past n, rows outside the range) is
/// checked to be untouched. Rows are computed in two ranges split at a multiple of MR.
func checkGemm(_ name: String, mr: Int, kc: Int, nc: Int, crossArch: Bool,
               shapes: [(m: Int, n: Int, k: Int)],
               packedASize: (Int, Int) -> Int,
               pack: (UnsafePointer<Float>, Int, Int, Int, UnsafeMutablePointer<Float>) -> Void,
               scratchSize: (Int, Int, Int) -> Int,
               run: (Int, Int, Int, UnsafePointer<Float>, UnsafePointer<Float>, Int, UnsafeMutablePointer<Float>, Int,
                     UnsafeMutablePointer<Float>, Range<Int>) -> Void) {
    for (m, n, k) in shapes {
        let lda = k + 1, ldb = n + 3, ldc = n + 5
        let a = rng.floats(m * lda), b = rng.floats(k * ldb)
        var packed = [Float](repeating: .nan, count: max(1, packedASize(m, k)))
        a.withUnsafeBufferPointer { ap in ptr(&packed) { pack(ap.baseAddress!, lda, m, k, $0) } }
        var scratch = [Float](repeating: .nan, count: max(1, scratchSize(m, n, k)))
        let sentinel: Float = -12345
        var c = [Float](repeating: sentinel, count: m * ldc)
        let split = min(m, (m / 2) / mr * mr)
        for rows in [0..<split, split..<m] where !rows.isEmpty {
            packed.withUnsafeBufferPointer { pp in b.withUnsafeBufferPointer { bp in
                scratch.withUnsafeMutableBufferPointer { sp in
                    ptr(&c) { run(m, n, k, pp.baseAddress!, bp.baseAddress!, ldb, $0, ldc, sp.baseAddress!, rows) }
                }
            } }
        }
        let want = Naive.gemm(a, lda: lda, b, ldb: ldb, m: m, n: n, k: k, ldc: ldc, untouched: sentinel)
        expect("gemm \(name) m=\(m) n=\(n) k=\(k) kc=\(kc) nc=\(nc) rows split at \(split)", c, want.c,
               tolerance: 1e-5, scales: want.magnitudes, crossArch: crossArch)
    }
}

/// The generic driver with a micro-kernel and small blocks (several KC and NC blocks, edge tiles).
func checkPackedGemm<K: GemmMicroKernel>(_ kernel: K.Type, _ name: String) {
    let kc = 24, nc = 2 * K.nr + 5
    checkGemm("PackedGemm<\(name)> (MR=\(K.mr), NR=\(K.nr))", mr: K.mr, kc: kc, nc: nc, crossArch: true,
              shapes: [(1, 1, 1), (3, 5, 2), (K.mr, K.nr, 24), (K.mr + 1, K.nr + 1, 25), (13, 50, 37),
                       (2 * K.mr + 3, 3 * K.nr + 7, 71), (9, 2, 30), (4, 100, 0)],
              packedASize: { PackedGemm<K>.packedASize(m: $0, k: $1) },
              pack: { PackedGemm<K>.packA($0, lda: $1, m: $2, k: $3, kc: kc, into: $4) },
              scratchSize: { PackedGemm<K>.scratchSize(m: $0, n: $1, k: $2, kc: kc, nc: nc) },
              run: { PackedGemm<K>.gemm(m: $0, n: $1, k: $2, packedA: $3, b: $4, ldb: $5, c: $6, ldc: $7, scratch: $8,
                                        kc: kc, nc: nc, rowStart: $9.lowerBound, rowEnd: $9.upperBound) })
}

func checkGemms() {
    // Fused and unfused, in both tile shapes and two vector widths: the same code on every CPU, so
    // the bits must agree with the host's (fused on the x86-64 baseline goes through fmaf: slow, exact).
    checkPackedGemm(GemmKernel4x3<SIMD4<Float>, CheckNoFMA>.self, "4x3, SIMD4, mul+add")
    checkPackedGemm(GemmKernel8x3<SIMD4<Float>, CheckFMA>.self, "8x3, SIMD4, fma")
    checkPackedGemm(GemmKernel4x3<SIMD8<Float>, CheckFMA>.self, "4x3, SIMD8, fma")
    checkPackedGemm(GemmKernel8x3<SIMD8<Float>, CheckNoFMA>.self, "8x3, SIMD8, mul+add")
    // The level the engine runs on this CPU (NEON 8x12 with fmla on aarch64, SSE 4x12 on x86-64),
    // with its own blocking: differs per CPU by design, so no bit comparison with the host.
    let g = baseline.gemm
    checkGemm("\(baseline.name) kernel set GEMM (MR=\(g.mr), NR=\(g.nr))", mr: g.mr, kc: g.kc, nc: g.nc, crossArch: false,
              shapes: [(1, 1, 1), (7, 13, 9), (16, 169, 64), (19, 520, 300), (33, 49, 145), (8, 2, 513)],
              packedASize: g.packedASize, pack: g.packA, scratchSize: g.scratchSize, run: g.gemm)
}

// MARK: - Main

@_cdecl("main")
func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    verbose = argc > 1 && String(cString: argv[1]!) == "-v"
    checkActivations()
    checkIm2col()
    checkPooling()
    checkResample()
    for v in winogradVariants + simdVariants { checkWinograd(v) }
    checkGemms()
    checkDirectConv()
    checkInt8Gemms()
    checkFP16Gemm()
    checkFP16Direct()
    checkFP16WeightsGemms()
    if verbose { for l in lines { print(l) } }
    print("kernels: \(checks) checks (activate, biasActivate x \(Activation.allCases.count) activations; im2col; maxPool, maxPool2x2, maxPool2x2Stride1; upsampleNearest; add; Winograd F(2x2,3x3) and F(4x4,3x3) kernel, input, output transforms and end to end, scalar and the baseline kernel set's SIMD ones; packed GEMM: 4 generic micro-kernel instantiations and the baseline kernel set's; direct 3x3 convolution + 2x2 max pool; INT8 GEMM (8-bit, and 10-bit in two passes) of the baseline kernel set, and of the dotprod one where the CPU has sdot; the baseline set's 16-bit pair GEMM; FP16 GEMM and direct conv + pool of the dotprod set where the CPU has asimdhp; FP32 GEMM on FP16 weights of the baseline set, and of the dotprod one where the CPU has asimddp), \(failures) mismatches")
    return failures == 0 ? 0 : 1
}
