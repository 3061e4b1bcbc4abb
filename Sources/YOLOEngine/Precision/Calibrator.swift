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
    /// The range whose 8-bit quantization has the least mean squared error over the values seen
    /// (rounding error inside the range, clipping error outside), searched on a histogram.
    case mse

    public var description: String {
        switch self {
        case .minMax: return "minmax"
        case .mse: return "mse"
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

/// Where a calibration is, after each forward pass (for a progress display).
public struct CalibrationProgress: Sendable {
    /// What a calibration's forward passes are measuring.
    public enum Step: Sendable, Equatable {
        /// Each convolution input's range (the first pass: each input's first run).
        case ranges
        /// The histograms of the values over those ranges (not with `.minMax`).
        case histograms
        /// The FP32 network's confidences, which the effects are measured against.
        case reference
        /// This convolution alone in INT8.
        case effect(layer: Int)
    }
    /// What is being measured now.
    public var step: Step
    /// The input just run (0-based) and how many there are.
    public var input: Int
    /// How many inputs each step runs.
    public var inputs: Int
    /// Forward passes done, and in all.
    public var forwards: Int
    /// Forward passes of the whole calibration.
    public var totalForwards: Int
    /// After `.effect`'s last input: that convolution's effect.
    public var effect: Float?
}

/// Makes an `Int8Calibration` by running a model on calibration images: each convolution's input range, and each convolution's effect on the confidences in INT8.
public enum Int8Calibrator {
    static let bins = 2048
    /// The largest effect a convolution may have and still run in INT8, by default.
    public static let defaultMaxEffect: Float = 0.02
    /// Confidences above this count for the effect.
    static let effectThreshold: Float = 0.05

    /// Calibrates the network `load` makes (given the options to use) on `count` inputs, which
    /// `fill(i, input)` writes into the network's input buffer (several times each; `progress`
    /// hears after each forward pass):
    /// 1. the FP32 network runs on every input, and per convolution the values of its input are
    ///    recorded (range, then a histogram); `method` picks each one's clipping range;
    /// 2. with `maxEffect`, each convolution alone runs in INT8 on every input, and its effect is
    ///    the mean absolute change of the detections' confidences (objectness x class
    ///    probability) where the FP32 confidence is over 0.05; convolutions whose effect is over
    ///    `maxEffect` are marked to stay FP32;
    /// 3. the convolutions `fp32` are marked to stay FP32 too (nil: the first one, which reads the
    ///    image: measured alone on 5 photos (Darknet's dog and person, scikit-image's astronaut,
    ///    chelsea and coffee) its effect, 0.013, was the largest with layer 13's (0.014; the
    ///    others 0.001-0.006); in FP32 it costs a small part of a forward: docs/performance.md).
    /// The convolutions `twelveBit` are marked `a12` (1x1 layers for the pair form), their range
    /// the values' smallest and largest whatever `method` (clipping their inputs cost the heads'
    /// confidences: docs/int8-eval.md), and their effect does not hold them in FP32.
    public static func calibrate(inputs count: Int, method: CalibrationMethod, threads: Int = 1,
                                 maxEffect: Float? = defaultMaxEffect, fp32: Set<Int>? = nil, twelveBit: Set<Int> = [],
                                 load: (ModelOptions) throws(YOLOError) -> Model,
                                 fill: (Int, UnsafeMutableBufferPointer<Float>) throws(YOLOError) -> Void,
                                 progress: (CalibrationProgress) -> Void = { _ in })
        throws(YOLOError) -> Int8Calibration {
        guard count > 0 else { throw .invalidArgument("calibration needs at least one input") }
        if case .percentile(let p) = method, !(p > 50 && p <= 100) {
            throw .invalidArgument("calibration percentile \(method): it must lie in (50, 100]")
        }
        let model = try load(ModelOptions())
        guard model.options.precision == .fp32 else {
            throw .invalidArgument("calibration runs the FP32 network: load the model with precision fp32")
        }
        let convolutions = model.impl.filter { $0.convolution != nil }.count
        let passes = (method == .minMax ? 1 : 2) + (maxEffect == nil ? 0 : 1 + convolutions)
        var done = 0
        func tick(_ step: CalibrationProgress.Step, _ input: Int, effect: Float? = nil) {
            done += 1
            progress(CalibrationProgress(step: step, input: input, inputs: count, forwards: done, totalForwards: passes * count,
                                         effect: effect))
        }
        var table = try ranges(model, inputs: count, method: method, threads: threads, unclipped: twelveBit, fill: fill,
                               tick: { tick($0, $1) })
        table.twelveBitLayers = twelveBit.intersection(table.ranges.keys)
        let first = model.impl.first { $0.convolution != nil }.map { Set([$0.index]) } ?? []
        table.fp32Layers = (fp32 ?? first).intersection(table.ranges.keys)
        guard let maxEffect else { return table }
        let session = try Session(model: model, threads: threads)
        var reference: [[(index: Int, confidence: Float)]] = []
        for n in 0..<count {
            try fill(n, session.input)
            session.forward()
            reference.append(confidences(session.heads).enumerated().filter { $0.element > effectThreshold }
                .map { ($0.offset, $0.element) })
            tick(.reference, n)
        }
        for layer in table.ranges.keys.sorted() {
            var options = ModelOptions(precision: .int8, calibration: table.only(layer))
            options.algorithms = [:]
            options.int8Fallback = .fp32        // the others FP32, as the table's effects are defined
            let single = try Session(model: try load(options), threads: threads)
            var (sum, seen) = (0.0, 0)
            for n in 0..<count {
                try fill(n, single.input)
                single.forward()
                let got = confidences(single.heads)
                for (i, c) in reference[n] { sum += Double(abs(got[i] - c)); seen += 1 }
                if n < count - 1 { tick(.effect(layer: layer), n) }
            }
            let effect = seen > 0 ? Float(sum / Double(seen)) : 0
            tick(.effect(layer: layer), count - 1, effect: effect)
            table.effects[layer] = effect
            if effect > maxEffect && !twelveBit.contains(layer) { table.fp32Layers.insert(layer) }
        }
        return table
    }

    /// Every (anchor, cell, class) confidence of the heads: objectness x class probability.
    static func confidences(_ heads: [HeadView]) -> [Float] {
        var out: [Float] = []
        for h in heads {
            let plane = h.gridWidth * h.gridHeight, entries = 5 + h.classes
            for a in 0..<h.mask.count {
                let base = a * entries * plane
                for c in 0..<h.classes {
                    for i in 0..<plane { out.append(h.activated[base + 4 * plane + i] * h.activated[base + (5 + c) * plane + i]) }
                }
            }
        }
        return out
    }

    /// Step 1: each convolution input's range under `method` (those of `unclipped`: min-max).
    static func ranges(_ model: Model, inputs count: Int, method: CalibrationMethod, threads: Int, unclipped: Set<Int> = [],
                       fill: (Int, UnsafeMutableBufferPointer<Float>) throws(YOLOError) -> Void,
                       tick: (CalibrationProgress.Step, Int) -> Void) throws(YOLOError) -> Int8Calibration {
        // Every layer on its own (the values of the plan that keeps every output), buffers reused:
        // the inputs are recorded as each convolution reads them, not kept to the end.
        let session = try Session(observing: model, threads: threads)
        let convs = model.impl.compactMap { $0.convolution }
        let position = Dictionary(uniqueKeysWithValues: convs.enumerated().map { ($1.index, $0) })
        // A forward that calls body(i, values) with the tensor convolution i reads.
        func observe(_ body: (Int, UnsafeBufferPointer<Float>) -> Void) {
            session.forward { layer, values in if let i = position[layer] { body(i, values) } }
        }
        var lows = [Float](repeating: 0, count: convs.count), highs = lows
        for n in 0..<count {
            try fill(n, session.input)
            observe { i, values in
                var (lo, hi) = (lows[i], highs[i])
                for v in values where v.isFinite { lo = min(lo, v); hi = max(hi, v) }
                (lows[i], highs[i]) = (lo, hi)
            }
            tick(.ranges, n)
        }
        if method != .minMax {
            var histograms = [[Int]](repeating: [Int](repeating: 0, count: bins), count: convs.count)
            for n in 0..<count {
                try fill(n, session.input)
                observe { i, values in
                    let (lo, width) = (lows[i], (highs[i] - lows[i]) / Float(bins))
                    guard width > 0 else { return }
                    histograms[i].withUnsafeMutableBufferPointer { h in
                        for v in values where v.isFinite { h[min(bins - 1, max(0, Int((v - lo) / width)))] += 1 }
                    }
                }
                tick(.histograms, n)
            }
            for i in convs.indices where highs[i] > lows[i] && !unclipped.contains(convs[i].index) {
                if case .percentile(let p) = method {
                    (lows[i], highs[i]) = clip(histograms[i], low: lows[i], high: highs[i], percentile: p)
                } else {
                    (lows[i], highs[i]) = leastSquares(histograms[i], low: lows[i], high: highs[i])
                }
            }
        }
        var ranges: [Int: ClosedRange<Float>] = [:]
        for (i, conv) in convs.enumerated() {
            let lo = min(lows[i], 0), hi = max(highs[i], 0)
            ranges[conv.index] = lo...(hi > lo ? hi : lo + 1)
        }
        return Int8Calibration(ranges: ranges, method: method.description, imageCount: count, cfgFingerprint: model.cfgFingerprint)
    }

    /// The range [lo, hi] (bin edges, lo <= 0 <= hi) minimizing the squared quantization error of
    /// the histogram's values: (hi - lo)^2 / (12 * 255^2) per value inside, the squared distance
    /// to the range outside (values at their bin's centre).
    static func leastSquares(_ histogram: [Int], low: Float, high: Float) -> (Float, Float) {
        let n = histogram.count, width = Double(high - low) / Double(n)
        // Prefix sums of count, count x centre, count x centre^2: each candidate's error in O(1).
        var c = [Double](repeating: 0, count: n + 1), s1 = c, s2 = c
        for b in 0..<n {
            let (k, v) = (Double(histogram[b]), Double(low) + (Double(b) + 0.5) * width)
            (c[b + 1], s1[b + 1], s2[b + 1]) = (c[b] + k, s1[b] + k * v, s2[b] + k * v * v)
        }
        let zeroBin = max(0, min(n - 1, Int((-Double(low)) / width)))
        var best = (Double.infinity, low, high)
        // Bins below l are clipped up to lo, bins from h on down to hi, the rest rounded.
        for h in (zeroBin + 1)...n {
            let hi = Double(low) + Double(h) * width
            let above = (s2[n] - s2[h]) - 2 * hi * (s1[n] - s1[h]) + hi * hi * (c[n] - c[h])
            for l in 0...zeroBin {
                let lo = Double(low) + Double(l) * width, step = (hi - lo) / 255
                let below = lo * lo * c[l] - 2 * lo * s1[l] + s2[l]
                let err = below + above + (c[h] - c[l]) * step * step / 12
                if err < best.0 { best = (err, Float(lo), Float(hi)) }
            }
        }
        return (best.1, best.2)
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
