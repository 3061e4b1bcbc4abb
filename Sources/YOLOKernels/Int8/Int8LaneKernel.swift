// The INT8 micro-kernel of ARM's sdot by element: `sdot v.4s, b.16b, a.4b[lane]` multiplies B's
// bytes by the 4 weights of one row held in one 32-bit lane of a vector, so a group's 8 rows of
// packed A (32 bytes, `Int8SignedDot`'s layout: 4 bytes a row) are two plain vector loads instead
// of 8 broadcasts (ld1r, whose only addressing is a register, costs an add each). Same tile,
// same results as Int8Kernel8x3<Int8SignedDot<L>>, whose edge code (int8RunVector) the driver
// uses for partial panels.

/// sdot by element: acc + per 32-bit lane the 4 products of that lane's s8 bytes of `b` and the
/// 4 s8 bytes of lane `lane` (0...3, a constant once inlined) of `a`.
public protocol Int8SignedDotByLane: Int8SignedDotProduct where Acc == SIMD4<Int32> {
    static func signedDot(_ acc: SIMD4<Int32>, _ b: SIMD4<Int32>, _ a: SIMD4<Int32>, lane: Int) -> SIMD4<Int32>
}

/// 8 x 12 int32 sums (24 q accumulators) + 3 B vectors + 2 vectors of weights: 29 of the 32 q
/// registers.
public enum Int8Kernel8x3ByLane<L: Int8SignedDotByLane>: Int8MicroKernel {
    public typealias Dot = Int8SignedDot<L>
    @inlinable public static var mr: Int { 8 }
    @inlinable public static var nr: Int { 12 }

    @inlinable @inline(__always)
    public static func run(_ groups: Int, _ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ c: UnsafeMutablePointer<Float>,
                           _ ldc: Int, accumulate: Bool, finish: Bool, comp: UnsafePointer<Int32>,
                           scale: UnsafePointer<Float>) {
        typealias V = SIMD4<Int32>
        var c00 = V(), c01 = V(), c02 = V(), c10 = V(), c11 = V(), c12 = V(), c20 = V(), c21 = V(), c22 = V()
        var c30 = V(), c31 = V(), c32 = V(), c40 = V(), c41 = V(), c42 = V(), c50 = V(), c51 = V(), c52 = V()
        var c60 = V(), c61 = V(), c62 = V(), c70 = V(), c71 = V(), c72 = V()
        var pa = a, pb = b
        for _ in 0..<groups {
            L.prefetch(pa + 2048)
            let b0 = pb.loadUnaligned(as: V.self), b1 = (pb + 16).loadUnaligned(as: V.self), b2 = (pb + 32).loadUnaligned(as: V.self)
            let lo = pa.loadUnaligned(as: V.self), hi = (pa + 16).loadUnaligned(as: V.self)
            c00 = L.signedDot(c00, b0, lo, lane: 0); c01 = L.signedDot(c01, b1, lo, lane: 0); c02 = L.signedDot(c02, b2, lo, lane: 0)
            c10 = L.signedDot(c10, b0, lo, lane: 1); c11 = L.signedDot(c11, b1, lo, lane: 1); c12 = L.signedDot(c12, b2, lo, lane: 1)
            c20 = L.signedDot(c20, b0, lo, lane: 2); c21 = L.signedDot(c21, b1, lo, lane: 2); c22 = L.signedDot(c22, b2, lo, lane: 2)
            c30 = L.signedDot(c30, b0, lo, lane: 3); c31 = L.signedDot(c31, b1, lo, lane: 3); c32 = L.signedDot(c32, b2, lo, lane: 3)
            c40 = L.signedDot(c40, b0, hi, lane: 0); c41 = L.signedDot(c41, b1, hi, lane: 0); c42 = L.signedDot(c42, b2, hi, lane: 0)
            c50 = L.signedDot(c50, b0, hi, lane: 1); c51 = L.signedDot(c51, b1, hi, lane: 1); c52 = L.signedDot(c52, b2, hi, lane: 1)
            c60 = L.signedDot(c60, b0, hi, lane: 2); c61 = L.signedDot(c61, b1, hi, lane: 2); c62 = L.signedDot(c62, b2, hi, lane: 2)
            c70 = L.signedDot(c70, b0, hi, lane: 3); c71 = L.signedDot(c71, b1, hi, lane: 3); c72 = L.signedDot(c72, b2, hi, lane: 3)
            pa += 32
            pb += 48
        }
        int8StoreTile8x12(((c00, c01, c02), (c10, c11, c12), (c20, c21, c22), (c30, c31, c32),
                           (c40, c41, c42), (c50, c51, c52), (c60, c61, c62), (c70, c71, c72)),
                          c, ldc, accumulate: accumulate, finish: finish, comp: comp, scale: scale, Dot.self)
    }
}

/// The 8 x 12 tile of 4-lane int32 sums of the by-element kernels (this one and
/// Int16PairKernel8x3ByLane) stored row by row as `D`'s stores do.
@inlinable @inline(__always)
func int8StoreTile8x12<D: Int8DotISA>(_ t: ((SIMD4<Int32>, SIMD4<Int32>, SIMD4<Int32>), (SIMD4<Int32>, SIMD4<Int32>, SIMD4<Int32>),
                                           (SIMD4<Int32>, SIMD4<Int32>, SIMD4<Int32>), (SIMD4<Int32>, SIMD4<Int32>, SIMD4<Int32>),
                                           (SIMD4<Int32>, SIMD4<Int32>, SIMD4<Int32>), (SIMD4<Int32>, SIMD4<Int32>, SIMD4<Int32>),
                                           (SIMD4<Int32>, SIMD4<Int32>, SIMD4<Int32>), (SIMD4<Int32>, SIMD4<Int32>, SIMD4<Int32>)),
                                      _ c: UnsafeMutablePointer<Float>, _ ldc: Int, accumulate: Bool, finish: Bool,
                                      comp: UnsafePointer<Int32>, scale: UnsafePointer<Float>, _: D.Type) where D.Acc == SIMD4<Int32> {
    @inline(__always) func row(_ r: Int, _ x: (SIMD4<Int32>, SIMD4<Int32>, SIMD4<Int32>)) {
        let pc = c + r * ldc, k = finish ? comp[r] : 0, s = finish || D.accumulatesFloats ? scale[r] : 0
        int8Store(x.0, pc, accumulate: accumulate, finish: finish, comp: k, scale: s, D.self)
        int8Store(x.1, pc + 4, accumulate: accumulate, finish: finish, comp: k, scale: s, D.self)
        int8Store(x.2, pc + 8, accumulate: accumulate, finish: finish, comp: k, scale: s, D.self)
    }
    row(0, t.0); row(1, t.1); row(2, t.2); row(3, t.3); row(4, t.4); row(5, t.5); row(6, t.6); row(7, t.7)
}
