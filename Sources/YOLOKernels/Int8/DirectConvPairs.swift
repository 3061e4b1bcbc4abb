// The direct 3x3 convolution + 2x2 stride-2 max pool of DirectConv.swift on integers (the engine's
// `direct+pool-int8`): the input quantized as INT8 im2col quantizes it (q per tensor, 8 or 10 bits:
// `Int8Quantization.levels`), d = q - zeroPoint as int16, two channels to a 32-bit word; the s8
// weights of two channels to a word too; each sum a run of 16-bit pair multiply-adds (vpdpwssd
// with AVX-512 VNNI and AVX-VNNI, vpmaddwd + vpaddd with AVX2 and AVX-512: the pair dots of
// Int16Pairs.swift), exact in int32 (at most 16 x 9 x 1023 x 127 for `directMaxChannels`
// channels). The pool takes the max of the int32 sums, then one conversion and the filter's scale
// (input scale x weight scale): the same float as INT8 im2col's, because the conversion and a
// positive scale keep the order. So with an 8-bit input the pooled map is bit for bit INT8 im2col
// + pool's, and with a 10-bit one it is the exact sums INT8 Winograd F(2x2) makes in its GEMM
// (before its float output transform).
//
// The layout is DirectConv3x3's: lanes along x split by parity, padded rows split into even and
// odd columns (E[j], O[j]), filters 8 at a time (16 accumulators) where the CPU has 32 vector
// registers, 4 where it has 16; per block the weights as [pair][ky][kx][8] words.
//
// Why: an INT8 model's 10-bit layers (yolov3-tiny's layer 2: 16 channels at 208x208, `a10` in its
// calibration table) had only INT8 Winograd F(2x2), whose GEMM is 8 pairs deep there and whose
// transforms cost as much as its products.

/// The direct conv + pool on int16 pairs, as the engine calls it (`KernelSet.int16Direct`).
public struct DirectPairFunctions: Sendable {
    /// (filters, channels) -> UInt32 words of packed weights.
    public let packedWords: @Sendable (Int, Int) -> Int
    /// (s8 weights as floats, filters x channels x 9; filters; channels; packed)
    public let pack: @Sendable (UnsafePointer<Float>, Int, Int, UnsafeMutablePointer<UInt32>) -> Void
    /// (channels, width) -> floats of per-thread scratch.
    public let scratchSize: @Sendable (Int, Int) -> Int
    /// (src, height, width, channels, input, packed, scales, filters, rows, dst, scratch, epilogue):
    /// pooled rows `rows` of the scaled sums (no bias, or with `epilogue`); scales per filter.
    public let pooledRows: @Sendable (UnsafePointer<Float>, Int, Int, Int, Int8Quantization, UnsafePointer<UInt32>,
                                      UnsafePointer<Float>, Int, Range<Int>, UnsafeMutablePointer<Float>,
                                      UnsafeMutablePointer<Float>, PooledEpilogue?) -> Void
    /// The instruction of its products, for reports.
    public let dot: String
    /// Whether the fixed table picks it over INT8 F(2x2) where both take a layer (measured per
    /// level: `ChoicePolicy.table`).
    public let preferred: Bool

    /// The functions of `DirectConv3x3Pairs<D>` with `filters` (8 or 4) filters per pass.
    @inlinable
    public static func make<D: Int8DotISA>(_: D.Type, filters: Int, dot: String, preferred: Bool) -> DirectPairFunctions {
        precondition(filters == 8 || filters == 4, "DirectPairFunctions: 8 or 4 filters per pass")
        return DirectPairFunctions(
            packedWords: { DirectConv3x3Pairs<D>.packedWords(filters: $0, channels: $1) },
            pack: { DirectConv3x3Pairs<D>.pack($0, filters: $1, channels: $2, into: $3) },
            scratchSize: { DirectConv3x3Pairs<D>.scratchSize(channels: $0, width: $1) },
            pooledRows: { src, h, w, c, q, packed, scales, m, rows, dst, scratch, epilogue in
                DirectConv3x3Pairs<D>.pooledRows(src, height: h, width: w, channels: c, quantization: q, packed: packed,
                                                 scales: scales, filters: m, rows: rows, into: dst, scratch: scratch,
                                                 eight: filters == 8, epilogue: epilogue)
            }, dot: dot, preferred: preferred)
    }

    @usableFromInline
    init(packedWords: @escaping @Sendable (Int, Int) -> Int,
         pack: @escaping @Sendable (UnsafePointer<Float>, Int, Int, UnsafeMutablePointer<UInt32>) -> Void,
         scratchSize: @escaping @Sendable (Int, Int) -> Int,
         pooledRows: @escaping @Sendable (UnsafePointer<Float>, Int, Int, Int, Int8Quantization, UnsafePointer<UInt32>,
                                          UnsafePointer<Float>, Int, Range<Int>, UnsafeMutablePointer<Float>,
                                          UnsafeMutablePointer<Float>, PooledEpilogue?) -> Void, dot: String, preferred: Bool) {
        (self.packedWords, self.pack, self.scratchSize, self.pooledRows) = (packedWords, pack, scratchSize, pooledRows)
        (self.dot, self.preferred) = (dot, preferred)
    }
}

/// The pair of two int16s as a word: `lo` in bits 0-15, `hi` in 16-31.
@inlinable @inline(__always)
func int16PairWord(_ lo: Int32, _ hi: Int32) -> UInt32 {
    UInt32(truncatingIfNeeded: lo) & 0xFFFF | UInt32(truncatingIfNeeded: hi) << 16
}

public enum DirectConv3x3Pairs<D: Int8DotISA> {
    @inlinable static var lanes: Int { D.Acc.scalarCount }

    @inlinable public static func packedWords(filters: Int, channels: Int) -> Int {
        (filters + 7) / 8 * 8 * ((channels + 1) / 2) * 9
    }

    /// Packs s8 weights (exact integers as floats, Darknet's order w[f][c][ky][kx]) into blocks of
    /// 8 filters: p[block][pair][tap][8], the word of channels 2g (low half) and 2g + 1; zero past
    /// the last filter and channel.
    @inlinable public static func pack(_ w: UnsafePointer<Float>, filters: Int, channels: Int,
                                       into p: UnsafeMutablePointer<UInt32>) {
        directConvPackOrder(filters: filters, groups: (channels + 1) / 2) { i, f, g, tap in
            func weight(_ c: Int) -> Int32 { f < filters && c < channels ? Int32(w[(f * channels + c) * 9 + tap]) : 0 }
            p[i] = int16PairWord(weight(2 * g), weight(2 * g + 1))
        }
    }

    /// Words per parity of a split padded row (DirectConv3x3's `halfWidth` in these lanes).
    @inlinable static func halfWidth(_ width: Int) -> Int {
        let w = lanes
        return ((width + 1) / 2 + w - 1) / w * w + w
    }

    /// Floats of scratch: one split float row of every channel (rounded up to pairs), four split
    /// rows of pair words, two 16-vector tiles of int32 sums.
    @inlinable public static func scratchSize(channels: Int, width: Int) -> Int {
        let split = (channels + 1) / 2 * 2 * halfWidth(width)
        return 2 * split + 4 * split + 32 * lanes
    }

    /// Input row y of every channel split as DirectConv3x3 splits it (floats, at `floats`), then
    /// quantized to d = q - zeroPoint and paired: channel pair g's E words at rows + 2g · half,
    /// its O words `half` further. Padding stays 0 (0.0 quantizes to the zero point).
    @inlinable @inline(__always)
    static func splitRow(_ src: UnsafePointer<Float>, height: Int, width: Int, channels: Int, y: Int,
                         quantization q: Int8Quantization, floats: UnsafeMutablePointer<Float>,
                         into rows: UnsafeMutablePointer<UInt32>, half: Int) {
        directConvSplitRow(src, height: height, width: width, channels: channels, y: y, into: floats, half: half, D.Floats.self)
        let w = lanes, pairs = (channels + 1) / 2
        if channels & 1 == 1 { (floats + channels * 2 * half).update(repeating: 0, count: 2 * half) }
        let inverse = D.Floats(repeating: q.inverseScale), zero = D.Floats(repeating: Float(q.zeroPoint))
        let top = D.Acc(repeating: Int32(bitPattern: Float(q.levels).bitPattern)), zp = D.Acc(repeating: q.zeroPoint)
        let magic = D.Floats(repeating: 12_582_912), magicBits = D.Acc(repeating: Int32(bitPattern: Float(12_582_912).bitPattern))
        // d of W floats: clamped to [0, levels], rounded by the 1.5 x 2^23 sum, as `Int8Quantization.quantize`.
        @inline(__always) func d(_ p: UnsafePointer<Float>) -> D.Acc {
            let t = clampToLevels(UnsafeRawPointer(p).loadUnaligned(as: D.Floats.self) * inverse + zero, top: top)
            return (unsafeBitCast(t + magic, to: D.Acc.self) &- magicBits) &- zp
        }
        let low = D.Acc(repeating: 0xFFFF)
        for g in 0..<pairs {
            let a = floats + 2 * g * 2 * half, b = a + 2 * half, out = UnsafeMutableRawPointer(rows + 2 * g * half)
            for i in Swift.stride(from: 0, to: 2 * half, by: w) {
                out.storeBytes(of: (d(a + i) & low) | (d(b + i) &<< 16), toByteOffset: 4 * i, as: D.Acc.self)
            }
        }
    }

    /// One tap kx of 4 filters (their words at w, 4 bytes apart) on the inputs (a: even x, b: odd x).
    @inlinable @inline(__always)
    static func taps(_ e: inout (D.Acc, D.Acc, D.Acc, D.Acc), _ o: inout (D.Acc, D.Acc, D.Acc, D.Acc),
                     _ w: UnsafeRawPointer, _ a: D.BOperand, _ b: D.BOperand) {
        var x = D.loadA(w)
        e.0 = D.dot(e.0, a, x); o.0 = D.dot(o.0, b, x)
        x = D.loadA(w + 4)
        e.1 = D.dot(e.1, a, x); o.1 = D.dot(o.1, b, x)
        x = D.loadA(w + 8)
        e.2 = D.dot(e.2, a, x); o.2 = D.dot(o.2, b, x)
        x = D.loadA(w + 12)
        e.3 = D.dot(e.3, a, x); o.3 = D.dot(o.3, b, x)
    }

    /// Calls body(E[j], O[j], E[j + 1], O[j + 1], weights) for each pair and ky (rows r0, r1, r2),
    /// the weights advancing by a (pair, ky)'s 24 words.
    @inlinable @inline(__always)
    static func inputs(_ r0: UnsafePointer<UInt32>, _ r1: UnsafePointer<UInt32>, _ r2: UnsafePointer<UInt32>, pairs: Int,
                       half: Int, j0: Int, weights: UnsafePointer<UInt32>,
                       _ body: (D.BOperand, D.BOperand, D.BOperand, D.BOperand, UnsafeRawPointer) -> Void) {
        var pw = UnsafeRawPointer(weights)
        for g in 0..<pairs {
            let off = g * 2 * half + j0
            for ky in 0..<3 {
                let e = UnsafeRawPointer((ky == 0 ? r0 : ky == 1 ? r1 : r2) + off), o = e + 4 * half
                body(D.loadB(e), D.loadB(o), D.loadB(e + 4), D.loadB(o + 4), pw)
                pw += 96
            }
        }
    }

    /// Stores 4 filters' even sums at tile vectors first ..< first + 4, their odd sums 8 further.
    @inlinable @inline(__always)
    static func store(_ tile: UnsafeMutablePointer<Int32>, first: Int, _ e: (D.Acc, D.Acc, D.Acc, D.Acc),
                      _ o: (D.Acc, D.Acc, D.Acc, D.Acc)) {
        let t = UnsafeMutableRawPointer(tile), v = 4 * lanes, (ev, od) = (first * v, (8 + first) * v)
        t.storeBytes(of: e.0, toByteOffset: ev, as: D.Acc.self); t.storeBytes(of: o.0, toByteOffset: od, as: D.Acc.self)
        t.storeBytes(of: e.1, toByteOffset: ev + v, as: D.Acc.self); t.storeBytes(of: o.1, toByteOffset: od + v, as: D.Acc.self)
        t.storeBytes(of: e.2, toByteOffset: ev + 2 * v, as: D.Acc.self); t.storeBytes(of: o.2, toByteOffset: od + 2 * v, as: D.Acc.self)
        t.storeBytes(of: e.3, toByteOffset: ev + 3 * v, as: D.Acc.self); t.storeBytes(of: o.3, toByteOffset: od + 3 * v, as: D.Acc.self)
    }

    /// max(a, b) lane by lane, for sums within +-2^30 (b - a does not wrap): four integer ops,
    /// where a generic SIMD comparison may go lane by lane.
    @inlinable @inline(__always)
    static func maximum(_ a: D.Acc, _ b: D.Acc) -> D.Acc {
        let d = b &- a
        return b &- (d & (d &>> 31))
    }

    /// One output row's sums for the block's 8 filters, column pairs j0 ..< j0 + W, pooled across
    /// x in registers: max(even, odd) per filter.
    @inlinable @inline(__always)
    static func row8Pooled(_ r0: UnsafePointer<UInt32>, _ r1: UnsafePointer<UInt32>, _ r2: UnsafePointer<UInt32>, pairs: Int,
                           half: Int, j0: Int, weights: UnsafePointer<UInt32>)
        -> (D.Acc, D.Acc, D.Acc, D.Acc, D.Acc, D.Acc, D.Acc, D.Acc) {
        var e0 = (D.Acc(), D.Acc(), D.Acc(), D.Acc()), o0 = e0, e1 = e0, o1 = e0
        inputs(r0, r1, r2, pairs: pairs, half: half, j0: j0, weights: weights) { eA, oA, eB, oB, w in
            taps(&e0, &o0, w, eA, oA); taps(&e1, &o1, w + 16, eA, oA)
            taps(&e0, &o0, w + 32, oA, eB); taps(&e1, &o1, w + 48, oA, eB)
            taps(&e0, &o0, w + 64, eB, oB); taps(&e1, &o1, w + 80, eB, oB)
        }
        return (maximum(e0.0, o0.0), maximum(e0.1, o0.1), maximum(e0.2, o0.2), maximum(e0.3, o0.3),
                maximum(e1.0, o1.0), maximum(e1.1, o1.1), maximum(e1.2, o1.2), maximum(e1.3, o1.3))
    }

    /// Pooled columns j0 ..< j0 + count (count <= W) of the block's first `filters` (<= 8) filters:
    /// the two conv rows (r0-r2, r1-r3) pooled in registers, scaled, stored to out (filter r at
    /// r · plane; a partial vector through `spill`), then `epilogue`; `hold`: 8 vectors of scratch.
    /// The values of two rows' sums + `poolTiles`, with 8 stores and reloads of sums instead of 32.
    @inlinable @inline(__always)
    static func pooledTile8(_ r0: UnsafePointer<UInt32>, _ r1: UnsafePointer<UInt32>, _ r2: UnsafePointer<UInt32>,
                            _ r3: UnsafePointer<UInt32>, pairs: Int, half: Int, j0: Int, weights: UnsafePointer<UInt32>,
                            count: Int, filters: Int, scales: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>,
                            plane: Int, epilogue: PooledEpilogue?, first: Int, hold: UnsafeMutablePointer<Int32>,
                            spill: UnsafeMutablePointer<Float>) {
        let w = lanes, held = UnsafeMutableRawPointer(hold)
        // The upper row's 8 vectors wait in memory, not in registers the lower row's sums need.
        let t = row8Pooled(r0, r1, r2, pairs: pairs, half: half, j0: j0, weights: weights)
        held.storeBytes(of: t.0, toByteOffset: 0, as: D.Acc.self); held.storeBytes(of: t.1, toByteOffset: 4 * w, as: D.Acc.self)
        held.storeBytes(of: t.2, toByteOffset: 8 * w, as: D.Acc.self); held.storeBytes(of: t.3, toByteOffset: 12 * w, as: D.Acc.self)
        held.storeBytes(of: t.4, toByteOffset: 16 * w, as: D.Acc.self); held.storeBytes(of: t.5, toByteOffset: 20 * w, as: D.Acc.self)
        held.storeBytes(of: t.6, toByteOffset: 24 * w, as: D.Acc.self); held.storeBytes(of: t.7, toByteOffset: 28 * w, as: D.Acc.self)
        let b = row8Pooled(r1, r2, r3, pairs: pairs, half: half, j0: j0, weights: weights)
        @inline(__always) func put(_ r: Int, _ y: D.Acc) {
            guard r < filters else { return }
            let x = held.load(fromByteOffset: 4 * w * r, as: D.Acc.self)
            let v = D.floats(maximum(x, y)) * D.Floats(repeating: scales[r]), line = out + r * plane
            if count == w {
                UnsafeMutableRawPointer(line).storeBytes(of: v, as: D.Floats.self)
                epilogue?.apply(line, count: w, filter: first + r)
            } else {
                UnsafeMutableRawPointer(spill).storeBytes(of: v, as: D.Floats.self)
                line.update(from: spill, count: count)
                epilogue?.apply(line, count: count, filter: first + r)
            }
        }
        put(0, b.0); put(1, b.1); put(2, b.2); put(3, b.3)
        put(4, b.4); put(5, b.5); put(6, b.6); put(7, b.7)
    }

    /// The same for 4 of the block's filters (`first`: 0 or 4), for CPUs with 16 vector registers.
    @inlinable @inline(__always)
    static func row4(_ r0: UnsafePointer<UInt32>, _ r1: UnsafePointer<UInt32>, _ r2: UnsafePointer<UInt32>, pairs: Int,
                     half: Int, j0: Int, weights: UnsafePointer<UInt32>, first: Int, tile: UnsafeMutablePointer<Int32>) {
        var e = (D.Acc(), D.Acc(), D.Acc(), D.Acc()), o = e
        inputs(r0, r1, r2, pairs: pairs, half: half, j0: j0, weights: weights + first) { eA, oA, eB, oB, w in
            taps(&e, &o, w, eA, oA)
            taps(&e, &o, w + 32, oA, eB)
            taps(&e, &o, w + 64, eB, oB)
        }
        store(tile, first: first, e, o)
    }

    /// The pool of two rows' tiles: out[r · plane + l] = Float(max of the four sums) x scales[r],
    /// the first `count` lanes of the first `filters` filters (a plain loop, vectorized by LLVM).
    @inlinable @inline(__always)
    static func poolTiles(_ top: UnsafePointer<Int32>, _ bottom: UnsafePointer<Int32>, count: Int, filters: Int,
                          scales: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>, plane: Int,
                          epilogue: PooledEpilogue?, first: Int) {
        let w = lanes
        for r in 0..<filters {
            let line = out + r * plane, s = scales[r]
            let te = top + r * w, to = top + (8 + r) * w, be = bottom + r * w, bo = bottom + (8 + r) * w
            if count == w {
                for l in 0..<w { line[l] = Float(Swift.max(Swift.max(te[l], to[l]), Swift.max(be[l], bo[l]))) * s }
                epilogue?.apply(line, count: w, filter: first + r)
            } else {
                for l in 0..<count { line[l] = Float(Swift.max(Swift.max(te[l], to[l]), Swift.max(be[l], bo[l]))) * s }
                epilogue?.apply(line, count: count, filter: first + r)
            }
        }
    }

    /// Pooled rows `rows` of conv + 2x2 stride-2 max pool of the quantized input, scaled per filter
    /// (no bias), as DirectConv3x3.pooledRows lays them out (even height and width).
    @inlinable public static func pooledRows(_ src: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                                             quantization q: Int8Quantization, packed: UnsafePointer<UInt32>,
                                             scales: UnsafePointer<Float>, filters: Int, rows: Range<Int>,
                                             into dst: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>,
                                             eight: Bool, epilogue: PooledEpilogue? = nil) {
        let w = lanes, half = halfWidth(width), pw = width / 2, pairs = (channels + 1) / 2
        let split = pairs * 2 * half
        let floats = scratch
        let words = UnsafeMutableRawPointer(scratch + 2 * split).bindMemory(to: UInt32.self, capacity: 4 * split)
        var (r0, r1, r2, r3) = (words, words + split, words + 2 * split, words + 3 * split)
        let top = UnsafeMutableRawPointer(scratch + 6 * split).bindMemory(to: Int32.self, capacity: 32 * w)
        let bottom = top + 16 * w
        let plane = (height / 2) * pw
        @inline(__always) func splitInto(_ rows: UnsafeMutablePointer<UInt32>, _ y: Int) {
            splitRow(src, height: height, width: width, channels: channels, y: y, quantization: q, floats: floats,
                     into: rows, half: half)
        }
        for py in rows {
            // Input rows 2py - 1 ... 2py + 2; after the first pooled row only two are new.
            if py > rows.lowerBound {
                (r0, r1, r2, r3) = (r2, r3, r0, r1)
                splitInto(r2, 2 * py + 1)
                splitInto(r3, 2 * py + 2)
            } else {
                for i in 0..<4 { splitInto(words + i * split, 2 * py - 1 + i) }
            }
            for b in 0..<(filters + 7) / 8 {
                let weights = packed + b * pairs * 72, count = min(8, filters - b * 8)
                var j0 = 0
                while j0 < pw {
                    if eight {
                        pooledTile8(r0, r1, r2, r3, pairs: pairs, half: half, j0: j0, weights: weights,
                                    count: min(w, pw - j0), filters: count, scales: scales + b * 8,
                                    into: dst + b * 8 * plane + py * pw + j0, plane: plane, epilogue: epilogue,
                                    first: b * 8, hold: top, spill: floats)
                    } else {
                        for first in [0, 4] where first < count {
                            row4(r0, r1, r2, pairs: pairs, half: half, j0: j0, weights: weights, first: first, tile: top)
                            row4(r1, r2, r3, pairs: pairs, half: half, j0: j0, weights: weights, first: first, tile: bottom)
                        }
                        poolTiles(top, bottom, count: min(w, pw - j0), filters: count, scales: scales + b * 8,
                                  into: dst + b * 8 * plane + py * pw + j0, plane: plane, epilogue: epilogue, first: b * 8)
                    }
                    j0 += w
                }
            }
        }
    }
}
