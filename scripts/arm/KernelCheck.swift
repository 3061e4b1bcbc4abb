// scripts/arm-check.sh, part 1: every kernel of YOLOKernels (built with Embedded Swift for
// aarch64, where the SIMD types are NEON) against naive references written here, on generated
// inputs of several shapes (odd sizes, vector tails, borders). Not part of the SwiftPM package.
// Exit status 0 when everything matches, 1 otherwise. Also builds for the host (plain swiftc),
// so the same checks can run on x86_64; each check prints a digest of the kernel's output bits,
// which arm-check.sh compares between the two.
import Glibc
import YOLOKernels
import YOLOKernelsBaseline

// MARK: - Bookkeeping

var failures = 0
var checks = 0
var lines: [String] = []

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

/// Compares a kernel's output with the reference: exactly (`tolerance` 0) or within
/// `tolerance` relative to max(1, |reference|). Records and prints the result.
/// With `scales`, element i may differ by `tolerance * scales[i]` instead. `crossArch: false`
/// keeps the digest out of the comparison with the host (a kernel that differs by design per CPU).
func expect(_ what: String, _ got: [Float], _ want: [Float], tolerance: Float = 0, scales: [Float]? = nil,
            crossArch: Bool = true) {
    checks += 1
    var worst: Float = 0
    var firstBad = -1
    if got.count != want.count {
        firstBad = 0
    } else {
        for i in 0..<got.count {
            let d = got[i] - want[i]
            let ad = d < 0 ? -d : d
            let scale = scales?[i] ?? max(1, want[i] < 0 ? -want[i] : want[i])
            let bad = tolerance == 0 ? got[i].bitPattern != want[i].bitPattern && !(got[i] == want[i]) : !(ad <= tolerance * scale)
            if ad > worst || ad.isNaN { worst = ad.isNaN ? .infinity : ad }
            if bad && firstBad < 0 { firstBad = i }
        }
    }
    let line = "\(what): \(got.count) values, max abs diff \(worst) digest \(hex(digest(got)))"
    if firstBad >= 0 {
        failures += 1
        if got.count != want.count {
            print("MISMATCH \(what): \(got.count) values, the reference has \(want.count)")
        } else {
            print("MISMATCH \(line): first at \(firstBad): \(got[firstBad]) vs \(want[firstBad])")
        }
    } else if verbose {
        print("ok \(line)")
    }
    lines.append((crossArch ? "digest " : "digest-local ") + line)
}

var verbose = false

/// Deterministic pseudo-random numbers (xorshift), the same on every machine.
struct SeededRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state ^= state << 13; state ^= state >> 7; state ^= state << 17
        return state
    }
    /// Uniform in [lo, hi).
    mutating func float(_ lo: Float = -1, _ hi: Float = 1) -> Float {
        lo + (hi - lo) * Float(next() >> 40) / Float(1 << 24)
    }
    mutating func floats(_ n: Int, _ lo: Float = -1, _ hi: Float = 1) -> [Float] {
        var a = [Float](repeating: 0, count: n)
        for i in 0..<n { a[i] = float(lo, hi) }
        return a
    }
}

var rng = SeededRandom(seed: 2024)
let cExp: (Double) -> Double = { Glibc.exp($0) }

func ptr(_ a: inout [Float], _ body: (UnsafeMutablePointer<Float>) -> Void) {
    a.withUnsafeMutableBufferPointer { body($0.baseAddress!) }
}

// MARK: - Activations

func refActivate(_ v: Float, _ a: Activation) -> Float {
    switch a {
    case .linear: return v
    case .leaky: return v > 0 ? v : v * 0.1
    case .relu: return v > 0 ? v : 0
    case .logistic: return Float(1.0 / (1.0 + Glibc.exp(-Double(v))))
    // Darknet's softplus threshold 20; tanh and log1p from libm (the kernel uses exp alone).
    case .mish: return v > 20 ? v : Float(Double(v) * Glibc.tanh(Glibc.log1p(Glibc.exp(Double(v)))))
    case .swish: return v * Float(1.0 / (1.0 + Glibc.exp(-Double(v))))
    }
}

/// Exact except mish, whose reference takes another route through libm.
func activationTolerance(_ a: Activation) -> Float { a == .mish ? 1e-6 : 0 }

func actName(_ a: Activation) -> String { a.rawValue }

func checkActivations() {
    for a in Activation.allCases {
        for count in [1, 15, 16, 17, 33, 100, 1000] {
            let x = rng.floats(count, -6, 6)
            var got = x
            got.withUnsafeMutableBufferPointer { activate($0.baseAddress!, count: count, activation: a, exp: cExp) }
            expect("activate \(actName(a)) n=\(count)", got, x.map { refActivate($0, a) }, tolerance: activationTolerance(a))
            expect("activate(_:_:exp:) \(actName(a)) n=\(count)", x.map { activate($0, a, exp: cExp) }, got)
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
                                 channelStride: stride == spatial ? nil : stride, activation: a, exp: cExp)
                }
            }
            var want = x
            for c in range { for i in 0..<spatial { want[c * stride + i] = refActivate(x[c * stride + i] + bias[c], a) } }
            expect("biasActivate \(actName(a)) c=\(channels) spatial=\(spatial) stride=\(stride) channels \(range.lowerBound)..<\(range.upperBound)",
                   got, want, tolerance: activationTolerance(a))
        }
    }
}

// MARK: - im2col

func checkIm2col() {
    for (c, h, w, k, s, p) in [(1, 5, 7, 3, 1, 1), (3, 13, 11, 3, 1, 1), (2, 9, 10, 3, 2, 1), (4, 8, 8, 1, 1, 0),
                                (2, 7, 5, 5, 1, 2), (3, 6, 9, 3, 2, 0), (2, 1, 1, 3, 1, 1), (1, 12, 17, 2, 2, 0)] {
        let oh = (h + 2 * p - k) / s + 1, ow = (w + 2 * p - k) / s + 1
        let src = rng.floats(c * h * w)
        let rows = c * k * k
        // The whole matrix, and a block of output rows with a sub-range of its rows.
        for (outRows, rowRange) in [(0..<oh, 0..<rows), (oh / 3..<oh, rows / 2..<rows)] {
            let n = outRows.count * ow
            var got = [Float](repeating: .nan, count: rows * n)
            src.withUnsafeBufferPointer { sp in
                ptr(&got) { im2col(sp.baseAddress!, height: h, width: w, kernel: k, stride: s, pad: p,
                                   outWidth: ow, outRows: outRows, rows: rowRange, into: $0) }
            }
            var want = [Float](repeating: .nan, count: rows * n)
            for r in rowRange {
                let ch = r / (k * k), ky = r / k % k, kx = r % k
                for (j, oy) in outRows.enumerated() {
                    for ox in 0..<ow {
                        let iy = oy * s + ky - p, ix = ox * s + kx - p
                        want[r * n + j * ow + ox] = iy >= 0 && iy < h && ix >= 0 && ix < w ? src[(ch * h + iy) * w + ix] : 0
                    }
                }
            }
            expect("im2col c=\(c) \(h)x\(w) k=\(k) stride=\(s) pad=\(p) outRows \(outRows.lowerBound)..<\(outRows.upperBound) rows \(rowRange.lowerBound)..<\(rowRange.upperBound)",
                   got, want)
        }
    }
}

// MARK: - Pooling

func refMaxPool(_ src: [Float], c: Int, h: Int, w: Int, size: Int, stride: Int, pad: Int, oh: Int, ow: Int) -> [Float] {
    var out = [Float](repeating: 0, count: c * oh * ow)
    let off = -(pad / 2)
    for ch in 0..<c {
        for oy in 0..<oh {
            for ox in 0..<ow {
                var m = -Float.greatestFiniteMagnitude
                for dy in 0..<size {
                    for dx in 0..<size {
                        let y = oy * stride + off + dy, x = ox * stride + off + dx
                        if y >= 0 && y < h && x >= 0 && x < w { m = max(m, src[(ch * h + y) * w + x]) }
                    }
                }
                out[(ch * oh + oy) * ow + ox] = m
            }
        }
    }
    return out
}

func checkPooling() {
    // (channels, h, w, size, stride, pad): Darknet's output size (h + pad - size) / stride + 1.
    for (c, h, w, size, s, p) in [(3, 8, 8, 2, 2, 1), (2, 9, 7, 2, 2, 1), (4, 13, 13, 2, 1, 1), (2, 5, 6, 2, 1, 1),
                                   (3, 10, 12, 3, 2, 2), (2, 7, 7, 3, 1, 2), (1, 6, 5, 2, 2, 0), (2, 11, 9, 5, 3, 4),
                                   (1, 1, 1, 2, 1, 1), (3, 26, 26, 2, 2, 1)] {
        let oh = (h + p - size) / s + 1, ow = (w + p - size) / s + 1
        let src = rng.floats(c * h * w, -3, 3)
        let want = refMaxPool(src, c: c, h: h, w: w, size: size, stride: s, pad: p, oh: oh, ow: ow)
        var got = [Float](repeating: .nan, count: c * oh * ow)
        src.withUnsafeBufferPointer { sp in
            ptr(&got) { maxPool(sp.baseAddress!, height: h, width: w, size: size, stride: s, pad: p,
                                outHeight: oh, outWidth: ow, channels: 0..<c, into: $0) }
        }
        expect("maxPool c=\(c) \(h)x\(w) size=\(size) stride=\(s) pad=\(p) -> \(oh)x\(ow)", got, want)
        // The specialised variants, called directly (a sub-range of channels).
        if size == 2 && s == 2 && h >= 2 && w >= 2 {
            let oh2 = h / 2, ow2 = w / 2
            let want2 = refMaxPool(src, c: c, h: h, w: w, size: 2, stride: 2, pad: 0, oh: oh2, ow: ow2)
            var got2 = want2
            let range = (c > 1 ? 1 : 0)..<c
            for ch in range { for i in 0..<(oh2 * ow2) { got2[ch * oh2 * ow2 + i] = .nan } }
            src.withUnsafeBufferPointer { sp in
                ptr(&got2) { maxPool2x2(sp.baseAddress!, height: h, width: w, outHeight: oh2, outWidth: ow2,
                                        channels: range, into: $0) }
            }
            expect("maxPool2x2 c=\(c) \(h)x\(w) channels \(range.lowerBound)..<\(range.upperBound)", got2, want2)
        }
        if size == 2 && s == 1 && p == 1 {
            let want1 = refMaxPool(src, c: c, h: h, w: w, size: 2, stride: 1, pad: 1, oh: h, ow: w)
            var got1 = [Float](repeating: .nan, count: c * h * w)
            src.withUnsafeBufferPointer { sp in
                ptr(&got1) { maxPool2x2Stride1(sp.baseAddress!, height: h, width: w, channels: 0..<c, into: $0) }
            }
            expect("maxPool2x2Stride1 c=\(c) \(h)x\(w)", got1, want1)
        }
    }
}

// MARK: - Resampling and add

func checkResample() {
    for (c, h, w, s, scale) in [(3, 13, 13, 2, Float(1)), (2, 5, 7, 2, 0.5), (1, 3, 4, 3, 1), (4, 1, 1, 2, 2), (2, 6, 9, 1, 1)] {
        let src = rng.floats(c * h * w)
        let oh = h * s, ow = w * s
        var want = [Float](repeating: 0, count: c * oh * ow)
        for ch in 0..<c { for y in 0..<oh { for x in 0..<ow { want[(ch * oh + y) * ow + x] = src[(ch * h + y / s) * w + x / s] * scale } } }
        var got = [Float](repeating: .nan, count: c * oh * ow)
        src.withUnsafeBufferPointer { sp in
            ptr(&got) { upsampleNearest(sp.baseAddress!, height: h, width: w, stride: s, scale: scale, channels: 0..<c, into: $0) }
        }
        expect("upsampleNearest c=\(c) \(h)x\(w) stride=\(s) scale=\(scale)", got, want)
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

/// A small dense matrix (row-major) for the references.
struct Matrix {
    var rows: Int, cols: Int, a: [Double]
    init(_ rows: Int, _ cols: Int, _ a: [Double]) { self.rows = rows; self.cols = cols; self.a = a }
    subscript(r: Int, c: Int) -> Double { a[r * cols + c] }
    static func * (x: Matrix, y: Matrix) -> Matrix {
        var out = [Double](repeating: 0, count: x.rows * y.cols)
        for i in 0..<x.rows { for j in 0..<y.cols { var s = 0.0; for k in 0..<x.cols { s += x[i, k] * y[k, j] }; out[i * y.cols + j] = s } }
        return Matrix(x.rows, y.cols, out)
    }
    var t: Matrix {
        var out = [Double](repeating: 0, count: rows * cols)
        for i in 0..<rows { for j in 0..<cols { out[j * rows + i] = self[i, j] } }
        return Matrix(cols, rows, out)
    }
}

/// F(m x m, 3x3): tile m, patch n = m + 2, with G (n x 3), Bᵀ (n x n), Aᵀ (m x n) as in the kernels' comments.
struct WinogradVariant {
    let name: String, m: Int
    let G: Matrix, BT: Matrix, AT: Matrix
    var n: Int { m + 2 }
    let transformKernels: (UnsafePointer<Float>, Int, Int, Range<Int>, UnsafeMutablePointer<Float>) -> Void
    let input: (UnsafePointer<Float>, Int, Int, Int, Range<Int>, Range<Int>, Int, UnsafeMutablePointer<Float>) -> Void
    let output: (UnsafePointer<Float>, Int, Range<Int>, Range<Int>, Int, Int, Int, UnsafeMutablePointer<Float>) -> Void
}

let variants = [
    WinogradVariant(name: "F(2x2,3x3)", m: 2,
        G: Matrix(4, 3, [1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1]),
        BT: Matrix(4, 4, [1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1]),
        AT: Matrix(2, 4, [1, 1, 1, 0, 0, 1, -1, -1]),
        transformKernels: { winogradTransformKernels($0, filterCount: $1, channels: $2, filters: $3, into: $4) },
        input: { winogradInput($0, height: $1, width: $2, channelCount: $3, channels: $4, tileRows: $5, tilesWide: $6, into: $7) },
        output: { winogradOutput($0, filterCount: $1, filters: $2, tileRows: $3, tilesWide: $4, outHeight: $5, outWidth: $6, into: $7) }),
    WinogradVariant(name: "F(4x4,3x3)", m: 4,
        G: Matrix(6, 3, [1.0 / 4, 0, 0, -1.0 / 6, -1.0 / 6, -1.0 / 6, -1.0 / 6, 1.0 / 6, -1.0 / 6,
                         1.0 / 24, 1.0 / 12, 1.0 / 6, 1.0 / 24, -1.0 / 12, 1.0 / 6, 0, 0, 1]),
        BT: Matrix(6, 6, [4, 0, -5, 0, 1, 0, 0, -4, -4, 1, 1, 0, 0, 4, -4, -1, 1, 0,
                          0, -2, -1, 2, 1, 0, 0, 2, -1, -2, 1, 0, 0, 4, 0, -5, 0, 1]),
        AT: Matrix(4, 6, [1, 1, 1, 1, 1, 0, 0, 1, -1, 2, -2, 0, 0, 1, 1, 4, 4, 0, 0, 1, -1, 8, -8, 1]),
        transformKernels: { winograd4TransformKernels($0, filterCount: $1, channels: $2, filters: $3, into: $4) },
        input: { winograd4Input($0, height: $1, width: $2, channelCount: $3, channels: $4, tileRows: $5, tilesWide: $6, into: $7) },
        output: { winograd4Output($0, filterCount: $1, filters: $2, tileRows: $3, tilesWide: $4, outHeight: $5, outWidth: $6, into: $7) }),
]

/// The SIMD input and output transforms of the baseline level (NEON here; SIMD4 in
/// YOLOKernelsBaseline), checked like the scalar ones (and bit-identical to them by design).
let baseline = KernelsBaseline.kernelSet

let simdVariants = [
    WinogradVariant(name: "F(2x2,3x3) baseline kernel set", m: 2, G: variants[0].G, BT: variants[0].BT, AT: variants[0].AT,
        transformKernels: variants[0].transformKernels,
        input: baseline.winograd2.input, output: baseline.winograd2.output),
    WinogradVariant(name: "F(4x4,3x3) baseline kernel set", m: 4, G: variants[1].G, BT: variants[1].BT, AT: variants[1].AT,
        transformKernels: variants[1].transformKernels,
        input: baseline.winograd4.input, output: baseline.winograd4.output),
]

func checkWinograd(_ v: WinogradVariant) {
    let m = v.m, n = v.n, positions = n * n
    for (f, c, h, w) in [(3, 2, 5, 5), (4, 3, 13, 13), (5, 2, 8, 11), (2, 3, 1, 1), (3, 4, 26, 7), (6, 1, 10, 9)] {
        let weights = rng.floats(f * c * 9)
        let src = rng.floats(c * h * w)
        let th = (h + m - 1) / m, tw = (w + m - 1) / m, tiles = th * tw

        // Kernel transform: U[xi][f][c] = (G g Gᵀ)[xi], all filters, then a sub-range written alone.
        var u = [Float](repeating: .nan, count: positions * f * c)
        weights.withUnsafeBufferPointer { wp in ptr(&u) { v.transformKernels(wp.baseAddress!, f, c, 0..<f, $0) } }
        var uRef = [Float](repeating: .nan, count: positions * f * c)
        for fi in 0..<f { for ci in 0..<c {
            let g = Matrix(3, 3, (0..<9).map { Double(weights[(fi * c + ci) * 9 + $0]) })
            let t = v.G * g * v.G.t
            for xi in 0..<positions { uRef[xi * f * c + fi * c + ci] = Float(t.a[xi]) }
        } }
        expect("winograd \(v.name) kernel transform f=\(f) c=\(c)", u, uRef, tolerance: 2e-6)
        var uPart = [Float](repeating: .nan, count: positions * f * c)
        let fr = (f / 2)..<f
        weights.withUnsafeBufferPointer { wp in ptr(&uPart) { v.transformKernels(wp.baseAddress!, f, c, fr, $0) } }
        var uPartRef = uPart
        for xi in 0..<positions { for fi in fr { for ci in 0..<c { uPartRef[xi * f * c + fi * c + ci] = u[xi * f * c + fi * c + ci] } } }
        expect("winograd \(v.name) kernel transform f=\(f) c=\(c) filters \(fr.lowerBound)..<\(fr.upperBound)", uPart, uPartRef)

        // Input transform, in two blocks of tile rows: V[xi][c][t] = (Bᵀ d B)[xi].
        let blocks = th > 1 ? [0..<(th / 2), (th / 2)..<th] : [0..<th]
        var mAll = [Float](repeating: 0, count: positions * f * tiles)   // the products, all tiles
        for rowsBlock in blocks {
            let bt = rowsBlock.count * tw
            var vIn = [Float](repeating: .nan, count: positions * c * bt)
            src.withUnsafeBufferPointer { sp in ptr(&vIn) { v.input(sp.baseAddress!, h, w, c, 0..<c, rowsBlock, tw, $0) } }
            var vRef = [Float](repeating: .nan, count: positions * c * bt)
            for ci in 0..<c { for (k, ty) in rowsBlock.enumerated() { for tx in 0..<tw {
                var d = [Double](repeating: 0, count: n * n)
                for i in 0..<n { for j in 0..<n {
                    let y = m * ty - 1 + i, x = m * tx - 1 + j
                    if y >= 0 && y < h && x >= 0 && x < w { d[i * n + j] = Double(src[(ci * h + y) * w + x]) }
                } }
                let t = v.BT * Matrix(n, n, d) * v.BT.t
                for xi in 0..<positions { vRef[xi * c * bt + ci * bt + k * tw + tx] = Float(t.a[xi]) }
            } } }
            expect("winograd \(v.name) input transform c=\(c) \(h)x\(w) tile rows \(rowsBlock.lowerBound)..<\(rowsBlock.upperBound)",
                   vIn, vRef, tolerance: m == 2 ? 2e-6 : 2e-5)   // F(4x4): coefficients up to 5, cancellation
            // Products M[xi] = U[xi] · V[xi] (naive, in double), then the output transform of this block.
            var mBlock = [Float](repeating: 0, count: positions * f * bt)
            for xi in 0..<positions { for fi in 0..<f { for t in 0..<bt {
                var s = 0.0
                for ci in 0..<c { s += Double(u[xi * f * c + fi * c + ci]) * Double(vIn[xi * c * bt + ci * bt + t]) }
                mBlock[xi * f * bt + fi * bt + t] = Float(s)
                mAll[xi * f * tiles + fi * tiles + rowsBlock.lowerBound * tw + t] = Float(s)
            } } }
            var out = [Float](repeating: .nan, count: f * h * w)
            for fi in 0..<f { for y in 0..<h where !rowsBlock.contains(y / m) { for x in 0..<w { out[(fi * h + y) * w + x] = -9 } } }
            mBlock.withUnsafeBufferPointer { mp in ptr(&out) { v.output(mp.baseAddress!, f, 0..<f, rowsBlock, tw, h, w, $0) } }
            var outRef = [Float](repeating: -9, count: f * h * w)
            for fi in 0..<f { for (k, ty) in rowsBlock.enumerated() { for tx in 0..<tw {
                let mt = Matrix(n, n, (0..<positions).map { Double(mBlock[$0 * f * bt + fi * bt + k * tw + tx]) })
                let y = v.AT * mt * v.AT.t
                for i in 0..<m { for j in 0..<m {
                    let oy = m * ty + i, ox = m * tx + j
                    if oy < h && ox < w { outRef[(fi * h + oy) * w + ox] = Float(y.a[i * m + j]) }
                } }
            } } }
            expect("winograd \(v.name) output transform f=\(f) \(h)x\(w) tile rows \(rowsBlock.lowerBound)..<\(rowsBlock.upperBound)",
                   out, outRef, tolerance: m == 2 ? 2e-5 : 1e-4)
        }
        // End to end: the three kernels and the products against a direct 3x3 convolution (pad 1).
        var out = [Float](repeating: .nan, count: f * h * w)
        mAll.withUnsafeBufferPointer { mp in ptr(&out) { v.output(mp.baseAddress!, f, 0..<f, 0..<th, tw, h, w, $0) } }
        var direct = [Float](repeating: 0, count: f * h * w)
        for fi in 0..<f { for y in 0..<h { for x in 0..<w {
            var s = 0.0
            for ci in 0..<c { for ky in 0..<3 { for kx in 0..<3 {
                let iy = y + ky - 1, ix = x + kx - 1
                if iy >= 0 && iy < h && ix >= 0 && ix < w {
                    s += Double(weights[((fi * c + ci) * 3 + ky) * 3 + kx]) * Double(src[(ci * h + iy) * w + ix])
                }
            } } }
            direct[(fi * h + y) * w + x] = Float(s)
        } } }
        expect("winograd \(v.name) convolution f=\(f) c=\(c) \(h)x\(w) vs direct 3x3", out, direct, tolerance: 1e-4)
    }
}

// MARK: - Packed GEMM

enum CheckFMA: GemmISA { static var fusedMultiplyAdd: Bool { true } }
enum CheckNoFMA: GemmISA { static var fusedMultiplyAdd: Bool { false } }

/// C = A · B through a packed GEMM (`pack` packs A, `run` computes rows of C) against a naive
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
        var want = [Float](repeating: sentinel, count: m * ldc)
        var scales = [Float](repeating: 0, count: m * ldc)
        for i in 0..<m { for j in 0..<n {
            var sum = 0.0, mag = 0.0
            for p in 0..<k { let t = Double(a[i * lda + p]) * Double(b[p * ldb + j]); sum += t; mag += t < 0 ? -t : t }
            want[i * ldc + j] = Float(sum); scales[i * ldc + j] = Float(mag) + 1e-30
        } }
        expect("gemm \(name) m=\(m) n=\(n) k=\(k) kc=\(kc) nc=\(nc) rows split at \(split)", c, want,
               tolerance: 1e-5, scales: scales, crossArch: crossArch)
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

// MARK: - Direct 3x3 convolution + 2x2 max pool

func checkDirectConv() {
    for (c, h, w, f) in [(3, 8, 10, 5), (1, 2, 2, 9), (4, 6, 34, 16), (16, 4, 20, 17), (3, 10, 70, 8)] {
        let src = rng.floats(c * h * w), weights = rng.floats(f * c * 9)
        // Naive sums in double, zero padding.
        var conv = [Float](repeating: 0, count: f * h * w)
        for o in 0..<f {
            for y in 0..<h {
                for x in 0..<w {
                    var acc = 0.0
                    for ch in 0..<c {
                        for ky in 0..<3 {
                            for kx in 0..<3 {
                                let iy = y + ky - 1, ix = x + kx - 1
                                guard iy >= 0 && iy < h && ix >= 0 && ix < w else { continue }
                                acc += Double(weights[((o * c + ch) * 3 + ky) * 3 + kx]) * Double(src[(ch * h + iy) * w + ix])
                            }
                        }
                    }
                    conv[(o * h + y) * w + x] = Float(acc)
                }
            }
        }
        let direct = baseline.direct
        var packed = [Float](repeating: .nan, count: direct.packedSize(filters: f, channels: c))
        var scratch = [Float](repeating: .nan, count: direct.scratchSize(channels: c, width: w))
        weights.withUnsafeBufferPointer { wp in ptr(&packed) { direct.pack(wp.baseAddress!, filters: f, channels: c, into: $0) } }
        // FMA (NEON) or not (SSE): the sums differ per CPU by design, so no digest comparison.
        do {
            let (oh, ow) = (h / 2, w / 2)
            var want = [Float](repeating: 0, count: f * oh * ow)
            for o in 0..<f {
                for y in 0..<oh {
                    for x in 0..<ow {
                        want[(o * oh + y) * ow + x] =
                            max(max(conv[(o * h + 2 * y) * w + 2 * x], conv[(o * h + 2 * y) * w + 2 * x + 1]),
                                max(conv[(o * h + 2 * y + 1) * w + 2 * x], conv[(o * h + 2 * y + 1) * w + 2 * x + 1]))
                    }
                }
            }
            var got = [Float](repeating: .nan, count: f * oh * ow)
            // In two row ranges, as two threads would.
            for rows in [0..<oh / 2, oh / 2..<oh] {
                src.withUnsafeBufferPointer { sp in packed.withUnsafeBufferPointer { pp in ptr(&scratch) { sc in ptr(&got) { out in
                    direct.pooledRows(sp.baseAddress!, height: h, width: w, channels: c, packed: pp.baseAddress!,
                                      filters: f, rows: rows, into: out, scratch: sc)
                } } } }
            }
            expect("directConv + 2x2 max pool c=\(c) \(h)x\(w) filters=\(f)", got, want,
                   tolerance: 1e-5 * Float(c), crossArch: false)
        }
    }
}

// MARK: - Main

@_cdecl("main")
func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    verbose = argc > 1 && String(cString: argv[1]!) == "-v"
    checkActivations()
    checkIm2col()
    checkPooling()
    checkResample()
    for v in variants + simdVariants { checkWinograd(v) }
    checkGemms()
    checkDirectConv()
    if verbose { for l in lines { print(l) } }
    print("kernels: \(checks) checks (activate, biasActivate x \(Activation.allCases.count) activations; im2col; maxPool, maxPool2x2, maxPool2x2Stride1; upsampleNearest; add; Winograd F(2x2,3x3) and F(4x4,3x3) kernel, input, output transforms and end to end, scalar and the baseline kernel set's SIMD ones; packed GEMM: 4 generic micro-kernel instantiations and the baseline kernel set's; direct 3x3 convolution + 2x2 max pool), \(failures) mismatches")
    return failures == 0 ? 0 : 1
}
