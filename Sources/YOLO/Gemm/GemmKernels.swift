import YOLOKernelsBaseline
#if arch(x86_64)
import YOLOKernelsAVX2
import YOLOKernelsAVX512
#endif

/// The packed single-precision GEMM of one kernel level: C[m x n] = A[m x k] · B[k x n],
/// row-major, C overwritten. A (the weights) is packed once with `packA` into
/// `packedASize(m:k:)` floats; each call packs B into `scratch` (`scratchSize(m:n:k:)` floats,
/// one buffer per thread). A packed A belongs to the level that packed it. Single-threaded:
/// callers split m or n over their threads. The one place that maps levels to kernels.
@_spi(Kernels) public struct GemmKernels: Sendable {
    public let level: KernelLevel
    /// Rows and columns of the micro-kernel's register tile.
    public let mr: Int, nr: Int
    /// SIMD width in floats (the last, partial NR panel is done one vector at a time).
    public let width: Int
    /// Cache blocking: at most kc steps of k and nc columns of B per packed block of B.
    public let kc: Int, nc: Int

    /// The kernels of `level`, or nil when this CPU (or build) cannot run it.
    public static func forLevel(_ level: KernelLevel) -> GemmKernels? {
        guard KernelLevel.supported.contains(level) else { return nil }
        switch level {
        case .baseline, .neon: return GemmKernels(level: level, mr: GemmBaseline.mr, nr: GemmBaseline.nr, width: GemmBaseline.width, kc: GemmBaseline.kc, nc: GemmBaseline.nc)
        #if arch(x86_64)
        case .avx2: return GemmKernels(level: level, mr: GemmAVX2.mr, nr: GemmAVX2.nr, width: GemmAVX2.width, kc: GemmAVX2.kc, nc: GemmAVX2.nc)
        case .avx512: return GemmKernels(level: level, mr: GemmAVX512.mr, nr: GemmAVX512.nr, width: GemmAVX512.width, kc: GemmAVX512.kc, nc: GemmAVX512.nc)
        #else
        default: return nil
        #endif
        }
    }

    /// The kernels of `KernelLevel.selected` (the detected level, lowered by YOLO_KERNEL_LEVEL).
    public static let selected: GemmKernels = forLevel(KernelLevel.selected)!

    public func packedASize(m: Int, k: Int) -> Int {
        switch level {
        #if arch(x86_64)
        case .avx2: return GemmAVX2.packedASize(m: m, k: k)
        case .avx512: return GemmAVX512.packedASize(m: m, k: k)
        #endif
        default: return GemmBaseline.packedASize(m: m, k: k)
        }
    }

    /// Packs A (m x k, row stride lda >= k) into `packed` (`packedASize(m:k:)` floats).
    public func packA(_ a: UnsafePointer<Float>, lda: Int, m: Int, k: Int, into packed: UnsafeMutablePointer<Float>) {
        switch level {
        #if arch(x86_64)
        case .avx2: GemmAVX2.packA(a, lda: lda, m: m, k: k, into: packed)
        case .avx512: GemmAVX512.packA(a, lda: lda, m: m, k: k, into: packed)
        #endif
        default: GemmBaseline.packA(a, lda: lda, m: m, k: k, into: packed)
        }
    }

    /// Floats of per-thread scratch `gemm` needs for these sizes.
    public func scratchSize(m: Int, n: Int, k: Int) -> Int {
        switch level {
        #if arch(x86_64)
        case .avx2: return GemmAVX2.scratchSize(m: m, n: n, k: k)
        case .avx512: return GemmAVX512.scratchSize(m: m, n: n, k: k)
        #endif
        default: return GemmBaseline.scratchSize(m: m, n: n, k: k)
        }
    }

    /// C[m x n] (row stride ldc >= n) = A · B, A packed by this level's `packA`, B k x n with
    /// row stride ldb >= n, `scratch` at least `scratchSize(m:n:k:)` floats. With `rows`, only
    /// those rows of C are computed (its lower bound a multiple of `mr`): threads sharing one
    /// packed A split m this way (each packs B into its own scratch), or split n by passing
    /// b + j0, c + j0 and a smaller n.
    public func gemm(m: Int, n: Int, k: Int, packedA: UnsafePointer<Float>, b: UnsafePointer<Float>, ldb: Int,
                     c: UnsafeMutablePointer<Float>, ldc: Int, scratch: UnsafeMutablePointer<Float>,
                     rows: Range<Int>? = nil) {
        precondition(ldb >= n && ldc >= n, "GemmKernels.gemm: ldb and ldc must be >= n")
        let rows = rows ?? 0..<m
        precondition(rows.lowerBound >= 0 && rows.upperBound <= m && rows.lowerBound % mr == 0,
                     "GemmKernels.gemm: rows must lie in 0..<m and start at a multiple of mr")
        switch level {
        #if arch(x86_64)
        case .avx2:
            GemmAVX2.gemm(m: m, n: n, k: k, packedA: packedA, b: b, ldb: ldb, c: c, ldc: ldc, scratch: scratch, rows: rows)
        case .avx512:
            GemmAVX512.gemm(m: m, n: n, k: k, packedA: packedA, b: b, ldb: ldb, c: c, ldc: ldc, scratch: scratch, rows: rows)
        #endif
        default:
            GemmBaseline.gemm(m: m, n: n, k: k, packedA: packedA, b: b, ldb: ldb, c: c, ldc: ldc, scratch: scratch, rows: rows)
        }
    }
    // MARK: Direct 3x3 convolution + 2x2 max pool (DirectConv3x3 in YOLOKernels: few input channels)

    /// Floats of packed weights for `filters` 3x3 kernels over `channels`.
    public func directConvPackedSize(filters: Int, channels: Int) -> Int {
        switch level {
        #if arch(x86_64)
        case .avx2: return GemmAVX2.directConvPackedSize(filters: filters, channels: channels)
        case .avx512: return GemmAVX512.directConvPackedSize(filters: filters, channels: channels)
        #endif
        default: return GemmBaseline.directConvPackedSize(filters: filters, channels: channels)
        }
    }

    /// Packs Darknet-layout 3x3 weights (filters x channels x 9) for `directConv`.
    public func directConvPack(_ w: UnsafePointer<Float>, filters: Int, channels: Int, into p: UnsafeMutablePointer<Float>) {
        switch level {
        #if arch(x86_64)
        case .avx2: GemmAVX2.directConvPack(w, filters: filters, channels: channels, into: p)
        case .avx512: GemmAVX512.directConvPack(w, filters: filters, channels: channels, into: p)
        #endif
        default: GemmBaseline.directConvPack(w, filters: filters, channels: channels, into: p)
        }
    }

    /// Floats of per-thread scratch `directConv` needs.
    public func directConvScratchSize(channels: Int, width: Int) -> Int {
        switch level {
        #if arch(x86_64)
        case .avx2: return GemmAVX2.directConvScratchSize(channels: channels, width: width)
        case .avx512: return GemmAVX512.directConvScratchSize(channels: channels, width: width)
        #endif
        default: return GemmBaseline.directConvScratchSize(channels: channels, width: width)
        }
    }

    /// Raw sums (no bias) of a 3x3 stride-1 pad-1 convolution followed by a 2x2 stride-2 max
    /// pool, for pooled rows `rows` (even height and width).
    public func directConvPooled(_ src: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                                 packed: UnsafePointer<Float>, filters: Int, rows: Range<Int>,
                                 into dst: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>) {
        precondition(height % 2 == 0 && width % 2 == 0, "GemmKernels.directConvPooled: pooling needs even sizes")
        switch level {
        #if arch(x86_64)
        case .avx2:
            GemmAVX2.directConvPooled(src, height: height, width: width, channels: channels, packed: packed, filters: filters,
                                      rows: rows, into: dst, scratch: scratch)
        case .avx512:
            GemmAVX512.directConvPooled(src, height: height, width: width, channels: channels, packed: packed, filters: filters,
                                        rows: rows, into: dst, scratch: scratch)
        #endif
        default:
            GemmBaseline.directConvPooled(src, height: height, width: width, channels: channels, packed: packed, filters: filters,
                                          rows: rows, into: dst, scratch: scratch)
        }
    }
}
