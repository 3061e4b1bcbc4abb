// The BF16 tap convolution (TapConv.swift): 2 channels a word as bfloat16 pairs (the even channel
// in the low half, as the BF16 GEMMs pair k), rounded as the level's BF16 GEMM rounds its B, and
// a level's products (`HalfKernels.taps`); FP32 sums, summed in tap order (not im2col's: the same
// products, another order of their FP32 sums).

/// A level's BF16 tap convolution.
public struct BF16TapConv: Sendable {
    /// (src: channels planes of height x width floats, channels, height, width, jobs of
    /// `TapConv.planeJobs`, planeStride, dst): padded pair planes (pair j of shifted copy kx at
    /// dst + (kx groups + j) planeStride), zero round them; every word of the layout's planes.
    public let planes: @Sendable (UnsafePointer<Float>, Int, Int, Int, Range<Int>, Int, UnsafeMutablePointer<UInt32>) -> Void
    /// (geometry, packedA: the level's BF16 GEMM's `packA` of `tapOrder`, planes, output: filters
    /// planes of height x width floats, items of `TapConv.items`): the FP32 sums.
    public let run: @Sendable (TapConv.Geometry, UnsafePointer<Float>, UnsafePointer<UInt32>, UnsafeMutablePointer<Float>,
                               Range<Int>) -> Void

    public init(planes: @escaping @Sendable (UnsafePointer<Float>, Int, Int, Int, Range<Int>, Int, UnsafeMutablePointer<UInt32>) -> Void,
                run: @escaping @Sendable (TapConv.Geometry, UnsafePointer<Float>, UnsafePointer<UInt32>, UnsafeMutablePointer<Float>,
                                          Range<Int>) -> Void) {
        (self.planes, self.run) = (planes, run)
    }

    /// Folded 3x3 weights (filters x channels x 3 x 3) as a filters x (`layout.depth` / 2) matrix
    /// in tap order: column 2 plane + h for channel 2j + h, plane (ky 3 + kx) groups + j, or
    /// shifted ky rowPlanes + kx groups + j; zero elsewhere.
    public static func tapOrder(_ w: UnsafePointer<Float>, filters: Int, channels: Int, layout: TapConv.Layout) -> [Float] {
        let depth = layout.depth / 2
        var m = [Float](repeating: 0, count: filters * depth)
        for f in 0..<filters {
            for c in 0..<channels {
                for tap in 0..<9 {
                    let (j, h, ky, kx) = (c / 2, c % 2, tap / 3, tap % 3)
                    let plane = layout.shifted ? ky * layout.rowPlanes + kx * layout.groups + j : tap * layout.groups + j
                    m[f * depth + 2 * plane + h] = w[(f * channels + c) * 9 + tap]
                }
            }
        }
        return m
    }
}
