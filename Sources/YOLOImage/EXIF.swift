/// EXIF orientation: reading the tag from JPEG and PNG files and turning the image upright.
///
/// The tag (0x0112) says how the stored pixels must be transformed for display:
/// 1 as stored, 2 mirrored left-right, 3 rotated 180°, 4 mirrored top-bottom,
/// 5 transposed (mirrored along the main diagonal), 6 rotated 90° clockwise,
/// 7 transversed (mirrored along the other diagonal), 8 rotated 90° counter-clockwise.
extension RGBImage {
    /// The image transformed for display per EXIF `orientation` (1...8; other values change
    /// nothing). Orientations 5...8 swap width and height.
    public func applyingEXIFOrientation(_ orientation: Int) -> RGBImage {
        guard (2...8).contains(orientation), width > 0, height > 0 else { return self }
        let (w, h) = (width, height)
        let swaps = orientation >= 5
        let outWidth = swaps ? h : w, outHeight = swaps ? w : h
        // Source pixel of output (x, y) is (sx, sy) = (a*x + b*y + c, d*x + e*y + f), written as
        // a start position and steps: one output column right, one output row down.
        let (start, stepX, stepY): ((Int, Int), (Int, Int), (Int, Int))
        switch orientation {
        case 2: (start, stepX, stepY) = ((w - 1, 0), (-1, 0), (0, 1))
        case 3: (start, stepX, stepY) = ((w - 1, h - 1), (-1, 0), (0, -1))
        case 4: (start, stepX, stepY) = ((0, h - 1), (1, 0), (0, -1))
        case 5: (start, stepX, stepY) = ((0, 0), (0, 1), (1, 0))
        case 6: (start, stepX, stepY) = ((0, h - 1), (0, -1), (1, 0))
        case 7: (start, stepX, stepY) = ((w - 1, h - 1), (0, -1), (-1, 0))
        default: (start, stepX, stepY) = ((w - 1, 0), (0, 1), (-1, 0))  // 8
        }
        func offset(_ p: (Int, Int)) -> Int { (p.1 * w + p.0) * 3 }
        let first = offset(start), dx = offset(stepX), dy = offset(stepY)
        var out = [UInt8](repeating: 0, count: pixels.count)
        pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                var o = 0
                for y in 0..<outHeight {
                    var s = first + y * dy
                    for _ in 0..<outWidth {
                        dst[o] = src[s]; dst[o + 1] = src[s + 1]; dst[o + 2] = src[s + 2]
                        o += 3
                        s += dx
                    }
                }
            }
        }
        return RGBImage(width: outWidth, height: outHeight, pixels: out)
    }
}

/// The orientation in a JPEG's first Exif APP1 segment, if any (markers before the scan only).
func jpegEXIFOrientation(_ bytes: [UInt8]) -> Int? {
    var i = 2
    while i + 4 <= bytes.count, bytes[i] == 0xFF {
        let marker = bytes[i + 1]
        if marker == 0xFF { i += 1; continue }  // fill byte
        if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) { i += 2; continue }
        if marker == 0xDA || marker == 0xD9 { return nil }  // scan data or the end: no EXIF after
        let end = i + 2 + (Int(bytes[i + 2]) << 8 | Int(bytes[i + 3]))
        guard end >= i + 4, end <= bytes.count else { return nil }
        let body = bytes[(i + 4)..<end]
        if marker == 0xE1, body.starts(with: exifHeader) {
            return tiffOrientation(bytes[(i + 4 + exifHeader.count)..<end])
        }
        i = end
    }
    return nil
}

/// The orientation in a PNG's eXIf chunk, if any (before or after the image data).
func pngEXIFOrientation(_ bytes: [UInt8]) -> Int? {
    var orientation: Int? = nil
    forEachPNGChunk(bytes) { type, offset, length in
        guard length <= bytes.count - offset - 12, !type.elementsEqual("IEND".utf8) else { return false }
        guard type.elementsEqual("eXIf".utf8) else { return true }
        var data = bytes[(offset + 8)..<(offset + 8 + length)]
        if data.starts(with: exifHeader) { data = data.dropFirst(exifHeader.count) }  // not per spec, but seen
        orientation = tiffOrientation(data)
        return false
    }
    return orientation
}

let exifHeader: [UInt8] = Array("Exif\0\0".utf8)

/// Tag 0x0112 of the first IFD of TIFF-structured EXIF data, if present and 1...8.
func tiffOrientation(_ tiff: ArraySlice<UInt8>) -> Int? {
    let data = Array(tiff)
    guard data.count >= 8 else { return nil }
    let littleEndian: Bool
    switch (data[0], data[1]) {
    case (0x49, 0x49): littleEndian = true   // "II"
    case (0x4D, 0x4D): littleEndian = false  // "MM"
    default: return nil
    }
    func read(_ offset: Int, _ size: Int) -> Int? {
        guard offset >= 0, offset + size <= data.count else { return nil }
        let field = data[offset..<offset + size]
        return (littleEndian ? field.reversed() : Array(field)).reduce(0) { $0 << 8 | Int($1) }
    }
    guard read(2, 2) == 42, let ifd = read(4, 4), let entries = read(ifd, 2) else { return nil }
    for entry in 0..<entries {
        let at = ifd + 2 + 12 * entry
        guard let tag = read(at, 2), let type = read(at + 2, 2) else { return nil }
        guard tag == 0x0112 else { continue }
        let value = type == 3 ? read(at + 8, 2) : type == 4 ? read(at + 8, 4) : nil  // SHORT or LONG
        return value.flatMap { (1...8).contains($0) ? $0 : nil }
    }
    return nil
}
