#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import YOLOKernels

/// [convolutional]: convolution (groups = 1) + batch norm folded in at load + activation.
/// Computed as im2col + GEMM: output (filters x outH*outW) = weights (filters x c*k*k) · columns,
/// or for 3x3 stride-1 layers with enough channels as Winograd F(2x2, 3x3) (16 GEMMs).
final class ConvolutionalLayer: Layer, @unchecked Sendable {
    let kind = LayerKind.convolutional
    let index: Int
    let sources: [Int]
    let inputShape: Shape
    let outputShape: Shape
    let filters: Int, size: Int, stride: Int, pad: Int
    let batchNormalize: Bool
    let activation: Activation
    /// Folded weights (filters x c*size*size) and biases, set by `load`; they point into the
    /// model's immutable storage.
    private(set) var weights: GemmWeights?
    private(set) var biases: UnsafePointer<Float>?
    /// The transformed kernel matrices (filters x channels), one per position of the tile
    /// transform (16 for F(2x2, 3x3), 36 for F(4x4, 3x3)), when this layer uses Winograd.
    private(set) var winogradKernels: [GemmWeights]?
    /// Output tile size of the Winograd variant in use: 2 or 4 (0: no Winograd).
    private(set) var winogradTile = 0
    /// The SIMD Winograd transforms of the model's kernel level, set by `load`.
    private(set) var winogradTransforms = WinogradTransforms(level: .baseline)
    /// Set at load when the only consumer is a max pool that applies bias + activation.
    private(set) var epilogueDeferred = false
    /// The kernels of the direct 3x3 convolution + 2x2 max pool, for layers with few input
    /// channels when the model uses our GEMM kernels (nil: never direct).
    let directKernels: GemmKernels?
    /// The weights packed for `directKernels`, set by `load` (next to the GEMM's: passes that
    /// keep every output run im2col + GEMM).
    private(set) var directWeights: UnsafePointer<Float>?
    /// Set at load when this layer computes the 2x2 max pool after it with the direct kernel, in
    /// forward passes that do not keep every output.
    private(set) var absorbsPool = false

    /// `convolution` decides, with the layer's shape, whether and which Winograd variant it uses.
    init(section: DarknetConfig.Section, index: Int, inputShape: Shape,
         convolution: ModelOptions.Convolution = .im2col, kernels: GemmKernels? = nil) throws(YOLOError) {
        self.index = index
        sources = [index - 1]
        self.inputShape = inputShape
        filters = try section.positive("filters", section.int("filters", default: 1))
        size = try section.positive("size", section.int("size", default: 1))
        stride = try section.positive("stride", section.int("stride", default: 1))
        // Darknet: pad=1 means size/2 on each side; otherwise `padding` gives it directly.
        let padFlag = try section.int("pad", default: 0)
        pad = padFlag != 0 ? size / 2 : try section.positive("padding", section.int("padding", default: 0), minimum: 0)
        batchNormalize = try section.int("batch_normalize", default: 0) != 0
        activation = try Activation(name: section.string("activation", default: "logistic"), section: section)
        for (key, neutral) in [("groups", 1), ("dilation", 1), ("binary", 0), ("xnor", 0)] {
            let v = try section.int(key, default: neutral)
            if v != neutral { throw section.error("\(key)=\(v) is not supported (only \(key)=\(neutral))") }
        }
        guard inputShape.h + 2 * pad >= size, inputShape.w + 2 * pad >= size else {
            throw section.error("size=\(size) is larger than the padded input \(inputShape)")
        }
        let outH = (inputShape.h + 2 * pad - size) / stride + 1
        let outW = (inputShape.w + 2 * pad - size) / stride + 1
        outputShape = Shape(c: filters, h: outH, w: outW)
        let direct = size == 3 && stride == 1 && pad == 1 && inputShape.c <= ConvolutionalLayer.directMaxChannels
        directKernels = direct ? kernels : nil
        winogradTile = winogradTile(for: convolution)
    }

    /// A 3x3 stride-1 layer with at most this many input channels, followed by a 2x2 stride-2
    /// max pool, is computed with its pool in one pass by the direct kernel when the model runs
    /// our kernels (whatever the `convolution` option), so its full-size output never exists. As
    /// im2col + GEMM such layers have a depth of only 9 x channels. Measured on yolov3-tiny (one
    /// Zen 5 core, AVX-512, conv + pool): 3 channels at 416x416: 2.1 ms im2col + pool, 1.1 ms
    /// direct; 16 channels at 208x208: 2.6 ms im2col + pool (F(4x4) + pool: 1.9), 1.9 ms direct.
    /// Without the pool, the direct kernel lost to im2col (it writes its columns one at a time).
    static let directMaxChannels = 16

    var columns: Int { inputShape.c * size * size }
    var needsIm2col: Bool { !(size == 1 && stride == 1 && pad == 0) }
    var flops: Int { 2 * filters * columns * outputShape.h * outputShape.w }
    var geometry: (size: Int, stride: Int) { (size, stride) }

    /// Output rows per block: im2col and the GEMM go block by block so the column block stays
    /// in the core's L2 cache instead of making a round trip through memory.
    /// A block also keeps at least `minBlockColumns` pixels, below which sgemm loses speed.
    var blockRows: Int {
        let w = outputShape.w
        let cached = ConvolutionalLayer.blockFloats / max(1, columns * w)
        let wide = (ConvolutionalLayer.minBlockColumns + w - 1) / w
        return max(1, min(outputShape.h, max(cached, wide)))
    }
    var blockCount: Int { (outputShape.h + blockRows - 1) / blockRows }
    static let blockFloats = 64 * 1024
    static let minBlockColumns = 512
    /// Scratch floats for one thread: a column block, or a Winograd block.
    var workspaceCount: Int {
        let im2colBlock = needsIm2col ? columns * blockRows * outputShape.w : 0
        let winogradBlock = winogradTile > 0 ? positions * (inputShape.c + filters) * winogradBlockTileRows * tilesWide : 0
        let directScratch = directKernels?.directConvScratchSize(channels: inputShape.c, width: inputShape.w) ?? 0
        return max(im2colBlock, winogradBlock, directScratch)
    }

    // MARK: Winograd F(2x2, 3x3) and F(4x4, 3x3)

    /// 3x3 stride-1 pad-1 convolutions with enough input channels for the small GEMMs to pay
    /// (measured: with 16 channels, yolov3-tiny's layer 2 is faster with im2col).
    var supportsWinograd: Bool {
        size == 3 && stride == 1 && pad == 1 && inputShape.c >= ConvolutionalLayer.winogradMinChannels
    }
    static let winogradMinChannels = 32

    /// The Winograd tile for this layer under `option` (0: im2col). F(4x4, 3x3) does 4x fewer
    /// multiplications than direct convolution against 2.25x for F(2x2, 3x3), but on small maps
    /// its 4x4 tiles waste more of the edge (13x13 needs 16x16) and leave GEMMs too narrow
    /// (16 tiles), so it is used from `winograd4MinSize` up, with `winograd4MinChannels` or more.
    func winogradTile(for option: ModelOptions.Convolution) -> Int {
        guard supportsWinograd else { return 0 }
        switch option {
        case .im2col: return 0
        case .winograd2: return 2
        case .winograd:
            let large = min(outputShape.h, outputShape.w) >= ConvolutionalLayer.winograd4MinSize
            return large && inputShape.c >= ConvolutionalLayer.winograd4MinChannels ? 4 : 2
        }
    }
    /// Measured with our AVX-512 kernels and SIMD transforms on yolov3-tiny (ms, one Zen 5 core,
    /// F(2x2) / F(4x4)): 32 channels at 104x104: 1.21 / 0.91; 64 at 52x52: 1.03 / 0.76; 128 at
    /// 26x26: 1.15 / 0.63; 384 at 26x26: 3.50 / 1.84; at 13x13 (256 and 512 channels) they tie
    /// (F(4x4): 1.04, 3.75, 1.10 against 0.99, 3.82, 1.00), and F(4x4) would need 2.25x the
    /// memory for its kernels, so 13x13 keeps F(2x2). (16 channels at 208x208, with its max pool:
    /// direct 1.97, F(2x2) 2.05, F(4x4) 1.91: the direct kernel, which needs no full-size
    /// output, is used.)
    static let winograd4MinSize = 24
    static let winograd4MinChannels = 32
    /// Positions of the tile transform: (tile + 2)².
    var positions: Int { (winogradTile + 2) * (winogradTile + 2) }
    var tilesHigh: Int { winogradTile > 0 ? (outputShape.h + winogradTile - 1) / winogradTile : 0 }
    var tilesWide: Int { winogradTile > 0 ? (outputShape.w + winogradTile - 1) / winogradTile : 0 }
    /// Tile rows per block: about 256K floats of transforms, at least 128 tiles per GEMM.
    var winogradBlockTileRows: Int {
        let perRow = positions * (inputShape.c + filters) * tilesWide
        let cached = 256 * 1024 / max(1, perRow)
        let wide = (128 + tilesWide - 1) / tilesWide
        return max(1, min(tilesHigh, max(cached, wide)))
    }
    var winogradBlockCount: Int { (tilesHigh + winogradBlockTileRows - 1) / winogradBlockTileRows }

    // MARK: Parameters

    /// Floats this layer reads from a weights file: biases; scales, rolling mean, rolling
    /// variance when batch-normalized; weights.
    var parameterCount: Int { filters * (batchNormalize ? 4 : 1) + filters * columns }

    /// Folds batch norm into weights and biases in place (Darknet's epsilon outside the root),
    /// refuses non-finite values, and prepares the GEMM weights and, when the model uses
    /// Winograd for this layer, its transformed kernels.
    func load(parameters params: UnsafeMutablePointer<Float>, context: LoadContext) throws(YOLOError) {
        let bias = params
        let weights = params + filters * (batchNormalize ? 4 : 1)
        if let bad = (0..<parameterCount).first(where: { !params[$0].isFinite }) {
            throw .weights(file: context.weightsName, message: "layer \(index) [convolutional]: parameter \(bad) of \(parameterCount) is \(params[bad]); the weights must be finite numbers")
        }
        if batchNormalize {
            let scales = params + filters, mean = params + 2 * filters, variance = params + 3 * filters
            for f in 0..<filters {
                let factor = scales[f] / (variance[f].squareRoot() + 0.000001)
                let row = weights + f * columns
                for i in 0..<columns { row[i] *= factor }
                bias[f] = bias[f] - mean[f] * factor
            }
            if let f = (0..<filters).first(where: { !bias[$0].isFinite || !(variance[$0] >= 0) }) {
                throw .weights(file: context.weightsName, message: "layer \(index) [convolutional]: filter \(f) has batch-norm variance \(variance[f]) and scale \(scales[f]); folding them gives a non-finite bias")
            }
            if let i = (0..<filters * columns).first(where: { !weights[$0].isFinite }) {
                throw .weights(file: context.weightsName, message: "layer \(index) [convolutional]: weight \(i) is not finite after folding batch norm (scale / sqrt(variance) overflows)")
            }
        }
        // Copies of everything kept: the parameter buffer is reused for the next layer.
        let kept = context.storage.allocate(filters)
        kept.update(from: bias, count: filters)
        self.biases = UnsafePointer(kept)
        let kernels = context.kernels
        if let direct = directKernels {
            let packed = context.storage.allocate(direct.directConvPackedSize(filters: filters, channels: inputShape.c))
            direct.directConvPack(weights, filters: filters, channels: inputShape.c, into: packed)
            directWeights = UnsafePointer(packed)
        }
        if winogradTile > 0 {
            winogradTransforms = .forKernels(kernels)
            // The transformed kernels; with our kernels only their packed copies are kept.
            let (m, c, p, tile) = (filters, inputShape.c, positions, winogradTile)
            let u = kernels == nil ? context.storage.allocate(p * m * c) : .allocate(capacity: p * m * c)
            defer { if kernels != nil { u.deallocate() } }
            context.pool.parallelFor(m) { range in
                if tile == 4 {
                    winograd4TransformKernels(weights, filterCount: m, channels: c, filters: range, into: u)
                } else {
                    winogradTransformKernels(weights, filterCount: m, channels: c, filters: range, into: u)
                }
            }
            winogradKernels = (0..<p).map {
                Gemm.prepare(u + $0 * m * c, rows: m, columns: c, kernels: kernels, storage: context.storage,
                             dataOutlivesLoad: true)
            }
        } else {
            self.weights = Gemm.prepare(weights, rows: filters, columns: columns, kernels: kernels,
                                        storage: context.storage, dataOutlivesLoad: false)
        }
    }

    var deferrableEpilogue: Epilogue? {
        biases.map { Epilogue(bias: $0, activation: activation) }
    }

    func deferEpilogue() { epilogueDeferred = true }

    /// A 2x2 stride-2 max pool of the whole output (even height and width) after a layer the
    /// direct kernel can run: the pool is computed on each pair of rows as they are made.
    func absorb(_ next: any Layer) -> Bool {
        guard directKernels != nil, epilogueDeferred, next.kind == .maxpool, next.geometry == (2, 2),
              outputShape.h % 2 == 0, outputShape.w % 2 == 0,
              next.outputShape == Shape(c: filters, h: outputShape.h / 2, w: outputShape.w / 2) else { return false }
        absorbsPool = true
        return true
    }

    var writesNextOutput: Bool { absorbsPool }

    // MARK: Forward

    func forward(_ context: inout ForwardContext) {
        let n = outputShape.h * outputShape.w
        let timed = context.gemmNanoseconds != nil
        let pool = context.pool
        let split = pool.threadCount > 1
        let src = UnsafePointer(input(context)), out = context.buffer(index)
        var gemmTime: UInt64 = 0
        if let direct = directKernels, absorbsPool && context.absorbs {
            forwardDirectPooled(direct, src, context: context)
        } else if winogradKernels != nil {
            gemmTime = forwardWinograd(src, out, context: context, timed: timed)
        } else if !needsIm2col {
            // 1x1 stride 1: the input is already the column matrix.
            let start = timed ? monotonicNanoseconds() : 0
            Gemm.multiply(weights!, src, n: n, ldb: n, into: out, ldc: n, pool: pool, scratch: context.gemmScratch)
            gemmTime = timed ? monotonicNanoseconds() - start : 0
            epilogue(out, rows: 0..<outputShape.h, pool: pool)
        } else if split && blockCount >= pool.threadCount {
            // Each thread takes whole blocks: im2col, GEMM and epilogue of a block on one core.
            // The block count is rounded up to a multiple of the threads and the rows spread
            // evenly, so no thread waits for another's larger block.
            let parts = pool.threadCount
            let blocks = (blockCount + parts - 1) / parts * parts
            let ctx = context, oh = outputShape.h
            gemmTime = withUnsafeTemporaryAllocation(of: UInt64.self, capacity: parts) { times in
                times.initialize(repeating: 0)
                pool.run { part in
                    for b in Swift.stride(from: part, to: blocks, by: parts) {
                        times[part] &+= self.block(src, out, rows: oh * b / blocks ..< oh * (b + 1) / blocks,
                                                   workspace: ctx.workspace(part: part), pool: nil,
                                                   scratch: ctx.gemmScratch.only(part), timed: timed)
                    }
                }
                return times[0]
            }
        } else {
            // One block at a time, each spread over all threads (im2col rows, then the GEMM).
            for b in 0..<blockCount {
                let rows = b * blockRows ..< min(outputShape.h, (b + 1) * blockRows)
                gemmTime &+= block(src, out, rows: rows, workspace: context.workspace, pool: pool,
                                   scratch: context.gemmScratch, timed: timed)
            }
        }
        if let t = context.gemmNanoseconds { context.gemmNanoseconds = t + gemmTime }
    }

    /// The direct path: conv + bias + activation + the 2x2 max pool, written to the pool's
    /// buffer, pooled rows split over the threads.
    private func forwardDirectPooled(_ k: GemmKernels, _ src: UnsafePointer<Float>, context: ForwardContext) {
        let (c, h, w, m) = (inputShape.c, inputShape.h, inputShape.w, filters)
        let dst = context.buffer(index + 1)
        let (count, rowWidth) = (outputShape.h / 2, outputShape.w / 2)
        let weights = directWeights!, bias = biases!, act = activation, ctx = context, pool = context.pool
        let parts = min(pool.threadCount, count)
        pool.run { part in
            guard part < parts else { return }
            let rows = count * part / parts ..< count * (part + 1) / parts
            k.directConvPooled(src, height: h, width: w, channels: c, packed: weights, filters: m, rows: rows,
                               into: dst, scratch: ctx.workspace(part: part))
            // The pool's bias + activation (this layer's, which the pool took), on the pooled rows.
            biasActivate(dst + rows.lowerBound * rowWidth, bias: bias, channels: 0..<m, spatial: rows.count * rowWidth,
                         channelStride: count * rowWidth, activation: act, exp: exp)
        }
    }

    /// The Winograd path: blocks of tile rows, each input transform -> 16 or 36 GEMMs -> output
    /// transform -> epilogue, threaded like the im2col path.
    private func forwardWinograd(_ src: UnsafePointer<Float>, _ out: UnsafeMutablePointer<Float>,
                                 context: ForwardContext, timed: Bool) -> UInt64 {
        let pool = context.pool
        if pool.threadCount > 1 && winogradBlockCount >= pool.threadCount {
            let parts = pool.threadCount
            let blocks = (winogradBlockCount + parts - 1) / parts * parts
            let ctx = context, th = tilesHigh
            return withUnsafeTemporaryAllocation(of: UInt64.self, capacity: parts) { times in
                times.initialize(repeating: 0)
                pool.run { part in
                    for b in Swift.stride(from: part, to: blocks, by: parts) {
                        times[part] &+= self.winogradBlock(src, out, tileRows: th * b / blocks ..< th * (b + 1) / blocks,
                                                           workspace: ctx.workspace(part: part), pool: nil,
                                                           scratch: ctx.gemmScratch.only(part), timed: timed)
                    }
                }
                return times[0]
            }
        }
        var total: UInt64 = 0
        for b in 0..<winogradBlockCount {
            let rows = b * winogradBlockTileRows ..< min(tilesHigh, (b + 1) * winogradBlockTileRows)
            total &+= winogradBlock(src, out, tileRows: rows, workspace: context.workspace, pool: pool,
                                    scratch: context.gemmScratch, timed: timed)
        }
        return total
    }

    private func winogradBlock(_ src: UnsafePointer<Float>, _ out: UnsafeMutablePointer<Float>, tileRows: Range<Int>,
                               workspace: UnsafeMutablePointer<Float>, pool: WorkerPool?, scratch: GemmScratch,
                               timed: Bool) -> UInt64 {
        let (c, m, h, w, tw, tile) = (inputShape.c, filters, inputShape.h, inputShape.w, tilesWide, winogradTile)
        let (oh, ow) = (outputShape.h, outputShape.w)
        let tiles = tileRows.count * tw
        let v = workspace, mo = workspace + positions * c * tiles
        let transforms = winogradTransforms
        let input = { (ch: Range<Int>) in
            transforms.input(tile: tile, src, height: h, width: w, channelCount: c, channels: ch, tileRows: tileRows,
                             tilesWide: tw, into: v)
        }
        let output = { (fs: Range<Int>) in
            transforms.output(tile: tile, mo, filterCount: m, filters: fs, tileRows: tileRows, tilesWide: tw,
                              outHeight: oh, outWidth: ow, into: out)
        }
        if let pool { pool.parallelFor(c, input) } else { input(0..<c) }
        let start = timed ? monotonicNanoseconds() : 0
        Gemm.multiplyBatch(winogradKernels!, v, bStride: c * tiles, n: tiles, into: mo, cStride: m * tiles, pool: pool,
                           scratch: scratch)
        let elapsed = timed ? monotonicNanoseconds() - start : 0
        if let pool { pool.parallelFor(m, output) } else { output(0..<m) }
        epilogue(out, rows: tile * tileRows.lowerBound ..< min(oh, tile * tileRows.upperBound), pool: pool)
        return elapsed
    }

    /// im2col + GEMM + epilogue for output rows `rows` (at most `blockRows`). With a pool the
    /// work is spread over its threads; without, it runs on the calling thread. Returns GEMM
    /// nanoseconds.
    private func block(_ src: UnsafePointer<Float>, _ out: UnsafeMutablePointer<Float>, rows: Range<Int>,
                       workspace: UnsafeMutablePointer<Float>, pool: WorkerPool?, scratch: GemmScratch,
                       timed: Bool) -> UInt64 {
        let (h, w, k, s, p, oh, ow) = (inputShape.h, inputShape.w, size, stride, pad, outputShape.h, outputShape.w)
        if let pool {
            pool.parallelFor(columns) { r in
                im2col(src, height: h, width: w, kernel: k, stride: s, pad: p, outWidth: ow,
                       outRows: rows, rows: r, into: workspace)
            }
        } else {
            im2col(src, height: h, width: w, kernel: k, stride: s, pad: p, outWidth: ow,
                   outRows: rows, rows: 0..<columns, into: workspace)
        }
        let start = timed ? monotonicNanoseconds() : 0
        let n = rows.count * ow
        Gemm.multiply(weights!, workspace, n: n, ldb: n, into: out + rows.lowerBound * ow, ldc: oh * ow, pool: pool,
                      scratch: scratch)
        let elapsed = timed ? monotonicNanoseconds() - start : 0
        epilogue(out, rows: rows, pool: pool)
        return elapsed
    }

    /// Bias + activation over output rows `rows` of every channel, unless a following max pool
    /// applies them to its (4x smaller) output instead: both are monotonic, so
    /// max(act(x + b)) == act(max(x) + b) exactly.
    private func epilogue(_ output: UnsafeMutablePointer<Float>, rows: Range<Int>, pool: WorkerPool?) {
        if epilogueDeferred { return }
        let ow = outputShape.w, plane = outputShape.h * ow
        let (out, bias, act) = (output + rows.lowerBound * ow, biases!, activation)
        let count = rows.count * ow
        if let pool {
            pool.parallelFor(filters) { f in
                biasActivate(out, bias: bias, channels: f, spatial: count, channelStride: plane, activation: act, exp: exp)
            }
        } else {
            biasActivate(out, bias: bias, channels: 0..<filters, spatial: count, channelStride: plane, activation: act, exp: exp)
        }
    }

    // MARK: Benchmark support

    /// The GEMM calls of a forward pass alone, on whatever `columns` holds (for the benchmark's
    /// "GEMM alone" figure): one full-size call per layer, threaded as a forward would thread it.
    func gemmAlone(columns: UnsafeMutablePointer<Float>, context: ForwardContext) -> Bool {
        guard !absorbsPool else { return false }  // the direct kernel: no GEMM
        let n = outputShape.h * outputShape.w
        let out = context.buffer(index)
        if let u = winogradKernels {
            let tiles = tilesHigh * tilesWide, c = inputShape.c
            Gemm.multiplyBatch(u, columns, bStride: c * tiles, n: tiles, into: columns + positions * c * tiles,
                               cStride: filters * tiles, pool: context.pool, scratch: context.gemmScratch)
            return true
        }
        let b = needsIm2col ? UnsafePointer(columns) : UnsafePointer(input(context))
        Gemm.multiply(weights!, b, n: n, ldb: n, into: out, ldc: n, pool: context.pool, scratch: context.gemmScratch)
        return true
    }

    /// Scratch floats `gemmAlone` needs.
    var gemmAloneScratch: Int {
        let n = outputShape.h * outputShape.w
        let im2colSize = needsIm2col ? columns * n : 0
        return max(im2colSize, positions * (inputShape.c + filters) * tilesHigh * tilesWide)
    }
}
