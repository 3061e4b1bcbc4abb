// BF16 Winograd F(2x2, 3x3) without the float V between the input transform and the GEMMs
// (`BF16WinogradPairs`): the input transform of a pair of channels writes the bfloat16 pairs the
// BF16 GEMM reads (channel 2g in bits 0-15, 2g + 1 in bits 16-31: `BF16DotISA.pairs`), and the
// GEMM copies those words into its panels instead of rounding and pairing floats (`packB`). On
// yolov3-tiny's layer 2 that is 2.8 M floats a forward not written, nor read back and converted.
// Bit-identical to `input2` then the GEMM's own packing: the same float operations on every value
// (`input2Rows`, then `columnTransform`, input2Columns' expressions), the same rounding
// instruction on each (WinogradBF16Tests). Its loop is input2Pairs' with the rows copied, not
// quantized: one driver for both, taking those steps as closures, measured slower in both
// (docs/performance.md), so each keeps its own.

extension WinogradSIMD where ISA: BF16DotISA, ISA.Floats == ISA.Vector {
    /// Words[(xi · pairCount + g) · tiles + t] for the pairs of channels g in `pairs` (channels 2g
    /// and 2g + 1 of channelCount; pairCount = ceil(channelCount / 2)): `ISA.pairs` of channel
    /// 2g's V[xi][t] and channel 2g + 1's (0 past the last channel), V = Bᵀ d B as `input2` computes
    /// it, tiles t = n · tw + tx of tile rows `tileRows` (rows · tw of them).
    @inlinable
    public static func input2BF16Pairs(_ src: UnsafePointer<Float>, height: Int, width: Int, channelCount: Int,
                                       pairs: Range<Int>, tileRows: Range<Int>, tilesWide tw: Int,
                                       into words: UnsafeMutablePointer<UInt32>) {
        let w = V.scalarCount
        let rows = tileRows.count, tiles = rows * tw, pairCount = (channelCount + 1) / 2
        let matrix = pairCount * tiles
        // (input2's scratch: padded rows, d B of a group of about 256 tiles, for both channels.)
        let paddedCount = 2 * ((tw + w - 1) / w) * w + 2
        let copyCount = min(width, 2 * tw + 1)
        let group = min(rows, max(1, (256 + tw - 1) / tw))
        let hCount = (group + 1) * tw + w
        let paddedRows = 2 * (group + 1)
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
                            (padded + r * paddedCount + 1).update(from: plane + (y0 + r) * width, count: copyCount)
                        }
                        input2Rows(padded, paddedCount: paddedCount, y0: y0, groupRows: groupRows, height: height,
                                   tilesWide: tw, into: h + 8 * i * hCount, hCount: hCount)
                    }
                    let base = words + g * tiles + r0 * tw
                    var t = 0
                    while t + w <= groupTiles {
                        bf16Columns(h + t, hCount: hCount, tilesWide: tw, second: second, into: base + t, matrix: matrix)
                        t += w
                    }
                    if t < groupTiles {
                        bf16Columns(h + t, hCount: hCount, tilesWide: tw, second: second, into: tail, matrix: w)
                        for xi in 0..<16 { (base + xi * matrix + t).update(from: tail + xi * w, count: groupTiles - t) }
                    }
                }
            }
        }
    }

    /// Bᵀ (d B) of W tiles of both channels (h: the first channel's arrays, the second's 8 hCount
    /// after), as 16 rows of bfloat16 pairs `matrix` words apart.
    @inlinable @inline(__always)
    static func bf16Columns(_ h: UnsafePointer<Float>, hCount: Int, tilesWide tw: Int, second: Bool,
                            into base: UnsafeMutablePointer<UInt32>, matrix: Int) {
        @inline(__always) func store(_ a: V, _ b: V, _ p: UnsafeMutablePointer<UInt32>) {
            UnsafeMutableRawPointer(p).storeBytes(of: ISA.pairs(a, b), as: ISA.Pairs.self)
        }
        for k in 0..<4 {
            let (a0, a1, a2, a3) = columnTransform(h + k * hCount, hCount: hCount, tilesWide: tw)
            let (b0, b1, b2, b3) = second ? columnTransform(h + (8 + k) * hCount, hCount: hCount, tilesWide: tw)
                                          : (V(), V(), V(), V())
            let o = base + k * matrix
            store(a0, b0, o); store(a1, b1, o + 4 * matrix)
            store(a2, b2, o + 8 * matrix); store(a3, b3, o + 12 * matrix)
        }
    }
}

extension BF16PackedGemm {
    /// `gemm` with B given as words of bfloat16 pairs (pairs x n, row stride ldb words), as
    /// `input2BF16Pairs` writes them: the same products, its panels copied, not packed.
    @inlinable @inline(__always)
    public static func gemmWords(m: Int, n: Int, k: Int, packedA: UnsafePointer<UInt32>, b: UnsafePointer<UInt32>, ldb: Int,
                                 c: UnsafeMutablePointer<Float>, ldc: Int, scratch: UnsafeMutablePointer<Float>, kc: Int,
                                 nc: Int, rowStart: Int = 0, rowEnd: Int? = nil) {
        gemmBlocks(m: m, n: n, k: k, packedA: packedA, c: c, ldc: ldc, scratch: scratch, kc: kc, nc: nc,
                   rowStart: rowStart, rowEnd: rowEnd) { jc, p0, pl, ncl, bp in
            packWords(b + p0 * ldb + jc, ldb: ldb, pairs: pl, ncl: ncl, into: bp)
        }
    }

    /// Rows 0..<pl (pairs) and columns 0..<ncl of the words at b (row stride ldb) into NR-column
    /// micro-panels, zero past column ncl (packB's layout).
    @inlinable @inline(__always)
    static func packWords(_ b: UnsafePointer<UInt32>, ldb: Int, pairs pl: Int, ncl: Int, into bp: UnsafeMutablePointer<UInt32>) {
        typealias P = D.Pairs
        let nr = K.nr, w = P.scalarCount, full = ncl / nr, rest = ncl - full * nr
        for q in 0..<pl {
            let row = b + q * ldb
            var dst = bp + q * nr
            for f in 0..<full {
                var v = 0
                while v < nr {
                    UnsafeMutableRawPointer(dst + v).storeBytes(of: UnsafeRawPointer(row + f * nr + v).loadUnaligned(as: P.self), as: P.self)
                    v += w
                }
                dst += pl * nr
            }
            if rest > 0 {
                dst.update(from: row + full * nr, count: rest)
                (dst + rest).update(repeating: 0, count: nr - rest)
            }
        }
    }
}

/// A BF16 GEMM's Winograd F(2x2) input transform into its own words, and its GEMM on them
/// (WinogradBF16.swift).
public struct BF16WinogradPairs: Sendable {
    /// (src, height, width, channelCount, pairs, tileRows, tilesWide, words): `input2BF16Pairs`.
    public let input: @Sendable (UnsafePointer<Float>, Int, Int, Int, Range<Int>, Range<Int>, Int,
                                 UnsafeMutablePointer<UInt32>) -> Void
    /// (m, n, k, packedA, b words, ldb, c, ldc, scratch, rows): `gemmWords`, packed A and scratch
    /// as the kernels' `gemm` takes them.
    public let gemm: @Sendable (Int, Int, Int, UnsafePointer<Float>, UnsafePointer<UInt32>, Int,
                                UnsafeMutablePointer<Float>, Int, UnsafeMutablePointer<Float>, Range<Int>) -> Void

    /// For the BF16 GEMM of `D` (its Winograd vectors its floats), blocking kc x nc as its `make`.
    @inlinable
    public static func make<D: BF16DotISA & WinogradISA>(_: D.Type, kc: Int, nc: Int) -> BF16WinogradPairs
        where D.Floats == D.Vector {
        BF16WinogradPairs(
            input: { WinogradSIMD<D>.input2BF16Pairs($0, height: $1, width: $2, channelCount: $3, pairs: $4, tileRows: $5,
                                                     tilesWide: $6, into: $7) },
            gemm: { m, n, k, a, b, ldb, c, ldc, scratch, rows in
                BF16PackedGemm<D>.gemmWords(m: m, n: n, k: k, packedA: UnsafeRawPointer(a).assumingMemoryBound(to: UInt32.self),
                                            b: b, ldb: ldb, c: c, ldc: ldc, scratch: scratch, kc: kc, nc: nc,
                                            rowStart: rows.lowerBound, rowEnd: rows.upperBound)
            })
    }

    @usableFromInline
    init(input: @escaping @Sendable (UnsafePointer<Float>, Int, Int, Int, Range<Int>, Range<Int>, Int,
                                     UnsafeMutablePointer<UInt32>) -> Void,
         gemm: @escaping @Sendable (Int, Int, Int, UnsafePointer<Float>, UnsafePointer<UInt32>, Int,
                                    UnsafeMutablePointer<Float>, Int, UnsafeMutablePointer<Float>, Range<Int>) -> Void) {
        (self.input, self.gemm) = (input, gemm)
    }
}
