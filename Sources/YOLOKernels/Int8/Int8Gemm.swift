// Packed INT8 GEMM: C[m x n] (float) = dequantize(A[m x k] (s8 weights) · B[k x n] (u8 activations)),
// int32 accumulation, the GotoBLAS/BLIS scheme of PackedGemm.swift over groups of 4 steps of k:
//
// - B arrives grouped (`quantizedIm2col` writes it so): row g of B holds, per column j, one UInt32
//   whose bytes 0-3 are the u8 values of k = 4g ..< 4g + 4 (the operand layout of x86's vpdpbusd
//   and ARM's udot/sdot). B is packed per call, KC groups x NC columns at a time, into NR-column
//   micro-panels (a copy of whole UInt32s).
// - A (the weights) is packed once, at load, per block of KC groups and MR-row panel: per group,
//   MR rows of `aBytes` each, in the layout of the level's dot product (`Int8DotISA.packA`).
// - The micro-kernel keeps an MR x NR tile of int32 sums in registers. Sums stay exact at every
//   level (no saturation), so every level gives the same int32 results, and the same floats.
// - Over several KC blocks the partial sums live in C itself, as Int32 bit patterns; the last
//   block adds them and writes C = Float(sum - comp[r]) * scale[r] (comp: the zero point's share,
//   scale: activation scale x the row's weight scale). The epilogue (bias, activation) follows
//   elsewhere, as for FP32 outputs.
//
// Tails: rows past m are zero in packed A, columns past n zero in packed B, and k past the last
// group zero in both; edge tiles are computed whole into a scratch tile and merged by scalar code
// that rounds as the vector code does. Generic and @inlinable: each per-ISA target instantiates
// it with its own dot product (`Int8DotISA`), compiled for its CPU.

/// One level's 8-bit dot product: `Acc` lanes each sum 4 products u8 x s8 per step.
public protocol Int8DotISA: KernelMetatype {
    associatedtype Acc: SIMD where Acc.Scalar == Int32
    /// Floats of the same lane count (for the dequantized stores).
    associatedtype Floats: SIMD where Floats.Scalar == Float
    /// One vector of packed B (lanes x 4 bytes) as the dot wants it.
    associatedtype BOperand
    /// One row's 4 weights of a group, as the dot wants them (broadcast).
    associatedtype AOperand
    /// Bytes of packed A per row and group.
    static var aBytes: Int { get }
    /// Stores the weights w0...w3 of k = 4g ..< 4g + 4 of one row (`aBytes` bytes at `p`).
    static func packA(_ w0: Int8, _ w1: Int8, _ w2: Int8, _ w3: Int8, into p: UnsafeMutableRawPointer)
    /// One vector of grouped B as packed B holds it (default: as it is). A dot of signed bytes
    /// flips each byte's top bit (b - 128 as s8) and declares `activationShift` 128: the driver
    /// adds 128 x the row's weight sum back through comp (Int8SignedB.swift), so sums stay exact.
    static func prepareB(_ v: Acc) -> Acc
    static var activationShift: Int32 { get }
    /// Whether sums go to C as floats after every block of k (`Int16Pairs`: sums too deep for
    /// int32), not as int32 until the last block. Default false.
    static var accumulatesFloats: Bool { get }
    /// Whether `loadPartial` / `storePartial` are masked instructions: the last, partial vector of
    /// a partial panel then goes straight to C (default false: through the scratch tile).
    static var partialVectors: Bool { get }
    /// Lanes 0 ..< count of the words at p, 0 past them (the rest not read).
    static func loadPartial(_ p: UnsafeRawPointer, count: Int) -> Acc
    /// Lanes 0 ..< count of v to p (the rest not written).
    static func storePartial(_ v: Acc, _ p: UnsafeMutableRawPointer, count: Int)
    static func loadB(_ p: UnsafeRawPointer) -> BOperand
    static func loadA(_ p: UnsafeRawPointer) -> AOperand
    /// acc + per lane the sum of 4 products (u8 bytes of b) x (s8 weights of a), exact.
    static func dot(_ acc: Acc, _ b: BOperand, _ a: AOperand) -> Acc
    /// Exact int32 -> float per lane (round to nearest even, as Float(Int32)).
    static func floats(_ v: Acc) -> Floats
    /// The lanes' floats at `p` quantized, bit for bit as `Int8Quantization.quantize` (see
    /// `Int8Lanes.quantize` for the portable form).
    static func quantize(_ p: UnsafePointer<Float>, inverseScale: Float, zeroPoint: Float) -> Acc
    static func prefetch(_ p: UnsafeRawPointer)
}

extension Int8DotISA {
    @inlinable @inline(__always)
    public static func prefetch(_ p: UnsafeRawPointer) {}
}

#if compiler(>=6.2)
/// What a kernel type's metatype must be to be captured by the @Sendable kernel references of a
/// kernel set: `SendableMetatype` since Swift 6.2 (every non-isolated type is one), nothing before.
public typealias KernelMetatype = SendableMetatype
#else
public typealias KernelMetatype = Any
#endif

/// A register-blocked INT8 micro-kernel over `groups` groups of packed panels.
public protocol Int8MicroKernel: KernelMetatype {
    associatedtype Dot: Int8DotISA
    static var mr: Int { get }
    /// Columns: vectors x lanes.
    static var nr: Int { get }
    /// The MR x NR tile at `c` (row stride ldc, rows' comp/scale at `comp`/`scale`): int32 sums
    /// stored or added (`accumulate`), and when `finish`, dequantized to floats.
    static func run(_ groups: Int, _ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ c: UnsafeMutablePointer<Float>,
                    _ ldc: Int, accumulate: Bool, finish: Bool, comp: UnsafePointer<Int32>, scale: UnsafePointer<Float>)
}

/// 8 x (3·W): 24 accumulators + 3 B vectors + 1 broadcast (32 zmm registers with AVX-512).
public enum Int8Kernel8x3<D: Int8DotISA>: Int8MicroKernel {
    public typealias Dot = D
    @inlinable public static var mr: Int { 8 }
    @inlinable public static var nr: Int { 3 * D.Acc.scalarCount }

    @inlinable @inline(__always)
    public static func run(_ groups: Int, _ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ c: UnsafeMutablePointer<Float>,
                           _ ldc: Int, accumulate: Bool, finish: Bool, comp: UnsafePointer<Int32>,
                           scale: UnsafePointer<Float>) {
        let vb = 4 * D.Acc.scalarCount, ab = D.aBytes
        var c00 = D.Acc(), c01 = D.Acc(), c02 = D.Acc(), c10 = D.Acc(), c11 = D.Acc(), c12 = D.Acc()
        var c20 = D.Acc(), c21 = D.Acc(), c22 = D.Acc(), c30 = D.Acc(), c31 = D.Acc(), c32 = D.Acc()
        var c40 = D.Acc(), c41 = D.Acc(), c42 = D.Acc(), c50 = D.Acc(), c51 = D.Acc(), c52 = D.Acc()
        var c60 = D.Acc(), c61 = D.Acc(), c62 = D.Acc(), c70 = D.Acc(), c71 = D.Acc(), c72 = D.Acc()
        var pa = a, pb = b
        let ahead = 64 * 8 * ab
        for _ in 0..<groups {
            D.prefetch(pa + ahead)
            let b0 = D.loadB(pb), b1 = D.loadB(pb + vb), b2 = D.loadB(pb + 2 * vb)
            var x = D.loadA(pa)
            c00 = D.dot(c00, b0, x); c01 = D.dot(c01, b1, x); c02 = D.dot(c02, b2, x)
            x = D.loadA(pa + ab)
            c10 = D.dot(c10, b0, x); c11 = D.dot(c11, b1, x); c12 = D.dot(c12, b2, x)
            x = D.loadA(pa + 2 * ab)
            c20 = D.dot(c20, b0, x); c21 = D.dot(c21, b1, x); c22 = D.dot(c22, b2, x)
            x = D.loadA(pa + 3 * ab)
            c30 = D.dot(c30, b0, x); c31 = D.dot(c31, b1, x); c32 = D.dot(c32, b2, x)
            x = D.loadA(pa + 4 * ab)
            c40 = D.dot(c40, b0, x); c41 = D.dot(c41, b1, x); c42 = D.dot(c42, b2, x)
            x = D.loadA(pa + 5 * ab)
            c50 = D.dot(c50, b0, x); c51 = D.dot(c51, b1, x); c52 = D.dot(c52, b2, x)
            x = D.loadA(pa + 6 * ab)
            c60 = D.dot(c60, b0, x); c61 = D.dot(c61, b1, x); c62 = D.dot(c62, b2, x)
            x = D.loadA(pa + 7 * ab)
            c70 = D.dot(c70, b0, x); c71 = D.dot(c71, b1, x); c72 = D.dot(c72, b2, x)
            pa += 8 * ab
            pb += 3 * vb
        }
        let w = D.Acc.scalarCount
        @inline(__always) func row(_ r: Int, _ x0: D.Acc, _ x1: D.Acc, _ x2: D.Acc) {
            let pc = c + r * ldc, k = finish ? comp[r] : 0, s = finish || D.accumulatesFloats ? scale[r] : 0
            int8Store(x0, pc, accumulate: accumulate, finish: finish, comp: k, scale: s, D.self)
            int8Store(x1, pc + w, accumulate: accumulate, finish: finish, comp: k, scale: s, D.self)
            int8Store(x2, pc + 2 * w, accumulate: accumulate, finish: finish, comp: k, scale: s, D.self)
        }
        row(0, c00, c01, c02); row(1, c10, c11, c12); row(2, c20, c21, c22); row(3, c30, c31, c32)
        row(4, c40, c41, c42); row(5, c50, c51, c52); row(6, c60, c61, c62); row(7, c70, c71, c72)
    }
}

/// 4 x (2·W): 8 accumulators (16 ymm/xmm registers on x86 leave room for split operands).
public enum Int8Kernel4x2<D: Int8DotISA>: Int8MicroKernel {
    public typealias Dot = D
    @inlinable public static var mr: Int { 4 }
    @inlinable public static var nr: Int { 2 * D.Acc.scalarCount }

    @inlinable @inline(__always)
    public static func run(_ groups: Int, _ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ c: UnsafeMutablePointer<Float>,
                           _ ldc: Int, accumulate: Bool, finish: Bool, comp: UnsafePointer<Int32>,
                           scale: UnsafePointer<Float>) {
        let vb = 4 * D.Acc.scalarCount, ab = D.aBytes
        var c00 = D.Acc(), c01 = D.Acc(), c10 = D.Acc(), c11 = D.Acc()
        var c20 = D.Acc(), c21 = D.Acc(), c30 = D.Acc(), c31 = D.Acc()
        var pa = a, pb = b
        let ahead = 64 * 4 * ab
        for _ in 0..<groups {
            D.prefetch(pa + ahead)
            let b0 = D.loadB(pb), b1 = D.loadB(pb + vb)
            var x = D.loadA(pa)
            c00 = D.dot(c00, b0, x); c01 = D.dot(c01, b1, x)
            x = D.loadA(pa + ab)
            c10 = D.dot(c10, b0, x); c11 = D.dot(c11, b1, x)
            x = D.loadA(pa + 2 * ab)
            c20 = D.dot(c20, b0, x); c21 = D.dot(c21, b1, x)
            x = D.loadA(pa + 3 * ab)
            c30 = D.dot(c30, b0, x); c31 = D.dot(c31, b1, x)
            pa += 4 * ab
            pb += 2 * vb
        }
        let w = D.Acc.scalarCount
        @inline(__always) func row(_ r: Int, _ x0: D.Acc, _ x1: D.Acc) {
            let pc = c + r * ldc, k = finish ? comp[r] : 0, s = finish || D.accumulatesFloats ? scale[r] : 0
            int8Store(x0, pc, accumulate: accumulate, finish: finish, comp: k, scale: s, D.self)
            int8Store(x1, pc + w, accumulate: accumulate, finish: finish, comp: k, scale: s, D.self)
        }
        row(0, c00, c01); row(1, c10, c11); row(2, c20, c21); row(3, c30, c31)
    }
}

/// The packed INT8 GEMM driver for micro-kernel `K`; `kc` counts groups of 4 steps of k. The
/// same `kc` must be given to `packA`, `packedASize`, `scratchSize` and `gemm`.
public enum Int8PackedGemm<K: Int8MicroKernel> {
    @inlinable @inline(__always)
    static func roundUp(_ x: Int, _ to: Int) -> Int { (x + to - 1) / to * to }

    /// Groups per block: the groups of k split into equal blocks of at most kc.
    @inlinable @inline(__always)
    static func blockGroups(groups: Int, kc: Int) -> Int {
        let blocks = max(1, (groups + kc - 1) / kc)
        return (groups + blocks - 1) / blocks
    }

    @inlinable @inline(__always)
    static func blockWidth(_ nc: Int) -> Int { max(K.nr, nc / K.nr * K.nr) }

    /// Bytes of packed A for m rows of depth k.
    @inlinable @inline(__always)
    public static func packedASize(m: Int, k: Int) -> Int { panelBytes(m: m, k: k) + correctionBytes(m: m) }

    /// Packs the s8 weights (m x k, row stride lda): per block of kc groups (at group offset g0,
    /// gl groups) at p + g0 * mPadded * aBytes, the MR-row panels one after the other, each gl
    /// groups of MR rows; zero past row m and past k. Only `rows` (from a multiple of MR to one
    /// or to m), whose first row is at `a`: a matrix can be packed a band of rows at a time.
    @inlinable @inline(__always)
    public static func packA(_ a: UnsafePointer<Int8>, lda: Int, m: Int, k: Int, kc: Int, rows: Range<Int>,
                             into p: UnsafeMutableRawPointer) {
        let mr = K.mr, ab = K.Dot.aBytes, mPadded = roundUp(m, mr), groups = (k + 3) / 4
        let kcg = blockGroups(groups: groups, kc: kc), end = rows.upperBound == m ? mPadded : rows.upperBound
        let a = a - rows.lowerBound * lda
        var g0 = 0
        while g0 < groups {
            let gl = min(kcg, groups - g0)
            var ib = rows.lowerBound
            while ib < end {
                let panel = p + (g0 * mPadded + ib * gl) * ab
                for q in 0..<gl {
                    for r in 0..<mr {
                        let row = ib + r
                        var w: (Int8, Int8, Int8, Int8) = (0, 0, 0, 0)
                        if row < rows.upperBound {
                            let src = a + row * lda
                            let kk = 4 * (g0 + q)
                            w = (src[kk], kk + 1 < k ? src[kk + 1] : 0, kk + 2 < k ? src[kk + 2] : 0, kk + 3 < k ? src[kk + 3] : 0)
                        }
                        K.Dot.packA(w.0, w.1, w.2, w.3, into: panel + (q * mr + r) * ab)
                    }
                }
                ib += mr
            }
            g0 += gl
        }
        packCorrections(a, lda: lda, m: m, k: k, rows: rows.lowerBound..<end, into: p + panelBytes(m: m, k: k))
    }

    /// Bytes of scratch `gemm` needs: a packed block of B and an MR x NR edge tile.
    @inlinable @inline(__always)
    public static func scratchSize(m: Int, n: Int, k: Int, kc: Int, nc: Int) -> Int {
        4 * (max(1, blockGroups(groups: (k + 3) / 4, kc: kc)) * roundUp(max(1, min(n, blockWidth(nc))), K.nr) + K.mr * K.nr + 2 * K.mr)
    }

    /// Packs groups 0..<gl, columns 0..<ncl of grouped B (row stride ldb UInt32s) into NR-column
    /// micro-panels, zero past column ncl.
    @inlinable @inline(__always)
    static func packB(_ b: UnsafePointer<UInt32>, ldb: Int, groups gl: Int, ncl: Int, into bp: UnsafeMutablePointer<UInt32>) {
        let nr = K.nr, w = K.Dot.Acc.scalarCount
        let full = ncl / nr, rest = ncl - full * nr
        for q in 0..<gl {
            let src = UnsafeRawPointer(b + q * ldb)
            var dst = bp + q * nr
            var j = 0
            for _ in 0..<full {
                var v = 0
                while v < nr {
                    let x = (src + 4 * (j + v)).loadUnaligned(as: K.Dot.Acc.self)
                    UnsafeMutableRawPointer(dst + v).storeBytes(of: K.Dot.prepareB(x), as: K.Dot.Acc.self)
                    v += w
                }
                j += nr
                dst += gl * nr
            }
            if rest > 0 {
                for v in 0..<rest { dst[v] = b[q * ldb + j + v] }
                for v in rest..<nr { dst[v] = 0 }
                prepareB(dst)
            }
        }
    }

    /// C[m x n] (row stride ldc >= n) from A (packed by `packA`, same kc) and grouped B
    /// (ceil(k / 4) rows of n UInt32s, row stride ldb), with `scratch` of `scratchSize` bytes.
    /// Only rows `rowStart..<rowEnd` (rowStart a multiple of MR): threads may split rows, or
    /// columns (b + j, c + j, fewer n). `accumulateFirst`: the first block adds its int32 sums to
    /// those in C; `finishLast` false: the last block leaves int32 sums there too, not floats (the
    /// two passes of a 10-bit product, Int8TenBit.swift; dots that accumulate floats take neither).
    @inlinable @inline(__always)
    public static func gemm(m: Int, n: Int, k: Int, packedA: UnsafeRawPointer, b: UnsafePointer<UInt32>, ldb: Int,
                            c: UnsafeMutablePointer<Float>, ldc: Int, comp: UnsafePointer<Int32>, scale: UnsafePointer<Float>,
                            scratch: UnsafeMutableRawPointer, kc: Int, nc: Int, rowStart: Int = 0, rowEnd: Int? = nil,
                            accumulateFirst: Bool = false, finishLast: Bool = true) {
        blocks(m: m, n: n, k: k, packedA: packedA, c: c, ldc: ldc, comp: comp, scale: scale, scratch: scratch, kc: kc, nc: nc,
               rowStart: rowStart, rowEnd: rowEnd, accumulateFirst: accumulateFirst, finishLast: finishLast) { g0, gl, jc, ncl, bp in
            packB(b + g0 * ldb + jc, ldb: ldb, groups: gl, ncl: ncl, into: bp)
        }
    }

    /// `gemm`'s loops with B's blocks packed by `pack(g0, gl, jc, ncl, bp)`: groups g0 ..< g0 + gl,
    /// columns jc ..< jc + ncl into NR-column micro-panels at bp, zero past column ncl (Int8PlaneB.swift
    /// packs them from padded planes, with no column matrix).
    @inlinable @inline(__always)
    static func blocks(m: Int, n: Int, k: Int, packedA: UnsafeRawPointer, c: UnsafeMutablePointer<Float>, ldc: Int,
                       comp: UnsafePointer<Int32>, scale: UnsafePointer<Float>, scratch: UnsafeMutableRawPointer, kc: Int,
                       nc: Int, rowStart: Int, rowEnd: Int?, accumulateFirst: Bool, finishLast: Bool,
                       pack: (Int, Int, Int, Int, UnsafeMutablePointer<UInt32>) -> Void) {
        let rowEnd = min(m, rowEnd ?? m)
        guard rowStart < rowEnd, n > 0 else { return }
        guard k > 0 else {
            for i in rowStart..<rowEnd { (c + i * ldc).update(repeating: Float(0 &- comp[i]) * scale[i], count: n) }
            return
        }
        let mr = K.mr, nr = K.nr, ab = K.Dot.aBytes, mPadded = roundUp(m, mr), groups = (k + 3) / 4
        let kcg = blockGroups(groups: groups, kc: kc), nc = blockWidth(nc)
        let ncMax = roundUp(min(n, nc), nr)
        let bp = scratch.bindMemory(to: UInt32.self, capacity: kcg * ncMax + mr * nr)
        let tile = UnsafeMutableRawPointer(bp + kcg * ncMax).bindMemory(to: Float.self, capacity: mr * nr)
        let adjusted = UnsafeMutableRawPointer(tile + mr * nr).bindMemory(to: Int32.self, capacity: mr)
        // An edge tile's row scales padded to MR (a dot that accumulates floats scales every row it
        // computes, those past m too).
        let edgeScale = UnsafeMutableRawPointer(adjusted + mr).bindMemory(to: Float.self, capacity: mr)
        let corrections = packedA + panelBytes(m: m, k: k)
        var jc = 0
        while jc < n {
            let ncl = min(nc, n - jc)
            var g0 = 0
            while g0 < groups {
                let gl = min(kcg, groups - g0)
                let accumulate = g0 > 0 || accumulateFirst, finish = g0 + gl == groups && finishLast
                pack(g0, gl, jc, ncl, bp)
                let aBlock = packedA + g0 * mPadded * ab
                var ib = rowStart
                while ib < rowEnd {
                    let ap = aBlock + ib * gl * ab
                    let rows = min(mr, rowEnd - ib)
                    let cp = finish ? rowComp(comp, corrections, rows: ib..<ib + rows, into: adjusted) : comp + ib
                    var jb = 0
                    while jb < ncl {
                        let cols = min(nr, ncl - jb)
                        let panel = UnsafeRawPointer(bp + jb * gl)
                        let cTile = c + ib * ldc + jc + jb
                        if rows == mr && cols == nr {
                            K.run(gl, ap, panel, cTile, ldc, accumulate: accumulate, finish: finish, comp: cp,
                                  scale: scale + ib)
                        } else if rows == mr {
                            int8RunPartialPanel(mr, cols: cols, gl, ap, panel, bStride: 4 * nr, cTile, ldc, tile: tile,
                                                accumulate: accumulate, finish: finish, comp: cp, scale: scale + ib, K.Dot.self)
                        } else {
                            // Edge tile: int32 sums (or scaled floats) into the scratch tile, merged into C here.
                            for r in 0..<mr { edgeScale[r] = r < rows ? scale[ib + r] : 0 }
                            K.run(gl, ap, panel, tile, nr, accumulate: false, finish: false, comp: cp, scale: edgeScale)
                            let sums = UnsafeMutableRawPointer(tile)
                            for r in 0..<rows {
                                for j in 0..<cols {
                                    int8MergeScalar(sums + 4 * (r * nr + j), cTile + r * ldc + j, accumulate: accumulate,
                                                    finish: finish, comp: cp[r], scale: scale[ib + r], K.Dot.self)
                                }
                            }
                        }
                        jb += nr
                    }
                    ib += mr
                }
                g0 += gl
            }
            jc += ncl
        }
    }
}
