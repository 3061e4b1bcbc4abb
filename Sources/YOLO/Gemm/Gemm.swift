import COpenBLAS

/// A weight matrix (rows x columns, row-major) prepared once, at model load, for the GEMM
/// kernels the process uses. Points into the model's immutable storage.
struct GemmWeights: @unchecked Sendable {
    let rows: Int
    let columns: Int
    /// The matrix as loaded (folded), row-major with row stride `columns`.
    let data: UnsafePointer<Float>
}

/// The engine's one entry for matrix products: every convolution's GEMM and the Winograd
/// products come through here, so the choice of kernels and the split over threads live in
/// one place.
enum Gemm {
    /// Process-wide, once: OpenBLAS runs single-threaded, since sessions split each GEMM over
    /// their own threads. Setting it on every forward raced between sessions on two threads.
    private static let processSetUp: Void = { openblas_set_num_threads(1) }()

    /// Called by every model before it loads (cheap after the first time).
    static func setUpProcess() { _ = processSetUp }

    /// Prepares a weight matrix for the kernels (today: as it is; OpenBLAS packs per call).
    static func prepare(_ data: UnsafePointer<Float>, rows: Int, columns: Int) -> GemmWeights {
        GemmWeights(rows: rows, columns: columns, data: data)
    }

    /// C (rows(a) x n, row stride ldc) = a · B (a.columns x n, row stride ldb), for rows `rows`
    /// of `a` (default all) and columns `cols` of B and C (default all).
    @inline(__always)
    private static func kernel(_ a: GemmWeights, rows: Range<Int>, _ b: UnsafePointer<Float>, ldb: Int,
                               cols: Range<Int>, into c: UnsafeMutablePointer<Float>, ldc: Int) {
        let k = a.columns
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Int32(rows.count), Int32(cols.count), Int32(k),
                    1, a.data + rows.lowerBound * k, Int32(k), b + cols.lowerBound, Int32(ldb), 0,
                    c + rows.lowerBound * ldc + cols.lowerBound, Int32(ldc))
    }

    /// C (a.rows x n, row stride ldc) = a · B (a.columns x n, row stride ldb). With a pool of
    /// several threads, the product is split over them: by rows of `a` when there are at least
    /// as many as columns (the 13x13 layers), else by columns in multiples of 16.
    static func multiply(_ a: GemmWeights, _ b: UnsafePointer<Float>, n: Int, ldb: Int,
                         into c: UnsafeMutablePointer<Float>, ldc: Int, pool: WorkerPool?) {
        let m = a.rows
        guard let pool, pool.threadCount > 1 else {
            kernel(a, rows: 0..<m, b, ldb: ldb, cols: 0..<n, into: c, ldc: ldc)
            return
        }
        if m >= n {
            pool.parallelFor(m) { rows in kernel(a, rows: rows, b, ldb: ldb, cols: 0..<n, into: c, ldc: ldc) }
        } else {
            let parts = pool.threadCount
            let chunk = (n + parts * 16 - 1) / (parts * 16) * 16
            pool.run { part in
                let lo = min(n, part * chunk), hi = min(n, lo + chunk)
                guard hi > lo else { return }
                kernel(a, rows: 0..<m, b, ldb: ldb, cols: lo..<hi, into: c, ldc: ldc)
            }
        }
    }

    /// `count` independent products C[i] = a[i] · B[i] (the Winograd positions), B[i] at
    /// `b + i * bStride` and C[i] at `c + i * cStride`, each n columns wide and packed. With a
    /// pool, its threads share out the products.
    static func multiplyBatch(_ a: [GemmWeights], _ b: UnsafePointer<Float>, bStride: Int, n: Int,
                              into c: UnsafeMutablePointer<Float>, cStride: Int, pool: WorkerPool?) {
        let product = { (i: Int) in
            kernel(a[i], rows: 0..<a[i].rows, b + i * bStride, ldb: n, cols: 0..<n, into: c + i * cStride, ldc: n)
        }
        if let pool, pool.threadCount > 1 {
            pool.parallelFor(a.count) { range in for i in range { product(i) } }
        } else {
            for i in 0..<a.count { product(i) }
        }
    }
}
