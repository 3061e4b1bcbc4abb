// The INT8 tap convolution (TapConv.swift): 4 channels of u8 a word, the weights' tap order, and
// a level's products (`Int8Functions.taps`); the int32 sums are the im2col product's, so the
// floats are too.

/// A level's INT8 tap convolution.
public struct Int8TapConv: Sendable {
    /// (geometry, packedA in tap order, planes (a 10-bit input's hi), lo planes or nil, output
    /// (filters planes of height x width floats), comp, scale, items of `TapConv.items`):
    /// Float(sum - comp) * scale.
    public let run: @Sendable (TapConv.Geometry, UnsafeRawPointer, UnsafePointer<UInt32>, UnsafePointer<UInt32>?,
                               UnsafeMutablePointer<Float>, UnsafePointer<Int32>, UnsafePointer<Float>, Range<Int>) -> Void

    /// The same with the 2x2 stride-2 max pool after it (even height and width): items of
    /// `TapConv.pooledItems`, the output the pooled planes; max(Float(sum - comp) * scale).
    public let runPooled: @Sendable (TapConv.Geometry, UnsafeRawPointer, UnsafePointer<UInt32>, UnsafePointer<UInt32>?,
                                     UnsafeMutablePointer<Float>, UnsafePointer<Int32>, UnsafePointer<Float>, Range<Int>) -> Void

    public init(run: @escaping @Sendable (TapConv.Geometry, UnsafeRawPointer, UnsafePointer<UInt32>, UnsafePointer<UInt32>?,
                                          UnsafeMutablePointer<Float>, UnsafePointer<Int32>, UnsafePointer<Float>, Range<Int>) -> Void,
                runPooled: @escaping @Sendable (TapConv.Geometry, UnsafeRawPointer, UnsafePointer<UInt32>, UnsafePointer<UInt32>?,
                                                UnsafeMutablePointer<Float>, UnsafePointer<Int32>, UnsafePointer<Float>, Range<Int>) -> Void) {
        (self.run, self.runPooled) = (run, runPooled)
    }

    /// Rows of quantized 3x3 weights in the grouped order (`quantizeWeights`: column ((g 3 + ky) 3
    /// + kx) 4 + i) into tap order (`TapConv.Layout.depth` columns): column ((ky 3 + kx) groups + g) 4 + i,
    /// or shifted ((ky rowPlanes + kx groups + g) 4 + i, zero in the rest of a row of taps).
    public static func tapOrder(_ q: UnsafePointer<Int8>, rows: Int, layout: TapConv.Layout, into t: UnsafeMutablePointer<Int8>) {
        let groups = layout.groups, columns = groups * 36, depth = layout.depth
        for r in 0..<rows {
            let src = q + r * columns, dst = t + r * depth
            dst.update(repeating: 0, count: depth)
            for g in 0..<groups {
                for tap in 0..<9 {
                    let (ky, kx) = (tap / 3, tap % 3)
                    let plane = layout.shifted ? ky * layout.rowPlanes + kx * groups + g : tap * groups + g
                    for i in 0..<4 { dst[plane * 4 + i] = src[(g * 9 + tap) * 4 + i] }
                }
            }
        }
    }
}
