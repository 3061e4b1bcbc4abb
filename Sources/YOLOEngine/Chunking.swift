// How finely each parallel step is cut into chunks for the worker pool to share out: enough
// chunks that a slower or preempted thread takes fewer of them, few enough that each keeps its
// kernel efficient. The measurements behind the numbers are in docs/threads.md.

enum Chunking {
    /// Chunks per thread for element-wise and per-channel steps (pooling, epilogues,
    /// transforms, quantization, im2col, direct convolution rows).
    static let perThread = 4
    /// Chunks per thread of a GEMM split by columns (each chunk packs only its own columns of B).
    static let gemmColumnsPerThread = 4
    /// Chunks per thread of a GEMM split by rows (the 13x13 layers): each chunk packs all of B
    /// again, and two per thread cost more than they balanced.
    static let gemmRowsPerThread = 1
    /// Floats below which a plain copy (a route's concatenation) stays on the calling thread: a
    /// hand-off to the pool costs more than copying a megabyte, and each one is a wait for the
    /// slowest thread on uneven cores.
    static let copyOnOneThread = 1 << 18

    /// Items per chunk for `count` items on `threads` threads, a multiple of `multiple`.
    static func grain(_ count: Int, threads: Int, perThread: Int = Chunking.perThread, multiple: Int = 1) -> Int {
        let chunks = max(1, threads * perThread)
        let items = (count + chunks - 1) / chunks
        return max(multiple, (items + multiple - 1) / multiple * multiple)
    }
}
