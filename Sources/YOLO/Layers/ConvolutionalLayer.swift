import YOLOKernels
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import COpenBLAS

/// [convolutional]: convolution (groups = 1) + batch norm folded in at load + activation,
/// computed as im2col + sgemm: output (filters x outH*outW) = weights (filters x c*k*k) · columns.
final class ConvolutionalLayer: Layer {
    let kind = LayerKind.convolutional
    let inputShape: Shape
    let outputShape: Shape
    let filters: Int, size: Int, stride: Int, pad: Int
    let batchNormalize: Bool
    let activation: Activation
    var output: UnsafeMutablePointer<Float>!
    let input: UnsafePointer<Float>
    /// Folded weights (filters x c*size*size, row-major) and biases; set by `loadParameters`.
    private(set) var weights: UnsafePointer<Float>!
    private(set) var biases: UnsafePointer<Float>!
    /// Set by the network when the only consumer is a max pool that applies bias + activation.
    var epilogueDeferred = false

    init(section: DarknetConfig.Section, input: UnsafePointer<Float>, inputShape: Shape) throws {
        self.input = input
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
        let outH = (inputShape.h + 2 * pad - size) / stride + 1
        let outW = (inputShape.w + 2 * pad - size) / stride + 1
        guard inputShape.h + 2 * pad >= size, inputShape.w + 2 * pad >= size else {
            throw section.error("size=\(size) is larger than the padded input \(inputShape)")
        }
        outputShape = Shape(c: filters, h: outH, w: outW)
    }

    var columns: Int { inputShape.c * size * size }
    var needsIm2col: Bool { !(size == 1 && stride == 1 && pad == 0) }
    var flops: Int { 2 * filters * columns * outputShape.h * outputShape.w }

    /// Output rows per block: im2col and sgemm go block by block so the column block stays in
    /// the core's L2 cache instead of making a round trip through memory.
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
        let winogradBlock = supportsWinograd ? 16 * (inputShape.c + filters) * winogradBlockTileRows * tilesWide : 0
        return max(im2colBlock, winogradBlock)
    }

    // MARK: Winograd F(2x2, 3x3)

    /// 3x3 stride-1 pad-1 convolutions with enough input channels for the 16 small GEMMs to pay
    /// (measured: with 16 channels, yolov3-tiny's layer 2 is faster with im2col).
    var supportsWinograd: Bool {
        size == 3 && stride == 1 && pad == 1 && inputShape.c >= ConvolutionalLayer.winogradMinChannels
    }
    static let winogradMinChannels = 32
    /// The transformed kernels (16 matrices of filters x channels), set by the network; the
    /// layer uses Winograd when they are set.
    var winogradKernels: UnsafeMutablePointer<Float>?
    var tilesHigh: Int { (outputShape.h + 1) / 2 }
    var tilesWide: Int { (outputShape.w + 1) / 2 }
    /// Tile rows per block: about 256K floats of transforms, at least 128 tiles per GEMM.
    var winogradBlockTileRows: Int {
        let perRow = 16 * (inputShape.c + filters) * tilesWide
        let cached = 256 * 1024 / max(1, perRow)
        let wide = (128 + tilesWide - 1) / tilesWide
        return max(1, min(tilesHigh, max(cached, wide)))
    }
    var winogradBlockCount: Int { (tilesHigh + winogradBlockTileRows - 1) / winogradBlockTileRows }

    /// Computes this layer's Winograd kernels into `u` (16 * filters * channels floats).
    func makeWinogradKernels(into u: UnsafeMutablePointer<Float>, pool: WorkerPool) {
        let (w, m, c) = (weights!, filters, inputShape.c)
        pool.parallelFor(m) { range in winogradTransformKernels(w, filterCount: m, channels: c, filters: range, into: u) }
    }

    /// Floats this layer reads from a weights file.
    var parameterCount: Int { filters * (batchNormalize ? 4 : 1) + filters * columns }

    /// Takes this layer's parameters from `params` (laid out as in a Darknet weights file:
    /// biases; scales, rolling mean, rolling variance when batch-normalized; weights) and folds
    /// batch norm into weights and biases in place, with Darknet's epsilon outside the root.
    func loadParameters(_ params: UnsafeMutablePointer<Float>) {
        let bias = params
        let weights = params + filters * (batchNormalize ? 4 : 1)
        if batchNormalize {
            let scales = params + filters, mean = params + 2 * filters, variance = params + 3 * filters
            for f in 0..<filters {
                let factor = scales[f] / (variance[f].squareRoot() + 0.000001)
                let row = weights + f * columns
                for i in 0..<columns { row[i] *= factor }
                bias[f] = bias[f] - mean[f] * factor
            }
        }
        self.weights = UnsafePointer(weights)
        self.biases = UnsafePointer(bias)
    }

    func forward(_ context: inout ForwardContext) {
        let n = outputShape.h * outputShape.w
        let timed = context.gemmNanoseconds != nil
        let pool = context.pool
        let split = context.splitGemm && pool.threadCount > 1
        var gemmTime: UInt64 = 0
        if let u = winogradKernels {
            gemmTime = forwardWinograd(u, context: context, split: split, timed: timed)
        } else if !needsIm2col {
            // 1x1 stride 1: the input is already the column matrix.
            let start = timed ? monotonicNanoseconds() : 0
            gemm(columns: input, count: n, stride: n, into: output, pool: split ? pool : nil)
            gemmTime = timed ? monotonicNanoseconds() - start : 0
            epilogue(rows: 0..<outputShape.h, pool: pool)
        } else if split && blockCount >= pool.threadCount {
            // Each thread takes whole blocks: im2col, sgemm and epilogue of a block on one core.
            // The block count is rounded up to a multiple of the threads and the rows spread
            // evenly, so no thread waits for another's larger block.
            let parts = pool.threadCount
            let blocks = (blockCount + parts - 1) / parts * parts
            let per = workspaceCount, ws = context.workspace, oh = outputShape.h
            gemmTime = withUnsafeTemporaryAllocation(of: UInt64.self, capacity: parts) { times in
                times.initialize(repeating: 0)
                pool.run { part in
                    for b in Swift.stride(from: part, to: blocks, by: parts) {
                        times[part] &+= self.block(rows: oh * b / blocks ..< oh * (b + 1) / blocks,
                                                   workspace: ws + part * per, pool: nil, timed: timed)
                    }
                }
                return times[0]
            }
        } else {
            // One block at a time, each spread over all threads (im2col rows, then the GEMM by
            // our split or by OpenBLAS's threads).
            for b in 0..<blockCount {
                let rows = b * blockRows ..< min(outputShape.h, (b + 1) * blockRows)
                gemmTime &+= block(rows: rows, workspace: context.workspace, pool: pool, timed: timed, splitGemm: split)
            }
        }
        if let t = context.gemmNanoseconds { context.gemmNanoseconds = t + gemmTime }
    }

    /// The Winograd path: blocks of tile rows, each input transform -> 16 GEMMs -> output
    /// transform -> epilogue, threaded like the im2col path.
    private func forwardWinograd(_ u: UnsafeMutablePointer<Float>, context: ForwardContext, split: Bool,
                                 timed: Bool) -> UInt64 {
        let pool = context.pool
        if split && winogradBlockCount >= pool.threadCount {
            let parts = pool.threadCount
            let blocks = (winogradBlockCount + parts - 1) / parts * parts
            let per = workspaceCount, ws = context.workspace, th = tilesHigh
            return withUnsafeTemporaryAllocation(of: UInt64.self, capacity: parts) { times in
                times.initialize(repeating: 0)
                pool.run { part in
                    for b in Swift.stride(from: part, to: blocks, by: parts) {
                        times[part] &+= self.winogradBlock(u, tileRows: th * b / blocks ..< th * (b + 1) / blocks,
                                                           workspace: ws + part * per, pool: nil, timed: timed)
                    }
                }
                return times[0]
            }
        }
        var total: UInt64 = 0
        for b in 0..<winogradBlockCount {
            let rows = b * winogradBlockTileRows ..< min(tilesHigh, (b + 1) * winogradBlockTileRows)
            total &+= winogradBlock(u, tileRows: rows, workspace: context.workspace, pool: pool, timed: timed,
                                    splitGemm: split)
        }
        return total
    }

    private func winogradBlock(_ u: UnsafeMutablePointer<Float>, tileRows: Range<Int>, workspace: UnsafeMutablePointer<Float>,
                               pool: WorkerPool?, timed: Bool, splitGemm: Bool = false) -> UInt64 {
        let (c, m, h, w, tw) = (inputShape.c, filters, inputShape.h, inputShape.w, tilesWide)
        let (oh, ow) = (outputShape.h, outputShape.w)
        let tiles = tileRows.count * tw
        let v = workspace, mo = workspace + 16 * c * tiles
        let src = input, out = output!
        if let pool {
            pool.parallelFor(c) { ch in
                winogradInput(src, height: h, width: w, channelCount: c, channels: ch, tileRows: tileRows, tilesWide: tw, into: v)
            }
        } else {
            winogradInput(src, height: h, width: w, channelCount: c, channels: 0..<c, tileRows: tileRows, tilesWide: tw, into: v)
        }
        let start = timed ? monotonicNanoseconds() : 0
        winogradProducts(u, v, tiles: tiles, into: mo, pool: splitGemm ? pool : nil)
        let elapsed = timed ? monotonicNanoseconds() - start : 0
        if let pool {
            pool.parallelFor(m) { fs in
                winogradOutput(mo, filterCount: m, filters: fs, tileRows: tileRows, tilesWide: tw, outHeight: oh,
                               outWidth: ow, into: out)
            }
        } else {
            winogradOutput(mo, filterCount: m, filters: 0..<m, tileRows: tileRows, tilesWide: tw, outHeight: oh,
                           outWidth: ow, into: out)
        }
        epilogue(rows: 2 * tileRows.lowerBound ..< min(oh, 2 * tileRows.upperBound), pool: pool)
        return elapsed
    }

    /// M[xi] (filters x tiles) = U[xi] (filters x channels) · V[xi] (channels x tiles) for the 16
    /// positions xi; with a pool, its threads share out the 16 products.
    private func winogradProducts(_ u: UnsafePointer<Float>, _ v: UnsafePointer<Float>, tiles: Int,
                                  into mo: UnsafeMutablePointer<Float>, pool: WorkerPool?) {
        let (m, c) = (filters, inputShape.c)
        let product = { (xi: Int) in
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Int32(m), Int32(tiles), Int32(c),
                        1, u + xi * m * c, Int32(c), v + xi * c * tiles, Int32(tiles), 0, mo + xi * m * tiles, Int32(tiles))
        }
        if let pool {
            pool.parallelFor(16) { xis in for xi in xis { product(xi) } }
        } else {
            for xi in 0..<16 { product(xi) }
        }
    }

    /// im2col + sgemm + epilogue for output rows `rows` (at most `blockRows`). With a pool the
    /// work is spread over its threads; without, it runs on the calling thread. Returns sgemm
    /// nanoseconds.
    private func block(rows: Range<Int>, workspace: UnsafeMutablePointer<Float>, pool: WorkerPool?, timed: Bool,
                       splitGemm: Bool = false) -> UInt64 {
        let (h, w, k, s, p, oh, ow) = (inputShape.h, inputShape.w, size, stride, pad, outputShape.h, outputShape.w)
        let src = input
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
        gemm(columns: workspace, count: rows.count * ow, stride: oh * ow, into: output + rows.lowerBound * ow,
             pool: splitGemm ? pool : nil)
        let elapsed = timed ? monotonicNanoseconds() - start : 0
        epilogue(rows: rows, pool: pool)
        return elapsed
    }

    /// output[:, 0..<count] (row stride `stride`) = weights · columns (filters x count, packed).
    /// With a pool, the GEMM is split over its threads: by filters when there are at least as
    /// many filters as pixels (the 13x13 layers), else by pixels in multiples of 16.
    private func gemm(columns b: UnsafePointer<Float>, count n: Int, stride ldc: Int,
                      into out: UnsafeMutablePointer<Float>, pool: WorkerPool?) {
        let (w, m, k) = (weights!, filters, columns)
        guard let pool, pool.threadCount > 1 else {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Int32(m), Int32(n), Int32(k),
                        1, w, Int32(k), b, Int32(n), 0, out, Int32(ldc))
            return
        }
        if m >= n {
            pool.parallelFor(m) { rows in
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Int32(rows.count), Int32(n), Int32(k),
                            1, w + rows.lowerBound * k, Int32(k), b, Int32(n), 0, out + rows.lowerBound * ldc, Int32(ldc))
            }
        } else {
            let parts = pool.threadCount
            let chunk = (n + parts * 16 - 1) / (parts * 16) * 16
            pool.run { part in
                let lo = min(n, part * chunk), hi = min(n, lo + chunk)
                guard hi > lo else { return }
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Int32(m), Int32(hi - lo), Int32(k),
                            1, w, Int32(k), b + lo, Int32(n), 0, out + lo, Int32(ldc))
            }
        }
    }

    /// Bias + activation over output rows `rows` of every channel, unless a following max pool
    /// applies them to its (4x smaller) output instead: both are monotonic, so
    /// max(act(x + b)) == act(max(x) + b) exactly.
    private func epilogue(rows: Range<Int>, pool: WorkerPool?) {
        if epilogueDeferred { return }
        let ow = outputShape.w, plane = outputShape.h * ow
        let (out, bias, act) = (output! + rows.lowerBound * ow, biases!, activation)
        let count = rows.count * ow
        if let pool {
            pool.parallelFor(filters) { f in
                biasActivate(out, bias: bias, channels: f, spatial: count, channelStride: plane, activation: act, exp: exp)
            }
        } else {
            biasActivate(out, bias: bias, channels: 0..<filters, spatial: count, channelStride: plane, activation: act, exp: exp)
        }
    }

    /// The GEMM calls of a forward pass alone, on whatever `columns` holds (for the benchmark's
    /// "sgemm alone" figure): one full-size call per layer, threaded as `pool` says.
    func gemmAlone(columns: UnsafeMutablePointer<Float>, pool: WorkerPool?) {
        let n = outputShape.h * outputShape.w
        if let u = winogradKernels {
            let tiles = tilesHigh * tilesWide
            winogradProducts(u, columns, tiles: tiles, into: columns + 16 * inputShape.c * tiles, pool: pool)
            return
        }
        gemm(columns: needsIm2col ? UnsafePointer(columns) : input, count: n, stride: n, into: output, pool: pool)
    }

    /// Scratch floats `gemmAlone` needs.
    var gemmAloneScratch: Int {
        let n = outputShape.h * outputShape.w
        let im2colSize = needsIm2col ? columns * n : 0
        return supportsWinograd ? max(im2colSize, 16 * (inputShape.c + filters) * tilesHigh * tilesWide) : im2colSize
    }
}
