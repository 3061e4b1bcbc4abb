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

/// One row of taps (one ky of one channel) for 4 filters: the (even, odd) inputs per tap are
/// kx = 0: (E[j], O[j]), 1: (O[j], E[j + 1]), 2: (E[j + 1], O[j + 1]); the weights of filter r
/// and tap kx at w[8 kx + r] (a block's packing). 12 broadcasts, 24 FMAs, each sum in kx order.
@inlinable @inline(__always)
func directConvTaps<V: SIMD, Tag: GemmISA>(_ e0: inout V, _ e1: inout V, _ e2: inout V, _ e3: inout V,
                                            _ o0: inout V, _ o1: inout V, _ o2: inout V, _ o3: inout V,
                                            _ w: UnsafePointer<Float>, _ eA: V, _ oA: V, _ eB: V, _ oB: V,
                                            _: Tag.Type) where V.Scalar == Float {
    // One tap kx for the 4 filters, its weights at w[k ..< k + 4] and its inputs (a, b).
    @inline(__always) func tap(_ k: Int, _ a: V, _ b: V) {
        var x = V(repeating: w[k])
        e0 = gemmMulAdd(e0, x, a, Tag.self); o0 = gemmMulAdd(o0, x, b, Tag.self)
        x = V(repeating: w[k + 1])
        e1 = gemmMulAdd(e1, x, a, Tag.self); o1 = gemmMulAdd(o1, x, b, Tag.self)
        x = V(repeating: w[k + 2])
        e2 = gemmMulAdd(e2, x, a, Tag.self); o2 = gemmMulAdd(o2, x, b, Tag.self)
        x = V(repeating: w[k + 3])
        e3 = gemmMulAdd(e3, x, a, Tag.self); o3 = gemmMulAdd(o3, x, b, Tag.self)
    }
    tap(0, eA, oA)
    tap(8, oA, eB)
    tap(16, eB, oB)
}

/// The direct kernels' order of packed weights: blocks of 8 filters, in each `groups` (channels, or
/// pairs of them), 9 taps, the block's 8 filters; `store(i, f, g, tap)` for each slot i in turn (f
/// may be past the last filter: the slot is then a zero).
@inlinable @inline(__always)
func directConvPackOrder(filters: Int, groups: Int, _ store: (Int, Int, Int, Int) -> Void) {
    var i = 0
    for b in 0..<(filters + 7) / 8 {
        for g in 0..<groups {
            for tap in 0..<9 {
                for r in 0..<8 { store(i, b * 8 + r, g, tap); i += 1 }
            }
        }
    }
}

/// Calls `body(E[j], O[j], E[j + 1], O[j + 1])` (the vectors at j0 of the split rows) for each
/// channel and each of the rows `r0`, `r1`, `r2` (ky), in that order: the loop of both direct
/// rows. (A loop over ky, not three copies of its body: written out, LLVM spilled the AVX-512
/// form.)
@inlinable @inline(__always)
func directConvInputs<V: SIMD>(_ r0: UnsafePointer<Float>, _ r1: UnsafePointer<Float>, _ r2: UnsafePointer<Float>,
                               channels: Int, half: Int, j0: Int, _ body: (V, V, V, V) -> Void) where V.Scalar == Float {
    for c in 0..<channels {
        let off = c * 2 * half + j0
        for ky in 0..<3 {
            let e = (ky == 0 ? r0 : ky == 1 ? r1 : r2) + off, o = e + half
            body(gemmLoad(e), gemmLoad(o), gemmLoad(e + 1), gemmLoad(o + 1))
        }
    }
}

/// Stores 4 filters' even sums at tile vectors first ..< first + 4 and their odd sums 8 further.
@inlinable @inline(__always)
func directConvStore<V: SIMD>(_ tile: UnsafeMutablePointer<Float>, first: Int, _ e0: V, _ e1: V, _ e2: V, _ e3: V,
                              _ o0: V, _ o1: V, _ o2: V, _ o3: V) where V.Scalar == Float {
    let w = V.scalarCount
    let t = UnsafeMutableRawPointer(tile)
    let (ev, od) = (first * 4 * w, (8 + first) * 4 * w)
    t.storeBytes(of: e0, toByteOffset: ev, as: V.self); t.storeBytes(of: o0, toByteOffset: od, as: V.self)
    t.storeBytes(of: e1, toByteOffset: ev + 4 * w, as: V.self); t.storeBytes(of: o1, toByteOffset: od + 4 * w, as: V.self)
    t.storeBytes(of: e2, toByteOffset: ev + 8 * w, as: V.self); t.storeBytes(of: o2, toByteOffset: od + 8 * w, as: V.self)
    t.storeBytes(of: e3, toByteOffset: ev + 12 * w, as: V.self); t.storeBytes(of: o3, toByteOffset: od + 12 * w, as: V.self)
}

/// Sums of one output row for 8 filters and the column pairs j0 ..< j0 + W: `r0`, `r1`, `r2`
/// are the split padded input rows y - 1, y, y + 1 (each `channels` rows of 2 x `half` floats),
/// `weights` the block's packed weights. Stores the even sums (8 vectors, one per filter) then the
/// odd ones (8 more) at `tile`. 16 accumulators, 4 inputs and a broadcast live: for CPUs with
/// 32 vector registers.
@inlinable @inline(__always)
func directConvRow<V: SIMD, Tag: GemmISA>(_ r0: UnsafePointer<Float>, _ r1: UnsafePointer<Float>, _ r2: UnsafePointer<Float>,
                                           channels: Int, half: Int, j0: Int, weights: UnsafePointer<Float>,
                                           tile: UnsafeMutablePointer<Float>, _: V.Type, _: Tag.Type)
    where V.Scalar == Float {
    var e0 = V(), e1 = V(), e2 = V(), e3 = V(), e4 = V(), e5 = V(), e6 = V(), e7 = V()
    var o0 = V(), o1 = V(), o2 = V(), o3 = V(), o4 = V(), o5 = V(), o6 = V(), o7 = V()
    var pw = weights
    directConvInputs(r0, r1, r2, channels: channels, half: half, j0: j0) { (eA: V, oA: V, eB: V, oB: V) in
        directConvTaps(&e0, &e1, &e2, &e3, &o0, &o1, &o2, &o3, pw, eA, oA, eB, oB, Tag.self)
        directConvTaps(&e4, &e5, &e6, &e7, &o4, &o5, &o6, &o7, pw + 4, eA, oA, eB, oB, Tag.self)
        pw += 24
    }
    directConvStore(tile, first: 0, e0, e1, e2, e3, o0, o1, o2, o3)
    directConvStore(tile, first: 4, e4, e5, e6, e7, o4, o5, o6, o7)
}

/// `directConvRow` for 4 of the block's 8 filters (`first`: 0 or 4), for CPUs with 16 vector
/// registers: the 8-filter form keeps 21 vectors live, more than AVX2's 16 ymm registers, and
/// spilled 57 of them to the stack. Here 8 + 4 + 1. Same sums in the same order; stores the 4
/// filters' even and odd sums where `directConvRow` stores them.
@inlinable @inline(__always)
func directConvRowHalf<V: SIMD, Tag: GemmISA>(_ r0: UnsafePointer<Float>, _ r1: UnsafePointer<Float>, _ r2: UnsafePointer<Float>,
                                               channels: Int, half: Int, j0: Int, weights: UnsafePointer<Float>, first: Int,
                                               tile: UnsafeMutablePointer<Float>, _: V.Type, _: Tag.Type)
    where V.Scalar == Float {
    var e0 = V(), e1 = V(), e2 = V(), e3 = V()
    var o0 = V(), o1 = V(), o2 = V(), o3 = V()
    var pw = weights + first
    directConvInputs(r0, r1, r2, channels: channels, half: half, j0: j0) { (eA: V, oA: V, eB: V, oB: V) in
        directConvTaps(&e0, &e1, &e2, &e3, &o0, &o1, &o2, &o3, pw, eA, oA, eB, oB, Tag.self)
        pw += 24
    }
    directConvStore(tile, first: first, e0, e1, e2, e3, o0, o1, o2, o3)
}

/// Input row y of every channel in the split, zero-padded layout (all zero outside the image):
/// channel c's E at rows + 2c · half, its O `half` further; `half` at least the pairs + 1.
@inlinable @inline(__always)
func directConvSplitRow<V: SIMD>(_ src: UnsafePointer<Float>, height: Int, width: Int, channels: Int, y: Int,
                             into rows: UnsafeMutablePointer<Float>, half: Int, _: V.Type) where V.Scalar == Float {
    for c in 0..<channels {
        let e = rows + c &* 2 &* half, o = e + half
        guard y >= 0 && y < height else {
            e.update(repeating: 0, count: 2 &* half)
            continue
        }
        let line = src + (c &* height &+ y) &* width
        // Padded column p = input column p - 1 = x + 1: even x -> O[x / 2], odd x -> E[x / 2 + 1].
        let pairs = width / 2, w = V.scalarCount
        e[0] = 0
        var j = 0
        // W pairs at a time: two vectors of the row, their even and odd lanes gathered by
        // constant lane moves (shuffles once specialized; the scalar loop below stays scalar,
        // as the compiler cannot tell the rows from the input apart).
        while j &+ w <= pairs {
            let p = UnsafeRawPointer(line + 2 &* j)
            let a = p.loadUnaligned(as: V.self), b = p.loadUnaligned(fromByteOffset: 4 &* w, as: V.self)
            var toO = V(), toE = V()     // the row's even columns (to O), its odd ones (to E)
            for i in 0..<(w / 2) {
                toO[i] = a[2 &* i]; toE[i] = a[2 &* i &+ 1]
                toO[w / 2 &+ i] = b[2 &* i]; toE[w / 2 &+ i] = b[2 &* i &+ 1]
            }
            UnsafeMutableRawPointer(o + j).storeBytes(of: toO, as: V.self)
            UnsafeMutableRawPointer(e + (j &+ 1)).storeBytes(of: toE, as: V.self)
            j &+= w
        }
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

/// Bias + activation that a conv fused with the max pool after it (the direct conv + pool, Winograd
/// F(2x2)'s pooled output transform) applies to the pooled values as it writes them, where the
/// activation is leaky or linear: the values of `biasActivateVectors` (x + b, then 0.1 x where
/// negative), so the fused step is bit for bit the unfused pair. Saves a pass over the pooled map
/// (yolov3-tiny's layer 0: 16 x 208 x 208 floats).
public struct PooledEpilogue {
    /// Per filter.
    public let bias: UnsafePointer<Float>
    public let leaky: Bool
    public init(bias: UnsafePointer<Float>, leaky: Bool) { (self.bias, self.leaky) = (bias, leaky) }

    /// `count` pooled values of filter `filter` at p, in place (a loop LLVM vectorizes; W wide where
    /// count is a constant once inlined).
    @inlinable @inline(__always)
    func apply(_ p: UnsafeMutablePointer<Float>, count: Int, filter: Int) {
        let b = bias[filter]
        if leaky {
            for l in 0..<count { let v = p[l] + b; p[l] = v < 0 ? v * 0.1 : v }
        } else {
            for l in 0..<count { p[l] += b }
        }
    }
}

/// The pool of two conv rows' tiles (`top`, `bottom`: per filter r, its even sums at vector r and
/// its odd ones at 8 + r, `width` lanes each): out[r · plane + l] = the max of the four, for the
/// first `count` lanes of the first `filters` filters (then `epilogue`, filter first + r). A plain
/// loop, which LLVM vectorizes (Swift's generic SIMD comparisons would go lane by lane); a whole
/// vector's loop has a constant count once inlined, so it is vectorized W wide, not 4.
@inlinable @inline(__always)
func directConvPoolTiles(_ top: UnsafePointer<Float>, _ bottom: UnsafePointer<Float>, width w: Int, count: Int,
                         filters: Int, into out: UnsafeMutablePointer<Float>, plane: Int, epilogue: PooledEpilogue?,
                         first: Int) {
    for r in 0..<filters {
        let line = out + r * plane
        let te = top + r * w, to = top + (8 + r) * w, be = bottom + r * w, bo = bottom + (8 + r) * w
        if count == w {
            for l in 0..<w { line[l] = Swift.max(Swift.max(te[l], to[l]), Swift.max(be[l], bo[l])) }
            epilogue?.apply(line, count: w, filter: first + r)
        } else {
            for l in 0..<count { line[l] = Swift.max(Swift.max(te[l], to[l]), Swift.max(be[l], bo[l])) }
            epilogue?.apply(line, count: count, filter: first + r)
        }
    }
}

public enum DirectConv3x3<V: SIMD, Tag: GemmISA> where V.Scalar == Float {
    /// Floats of packed weights for `filters` x `channels` 3x3 kernels.
    @inlinable public static func packedSize(filters: Int, channels: Int) -> Int {
        (filters + 7) / 8 * 8 * channels * 9
    }

    /// Packs Darknet-layout weights w[f][c][ky][kx] into blocks of 8 filters: p[block][c][tap][8].
    @inlinable public static func pack(_ w: UnsafePointer<Float>, filters: Int, channels: Int,
                                       into p: UnsafeMutablePointer<Float>) {
        directConvPackOrder(filters: filters, groups: channels) { i, f, c, tap in
            p[i] = f < filters ? w[(f * channels + c) * 9 + tap] : 0
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
        directConvSplitRow(src, height: height, width: width, channels: channels, y: y, into: rows, half: half, V.self)
    }

    /// Pooled rows `rows` of conv + 2x2 stride-2 max pool (raw sums, or with `epilogue`): pooled
    /// (py, px) is the max over conv rows 2py, 2py + 1 and columns 2px, 2px + 1. dst holds the
    /// pooled planes (height / 2 x width / 2); height and width must be even.
    @inlinable public static func pooledRows(_ src: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                                             packed: UnsafePointer<Float>, filters: Int, rows: Range<Int>,
                                             into dst: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>,
                                             epilogue: PooledEpilogue? = nil) {
        let w = V.scalarCount, half = halfWidth(width), pw = width / 2
        let split = channels * 2 * half
        var (r0, r1, r2, r3) = (scratch, scratch + split, scratch + 2 * split, scratch + 3 * split)
        let top = scratch + 4 * split, bottom = top + 16 * w
        let plane = (height / 2) * pw
        for py in rows {
            // Input rows 2py - 1 ... 2py + 2; the next pooled row's first two are this one's last
            // two, so after the first only two rows are split (the buffers turn round).
            if py > rows.lowerBound {
                (r0, r1, r2, r3) = (r2, r3, r0, r1)
                splitRow(src, height: height, width: width, channels: channels, y: 2 * py + 1, into: r2, half: half)
                splitRow(src, height: height, width: width, channels: channels, y: 2 * py + 2, into: r3, half: half)
            } else {
                for i in 0..<4 {
                    splitRow(src, height: height, width: width, channels: channels, y: 2 * py - 1 + i,
                             into: scratch + i * split, half: half)
                }
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
                    directConvPoolTiles(top, bottom, width: w, count: min(w, pw - j0), filters: min(8, filters - b * 8),
                                        into: dst + b * 8 * plane + py * pw + j0, plane: plane, epilogue: epilogue,
                                        first: b * 8)
                    j0 += w
                }
            }
        }
    }
}
