// The Detector's preprocessing against the naive reference (YOLOReference's Naive.letterbox), bit
// for bit (Float bit patterns, not values: -0 vs +0 or a NaN would show), over many image sizes
// (1x1, thin, tiny up-scales, odd, exact, big down-scales), every pixel format, padded row
// strides, both resize modes and a square and a non-square network. One detector per network
// takes all the sizes in turn, so its scratch memory is reused across sizes.
import Foundation
import XCTest
@testable import YOLODetection
import YOLOCore
import YOLOReference

final class LetterboxExactTests: XCTestCase {
    /// `rgb` (packed, `w` x `h`) laid out as `format` with rows `stride` bytes apart (padding
    /// bytes and alpha filled with noise, which must not matter).
    private func layout(_ rgb: [UInt8], _ w: Int, _ h: Int, as format: PixelFormat, stride: Int) -> [UInt8] {
        var noise = SeededRandom(seed: UInt64(stride * 31 + w))
        var bytes = noise.bytes(stride * h)
        let bpp = format.bytesPerPixel
        for y in 0..<h { for x in 0..<w {
            let i = (y * w + x) * 3, o = y * stride + x * bpp
            switch format {
            case .rgb, .rgba: (bytes[o], bytes[o + 1], bytes[o + 2]) = (rgb[i], rgb[i + 1], rgb[i + 2])
            case .bgr, .bgra: (bytes[o], bytes[o + 1], bytes[o + 2]) = (rgb[i + 2], rgb[i + 1], rgb[i])
            case .gray: bytes[o] = rgb[i]
            }
        } }
        return bytes
    }

    private func firstBitDifference(_ a: UnsafeMutableBufferPointer<Float>, _ b: [Float]) -> String? {
        guard a.count == b.count else { return "\(a.count) values, expected \(b.count)" }
        // memcmp first (the element loop is slow in a debug build).
        if b.withUnsafeBytes({ memcmp($0.baseAddress!, a.baseAddress!, $0.count) }) == 0 { return nil }
        for i in a.indices where a[i].bitPattern != b[i].bitPattern {
            return "first difference at \(i) of \(a.count): \(a[i]) (0x\(String(a[i].bitPattern, radix: 16))), expected \(b[i]) (0x\(String(b[i].bitPattern, radix: 16)))"
        }
        return nil
    }

    /// Checks every format (and a padded stride for each) of a `w` x `h` image in `detector`.
    private func check(_ detector: Detector, netWidth: Int, netHeight: Int, _ w: Int, _ h: Int,
                       formats: [PixelFormat] = PixelFormat.allCases) throws {
        var random = SeededRandom(seed: UInt64(w * 10_007 + h))
        let rgb = random.bytes(w * h * 3)
        var grey = rgb
        for i in stride(from: 0, to: grey.count, by: 3) { grey[i + 1] = grey[i]; grey[i + 2] = grey[i] }
        let modes = [false, true].map { stretch in
            (stretch, (formats.contains(.gray) ? [rgb, grey] : [rgb]).map {
                Naive.letterbox(rgb: $0, width: w, height: h, netWidth: netWidth, netHeight: netHeight, stretch: stretch)
            })
        }
        for format in formats {
            for pad in [0, 7] {
                let stride = w * format.bytesPerPixel + pad
                let bytes = layout(format == .gray ? grey : rgb, w, h, as: format, stride: stride)
                for (stretch, expected) in modes {
                    detector.options.resize = stretch ? .stretch : .letterbox
                    detector.session.input.update(repeating: .nan)
                    try bytes.withUnsafeBytes {
                        try detector.preprocess(pixels: $0, width: w, height: h, rowStride: stride, format: format)
                    }
                    if let difference = firstBitDifference(detector.session.input, expected[format == .gray ? 1 : 0]) {
                        XCTFail("\(w)x\(h) \(format) stride \(stride) in \(netWidth)x\(netHeight) \(stretch ? "stretch" : "letterbox"): \(difference)")
                    }
                }
            }
        }
    }

    func testSmallAndOddSizesMatchTheReferenceBitForBit() throws {
        for (nw, nh) in [(416, 416), (320, 608)] {
            let detector = try Detector(model: tinyModel(width: nw, height: nh))
            for (w, h) in [(1, 1), (1, 37), (37, 1), (2, 2), (5, 7), (7, 5), (320, 240), (3, 1000), (333, 251),
                           (416, 416), (417, 415), (320, 608), (639, 479)] {
                try check(detector, netWidth: nw, netHeight: nh, w, h)
            }
        }
    }

    func testBigDownScalesMatchTheReferenceBitForBit() throws {
        // The naive reference is slow on these: every format on one network, two on the other.
        for (nw, nh, formats) in [(416, 416, PixelFormat.allCases), (320, 608, [PixelFormat.rgb, .bgra])] {
            let detector = try Detector(model: tinyModel(width: nw, height: nh))
            for (w, h) in [(1920, 1080), (1080, 1920), (4000, 300)] {
                try check(detector, netWidth: nw, netHeight: nh, w, h, formats: formats)
            }
        }
    }
}
