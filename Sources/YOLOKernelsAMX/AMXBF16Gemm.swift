// The BF16 GEMM on AMX tiles (tdpbf16ps), with the contracts of `BF16PackedGemm` (BF16Gemm.swift):
// the FP32 GEMM's calling convention, A rounded at load as `bfloat16Bits` rounds, B rounded as it
// is packed (vcvtne2ps2bf16) or given as the words of the Winograd F(2x2) input transform, FP32
// sums added to C block by block of k.
//
// - A is packed at load per 16-row panel and step of 32 k: 1 KiB tiles of 16 rows x 16 pairs (low
//   half the even k), zero past m and past k, rows padded to MR = 32.
// - B is packed per call into 16-column panels of 1 KiB tiles: 16 pair rows x 16 columns.
// - C: 32 x 32 blocks of FP32 sums from zero per block of k; the first block of a whole tile goes
//   to C directly, the others are added to C through the scratch tile (C + block, as the vdpbf16ps
//   GEMM adds), so a column's value does not depend on where a thread's share of columns starts.
// Swift 6.0 builds have no BF16 kernels (KernelsAVX512BF16.swift), and so none here.
#if arch(x86_64) && compiler(>=6.1)
import YOLOKernels
import CAMX
import CDot

enum AMXBF16Gemm {
    static let mr = 32, nr = 32

    @inline(__always) static func roundUp(_ x: Int, _ to: Int) -> Int { (x + to - 1) / to * to }

    /// Steps of 32 k (16 pairs).
    @inline(__always) static func steps(_ k: Int) -> Int { (k + 31) / 32 }

    /// Steps per block: the steps split into equal blocks of at most kc steps of k.
    @inline(__always) static func blockSteps(_ steps: Int, kc: Int) -> Int {
        let most = max(1, kc / 32), blocks = max(1, (steps + most - 1) / most)
        return (steps + blocks - 1) / blocks
    }

    @inline(__always) static func blockWidth(_ nc: Int) -> Int { max(nr, nc / nr * nr) }

    /// Words (float-sized) of packed A.
    static func packedASize(m: Int, k: Int) -> Int { roundUp(m, mr) * steps(k) * 16 }

    /// Rounds and packs A (m x k, row stride lda): row r, step s at word (r / 16) * steps * 256 +
    /// s * 256 + (r % 16) * 16.
    static func packA(_ a: UnsafePointer<Float>, lda: Int, m: Int, k: Int, into p: UnsafeMutablePointer<UInt32>) {
        let steps = steps(k)
        for row in 0..<roundUp(m, mr) {
            let line = p + (row / 16) * steps * 256 + (row % 16) * 16, src = a + row * lda
            for s in 0..<steps {
                for q in 0..<16 {
                    let kk = 32 * s + 2 * q
                    var pair: UInt32 = 0
                    if row < m && kk < k {
                        pair = UInt32(bfloat16Bits(src[kk])) | (kk + 1 < k ? UInt32(bfloat16Bits(src[kk + 1])) << 16 : 0)
                    }
                    line[256 * s + q] = pair
                }
            }
        }
    }

    /// Words of scratch: a packed block of B, a 32 x 32 tile, 64 bytes of alignment.
    static func scratchSize(m: Int, n: Int, k: Int, kc: Int, nc: Int) -> Int {
        let panels = roundUp(max(1, min(n, blockWidth(nc))), nr) / 16
        return max(1, blockSteps(steps(k), kc: kc)) * 256 * panels + mr * nr + 16
    }

    /// Rows 0..<rows (at most 32 sl) of FP32 B (row stride ldb), columns 0..<ncl, rounded into
    /// pairs in 16-column panels of sl tiles, zero past them.
    @inline(__always)
    static func packB(_ b: UnsafePointer<Float>, ldb: Int, rows: Int, steps sl: Int, ncl: Int, into bp: UnsafeMutableRawPointer) {
        let panels = (ncl + 15) / 16, full = ncl / 16, rest = ncl - 16 * full, panelBytes = sl * 1024
        for p in 0..<16 * sl {
            var dst = bp + 64 * p
            let r0 = b + 2 * p * ldb, second = 2 * p + 1 < rows
            guard 2 * p < rows else {
                for _ in 0..<panels { dst.storeBytes(of: SIMD16<Int32>(), as: SIMD16<Int32>.self); dst += panelBytes }
                continue
            }
            for q in 0..<full {
                let x0 = UnsafeRawPointer(r0 + 16 * q).loadUnaligned(as: SIMD16<Float>.self)
                let x1 = second ? UnsafeRawPointer(r0 + ldb + 16 * q).loadUnaligned(as: SIMD16<Float>.self) : SIMD16<Float>()
                dst.storeBytes(of: yolo_bf16_pairs_512(x0, x1), as: SIMD16<Int32>.self)
                dst += panelBytes
            }
            if rest > 0 {
                var x0 = SIMD16<Float>(), x1 = SIMD16<Float>()
                for j in 0..<rest {
                    x0[j] = r0[16 * full + j]
                    if second { x1[j] = r0[ldb + 16 * full + j] }
                }
                dst.storeBytes(of: yolo_bf16_pairs_512(x0, x1), as: SIMD16<Int32>.self)
            }
        }
    }

    /// Pair rows 0..<pairs (at most 16 sl) of the words at b (row stride ldb), columns 0..<ncl, in
    /// packB's layout.
    @inline(__always)
    static func packWords(_ b: UnsafePointer<UInt32>, ldb: Int, pairs: Int, steps sl: Int, ncl: Int, into bp: UnsafeMutableRawPointer) {
        let panels = (ncl + 15) / 16, full = ncl / 16, rest = ncl - 16 * full, panelBytes = sl * 1024
        for p in 0..<16 * sl {
            var dst = bp + 64 * p
            guard p < pairs else {
                for _ in 0..<panels { dst.storeBytes(of: SIMD16<UInt32>(), as: SIMD16<UInt32>.self); dst += panelBytes }
                continue
            }
            let src = UnsafeRawPointer(b + p * ldb)
            for q in 0..<full {
                dst.storeBytes(of: src.loadUnaligned(fromByteOffset: 64 * q, as: SIMD16<UInt32>.self), as: SIMD16<UInt32>.self)
                dst += panelBytes
            }
            if rest > 0 {
                var v = SIMD16<UInt32>()
                for j in 0..<rest { v[j] = src.load(fromByteOffset: 4 * (16 * full + j), as: UInt32.self) }
                dst.storeBytes(of: v, as: SIMD16<UInt32>.self)
            }
        }
    }

    /// C (rows `rows` from a multiple of MR, x n, row stride ldc) = A · B, A packed by `packA`,
    /// B's block of steps s0 ..< s0 + sl and columns jc ..< jc + ncl packed into bp by
    /// `pack(jc, s0, sl, ncl, bp)`.
    @inline(__always)
    static func gemm(m: Int, n: Int, k: Int, packedA: UnsafeRawPointer, c: UnsafeMutablePointer<Float>, ldc: Int,
                     scratch: UnsafeMutablePointer<Float>, kc: Int, nc: Int, rows: Range<Int>,
                     pack: (Int, Int, Int, Int, UnsafeMutableRawPointer) -> Void) {
        let rowStart = rows.lowerBound, rowEnd = min(m, rows.upperBound)
        guard rowStart < rowEnd, n > 0 else { return }
        guard k > 0 else {
            for i in rowStart..<rowEnd { (c + i * ldc).update(repeating: 0, count: n) }
            return
        }
        let steps = steps(k), kcs = blockSteps(steps, kc: kc), ncw = blockWidth(nc)
        let raw = UnsafeMutableRawPointer(scratch)
        let bp = raw + (64 - Int(bitPattern: raw) & 63) & 63
        let tile = bp + kcs * 1024 * (roundUp(min(n, ncw), nr) / 16)
        let aPanel = steps * 1024
        yolo_amx_configure()
        defer { yolo_amx_release() }
        var jc = 0
        while jc < n {
            let ncl = min(ncw, n - jc)
            var s0 = 0
            while s0 < steps {
                let sl = min(kcs, steps - s0), accumulate = s0 > 0
                pack(jc, s0, sl, ncl, bp)
                var ib = rowStart
                while ib < rowEnd {
                    let rowCount = min(mr, rowEnd - ib), rt: Int32 = rowCount > 16 ? 2 : 1
                    let a = packedA + (ib / 16) * aPanel + s0 * 1024
                    var jb = 0
                    while jb < ncl {
                        let cols = min(nr, ncl - jb), ct: Int32 = cols > 16 ? 2 : 1
                        let panel = bp + (jb / 16) * sl * 1024, cTile = c + ib * ldc + jc + jb
                        if !accumulate && rowCount == 16 * Int(rt) && cols == 16 * Int(ct) {
                            yolo_amx_bf16_block(rt, ct, sl, a, aPanel, panel, sl * 1024, cTile, 4 * ldc)
                        } else {
                            yolo_amx_bf16_block(rt, ct, sl, a, aPanel, panel, sl * 1024, tile, 4 * nr)
                            AMXStores.add(tile, rows: rowCount, cols: cols, into: cTile, ldc: ldc, accumulate: accumulate)
                        }
                        jb += nr
                    }
                    ib += mr
                }
                s0 += sl
            }
            jc += ncl
        }
    }

    /// The GEMM of `KernelSet.bf16`: B FP32 (k x n, row stride ldb).
    static func gemm(m: Int, n: Int, k: Int, packedA: UnsafeRawPointer, b: UnsafePointer<Float>, ldb: Int,
                     c: UnsafeMutablePointer<Float>, ldc: Int, scratch: UnsafeMutablePointer<Float>, kc: Int, nc: Int, rows: Range<Int>) {
        gemm(m: m, n: n, k: k, packedA: packedA, c: c, ldc: ldc, scratch: scratch, kc: kc, nc: nc, rows: rows) { jc, s0, sl, ncl, bp in
            packB(b + 32 * s0 * ldb + jc, ldb: ldb, rows: min(32 * sl, k - 32 * s0), steps: sl, ncl: ncl, into: bp)
        }
    }

    /// The same with B the words of bfloat16 pairs (ceil(k / 2) x n, row stride ldb words), as
    /// the Winograd F(2x2) input transform writes them (`BF16WinogradPairs`).
    static func gemmWords(m: Int, n: Int, k: Int, packedA: UnsafeRawPointer, b: UnsafePointer<UInt32>, ldb: Int,
                          c: UnsafeMutablePointer<Float>, ldc: Int, scratch: UnsafeMutablePointer<Float>, kc: Int, nc: Int,
                          rows: Range<Int>) {
        let pairs = (k + 1) / 2
        gemm(m: m, n: n, k: k, packedA: packedA, c: c, ldc: ldc, scratch: scratch, kc: kc, nc: nc, rows: rows) { jc, s0, sl, ncl, bp in
            packWords(b + 16 * s0 * ldb + jc, ldb: ldb, pairs: min(16 * sl, pairs - 16 * s0), steps: sl, ncl: ncl, into: bp)
        }
    }
}
#endif
