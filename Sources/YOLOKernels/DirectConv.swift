// Direct 3x3 stride-1 pad-1 convolution + the 2x2 stride-2 max pool after it, for layers with few
// input channels (a network's first layers: 3 channels at full resolution), where im2col + GEMM
// has a depth of only 27 and the Winograd transforms would cost more than they save. The
// full-resolution output (16 x 416 x 416 floats, 11 MB, in yolov3-tiny) never goes to memory:
// each pair of conv rows is pooled as it is made.
//
// The SIMD lanes run along x, split by parity: for W consecutive pairs of output columns
// (x = 2j and 2j + 1), one vector holds the even columns and one the odd ones. The padded input
// rows are stored split the same way (E[j] = row[2j], O[j] = row[2j + 1], padded column 0 being
// input column -1), so every tap is one contiguous load:
//   even x = 2j:     taps kx = 0, 1, 2 read E[j], O[j], E[j + 1]
//   odd x = 2j + 1:  taps kx = 0, 1, 2 read O[j], E[j + 1], O[j + 1]
// and the horizontal half of the pool is max(even, odd), lane by lane. Filters go 8 at a time
// (8 x 2 accumulators) where the CPU has 32 vector registers, 4 at a time where it has 16;
// their weights packed per block as [channel][ky][kx][8], zero past the last filter. Each sum runs over channel, ky, kx in that order (Darknet's im2col order), with
// FMA where the CPU has it.
//
// Generic and @inlinable, instantiated by the per-ISA targets like PackedGemm.

/// Sums of one output row for 8 filters and the column pairs j0 ..< j0 + W: `r0`, `r1`, `r2`
/// are the split padded input rows y - 1, y, y + 1 (each `channels` rows of 2 x `half` floats),
/// `weights` the block's packed weights. Stores the even sums (8 vectors, one per filter) then the
/// odd ones (8 more) at `tile`.
@inlinable @inline(__always)
func directConvRow<V: SIMD, Tag: GemmISA>(_ r0: UnsafePointer<Float>, _ r1: UnsafePointer<Float>, _ r2: UnsafePointer<Float>,
                                           channels: Int, half: Int, j0: Int, weights: UnsafePointer<Float>,
                                           tile: UnsafeMutablePointer<Float>, _: V.Type, _: Tag.Type)
    where V.Scalar == Float {
    var e0 = V(), e1 = V(), e2 = V(), e3 = V(), e4 = V(), e5 = V(), e6 = V(), e7 = V()
    var o0 = V(), o1 = V(), o2 = V(), o3 = V(), o4 = V(), o5 = V(), o6 = V(), o7 = V()
    var pw = weights
    for c in 0..<channels {
        let off = c * 2 * half + j0
        for ky in 0..<3 {
            let e = (ky == 0 ? r0 : ky == 1 ? r1 : r2) + off, o = e + half
            // (even, odd) inputs per tap: kx = 0: (E[j], O[j]), 1: (O[j], E[j + 1]), 2: (E[j + 1], O[j + 1]).
            let eA: V = gemmLoad(e), oA: V = gemmLoad(o), eB: V = gemmLoad(e + 1), oB: V = gemmLoad(o + 1)
            var x: V
                x = V(repeating: pw[0]); e0 = gemmMulAdd(e0, x, eA, Tag.self); o0 = gemmMulAdd(o0, x, oA, Tag.self)
                x = V(repeating: pw[1]); e1 = gemmMulAdd(e1, x, eA, Tag.self); o1 = gemmMulAdd(o1, x, oA, Tag.self)
                x = V(repeating: pw[2]); e2 = gemmMulAdd(e2, x, eA, Tag.self); o2 = gemmMulAdd(o2, x, oA, Tag.self)
                x = V(repeating: pw[3]); e3 = gemmMulAdd(e3, x, eA, Tag.self); o3 = gemmMulAdd(o3, x, oA, Tag.self)
                x = V(repeating: pw[4]); e4 = gemmMulAdd(e4, x, eA, Tag.self); o4 = gemmMulAdd(o4, x, oA, Tag.self)
                x = V(repeating: pw[5]); e5 = gemmMulAdd(e5, x, eA, Tag.self); o5 = gemmMulAdd(o5, x, oA, Tag.self)
                x = V(repeating: pw[6]); e6 = gemmMulAdd(e6, x, eA, Tag.self); o6 = gemmMulAdd(o6, x, oA, Tag.self)
                x = V(repeating: pw[7]); e7 = gemmMulAdd(e7, x, eA, Tag.self); o7 = gemmMulAdd(o7, x, oA, Tag.self)
                x = V(repeating: pw[8]); e0 = gemmMulAdd(e0, x, oA, Tag.self); o0 = gemmMulAdd(o0, x, eB, Tag.self)
                x = V(repeating: pw[9]); e1 = gemmMulAdd(e1, x, oA, Tag.self); o1 = gemmMulAdd(o1, x, eB, Tag.self)
                x = V(repeating: pw[10]); e2 = gemmMulAdd(e2, x, oA, Tag.self); o2 = gemmMulAdd(o2, x, eB, Tag.self)
                x = V(repeating: pw[11]); e3 = gemmMulAdd(e3, x, oA, Tag.self); o3 = gemmMulAdd(o3, x, eB, Tag.self)
                x = V(repeating: pw[12]); e4 = gemmMulAdd(e4, x, oA, Tag.self); o4 = gemmMulAdd(o4, x, eB, Tag.self)
                x = V(repeating: pw[13]); e5 = gemmMulAdd(e5, x, oA, Tag.self); o5 = gemmMulAdd(o5, x, eB, Tag.self)
                x = V(repeating: pw[14]); e6 = gemmMulAdd(e6, x, oA, Tag.self); o6 = gemmMulAdd(o6, x, eB, Tag.self)
                x = V(repeating: pw[15]); e7 = gemmMulAdd(e7, x, oA, Tag.self); o7 = gemmMulAdd(o7, x, eB, Tag.self)
                x = V(repeating: pw[16]); e0 = gemmMulAdd(e0, x, eB, Tag.self); o0 = gemmMulAdd(o0, x, oB, Tag.self)
                x = V(repeating: pw[17]); e1 = gemmMulAdd(e1, x, eB, Tag.self); o1 = gemmMulAdd(o1, x, oB, Tag.self)
                x = V(repeating: pw[18]); e2 = gemmMulAdd(e2, x, eB, Tag.self); o2 = gemmMulAdd(o2, x, oB, Tag.self)
                x = V(repeating: pw[19]); e3 = gemmMulAdd(e3, x, eB, Tag.self); o3 = gemmMulAdd(o3, x, oB, Tag.self)
                x = V(repeating: pw[20]); e4 = gemmMulAdd(e4, x, eB, Tag.self); o4 = gemmMulAdd(o4, x, oB, Tag.self)
                x = V(repeating: pw[21]); e5 = gemmMulAdd(e5, x, eB, Tag.self); o5 = gemmMulAdd(o5, x, oB, Tag.self)
                x = V(repeating: pw[22]); e6 = gemmMulAdd(e6, x, eB, Tag.self); o6 = gemmMulAdd(o6, x, oB, Tag.self)
                x = V(repeating: pw[23]); e7 = gemmMulAdd(e7, x, eB, Tag.self); o7 = gemmMulAdd(o7, x, oB, Tag.self)
            pw += 24
        }
    }
    let w = V.scalarCount
    let t = UnsafeMutableRawPointer(tile)
    t.storeBytes(of: e0, toByteOffset: 0 * 4 * w, as: V.self); t.storeBytes(of: o0, toByteOffset: 8 * 4 * w, as: V.self)
    t.storeBytes(of: e1, toByteOffset: 1 * 4 * w, as: V.self); t.storeBytes(of: o1, toByteOffset: 9 * 4 * w, as: V.self)
    t.storeBytes(of: e2, toByteOffset: 2 * 4 * w, as: V.self); t.storeBytes(of: o2, toByteOffset: 10 * 4 * w, as: V.self)
    t.storeBytes(of: e3, toByteOffset: 3 * 4 * w, as: V.self); t.storeBytes(of: o3, toByteOffset: 11 * 4 * w, as: V.self)
    t.storeBytes(of: e4, toByteOffset: 4 * 4 * w, as: V.self); t.storeBytes(of: o4, toByteOffset: 12 * 4 * w, as: V.self)
    t.storeBytes(of: e5, toByteOffset: 5 * 4 * w, as: V.self); t.storeBytes(of: o5, toByteOffset: 13 * 4 * w, as: V.self)
    t.storeBytes(of: e6, toByteOffset: 6 * 4 * w, as: V.self); t.storeBytes(of: o6, toByteOffset: 14 * 4 * w, as: V.self)
    t.storeBytes(of: e7, toByteOffset: 7 * 4 * w, as: V.self); t.storeBytes(of: o7, toByteOffset: 15 * 4 * w, as: V.self)
}

/// `directConvRow` for 4 of the block's 8 filters (`first`: 0 or 4), for CPUs with 16 vector
/// registers: the 8-filter form keeps 16 accumulators, 4 inputs and a broadcast live (21), more
/// than AVX2's 16 ymm registers, and its spills made yolov3-tiny's layer 0 run at half the FMA
/// rate. Here 8 + 4 + 1. Same sums in the same order; stores the 4 filters' even and odd sums
/// where `directConvRow` stores them.
@inlinable @inline(__always)
func directConvRowHalf<V: SIMD, Tag: GemmISA>(_ r0: UnsafePointer<Float>, _ r1: UnsafePointer<Float>, _ r2: UnsafePointer<Float>,
                                               channels: Int, half: Int, j0: Int, weights: UnsafePointer<Float>, first: Int,
                                               tile: UnsafeMutablePointer<Float>, _: V.Type, _: Tag.Type)
    where V.Scalar == Float {
    var e0 = V(), e1 = V(), e2 = V(), e3 = V()
    var o0 = V(), o1 = V(), o2 = V(), o3 = V()
    var pw = weights + first
    // One row of taps (ky): 4 loads, 12 broadcasts, 24 FMAs; the three rows written out, so the
    // loop over channels has no inner loop or row selection.
    @inline(__always) func taps(_ e: UnsafePointer<Float>) {
        let o = e + half
        let eA: V = gemmLoad(e), oA: V = gemmLoad(o), eB: V = gemmLoad(e + 1), oB: V = gemmLoad(o + 1)
        var x: V
        x = V(repeating: pw[0]); e0 = gemmMulAdd(e0, x, eA, Tag.self); o0 = gemmMulAdd(o0, x, oA, Tag.self)
        x = V(repeating: pw[1]); e1 = gemmMulAdd(e1, x, eA, Tag.self); o1 = gemmMulAdd(o1, x, oA, Tag.self)
        x = V(repeating: pw[2]); e2 = gemmMulAdd(e2, x, eA, Tag.self); o2 = gemmMulAdd(o2, x, oA, Tag.self)
        x = V(repeating: pw[3]); e3 = gemmMulAdd(e3, x, eA, Tag.self); o3 = gemmMulAdd(o3, x, oA, Tag.self)
        x = V(repeating: pw[8]); e0 = gemmMulAdd(e0, x, oA, Tag.self); o0 = gemmMulAdd(o0, x, eB, Tag.self)
        x = V(repeating: pw[9]); e1 = gemmMulAdd(e1, x, oA, Tag.self); o1 = gemmMulAdd(o1, x, eB, Tag.self)
        x = V(repeating: pw[10]); e2 = gemmMulAdd(e2, x, oA, Tag.self); o2 = gemmMulAdd(o2, x, eB, Tag.self)
        x = V(repeating: pw[11]); e3 = gemmMulAdd(e3, x, oA, Tag.self); o3 = gemmMulAdd(o3, x, eB, Tag.self)
        x = V(repeating: pw[16]); e0 = gemmMulAdd(e0, x, eB, Tag.self); o0 = gemmMulAdd(o0, x, oB, Tag.self)
        x = V(repeating: pw[17]); e1 = gemmMulAdd(e1, x, eB, Tag.self); o1 = gemmMulAdd(o1, x, oB, Tag.self)
        x = V(repeating: pw[18]); e2 = gemmMulAdd(e2, x, eB, Tag.self); o2 = gemmMulAdd(o2, x, oB, Tag.self)
        x = V(repeating: pw[19]); e3 = gemmMulAdd(e3, x, eB, Tag.self); o3 = gemmMulAdd(o3, x, oB, Tag.self)
        pw += 24
    }
    for c in 0..<channels {
        let off = c * 2 * half + j0
        taps(r0 + off)
        taps(r1 + off)
        taps(r2 + off)
    }
    let w = V.scalarCount
    let t = UnsafeMutableRawPointer(tile)
    let (ev, od) = (first * 4 * w, (8 + first) * 4 * w)
    t.storeBytes(of: e0, toByteOffset: ev, as: V.self); t.storeBytes(of: o0, toByteOffset: od, as: V.self)
    t.storeBytes(of: e1, toByteOffset: ev + 4 * w, as: V.self); t.storeBytes(of: o1, toByteOffset: od + 4 * w, as: V.self)
    t.storeBytes(of: e2, toByteOffset: ev + 8 * w, as: V.self); t.storeBytes(of: o2, toByteOffset: od + 8 * w, as: V.self)
    t.storeBytes(of: e3, toByteOffset: ev + 12 * w, as: V.self); t.storeBytes(of: o3, toByteOffset: od + 12 * w, as: V.self)
}

public enum DirectConv3x3<V: SIMD, Tag: GemmISA> where V.Scalar == Float {
    /// Floats of packed weights for `filters` x `channels` 3x3 kernels.
    @inlinable public static func packedSize(filters: Int, channels: Int) -> Int {
        (filters + 7) / 8 * 8 * channels * 9
    }

    /// Packs Darknet-layout weights w[f][c][ky][kx] into blocks of 8 filters: p[block][c][tap][8].
    @inlinable public static func pack(_ w: UnsafePointer<Float>, filters: Int, channels: Int,
                                       into p: UnsafeMutablePointer<Float>) {
        for b in 0..<(filters + 7) / 8 {
            for c in 0..<channels {
                for tap in 0..<9 {
                    let dst = p + ((b * channels + c) * 9 + tap) * 8
                    for r in 0..<8 {
                        let f = b * 8 + r
                        dst[r] = f < filters ? w[(f * channels + c) * 9 + tap] : 0
                    }
                }
            }
        }
    }

    /// Columns per parity of a split padded row: the output column pairs rounded up to whole
    /// vectors, plus one vector (tap kx = 2 reads one element further).
    @inlinable static func halfWidth(_ width: Int) -> Int {
        let w = V.scalarCount
        return ((width + 1) / 2 + w - 1) / w * w + w
    }

    /// Floats of scratch `pooledRows` needs: four split padded input rows of every channel and
    /// two 16-vector tiles.
    @inlinable public static func scratchSize(channels: Int, width: Int) -> Int {
        4 * channels * 2 * halfWidth(width) + 32 * V.scalarCount
    }

    /// Input row y of every channel in the split, zero-padded layout (all zero outside the image).
    @inlinable @inline(__always)
    static func splitRow(_ src: UnsafePointer<Float>, height: Int, width: Int, channels: Int, y: Int,
                         into rows: UnsafeMutablePointer<Float>, half: Int) {
        for c in 0..<channels {
            let e = rows + c &* 2 &* half, o = e + half
            guard y >= 0 && y < height else {
                e.update(repeating: 0, count: 2 &* half)
                continue
            }
            let line = src + (c &* height &+ y) &* width
            // Padded column p = input column p - 1 = x + 1: even x -> O[x / 2], odd x -> E[x / 2 + 1].
            let pairs = width / 2
            e[0] = 0
            var j = 0
            while j < pairs {
                o[j] = line[2 &* j]
                e[j &+ 1] = line[2 &* j &+ 1]
                j &+= 1
            }
            var o0 = pairs
            if width & 1 == 1 { o[pairs] = line[width &- 1]; o0 &+= 1 }
            (o + o0).update(repeating: 0, count: half &- o0)
            let e0 = pairs &+ 1
            (e + e0).update(repeating: 0, count: half &- e0)
        }
    }

    /// Pooled rows `rows` of conv + 2x2 stride-2 max pool (raw sums, no bias): pooled (py, px) is
    /// the max over conv rows 2py, 2py + 1 and columns 2px, 2px + 1. dst holds the pooled planes
    /// (height / 2 x width / 2); height and width must be even.
    @inlinable public static func pooledRows(_ src: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                                             packed: UnsafePointer<Float>, filters: Int, rows: Range<Int>,
                                             into dst: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>) {
        let w = V.scalarCount, half = halfWidth(width), pw = width / 2
        let split = channels * 2 * half
        let r0 = scratch, r1 = scratch + split, r2 = scratch + 2 * split, r3 = scratch + 3 * split
        let top = scratch + 4 * split, bottom = top + 16 * w
        let plane = (height / 2) * pw
        for py in rows {
            for i in 0..<4 {
                splitRow(src, height: height, width: width, channels: channels, y: 2 * py - 1 + i,
                         into: scratch + i * split, half: half)
            }
            for b in 0..<(filters + 7) / 8 {
                let weights = packed + b * channels * 72
                var j0 = 0
                while j0 < pw {
                    if Tag.vectorRegisters >= 32 {
                        directConvRow(r0, r1, r2, channels: channels, half: half, j0: j0, weights: weights,
                                      tile: top, V.self, Tag.self)
                        directConvRow(r1, r2, r3, channels: channels, half: half, j0: j0, weights: weights,
                                      tile: bottom, V.self, Tag.self)
                    } else {
                        for first in [0, 4] where first < filters - b * 8 {
                            directConvRowHalf(r0, r1, r2, channels: channels, half: half, j0: j0, weights: weights,
                                              first: first, tile: top, V.self, Tag.self)
                            directConvRowHalf(r1, r2, r3, channels: channels, half: half, j0: j0, weights: weights,
                                              first: first, tile: bottom, V.self, Tag.self)
                        }
                    }
                    // The pool: the max of the two rows' even and odd sums (a plain loop, which
                    // LLVM vectorizes; Swift's generic SIMD comparisons would go lane by lane).
                    let count = min(w, pw - j0)
                    for r in 0..<min(8, filters - b * 8) {
                        let line = dst + (b * 8 + r) * plane + py * pw + j0
                        let te = top + r * w, to = top + (8 + r) * w, be = bottom + r * w, bo = bottom + (8 + r) * w
                        for l in 0..<count {
                            line[l] = Swift.max(Swift.max(te[l], to[l]), Swift.max(be[l], bo[l]))
                        }
                    }
                    j0 += w
                }
            }
        }
    }
}
