// 3x3 stride-1 convolutions as Winograd F(2x2, 3x3) or F(4x4, 3x3): per block of tile rows, the
// input transform (V = Bᵀ d B per channel and tile), one GEMM per position of the transformed tile
// (16 or 36: M[xi] = U[xi] · V[xi], U the transformed kernels, packed at load), and the output
// transform (Aᵀ m A) into the output rows, then the epilogue (or the max pool after it, then the
// epilogue: the blocks and the output stage are WinogradPool.swift's). The transforms are the kernel set's
// SIMD ones, bit-identical to the scalar references of YOLOKernels. The GEMMs in FP32 or, for the
// BF16 forms, in BF16 (the transforms stay FP32; BF16 F(2x2)'s input transform writes the GEMM's
// bfloat16 pairs itself where the level has that form: WinogradBF16.swift).
import YOLOCore
import YOLOKernels

final class WinogradConv: WinogradBlocks {
    let algorithm: ConvAlgorithm
    let conv: ConvolutionalLayer
    /// Output tile size: 2 or 4.
    let tile: Int
    /// The transformed kernel matrices (filters x channels), one per position of the tile transform.
    let kernels: [GemmWeights]
    let transforms: WinogradFunctions
    let storage: ModelStorage
    /// BF16 F(2x2) where the GEMM has it: the input transform writes the GEMM's bfloat16 pairs
    /// (WinogradBF16.swift), with no float V between.
    let pairs: BF16WinogradPairs?

    /// Transforms the folded weights (filters x channels x 9) on `pool`'s threads, packs them for
    /// `gemm` (nil: OpenBLAS; the 16-bit GEMM for the BF16 and FP16 forms), with the
    /// transforms of `kernelSet` (the input's of `pairs` where given: that GEMM's).
    init(_ conv: ConvolutionalLayer, algorithm: ConvAlgorithm, weights: UnsafePointer<Float>, kernelSet: KernelSet,
         gemm: GemmFunctions?, pool: WorkerPool, pairs: BF16WinogradPairs? = nil) {
        self.pairs = algorithm.method == .winograd2 && gemm != nil ? pairs : nil
        let tile = algorithm.method == .winograd4 ? 4 : 2
        precondition(conv.is3x3Same && [.winograd2, .winograd4].contains(algorithm.method) && algorithm.precision != .int8,
                     "WinogradConv: layer \(conv.index) is not 3x3 stride 1 pad 1, or \(algorithm) is not Winograd")
        self.conv = conv
        self.tile = tile
        self.algorithm = algorithm
        transforms = kernelSet.winograd(tile: tile)
        let storage = ModelStorage()
        self.storage = storage
        let (m, c, p) = (conv.filters, conv.inputShape.c, (tile + 2) * (tile + 2))
        // With our kernels only the packed copies are kept; OpenBLAS reads the transforms as they are.
        let u = gemm == nil ? storage.allocate(p * m * c) : .allocate(capacity: p * m * c)
        defer { if gemm != nil { u.deallocate() } }
        pool.parallelFor(m) { range in
            if tile == 4 {
                winograd4TransformKernels(weights, filterCount: m, channels: c, filters: range, into: u)
            } else {
                winogradTransformKernels(weights, filterCount: m, channels: c, filters: range, into: u)
            }
        }
        kernels = (0..<p).map {
            Gemm.prepare(u + $0 * m * c, rows: m, columns: c, kernels: gemm, storage: storage, dataOutlivesLoad: true)
        }
    }

    /// Tile rows per block: about 256K floats of transforms where a block of at least 128 tiles
    /// fits there. Where even 128 tiles of F(2x2) overflow that, as many rows as `spillFloats`
    /// hold, the blocks then evened out: the transforms go through the next cache level either
    /// way, and fewer blocks read the transformed kernels fewer times, in fewer narrow GEMMs (a
    /// map in one block, the threads share its steps: each thread's GEMMs read only the kernels
    /// of its positions). F(4x4) stays as it was: its pooled blocks measured slower larger
    /// (docs/performance.md, "Figures from code comments").
    var blockTileRows: Int {
        WinogradConv.blockRows(tile: tile, perRow: positions * (conv.inputShape.c + conv.filters) * tilesWide,
                               tilesHigh: tilesHigh, tilesWide: tilesWide)
    }

    /// `blockTileRows` of a map `tilesHigh` x `tilesWide` tiles whose tile row holds `perRow`
    /// floats of transforms (V and M).
    static func blockRows(tile: Int, perRow: Int, tilesHigh: Int, tilesWide: Int, spill: Int = spillFloats) -> Int {
        let cached = 256 * 1024 / max(1, perRow), wide = (128 + tilesWide - 1) / max(1, tilesWide)
        guard cached < wide, tile == 2 else { return max(1, min(tilesHigh, max(cached, wide))) }
        let rows = max(1, min(tilesHigh, max(wide, spill / max(1, perRow))))
        let blocks = (tilesHigh + rows - 1) / rows
        return (tilesHigh + blocks - 1) / blocks
    }

    /// Floats of F(2x2) transforms a block may hold past the 256K: 2M (8 MiB), the best of 1M, 2M
    /// and 4M measured (docs/performance.md).
    static let spillFloats = 2 * 1024 * 1024

    var workspaceFloats: Int { positions * (conv.inputShape.c + conv.filters) * blockTileRows * tilesWide }
    var parameterBytes: Int { 4 * storage.floats }

    /// Input transform -> GEMMs -> output transform -> epilogue (or pool and epilogue) for tile
    /// rows `tileRows`, spread over the place's pool or on the calling thread.
    func block(_ src: UnsafePointer<Float>, tileRows: Range<Int>, _ place: BlockPlace, _ output: WinogradOutput) -> UInt64 {
        let (workspace, pool) = (place.workspace, place.pool)
        let (c, m, h, w, tw) = (conv.inputShape.c, conv.filters, conv.inputShape.h, conv.inputShape.w, tilesWide)
        let tiles = tileRows.count * tw
        let v = workspace, mo = workspace + positions * c * tiles
        if let pairs { return pairBlock(src, tileRows: tileRows, place, output, pairs: pairs, v: v, mo: mo) }
        let transforms = transforms
        let input = { (ch: Range<Int>) in
            transforms.input(src, height: h, width: w, channelCount: c, channels: ch, tileRows: tileRows, tilesWide: tw,
                             into: v)
        }
        if let pool { pool.parallelFor(c, input) } else { input(0..<c) }
        let elapsed = timed(place.timed) {
            Gemm.multiplyBatch(kernels, v, bStride: c * tiles, n: tiles, into: mo, cStride: m * tiles, pool: pool,
                               scratch: place.scratch)
        }
        output.write(mo, tileRows: tileRows, pool: pool)
        return elapsed
    }

    /// `block` through `pairs`: V as words of bfloat16 pairs of channels (half V's floats, in its
    /// room), each position's GEMM on its words.
    private func pairBlock(_ src: UnsafePointer<Float>, tileRows: Range<Int>, _ place: BlockPlace, _ output: WinogradOutput,
                           pairs: BF16WinogradPairs, v: UnsafeMutablePointer<Float>, mo: UnsafeMutablePointer<Float>) -> UInt64 {
        let (pool, c, m, h, w, tw) = (place.pool, conv.inputShape.c, conv.filters, conv.inputShape.h, conv.inputShape.w, tilesWide)
        let tiles = tileRows.count * tw, g = (c + 1) / 2
        let words = UnsafeMutableRawPointer(v).assumingMemoryBound(to: UInt32.self)
        let input = { (ps: Range<Int>) in pairs.input(src, h, w, c, ps, tileRows, tw, words) }
        if let pool { pool.parallelFor(g, input) } else { input(0..<g) }
        let kernels = kernels, scratch = place.scratch
        let elapsed = timed(place.timed) {
            Gemm.batch(kernels.count, pool: pool) { xi, part in
                let a = kernels[xi]
                pairs.gemm(m, tiles, c, a.packed!, words + xi * g * tiles, tiles, mo + xi * m * tiles, tiles, scratch.part(part), 0..<m)
            }
        }
        output.write(mo, tileRows: tileRows, pool: pool)
        return elapsed
    }
}
