// From a 32 x 32 scratch tile (row stride 128 bytes) into C: the INT8 GEMM's dequantizing store
// and its int32 merges, rounded as `int8Store` and `int8StoreScalar` round (Int8Stores.swift:
// vcvtdq2ps, then one multiply), and the BF16 GEMM's copies and FP32 adds.
#if arch(x86_64)
import CDot

enum AMXStores {
    /// C[r][j] = Float(t[r][j] - comp[r]) * scale[r] for the first `rows` x `cols`.
    @inline(__always)
    static func finish(_ t: UnsafeMutableRawPointer, rows: Int, cols: Int, into c: UnsafeMutableRawPointer, ldc: Int,
                       comp: UnsafePointer<Int32>, scale: UnsafePointer<Float>) {
        merge(t, rows: rows, cols: cols, into: c, ldc: ldc, accumulate: false, finish: true, comp: comp, scale: scale)
    }

    /// s = t[r][j] (+ C's int32 when `accumulate`); C = finish ? Float(s - comp[r]) * scale[r] : s.
    @inline(__always)
    static func merge(_ t: UnsafeMutableRawPointer, rows: Int, cols: Int, into c: UnsafeMutableRawPointer, ldc: Int,
                      accumulate: Bool, finish: Bool, comp: UnsafePointer<Int32>, scale: UnsafePointer<Float>) {
        for r in 0..<rows {
            let src = t + 128 * r, dst = c + 4 * ldc * r
            let k = SIMD16<Int32>(repeating: comp[r]), s = SIMD16<Float>(repeating: scale[r])
            var j = 0
            while j + 16 <= cols {
                var v = src.loadUnaligned(fromByteOffset: 4 * j, as: SIMD16<Int32>.self)
                if accumulate { v &+= dst.loadUnaligned(fromByteOffset: 4 * j, as: SIMD16<Int32>.self) }
                if finish {
                    dst.storeBytes(of: yolo_float_512(v &- k) * s, toByteOffset: 4 * j, as: SIMD16<Float>.self)
                } else {
                    dst.storeBytes(of: v, toByteOffset: 4 * j, as: SIMD16<Int32>.self)
                }
                j += 16
            }
            while j < cols {
                var v = src.load(fromByteOffset: 4 * j, as: Int32.self)
                if accumulate { v &+= dst.load(fromByteOffset: 4 * j, as: Int32.self) }
                if finish {
                    dst.storeBytes(of: Float(v &- comp[r]) * scale[r], toByteOffset: 4 * j, as: Float.self)
                } else {
                    dst.storeBytes(of: v, toByteOffset: 4 * j, as: Int32.self)
                }
                j += 1
            }
        }
    }

    /// The `count` int32 sums at `p` times 32, wrapping.
    @inline(__always)
    static func shiftSums(_ p: UnsafeMutableRawPointer, count: Int) {
        var j = 0
        while j + 16 <= count {
            p.storeBytes(of: p.loadUnaligned(fromByteOffset: 4 * j, as: SIMD16<Int32>.self) &<< 5, toByteOffset: 4 * j,
                         as: SIMD16<Int32>.self)
            j += 16
        }
        while j < count {
            p.storeBytes(of: p.load(fromByteOffset: 4 * j, as: Int32.self) &<< 5, toByteOffset: 4 * j, as: Int32.self)
            j += 1
        }
    }

    /// C[r][j] = (C[r][j] +) t[r][j] for the first `rows` x `cols` (FP32).
    @inline(__always)
    static func add(_ t: UnsafeMutableRawPointer, rows: Int, cols: Int, into c: UnsafeMutablePointer<Float>, ldc: Int,
                    accumulate: Bool) {
        for r in 0..<rows {
            let src = t + 128 * r, dst = c + ldc * r
            var j = 0
            while j + 16 <= cols {
                var v = src.loadUnaligned(fromByteOffset: 4 * j, as: SIMD16<Float>.self)
                if accumulate { v += UnsafeRawPointer(dst + j).loadUnaligned(as: SIMD16<Float>.self) }
                UnsafeMutableRawPointer(dst + j).storeBytes(of: v, as: SIMD16<Float>.self)
                j += 16
            }
            while j < cols {
                let v = src.load(fromByteOffset: 4 * j, as: Float.self)
                dst[j] = accumulate ? dst[j] + v : v
                j += 1
            }
        }
    }
}
#endif
