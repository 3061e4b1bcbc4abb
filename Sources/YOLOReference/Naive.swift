// YOLOReference: the naive references that the XCTest suites and the aarch64 harness
// (scripts/arm/KernelCheck.swift, built with Embedded Swift) check the kernels and layers
// against. Imports nothing (no Foundation, no C library): the math functions come in as
// closures (`Libm`). One file per kind of reference, each an extension of `Naive`; references
// compute in double precision and follow Darknet's definitions.

/// The namespace of the naive references (so they do not collide with the kernels' names).
public enum Naive {}

extension Naive {
    /// A CHW tensor of floats.
    public struct Tensor: Sendable {
        public var channels, height, width: Int
        public var values: [Float]

        public init(channels: Int, height: Int, width: Int, values: [Float]) {
            precondition(values.count == channels * height * width, "a tensor of \(channels)x\(height)x\(width) needs that many values")
            (self.channels, self.height, self.width, self.values) = (channels, height, width, values)
        }

        public var count: Int { channels * height * width }

        public subscript(c: Int, y: Int, x: Int) -> Float { values[(c * height + y) * width + x] }
    }
}

/// The C library's functions the references need, passed in by each side (Foundation's in the
/// XCTest suites, Glibc's in the harness) so this module imports nothing.
public struct Libm: Sendable {
    public var exp: @Sendable (Double) -> Double
    public var tanh: @Sendable (Double) -> Double
    public var log1p: @Sendable (Double) -> Double

    public init(exp: @escaping @Sendable (Double) -> Double, tanh: @escaping @Sendable (Double) -> Double,
                log1p: @escaping @Sendable (Double) -> Double) {
        (self.exp, self.tanh, self.log1p) = (exp, tanh, log1p)
    }
}
