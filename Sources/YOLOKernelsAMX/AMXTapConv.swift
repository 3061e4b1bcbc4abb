// The amx level's tap convolution (Int8TapConv): for each block of 32 filters and 32 pixels (16
// with a 10-bit input, whose hi and lo planes are the block's two B tiles), one tile product per
// step (`Int8TapConv.Layout`), B read where it lies in the padded planes, then the dequantizing
// store into the output planes (CAMX's yolo_amx_int8_taps_block and yolo_amx_taps_store).
#if arch(x86_64)
import YOLOKernels
import CAMX

enum AMXTapConv {
    /// Items `items` of `Int8TapConv.items(g)`: each 32 filters x `Int8TapConv.itemPixels` pixels.
    static func run(_ g: Int8TapConv.Geometry, packedA: UnsafeRawPointer, planes: UnsafePointer<UInt32>,
                    lo: UnsafePointer<UInt32>?, out: UnsafeMutablePointer<Float>, comp: UnsafePointer<Int32>,
                    scale: UnsafePointer<Float>, items: Range<Int>) {
        guard !items.isEmpty else { return }
        let layout = g.layout, wp = g.width + 2, steps = layout.steps, aPanel = steps * 1024
        let ldb = 4 * g.planeStride, pixelsPerItem = Int8TapConv.itemPixels
        let chunks = (g.pixels + pixelsPerItem - 1) / pixelsPerItem
        let tenBit = lo != nil, width = tenBit ? 16 : 32
        let second = tenBit ? (UnsafeRawPointer(lo!) - UnsafeRawPointer(planes)) : 64
        withUnsafeTemporaryAllocation(of: Int.self, capacity: steps) { offsets in
            // Step (tap, or row of taps where shifted; then 16 planes on): the pixels' shift.
            let perTap = layout.shifted ? layout.rowPlanes / 16 : g.groups / 16
            for s in 0..<steps {
                let tap = s / perTap, j = s % perTap
                offsets[s] = 4 * (layout.shifted ? tap * wp : (tap / 3) * wp + tap % 3) + 16 * j * ldb
            }
            withUnsafeTemporaryAllocation(byteCount: 32 * 128, alignment: 64) { tile in
                yolo_amx_configure()
                defer { yolo_amx_release() }
                for item in items {
                    let block = item / chunks, f0 = 32 * block, rows = min(32, g.filters - f0)
                    let a = packedA + (f0 / 16) * aPanel
                    let first = (item % chunks) * pixelsPerItem, end = min(g.pixels, first + pixelsPerItem)
                    var p = first
                    while p < end {
                        yolo_amx_int8_taps_block(rows > 16 ? 2 : 1, steps, a, aPanel, planes + p, second, ldb,
                                                 offsets.baseAddress, tile.baseAddress)
                        yolo_amx_taps_store(tile.baseAddress, Int32(rows), tenBit ? 1 : 0, p, wp, g.width, g.height,
                                            out + f0 * g.height * g.width, g.height * g.width, comp + f0, scale + f0)
                        p += width
                    }
                }
            }
        }
    }
}
#endif
