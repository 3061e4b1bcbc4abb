// The direct 3x3 convolution + 2x2 stride-2 max pool of DirectConv.swift in FP16 arithmetic: the
// same layout (SIMD lanes along x split by parity, padded input rows split into even and odd
// columns, filters 8 at a time with 8 x 2 accumulators) and the same order of each sum (channel,
// ky, kx), with the input rows and the weights rounded to FP16 and every multiply-add rounded to
// FP16 (`FP16ISA.fma`: vfmadd231ph with AVX-512 FP16, 32 lanes; fmla .8h by element on ARMv8.2,
// 8). A sum has at most 16 x 9 = 144 terms (`ConvAlgorithm.directMaxChannels` channels), about
// the FP16 GEMM's blocks of k (128), so its rounding is bounded alike. The pool takes the max of
// the FP16 sums (`FP16ISA.max`) and widens that one to FP32 (the same float as widening all four
// first: widening is exact and keeps the order): a quarter of the conversions and FP32 stores.
// Faster than the FP32 one on yolov3-tiny's layer 0 + pool (docs/performance.md).
//
// Why: yolov3-tiny's first layer (3 channels at 416x416) is 149 MFLOP that no INT8 or FP16 GEMM
// computes (a GEMM of depth 27); in an INT8 model it was the largest FP32 step left. Twice the lanes per instruction halve its
// multiply-adds.
//
// Generic and @inlinable, instantiated by the targets with FP16 arithmetic (`HalfKernels.makeFP16`).
#if !(os(macOS) && arch(x86_64))

public enum DirectConv3x3Half<D: FP16ISA> {
    public typealias H = D.Halves

    /// The engine's entry points (`HalfKernels.direct`): packed weights and scratch in floats' room.
    @inlinable public static var functions: DirectConvFunctions {
        DirectConvFunctions(
            packedSize: { packedSize(filters: $0, channels: $1) },
            pack: { w, filters, channels, p in
                let halves = UnsafeMutableRawPointer(p).bindMemory(to: Float16.self, capacity: 2 * packedSize(filters: filters, channels: channels))
                pack(w, filters: filters, channels: channels, into: halves)
            },
            scratchSize: { scratchSize(channels: $0, width: $1) },
            pooledRows: { src, height, width, channels, packed, filters, rows, dst, scratch, epilogue in
                pooledRows(src, height: height, width: width, channels: channels,
                           packed: UnsafeRawPointer(packed).assumingMemoryBound(to: Float16.self), filters: filters, rows: rows,
                           into: dst, scratch: scratch, epilogue: epilogue)
            })
    }

    /// Floats of room for the packed weights (halves, two to a float).
    @inlinable public static func packedSize(filters: Int, channels: Int) -> Int {
        ((filters + 7) / 8 * 8 * channels * 9 * D.weightCopies + 1) / 2
    }

    /// Packs Darknet-layout weights w[f][c][ky][kx], rounded to FP16, into blocks of 8 filters:
    /// p[block][c][tap][8][copies] (DirectConv3x3's layout, each weight `D.weightCopies` times),
    /// zero past the last filter.
    @inlinable public static func pack(_ w: UnsafePointer<Float>, filters: Int, channels: Int,
                                       into p: UnsafeMutablePointer<Float16>) {
        let copies = D.weightCopies
        directConvPackOrder(filters: filters, groups: channels) { i, f, c, tap in
            let h: Float16 = f < filters ? Float16(w[(f * channels + c) * 9 + tap]) : 0
            for k in 0..<copies { p[i * copies + k] = h }
        }
    }

    /// Halves per parity of a split padded row: the output column pairs rounded up to whole
    /// vectors, plus one vector.
    @inlinable static func halfWidth(_ width: Int) -> Int {
        let w = H.scalarCount
        return ((width + 1) / 2 + w - 1) / w * w + w
    }

    /// Floats of scratch `pooledRows` needs: one split row of every channel in FP32, four in
    /// FP16, two 16-vector tiles of FP16 sums and one vector of FP32 (a partial pooled vector).
    @inlinable public static func scratchSize(channels: Int, width: Int) -> Int {
        let split = channels * 2 * halfWidth(width)
        return split + 2 * split + 16 * H.scalarCount + H.scalarCount
    }

    /// Input row y of every channel split and padded as DirectConv3x3 splits it (in FP32, at
    /// `floats`), then rounded to FP16 into `rows`.
    @inlinable @inline(__always)
    static func splitRow(_ src: UnsafePointer<Float>, height: Int, width: Int, channels: Int, y: Int,
                         floats: UnsafeMutablePointer<Float>, into rows: UnsafeMutablePointer<Float16>, half: Int) {
        directConvSplitRow(src, height: height, width: width, channels: channels, y: y, into: floats, half: half,
                           SIMD8<Float>.self)
        let w = H.scalarCount
        for i in Swift.stride(from: 0, to: channels * 2 * half, by: w) {
            UnsafeMutableRawPointer(rows + i).storeBytes(of: D.halves(floats + i), as: H.self)
        }
    }

    @inlinable @inline(__always)
    static func load(_ p: UnsafePointer<Float16>) -> H { UnsafeRawPointer(p).loadUnaligned(as: H.self) }

    /// One tap kx of the 8 filters (their weights at w, `D.weightCopies` each) on the inputs (a: even
    /// x, b: odd x).
    @inlinable @inline(__always)
    static func tap(_ e: inout (H, H, H, H, H, H, H, H), _ o: inout (H, H, H, H, H, H, H, H),
                    _ w: UnsafePointer<Float16>, _ a: H, _ b: H) {
        let x = D.rows(w)
        e.0 = D.weightFMA(e.0, a, x, 0); o.0 = D.weightFMA(o.0, b, x, 0)
        e.1 = D.weightFMA(e.1, a, x, 1); o.1 = D.weightFMA(o.1, b, x, 1)
        e.2 = D.weightFMA(e.2, a, x, 2); o.2 = D.weightFMA(o.2, b, x, 2)
        e.3 = D.weightFMA(e.3, a, x, 3); o.3 = D.weightFMA(o.3, b, x, 3)
        e.4 = D.weightFMA(e.4, a, x, 4); o.4 = D.weightFMA(o.4, b, x, 4)
        e.5 = D.weightFMA(e.5, a, x, 5); o.5 = D.weightFMA(o.5, b, x, 5)
        e.6 = D.weightFMA(e.6, a, x, 6); o.6 = D.weightFMA(o.6, b, x, 6)
        e.7 = D.weightFMA(e.7, a, x, 7); o.7 = D.weightFMA(o.7, b, x, 7)
    }

    /// Sums of one output row for the block's 8 filters and column pairs j0 ..< j0 + W (the split
    /// FP16 rows y - 1, y, y + 1): the even sums of filter r at tile vector r, the odd ones at 8 + r.
    @inlinable @inline(__always)
    static func row(_ r0: UnsafePointer<Float16>, _ r1: UnsafePointer<Float16>, _ r2: UnsafePointer<Float16>,
                    channels: Int, half: Int, j0: Int, weights: UnsafePointer<Float16>, tile: UnsafeMutablePointer<Float16>) {
        var e = (H(), H(), H(), H(), H(), H(), H(), H()), o = e
        var pw = weights
        let tap8 = 8 * D.weightCopies
        for c in 0..<channels {
            let off = c * 2 * half + j0
            for ky in 0..<3 {
                let pe = (ky == 0 ? r0 : ky == 1 ? r1 : r2) + off, po = pe + half
                let eA = load(pe), oA = load(po), eB = load(pe + 1), oB = load(po + 1)
                tap(&e, &o, pw, eA, oA)
                tap(&e, &o, pw + tap8, oA, eB)
                tap(&e, &o, pw + 2 * tap8, eB, oB)
                pw += 3 * tap8
            }
        }
        let t = UnsafeMutableRawPointer(tile), v = MemoryLayout<H>.size
        t.storeBytes(of: e.0, as: H.self); t.storeBytes(of: o.0, toByteOffset: 8 * v, as: H.self)
        t.storeBytes(of: e.1, toByteOffset: v, as: H.self); t.storeBytes(of: o.1, toByteOffset: 9 * v, as: H.self)
        t.storeBytes(of: e.2, toByteOffset: 2 * v, as: H.self); t.storeBytes(of: o.2, toByteOffset: 10 * v, as: H.self)
        t.storeBytes(of: e.3, toByteOffset: 3 * v, as: H.self); t.storeBytes(of: o.3, toByteOffset: 11 * v, as: H.self)
        t.storeBytes(of: e.4, toByteOffset: 4 * v, as: H.self); t.storeBytes(of: o.4, toByteOffset: 12 * v, as: H.self)
        t.storeBytes(of: e.5, toByteOffset: 5 * v, as: H.self); t.storeBytes(of: o.5, toByteOffset: 13 * v, as: H.self)
        t.storeBytes(of: e.6, toByteOffset: 6 * v, as: H.self); t.storeBytes(of: o.6, toByteOffset: 14 * v, as: H.self)
        t.storeBytes(of: e.7, toByteOffset: 7 * v, as: H.self); t.storeBytes(of: o.7, toByteOffset: 15 * v, as: H.self)
    }

    /// The pool of two rows' tiles of FP16 sums (filter r's even sums at vector r, its odd ones at
    /// 8 + r): out[r · plane + l] = the max of the four, widened to FP32, for the first `count`
    /// lanes of the first `filters` filters (a partial vector through `partial`, W floats).
    @inlinable @inline(__always)
    static func poolTiles(_ top: UnsafePointer<Float16>, _ bottom: UnsafePointer<Float16>, count: Int, filters: Int,
                          into out: UnsafeMutablePointer<Float>, plane: Int, partial: UnsafeMutablePointer<Float>,
                          epilogue: PooledEpilogue?, first: Int) {
        let w = H.scalarCount
        @inline(__always) func load(_ p: UnsafePointer<Float16>, _ i: Int) -> H {
            UnsafeRawPointer(p + i * w).loadUnaligned(as: H.self)
        }
        for r in 0..<filters {
            let m = D.max(D.max(load(top, r), load(top, 8 + r)), D.max(load(bottom, r), load(bottom, 8 + r)))
            if count == w {
                D.store(m, out + r * plane, accumulate: false)
                epilogue?.apply(out + r * plane, count: w, filter: first + r)
            } else {
                D.store(m, partial, accumulate: false)
                epilogue?.apply(partial, count: count, filter: first + r)
                (out + r * plane).update(from: partial, count: count)
            }
        }
    }

    /// Pooled rows `rows` of conv + 2x2 stride-2 max pool (raw sums, or with `epilogue`), as
    /// `DirectConv3x3.pooledRows` (even height and width); `packed` as `pack` packs.
    @inlinable public static func pooledRows(_ src: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                                             packed: UnsafePointer<Float16>, filters: Int, rows: Range<Int>,
                                             into dst: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>,
                                             epilogue: PooledEpilogue? = nil) {
        let w = H.scalarCount, half = halfWidth(width), pw = width / 2
        let split = channels * 2 * half
        let floats = scratch
        let halves = UnsafeMutableRawPointer(scratch + split).bindMemory(to: Float16.self, capacity: 4 * split)
        var (r0, r1, r2, r3) = (halves, halves + split, halves + 2 * split, halves + 3 * split)
        let tiles = UnsafeMutableRawPointer(scratch + 3 * split).bindMemory(to: Float16.self, capacity: 32 * w)
        let (top, bottom, partial) = (tiles, tiles + 16 * w, scratch + 3 * split + 16 * w)
        let plane = (height / 2) * pw
        for py in rows {
            // Input rows 2py - 1 ... 2py + 2; after the first pooled row only two are new.
            if py > rows.lowerBound {
                (r0, r1, r2, r3) = (r2, r3, r0, r1)
                splitRow(src, height: height, width: width, channels: channels, y: 2 * py + 1, floats: floats, into: r2, half: half)
                splitRow(src, height: height, width: width, channels: channels, y: 2 * py + 2, floats: floats, into: r3, half: half)
            } else {
                for i in 0..<4 {   // (r0 ... r3 are still halves + i · split here)
                    splitRow(src, height: height, width: width, channels: channels, y: 2 * py - 1 + i, floats: floats,
                             into: halves + i * split, half: half)
                }
            }
            for b in 0..<(filters + 7) / 8 {
                let weights = packed + b * channels * 72 * D.weightCopies
                var j0 = 0
                while j0 < pw {
                    row(r0, r1, r2, channels: channels, half: half, j0: j0, weights: weights, tile: top)
                    row(r1, r2, r3, channels: channels, half: half, j0: j0, weights: weights, tile: bottom)
                    poolTiles(top, bottom, count: min(w, pw - j0), filters: min(8, filters - b * 8),
                              into: dst + b * 8 * plane + py * pw + j0, plane: plane, partial: partial,
                              epilogue: epilogue, first: b * 8)
                    j0 += w
                }
            }
        }
    }
}
#endif
