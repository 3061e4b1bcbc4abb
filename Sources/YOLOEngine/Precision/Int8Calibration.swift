// An INT8 calibration table: per convolution, the range its input is clipped to when quantized
// (scale and zero point follow: Int8Quantization), with how it was made. Written by
// `yolo calibrate` (Calibrator.swift), read by models with `ModelOptions(precision: .int8)`. A small
// versioned text file:
//
//   yolo-swift int8 1
//   cfg 3f0c5e9a1b2d4c6e
//   method percentile 99.99
//   images 9
//   layer 0 min 0.00000000e+00 max 1.00000000e+00
//   layer 2 min -1.53278470e-01 max 6.20314121e+00
//
// The cfg line is the fingerprint of the cfg the table was made for (its sections, keys and
// values): a table made for another cfg is refused, as is anything that does not parse. A
// convolution without a line stays in FP32.
import YOLOCore
import YOLOKernels

public struct Int8Calibration: Sendable, Equatable {
    public static let formatVersion = 1
    /// Per convolution (layer index): the range its input is clipped to (min <= 0 <= max).
    public var ranges: [Int: ClosedRange<Float>]
    /// How the ranges were chosen ("minmax", "percentile 99.99").
    public var method: String
    /// How many images they were measured on.
    public var imageCount: Int
    /// The fingerprint of the cfg they were measured with.
    public var cfgFingerprint: String

    public init(ranges: [Int: ClosedRange<Float>], method: String, imageCount: Int, cfgFingerprint: String) {
        (self.ranges, self.method, self.imageCount, self.cfgFingerprint) = (ranges, method, imageCount, cfgFingerprint)
    }

    /// The quantization of layer `index`'s input, if the table has it.
    func quantization(ofLayer index: Int) -> Int8Quantization? {
        ranges[index].map { Int8Quantization(min: $0.lowerBound, max: $0.upperBound) }
    }

    /// The table next to a weights file: its path with the extension replaced by `.int8`
    /// (weights/yolov3-tiny.weights -> weights/yolov3-tiny.int8).
    public static func defaultPath(weights: String) -> String {
        let slash = weights.lastIndex(of: "/")
        var stem = Substring(weights)
        if let dot = weights.lastIndex(of: "."), slash.map({ dot > $0 }) ?? true, dot != weights.startIndex { stem = weights[..<dot] }
        return stem + ".int8"
    }

    /// The table's text.
    public var text: String {
        var lines = ["yolo-swift int8 \(Int8Calibration.formatVersion)", "cfg \(cfgFingerprint)", "method \(method)",
                     "images \(imageCount)"]
        for (layer, range) in ranges.sorted(by: { $0.key < $1.key }) {
            lines.append("layer \(layer) min \(Int8Calibration.decimal(range.lowerBound)) max \(Int8Calibration.decimal(range.upperBound))")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A hash of the table's text (for plan cache keys).
    var fingerprint: String {
        var h = FNV64()
        h.add(text)
        return h.hex
    }

    /// Parses a table's text; `name` names it in errors.
    public init(text: String, name: String) throws(YOLOError) {
        func bad(_ line: Int, _ message: String) -> YOLOError {
            .invalidArgument("\(name): line \(line): \(message) (not an INT8 calibration table of format \(Int8Calibration.formatVersion); make one with 'yolo calibrate')")
        }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.split(separator: " ").map(String.init) }
        guard lines.first == ["yolo-swift", "int8", "\(Int8Calibration.formatVersion)"] else {
            throw bad(1, "expected 'yolo-swift int8 \(Int8Calibration.formatVersion)'")
        }
        var (ranges, method, images, cfg): ([Int: ClosedRange<Float>], String?, Int?, String?) = ([:], nil, nil, nil)
        for (i, words) in lines.enumerated().dropFirst() where !words.isEmpty {
            switch words[0] {
            case "cfg" where words.count == 2 && cfg == nil: cfg = words[1]
            case "method" where words.count >= 2 && method == nil: method = words.dropFirst().joined(separator: " ")
            case "images" where words.count == 2 && images == nil:
                guard let n = Int(words[1]), n > 0 else { throw bad(i + 1, "images must be a positive count") }
                images = n
            case "layer" where words.count == 6 && words[2] == "min" && words[4] == "max":
                guard let layer = Int(words[1]), layer >= 0, ranges[layer] == nil else {
                    throw bad(i + 1, "'\(words[1])' is not a new layer index")
                }
                guard let lo = Float(words[3]), let hi = Float(words[5]), lo.isFinite, hi.isFinite, lo <= 0, hi >= 0, hi > lo else {
                    throw bad(i + 1, "layer \(layer): min \(words[3]) and max \(words[5]) must be finite numbers with min <= 0 <= max, min < max")
                }
                ranges[layer] = lo...hi
            default:
                throw bad(i + 1, "unexpected '\(words.joined(separator: " "))'")
            }
        }
        guard let cfg, let method, let images else { throw bad(lines.count, "the cfg, method and images lines are required") }
        self.init(ranges: ranges, method: method, imageCount: images, cfgFingerprint: cfg)
    }

    /// Reads a table file.
    public init(path: String) throws(YOLOError) {
        let bytes: [UInt8]
        switch readRegularFile(path, maxBytes: 1 << 20) {
        case .success(let b): bytes = b
        case .failure(let failure): throw .file(path: path, reason: failure.reason)
        }
        try self.init(text: String(decoding: bytes, as: UTF8.self), name: path)
    }

    /// Checks the table against the network it is for: made for its cfg, naming only its
    /// convolutions.
    func check(fingerprint: String, convolutions: Set<Int>, name: String) throws(YOLOError) {
        guard cfgFingerprint == fingerprint else {
            throw .invalidArgument("\(name): this INT8 calibration table was made for another cfg (fingerprint \(cfgFingerprint), this cfg's is \(fingerprint)); make one for it with 'yolo calibrate'")
        }
        if let layer = ranges.keys.sorted().first(where: { !convolutions.contains($0) }) {
            throw .invalidArgument("\(name): layer \(layer) of the INT8 calibration table is not a convolution of this network")
        }
    }

    /// 9 significant digits ("1.23456789e-02"): enough for a Float to read back exactly (no
    /// Float printing in Embedded Swift, so by hand).
    static func decimal(_ v: Float) -> String {
        guard v != 0 else { return "0" }
        var x = Double(v.magnitude), e = 0
        while x >= 10 { x /= 10; e += 1 }
        while x < 1 { x *= 10; e -= 1 }
        var m = Int((x * 1e8).rounded())
        if m >= 1_000_000_000 { m /= 10; e += 1 }
        let digits = String(m)
        let exponent = e.magnitude < 10 ? "0\(e.magnitude)" : "\(e.magnitude)"
        return (v < 0 ? "-" : "") + digits.prefix(1) + "." + digits.dropFirst() + "e" + (e < 0 ? "-" : "+") + exponent
    }
}
