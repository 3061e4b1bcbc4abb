// Weights rounded another way than to the nearest INT8 step (GPTQ, `yolo calibrate --gptq`): per
// convolution, each weight's step relative to round-to-nearest (-1, 0 or +1), stored in the
// calibration table and applied when the INT8 forms are prepared. docs/int8-rounding.md has why and
// what it measured; docs/precision.md the table's lines.
import YOLOKernels

/// A convolution's INT8 weights as GPTQ rounded them: per weight (filters x columns, the folded
/// weights' order), the step added to its round-to-nearest integer.
public struct Int8Rounding: Sendable, Equatable {
    /// -1, 0 or +1 per weight.
    public let steps: [Int8]

    /// `steps` must each be -1, 0 or +1.
    public init(steps: [Int8]) {
        precondition(steps.allSatisfy { (-1...1).contains($0) }, "Int8Rounding: a step outside -1...1")
        self.steps = steps
    }

    /// Weights per line of the table (1024 bytes of codes).
    static let perLine = 4096

    /// The table's `rounding LAYER FIRST COUNT CODES` lines: 2-bit codes (0: nearest, 1: one step
    /// up, 2: one step down), four to a byte from the low bits, in base64.
    func lines(layer: Int) -> [String] {
        stride(from: 0, to: steps.count, by: Int8Rounding.perLine).map { first in
            let part = steps[first..<min(steps.count, first + Int8Rounding.perLine)]
            var bytes = [UInt8](repeating: 0, count: (part.count + 3) / 4)
            for (i, s) in part.enumerated() { bytes[i / 4] |= UInt8(s == 0 ? 0 : s > 0 ? 1 : 2) << UInt8(2 * (i % 4)) }
            return "rounding \(layer) \(first) \(part.count) \(Base64.encode(bytes))"
        }
    }

    /// The steps of one line's `count` codes, or a reason they are not valid.
    static func steps(codes text: String, count: Int) -> Result<[Int8], Int8RoundingError> {
        guard let bytes = Base64.decode(text) else { return .failure(Int8RoundingError("its codes are not base64")) }
        guard bytes.count == (count + 3) / 4 else {
            return .failure(Int8RoundingError("\(bytes.count) bytes of codes for \(count) weights (expected \((count + 3) / 4))"))
        }
        var steps: [Int8] = []
        steps.reserveCapacity(count)
        for i in 0..<4 * bytes.count {
            let code = (bytes[i / 4] >> UInt8(2 * (i % 4))) & 3
            if i >= count {
                guard code == 0 else { return .failure(Int8RoundingError("nonzero bits after its last code")) }
                continue
            }
            guard code != 3 else { return .failure(Int8RoundingError("code 3 at weight \(i) (0, 1 and 2 are steps 0, +1, -1)")) }
            steps.append(code == 0 ? 0 : code == 1 ? 1 : -1)
        }
        return .success(steps)
    }

    /// `weights` (filters x columns) replaced by their rounded INT8 values times each filter's
    /// scale (max |w| / 127, as the INT8 forms derive it), so that the forms' own round-to-nearest
    /// gives these integers. Each filter must keep a weight at +-127 (its scale), which GPTQ keeps
    /// by never moving a filter's largest weight.
    func apply(to weights: UnsafePointer<Float>, filters: Int, columns: Int, layer: Int) throws(YOLOError) -> [Float] {
        guard steps.count == filters * columns else {
            throw .invalidArgument("layer \(layer): the calibration table rounds \(steps.count) weights; the layer has \(filters * columns)")
        }
        var out = [Float](repeating: 0, count: filters * columns)
        for f in 0..<filters {
            let row = weights + f * columns
            let scale = int8WeightScale(row, count: columns)
            var top: Float = 0
            for i in 0..<columns {
                let q = max(-127, min(127, int8Weight(row[i], scale: scale) + Float(steps[f * columns + i])))
                out[f * columns + i] = q * scale
                top = max(top, abs(q))
            }
            guard top == 127 || scale == 1 && top == 0 else {
                throw .invalidArgument("layer \(layer): the calibration table's rounding moves filter \(f)'s largest weight (it would change the filter's scale)")
            }
        }
        return out
    }
}

/// Why a `rounding` line of a calibration table is not valid.
struct Int8RoundingError: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

/// Base64 (RFC 4648, with padding) by hand: the engine builds without Foundation.
enum Base64 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        for start in stride(from: 0, to: bytes.count, by: 3) {
            let n = min(3, bytes.count - start)
            var word = 0
            for i in 0..<3 { word = word << 8 | (i < n ? Int(bytes[start + i]) : 0) }
            for i in 0..<4 { out.append(i <= n ? alphabet[(word >> (18 - 6 * i)) & 63] : UInt8(ascii: "=")) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of padded base64 text, or nil where it is not that.
    static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 4 == 0 else { return nil }
        var value = [Int](repeating: -1, count: 256)
        for (i, c) in alphabet.enumerated() { value[Int(c)] = i }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 4 * 3)
        for start in stride(from: 0, to: chars.count, by: 4) {
            let last = start + 4 == chars.count
            var pad = 0, word = 0
            for i in 0..<4 {
                let c = chars[start + i]
                if c == UInt8(ascii: "=") {
                    guard last, i >= 2 else { return nil }
                    pad += 1
                    word <<= 6
                } else {
                    guard pad == 0, value[Int(c)] >= 0 else { return nil }
                    word = word << 6 | value[Int(c)]
                }
            }
            for i in 0..<(3 - pad) { out.append(UInt8((word >> (16 - 8 * i)) & 255)) }
            // Canonical form only: the bits a padded group leaves over must be zero.
            if pad > 0 && word & ((1 << (8 * pad)) - 1) != 0 { return nil }
        }
        return out
    }
}
