// The engine's matrix products: weights prepared at load for our kernels or OpenBLAS, and the
// split of a product over a session's threads.
import YOLOCore
internal import COpenBLAS
import YOLOKernels

/// A weight matrix (rows x columns, row-major) prepared once, at model load, for the GEMM
/// backend the model uses: packed for our kernels, or as it is for OpenBLAS. Points into the
/// model's immutable storage.
struct GemmWeights: Sendable {
    let rows: Int
    let columns: Int
    private let rowMajor: ParameterPointer?
    private let packedA: ParameterPointer?
    let kernels: GemmFunctions?

    init(rows: Int, columns: Int, data: UnsafePointer<Float>?, packed: UnsafePointer<Float>?, kernels: GemmFunctions?) {
        (self.rows, self.columns, self.kernels) = (rows, columns, kernels)
        rowMajor = data.map { ParameterPointer(base: $0) }
        packedA = packed.map { ParameterPointer(base: $0) }
    }

    /// Row-major with row stride `columns` (OpenBLAS), or nil when packed.
    var data: UnsafePointer<Float>? { rowMajor?.base }
    /// Packed by `kernels.packA` (our kernels), or nil.
    var packed: UnsafePointer<Float>? { packedA?.base }
}

/// Per-thread scratch of the GEMM kernels (where they pack blocks of B): `perThread` floats
/// for each of a session's threads, from `base`.
struct GemmScratch {
    let base: UnsafeMutablePointer<Float>
    let perThread: Int
    @inline(__always) func part(_ i: Int) -> UnsafeMutablePointer<Float> { base + i * perThread }
    /// The scratch of thread `i` alone, for a caller that runs on that thread without the pool.
    @inline(__always) func only(_ i: Int) -> GemmScratch { GemmScratch(base: part(i), perThread: perThread) }
}

/// OpenBLAS, loaded on first use (Sources/COpenBLAS/shim.h says why it is not linked), set to
/// one thread: sessions split each GEMM over their own threads.
package enum OpenBLAS {
    /// The loaded functions: never changed after the load.
    private struct Library: @unchecked Sendable { let c: yolo_openblas; let refusal: String? }
    private static let loaded: Library = {
        // Loading runs OpenBLAS's constructor, which (0.3.29) maps its buffer at once: under a
        // data-size limit that cannot hold it, dlopen itself never returned.
        if let headroom = dataSizeHeadroom(), headroom < bufferBytes {
            return Library(c: yolo_openblas(), refusal: "not loaded: the process's data-size limit (ulimit -d) leaves "
                           + "\(headroom >> 20) MiB, less than the \(bufferBytes >> 20) MiB of OpenBLAS's buffer")
        }
        return Library(c: yolo_openblas_load(), refusal: nil)
    }()
    private static var library: yolo_openblas { loaded.c }
    /// Why OpenBLAS cannot be used in this process (dlopen's message, or the data-size limit at
    /// the first use), or nil when it can.
    package static var loadError: String? { loaded.refusal ?? library.error.map { String(cString: $0) } }
    /// C (m x n, row stride ldc) = A (m x k) · B (k x n), row-major; OpenBLAS must have loaded.
    @inline(__always)
    package static func sgemm(m: Int, n: Int, k: Int, a: UnsafePointer<Float>, lda: Int, b: UnsafePointer<Float>, ldb: Int,
                              c: UnsafeMutablePointer<Float>, ldc: Int) {
        library.sgemm!(Int32(YOLO_CBLAS_ROW_MAJOR), Int32(YOLO_CBLAS_NO_TRANS), Int32(YOLO_CBLAS_NO_TRANS),
                       Int32(m), Int32(n), Int32(k), 1, a, Int32(lda), b, Int32(ldb), 0, c, Int32(ldc))
    }
    /// Bytes OpenBLAS maps for each thread that calls it, on its first call (one buffer of
    /// 128 MiB and a little more: strace of 0.3.21 and 0.3.29, Debian 12 and 13). When that
    /// mmap fails, as it does under a data-size limit (`ulimit -d`), its allocator retries
    /// forever: the process hangs. So the engine never hands OpenBLAS a thread that the limit
    /// leaves less than this: `.automatic` runs our own kernels under any limit, and
    /// `--gemm openblas` and its sessions are refused when the limit cannot hold the buffers.
    package static let bufferBytes = 130 << 20
    /// OpenBLAS's kernel family and build configuration, or why it is not loaded.
    package static var coreName: String { library.get_corename.flatMap { $0() }.map { String(cString: $0) } ?? "not loaded" }
    package static var config: String { library.get_config.flatMap { $0() }.map { String(cString: $0) } ?? "not loaded" }
}

/// The engine's one entry for matrix products: every convolution's GEMM and the Winograd
/// products come through here, so the choice of kernels and the split over threads live in
/// one place.
enum Gemm {
    /// The kernel set a model uses (`ModelOptions.kernelLevel`, else the process's
    /// `KernelLevel.selected`: the CPU's best, or lower by YOLO_KERNEL_LEVEL) and whether its GEMMs
    /// run in OpenBLAS instead: with `.automatic`, at the x86 baseline (SSE2), where OpenBLAS's
    /// own kernels are faster (docs/performance.md, "Figures from code comments"). The one place
    /// that picks them.
    static func kernels(for options: ModelOptions) throws(YOLOError) -> (set: KernelSet, openBLAS: Bool) {
        var chosen = KernelLevel.selectedKernels
        if let level = options.kernelLevel {
            guard let k = level.kernelSet else {
                let names = KernelLevel.supported.map { $0.rawValue }.joined(separator: ", ")
                throw .invalidArgument("kernel level \(level.rawValue) cannot run on this CPU (it can: \(names))")
            }
            chosen = k
        }
        switch options.gemm {
        case .openBLAS:
            let threads = max(1, options.tuningThreads ?? 1)
            if let refusal = checkDataSizeLimit(threads * OpenBLAS.bufferBytes, for: "--gemm openblas: OpenBLAS's buffers for \(threads) thread\(threads == 1 ? "" : "s")") {
                throw .invalidArgument(refusal)
            }
            if let error = OpenBLAS.loadError { throw .invalidArgument("--gemm openblas: OpenBLAS cannot be loaded (\(error))") }
            return (chosen, true)
        case .kernels: return (chosen, false)
        case .automatic:
            // Without OpenBLAS on the machine, our baseline kernels (slower, the same results);
            // also under a data-size limit, which OpenBLAS's allocator does not survive.
            return (chosen, chosen.name == KernelLevel.baseline.rawValue && dataSizeHeadroom() == nil
                        && OpenBLAS.loadError == nil)
        }
    }

    /// Floats of per-thread scratch `multiply` needs with `kernels` (any shape).
    static func scratchPerThread(_ kernels: GemmFunctions?) -> Int {
        kernels.map { $0.scratchSize(m: 1, n: 1 << 30, k: 1 << 30) } ?? 0
    }

    /// Prepares a weight matrix: packs it into `storage` for our kernels, or keeps it for
    /// OpenBLAS (copied into `storage` when `data` does not outlive the load).
    static func prepare(_ data: UnsafePointer<Float>, rows: Int, columns: Int, kernels: GemmFunctions?,
                        storage: ModelStorage, dataOutlivesLoad: Bool) -> GemmWeights {
        if let kernels {
            let packed = storage.allocate(kernels.packedASize(m: rows, k: columns))
            kernels.packA(data, lda: columns, m: rows, k: columns, into: packed)
            return GemmWeights(rows: rows, columns: columns, data: nil, packed: packed, kernels: kernels)
        }
        var kept = data
        if !dataOutlivesLoad {
            let copy = storage.allocate(rows * columns)
            copy.update(from: data, count: rows * columns)
            kept = UnsafePointer(copy)
        }
        return GemmWeights(rows: rows, columns: columns, data: kept, packed: nil, kernels: nil)
    }

    /// C (rows `rows` of a, x n, row stride ldc) = a · B, for columns `cols` of B and C, on the
    /// calling thread with `scratch`.
    @inline(__always)
    private static func kernel(_ a: GemmWeights, rows: Range<Int>, _ b: UnsafePointer<Float>, ldb: Int,
                               cols: Range<Int>, into c: UnsafeMutablePointer<Float>, ldc: Int,
                               scratch: UnsafeMutablePointer<Float>) {
        let k = a.columns
        if let kernels = a.kernels, let packed = a.packed {
            kernels.gemm(m: a.rows, n: cols.count, k: k, packedA: packed, b: b + cols.lowerBound, ldb: ldb,
                         c: c + cols.lowerBound, ldc: ldc, scratch: scratch, rows: rows)
        } else {
            OpenBLAS.sgemm(m: rows.count, n: cols.count, k: k, a: a.data! + rows.lowerBound * k, lda: k,
                           b: b + cols.lowerBound, ldb: ldb, c: c + rows.lowerBound * ldc + cols.lowerBound, ldc: ldc)
        }
    }

    /// C (a.rows x n, row stride ldc) = a · B (a.columns x n, row stride ldb), split over the
    /// pool's threads as `split` says. Without a pool it runs on the calling thread with
    /// `scratch.part(0)`.
    static func multiply(_ a: GemmWeights, _ b: UnsafePointer<Float>, n: Int, ldb: Int,
                         into c: UnsafeMutablePointer<Float>, ldc: Int, pool: WorkerPool?, scratch: GemmScratch) {
        split(m: a.rows, n: n, rowPanel: a.kernels?.mr ?? 1, columnPanel: a.kernels?.nr ?? 16, pool: pool) { rows, cols, part in
            kernel(a, rows: rows, b, ldb: ldb, cols: cols, into: c, ldc: ldc, scratch: scratch.part(part))
        }
    }

    /// Shares an m x n product out to the pool's threads: by rows (in whole micro-kernel panels of
    /// `rowPanel` rows) when there are at least as many as columns (the 13x13 layers), else by
    /// columns, in chunks (`Chunking`) the threads claim as they are free; `body(rows, columns,
    /// thread)` computes one chunk. Column chunks are whole panels of `columnPanel` (the
    /// micro-kernel's NR): every column then goes through the same micro-kernel path as in one
    /// call over all of B (the last, partial panel's columns are summed in another order), so
    /// the product is the same bits at any thread count. Without a pool of several threads, one
    /// chunk of everything on the calling thread.
    static func split(m: Int, n: Int, rowPanel: Int, columnPanel: Int, pool: WorkerPool?,
                      _ body: (Range<Int>, Range<Int>, Int) -> Void) {
        guard let pool, pool.threadCount > 1 else {
            body(0..<m, 0..<n, 0)
            return
        }
        let threads = pool.threadCount
        if m >= n {
            let grain = Chunking.grain(m, threads: threads, perThread: Chunking.gemmRowsPerThread, multiple: max(1, rowPanel))
            pool.forEach(m, grain: grain) { rows, thread in body(rows, 0..<n, thread) }
        } else {
            let grain = Chunking.grain(n, threads: threads, perThread: Chunking.gemmColumnsPerThread, multiple: max(1, columnPanel))
            pool.forEach(n, grain: grain) { cols, thread in body(0..<m, cols, thread) }
        }
    }

    /// Independent products C[i] = a[i] · B[i] (the Winograd positions), B[i] at
    /// `b + i * bStride` and C[i] at `c + i * cStride`, each n columns wide and packed. With a
    /// pool, its threads share out the products.
    static func multiplyBatch(_ a: [GemmWeights], _ b: UnsafePointer<Float>, bStride: Int, n: Int,
                              into c: UnsafeMutablePointer<Float>, cStride: Int, pool: WorkerPool?, scratch: GemmScratch) {
        batch(a.count, pool: pool) { i, part in
            kernel(a[i], rows: 0..<a[i].rows, b + i * bStride, ldb: n, cols: 0..<n, into: c + i * cStride, ldc: n,
                   scratch: scratch.part(part))
        }
    }

    /// product(i, thread) for i in 0..<count, each claimed whole by whichever of `pool`'s threads is
    /// free (thread: its index, for its scratch), or on the calling thread.
    static func batch(_ count: Int, pool: WorkerPool?, _ product: (Int, Int) -> Void) {
        if let pool, pool.threadCount > 1 {
            pool.forEachChunk(count, product)
        } else {
            for i in 0..<count { product(i, 0) }
        }
    }
}
