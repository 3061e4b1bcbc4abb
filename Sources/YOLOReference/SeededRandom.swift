// The one seeded pseudo-random generator of the XCTest suites and the aarch64 harness
// (scripts/arm/KernelCheck.swift): xorshift64, so inputs are the same on every machine and a
// failure reproduces. arm-check compares kernel output digests between qemu and the host, both
// built from this file: changing the generator changes both sides alike.

/// Deterministic pseudo-random numbers (xorshift64).
public struct SeededRandom: Sendable {
    public var state: UInt64

    public init(seed: UInt64) {
        state = seed &+ 0x9E37_79B9_7F4A_7C15
        if state == 0 { state = 0x9E37_79B9_7F4A_7C15 }   // xorshift stays at 0 forever
    }

    public mutating func next() -> UInt64 {
        state ^= state << 13; state ^= state >> 7; state ^= state << 17
        return state
    }

    /// Uniform in [lo, hi) (24 random bits).
    public mutating func float(_ lo: Float = -1, _ hi: Float = 1) -> Float {
        lo + (hi - lo) * Float(next() >> 40) / Float(1 << 24)
    }

    /// `count` values uniform in [lo, hi).
    public mutating func floats(_ count: Int, _ lo: Float = -1, _ hi: Float = 1) -> [Float] {
        var a = [Float](repeating: 0, count: count)
        for i in 0..<count { a[i] = float(lo, hi) }
        return a
    }

    /// `count` random bytes.
    public mutating func bytes(_ count: Int) -> [UInt8] {
        var a = [UInt8](repeating: 0, count: count)
        for i in 0..<count { a[i] = UInt8(truncatingIfNeeded: next() >> 24) }
        return a
    }

    /// Uniform in 0..<bound (bound > 0).
    public mutating func int(below bound: Int) -> Int {
        Int(next() % UInt64(bound))
    }
}
