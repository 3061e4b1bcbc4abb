// What the Winograd convolutions (FP32, BF16/FP16 and INT8 forms) share: running in blocks of
// tile rows (`WinogradBlocks`), and the output stage of a block (`WinogradOutput`): the output
// transform into the convolution's map, then the epilogue; or, fused with the 2x2 stride-2 max
// pool after the convolution, the output transform into a compact image of the block's rows in
// the workspace, pooled at once (the rows still in cache) into the pool's map, then the epilogue
// on the pooled rows. So the convolution's full-size map is neither written nor read back, and
// the plan gives it no buffer. F(2x2) skips the image too: each of its tiles is one window of the
// pool, so the level's `outputPooled` writes each tile's maximum straight into the pool's map.
// Bit-identical to the unfused pair of steps: the same transform, the same max, the epilogue
// after the max as the pool step applies it (exact for a monotonic activation:
// max(act(x + b)) == act(max(x) + b)).
import YOLOCore
import YOLOKernels

/// A convolution that can also compute the 2x2 stride-2 max pool after it (`ConvPoolStep`).
protocol PoolFusingConvKernel: ConvKernel {
    /// Floats of per-thread scratch `run(_:pooledInto:...)` needs.
    var pooledWorkspaceFloats: Int { get }
    /// Computes the convolution of `src`, pools it 2x2 / 2 into `dst` (the pool's map) and applies
    /// `epilogue` there. Returns GEMM nanoseconds when timed.
    func run(_ src: UnsafePointer<Float>, pooledInto dst: UnsafeMutablePointer<Float>, epilogue: Epilogue,
             context: StepContext) -> UInt64
}

/// Whether a `PoolFusingConvKernel` of `conv` can compute `pool` after it: a 2x2 stride-2 pool of
/// this convolution alone, no padding before, even output sides (so every window lies in one block
/// of tile rows: blocks start at a multiple of the tile, 2 or 4), a monotonic activation.
func poolFusingFits(_ conv: ConvolutionalLayer, _ pool: MaxPoolLayer) -> Bool {
    let out = conv.outputShape
    return pool.geometry == (2, 2) && pool.padding < 2 && pool.sources == [conv.index] && conv.activation.isMonotonic
        && out.h % 2 == 0 && out.w % 2 == 0 && pool.outputShape == Shape(c: out.c, h: out.h / 2, w: out.w / 2)
}

/// A Winograd convolution computed in blocks of tile rows (WinogradConv, WinogradInt8Conv): each
/// gives its tile, transforms, block size, workspace and how it computes one block; the rest,
/// with or without the pool after it, is theirs in common.
protocol WinogradBlocks: PoolFusingConvKernel {
    var conv: ConvolutionalLayer { get }
    /// Output tile size: 2 or 4.
    var tile: Int { get }
    var transforms: WinogradFunctions { get }
    /// Tile rows per block.
    var blockTileRows: Int { get }
    /// Input transform -> products -> `output` for tile rows `tileRows`, spread over the place's
    /// pool or on the calling thread; returns GEMM nanoseconds when timed.
    func block(_ src: UnsafePointer<Float>, tileRows: Range<Int>, _ place: BlockPlace, _ output: WinogradOutput) -> UInt64
}

extension WinogradBlocks {
    var poolFusing: (any PoolFusingConvKernel)? { self }
    /// Positions of the tile transform: (tile + 2)².
    var positions: Int { (tile + 2) * (tile + 2) }
    var tilesHigh: Int { (conv.outputShape.h + tile - 1) / tile }
    var tilesWide: Int { (conv.outputShape.w + tile - 1) / tile }
    var blockCount: Int { (tilesHigh + blockTileRows - 1) / blockTileRows }
    /// With the pool: the block's rows of every filter, after what the block itself uses (none
    /// where each tile goes straight into the pool's map).
    var pooledWorkspaceFloats: Int {
        let direct = WinogradOutput.poolsTiles(transforms, tile: tile, tilesWide: tilesWide, pooledWidth: conv.outputShape.w / 2)
        return workspaceFloats + (direct ? 0 : WinogradOutput.imageFloats(filters: conv.filters, tile: tile,
                                                                          blockTileRows: blockTileRows, width: conv.outputShape.w))
    }

    func run(_ src: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>, epilogue: Epilogue?,
             context: StepContext) -> UInt64 {
        runInBlocks(total: tilesHigh, size: blockTileRows, count: blockCount, context: context) { tileRows, place in
            block(src, tileRows: tileRows, place, output(out, epilogue: epilogue, pooling: nil))
        }
    }

    func run(_ src: UnsafePointer<Float>, pooledInto dst: UnsafeMutablePointer<Float>, epilogue: Epilogue,
             context: StepContext) -> UInt64 {
        runInBlocks(total: tilesHigh, size: blockTileRows, count: blockCount, context: context) { tileRows, place in
            block(src, tileRows: tileRows, place,
                  output(dst, epilogue: epilogue, pooling: WinogradOutput.Pooling(image: place.workspace + workspaceFloats)))
        }
    }

    private func output(_ out: UnsafeMutablePointer<Float>, epilogue: Epilogue?,
                        pooling: WinogradOutput.Pooling?) -> WinogradOutput {
        WinogradOutput(transforms: transforms, tile: tile, shape: conv.outputShape, tilesWide: tilesWide, out: out,
                       epilogue: epilogue, pooling: pooling)
    }
}

/// Where a Winograd block's outputs go.
struct WinogradOutput {
    let transforms: WinogradFunctions
    let tile: Int
    /// The convolution's output shape.
    let shape: Shape
    let tilesWide: Int
    /// The convolution's map; or, fused with the pool, the pool's map.
    let out: UnsafeMutablePointer<Float>
    /// Nil: raw sums, whose bias + activation a later step applies (never when pooling).
    let epilogue: Epilogue?
    let pooling: Pooling?

    /// Fused with the pool: scratch for the block's rows of every filter (`imageFloats`).
    struct Pooling { let image: UnsafeMutablePointer<Float> }

    /// Whether a pooled block's tiles go straight into the pool's map (F(2x2), an even width: a
    /// tile is one window of the pool), not through the image.
    static func poolsTiles(_ transforms: WinogradFunctions, tile: Int, tilesWide: Int, pooledWidth: Int) -> Bool {
        transforms.outputPooled != nil && tile == 2 && tilesWide == pooledWidth
    }

    /// Floats of the compact image of `blockTileRows` tile rows.
    static func imageFloats(filters: Int, tile: Int, blockTileRows: Int, width: Int) -> Int {
        filters * tile * blockTileRows * width
    }

    /// The transformed products `mo` (positions x filters x the block's tiles) of tile rows
    /// `tileRows` -> outputs, spread over `pool`'s threads (nil: the calling thread).
    func write(_ mo: UnsafePointer<Float>, tileRows: Range<Int>, pool: WorkerPool?) {
        let (m, oh, ow, tw, tile, transforms) = (shape.c, shape.h, shape.w, tilesWide, tile, transforms)
        let rows = tile * tileRows.lowerBound ..< min(oh, tile * tileRows.upperBound)
        guard let pooling else {
            let out = out
            let output = { (fs: Range<Int>) in
                transforms.output(mo, filterCount: m, filters: fs, tileRows: tileRows, tilesWide: tw, outHeight: oh,
                                  outWidth: ow, into: out)
            }
            if let pool { pool.parallelFor(m, output) } else { output(0..<m) }
            applyEpilogue(epilogue, out, shape: shape, rows: rows, pool: pool)
            return
        }
        // The block's rows as an image of rows.count rows (tile rows from 0), pooled per filter.
        guard let epilogue else { preconditionFailure("WinogradOutput: pooling without the epilogue") }
        let (h, ph, pw) = (rows.count, oh / 2, ow / 2)
        let pooledRows = rows.lowerBound / 2 ..< rows.upperBound / 2
        let (dst, bias, act) = (out + pooledRows.lowerBound * pw, epilogue.bias, epilogue.activation)
        let local = 0..<tileRows.count
        if let pooled = transforms.outputPooled, WinogradOutput.poolsTiles(transforms, tile: tile, tilesWide: tw, pooledWidth: pw) {
            // F(2x2): a tile is a window of the pool; its maximum straight into the pool's map.
            let tiles = tileRows.count * tw
            // (A leaky or linear epilogue as the maxima are written, others after.)
            let fused = act == .leaky || act == .linear ? PooledEpilogue(bias: bias, leaky: act == .leaky) : nil
            let output = { (fs: Range<Int>) in
                pooled(mo, m, fs, tiles, ph * pw, dst, fused)
                if fused == nil {
                    applyBiasActivation(dst, bias: bias, channels: fs, spatial: pooledRows.count * pw, channelStride: ph * pw,
                                        activation: act)
                }
            }
            if let pool { pool.parallelFor(m, output) } else { output(0..<m) }
            return
        }
        let image = pooling.image
        let output = { (fs: Range<Int>) in
            transforms.output(mo, filterCount: m, filters: fs, tileRows: local, tilesWide: tw, outHeight: h,
                              outWidth: ow, into: image)
            for f in fs {
                maxPool2x2(image + f * h * ow, height: h, width: ow, outHeight: h / 2, outWidth: pw, channels: 0..<1,
                           into: dst + f * ph * pw)
            }
            applyBiasActivation(dst, bias: bias, channels: fs, spatial: pooledRows.count * pw, channelStride: ph * pw,
                                activation: act)
        }
        if let pool { pool.parallelFor(m, output) } else { output(0..<m) }
    }
}
