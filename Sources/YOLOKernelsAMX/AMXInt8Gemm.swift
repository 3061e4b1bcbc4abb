// The INT8 GEMM on AMX tiles, with the contracts of `Int8PackedGemm` (Int8Gemm.swift): the same
// grouped u8 B, the same exact int32 sums (partial ones in C as Int32 bit patterns between blocks
// of k) and the same dequantizing store, Float(sum - comp[r]) * scale[r], so every level gives the
// same floats.
//
// - The product is tdpbsud: s8 rows of A (the weights) times u8 columns of B (vpdpbusd's operands
//   with the roles of the two tiles swapped), so a B tile is 16 rows of grouped B as they come
//   (16 groups of 4 k x 16 columns) and the sums come out in C's row order.
// - A is packed at load per 16-row panel and step of 64 k: 1 KiB tiles, zero past m and past k,
//   rows padded to MR = 32.
// - B is read where it lies: a tile is 16 rows of grouped B (16 columns), loaded with B's row
//   stride. Only what a tile load would read past B is packed per call into 1 KiB tiles, zero past
//   n and past the last group: a step that ends past k, and the last columns when n is not a
//   multiple of 16.
// - C: 32 x 32 blocks (2 x 2 tiles); whole blocks start from and end in C directly while sums stay
//   int32, edge blocks go through a scratch tile.
#if arch(x86_64)
import YOLOKernels
import CAMX
import CDot

enum AMXInt8Gemm {
    static let mr = 32, nr = 32

    @inline(__always) static func roundUp(_ x: Int, _ to: Int) -> Int { (x + to - 1) / to * to }

    /// Steps of 64 bytes of k (16 groups).
    @inline(__always) static func steps(_ k: Int) -> Int { (k + 63) / 64 }

    /// Steps per block: the steps split into equal blocks of at most kc groups.
    @inline(__always) static func blockSteps(_ steps: Int, kc: Int) -> Int {
        let most = max(1, kc / 16), blocks = max(1, (steps + most - 1) / most)
        return (steps + blocks - 1) / blocks
    }

    @inline(__always) static func blockWidth(_ nc: Int) -> Int { max(nr, nc / nr * nr) }

    /// Bytes of packed A.
    static func packedASize(m: Int, k: Int) -> Int { roundUp(m, mr) * steps(k) * 64 }

    /// Packs rows `rows` (from a multiple of MR to one or to m, the first at `a`) of the s8
    /// weights (m x k, row stride lda): row r, step s at (r / 16) * steps KiB + s KiB + (r % 16) * 64.
    static func packA(_ a: UnsafePointer<Int8>, lda: Int, m: Int, k: Int, rows: Range<Int>, into p: UnsafeMutableRawPointer) {
        let steps = steps(k), end = rows.upperBound == m ? roundUp(m, mr) : rows.upperBound
        for row in rows.lowerBound..<end {
            let line = p + (row / 16) * steps * 1024 + (row % 16) * 64
            for s in 0..<steps {
                let dst = line + s * 1024, k0 = 64 * s
                let count = row < rows.upperBound ? min(64, k - k0) : 0
                if count > 0 { dst.copyMemory(from: a + (row - rows.lowerBound) * lda + k0, byteCount: count) }
                if count < 64 { (dst + count).initializeMemory(as: UInt8.self, repeating: 0, count: 64 - count) }
            }
        }
    }

    /// Bytes of scratch: a packed block of B (steps x NC), the packed last step of a block read in
    /// place, a 32 x 32 tile, 64 bytes of alignment.
    static func scratchSize(m: Int, n: Int, k: Int, kc: Int, nc: Int) -> Int {
        let panels = roundUp(max(1, min(n, blockWidth(nc))), nr) / 16
        return (max(1, blockSteps(steps(k), kc: kc)) + 1) * 1024 * panels + 4 * mr * nr + 64
    }

    /// Groups 0..<groups (of 16 sl), columns 0..<ncl of grouped B (row stride ldb) into
    /// 16-column panels of sl tiles, zero past them.
    @inline(__always)
    static func packB(_ b: UnsafePointer<UInt32>, ldb: Int, groups: Int, steps sl: Int, ncl: Int, into bp: UnsafeMutableRawPointer) {
        let panels = (ncl + 15) / 16, full = ncl / 16, rest = ncl - 16 * full, panelBytes = sl * 1024
        for g in 0..<16 * sl {
            var dst = bp + 64 * g
            guard g < groups else {
                for _ in 0..<panels { dst.storeBytes(of: SIMD16<UInt32>(), as: SIMD16<UInt32>.self); dst += panelBytes }
                continue
            }
            let src = UnsafeRawPointer(b + g * ldb)
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

    /// C (rows `rows` from a multiple of MR, x n) from packed A and grouped B, as
    /// `Int8PackedGemm.gemm` with the same `accumulateFirst` and `finishLast`.
    static func gemm(m: Int, n: Int, k: Int, packedA: UnsafeRawPointer, b: UnsafePointer<UInt32>, ldb: Int,
                     c: UnsafeMutablePointer<Float>, ldc: Int, comp: UnsafePointer<Int32>, scale: UnsafePointer<Float>,
                     scratch: UnsafeMutableRawPointer, kc: Int, nc: Int, rows: Range<Int>,
                     accumulateFirst: Bool = false, finishLast: Bool = true) {
        let rowStart = rows.lowerBound, rowEnd = min(m, rows.upperBound)
        guard rowStart < rowEnd, n > 0 else { return }
        guard k > 0 else {
            for i in rowStart..<rowEnd { (c + i * ldc).update(repeating: Float(0 &- comp[i]) * scale[i], count: n) }
            return
        }
        let steps = steps(k), groups = (k + 3) / 4, kcs = blockSteps(steps, kc: kc), ncw = blockWidth(nc)
        let aligned = scratch + (64 - Int(bitPattern: scratch) & 63) & 63
        let panels = roundUp(min(n, ncw), nr) / 16
        let edgeB = aligned, tailB = aligned + kcs * 1024 * panels, tile = tailB + panels * 1024
        // In place only where B's rows are whole cache lines apart: a tile row across two lines
        // loads slower than packing once costs (docs/performance-amx.md, "AMX, Emerald Rapids").
        let inPlace = (4 * ldb) % 64 == 0
        let aPanel = steps * 1024, ldcBytes = 4 * ldc, wholeSteps = groups / 16
        yolo_amx_configure()
        defer { yolo_amx_release() }
        var jc = 0
        while jc < n {
            let ncl = min(ncw, n - jc)
            // Columns 0..<direct are read in place; the rest (short of a whole 16, or all) packed.
            let direct = !inPlace ? 0 : ncl % 16 == 0 ? ncl : (ncl - 1) / nr * nr
            var s0 = 0
            while s0 < steps {
                let sl = min(kcs, steps - s0), full = max(0, min(sl, wholeSteps - s0))
                let accumulate = s0 > 0 || accumulateFirst, finish = s0 + sl == steps && finishLast
                let block = b + 16 * s0 * ldb + jc
                if direct < ncl {
                    packB(block + direct, ldb: ldb, groups: min(16 * sl, groups - 16 * s0), steps: sl, ncl: ncl - direct, into: edgeB)
                }
                if full < sl && direct > 0 {
                    packB(block + 16 * full * ldb, ldb: ldb, groups: groups - 16 * (s0 + full), steps: 1, ncl: direct, into: tailB)
                }
                var ib = rowStart
                while ib < rowEnd {
                    let rowCount = min(mr, rowEnd - ib), rt: Int32 = rowCount > 16 ? 2 : 1
                    let a = packedA + (ib / 16) * aPanel + s0 * 1024
                    var jb = 0
                    while jb < ncl {
                        let cols = min(nr, ncl - jb), ct: Int32 = cols > 16 ? 2 : 1
                        let cTile = UnsafeMutableRawPointer(c + ib * ldc + jc + jb)
                        let whole = rowCount == 16 * Int(rt) && cols == 16 * Int(ct)
                        // Whole tiles: partial sums from and to C; the last block's through the tile.
                        let cin = whole && accumulate ? UnsafeRawPointer(cTile) : nil
                        let cout = whole && !finish ? cTile : tile, ldcout = whole && !finish ? ldcBytes : 4 * nr
                        if jb < direct {
                            yolo_amx_int8_block_direct(rt, ct, full, a, aPanel, block + jb, 4 * ldb,
                                                       full < sl ? tailB + (jb / 16) * 1024 : nil, cin, ldcBytes, cout, ldcout)
                        } else {
                            yolo_amx_int8_block(rt, ct, sl, a, aPanel, edgeB + (jb - direct) / 16 * sl * 1024, sl * 1024, cin,
                                                ldcBytes, cout, ldcout)
                        }
                        if !whole {
                            AMXStores.merge(tile, rows: rowCount, cols: cols, into: cTile, ldc: ldc, accumulate: accumulate,
                                            finish: finish, comp: comp + ib, scale: scale + ib)
                        } else if finish {
                            AMXStores.finish(tile, rows: rowCount, cols: cols, into: cTile, ldc: ldc, comp: comp + ib,
                                             scale: scale + ib)
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

    /// The 10-bit product in two passes (Int8TenBit.swift): hi leaves int32 sums, shifted left by
    /// 5, to which the lo pass adds before it finishes.
    static func tenBitGemm(m: Int, n: Int, k: Int, packedA: UnsafeRawPointer, hi: UnsafePointer<UInt32>, lo: UnsafePointer<UInt32>,
                           ldb: Int, c: UnsafeMutablePointer<Float>, ldc: Int, comp: UnsafePointer<Int32>,
                           scale: UnsafePointer<Float>, scratch: UnsafeMutableRawPointer, kc: Int, nc: Int, rows: Range<Int>) {
        let rows = rows.lowerBound..<min(m, rows.upperBound)
        guard !rows.isEmpty, n > 0, k > 0 else { return }
        gemm(m: m, n: n, k: k, packedA: packedA, b: hi, ldb: ldb, c: c, ldc: ldc, comp: comp, scale: scale, scratch: scratch,
             kc: kc, nc: nc, rows: rows, finishLast: false)
        for r in rows { AMXStores.shiftSums(UnsafeMutableRawPointer(c + r * ldc), count: n) }
        gemm(m: m, n: n, k: k, packedA: packedA, b: lo, ldb: ldb, c: c, ldc: ldc, comp: comp, scale: scale, scratch: scratch,
             kc: kc, nc: nc, rows: rows, accumulateFirst: true)
    }
}
#endif
