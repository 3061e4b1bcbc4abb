import YOLOKernels
import YOLOKernelsBaseline
#if arch(x86_64)
import YOLOKernelsAVX2
import YOLOKernelsAVX512
#endif

/// The Winograd input and output transforms of one kernel level (the SIMD ones of
/// Sources/YOLOKernels*/Winograd*.swift, bit-identical to the scalar reference functions of
/// YOLOKernels); the one place that maps levels to them, next to `GemmKernels`. Same contracts
/// as `winogradInput`, `winogradOutput` (F(2x2, 3x3), tile 2) and `winograd4Input`,
/// `winograd4Output` (F(4x4, 3x3), tile 4).
@_spi(Kernels) public struct WinogradTransforms: Sendable {
    public let level: KernelLevel

    /// The transforms of `level`, or nil when this CPU (or build) cannot run it.
    public static func forLevel(_ level: KernelLevel) -> WinogradTransforms? {
        KernelLevel.supported.contains(level) ? WinogradTransforms(level: level) : nil
    }

    /// The transforms for a model's GEMM kernels: their level, or with OpenBLAS (nil) the
    /// level of `GemmKernels.selected`.
    static func forKernels(_ kernels: GemmKernels?) -> WinogradTransforms {
        WinogradTransforms(level: (kernels ?? GemmKernels.selected).level)
    }

    /// V[xi][c][t] for `tile` 2 (16 matrices) or 4 (36), channels `channels` of channelCount.
    public func input(tile: Int, _ src: UnsafePointer<Float>, height: Int, width: Int, channelCount: Int,
                      channels: Range<Int>, tileRows: Range<Int>, tilesWide tw: Int, into v: UnsafeMutablePointer<Float>) {
        switch (level, tile) {
        #if arch(x86_64)
        case (.avx512, 4):
            WinogradAVX512.input4(src, height: height, width: width, channelCount: channelCount, channels: channels,
                                  tileRows: tileRows, tilesWide: tw, into: v)
        case (.avx512, _):
            WinogradAVX512.input2(src, height: height, width: width, channelCount: channelCount, channels: channels,
                                  tileRows: tileRows, tilesWide: tw, into: v)
        case (.avx2, 4):
            WinogradAVX2.input4(src, height: height, width: width, channelCount: channelCount, channels: channels,
                                tileRows: tileRows, tilesWide: tw, into: v)
        case (.avx2, _):
            WinogradAVX2.input2(src, height: height, width: width, channelCount: channelCount, channels: channels,
                                tileRows: tileRows, tilesWide: tw, into: v)
        #endif
        case (_, 4):
            WinogradBaseline.input4(src, height: height, width: width, channelCount: channelCount, channels: channels,
                                    tileRows: tileRows, tilesWide: tw, into: v)
        default:
            WinogradBaseline.input2(src, height: height, width: width, channelCount: channelCount, channels: channels,
                                    tileRows: tileRows, tilesWide: tw, into: v)
        }
    }

    /// Output tiles from M[xi][f][t] for `tile` 2 or 4, filters `filters` of filterCount.
    public func output(tile: Int, _ m: UnsafePointer<Float>, filterCount: Int, filters: Range<Int>, tileRows: Range<Int>,
                       tilesWide tw: Int, outHeight: Int, outWidth: Int, into dst: UnsafeMutablePointer<Float>) {
        switch (level, tile) {
        #if arch(x86_64)
        case (.avx512, 4):
            WinogradAVX512.output4(m, filterCount: filterCount, filters: filters, tileRows: tileRows, tilesWide: tw,
                                   outHeight: outHeight, outWidth: outWidth, into: dst)
        case (.avx512, _):
            WinogradAVX512.output2(m, filterCount: filterCount, filters: filters, tileRows: tileRows, tilesWide: tw,
                                   outHeight: outHeight, outWidth: outWidth, into: dst)
        case (.avx2, 4):
            WinogradAVX2.output4(m, filterCount: filterCount, filters: filters, tileRows: tileRows, tilesWide: tw,
                                 outHeight: outHeight, outWidth: outWidth, into: dst)
        case (.avx2, _):
            WinogradAVX2.output2(m, filterCount: filterCount, filters: filters, tileRows: tileRows, tilesWide: tw,
                                 outHeight: outHeight, outWidth: outWidth, into: dst)
        #endif
        case (_, 4):
            WinogradBaseline.output4(m, filterCount: filterCount, filters: filters, tileRows: tileRows, tilesWide: tw,
                                     outHeight: outHeight, outWidth: outWidth, into: dst)
        default:
            WinogradBaseline.output2(m, filterCount: filterCount, filters: filters, tileRows: tileRows, tilesWide: tw,
                                     outHeight: outHeight, outWidth: outWidth, into: dst)
        }
    }
}
