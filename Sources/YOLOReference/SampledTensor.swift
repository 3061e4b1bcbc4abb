// The `.samples` fixture format (scripts/make-fixtures.py): Darknet's output of one layer in
// a few kilobytes. Parsed from bytes (each side reads the file its own way: Foundation in the
// XCTest suites, the C library in the aarch64 harness) and compared with a computed tensor.
//
//   # shape C H W
//   INDEX VALUE          (a value of the CHW tensor at a sampled flat index; many lines)
//   sum CHANNEL VALUE    (the channel's float64 sum; one line per channel, in order)

/// A bad fixture (`.samples`, detections): what is wrong and on which line.
public struct FixtureFormatError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The lines of a text fixture, each split into its tokens (separated by spaces, tabs or a
/// carriage return), with its 1-based line number.
func fixtureLines(_ bytes: [UInt8]) -> [(number: Int, tokens: [String])] {
    var lines: [(number: Int, tokens: [String])] = []
    var tokens: [String] = []
    var token: [UInt8] = []
    func endToken() {
        if !token.isEmpty { tokens.append(String(decoding: token, as: UTF8.self)); token = [] }
    }
    for b in bytes {
        if b == 32 || b == 9 || b == 13 || b == 10 { endToken() } else { token.append(b) }
        if b == 10 { lines.append((lines.count + 1, tokens)); tokens = [] }
    }
    endToken()
    if !tokens.isEmpty { lines.append((lines.count + 1, tokens)) }
    return lines
}

/// Darknet's tensor, sampled: its shape, values at sampled indices and every channel's sum.
public struct SampledTensor: Sendable {
    public var channels = 0, height = 0, width = 0
    public var samples: [(index: Int, value: Float)] = []
    public var channelSums: [Double] = []

    public var count: Int { channels * height * width }

    public init(parsing bytes: [UInt8]) throws(FixtureFormatError) {
        for line in fixtureLines(bytes) { try parseLine(line.tokens, line: line.number) }
        guard count > 0 else { throw FixtureFormatError("no '# shape C H W' header") }
        guard channelSums.count == channels else {
            throw FixtureFormatError("\(channelSums.count) channel sums for \(channels) channels")
        }
        guard !samples.isEmpty else { throw FixtureFormatError("no samples") }
    }

    private mutating func parseLine(_ p: [String], line: Int) throws(FixtureFormatError) {
        if p.isEmpty { return }
        if p[0] == "#" {
            guard p.count == 5, p[1] == "shape", let c = Int(p[2]), let h = Int(p[3]), let w = Int(p[4]),
                  c > 0, h > 0, w > 0, channels == 0 else {
                throw FixtureFormatError("line \(line): not a single '# shape C H W' header with positive sizes")
            }
            (channels, height, width) = (c, h, w)
        } else if p[0] == "sum" {
            guard p.count == 3, Int(p[1]) == channelSums.count, let v = Double(p[2]) else {
                throw FixtureFormatError("line \(line): not 'sum \(channelSums.count) VALUE'")
            }
            channelSums.append(v)
        } else {
            guard p.count == 2, let i = Int(p[0]), let v = Float(p[1]) else {
                throw FixtureFormatError("line \(line): not 'INDEX VALUE', 'sum CHANNEL VALUE' or '# shape C H W'")
            }
            guard count > 0 else { throw FixtureFormatError("line \(line): a sample before the '# shape' header") }
            guard i >= 0 && i < count else { throw FixtureFormatError("line \(line): index \(i) outside 0..<\(count)") }
            samples.append((i, v))
        }
    }

    /// The max |difference| over the samples, and the max |channel sum difference| divided by
    /// the plane size (a channel-mean difference). Infinity for both when `values` does not
    /// hold C x H x W floats, and for a NaN anywhere compared.
    public func compare(_ values: UnsafeBufferPointer<Float>) -> (maxAbs: Float, maxChannelMean: Double) {
        guard values.count == count else { return (.infinity, .infinity) }
        var maxAbs: Float = 0
        for (i, v) in samples {
            let d = values[i] - v
            maxAbs = max(maxAbs, d.isNaN ? .infinity : (d < 0 ? -d : d))
        }
        let plane = height * width
        var maxMean = 0.0
        for c in 0..<channels {
            var s = 0.0
            for i in 0..<plane { s += Double(values[c * plane + i]) }
            let d = (s - channelSums[c]) / Double(plane)
            maxMean = max(maxMean, d.isNaN ? .infinity : (d < 0 ? -d : d))
        }
        return (maxAbs, maxMean)
    }
}
