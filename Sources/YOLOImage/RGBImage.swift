/// An 8-bit RGB image: `pixels` holds `height` rows of `width` interleaved R, G, B bytes
/// (row stride `width * 3`), top row first.
public struct RGBImage: Sendable, Equatable {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// `width * height * 3` bytes: R, G, B of each pixel, row by row.
    public var pixels: [UInt8]

    /// Wraps existing pixel bytes; `pixels.count` must be `width * height * 3`.
    public init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(width >= 0 && height >= 0 && pixels.count == width * height * 3,
                     "RGBImage: \(pixels.count) bytes for \(width) x \(height) pixels")
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// An image filled with one colour.
    public init(width: Int, height: Int, fill: RGBColor = .black) {
        precondition(width >= 0 && height >= 0, "RGBImage: negative size \(width) x \(height)")
        self.width = width
        self.height = height
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        if fill != .black {
            for i in stride(from: 0, to: pixels.count, by: 3) {
                pixels[i] = fill.red; pixels[i + 1] = fill.green; pixels[i + 2] = fill.blue
            }
        }
        self.pixels = pixels
    }

    /// The colour at column `x`, row `y` (both must be inside the image).
    public subscript(x: Int, y: Int) -> RGBColor {
        get {
            precondition(x >= 0 && x < width && y >= 0 && y < height, "pixel (\(x), \(y)) outside image")
            let i = (y * width + x) * 3
            return RGBColor(red: pixels[i], green: pixels[i + 1], blue: pixels[i + 2])
        }
        set {
            precondition(x >= 0 && x < width && y >= 0 && y < height, "pixel (\(x), \(y)) outside image")
            let i = (y * width + x) * 3
            pixels[i] = newValue.red; pixels[i + 1] = newValue.green; pixels[i + 2] = newValue.blue
        }
    }
}

/// An 8-bit RGB colour.
public struct RGBColor: Sendable, Hashable, CustomStringConvertible {
    /// Red intensity, 0...255.
    public var red: UInt8
    /// Green intensity, 0...255.
    public var green: UInt8
    /// Blue intensity, 0...255.
    public var blue: UInt8

    /// A colour from its three components.
    public init(red: UInt8, green: UInt8, blue: UInt8) {
        self.red = red
        self.green = green
        self.blue = blue
    }

    /// Pure black, (0, 0, 0).
    public static let black = RGBColor(red: 0, green: 0, blue: 0)
    /// Pure white, (255, 255, 255).
    public static let white = RGBColor(red: 255, green: 255, blue: 255)

    /// Perceived brightness (ITU-R BT.601 weights), 0...255.
    public var luma: Double {
        0.299 * Double(red) + 0.587 * Double(green) + 0.114 * Double(blue)
    }

    /// "(r, g, b)".
    public var description: String { "(\(red), \(green), \(blue))" }
}
