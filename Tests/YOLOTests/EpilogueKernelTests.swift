import Foundation
import XCTest
import YOLOReference
@testable @_spi(Kernels) import YOLOEngine
import YOLOKernels

/// Bias + activation: every level's vector epilogue (`KernelSet.biasActivate`: all but relu)
/// and the engine's `applyBiasActivation` (every activation) against the scalar `activate`, bit
/// for bit: rows that end past the last whole vector, a channel stride wider than the rows (the
/// gap untouched), a range of channels (the others untouched), ±0, infinities, values near zero;
/// and the float mish, swish and logistic against Darknet's formulas in double.
final class EpilogueKernelTests: XCTestCase {
    static let (spatial, stride) = (37, 41)

    static func input() -> (data: [Float], bias: [Float]) {
        var rng = SeededRandom(seed: 17)
        var data = rng.floats(4 * stride, -3, 3)
        // Channel 1's bias is -0, so its values reach the activation as they are.
        // (±1e-40, subnormal: written as the nearest Float's bits, which a literal would round to)
        let tiny = Float(bitPattern: 0x0001_16C2)
        for (i, v) in [Float(-0.0), 0, -tiny, tiny, .infinity, -.infinity, -1e-3, 35.5].enumerated() { data[stride + i] = v }
        return (data, [0.5, -0.0, -0.25, 2])
    }

    /// `data` with the epilogue applied to `channels` by the scalar reference.
    static func expected(_ data: [Float], _ bias: [Float], channels: Range<Int>, _ act: Activation) -> [Float] {
        var want = data
        for c in channels {
            for i in 0..<spatial { want[c * stride + i] = activate(data[c * stride + i] + bias[c], act) }
        }
        return want
    }

    func assertSame(_ got: [Float], _ want: [Float], _ what: String, line: UInt = #line) {
        let bad = got.indices.filter { got[$0].bitPattern != want[$0].bitPattern }
        XCTAssertEqual(bad.count, 0, "\(what): first at \(bad.first.map { "\($0): \(got[$0]) vs \(want[$0])" } ?? "")", line: line)
    }

    func testEveryLevelsVectorEpilogueMatchesTheScalarOne() {
        let (data, bias) = Self.input()
        XCTAssertFalse(KernelLevel.supported.isEmpty)
        for level in KernelLevel.supported {
            for act in Activation.allCases {
                var got = data
                let handled = got.withUnsafeMutableBufferPointer { d in
                    level.kernelSet!.biasActivate(d.baseAddress!, bias, 1..<4, Self.spatial, Self.stride, act)
                }
                XCTAssertEqual(handled, act != .relu, "\(level) \(act)")
                assertSame(got, handled ? Self.expected(data, bias, channels: 1..<4, act) : data, "\(level) \(act)")
            }
        }
    }

    /// The engine's `applyBiasActivation` and YOLOKernels' own `biasActivate` (built for the
    /// baseline; the arm-check's Embedded build calls it).
    func testEngineEpilogueAndBiasActivateMatchTheScalarOne() {
        let (data, bias) = Self.input()
        for act in Activation.allCases {
            var engine = data, kernels = data
            engine.withUnsafeMutableBufferPointer { d in
                applyBiasActivation(d.baseAddress!, bias: bias, channels: 0..<3, spatial: Self.spatial, channelStride: Self.stride,
                                    activation: act)
            }
            kernels.withUnsafeMutableBufferPointer { d in
                biasActivate(d.baseAddress!, bias: bias, channels: 0..<3, spatial: Self.spatial, channelStride: Self.stride,
                             activation: act)
            }
            assertSame(engine, Self.expected(data, bias, channels: 0..<3, act), "engine \(act)")
            assertSame(kernels, Self.expected(data, bias, channels: 0..<3, act), "biasActivate \(act)")
        }
    }

    /// The float forms against the double reference (YOLOReference: libm's exp, tanh and log1p)
    /// over -100...100 every 1/64 and near Darknet's mish threshold: within 4e-7 of the value,
    /// or 1e-35 absolute (below x = -87, where exp is taken as 0, the values are smaller).
    func testSmoothActivationsAreWithinFloatRoundingOfDarknetsFormulas() {
        let libm = Libm(exp: { Foundation.exp($0) }, tanh: { Foundation.tanh($0) }, log1p: { Foundation.log1p($0) })
        var xs = Swift.stride(from: -100.0, through: 100.0, by: 1.0 / 64).map { Float($0) }
        xs += [19.99, 20, 20.01, -87.5, 88.5, -0.0, 1e-30, -1e-30, Float.leastNormalMagnitude]
        for (act, naive) in [(Activation.mish, NaiveActivation.mish), (.swish, .swish), (.logistic, .logistic)] {
            var worst: Float = 0, at: Float = 0
            for x in xs {
                let got: Float = activate(x, act)
                let want = Float(naive.apply(Double(x), libm: libm))
                let error: Float = (got - want).magnitude
                let allowed: Float = Swift.max(4e-7 * want.magnitude, 1e-35)
                let ratio: Float = error / allowed
                if ratio > worst { worst = ratio; at = x }
            }
            XCTAssertLessThanOrEqual(worst, 1, "\(act): worst at x = \(at): \(activate(at, act)) vs \(naive.apply(Double(at), libm: libm))")
        }
    }
}
