// libFuzzer harness: PNG and JPEG decoding (libpng, libjpeg-turbo and our shims), EXIF
// orientation parsing and applying. Input: an image file's bytes.
@testable import YOLOImage

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzImage(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = jpegEXIFOrientation(bytes)
    _ = pngEXIFOrientation(bytes)
    // A small pixel cap keeps each run fast; the cap itself is tested by the unit tests.
    if let image = try? decodeImage(bytes, name: "fuzz", applyEXIFOrientation: true, maxPixels: 1 << 18) {
        if image.width <= 0 || image.height <= 0 || image.pixels.count != image.width * image.height * 3 {
            fatalError("decoded image \(image.width) x \(image.height) with \(image.pixels.count) bytes")
        }
    }
    return 0
}
