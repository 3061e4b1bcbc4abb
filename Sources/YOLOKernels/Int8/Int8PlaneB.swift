// The INT8 GEMM of a 3x3 stride-1 convolution with B packed straight from padded planes (the
// engine's `int8` where the level has no tap products): no column matrix. im2col wrote one (9 words
// per input word: yolov3-tiny's layer 21 at 26x26, 3.4 MiB, twice the L2 of the CPUs measured) and
// the GEMM then read it again to pack it. Here each packed block of B (KC groups x NC columns,
// sized for the cache) is copied from the planes: group q of the column matrix is plane q / 9
// shifted by its tap (q % 9 = ky x 3 + kx, im2col's row order), and a panel's columns are runs of
// pixels of one output row each, contiguous in the padded plane. The packed words are im2col's, so
// the sums are too, bit for bit (Int8KernelTests). Measured: docs/performance-low-precision.md,
// "INT8 without a column matrix".

/// Where B's words are: `groups` padded planes (TapConv.pad with shift 0: the input's rows between
/// a row of padding above and below, each with one word of padding left and right, so a row is
/// width + 2 words), `planeStride` words apart; the output has `width` columns per row.
public struct Int8PlaneGeometry: Sendable, Equatable {
    public let width: Int
    public let planeStride: Int
    public init(width: Int, planeStride: Int) { (self.width, self.planeStride) = (width, planeStride) }
}

extension Int8PackedGemm {
    /// C (rows `rowStart ..< rowEnd` of m, columns n) as `gemm` computes it for the 3x3 column
    /// matrix of the padded planes, its columns the output pixels `firstColumn ..< firstColumn + n`
    /// (row-major, `geometry.width` a row). k = 9 x 4 x the planes' groups.
    @inlinable @inline(__always)
    public static func gemm(m: Int, n: Int, k: Int, packedA: UnsafeRawPointer, planes: UnsafePointer<UInt32>,
                            geometry: Int8PlaneGeometry, firstColumn: Int, c: UnsafeMutablePointer<Float>, ldc: Int,
                            comp: UnsafePointer<Int32>, scale: UnsafePointer<Float>, scratch: UnsafeMutableRawPointer,
                            kc: Int, nc: Int, rowStart: Int, rowEnd: Int) {
        blocks(m: m, n: n, k: k, packedA: packedA, c: c, ldc: ldc, comp: comp, scale: scale, scratch: scratch, kc: kc, nc: nc,
               rowStart: rowStart, rowEnd: rowEnd, accumulateFirst: false, finishLast: true) { g0, gl, jc, ncl, bp in
            packB(planes: planes, geometry, groups: g0..<g0 + gl, firstColumn: firstColumn + jc, count: ncl, into: bp)
        }
    }

    /// Packs groups `groups` of the planes' 3x3 column matrix, columns (output pixels) `firstColumn
    /// ..< firstColumn + count`, as `packB` packs the same rows of im2col's matrix. Each run of
    /// columns is copied a whole vector at a time, in order, so a run's last vector may write
    /// past it: the next run, the next row's, or the next panel's first run overwrites that, and
    /// after the last one it lands in the scratch tile that follows the packed block (unused while
    /// packing); it may read up to a vector past a plane's last row (TapConv.planeStride leaves
    /// more than that).
    @inlinable @inline(__always)
    static func packB(planes: UnsafePointer<UInt32>, _ geometry: Int8PlaneGeometry, groups: Range<Int>, firstColumn: Int,
                      count: Int, into bp: UnsafeMutablePointer<UInt32>) {
        // A panel's runs, 3 Ints each (offset in the panel, offset in a plane, length): at most one a column.
        withUnsafeTemporaryAllocation(of: Int.self, capacity: 3 * K.nr) { runs in
            packB(planes: planes, geometry, groups: groups, firstColumn: firstColumn, count: count, into: bp,
                  runs: runs.baseAddress!)
        }
    }

    /// `packB(planes:...)` with room for a panel's runs at `runs`. (One closure holding all of it
    /// was more than Swift 6.0.3's type checker would take.)
    @inlinable @inline(__always)
    static func packB(planes: UnsafePointer<UInt32>, _ geometry: Int8PlaneGeometry, groups: Range<Int>, firstColumn: Int,
                      count: Int, into bp: UnsafeMutablePointer<UInt32>, runs: UnsafeMutablePointer<Int>) {
        let nr: Int = K.nr, w: Int = K.Dot.Acc.scalarCount, gl: Int = groups.count
        let ow: Int = geometry.width, stride: Int = geometry.planeStride, wp: Int = ow + 2
        var j0 = 0
        while j0 < count {
            let cols: Int = min(nr, count - j0)
            var runCount = 0, j = 0
            while j < cols {
                let pixel: Int = firstColumn + j0 + j
                let oy: Int = pixel / ow, ox: Int = pixel % ow
                let length: Int = min(cols - j, ow - ox)
                runs[3 * runCount] = j
                runs[3 * runCount + 1] = oy * wp + ox
                runs[3 * runCount + 2] = length
                runCount += 1
                j += length
            }
            let panel: UnsafeMutablePointer<UInt32> = bp + j0 * gl
            for q in 0..<gl {
                let group: Int = groups.lowerBound + q
                let tap: Int = group % 9
                let offset: Int = group / 9 * stride + tap / 3 * wp + tap % 3
                let plane = UnsafeRawPointer(planes + offset)
                let row: UnsafeMutablePointer<UInt32> = panel + q * nr
                let dst = UnsafeMutableRawPointer(row)
                for r in 0..<runCount {
                    let to: Int = runs[3 * r], from: Int = runs[3 * r + 1], length: Int = runs[3 * r + 2]
                    var v = 0
                    repeat {
                        let x = (plane + 4 * (from + v)).loadUnaligned(as: K.Dot.Acc.self)
                        (dst + 4 * (to + v)).storeBytes(of: x, as: K.Dot.Acc.self)
                        v += w
                    } while v < length
                }
                if cols < nr { (row + cols).update(repeating: 0, count: nr - cols) }
                prepareB(row)
            }
            j0 += nr
        }
    }
}
