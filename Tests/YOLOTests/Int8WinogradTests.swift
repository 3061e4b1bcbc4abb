import XCTest
import YOLOReference
@testable @_spi(Kernels) import YOLOEngine
@testable import YOLOCore
import YOLOKernels

/// INT8 Winograd F(4x4) (`winograd4-int8`): the 16-bit pair GEMM of every level against naive
/// Int64 sums (bit for bit, with its float accumulation between blocks of k), the integer input
/// transform against Bᵀ d B with explicit matrices, and the convolution through the planner
/// against a naive INT8 Winograd (bit for bit) and against FP32 (within the quantization error).
/// INT8 Winograd F(2x2) (`winograd2-int8`) against INT8 im2col, whose integer sums it computes.
final class Int8WinogradTests: XCTestCase {
    /// Every level this CPU runs that has the pair GEMM.
    var levels: [(KernelLevel, Int8Functions)] {
        KernelLevel.supported.compactMap { level in level.kernelSet?.int16Pairs.map { (level, $0) } }
    }

    /// The pair GEMM `kern` against YOLOReference's PairGemmCase (naive Int64 sums per block of
    /// k, as the driver splits the pairs into blocks of at most kc), bit for bit. Kernels within
    /// 10 bits (`Int16Pairs.kernelLimit`), inputs within F(4x4)'s 100 x 255.
    static func checkGemm(_ level: String, _ kern: Int8Functions, m: Int, n: Int, channels c: Int, extreme: Bool = false,
                          line: UInt = #line) {
        XCTAssertEqual(Int16Pairs.kernelLimit, 511, "PairGemmCase's kernels are 10 bits")
        var rng = SeededRandom(seed: UInt64(m * 31 + n * 7 + c))
        let t = PairGemmCase(m: m, n: n, channels: c, extreme: extreme, rng: &rng)
        var packed = [UInt8](repeating: 0xEE, count: kern.packedASize(m: m, k: 2 * c))
        var scratch = [UInt8](repeating: 0xEE, count: kern.scratchSize(m: m, n: n, k: 2 * c))
        var out = [Float](repeating: .nan, count: m * n)
        let comp = [Int32](repeating: 0, count: m)
        t.a.withUnsafeBytes { pa in
            packed.withUnsafeMutableBytes {
                kern.packA(pa.baseAddress!.assumingMemoryBound(to: Int8.self), lda: 2 * c, m: m, k: 2 * c, into: $0.baseAddress!)
            }
        }
        packed.withUnsafeBytes { pa in scratch.withUnsafeMutableBytes { ps in
            kern.gemm(m: m, n: n, k: 2 * c, packedA: pa.baseAddress!, b: t.grouped, ldb: n, c: &out, ldc: n, comp: comp,
                      scale: t.scale, scratch: ps.baseAddress!)
        } }
        guard let want = t.expected(kc: kern.kc) else { return XCTFail("a block's sum overflows int32 at kc \(kern.kc)", line: line) }
        let bad = (0..<m * n).filter { out[$0].bitPattern != want[$0].bitPattern }
        XCTAssertEqual(bad.count, 0, "\(level) pairs \(m)x\(n)x\(c): first wrong at \(bad.first.map { "\($0): \(out[$0]) vs \(want[$0])" } ?? "")",
                       line: line)
    }

    func testPairGemmAtEveryLevel() {
        XCTAssertFalse(levels.isEmpty, "some level has the pair GEMM")
        for (level, kern) in levels {
            XCTAssertLessThanOrEqual(kern.kc, Int16Pairs.maxGroupsPerBlock)
            // Tails around MR, NR and a pair (odd channels); k over one, two and several blocks.
            for (m, n, c) in [(1, 1, 1), (3, 5, 3), (4, 16, 2), (7, 17, 5), (9, 49, 36), (17, 100, 129), (33, 37, 257),
                              (8, 600, 64), (5, 23, 1100)] {
                Self.checkGemm("\(level)", kern, m: m, n: n, channels: c)
            }
            // Every product at its largest over the deepest block: int32 must not wrap.
            Self.checkGemm("\(level)", kern, m: 9, n: 50, channels: 1100, extreme: true)
        }
    }

    /// Bᵀ d B of F(4x4) with the explicit matrix, in Int64.
    static func transform(_ d: [[Int64]]) -> [[Int64]] {
        let bt: [[Int64]] = [[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
                             [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]]
        let left = (0..<6).map { i in (0..<6).map { j in (0..<6).reduce(Int64(0)) { $0 + bt[i][$1] * d[$1][j] } } }
        return (0..<6).map { i in (0..<6).map { j in (0..<6).reduce(Int64(0)) { $0 + left[i][$1] * bt[j][$1] } } }
    }

    /// The integer planes, each level's FP32 F(4x4) input transform on them and the int16 pairs
    /// against Bᵀ d B with the explicit matrix, in Int64, exactly.
    func testIntegerInputTransform() {
        var rng = SeededRandom(seed: 5)
        for (c, h, w, rows) in [(3, 9, 10, 0..<3), (4, 13, 13, 1..<3), (1, 1, 1, 0..<1), (5, 16, 7, 2..<4)] {
            let x = rng.floats(c * h * w, -2, 6)     // past the range: clamped
            let q = Int8Quantization(min: -1, max: 5)
            let tw = (w + 3) / 4, tiles = rows.count * tw, pairs = (c + 1) / 2
            var planes = [Float](repeating: .nan, count: c * h * w)
            winogradIntegerPlanes(x, count: x.count, quantization: q, into: &planes)
            for (i, d) in planes.enumerated() { XCTAssertEqual(d, Float(Int32(q.quantize(x[i])) - q.zeroPoint)) }
            for level in KernelLevel.supported {
                guard let transforms = level.kernelSet?.winograd(tile: 4) else { continue }
                var v = [Float](repeating: .nan, count: 36 * c * tiles)
                transforms.input(planes, height: h, width: w, channelCount: c, channels: 0..<c, tileRows: rows, tilesWide: tw,
                                 into: &v)
                // In two column ranges, as two threads would.
                let half = tiles / 2
                for columns in [half..<tiles, 0..<half] {
                    packWinogradPairs(&v, positions: 36, channels: c, tiles: tiles, columns: columns)
                }
                let words = v.map(\.bitPattern)
                for ch in 0..<c {
                    for (n, ty) in rows.enumerated() {
                        for tx in 0..<tw {
                            let d: [[Int64]] = (0..<6).map { i in (0..<6).map { j in
                                let y = 4 * ty - 1 + i, xx = 4 * tx - 1 + j
                                guard y >= 0, y < h, xx >= 0, xx < w else { return 0 }
                                return Int64(q.quantize(x[(ch * h + y) * w + xx])) - Int64(q.zeroPoint)
                            } }
                            let want = Self.transform(d)
                            for xi in 0..<36 {
                                let word = words[(xi * pairs + ch / 2) * tiles + n * tw + tx]
                                let got = Int16(truncatingIfNeeded: ch % 2 == 0 ? word : word >> 16)
                                XCTAssertEqual(Int64(got), want[xi / 6][xi % 6], "\(level) c \(ch) tile \(ty),\(tx) xi \(xi)")
                            }
                        }
                    }
                }
                // The second half of a last, odd channel's pair is zero.
                if c % 2 == 1 {
                    XCTAssertTrue((0..<36 * tiles).allSatisfy { i in words[(i / tiles * pairs + pairs - 1) * tiles + i % tiles] >> 16 == 0 })
                }
            }
        }
    }

    /// The largest |Bᵀ d B| of F(4x4) (d in -255...255) fits int16: 100 x 255.
    func testTransformBoundFitsInt16() {
        let worst = (0..<36).map { xi -> Int64 in
            // Each entry is a sum of d[i][j] times products of Bᵀ's coefficients: its largest
            // magnitude is 255 x the sum of their absolute values.
            let unit = (0..<36).map { k -> Int64 in
                var d = [[Int64]](repeating: [Int64](repeating: 0, count: 6), count: 6)
                d[k / 6][k % 6] = 1
                return abs(Self.transform(d)[xi / 6][xi % 6])
            }
            return 255 * unit.reduce(0, +)
        }.max()!
        XCTAssertEqual(worst, 25500)
        XCTAssertLessThan(worst, Int64(Int16.max))
        // A block of k: 2 channels per group, each product at most kernelLimit x worst.
        XCTAssertLessThan(2 * Int64(Int16Pairs.maxGroupsPerBlock) * Int64(Int16Pairs.kernelLimit) * worst, Int64(Int32.max))
    }

    /// The layer computed the INT8 Winograd way naively (the shared output transform aside).
    static func reference(_ x: [Float], _ s: Shape, filters m: Int, weights: [Float], bias: [Float], activation: Activation,
                          input q: Int8Quantization, kc: Int) -> [Float] {
        let c = s.c, th = (s.h + 3) / 4, tw = (s.w + 3) / 4, tiles = th * tw
        var u = [Float](repeating: 0, count: 36 * m * c)
        winograd4TransformKernels(weights, filterCount: m, channels: c, filters: 0..<m, into: &u)
        var mo = [Float](repeating: 0, count: 36 * m * tiles)
        var vs = [[[Int64]]](repeating: [], count: c * tiles)
        for ch in 0..<c {
            for t in 0..<tiles {
                let (ty, tx) = (t / tw, t % tw)
                vs[ch * tiles + t] = transform((0..<6).map { i in (0..<6).map { j in
                    let y = 4 * ty - 1 + i, xx = 4 * tx - 1 + j
                    guard y >= 0, y < s.h, xx >= 0, xx < s.w else { return 0 }
                    return Int64(q.quantize(x[(ch * s.h + y) * s.w + xx])) - Int64(q.zeroPoint)
                } })
            }
        }
        for xi in 0..<36 {
            var a = [Int16](repeating: 0, count: m * c), scale = [Float](repeating: 0, count: m)
            for f in 0..<m {
                let row = (0..<c).map { u[(xi * m + f) * c + $0] }
                let largest = row.map { abs($0) }.max()!
                let sc = largest > 0 ? largest / 511 : 1
                scale[f] = sc * q.scale
                for ch in 0..<c { a[f * c + ch] = Int16(max(-511, min(511, (row[ch] * (1 / sc)).rounded(.toNearestOrEven)))) }
            }
            let b = (0..<c * tiles).map { Int32(vs[$0][xi / 6][xi % 6]) }
            let part = PairGemmCase(m: m, n: tiles, channels: c, a: a, b: b, scale: scale).expected(kc: kc) ?? [Float](repeating: .nan, count: m * tiles)
            for i in 0..<m * tiles { mo[xi * m * tiles + i] = part[i] }
        }
        var out = [Float](repeating: 0, count: m * s.h * s.w)
        winograd4Output(mo, filterCount: m, filters: 0..<m, tileRows: 0..<th, tilesWide: tw, outHeight: s.h, outWidth: s.w,
                        into: &out)
        let plane = s.h * s.w
        return out.enumerated().map { activate($0.element + bias[$0.offset / plane], activation) }
    }

    /// Block rows: the cache-sized count, or up to twice it where fewer GEMM columns are left to
    /// the pair kernel's edge code (GEMMs of 16 pairs or more); yolov3-tiny's F(2x2) layers 2, 4, 6
    /// with the AVX-512 pair kernel (panels of 48 columns, vectors of 16).
    func testBlockRowsLeaveFewColumnsToTheEdge() {
        func rows(_ c: Int, _ filters: Int, _ side: Int, nr: Int = 48, lanes: Int = 16) -> Int {
            WinogradInt8Conv.blockRows(positions: 16, pairs: (c + 1) / 2, filters: filters, tilesHigh: side / 2,
                                       tilesWide: side / 2, nr: nr, lanes: lanes)
        }
        XCTAssertEqual(rows(16, 32, 208), 3)    // 8 pairs: the cache-sized count
        XCTAssertEqual(rows(32, 64, 104), 4)    // 208 tiles a block (4 panels + a vector), not 156 (3 + 12 columns)
        XCTAssertEqual(rows(64, 128, 52), 8)    // 208 (4 panels + a vector), not 130 (2 panels + 34 columns)
        XCTAssertEqual(rows(64, 128, 52, nr: 12, lanes: 4), 6)   // NEON's 8 x 12 tile: 156 = 13 panels
        XCTAssertEqual(rows(512, 1024, 8), 4)   // never more rows than the map has
    }

    func testConvolutionMatchesNaiveInt8WinogradAndFP32() throws {
        var rng = SeededRandom(seed: 41)
        for (s, filters, act) in [(Shape(c: 3, h: 13, w: 13), 5, Activation.leaky), (Shape(c: 17, h: 9, w: 22), 9, .linear),
                                  (Shape(c: 130, h: 8, w: 8), 4, .leaky), (Shape(c: 8, h: 40, w: 30), 6, .mish),
                                  (Shape(c: 16, h: 72, w: 128), 8, .leaky)] {   // (18 tile rows in 2 blocks)
            let bias = rng.floats(filters), w = rng.floats(filters * s.c * 9)
            let input = rng.floats(s.count, -0.3, 2.5)   // in the range: FP32 comparable (clamping: above)
            let range: ClosedRange<Float> = -0.3...2.5
            let cfg = "[net]\nwidth=\(s.w)\nheight=\(s.h)\nchannels=\(s.c)\n\n[convolutional]\nfilters=\(filters)\nsize=3\n"
                + "stride=1\npad=1\nactivation=\(act.rawValue)\n"
            let config = try DarknetConfig(text: cfg, file: "<cfg>")
            let calibration = Int8Calibration(ranges: [0: range], method: "test", imageCount: 1, cfgFingerprint: config.fingerprint)
            let q = Int8Quantization(min: range.lowerBound, max: range.upperBound)
            let fp32 = try Session(model: try Model(config: config, weights: weightsFile(bias + w)), threads: 1)
            try fp32.forward(input)
            let exact = Array(try fp32.output(ofLayer: 0))
            // Under a sanitizer the best level only (the naive reference per level is most of the
            // time; Int8KernelTests runs each level's kernels there), on 3 threads: the same bits
            // at each count is arithmetic, not memory.
            let sanitized = ProcessInfo.processInfo.environment["YOLO_TEST_SANITIZER"] != nil
            for (level, kern) in sanitized ? Array(levels.suffix(1)) : levels {
                let want = Self.reference(input, s, filters: filters, weights: w, bias: bias, activation: act, input: q, kc: kern.kc)
                let model = try Model(config: config, weights: weightsFile(bias + w),
                                      options: ModelOptions(gemm: .kernels, kernelLevel: level, algorithms: [0: ConvAlgorithm(.winograd4, .int8)],
                                                            precision: .int8, calibration: calibration))
                XCTAssertEqual(model.inference.steps.map(\.algorithm), ["winograd4-int8"])
                XCTAssertEqual(model.plan.entries.map(\.precision), [.int8])
                for threads in sanitized ? [3] : [1, 2, 3] {
                    let session = try Session(model: model, threads: threads)
                    try session.forward(input)
                    let got = Array(try session.output(ofLayer: 0))
                    let bad = (0..<got.count).filter { got[$0].bitPattern != want[$0].bitPattern }
                    XCTAssertEqual(bad.count, 0, "\(s) \(level) threads \(threads): first at \(bad.first.map { "\($0): \(got[$0]) vs \(want[$0])" } ?? "")")
                }
                let top = exact.map { abs($0) }.max()!, worst = zip(want, exact).map { abs($0 - $1) }.max()!
                XCTAssertLessThanOrEqual(worst, 0.03 * top, "\(s): within 3% of the output's range of FP32")
            }
        }
    }

    /// F(2x2)'s integer sums are INT8 im2col's (its int16 kernels are the s8 weights' exact
    /// transform): only the float output transform rounds differently. Inputs beyond the
    /// calibrated range (clamped alike), filters with a weight at +-127 in every tap of a channel
    /// (kernel values at 9 x 127), channels past a 128-channel block of int32 sums.
    func testF2x2ComputesInt8Im2colsSums() throws {
        var rng = SeededRandom(seed: 43)
        for (s, filters, act) in [(Shape(c: 3, h: 13, w: 13), 5, Activation.leaky), (Shape(c: 17, h: 9, w: 22), 9, .linear),
                                  (Shape(c: 300, h: 7, w: 7), 4, .leaky), (Shape(c: 8, h: 40, w: 30), 6, .mish),
                                  (Shape(c: 16, h: 72, w: 128), 8, .leaky)] {   // (36 tile rows in 3 blocks)
            let bias = rng.floats(filters)
            var w = rng.floats(filters * s.c * 9)
            for t in 0..<9 { w[t] = 1; w[9 + t] = -1 }   // filter 0: +-127 taps in channels 0 and 1
            let input = rng.floats(s.count, -1, 3)
            let range: ClosedRange<Float> = -0.3...2.5
            let cfg = "[net]\nwidth=\(s.w)\nheight=\(s.h)\nchannels=\(s.c)\n\n[convolutional]\nfilters=\(filters)\nsize=3\n"
                + "stride=1\npad=1\nactivation=\(act.rawValue)\n"
            let config = try DarknetConfig(text: cfg, file: "<cfg>")
            let calibration = Int8Calibration(ranges: [0: range], method: "test", imageCount: 1, cfgFingerprint: config.fingerprint)
            for (level, _) in levels {
                var outputs: [[Float]] = []
                for algorithm in [ConvAlgorithm(.im2col, .int8), ConvAlgorithm(.winograd2, .int8)] {
                    let model = try Model(config: config, weights: weightsFile(bias + w),
                                          options: ModelOptions(gemm: .kernels, kernelLevel: level, algorithms: [0: algorithm],
                                                                precision: .int8, calibration: calibration))
                    XCTAssertEqual(model.inference.steps.map(\.algorithm), [algorithm.rawValue])
                    for threads in algorithm == ConvAlgorithm(.im2col, .int8) ? [1] : [1, 2, 3] {
                        let session = try Session(model: model, threads: threads)
                        try session.forward(input)
                        outputs.append(Array(try session.output(ofLayer: 0)))
                    }
                }
                let top = outputs[0].map { abs($0) }.max()!
                for (threads, got) in zip(1..., outputs.dropFirst()) {
                    let worst = zip(got, outputs[0]).map { abs($0 - $1) }.max()!
                    XCTAssertLessThanOrEqual(worst, 2e-6 * top, "\(s) \(level) threads \(threads): F(2x2) vs im2col, largest output \(top)")
                }
            }
        }
    }
}
