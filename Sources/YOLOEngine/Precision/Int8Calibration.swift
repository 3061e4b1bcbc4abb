// An INT8 calibration table: per convolution, the range its input is clipped to when quantized
// (scale and zero point follow: Int8Quantization), with how it was made. Written by
// `yolo calibrate` (Calibrator.swift), read by models with `ModelOptions(precision: .int8)`. A small
// versioned text file:
//
//   yolo-swift int8 1
//   cfg 3f0c5e9a1b2d4c6e
//   weights 9a0b1c2d3e4f5a6b
//   method percentile 99.99
//   images 9
//   layer 0 min 0 max 9.99511719e-01 effect 1.21e-02 fp32
//   layer 2 min -2.62817955e+00 max 5.80167847e+01 effect 4.60e-03 a10
//   rounding 2 0 4096 VVUAAQ...
//
// The cfg line is the fingerprint of the cfg the table was made for (its sections, keys and
// values): a table made for another cfg is refused, as is anything that does not parse. The
// weights line (optional: tables made before it, and by the library without it, lack it) is the
// fingerprint of the weights file's bytes: with it, other weights for the same cfg are refused.
// Lines may end with LF, CRLF or CR, and a UTF-8 byte-order mark may start the file. `effect`
// is what running that convolution alone in INT8 did to the detections' confidences (mean
// absolute change where the FP32 confidence exceeds 0.05) on the calibration images; `fp32`
// marks a convolution whose effect was too large: it stays in FP32, as does one without a line.
// (Delete `fp32` to let it run in INT8 anyway.) `a10` marks a convolution whose input is
// quantized to 10 bits (0...1023) instead of 8 where it runs as INT8 Winograd F(2x2), whose int16
// transform holds them (the planner then offers no other INT8 form for it where the level has that
// form; elsewhere, e.g. `--conv im2col`, it runs INT8 im2col on 8 bits of the same range).
// `a12` marks a 1x1 convolution whose input is quantized to 12 bits (0...4095), with 12-bit
// weights, for the pair 1x1 form (`gemm1x1-int8`, PairPointwiseConv.swift; no other INT8 form
// takes it: where the level has no pair GEMM it stays FP32).
// `rounding LAYER FIRST COUNT CODES` lines (format 2; `yolo calibrate --gptq`) give that layer's
// INT8 weights FIRST..<FIRST+COUNT another rounding than to the nearest step (Int8Rounding.swift).
import YOLOCore
import YOLOKernels

/// An INT8 calibration table: per convolution, the range its input is quantized over, its measured effect and whether it stays in FP32.
public struct Int8Calibration: Sendable, Equatable {
    /// The newest version of the table's file format, which this build reads with the first:
    /// 2 has `rounding` lines, and is written only where there are some.
    public static let formatVersion = 2
    /// Per convolution (layer index): the range its input is clipped to (min <= 0 <= max).
    public var ranges: [Int: ClosedRange<Float>]
    /// How the ranges were chosen ("minmax", "percentile 99.99").
    public var method: String
    /// How many images they were measured on.
    public var imageCount: Int
    /// The fingerprint of the cfg they were measured with.
    public var cfgFingerprint: String
    /// The fingerprint of the weights they were measured with (`weightsFingerprint(path:)`), if
    /// recorded: a model loaded with other weights refuses the table.
    public var weightsFingerprint: String?
    /// Per convolution (where measured): its effect on the confidences when it alone runs in INT8.
    public var effects: [Int: Float]
    /// The convolutions that stay in FP32 (their effect was too large).
    public var fp32Layers: Set<Int>
    /// The convolutions whose input is quantized to 10 bits where INT8 Winograd F(2x2) runs them.
    public var tenBitLayers: Set<Int>
    /// The (1x1) convolutions whose input is quantized to 12 bits for the pair 1x1 form (`a12`).
    public var twelveBitLayers: Set<Int> = []
    /// Per convolution: its INT8 weights' rounding, where it is not to the nearest step.
    public var rounding: [Int: Int8Rounding] = [:]
    /// Where the table came from (its file), for messages.
    public var source = "the INT8 calibration table"

    /// A table of `ranges` chosen by `method` over `imageCount` images of the cfg `cfgFingerprint`.
    public init(ranges: [Int: ClosedRange<Float>], method: String, imageCount: Int, cfgFingerprint: String,
                effects: [Int: Float] = [:], fp32Layers: Set<Int> = [], tenBitLayers: Set<Int> = []) {
        (self.ranges, self.method, self.imageCount, self.cfgFingerprint) = (ranges, method, imageCount, cfgFingerprint)
        (self.effects, self.fp32Layers, self.tenBitLayers) = (effects, fp32Layers, tenBitLayers)
    }

    /// The quantization of layer `index`'s input, if the table has it and lets it run in INT8.
    func quantization(ofLayer index: Int) -> Int8Quantization? {
        guard !fp32Layers.contains(index) else { return nil }
        return ranges[index].map { Int8Quantization(min: $0.lowerBound, max: $0.upperBound) }
    }

    /// The 10-bit quantization of layer `index`'s input, if the table marks it `a10` and lets it
    /// run in INT8.
    func tenBitQuantization(ofLayer index: Int) -> Int8Quantization? {
        guard !fp32Layers.contains(index), tenBitLayers.contains(index) else { return nil }
        return ranges[index].map { Int8Quantization(min: $0.lowerBound, max: $0.upperBound, levels: 1023) }
    }

    /// The 12-bit quantization of layer `index`'s input, if the table marks it `a12` and lets it
    /// run in INT8.
    func twelveBitQuantization(ofLayer index: Int) -> Int8Quantization? {
        guard !fp32Layers.contains(index), twelveBitLayers.contains(index) else { return nil }
        return ranges[index].map { Int8Quantization(min: $0.lowerBound, max: $0.upperBound, levels: Int16Pointwise.inputLevels) }
    }

    /// This table with only layer `index` in INT8 (for measuring its effect).
    func only(_ index: Int) -> Int8Calibration {
        Int8Calibration(ranges: ranges.filter { $0.key == index }, method: method, imageCount: imageCount,
                        cfgFingerprint: cfgFingerprint)
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
        var lines = ["yolo-swift int8 \(rounding.isEmpty ? 1 : Int8Calibration.formatVersion)", "cfg \(cfgFingerprint)"]
        if let weightsFingerprint { lines.append("weights \(weightsFingerprint)") }
        lines += ["method \(method)", "images \(imageCount)"]
        for (layer, range) in ranges.sorted(by: { $0.key < $1.key }) {
            var line = "layer \(layer) min \(Int8Calibration.decimal(range.lowerBound)) max \(Int8Calibration.decimal(range.upperBound))"
            if let e = effects[layer] { line += " effect \(Int8Calibration.decimal(e, digits: 3))" }
            if fp32Layers.contains(layer) { line += " fp32" }
            if tenBitLayers.contains(layer) { line += " a10" }
            if twelveBitLayers.contains(layer) { line += " a12" }
            lines.append(line)
        }
        for (layer, r) in rounding.sorted(by: { $0.key < $1.key }) { lines += r.lines(layer: layer) }
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
        let lines = textLines(text).map { $0.split(separator: " ").map(String.init) }
        guard let head = lines.first, head.count == 3, head[0] == "yolo-swift", head[1] == "int8",
              let version = Int(head[2]), (1...Int8Calibration.formatVersion).contains(version) else {
            throw bad(1, "expected 'yolo-swift int8 N', N from 1 to \(Int8Calibration.formatVersion)")
        }
        var roundingSteps: [Int: [Int8]] = [:]
        var (ranges, method, images, cfg, weights): ([Int: ClosedRange<Float>], String?, Int?, String?, String?) = ([:], nil, nil, nil, nil)
        var (effects, fp32, tenBit, twelveBit): ([Int: Float], Set<Int>, Set<Int>, Set<Int>) = ([:], [], [], [])
        for (i, words) in lines.enumerated().dropFirst() where !words.isEmpty {
            switch words[0] {
            case "cfg" where words.count == 2 && cfg == nil: cfg = words[1]
            case "weights" where words.count == 2 && weights == nil: weights = words[1]
            case "method" where words.count >= 2 && method == nil: method = words.dropFirst().joined(separator: " ")
            case "images" where words.count == 2 && images == nil:
                guard let n = Int(words[1]), n > 0 else { throw bad(i + 1, "images must be a positive count") }
                images = n
            case "layer" where words.count >= 6 && words[2] == "min" && words[4] == "max":
                guard let layer = Int(words[1]), layer >= 0, ranges[layer] == nil else {
                    throw bad(i + 1, "'\(words[1])' is not a new layer index")
                }
                guard let lo = Float(words[3]), let hi = Float(words[5]), lo.isFinite, hi.isFinite, lo <= 0, hi >= 0, hi > lo else {
                    throw bad(i + 1, "layer \(layer): min \(words[3]) and max \(words[5]) must be finite numbers with min <= 0 <= max, min < max")
                }
                ranges[layer] = lo...hi
                var rest = words.dropFirst(6)
                if rest.first == "effect" {
                    guard rest.count >= 2, let e = Float(rest[rest.startIndex + 1]), e.isFinite, e >= 0 else {
                        throw bad(i + 1, "layer \(layer): effect must be a finite number >= 0")
                    }
                    effects[layer] = e
                    rest = rest.dropFirst(2)
                }
                if rest.first == "fp32" { fp32.insert(layer); rest = rest.dropFirst() }
                if rest.first == "a10" { tenBit.insert(layer); rest = rest.dropFirst() }
                else if rest.first == "a12" { twelveBit.insert(layer); rest = rest.dropFirst() }
                guard rest.isEmpty else { throw bad(i + 1, "layer \(layer): unexpected '\(rest.joined(separator: " "))'") }
            case "rounding" where words.count == 5 && version >= 2:
                guard let layer = Int(words[1]), layer >= 0, let first = Int(words[2]), let count = Int(words[3]),
                      count > 0, count <= Int8Rounding.perLine else {
                    throw bad(i + 1, "rounding: expected LAYER FIRST COUNT CODES, COUNT from 1 to \(Int8Rounding.perLine)")
                }
                guard first == roundingSteps[layer]?.count ?? 0 else {
                    throw bad(i + 1, "rounding \(layer): starts at weight \(first); the lines before end at \(roundingSteps[layer]?.count ?? 0)")
                }
                switch Int8Rounding.steps(codes: words[4], count: count) {
                case .success(let steps): roundingSteps[layer, default: []] += steps
                case .failure(let e): throw bad(i + 1, "rounding \(layer): \(e.reason)")
                }
            default:
                throw bad(i + 1, "unexpected '\(words.joined(separator: " "))'")
            }
        }
        guard let cfg, let method, let images else { throw bad(lines.count, "the cfg, method and images lines are required") }
        self.init(ranges: ranges, method: method, imageCount: images, cfgFingerprint: cfg, effects: effects, fp32Layers: fp32,
                  tenBitLayers: tenBit)
        weightsFingerprint = weights
        twelveBitLayers = twelveBit
        rounding = roundingSteps.mapValues { Int8Rounding(steps: $0) }
        source = name
    }

    /// Reads a table file.
    public init(path: String) throws(YOLOError) {
        let bytes: [UInt8]
        switch readRegularFile(path, maxBytes: 16 << 20) {
        case .success(let b): bytes = b
        case .failure(let failure): throw .file(path: path, reason: failure.reason)
        }
        try self.init(text: String(decoding: bytes, as: UTF8.self), name: path)
    }

    /// Checks the table against the network it is for: made for its cfg, naming only its
    /// convolutions.
    func check(fingerprint: String, convolutions: Set<Int>, cfg: String) throws(YOLOError) {
        guard cfgFingerprint == fingerprint else {
            throw .invalidArgument("\(source): this INT8 calibration table was made for another cfg (fingerprint \(cfgFingerprint), \(cfg)'s is \(fingerprint)); make one for it with 'yolo calibrate'")
        }
        if let layer = ranges.keys.sorted().first(where: { !convolutions.contains($0) }) {
            throw .invalidArgument("\(source): layer \(layer) is not a convolution of \(cfg)")
        }
        if let layer = rounding.keys.sorted().first(where: { ranges[$0] == nil }) {
            throw .invalidArgument("\(source): layer \(layer) has a rounding but no range")
        }
    }

    /// Checks the table against the weights the model loads, where it records its own.
    func check(weights: WeightsReader.Origin, name: String) throws(YOLOError) {
        guard let weightsFingerprint else { return }
        let actual: String
        switch weights {
        case .bytes(let bytes): actual = bytes.withUnsafeBytes { Int8Calibration.weightsFingerprint(of: $0) }
        case .file(let path): actual = try Int8Calibration.weightsFingerprint(path: path)
        }
        guard actual == weightsFingerprint else {
            throw .invalidArgument("\(source): this INT8 calibration table was made for other weights (fingerprint \(weightsFingerprint), \(name)'s is \(actual)); make one for them with 'yolo calibrate'")
        }
    }

    /// The fingerprint of a weights file (what `weightsFingerprint` records): a 64-bit FNV-1a
    /// hash of its bytes, 8 at a time, and their count.
    public static func weightsFingerprint(path: String) throws(YOLOError) -> String {
        let fd: Int32, size: Int
        switch openRegularFile(path, maxBytes: FileLimits.weightsBytes) {
        case .success(let opened): (fd, size) = opened
        case .failure(let failure): throw .file(path: path, reason: failure.reason)
        }
        defer { close(fd) }
        var hash = WordHash()
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 8)
        defer { chunk.deallocate() }
        var total = 0
        while total < size {
            switch readUpTo(fd, chunk.baseAddress!, count: min(chunk.count, size - total)) {
            case .success(0): throw .file(path: path, reason: "ended early (it shrank while it was read)")
            case .success(let n): hash.add(UnsafeRawBufferPointer(rebasing: chunk[..<n])); total += n
            case .failure(let failure): throw .file(path: path, reason: failure.reason)
            }
        }
        return hash.finish(count: total)
    }

    /// The fingerprint of a weights file's bytes in memory (see `weightsFingerprint(path:)`).
    public static func weightsFingerprint(of bytes: UnsafeRawBufferPointer) -> String {
        var hash = WordHash()
        hash.add(bytes)
        return hash.finish(count: bytes.count)
    }

    /// `digits` significant digits ("1.23456789e-02"; 9, the default, is enough for a Float to
    /// read back exactly). By hand: Embedded Swift prints no floating-point numbers.
    static func decimal(_ v: Float, digits: Int = 9) -> String {
        guard v != 0 else { return "0" }
        var x = Double(v.magnitude), e = 0
        while x >= 10 { x /= 10; e += 1 }
        while x < 1 { x *= 10; e -= 1 }
        var power = 1
        for _ in 1..<digits { power *= 10 }
        var m = Int((x * Double(power)).rounded())
        if m >= 10 * power { m /= 10; e += 1 }
        let digits = String(m)
        let exponent = e.magnitude < 10 ? "0\(e.magnitude)" : "\(e.magnitude)"
        return (v < 0 ? "-" : "") + digits.prefix(1) + "." + digits.dropFirst() + "e" + (e < 0 ? "-" : "+") + exponent
    }
}

/// FNV-1a over little-endian 64-bit words (a trailing partial word byte by byte): fast enough
/// to hash a weights file at each load. Every chunk given to `add` but the last must be a
/// multiple of 8 bytes long, so that a file read in chunks hashes as its bytes in one piece.
struct WordHash {
    private var value: UInt64 = 0xcbf2_9ce4_8422_2325
    private static let prime: UInt64 = 0x0000_0100_0000_01B3

    mutating func add(_ bytes: UnsafeRawBufferPointer) {
        let words = bytes.count / 8
        for i in 0..<words {
            value = (value ^ UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 8 * i, as: UInt64.self))) &* Self.prime
        }
        for i in (8 * words)..<bytes.count { value = (value ^ UInt64(bytes[i])) &* Self.prime }
    }

    mutating func finish(count: Int) -> String {
        value = (value ^ UInt64(count)) &* Self.prime
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: (0..<16).map { digits[Int((value >> (60 - 4 * UInt64($0))) & 0xF)] }, as: UTF8.self)
    }
}
