// Loading a convolution's parameters: batch norm folded into its weights and biases, and the
// check that every value is a finite number. Kernels (optimized in debug builds too) because
// they touch every weight: in the engine's unoptimized debug build they were 80% of a model's
// load, 2.5 s for yolov3-tiny, paid by every test that loads it.

/// Folds batch normalization into a convolution's weights (`filters` rows of `columns`) and
/// biases, as Darknet does: factor = scale / (sqrt(variance) + 0.000001) (the epsilon outside the
/// square root), each weight times its filter's factor, bias − mean × factor.
public func foldBatchNorm(weights: UnsafeMutablePointer<Float>, bias: UnsafeMutablePointer<Float>,
                          scales: UnsafePointer<Float>, mean: UnsafePointer<Float>, variance: UnsafePointer<Float>,
                          filters: Int, columns: Int) {
    for f in 0..<filters {
        let factor = scales[f] / (variance[f].squareRoot() + 0.000001)
        let row = weights + f * columns
        for i in 0..<columns { row[i] *= factor }
        bias[f] = bias[f] - mean[f] * factor
    }
}

/// The index of the first of `count` values that is not a finite number (NaN or ±infinity), or
/// nil when all are finite.
public func firstNonFinite(_ values: UnsafePointer<Float>, count: Int) -> Int? {
    var i = 0
    while i < count {
        if !values[i].isFinite { return i }
        i += 1
    }
    return nil
}
