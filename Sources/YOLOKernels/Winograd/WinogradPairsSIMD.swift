// The input side of INT8 Winograd F(2x2, 3x3) in one pass (`WinogradFunctions.inputPairs`): the
// input rows quantized as `winogradIntegerPlanes` quantizes them, transformed as `input2` transforms
// them, and packed as `packWinogradPairs` packs them, without the float planes and the float V
// between (on yolov3-tiny's layer 2 those are 0.7 M and 11 M floats a forward, written and read
// back). Bit-identical to those three steps in turn (Int8WinogradTests): the same float operations
// on every value, the same int16 of each.
//
// Per pair of channels and group of tile rows: each channel's rows quantized into the padded rows,
// its d B into an h array of its own (`input2Rows`), then Bᵀ (d B) of both, W tiles at a time,
// as 16 positions of int16 pairs. After editing this file, touch the per-ISA targets' sources
// (WinogradSIMD.swift says why).

extension WinogradSIMD {
    /// Words[(xi · pairCount + g) · tiles + t] for the pairs of channels g in `pairs` (channels 2g
    /// and 2g + 1 of channelCount; pairCount = ceil(channelCount / 2)): the int16 of channel 2g's
    /// V[xi][t] in bits 0-15 and of channel 2g + 1's in bits 16-31 (0 past the last channel), where
    /// V = Bᵀ d B of d = q - zeroPoint, q as `q` rounds the input (`winogradIntegerPlanes`), and
    /// tiles t = n · tw + tx of tile rows `tileRows` (rows · tw of them).
    @inlinable
    public static func input2Pairs(_ src: UnsafePointer<Float>, height: Int, width: Int, channelCount: Int, pairs: Range<Int>,
                                   tileRows: Range<Int>, tilesWide tw: Int, quantization q: Int8Quantization,
                                   into words: UnsafeMutablePointer<UInt32>) {
        let w = V.scalarCount
        let rows = tileRows.count, tiles = rows * tw, pairCount = (channelCount + 1) / 2
        let matrix = pairCount * tiles
        let paddedCount = 2 * ((tw + w - 1) / w) * w + 2
        let copyCount = min(width, 2 * tw + 1)
        let group = min(rows, max(1, (256 + tw - 1) / tw))
        let hCount = (group + 1) * tw + w
        let paddedRows = 2 * (group + 1)
        let (inverse, zero, top) = (V(repeating: q.inverseScale), V(repeating: Float(q.zeroPoint)), V(repeating: Float(q.levels)))
        withUnsafeTemporaryAllocation(of: Float.self, capacity: paddedRows * paddedCount + 16 * hCount + 16 * w) { scratch in
            scratch.initialize(repeating: 0)
            let padded = scratch.baseAddress!, h = padded + paddedRows * paddedCount
            let tail = UnsafeMutableRawPointer(h + 16 * hCount).assumingMemoryBound(to: UInt32.self)
            for g in pairs {
                let second = 2 * g + 1 < channelCount
                for r0 in Swift.stride(from: 0, to: rows, by: group) {
                    let groupRows = min(group, rows - r0), groupTiles = groupRows * tw
                    let y0 = 2 * (tileRows.lowerBound + r0) - 1
                    for i in 0..<(second ? 2 : 1) {
                        let plane = src + (2 * g + i) * height * width
                        for r in max(0, -y0)..<min(2 * (groupRows + 1), height - y0) {
                            quantizeRow(plane + (y0 + r) * width, count: copyCount, inverse: inverse, zero: zero, top: top,
                                        into: padded + r * paddedCount + 1)
                        }
                        input2Rows(padded, paddedCount: paddedCount, y0: y0, groupRows: groupRows, height: height,
                                   tilesWide: tw, into: h + 8 * i * hCount, hCount: hCount)
                    }
                    let base = words + g * tiles + r0 * tw
                    var t = 0
                    while t + w <= groupTiles {
                        pairColumns(h + t, hCount: hCount, tilesWide: tw, second: second, into: base + t, matrix: matrix)
                        t += w
                    }
                    if t < groupTiles {
                        pairColumns(h + t, hCount: hCount, tilesWide: tw, second: second, into: tail, matrix: w)
                        for xi in 0..<16 { (base + xi * matrix + t).update(from: tail + xi * w, count: groupTiles - t) }
                    }
                }
            }
        }
    }

    /// `count` floats of a row quantized to exact integers d = q - zeroPoint, as `winogradIntegerPlanes`
    /// (the same operations, lane by lane).
    @inlinable @inline(__always)
    static func quantizeRow(_ src: UnsafePointer<Float>, count: Int, inverse: V, zero: V, top: V,
                            into dst: UnsafeMutablePointer<Float>) {
        let w = V.scalarCount, magic = V(repeating: 12_582_912)
        let topBits = unsafeBitCast(top, to: V.MaskStorage.self)
        @inline(__always) func integer(_ x: V) -> V {
            ((clampToLevels(x * inverse + zero, top: topBits) + magic) - magic) - zero
        }
        var i = 0
        while i + w <= count { winogradStore(integer(winogradLoad(src + i)), dst + i); i += w }
        for j in i..<count {
            var t = src[j] * inverse[0] + zero[0]
            t = t < 0 ? 0 : t
            t = t > top[0] ? top[0] : t
            dst[j] = ((t + 12_582_912) - 12_582_912) - zero[0]
        }
    }

    /// Bᵀ (d B) of W tiles of both channels (h: the first channel's arrays, the second's 8 hCount
    /// after), as 16 rows of int16 pairs `matrix` words apart.
    @inlinable @inline(__always)
    static func pairColumns(_ h: UnsafePointer<Float>, hCount: Int, tilesWide tw: Int, second: Bool,
                            into base: UnsafeMutablePointer<UInt32>, matrix: Int) {
        for k in 0..<4 {
            let (a0, a1, a2, a3) = columnTransform(h + k * hCount, hCount: hCount, tilesWide: tw)
            let (b0, b1, b2, b3) = second ? columnTransform(h + (8 + k) * hCount, hCount: hCount, tilesWide: tw)
                                          : (V(), V(), V(), V())
            let o = base + k * matrix
            storePairs(a0, b0, o); storePairs(a1, b1, o + 4 * matrix)
            storePairs(a2, b2, o + 8 * matrix); storePairs(a3, b3, o + 12 * matrix)
        }
    }

    /// Positions k, 4 + k, 8 + k, 12 + k of W tiles (input2Columns' expressions).
    @inlinable @inline(__always)
    static func columnTransform(_ even: UnsafePointer<Float>, hCount: Int, tilesWide tw: Int) -> (V, V, V, V) {
        let odd = even + 4 * hCount
        let r0: V = winogradLoad(even), r1: V = winogradLoad(odd)
        let r2: V = winogradLoad(even + tw), r3: V = winogradLoad(odd + tw)
        return (r0 - r2, r1 + r2, r2 - r1, r1 - r3)
    }

    /// W words: the int16 of a's exact integers in bits 0-15, of b's in bits 16-31 (`winogradInt16`).
    @inlinable @inline(__always)
    static func storePairs(_ a: V, _ b: V, _ p: UnsafeMutablePointer<UInt32>) {
        let magic = V(repeating: 12_582_912)
        let bias = unsafeBitCast(magic, to: V.MaskStorage.self)
        let lo = unsafeBitCast(a + magic, to: V.MaskStorage.self) &- bias
        let hi = unsafeBitCast(b + magic, to: V.MaskStorage.self) &- bias
        UnsafeMutableRawPointer(p).storeBytes(of: (lo & 0xFFFF) | (hi &<< 16), as: V.MaskStorage.self)
    }
}
