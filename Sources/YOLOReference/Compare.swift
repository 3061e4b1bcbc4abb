// Element-by-element comparison of computed values with a reference, shared by the XCTest
// suites (which turn a failed Comparison into an XCTFail) and the aarch64 harness (which prints
// it): exact (same bits or equal values), relative (within tolerance x max(1, |reference|)), or
// scaled per element (within tolerance x scales[i], e.g. the sum of |a||b| of a dot product);
// and bit equality, NaN sentinels included.

/// What a comparison found. `passed` when the counts agree and no element is off.
public struct Comparison: Sendable, CustomStringConvertible {
    public var count: Int
    public var expectedCount: Int
    /// The largest |got - want| (infinity when a difference is NaN).
    public var maxAbsDiff: Float = 0
    /// The first element that is off, with both values.
    public var firstMismatch: (index: Int, got: Float, want: Float)?

    public var passed: Bool { count == expectedCount && firstMismatch == nil }

    public var description: String {
        if count != expectedCount { return "\(count) values, the reference has \(expectedCount)" }
        var s = "\(count) values, max abs diff \(maxAbsDiff)"
        if let m = firstMismatch { s += ": first mismatch at \(m.index): \(m.got) vs \(m.want)" }
        return s
    }
}

/// Compares `got` with `want`: with `tolerance` 0 each element must have the same bits or be
/// equal (so -0 == 0; NaN only where the reference has the same NaN); else within
/// `tolerance * max(1, |want[i]|)`, or `tolerance * scales[i]` when `scales` is given.
public func compare(_ got: UnsafeBufferPointer<Float>, _ want: UnsafeBufferPointer<Float>, tolerance: Float = 0,
                    scales: UnsafeBufferPointer<Float>? = nil) -> Comparison {
    var result = Comparison(count: got.count, expectedCount: want.count)
    guard got.count == want.count else { return result }
    for i in 0..<got.count {
        let d = got[i] - want[i]
        let ad = d < 0 ? -d : d
        let scale = scales?[i] ?? max(1, want[i] < 0 ? -want[i] : want[i])
        let bad = tolerance == 0 ? got[i].bitPattern != want[i].bitPattern && !(got[i] == want[i])
                                 : !(ad <= tolerance * scale)
        if ad > result.maxAbsDiff || ad.isNaN { result.maxAbsDiff = ad.isNaN ? .infinity : ad }
        if bad && result.firstMismatch == nil { result.firstMismatch = (i, got[i], want[i]) }
    }
    return result
}

/// `compare` over arrays.
public func compare(_ got: [Float], _ want: [Float], tolerance: Float = 0, scales: [Float]? = nil) -> Comparison {
    got.withUnsafeBufferPointer { g in
        want.withUnsafeBufferPointer { w in
            guard let scales else { return compare(g, w, tolerance: tolerance) }
            return scales.withUnsafeBufferPointer { compare(g, w, tolerance: tolerance, scales: $0) }
        }
    }
}

/// `compare` of a buffer with an array.
public func compare(_ got: UnsafeBufferPointer<Float>, _ want: [Float], tolerance: Float = 0) -> Comparison {
    want.withUnsafeBufferPointer { compare(got, $0, tolerance: tolerance) }
}

/// Same bits everywhere (NaN sentinels included: a kernel that writes where it should not is
/// caught where the reference left a NaN).
public func compareBits(_ got: [Float], _ want: [Float]) -> Comparison {
    var result = Comparison(count: got.count, expectedCount: want.count)
    guard got.count == want.count else { return result }
    for i in 0..<got.count {
        let d = got[i] - want[i]
        let ad = d < 0 ? -d : d
        if ad > result.maxAbsDiff { result.maxAbsDiff = ad }
        if got[i].bitPattern != want[i].bitPattern && result.firstMismatch == nil { result.firstMismatch = (i, got[i], want[i]) }
    }
    return result
}
