// INT8 calibration: the FP32 network runs on sample inputs, and per convolution the values of its
// input are recorded (their range, then a histogram over it); the range each input is clipped to
// when quantized follows from the method. The result is an `Int8Calibration` table.
import YOLOCore

/// How a convolution input's clipping range is chosen from the values seen.
public enum CalibrationMethod: Sendable, Equatable, CustomStringConvertible {
    /// The smallest and largest value seen.
    case minMax
    /// The values at the given percentile from each end (e.g. 99.99: the top and bottom 0.01% of
    /// the values are clipped), from a histogram of 2048 bins over the range seen.
    case percentile(Double)

    public var description: String {
        switch self {
        case .minMax: return "minmax"
        case .percentile(let p):
            // (By hand: Embedded Swift prints no floating-point numbers.)
            let tenThousandths = Int((p * 10_000).rounded())
            var fraction = "\(tenThousandths % 10_000)"
            while fraction.count < 4 { fraction = "0" + fraction }
            while fraction.hasSuffix("0") { fraction.removeLast() }
            return "percentile \(tenThousandths / 10_000)" + (fraction.isEmpty ? "" : "." + fraction)
        }
    }
}

public enum Int8Calibrator {
    static let bins = 2048

    /// Runs `model` (FP32) on `count` inputs, written by `fill(i, input)` into the network's input
    /// buffer (each is asked for once per pass: once for min-max, twice for a percentile), and
    /// returns the table of every convolution's input range.
    public static func calibrate(model: Model, inputs count: Int, method: CalibrationMethod, threads: Int = 1,
                                 fill: (Int, UnsafeMutableBufferPointer<Float>) throws(YOLOError) -> Void)
        throws(YOLOError) -> Int8Calibration {
        guard model.options.precision == .fp32 else {
            throw .invalidArgument("calibration runs the FP32 network: load the model with precision fp32")
        }
        guard count > 0 else { throw .invalidArgument("calibration needs at least one input") }
        if case .percentile(let p) = method, !(p > 50 && p <= 100) {
            throw .invalidArgument("calibration percentile \(method): it must lie in (50, 100]")
        }
        let session = try Session(model: model, threads: threads, keepsAllOutputs: true)
        let convs = model.impl.compactMap { $0.convolution }
        // The tensor each convolution reads: a layer's output, or the network input (-1).
        func observe(_ body: (Int, UnsafeBufferPointer<Float>) -> Void) throws(YOLOError) {
            for (i, conv) in convs.enumerated() {
                let source = conv.sources[0]
                body(i, source < 0 ? UnsafeBufferPointer(session.input) : try session.output(ofLayer: source))
            }
        }
        var lows = [Float](repeating: 0, count: convs.count), highs = lows
        for n in 0..<count {
            try fill(n, session.input)
            session.forward()
            try observe { i, values in
                var (lo, hi) = (lows[i], highs[i])
                for v in values where v.isFinite { lo = min(lo, v); hi = max(hi, v) }
                (lows[i], highs[i]) = (lo, hi)
            }
        }
        if case .percentile(let p) = method {
            var histograms = [[Int]](repeating: [Int](repeating: 0, count: bins), count: convs.count)
            for n in 0..<count {
                try fill(n, session.input)
                session.forward()
                try observe { i, values in
                    let (lo, width) = (lows[i], (highs[i] - lows[i]) / Float(bins))
                    guard width > 0 else { return }
                    histograms[i].withUnsafeMutableBufferPointer { h in
                        for v in values where v.isFinite { h[min(bins - 1, max(0, Int((v - lo) / width)))] += 1 }
                    }
                }
            }
            for i in convs.indices where highs[i] > lows[i] {
                (lows[i], highs[i]) = clip(histograms[i], low: lows[i], high: highs[i], percentile: p)
            }
        }
        var ranges: [Int: ClosedRange<Float>] = [:]
        for (i, conv) in convs.enumerated() {
            let lo = min(lows[i], 0), hi = max(highs[i], 0)
            ranges[conv.index] = lo...(hi > lo ? hi : lo + 1)
        }
        return Int8Calibration(ranges: ranges, method: method.description, imageCount: count, cfgFingerprint: model.cfgFingerprint)
    }

    /// The range that leaves out (100 - percentile)% of a histogram's values at each end (bin
    /// edges: the lower edge of the low bin, the upper edge of the high one).
    static func clip(_ histogram: [Int], low: Float, high: Float, percentile: Double) -> (Float, Float) {
        let total = histogram.reduce(0, +)
        let outside = Int((Double(total) * (100 - percentile) / 100).rounded(.down))
        let width = (high - low) / Float(histogram.count)
        var below = 0, first = 0
        while first < histogram.count - 1 && below + histogram[first] <= outside { below += histogram[first]; first += 1 }
        var above = 0, last = histogram.count - 1
        while last > first && above + histogram[last] <= outside { above += histogram[last]; last -= 1 }
        return (first == 0 ? low : low + Float(first) * width, last == histogram.count - 1 ? high : low + Float(last + 1) * width)
    }
}
