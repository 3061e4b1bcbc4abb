// Naive reference of the INT8 GEMM's contract (YOLOKernels' Int8Functions.gemm): s8 weights A
// (m x k) times u8 activations B (k x n) in the grouped layout (per column, 4 steps of k in the
// bytes of one UInt32), the exact int32 sum less the row's comp, times the row's scale. One
// problem with seeded inputs and its expected output, for Int8KernelTests and the aarch64
// harness (scripts/arm/KernelCheck.swift).

/// One INT8 GEMM problem and what the kernels must write for it.
public struct Int8GemmCase {
    public let m: Int, n: Int, k: Int, ldb: Int, ldc: Int
    /// m x k, row stride k, in -127...127 (as symmetric quantization makes weights).
    public let a: [Int8]
    /// 4 x groups rows of ldb bytes: B, and junk in the rows past k (A's zero padding cancels it).
    public let bytes: [UInt8]
    /// `bytes` grouped: groups rows of ldb UInt32s, bytes 0-3 of (g, j) from rows 4g ..< 4g + 4.
    public let b: [UInt32]
    public let comp: [Int32]
    public let scale: [Float]

    /// Random inputs; `extreme`: every value at the end of its range (255 and +-127), where a
    /// saturating or wrapping 16-bit path would go wrong.
    public init(m: Int, n: Int, k: Int, ldbPad: Int = 0, ldcPad: Int = 0, extreme: Bool = false, rng: inout SeededRandom) {
        let groups = (k + 3) / 4
        (self.m, self.n, self.k, ldb, ldc) = (m, n, k, n + ldbPad, n + ldcPad)
        let ldb = n + ldbPad
        var a = [Int8](repeating: 0, count: m * k)
        for i in 0..<m * k { a[i] = extreme ? (i % 3 == 0 ? -127 : 127) : Int8(rng.int(below: 255) - 127) }
        let bytes = extreme ? [UInt8](repeating: 255, count: groups * 4 * ldb) : rng.bytes(groups * 4 * ldb)
        var b = [UInt32](repeating: 0, count: groups * ldb)
        for g in 0..<groups { for j in 0..<ldb { for i in 0..<4 {
            b[g * ldb + j] |= UInt32(bytes[(4 * g + i) * ldb + j]) << UInt32(8 * i)
        } } }
        var comp = [Int32](repeating: 0, count: m), scale = [Float](repeating: 0, count: m)
        for i in 0..<m {
            comp[i] = Int32(rng.int(below: 100_000)) - 50_000
            scale[i] = rng.float(1e-4, 2e-2)
        }
        (self.a, self.bytes, self.b, self.comp, self.scale) = (a, bytes, b, comp, scale)
    }

    /// Row i, column j: Float(Int32(sum of A[i, p] x B[p, j]) - comp[i]) x scale[i].
    public func entry(_ i: Int, _ j: Int) -> Float {
        var sum: Int64 = 0
        for p in 0..<k { sum += Int64(a[i * k + p]) * Int64(bytes[p * ldb + j]) }
        return Float(Int32(truncatingIfNeeded: sum) &- comp[i]) * scale[i]
    }

    /// C (m rows of ldc) as the kernels must write it, `untouched` past column n.
    public func expected(untouched: Float) -> [Float] {
        var c = [Float](repeating: untouched, count: m * ldc)
        for i in 0..<m { for j in 0..<n { c[i * ldc + j] = entry(i, j) } }
        return c
    }
}
