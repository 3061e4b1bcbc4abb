// F(2x2, 3x3)'s output transform fused with the 2x2 stride-2 max pool after it
// (`WinogradFunctions.outputPooled`): a tile of F(2x2) is 2 x 2 outputs at an even row and column,
// exactly one window of the pool, so the pooled map is the max of each tile's four outputs, and
// M's tiles (t = n · tw + tx) are the pooled map's pixels in order. The convolution's full-size
// rows are neither written nor read back (WinogradPool.swift wrote them into an image, then
// pooled it). Bit-identical to `output2` then `maxPool2x2`: the same expressions for the four
// outputs, then maxPool2x2's scalar max in its order, over W lanes at a time. After editing this
// file, touch the per-ISA targets' sources (WinogradSIMD.swift says why).

extension WinogradSIMD {
    /// dst[f · planeStride + t] = max of tile t's four outputs (Aᵀ m A of M[xi][f][t]; M has
    /// filterCount x tiles floats per position), for the filters `filters` and tiles 0 ..< tiles;
    /// then `epilogue` (bias + leaky or linear, `biasActivateVectors`' operations) where given.
    @inlinable
    public static func output2Pooled(_ m: UnsafePointer<Float>, filterCount: Int, filters: Range<Int>, tiles: Int,
                                     planeStride: Int, into dst: UnsafeMutablePointer<Float>, epilogue: PooledEpilogue? = nil) {
        let w = V.scalarCount, matrix = filterCount * tiles
        withUnsafeTemporaryAllocation(of: Float.self, capacity: 16 * w + w) { scratch in
            scratch.initialize(repeating: 0)
            let tail = scratch.baseAddress!             // the last, partial chunk of M: 16 rows of W
            let maxima = tail + 16 * w                  // its maxima
            let leaky = epilogue?.leaky ?? false
            for f in filters {
                let base = m + f * tiles, out = dst + f * planeStride, bias = epilogue.map { $0.bias[f] }
                var t = 0
                while t + w <= tiles {
                    pooledChunk(base + t, matrix: matrix, into: out + t, bias: bias, leaky: leaky)
                    t += w
                }
                if t < tiles {
                    // Whole vectors when they stay inside M (reading into the next rows), else a copy.
                    let inside = (f + 1) * tiles + w - (tiles - t) <= filterCount * tiles
                    if !inside { for xi in 0..<16 { (tail + xi * w).update(from: base + xi * matrix + t, count: tiles - t) } }
                    pooledChunk(inside ? base + t : UnsafePointer(tail), matrix: inside ? matrix : w, into: maxima, bias: bias,
                                leaky: leaky)
                    (out + t).update(from: maxima, count: tiles - t)
                }
            }
        }
    }

    /// W tiles' pooled outputs at `out` (W floats), from the 16 rows of M at p, `matrix` apart.
    @inlinable @inline(__always)
    static func pooledChunk(_ p: UnsafePointer<Float>, matrix: Int, into out: UnsafeMutablePointer<Float>, bias: Float?,
                            leaky: Bool) {
        @inline(__always) func load(_ i: Int) -> V { winogradLoad(p + i * matrix) }
        // Aᵀ m, column k: (m0k + m1k + m2k, m1k - m2k - m3k) (output2Chunk's expressions).
        let t0 = load(0) + load(4) + load(8), b0 = load(4) - load(8) - load(12)
        let t1 = load(1) + load(5) + load(9), b1 = load(5) - load(9) - load(13)
        let t2 = load(2) + load(6) + load(10), b2 = load(6) - load(10) - load(14)
        let t3 = load(3) + load(7) + load(11), b3 = load(7) - load(11) - load(15)
        // · A: rows (t0 + t1 + t2, t1 - t2 - t3) and (b0 + b1 + b2, b1 - b2 - b3); then maxPool2x2's
        // max(max(r0[2x], r0[2x + 1]), max(r1[2x], r1[2x + 1])), W lanes at a time (`poolMax`; as a
        // loop over the lanes through memory this function took 5.3% of an INT8 forward's samples
        // on the Emerald Rapids, 4.9% now: it waits mostly on its 16 loads of M).
        let top = ISA.poolMax(t0 + t1 + t2, t1 - t2 - t3), bottom = ISA.poolMax(b0 + b1 + b2, b1 - b2 - b3)
        var v = ISA.poolMax(top, bottom)
        if let bias {
            v += V(repeating: bias)
            if leaky { v = leakyBlend(v, v * V(repeating: 0.1)) }
        }
        winogradStore(v, out)
    }
}
