// The engine's INT8 products: a convolution's weights quantized per filter (symmetric s8), in the
// grouped order of the INT8 layout, packed at load for the level's INT8 kernels, with what turns
// their int32 sums back into floats (the input's zero point times each filter's weight sum, and
// the input's scale times the filter's); shared out to a session's threads as FP32 products are.
import YOLOCore
import YOLOKernels

/// Raw bytes of a model's parameters, shareable between threads (never written after load).
struct RawParameterPointer: @unchecked Sendable {
    let base: UnsafeRawPointer
}

/// A convolution's weights prepared for INT8 products with an input quantized as `input`.
struct Int8Weights: Sendable {
    /// Filters, and the depth of the product in the grouped order (groups x k x k x 4).
    let rows: Int
    let columns: Int
    let input: Int8Quantization
    let kernels: Int8Functions
    private let packedA: RawParameterPointer
    private let compensation: RawParameterPointer
    private let scales: ParameterPointer

    var packed: UnsafeRawPointer { packedA.base }
    /// Per filter: zero point x the sum of its quantized weights.
    var comp: UnsafePointer<Int32> { compensation.base.assumingMemoryBound(to: Int32.self) }
    /// Per filter: input scale x weight scale.
    var scale: UnsafePointer<Float> { scales.base }

    /// Filters quantized and packed at a time: the s8 copy of a band, not of the whole layer,
    /// exists while packing (yolov3-tiny's layer 12: 64 KiB of 4.5 MiB).
    static let bandBytes = 64 << 10

    /// Quantizes and packs the folded weights of a convolution (filters x channels x k x k), their
    /// columns in the grouped order, or with `tapOrder` in `Int8TapConv`'s.
    init(_ weights: UnsafePointer<Float>, filters: Int, channels: Int, kernel k: Int, input: Int8Quantization,
         kernels: Int8Functions, storage: ModelStorage, tapOrder: Bool = false) {
        let columns = int8ChannelGroups(channels) * k * k * 4
        (rows, self.columns, self.input, self.kernels) = (filters, columns, input, kernels)
        let band = min(filters, max(1, Int8Weights.bandBytes / columns / kernels.mr) * kernels.mr)
        // (Tap order: `TapConv.Layout.depth` columns packed, of 3x3 weights.)
        let layout = TapConv.Layout(groups: int8ChannelGroups(channels)), depth = tapOrder ? layout.depth : columns
        precondition(!tapOrder || k == 3, "Int8Weights: tap order is for 3x3 weights")
        let q = UnsafeMutablePointer<Int8>.allocate(capacity: band * columns)
        let taps = UnsafeMutablePointer<Int8>.allocate(capacity: tapOrder ? band * depth : 0)
        let sums = UnsafeMutablePointer<Int32>.allocate(capacity: filters)
        defer { q.deallocate(); taps.deallocate(); sums.deallocate() }
        let scale = storage.allocate(filters)
        let packed = storage.allocateBytes(kernels.packedASize(m: filters, k: depth))
        for f0 in stride(from: 0, to: filters, by: band) {
            let f1 = min(filters, f0 + band)
            quantizeWeights(weights + f0 * channels * k * k, filters: f1 - f0, channels: channels, kernel: k, into: q,
                            scales: scale + f0, sums: sums + f0)
            if tapOrder { Int8TapConv.tapOrder(q, rows: f1 - f0, layout: layout, into: taps) }
            kernels.packA(tapOrder ? taps : q, lda: depth, m: filters, k: depth, rows: f0..<f1, into: packed)
        }
        let comp = storage.allocateBytes(4 * filters).bindMemory(to: Int32.self, capacity: filters)
        precondition(input.levels == 255 || kernels.tenBitGemm != nil, "Int8Weights: a 10-bit input at the \(kernels.dot) level")
        precondition(input.levels <= 1023, "Int8Weights: a 12-bit input (the pair 1x1 form's)")
        for f in 0..<filters {
            // (A 10-bit input's two passes each fall short of the dot's shift: Int8TenBit.swift.)
            comp[f] = input.levels == 255 ? input.zeroPoint &* sums[f]
                : tenBitComp(zeroPoint: input.zeroPoint, activationShift: kernels.activationShift, weightSum: sums[f])
            scale[f] *= input.scale
        }
        packedA = RawParameterPointer(base: packed)
        compensation = RawParameterPointer(base: UnsafeRawPointer(comp))
        scales = ParameterPointer(base: scale)
    }

    /// Whether the input is 10-bit: B comes as two matrices (`multiply(hi:lo:...)`).
    var tenBit: Bool { input.levels != 255 }

    /// The same with a 10-bit input's two column matrices, hi and lo (Int8TenBit.swift).
    func multiply(hi: UnsafePointer<UInt32>, lo: UnsafePointer<UInt32>, n: Int, ldb: Int, into c: UnsafeMutablePointer<Float>,
                  ldc: Int, pool: WorkerPool?, scratch: GemmScratch) {
        Gemm.split(m: rows, n: n, rowPanel: kernels.mr, columnPanel: kernels.nr, pool: pool) { rows, cols, part in
            kernels.tenBitGemm(m: self.rows, n: cols.count, k: columns, packedA: packed, hi: hi + cols.lowerBound,
                               lo: lo + cols.lowerBound, ldb: ldb, c: c + cols.lowerBound, ldc: ldc, comp: comp, scale: scale,
                               scratch: UnsafeMutableRawPointer(scratch.part(part)), rows: rows)
        }
    }

    /// The same for a 3x3 stride-1 convolution's column matrix of padded planes, its n columns
    /// the output pixels (Int8PlaneB.swift), shared out as `Gemm.split` says.
    func multiply(planes: UnsafePointer<UInt32>, geometry: Int8PlaneGeometry, n: Int, into c: UnsafeMutablePointer<Float>,
                  ldc: Int, pool: WorkerPool?, scratch: GemmScratch) {
        Gemm.split(m: rows, n: n, rowPanel: kernels.mr, columnPanel: kernels.nr, pool: pool) { rows, cols, part in
            kernels.gemm(m: self.rows, n: cols.count, k: columns, packedA: packed, planes: planes, geometry: geometry,
                         firstColumn: cols.lowerBound, c: c + cols.lowerBound, ldc: ldc, comp: comp, scale: scale,
                         scratch: UnsafeMutableRawPointer(scratch.part(part)), rows: rows)
        }
    }

    /// C (rows x n, row stride ldc) = the dequantized product with grouped B (columns / 4 rows of
    /// n UInt32s, row stride ldb), shared out as `Gemm.split` says (without a pool, on the calling
    /// thread with `scratch.part(0)`).
    func multiply(_ b: UnsafePointer<UInt32>, n: Int, ldb: Int, into c: UnsafeMutablePointer<Float>, ldc: Int,
                  pool: WorkerPool?, scratch: GemmScratch) {
        Gemm.split(m: rows, n: n, rowPanel: kernels.mr, columnPanel: kernels.nr, pool: pool) { rows, cols, part in
            kernels.gemm(m: self.rows, n: cols.count, k: columns, packedA: packed, b: b + cols.lowerBound, ldb: ldb,
                         c: c + cols.lowerBound, ldc: ldc, comp: comp, scale: scale,
                         scratch: UnsafeMutableRawPointer(scratch.part(part)), rows: rows)
        }
    }
}
