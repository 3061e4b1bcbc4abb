// How 8-bit frames are laid out in memory: the pixel formats frames come in, and the byte
// offsets of each channel.

/// How the bytes of one pixel are laid out in a frame given to `Detector.detect`.
public enum PixelFormat: String, Sendable, CaseIterable {
    /// 3 bytes: red, green, blue.
    case rgb
    /// 4 bytes: red, green, blue, alpha (alpha ignored, as Darknet drops it).
    case rgba
    /// 3 bytes: blue, green, red (OpenCV's order).
    case bgr
    /// 4 bytes: blue, green, red, alpha (alpha ignored).
    case bgra
    /// 1 byte of grey, used for all three channels.
    case gray

    /// Bytes of one pixel: 3 (rgb, bgr), 4 (rgba, bgra) or 1 (gray).
    public var bytesPerPixel: Int {
        switch self {
        case .rgb, .bgr: return 3
        case .rgba, .bgra: return 4
        case .gray: return 1
        }
    }

    package var layout: PixelLayout {
        switch self {
        case .rgb: return PixelLayout(bytesPerPixel: 3, red: 0, green: 1, blue: 2)
        case .rgba: return PixelLayout(bytesPerPixel: 4, red: 0, green: 1, blue: 2)
        case .bgr: return PixelLayout(bytesPerPixel: 3, red: 2, green: 1, blue: 0)
        case .bgra: return PixelLayout(bytesPerPixel: 4, red: 2, green: 1, blue: 0)
        case .gray: return PixelLayout(bytesPerPixel: 1, red: 0, green: 0, blue: 0)
        }
    }
}

/// Where the colour channels of one pixel lie: bytes per pixel and the byte offsets of red,
/// green and blue (all three 0 for grey, which Darknet replicates into R = G = B).
package struct PixelLayout: Equatable {
    package var bytesPerPixel: Int
    package var red: Int
    package var green: Int
    package var blue: Int
    package init(bytesPerPixel: Int, red: Int, green: Int, blue: Int) {
        (self.bytesPerPixel, self.red, self.green, self.blue) = (bytesPerPixel, red, green, blue)
    }
}
