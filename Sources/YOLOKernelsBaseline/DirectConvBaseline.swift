// Direct 3x3 convolution + 2x2 max pool of this level: DirectConv3x3 in YOLOKernels with SIMD4<Float>.

import YOLOKernels

typealias DirectConvBaseline = DirectConv3x3<SIMD4<Float>, GemmBaselineTag>

extension GemmBaseline {
    public static func directConvPackedSize(filters: Int, channels: Int) -> Int {
        DirectConvBaseline.packedSize(filters: filters, channels: channels)
    }
    public static func directConvPack(_ w: UnsafePointer<Float>, filters: Int, channels: Int, into p: UnsafeMutablePointer<Float>) {
        DirectConvBaseline.pack(w, filters: filters, channels: channels, into: p)
    }
    public static func directConvScratchSize(channels: Int, width: Int) -> Int {
        DirectConvBaseline.scratchSize(channels: channels, width: width)
    }
    public static func directConvPooled(_ src: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                                        packed: UnsafePointer<Float>, filters: Int, rows: Range<Int>,
                                        into dst: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>) {
        DirectConvBaseline.pooledRows(src, height: height, width: width, channels: channels, packed: packed, filters: filters,
                                rows: rows, into: dst, scratch: scratch)
    }
}

