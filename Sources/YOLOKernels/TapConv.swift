// Tap convolutions: a 3x3 stride-1 convolution as products straight from its input planes, no
// column matrix, at a level with matrix tiles (amx): each tap's 16 planes of 32-bit words (INT8:
// 4 channels a word, Int8TapConv; BF16: 2, BF16TapConv) times 16 pixels read in place from planes
// padded by one pixel all round, the pixels of a tap one word apart. The weights go in tap order;
// the products are those of im2col (docs/performance-amx.md, "Tap products").

/// What every tap convolution shares: a layer's geometry, its planes' layout, the padding.
public enum TapConv {
    /// One layer: its filters, input planes of 32-bit words (`groups`: INT8's groups of 4 channels,
    /// BF16's pairs), size (the output's too) and the padded planes' stride in words
    /// (`planeStride(height:width:)` or more).
    public struct Geometry: Sendable {
        public let filters: Int, groups: Int, height: Int, width: Int, planeStride: Int
        public init(filters: Int, groups: Int, height: Int, width: Int, planeStride: Int) {
            (self.filters, self.groups, self.height, self.width, self.planeStride) = (filters, groups, height, width, planeStride)
        }
        /// Pixels a product covers: the padded rows' (width + 2) of every output row.
        public var pixels: Int { height * (width + 2) }
        public var layout: Layout { Layout(groups: groups) }
    }

    /// Pixels of one work item per block of 32 filters (a chunk of the shared counter).
    public static let itemPixels = 256

    /// Words of one padded plane: (height + 2) x (width + 2), and the 33 past them that the last
    /// block's taps read (pixels whose outputs are not stored), rounded up to 16.
    public static func planeStride(height: Int, width: Int) -> Int { ((height + 2) * (width + 2) + 33 + 15) & ~15 }

    /// Padded planes to write, each a job of the threads: the layout's, each shifted copy apart,
    /// and where shifted the planes past 3 x groups that a row's last step reads (BF16 zeroes
    /// them: NaN times a weight of zero is NaN; INT8's integers times zero need no such care).
    public static func planeJobs(_ layout: Layout) -> Int { layout.shifted ? layout.rowPlanes : layout.groups }

    /// Work items of a layer with the 2x2 stride-2 max pool after it: blocks of 32 filters x one
    /// pooled row.
    public static func pooledItems(_ g: Geometry) -> Int { (g.filters + 31) / 32 * (g.height / 2) }

    /// Work items of a layer: blocks of 32 filters x `itemPixels` pixels.
    public static func items(_ g: Geometry) -> Int { (g.filters + 31) / 32 * ((g.pixels + itemPixels - 1) / itemPixels) }

    /// How a layer of `groups` planes of words lays out its padded planes and weights. With a
    /// multiple of 16 groups: its planes, a step per tap and 16 groups. Else the planes three times,
    /// shifted left by 0, 1 and 2 pixels (plane kx x groups + g: the kx taps of a row, one word
    /// apart no longer), each row of taps `rowPlanes` of them (3 x groups, rounded up to 16; the
    /// rest the next planes, times weights of zero): a step per row of taps and 16 planes.
    public struct Layout: Sendable, Equatable {
        public let groups: Int
        public init(groups: Int) { self.groups = groups }
        public var shifted: Bool { groups % 16 != 0 }
        /// Planes of a row of taps (shifted), read 16 at a time.
        public var rowPlanes: Int { (3 * groups + 15) / 16 * 16 }
        /// Planes of one set (a 10-bit input has two), each `planeStride` words.
        public var planes: Int { shifted ? rowPlanes : groups }
        /// Tile steps of 16 planes.
        public var steps: Int { shifted ? 3 * rowPlanes / 16 : 9 * groups / 16 }
        /// Bytes of one filter's weights in tap order (64 a step).
        public var depth: Int { 64 * steps }
    }

    /// Quantized planes (`groups` planes of height x width words, one after the other) into padded
    /// ones (`planeStride` apart): a border of `padding` words, and `padding` past the border; with
    /// `shift`, each padded plane's words from that one on (the plane `shift` pixels to the left).
    public static func pad(_ planes: UnsafePointer<UInt32>, groups: Range<Int>, height: Int, width: Int, planeStride: Int,
                           padding: UInt32, shift: Int = 0, into padded: UnsafeMutablePointer<UInt32>) {
        let wp = width + 2
        for g in groups {
            // (dst: where the unshifted plane would start; nothing is written before dst + shift.)
            let src = planes + g * height * width, dst = padded + g * planeStride - shift
            (dst + shift).update(repeating: padding, count: wp + 1 - shift)
            for y in 0..<height {
                let row = dst + (y + 1) * wp + 1
                row.update(from: src + y * width, count: width)
                row[width] = padding
                row[width + 1] = padding
            }
            (dst + (height + 1) * wp + 1).update(repeating: padding, count: planeStride + shift - (height + 1) * wp - 1)
        }
    }
}
