// The INT8 part of a kernel set: references to one level's INT8 GEMM (Int8Gemm.swift) and grouped
// quantization (Quantize.swift), specialized in the level's target with its dot product, as
// `KernelSet.make` does for the FP32 kernels. Optional per level (`KernelSet.int8`); a level
// gains it with `.adding(int8: .make(...))` in its target.

/// One level's INT8 kernels.
public struct Int8Functions: Sendable {
    /// What computes the dot products ("vpdpbusd", "vpmaddwd", "portable"), for reports.
    public let dot: String
    /// Micro-kernel tile, lanes per vector, blocking (kc in groups of 4 steps of k).
    public let mr: Int, nr: Int, lanes: Int, kc: Int, nc: Int
    /// (m, k) -> bytes of packed A.
    public let packedASize: @Sendable (Int, Int) -> Int
    /// (a, lda, m, k, rows, packed): see `packA(_:lda:m:k:rows:into:)`.
    public let packA: @Sendable (UnsafePointer<Int8>, Int, Int, Int, Range<Int>, UnsafeMutableRawPointer) -> Void
    /// (m, n, k) -> bytes of per-thread scratch.
    public let scratchSize: @Sendable (Int, Int, Int) -> Int
    /// (m, n, k, packedA, b, ldb, c, ldc, comp, scale, scratch, rows)
    public let gemm: @Sendable (Int, Int, Int, UnsafeRawPointer, UnsafePointer<UInt32>, Int, UnsafeMutablePointer<Float>, Int,
                                UnsafePointer<Int32>, UnsafePointer<Float>, UnsafeMutableRawPointer, Range<Int>) -> Void
    /// The same product for a 3x3 stride-1 convolution, B packed from padded planes (Int8PlaneB.swift):
    /// (m, n, k, packedA, planes, geometry, firstColumn, c, ldc, comp, scale, scratch, rows); nil
    /// where a level replaced the GEMM (`replacingGemm`: its packed A is another's).
    public let planeGemm: (@Sendable (Int, Int, Int, UnsafeRawPointer, UnsafePointer<UInt32>, Int8PlaneGeometry, Int,
                                      UnsafeMutablePointer<Float>, Int, UnsafePointer<Int32>, UnsafePointer<Float>,
                                      UnsafeMutableRawPointer, Range<Int>) -> Void)?
    /// (src, channels, plane, groups, inverseScale, zeroPoint, dst)
    public let quantize: @Sendable (UnsafePointer<Float>, Int, Int, Range<Int>, Float, Int32, UnsafeMutablePointer<UInt32>) -> Void
    /// The 10-bit product in two passes (Int8TenBit.swift), where the dot keeps int32 sums, else nil:
    /// (m, n, k, packedA, hi, lo, ldb, c, ldc, comp, scale, scratch, rows).
    public let tenBitGemm: (@Sendable (Int, Int, Int, UnsafeRawPointer, UnsafePointer<UInt32>, UnsafePointer<UInt32>, Int,
                                       UnsafeMutablePointer<Float>, Int, UnsafePointer<Int32>, UnsafePointer<Float>,
                                       UnsafeMutableRawPointer, Range<Int>) -> Void)?
    /// (src, channels, plane, groups, inverseScale, zeroPoint, hi, lo): `Int8TenBit.quantize`.
    public let quantizeTenBit: @Sendable (UnsafePointer<Float>, Int, Int, Range<Int>, Float, Int32, UnsafeMutablePointer<UInt32>,
                                          UnsafeMutablePointer<UInt32>) -> Void
    /// The dot's `activationShift` (`tenBitComp` needs it).
    public let activationShift: Int32
    /// (src, channels, plane, pairs, quantization, dst): a 12-bit input as the pair GEMM's B
    /// (`Int16PointwiseQuantize`; the pair 1x1 form's).
    public let quantizePairs: @Sendable (UnsafePointer<Float>, Int, Int, Range<Int>, Int8Quantization, UnsafeMutablePointer<UInt32>) -> Void
    /// What the fixed table prefers `tenBitGemm` (INT8 im2col in two passes) to, for 10-bit inputs
    /// (`preferringTenBit(over:)` sets it): nothing (nil: the FP32 forms where no pair form is a
    /// candidate; two passes of an 8-bit dot no faster than FP32 lose to it at the avx2 and avx512
    /// levels), FP32 (VNNI, where two passes beat it), FP32 and INT8 F(2x2) but not the direct
    /// conv + pool (AMX: the tile product outruns the pair GEMM, not the direct form's fused pass),
    /// or the pair forms too (INT8 F(2x2) and the direct conv + pool: where the 8-bit dot is 4x
    /// the pair product or more, sdot against smlal).
    /// Figures: docs/performance.md, "Figures from code comments".
    public private(set) var tenBitPreferred: TenBitPreference? = nil

    public enum TenBitPreference: Sendable { case fp32, winograd, pairForms }

    /// Whether the fixed table prefers this pair GEMM (`Int8Functions` of `KernelSet.int16Pairs`)
    /// to FP32 for a 1x1 layer with a 12-bit input (`a12`, PairPointwiseConv): where its 16-bit
    /// multiply-add does twice FP32's products an instruction (vpmaddwd, vpdpwssd), not where
    /// it is smlal or portable code (`preferringPointwise()` sets it).
    public private(set) var pointwisePreferred = false

    /// The same kernels, the fixed table preferring them to FP32 for 12-bit 1x1 layers.
    public func preferringPointwise() -> Int8Functions {
        var copy = self
        copy.pointwisePreferred = true
        return copy
    }

    /// 3x3 stride-1 convolutions from padded planes with no column matrix (TapConv.swift), at
    /// a level that has them (`withTaps`); INT8 im2col runs them with the same sums.
    public private(set) var taps: Int8TapConv? = nil

    /// The same kernels with `taps`.
    public func withTaps(_ taps: Int8TapConv) -> Int8Functions {
        var copy = self
        copy.taps = taps
        return copy
    }

    /// The same kernels, the fixed table preferring the two-pass 10-bit product to `what`.
    public func preferringTenBit(over what: TenBitPreference) -> Int8Functions {
        precondition(tenBitGemm != nil, "Int8Functions: the \(dot) level has no 10-bit product to prefer")
        var copy = self
        copy.tenBitPreferred = what
        return copy
    }

    @usableFromInline
    init(dot: String, mr: Int, nr: Int, lanes: Int, kc: Int, nc: Int,
         packedASize: @escaping @Sendable (Int, Int) -> Int,
         packA: @escaping @Sendable (UnsafePointer<Int8>, Int, Int, Int, Range<Int>, UnsafeMutableRawPointer) -> Void,
         scratchSize: @escaping @Sendable (Int, Int, Int) -> Int,
         gemm: @escaping @Sendable (Int, Int, Int, UnsafeRawPointer, UnsafePointer<UInt32>, Int, UnsafeMutablePointer<Float>, Int,
                                    UnsafePointer<Int32>, UnsafePointer<Float>, UnsafeMutableRawPointer, Range<Int>) -> Void,
         planeGemm: (@Sendable (Int, Int, Int, UnsafeRawPointer, UnsafePointer<UInt32>, Int8PlaneGeometry, Int,
                                UnsafeMutablePointer<Float>, Int, UnsafePointer<Int32>, UnsafePointer<Float>,
                                UnsafeMutableRawPointer, Range<Int>) -> Void)?,
         quantize: @escaping @Sendable (UnsafePointer<Float>, Int, Int, Range<Int>, Float, Int32, UnsafeMutablePointer<UInt32>) -> Void,
         tenBitGemm: (@Sendable (Int, Int, Int, UnsafeRawPointer, UnsafePointer<UInt32>, UnsafePointer<UInt32>, Int,
                                 UnsafeMutablePointer<Float>, Int, UnsafePointer<Int32>, UnsafePointer<Float>,
                                 UnsafeMutableRawPointer, Range<Int>) -> Void)?,
         quantizeTenBit: @escaping @Sendable (UnsafePointer<Float>, Int, Int, Range<Int>, Float, Int32, UnsafeMutablePointer<UInt32>,
                                              UnsafeMutablePointer<UInt32>) -> Void,
         activationShift: Int32,
         quantizePairs: @escaping @Sendable (UnsafePointer<Float>, Int, Int, Range<Int>, Int8Quantization,
                                             UnsafeMutablePointer<UInt32>) -> Void) {
        (self.dot, self.mr, self.nr, self.lanes, self.kc, self.nc) = (dot, mr, nr, lanes, kc, nc)
        (self.packedASize, self.packA, self.scratchSize, self.gemm, self.quantize) = (packedASize, packA, scratchSize, gemm, quantize)
        self.planeGemm = planeGemm
        (self.tenBitGemm, self.quantizeTenBit, self.activationShift) = (tenBitGemm, quantizeTenBit, activationShift)
        self.quantizePairs = quantizePairs
    }

    /// The INT8 kernels of micro-kernel `K` (its dot product's level) with blocking kc groups x
    /// nc columns. @inlinable, so the calling target specializes them for its CPU.
    @inlinable
    public static func make<K: Int8MicroKernel>(dot: String, kernel _: K.Type, kc: Int, nc: Int) -> Int8Functions {
        let tenBit: @Sendable (Int, Int, Int, UnsafeRawPointer, UnsafePointer<UInt32>, UnsafePointer<UInt32>, Int,
                               UnsafeMutablePointer<Float>, Int, UnsafePointer<Int32>, UnsafePointer<Float>,
                               UnsafeMutableRawPointer, Range<Int>) -> Void = { m, n, k, a, hi, lo, ldb, c, ldc, comp, scale, scratch, rows in
            Int8TenBit<K>.gemm(m: m, n: n, k: k, packedA: a, hi: hi, lo: lo, ldb: ldb, c: c, ldc: ldc, comp: comp, scale: scale,
                               scratch: scratch, kc: kc, nc: nc, rows: rows)
        }
        return Int8Functions(
            dot: dot, mr: K.mr, nr: K.nr, lanes: K.Dot.Acc.scalarCount, kc: kc, nc: nc,
            packedASize: { Int8PackedGemm<K>.packedASize(m: $0, k: $1) },
            packA: { Int8PackedGemm<K>.packA($0, lda: $1, m: $2, k: $3, kc: kc, rows: $4, into: $5) },
            scratchSize: { Int8PackedGemm<K>.scratchSize(m: $0, n: $1, k: $2, kc: kc, nc: nc) },
            gemm: { m, n, k, a, b, ldb, c, ldc, comp, scale, scratch, rows in
                Int8PackedGemm<K>.gemm(m: m, n: n, k: k, packedA: a, b: b, ldb: ldb, c: c, ldc: ldc, comp: comp, scale: scale,
                                       scratch: scratch, kc: kc, nc: nc, rowStart: rows.lowerBound, rowEnd: rows.upperBound)
            },
            planeGemm: { m, n, k, a, planes, geometry, first, c, ldc, comp, scale, scratch, rows in
                Int8PackedGemm<K>.gemm(m: m, n: n, k: k, packedA: a, planes: planes, geometry: geometry, firstColumn: first, c: c,
                                       ldc: ldc, comp: comp, scale: scale, scratch: scratch, kc: kc, nc: nc,
                                       rowStart: rows.lowerBound, rowEnd: rows.upperBound)
            },
            quantize: { Int8Quantize<K.Dot>.channels($0, channels: $1, plane: $2, groups: $3, inverseScale: $4, zeroPoint: $5,
                                                      into: $6) },
            tenBitGemm: K.Dot.accumulatesFloats ? nil : tenBit,
            quantizeTenBit: { Int8TenBit<K>.quantize($0, channels: $1, plane: $2, groups: $3, inverseScale: $4, zeroPoint: $5,
                                                     hi: $6, lo: $7) },
            activationShift: K.Dot.activationShift,
            quantizePairs: { Int16PointwiseQuantize<K.Dot>.pairs($0, channels: $1, plane: $2, pairs: $3, quantization: $4, into: $5) })
    }
}

extension Int8Functions {
    @inline(__always) public func packedASize(m: Int, k: Int) -> Int { packedASize(m, k) }
    /// Packs s8 A (m x k, row stride lda >= k) into `packed` (`packedASize(m:k:)` bytes). With
    /// `rows`, only those (from a multiple of `mr` to one or to m), the first of them at `a`: the
    /// bands of one matrix packed one after the other give what one call for all rows gives.
    @inline(__always)
    public func packA(_ a: UnsafePointer<Int8>, lda: Int, m: Int, k: Int, rows: Range<Int>? = nil,
                      into packed: UnsafeMutableRawPointer) {
        let rows = rows ?? 0..<m
        precondition(rows.lowerBound >= 0 && rows.upperBound <= m && rows.lowerBound % mr == 0
                     && (rows.upperBound == m || rows.upperBound % mr == 0),
                     "int8 packA: rows must lie in 0..<m, from a multiple of mr to one or to m")
        packA(a, lda, m, k, rows, packed)
    }
    @inline(__always) public func scratchSize(m: Int, n: Int, k: Int) -> Int { scratchSize(m, n, k) }

    /// C[m x n] (row stride ldc >= n) = Float(A · B - comp[row]) * scale[row]: A packed by
    /// `packA`, B grouped (ceil(k / 4) rows of n UInt32s, row stride ldb >= n), `scratch` at least
    /// `scratchSize(m:n:k:)` bytes. With `rows`, only those rows of C (the lower bound a multiple
    /// of `mr`).
    @inline(__always)
    public func gemm(m: Int, n: Int, k: Int, packedA: UnsafeRawPointer, b: UnsafePointer<UInt32>, ldb: Int,
                     c: UnsafeMutablePointer<Float>, ldc: Int, comp: UnsafePointer<Int32>, scale: UnsafePointer<Float>,
                     scratch: UnsafeMutableRawPointer, rows: Range<Int>? = nil) {
        let rows = rows ?? 0..<m
        precondition(ldb >= n && ldc >= n, "int8 gemm: ldb and ldc must be >= n")
        precondition(rows.lowerBound >= 0 && rows.upperBound <= m && rows.lowerBound % mr == 0,
                     "int8 gemm: rows must lie in 0..<m and start at a multiple of mr")
        gemm(m, n, k, packedA, b, ldb, c, ldc, comp, scale, scratch, rows)
    }

    /// `gemm` of the 3x3 stride-1 column matrix of padded planes (Int8PlaneB.swift), its columns the
    /// output pixels `firstColumn ..< firstColumn + n`, with no column matrix; rows as for `gemm`.
    @inline(__always)
    public func gemm(m: Int, n: Int, k: Int, packedA: UnsafeRawPointer, planes: UnsafePointer<UInt32>,
                     geometry: Int8PlaneGeometry, firstColumn: Int, c: UnsafeMutablePointer<Float>, ldc: Int,
                     comp: UnsafePointer<Int32>, scale: UnsafePointer<Float>, scratch: UnsafeMutableRawPointer,
                     rows: Range<Int>? = nil) {
        let rows = rows ?? 0..<m
        precondition(ldc >= n && k % 36 == 0 && geometry.width > 0 && geometry.planeStride >= (geometry.width + 2) * 3,
                     "int8 plane gemm: ldc must be >= n, k 9 x 4 x groups, the geometry a padded plane's")
        precondition(rows.lowerBound >= 0 && rows.upperBound <= m && rows.lowerBound % mr == 0,
                     "int8 plane gemm: rows must lie in 0..<m and start at a multiple of mr")
        guard let planeGemm else { preconditionFailure("int8 plane gemm: the \(dot) level has none") }
        planeGemm(m, n, k, packedA, planes, geometry, firstColumn, c, ldc, comp, scale, scratch, rows)
    }

    /// The 10-bit product (`Int8TenBit.gemm`; rows as for `gemm`), where the level has it.
    @inline(__always)
    public func tenBitGemm(m: Int, n: Int, k: Int, packedA: UnsafeRawPointer, hi: UnsafePointer<UInt32>,
                           lo: UnsafePointer<UInt32>, ldb: Int, c: UnsafeMutablePointer<Float>, ldc: Int,
                           comp: UnsafePointer<Int32>, scale: UnsafePointer<Float>, scratch: UnsafeMutableRawPointer,
                           rows: Range<Int>? = nil) {
        guard let tenBitGemm else { preconditionFailure("int8 tenBitGemm: the \(dot) level has no 10-bit product") }
        let rows = rows ?? 0..<m
        precondition(ldb >= n && ldc >= n, "int8 tenBitGemm: ldb and ldc must be >= n")
        precondition(rows.lowerBound >= 0 && rows.upperBound <= m && rows.lowerBound % mr == 0,
                     "int8 tenBitGemm: rows must lie in 0..<m and start at a multiple of mr")
        tenBitGemm(m, n, k, packedA, hi, lo, ldb, c, ldc, comp, scale, scratch, rows)
    }

    /// Planes `groups` of the 10-bit input split into hi and lo (`Int8TenBit.quantize`).
    @inline(__always)
    public func quantizeTenBit(_ src: UnsafePointer<Float>, channels: Int, plane: Int, groups: Range<Int>,
                               _ q: Int8Quantization, hi: UnsafeMutablePointer<UInt32>, lo: UnsafeMutablePointer<UInt32>) {
        quantizeTenBit(src, channels, plane, groups, q.inverseScale, q.zeroPoint, hi, lo)
    }

    /// Planes `groups` of the grouped u8 layout of `src` (channels planes of `plane` floats).
    @inline(__always)
    public func quantize(_ src: UnsafePointer<Float>, channels: Int, plane: Int, groups: Range<Int>,
                         _ q: Int8Quantization, into dst: UnsafeMutablePointer<UInt32>) {
        quantize(src, channels, plane, groups, q.inverseScale, q.zeroPoint, dst)
    }
}
