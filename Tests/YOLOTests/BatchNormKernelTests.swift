// The load-time kernels of Sources/YOLOKernels/Layers/BatchNorm.swift against the naive definitions.
import XCTest
import YOLOKernels
import YOLOReference

final class BatchNormKernelTests: XCTestCase {
    /// Folding: each weight times scale / (sqrt(variance) + 1e-6), bias − mean × that factor,
    /// computed naively per element in Float (the same expression: equal bit for bit), for shapes
    /// with and without a SIMD-width remainder.
    func testFoldBatchNormEqualsDarknetsFormula() {
        var rng = SeededRandom(seed: 31)
        for (filters, columns) in [(1, 1), (3, 27), (16, 144), (7, 1153)] {
            let weights0 = rng.floats(filters * columns), bias0 = rng.floats(filters)
            let scales = rng.floats(filters, 0.1, 2), mean = rng.floats(filters), variance = rng.floats(filters, 0, 3)
            var weights = weights0, bias = bias0
            weights.withUnsafeMutableBufferPointer { w in
                bias.withUnsafeMutableBufferPointer { b in
                    foldBatchNorm(weights: w.baseAddress!, bias: b.baseAddress!, scales: scales, mean: mean,
                                  variance: variance, filters: filters, columns: columns)
                }
            }
            for f in 0..<filters {
                let factor = scales[f] / (variance[f].squareRoot() + 0.000001)
                XCTAssertEqual(bias[f].bitPattern, (bias0[f] - mean[f] * factor).bitPattern, "\(filters)x\(columns) bias \(f)")
                for i in 0..<columns where weights[f * columns + i].bitPattern != (weights0[f * columns + i] * factor).bitPattern {
                    XCTFail("\(filters)x\(columns): weight \(f), \(i) is \(weights[f * columns + i]), not \(weights0[f * columns + i] * factor)")
                    return
                }
            }
        }
    }

    /// The first NaN or infinity wherever it is (first, middle, last, two of them), none in
    /// finite values (the largest and the smallest included), nothing in zero values.
    func testFirstNonFiniteFindsTheFirstNaNOrInfinity() {
        var values = (0..<1000).map { Float($0) - 500 }
        values[10] = .greatestFiniteMagnitude
        values[11] = -.leastNonzeroMagnitude
        XCTAssertNil(firstNonFinite(values, count: values.count))
        XCTAssertNil(firstNonFinite(values, count: 0))
        for (positions, first) in [([0], 0), ([999], 999), ([517, 640], 517)] {
            for bad: Float in [.nan, .infinity, -.infinity] {
                var v = values
                for p in positions { v[p] = bad }
                XCTAssertEqual(firstNonFinite(v, count: v.count), first, "\(bad) at \(positions)")
                XCTAssertNil(firstNonFinite(v, count: positions[0]), "only the values before it")
            }
        }
    }
}
