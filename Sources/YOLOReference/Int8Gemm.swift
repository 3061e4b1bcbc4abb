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

/// A case of the 16-bit pair GEMM (INT8 Winograd, 10-bit layers: `Int16Pairs`): A m x channels
/// int16 kernels (|a| <= 511, F(4x4)'s 10 bits), B channels x n int16 inputs (|b| <= 25500,
/// F(4x4)'s 100 x 255), B grouped as the kernels take it, per-row scales.
public struct PairGemmCase {
    public let m: Int, n: Int, channels: Int
    public let a: [Int16]
    public let b: [Int32]
    /// B grouped: row g, column j = channel 2g (bits 0-15) and 2g + 1 (bits 16-31; 0 past the last).
    public let grouped: [UInt32]
    public let scale: [Float]

    /// Random inputs; `extreme`: every value at a limit, where int32 sums over too deep a block would wrap.
    public init(m: Int, n: Int, channels c: Int, extreme: Bool = false, rng: inout SeededRandom) {
        let a = (0..<m * c).map { _ in Int16(extreme ? (rng.int(below: 2) == 0 ? -511 : 511) : rng.int(below: 1023) - 511) }
        let b = (0..<c * n).map { _ in Int32(extreme ? (rng.int(below: 2) == 0 ? -25500 : 25500) : rng.int(below: 51001) - 25500) }
        let scale = (0..<m).map { _ in rng.float(1e-6, 1e-3) }
        self.init(m: m, n: n, channels: c, a: a, b: b, scale: scale)
    }

    /// Given inputs: a (m x channels), b (channels x n, int16 values), scale (m).
    public init(m: Int, n: Int, channels c: Int, a: [Int16], b: [Int32], scale: [Float]) {
        (self.m, self.n, channels, self.a, self.b, self.scale) = (m, n, c, a, b, scale)
        let pairs = (c + 1) / 2
        var grouped = [UInt32](repeating: 0, count: pairs * n)
        for g in 0..<pairs {
            for j in 0..<n {
                let lo = UInt16(truncatingIfNeeded: b[2 * g * n + j])
                let hi = 2 * g + 1 < c ? UInt16(truncatingIfNeeded: b[(2 * g + 1) * n + j]) : 0
                grouped[g * n + j] = UInt32(lo) | UInt32(hi) << 16
            }
        }
        self.grouped = grouped
    }

    /// C (m x n) as a driver with blocks of at most `kc` pairs makes it: the pairs split evenly
    /// into blocks, per block Float(exact int32 sum) x scale[row], added block after block (f + acc).
    /// nil when some block's sum does not fit int32 (the case is too deep for kc).
    public func expected(kc: Int) -> [Float]? {
        let pairs = (channels + 1) / 2, blocks = max(1, (pairs + kc - 1) / kc), size = (pairs + blocks - 1) / blocks
        var out = [Float](repeating: 0, count: m * n)
        for i in 0..<m {
            for j in 0..<n {
                var acc: Float = 0
                for p0 in stride(from: 0, to: pairs, by: size) {
                    var sum: Int64 = 0
                    for ch in 2 * p0 ..< min(channels, 2 * (p0 + size)) { sum += Int64(a[i * channels + ch]) * Int64(b[ch * n + j]) }
                    guard abs(sum) < Int64(Int32.max) else { return nil }
                    let f = Float(Int32(sum)) * scale[i]
                    acc = p0 == 0 ? f : f + acc
                }
                out[i * n + j] = acc
            }
        }
        return out
    }
}

/// A case of the two-pass 10-bit INT8 GEMM (`Int8TenBit`): A m x k s8 weights, B k x n 10-bit
/// inputs q (0...1023) with a zero point, split into hi = q >> 5 and lo = q & 31, each grouped as
/// the 8-bit GEMM takes B; C = Float(Int32(sum of A x (q - zero point))) x scale per row.
public struct TenBitGemmCase {
    public let m: Int, n: Int, k: Int, ldb: Int, ldc: Int
    public let a: [Int8]
    /// 4 x groups rows of ldb values (past k: junk, which A's zero padding cancels).
    public let q: [Int32]
    public let zeroPoint: Int32
    /// q's hi and lo halves, grouped: groups rows of ldb UInt32s.
    public let hi: [UInt32], lo: [UInt32]
    public let scale: [Float]

    /// Random inputs; `extreme`: weights +-127 and every q 1023 (zero point 0: the largest sums).
    public init(m: Int, n: Int, k: Int, ldbPad: Int = 0, ldcPad: Int = 0, extreme: Bool = false, rng: inout SeededRandom) {
        let groups = (k + 3) / 4, ldb = n + ldbPad
        (self.m, self.n, self.k, self.ldb, ldc) = (m, n, k, ldb, n + ldcPad)
        a = (0..<m * k).map { i in extreme ? (i % 3 == 0 ? -127 : 127) : Int8(rng.int(below: 255) - 127) }
        let q = (0..<groups * 4 * ldb).map { _ in extreme ? 1023 : Int32(rng.int(below: 1024)) }
        zeroPoint = extreme ? 0 : Int32(rng.int(below: 1024))
        var hi = [UInt32](repeating: 0, count: groups * ldb), lo = hi
        for g in 0..<groups { for j in 0..<ldb { for i in 0..<4 {
            let v = UInt32(q[(4 * g + i) * ldb + j])
            hi[g * ldb + j] |= (v >> 5) << UInt32(8 * i)
            lo[g * ldb + j] |= (v & 31) << UInt32(8 * i)
        } } }
        (self.q, self.hi, self.lo) = (q, hi, lo)
        scale = (0..<m).map { _ in rng.float(1e-4, 2e-2) }
    }

    /// Row i's weight sum (what `tenBitComp` takes).
    public func weightSum(_ i: Int) -> Int32 { (0..<k).reduce(Int32(0)) { $0 &+ Int32(a[i * k + $1]) } }

    /// Row i, column j.
    public func entry(_ i: Int, _ j: Int) -> Float {
        var sum: Int64 = 0
        for p in 0..<k { sum += Int64(a[i * k + p]) * Int64(q[p * ldb + j] - zeroPoint) }
        return Float(Int32(truncatingIfNeeded: sum)) * scale[i]
    }

    /// C (m rows of ldc) as the kernels must write it, `untouched` past column n.
    public func expected(untouched: Float) -> [Float] {
        var c = [Float](repeating: untouched, count: m * ldc)
        for i in 0..<m { for j in 0..<n { c[i * ldc + j] = entry(i, j) } }
        return c
    }
}
