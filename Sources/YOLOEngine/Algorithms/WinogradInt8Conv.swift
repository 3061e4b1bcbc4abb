// 3x3 stride-1 convolutions as INT8 Winograd F(4x4, 3x3) or F(2x2, 3x3) (`winograd4-int8`,
// `winograd2-int8`): per block of tile rows, the input rows it reads quantized into planes of
// integers (q - zero point, as floats; 10 bits for F(2x2) where the table marks the layer `a10`),
// their transform (the level's FP32 one: exact on them) packed as int16
// pairs (Int8Winograd.swift; for F(2x2) the three in one pass, the level's `inputPairs`:
// WinogradPairsSIMD.swift), one 16-bit pair GEMM per position of the transform (36 or 16: U[xi],
// packed at load; float outputs), then WinogradConv's FP32 output transform and the epilogue.
// - F(4x4): 4x fewer products than INT8 im2col, each a 16 x 16-bit multiply-add, with kernels
//   quantized to 10 bits per (position, filter): where the CPU has no 8-bit dot product (AVX2), the
//   INT8 form that can beat FP32 F(4x4); its kernels take 8 bytes per weight.
// - F(2x2): 2.25x fewer products than INT8 im2col and exactly its integer sums (the s8 weights'
//   transform is exact in int16); 3.6 bytes per weight, and on 13x13 maps 49 tiles to F(4x4)'s 16.
//   On a Zen 3 the two measured within noise of each other but on the largest layers, where F(4x4)
//   won (docs/precision.md): the tuner picks per layer.
import YOLOCore
import YOLOKernels

final class WinogradInt8Conv: WinogradBlocks {
    let algorithm: ConvAlgorithm
    let conv: ConvolutionalLayer
    /// Output tile size: 2 or 4.
    let tile: Int
    let input: Int8Quantization
    let pairs: Int8Functions
    let transforms: WinogradFunctions
    let storage: ModelStorage
    /// Per position: the packed int16 kernels (filters x 2 x channels bytes).
    private let packed: [RawParameterPointer]
    /// Per position and filter: the input's scale x the kernel's (positions x filters).
    private let scales: ParameterPointer
    /// Zeros: the pair GEMM has no zero point.
    private let comp: RawParameterPointer
    /// Bytes of float transforms made at a time while loading (a band of filters).
    static let bandBytes = 4 << 20

    init(_ conv: ConvolutionalLayer, algorithm: ConvAlgorithm, weights: UnsafePointer<Float>, input: Int8Quantization,
         kernelSet: KernelSet, pool: WorkerPool) {
        guard let pairs = kernelSet.int16Pairs else { fatalError("\(algorithm) for layer \(conv.index) without the pair GEMM") }
        precondition(conv.is3x3Same && [.winograd2, .winograd4].contains(algorithm.method) && algorithm.precision == .int8,
                     "WinogradInt8Conv: layer \(conv.index) is not 3x3 stride 1 pad 1, or \(algorithm) is not INT8 Winograd")
        let tile = algorithm.method == .winograd4 ? 4 : 2
        // (F(4x4)'s int16 transform holds 100 x 255, not 100 x 1023: 10-bit inputs are F(2x2)'s.)
        precondition(tile == 2 || input.levels == 255, "winograd4-int8 for layer \(conv.index) with a 10-bit input")
        precondition(input.levels <= 1023, "\(algorithm) for layer \(conv.index) with a 12-bit input")
        (self.conv, self.algorithm, self.tile, self.input, self.pairs) = (conv, algorithm, tile, input, pairs)
        blockTileRows = WinogradInt8Conv.blockRows(positions: (tile + 2) * (tile + 2), pairs: (conv.inputShape.c + 1) / 2,
                                                   filters: conv.filters, tilesHigh: (conv.outputShape.h + tile - 1) / tile,
                                                   tilesWide: (conv.outputShape.w + tile - 1) / tile, nr: pairs.nr, lanes: pairs.lanes)
        transforms = kernelSet.winograd(tile: tile)
        let storage = ModelStorage()
        self.storage = storage
        let (m, c, p) = (conv.filters, conv.inputShape.c, (tile + 2) * (tile + 2))
        // A band of filters at a time: its float transforms and one position's int16 copy.
        let band = min(m, max(1, WinogradInt8Conv.bandBytes / (4 * p * c) / pairs.mr) * pairs.mr)
        let u = UnsafeMutablePointer<Float>.allocate(capacity: p * band * c)
        let q = UnsafeMutablePointer<Int16>.allocate(capacity: band * c)
        // F(2x2): the band's s8 weights (as floats) and their scales.
        let integers = tile == 2 ? UnsafeMutablePointer<Float>.allocate(capacity: band * c * 9) : nil
        let filterScales = UnsafeMutablePointer<Float>.allocate(capacity: band)
        defer { u.deallocate(); q.deallocate(); integers?.deallocate(); filterScales.deallocate() }
        let scales = storage.allocate(p * m)
        let packed = (0..<p).map { _ in storage.allocateBytes(pairs.packedASize(m: m, k: 2 * c)) }
        for f0 in stride(from: 0, to: m, by: band) {
            let f1 = min(m, f0 + band), count = f1 - f0
            if let integers {
                quantizeWeightsAsFloats(weights + f0 * c * 9, filters: count, taps: c * 9, into: integers, scales: filterScales)
                pool.parallelFor(count) { range in
                    winogradTransformKernels(integers, filterCount: count, channels: c, filters: range, into: u)
                }
            } else {
                pool.parallelFor(count) { range in
                    winograd4TransformKernels(weights + f0 * c * 9, filterCount: count, channels: c, filters: range, into: u)
                }
            }
            for xi in 0..<p {
                if integers != nil {
                    winograd2IntegerKernels(u + xi * count * c, count: count * c, into: q)
                    for f in 0..<count { scales[xi * m + f0 + f] = filterScales[f] / 4 }
                } else {
                    quantizeWinogradKernels(u + xi * count * c, filters: count, channels: c, into: q, scales: scales + xi * m + f0)
                }
                UnsafeRawPointer(q).withMemoryRebound(to: Int8.self, capacity: 2 * count * c) {
                    pairs.packA($0, lda: 2 * c, m: m, k: 2 * c, rows: f0..<f1, into: packed[xi])
                }
            }
        }
        self.packed = packed.map { RawParameterPointer(base: $0) }
        for i in 0..<p * m { scales[i] *= input.scale }
        self.scales = ParameterPointer(base: scales)
        let zeros = storage.allocateBytes(4 * m)
        zeros.initializeMemory(as: Int32.self, repeating: 0, count: m)
        comp = RawParameterPointer(base: zeros)
    }

    var pairCount: Int { (conv.inputShape.c + 1) / 2 }
    /// Tile rows per block (`blockRows`).
    let blockTileRows: Int

    /// Tile rows per block: about 256K words of int16 pairs and outputs, at least 128 tiles per
    /// GEMM. (F(4x4)'s float transforms, which the pairs overwrite in place, hold every channel:
    /// `workspaceFloats` counts them, and its block is up to 1.5x those words. Sizing it by the
    /// channels instead measured no clear change; left as measured.)
    /// Then, where the GEMM has 16 pairs or more, up to twice as many rows: the count whose GEMMs
    /// (n = rows x tilesWide columns) leave the fewest columns to a partial panel of the pair
    /// kernel (`nr` columns, vectors of `lanes`), counted twice for the edge code's lower speed
    /// (Int8EdgeKernels.swift). Layers 4 and 6 got faster; layer 2 (8 pairs) was slower with more
    /// rows: its GEMM is too shallow for the edge code to matter, and larger blocks cost it more in
    /// cache (docs/performance.md, "Figures from code comments"). The larger blocks cost no memory:
    /// F(2x2)'s workspace lost its unused planes and holds V as a word per pair of channels
    /// (`inputWords`). Blocks of this size are what one thread runs; several threads split the map
    /// evenly (`runInBlocks`).
    static func blockRows(positions: Int, pairs: Int, filters: Int, tilesHigh: Int, tilesWide: Int, nr: Int, lanes: Int) -> Int {
        let perRow = positions * (pairs + filters) * tilesWide
        let cached = 256 * 1024 / max(1, perRow)
        let wide = (128 + tilesWide - 1) / tilesWide
        let base = max(1, min(tilesHigh, max(cached, wide)))
        func cost(_ rows: Int) -> Int {
            var total = 0
            for r0 in stride(from: 0, to: tilesHigh, by: rows) {
                let n = min(rows, tilesHigh - r0) * tilesWide, edge = n % max(1, nr)
                total += n - edge + 2 * ((edge + lanes - 1) / max(1, lanes) * lanes)
            }
            return total
        }
        let upper = pairs < 16 ? base : min(tilesHigh, 2 * base)
        return (base...upper).min { cost($0) < cost($1) } ?? base
    }
    /// Whether the input side is F(2x2)'s one pass (`inputPairs`): no integer planes, and V
    /// holds a word (an int16 pair) per pair of channels, not a float per channel.
    var fusedInput: Bool { transforms.inputPairs != nil }
    /// The integer planes of a block's input rows (all channels; rows tile x (block + 1) + 1 at
    /// most: its tiles' and the halo), at the start of the block's workspace (none when fused).
    var planeFloats: Int {
        fusedInput ? 0 : (conv.inputShape.c * (tile * (blockTileRows + 1) + 1) * conv.inputShape.w + 15) & ~15
    }
    /// V's words (or floats) a tile and position.
    var inputWords: Int { fusedInput ? pairCount : conv.inputShape.c }
    var workspaceFloats: Int {
        planeFloats + positions * (inputWords + conv.filters) * blockTileRows * tilesWide
    }
    var parameterBytes: Int { 4 * storage.floats }

    /// The input rows of tile rows `tileRows` quantized to integer planes (exact) -> their input
    /// transform -> int16 pairs -> pair GEMMs -> `output` (the output transform, the epilogue,
    /// perhaps the pool), spread over the place's pool or on the calling thread. The planes hold
    /// input rows y0 ..< y1 only: those the tiles read (tile row r reads rows tile·r - 1 ...
    /// tile·r + tile), from one tile row before the first, so that the transform, given them as an
    /// image of y1 - y0 rows and the tile rows shifted by that one, reads what it reads in the
    /// whole input (and pads where it does).
    func block(_ src: UnsafePointer<Float>, tileRows: Range<Int>, _ place: BlockPlace, _ output: WinogradOutput) -> UInt64 {
        let (pool, workspace) = (place.pool, place.workspace)
        let (c, m, h, w, tw) = (conv.inputShape.c, conv.filters, conv.inputShape.h, conv.inputShape.w, tilesWide)
        let (g, p) = (pairCount, positions)
        let tiles = tileRows.count * tw
        let shift = max(0, tileRows.lowerBound - 1)
        let (y0, y1) = (tile * shift, min(h, tile * tileRows.upperBound + 1))
        let (planes, v) = (workspace, workspace + planeFloats)
        let mo = v + p * inputWords * tiles
        let (transforms, quantization, local) = (transforms, input, tileRows.lowerBound - shift ..< tileRows.upperBound - shift)
        let inputPart = { (channels: Range<Int>) in
            for ch in channels {
                winogradIntegerPlanes(src + (ch * h + y0) * w, count: (y1 - y0) * w, quantization: quantization,
                                      into: planes + ch * (y1 - y0) * w)
            }
            transforms.input(planes, height: y1 - y0, width: w, channelCount: c, channels: channels, tileRows: local,
                             tilesWide: tw, into: v)
        }
        let pack = { (columns: Range<Int>) in
            packWinogradPairs(v, positions: p, channels: c, tiles: tiles, columns: columns)
        }
        if let fused = transforms.inputPairs {
            // F(2x2): quantized, transformed and packed in one pass per pair of channels.
            let words = UnsafeMutableRawPointer(v).assumingMemoryBound(to: UInt32.self)
            let pairsPart = { (pairs: Range<Int>) in
                fused(src, h, w, c, pairs, tileRows, tw, quantization, words)
            }
            if let pool { pool.parallelFor(g, pairsPart) } else { pairsPart(0..<g) }
        } else if let pool {
            pool.parallelFor(c, inputPart); pool.parallelFor(tiles, pack)
        } else {
            inputPart(0..<c); pack(0..<tiles)
        }
        let words = UnsafeRawPointer(v).assumingMemoryBound(to: UInt32.self)
        // The positions' products shared out whole among the threads, in one hand-off (as FP32
        // Winograd's `Gemm.multiplyBatch`), not each split over them: one hand-off a block instead
        // of 36 (or 16). (No change in time showed on a 2-core Zen 3: docs/performance-int8-zen3.md.)
        let product = { (xi: Int, part: Int) in
            self.multiply(position: xi, words + xi * g * tiles, n: tiles, into: mo + xi * m * tiles, part: part, scratch: place.scratch)
        }
        let elapsed = timed(place.timed) {
            if let pool, pool.threadCount > 1 {
                pool.forEachChunk(p, product)
            } else {
                for xi in 0..<p { product(xi, 0) }
            }
        }
        output.write(mo, tileRows: tileRows, pool: pool)
        return elapsed
    }

    /// M[xi] (filters x n floats) = U[xi] · V[xi] (pairs x n) on the calling thread, with the
    /// GEMM scratch of thread `part`.
    private func multiply(position xi: Int, _ b: UnsafePointer<UInt32>, n: Int, into c: UnsafeMutablePointer<Float>,
                          part: Int, scratch: GemmScratch) {
        let (m, k) = (conv.filters, 2 * conv.inputShape.c)
        let comp = self.comp.base.assumingMemoryBound(to: Int32.self)
        pairs.gemm(m: m, n: n, k: k, packedA: packed[xi].base, b: b, ldb: n, c: c, ldc: n, comp: comp,
                   scale: scales.base + xi * m, scratch: UnsafeMutableRawPointer(scratch.part(part)))
    }
}
