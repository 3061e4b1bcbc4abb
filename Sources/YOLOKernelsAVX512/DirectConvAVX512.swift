// Direct 3x3 convolution + 2x2 max pool of this level: DirectConv3x3 in YOLOKernels with SIMD16<Float>.
#if arch(x86_64)
import YOLOKernels

typealias DirectConvAVX512 = DirectConv3x3<SIMD16<Float>, GemmAVX512Tag>

extension GemmAVX512 {
    public static func directConvPackedSize(filters: Int, channels: Int) -> Int {
        DirectConvAVX512.packedSize(filters: filters, channels: channels)
    }
    public static func directConvPack(_ w: UnsafePointer<Float>, filters: Int, channels: Int, into p: UnsafeMutablePointer<Float>) {
        DirectConvAVX512.pack(w, filters: filters, channels: channels, into: p)
    }
    public static func directConvScratchSize(channels: Int, width: Int) -> Int {
        DirectConvAVX512.scratchSize(channels: channels, width: width)
    }
    public static func directConvPooled(_ src: UnsafePointer<Float>, height: Int, width: Int, channels: Int,
                                        packed: UnsafePointer<Float>, filters: Int, rows: Range<Int>,
                                        into dst: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>) {
        DirectConvAVX512.pooledRows(src, height: height, width: width, channels: channels, packed: packed, filters: filters,
                                rows: rows, into: dst, scratch: scratch)
    }
}
#endif
