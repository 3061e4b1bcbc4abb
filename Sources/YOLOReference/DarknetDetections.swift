// Darknet's detections as the fixtures hold them (Tests/*/Fixtures/*detections.txt, made by
// scripts/make-fixtures.py from Darknet's detections.json), parsed from bytes, and the
// comparison of a detector's results with them:
//
//   # comment lines
//   IMAGE WIDTH HEIGHT THRESHOLD BOX_INDEX CLASS_INDEX PROB OBJECTNESS X Y W H
//   IMAGE WIDTH HEIGHT THRESHOLD none       (no detection above that threshold)
//
// One line per (box, class) above the threshold, in Darknet's order; x, y, w, h relative to the image.

/// One (box, class) pair above a threshold.
public struct ReferenceDetection: Sendable {
    public var boxIndex, classIndex: Int
    public var prob, objectness: Float
    /// Center x, y, width, height, relative to the image.
    public var box: [Float]

    public init(boxIndex: Int, classIndex: Int, prob: Float, objectness: Float, box: [Float]) {
        (self.boxIndex, self.classIndex, self.prob, self.objectness, self.box) = (boxIndex, classIndex, prob, objectness, box)
    }
}

/// Darknet's detections for one image, at each threshold of the fixture.
public struct ReferenceImageDetections: Sendable {
    public var image: String
    public var width: Int, height: Int
    /// The thresholds in file order, each with its detections in Darknet's order.
    public var thresholds: [(threshold: Float, detections: [ReferenceDetection])]
}

/// Parses a detections fixture: the images in file order.
public func parseReferenceDetections(_ bytes: [UInt8]) throws(FixtureFormatError) -> [ReferenceImageDetections] {
    var images: [ReferenceImageDetections] = []
    for line in fixtureLines(bytes) {
        let p = line.tokens
        if p.isEmpty || p[0].utf8.first == UInt8(ascii: "#") { continue }
        guard p.count >= 5, let w = Int(p[1]), let h = Int(p[2]), let t = Float(p[3]) else {
            throw FixtureFormatError("line \(line.number): not 'IMAGE WIDTH HEIGHT THRESHOLD ...'")
        }
        var detection: ReferenceDetection?
        if p[4] != "none" {
            var floats: [Float] = []
            for s in p[6...] { if let v = Float(s) { floats.append(v) } }
            guard p.count == 12, floats.count == 6, let box = Int(p[4]), let cls = Int(p[5]) else {
                throw FixtureFormatError("line \(line.number): not '... BOX_INDEX CLASS_INDEX PROB OBJECTNESS X Y W H' or '... none'")
            }
            detection = ReferenceDetection(boxIndex: box, classIndex: cls, prob: floats[0], objectness: floats[1], box: Array(floats[2...]))
        }
        if images.last?.image != p[0] {
            guard !images.contains(where: { $0.image == p[0] }) else { throw FixtureFormatError("line \(line.number): \(p[0])'s lines are not together") }
            images.append(ReferenceImageDetections(image: p[0], width: w, height: h, thresholds: []))
        }
        let i = images.count - 1
        guard images[i].width == w && images[i].height == h else { throw FixtureFormatError("line \(line.number): another size for \(p[0])") }
        if images[i].thresholds.last?.threshold != t {
            guard !images[i].thresholds.contains(where: { $0.threshold == t }) else {
                throw FixtureFormatError("line \(line.number): \(p[0])'s lines for threshold \(t) are not together")
            }
            images[i].thresholds.append((t, []))
        }
        if let detection { images[i].thresholds[images[i].thresholds.count - 1].detections.append(detection) }
    }
    return images
}

/// How a detector's results (in its order) compare with Darknet's.
public struct DetectionComparison: Sendable, CustomStringConvertible {
    public var count: Int, expectedCount: Int
    /// The first pair whose box or class index differs.
    public var firstMismatch: Int?
    /// Max |difference| of the probabilities and objectness, and of the relative box coordinates.
    public var maxProbDiff: Float = 0, maxBoxDiff: Float = 0

    /// Same detections in the same order (box and class indices), within `tolerance` in
    /// probabilities and relative coordinates.
    public func passed(tolerance: Float) -> Bool {
        count == expectedCount && firstMismatch == nil && maxProbDiff <= tolerance && maxBoxDiff <= tolerance
    }

    public var description: String {
        var s = "\(count) detections, Darknet's \(expectedCount); max prob diff \(maxProbDiff), max box diff \(maxBoxDiff)"
        if let i = firstMismatch { s += "; detection \(i) has another box or class index" }
        return s
    }
}

/// Compares detections pairwise, in order.
public func compare(_ got: [ReferenceDetection], _ want: [ReferenceDetection]) -> DetectionComparison {
    var result = DetectionComparison(count: got.count, expectedCount: want.count)
    for i in 0..<min(got.count, want.count) {
        let (d, r) = (got[i], want[i])
        if (d.boxIndex != r.boxIndex || d.classIndex != r.classIndex) && result.firstMismatch == nil { result.firstMismatch = i }
        result.maxProbDiff = max(result.maxProbDiff, absDiff(d.prob, r.prob), absDiff(d.objectness, r.objectness))
        for k in 0..<min(d.box.count, r.box.count) { result.maxBoxDiff = max(result.maxBoxDiff, absDiff(d.box[k], r.box[k])) }
    }
    return result
}

/// |a - b|, infinity when NaN.
func absDiff(_ a: Float, _ b: Float) -> Float {
    let d = a - b
    return d.isNaN ? .infinity : (d < 0 ? -d : d)
}
