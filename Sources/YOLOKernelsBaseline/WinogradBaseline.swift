// Baseline level, compiled for the target's default CPU: Winograd transforms in xmm registers
// (SSE2) on x86-64, q registers (NEON) on arm64.
import YOLOKernels

/// Private to this target: keeps its specializations of the generic transforms apart from every
/// other target's (distinct symbol names, so the linker never merges copies built for different CPUs).
enum WinogradBaselineTag: WinogradISA { typealias Vector = SIMD4<Float> }

/// The SIMD Winograd transforms of this level (WinogradSIMD in YOLOKernels), 4 tiles at a time;
/// the contracts of winogradInput, winogradOutput, winograd4Input and winograd4Output.
public enum WinogradBaseline {
    public static func input2(_ src: UnsafePointer<Float>, height: Int, width: Int, channelCount: Int, channels: Range<Int>,
                              tileRows: Range<Int>, tilesWide tw: Int, into v: UnsafeMutablePointer<Float>) {
        WinogradSIMD<WinogradBaselineTag>.input2(src, height: height, width: width, channelCount: channelCount,
                                            channels: channels, tileRows: tileRows, tilesWide: tw, into: v)
    }

    public static func output2(_ m: UnsafePointer<Float>, filterCount: Int, filters: Range<Int>, tileRows: Range<Int>,
                               tilesWide tw: Int, outHeight: Int, outWidth: Int, into dst: UnsafeMutablePointer<Float>) {
        WinogradSIMD<WinogradBaselineTag>.output2(m, filterCount: filterCount, filters: filters, tileRows: tileRows,
                                             tilesWide: tw, outHeight: outHeight, outWidth: outWidth, into: dst)
    }

    public static func input4(_ src: UnsafePointer<Float>, height: Int, width: Int, channelCount: Int, channels: Range<Int>,
                              tileRows: Range<Int>, tilesWide tw: Int, into v: UnsafeMutablePointer<Float>) {
        WinogradSIMD<WinogradBaselineTag>.input4(src, height: height, width: width, channelCount: channelCount,
                                            channels: channels, tileRows: tileRows, tilesWide: tw, into: v)
    }

    public static func output4(_ m: UnsafePointer<Float>, filterCount: Int, filters: Range<Int>, tileRows: Range<Int>,
                               tilesWide tw: Int, outHeight: Int, outWidth: Int, into dst: UnsafeMutablePointer<Float>) {
        WinogradSIMD<WinogradBaselineTag>.output4(m, filterCount: filterCount, filters: filters, tileRows: tileRows,
                                             tilesWide: tw, outHeight: outHeight, outWidth: outWidth, into: dst)
    }
}
