// Convolution in INT8 (`int8`: INT8 im2col): the input is quantized once (u8, per tensor, with the
// calibrated scale and zero point) into planes of 4 channels per UInt32, the column matrix is
// im2col of those planes (a 1x1 stride-1 convolution needs none: the planes are its columns), and
// the INT8 GEMM (int32 sums, exact at every kernel level) writes float outputs, dequantized with
// each filter's scale; bias + activation follow as for FP32 outputs (or in the max pool after
// it), so the layers around it do not know. Blocks of output rows as Im2colGemm's.
// A 10-bit input (the table's `a10`, at a level with `Int8Functions.tenBitGemm`) is quantized into
// two sets of planes, hi and lo, each with its own column matrix, and multiplied in two passes
// (Int8TenBit.swift): the exact sums of the 10-bit input.
// At a level with tap products (`Int8Functions.taps`: amx), a 3x3 stride-1 layer runs them
// instead, from padded planes with no column matrix (TapConv.swift): the same sums; so does
// `direct+pool-int8` there (`pooled`), the max pool in their store. At the other levels an 8-bit
// 3x3 stride-1 layer packs the GEMM's B from padded planes (`planeGeometry`, Int8PlaneB.swift):
// im2col's sums, with no column matrix.
import YOLOCore
import YOLOKernels

final class Int8Conv: ConvKernel {
    /// `int8`, or with `pooled` (tap products only) `direct+pool-int8`.
    let algorithm: ConvAlgorithm
    let conv: ConvolutionalLayer
    let weights: Int8Weights
    let storage: ModelStorage
    /// Output rows per block of columns: about `blockWords` UInt32s, at least 512 pixels wide.
    let blockRows: Int
    static let blockWords = 64 * 1024
    /// The level's tap products where this layer takes them (then its weights are in tap order).
    let taps: Int8TapConv?
    /// Where B is packed from padded planes instead of a column matrix (8-bit 3x3 stride-1 layers
    /// at a level with the plane GEMM and no tap products).
    let planeGeometry: Int8PlaneGeometry?

    /// With `pooled`, the 2x2 stride-2 max pool after the layer too (`direct+pool-int8`), from tap
    /// products: the level must have them.
    init(_ conv: ConvolutionalLayer, weights: UnsafePointer<Float>, input: Int8Quantization, kernels: Int8Functions,
         pooled: Bool = false) {
        self.conv = conv
        let storage = ModelStorage()
        self.storage = storage
        taps = conv.is3x3Same ? kernels.taps : nil
        precondition(!pooled || taps != nil, "Int8Conv: a pooled layer without tap products")
        algorithm = ConvAlgorithm(pooled ? .directPool : .im2col, .int8)
        self.weights = Int8Weights(weights, filters: conv.filters, channels: conv.inputShape.c, kernel: conv.size,
                                   input: input, kernels: kernels, storage: storage, tapOrder: taps != nil)
        planeGeometry = taps == nil && conv.is3x3Same && !self.weights.tenBit && kernels.planeGemm != nil
            ? Int8PlaneGeometry(width: conv.inputShape.w, planeStride: TapConv.planeStride(height: conv.inputShape.h,
                                                                                          width: conv.inputShape.w))
            : nil
        let w = conv.outputShape.w, rows = self.weights.columns / 4
        blockRows = conv.isPointwise ? conv.outputShape.h
            : max(1, min(conv.outputShape.h, max(Int8Conv.blockWords / max(1, rows * w), (512 + w - 1) / w)))
    }

    var groups: Int { int8ChannelGroups(conv.inputShape.c) }
    /// Sets of planes and of columns: 2 for a 10-bit input (hi, lo), else 1.
    var passes: Int { weights.tenBit ? 2 : 1 }
    /// UInt32s of one set of quantized input planes.
    var planeSetWords: Int { (groups * conv.inputShape.h * conv.inputShape.w + 15) & ~15 }
    /// UInt32s of the quantized input planes (shared by the threads: in thread 0's scratch).
    var planeWords: Int { passes * planeSetWords }
    var blockCount: Int { (conv.outputShape.h + blockRows - 1) / blockRows }
    /// UInt32s of one column matrix.
    var columnSetWords: Int {
        taps != nil ? paddedStride * tapLayout.planes : planeGeometry != nil ? paddedStride * groups
            : conv.isPointwise ? 0 : weights.columns / 4 * blockRows * conv.outputShape.w
    }
    var tapLayout: TapConv.Layout { TapConv.Layout(groups: groups) }
    /// Words a padded plane takes (with `taps`).
    var paddedStride: Int { TapConv.planeStride(height: conv.inputShape.h, width: conv.inputShape.w) }
    var columnWords: Int { passes * columnSetWords }
    var workspaceFloats: Int { planeWords + columnWords }
    var parameterBytes: Int { 4 * storage.floats }

    func run(_ src: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>, epilogue: Epilogue?,
             context: StepContext) -> UInt64 {
        let pool = context.pool, (c, h, w) = (conv.inputShape.c, conv.inputShape.h, conv.inputShape.w)
        let planes = UnsafeMutableRawPointer(context.workspace).bindMemory(to: UInt32.self, capacity: planeWords)
        let (kernels, input) = (weights.kernels, weights.input)
        let lowPlanes = planes + planeSetWords
        if weights.tenBit {
            pool.parallelFor(groups) { g in
                kernels.quantizeTenBit(src, channels: c, plane: h * w, groups: g, input, hi: planes, lo: lowPlanes)
            }
        } else {
            pool.parallelFor(groups) { g in
                kernels.quantize(src, channels: c, plane: h * w, groups: g, input, into: planes)
            }
        }
        let (oh, ow) = (conv.outputShape.h, conv.outputShape.w)
        if let taps {
            // The padded planes where the im2col path's columns go (hi, then lo), the zero point round them.
            let padded = planes + planeWords, stride = paddedStride, halves = tenBitPadding(zeroPoint: input.zeroPoint)
            let eightBit = UInt32(truncatingIfNeeded: input.zeroPoint) &* 0x0101_0101
            let (groups, setWords, copies) = (groups, columnSetWords, tapLayout.shifted ? 3 : 1)
            pool.parallelFor(passes * copies * groups) { r in
                for i in r {
                    let (set, kx, g) = (i / (copies * groups), i / groups % copies, i % groups)
                    TapConv.pad(planes + set * planeSetWords, groups: g..<g + 1, height: h, width: w, planeStride: stride,
                                padding: !weights.tenBit ? eightBit : set == 0 ? halves.hi : halves.lo, shift: kx,
                                into: padded + set * setWords + kx * groups * stride)
                }
            }
            let geometry = TapConv.Geometry(filters: conv.filters, groups: groups, height: h, width: w, planeStride: stride)
            let (packed, comp, scale) = (weights.packed, weights.comp, weights.scale)
            let lo = weights.tenBit ? UnsafePointer(padded + setWords) : nil, pooled = algorithm.fusesPool
            let elapsed = timed(context.timesGemm) {
                pool.parallelFor(pooled ? TapConv.pooledItems(geometry) : TapConv.items(geometry)) { items in
                    (pooled ? taps.runPooled : taps.run)(geometry, packed, padded, lo, out, comp, scale, items)
                }
            }
            // (Pooled: bias + activation after the max, exact for the monotonic ones the planner allows.)
            let shape = pooled ? Shape(c: conv.filters, h: oh / 2, w: ow / 2) : conv.outputShape
            applyEpilogue(epilogue, out, shape: shape, rows: 0..<shape.h, pool: pool)
            return elapsed
        }
        if let geometry = planeGeometry {
            let padded = planes + planeWords, stride = paddedStride, padding = UInt32(truncatingIfNeeded: input.zeroPoint) &* 0x0101_0101
            pool.parallelFor(groups) { g in
                TapConv.pad(planes, groups: g, height: h, width: w, planeStride: stride, padding: padding, into: padded)
            }
            let n = oh * ow
            let elapsed = timed(context.timesGemm) {
                weights.multiply(planes: padded, geometry: geometry, n: n, into: out, ldc: n, pool: pool, scratch: context.gemmScratch)
            }
            applyEpilogue(epilogue, out, shape: conv.outputShape, rows: 0..<oh, pool: pool)
            return elapsed
        }
        if conv.isPointwise {
            let n = oh * ow
            let elapsed = timed(context.timesGemm) {
                if weights.tenBit {
                    weights.multiply(hi: planes, lo: lowPlanes, n: n, ldb: n, into: out, ldc: n, pool: pool,
                                     scratch: context.gemmScratch)
                } else {
                    weights.multiply(planes, n: n, ldb: n, into: out, ldc: n, pool: pool, scratch: context.gemmScratch)
                }
            }
            applyEpilogue(epilogue, out, shape: conv.outputShape, rows: 0..<oh, pool: pool)
            return elapsed
        }
        // Each block's columns follow the quantized planes in its thread's workspace.
        let planeWords = planeWords, columnWords = columnWords
        return runInBlocks(total: oh, size: blockRows, count: blockCount, context: context) { rows, place in
            let columns = UnsafeMutableRawPointer(place.workspace + planeWords).bindMemory(to: UInt32.self, capacity: columnWords)
            return block(planes, out, rows: rows, epilogue: epilogue, columns: columns, place)
        }
    }

    /// im2col of the quantized planes + GEMM + epilogue for output rows `rows` (at most
    /// `blockRows`); spread over the pool's threads, or on the calling thread without one.
    private func block(_ planes: UnsafePointer<UInt32>, _ out: UnsafeMutablePointer<Float>, rows: Range<Int>,
                       epilogue: Epilogue?, columns: UnsafeMutablePointer<UInt32>, _ place: BlockPlace) -> UInt64 {
        let pool = place.pool
        let (h, w, k, s, p) = (conv.inputShape.h, conv.inputShape.w, conv.size, conv.stride, conv.pad)
        let (oh, ow) = (conv.outputShape.h, conv.outputShape.w)
        let count = weights.columns / 4, zero = weights.input.zeroPoint
        let (planeSet, columnSet, passes) = (planeSetWords, columnSetWords, passes)
        // (A 10-bit input: the hi planes' columns, then the lo planes', each padded with its half.)
        let halves = tenBitPadding(zeroPoint: zero)
        let paddings = weights.tenBit ? (halves.hi, halves.lo) : (UInt32(truncatingIfNeeded: zero) &* 0x0101_0101, 0)
        let fill = { (r: Range<Int>) in
            for i in 0..<passes {
                im2col(planes + i * planeSet, height: h, width: w, kernel: k, stride: s, pad: p, outWidth: ow, outRows: rows,
                       rows: r, padding: i == 0 ? paddings.0 : paddings.1, into: columns + i * columnSet)
            }
        }
        if let pool { pool.parallelFor(count, fill) } else { fill(0..<count) }
        let n = rows.count * ow
        let elapsed = timed(place.timed) {
            if weights.tenBit {
                weights.multiply(hi: columns, lo: columns + columnSet, n: n, ldb: n, into: out + rows.lowerBound * ow,
                                 ldc: oh * ow, pool: pool, scratch: place.scratch)
            } else {
                weights.multiply(columns, n: n, ldb: n, into: out + rows.lowerBound * ow, ldc: oh * ow, pool: pool,
                                 scratch: place.scratch)
            }
        }
        applyEpilogue(epilogue, out, shape: conv.outputShape, rows: rows, pool: pool)
        return elapsed
    }
}
