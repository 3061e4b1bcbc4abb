// Naive reference of a matrix product C = A · B (row-major, row strides lda and ldb), in
// double, with each entry's sum of |a||b|: the scale of a float GEMM's rounding error, so a
// check can allow a tolerance relative to it rather than to the (possibly cancelled) result.

extension Naive {
    /// Entry (i, j) of A · B over k products, and the sum of their magnitudes.
    public static func gemmEntry(_ a: [Float], lda: Int, _ b: [Float], ldb: Int, k: Int, i: Int, j: Int)
        -> (value: Double, magnitude: Double) {
        var sum = 0.0, magnitude = 0.0
        for p in 0..<k {
            let t = Double(a[i * lda + p]) * Double(b[p * ldb + j])
            sum += t
            magnitude += t < 0 ? -t : t
        }
        return (sum, magnitude)
    }

    /// The m x n product in a matrix of row stride `ldc` whose other entries hold `untouched`,
    /// and each entry's magnitude (+ 1e-30, so a zero product still has a positive scale).
    public static func gemm(_ a: [Float], lda: Int, _ b: [Float], ldb: Int, m: Int, n: Int, k: Int, ldc: Int,
                            untouched: Float) -> (c: [Float], magnitudes: [Float]) {
        var c = [Float](repeating: untouched, count: m * ldc)
        var magnitudes = [Float](repeating: 0, count: m * ldc)
        for i in 0..<m {
            for j in 0..<n {
                let e = gemmEntry(a, lda: lda, b, ldb: ldb, k: k, i: i, j: j)
                c[i * ldc + j] = Float(e.value)
                magnitudes[i * ldc + j] = Float(e.magnitude) + 1e-30
            }
        }
        return (c, magnitudes)
    }
}
