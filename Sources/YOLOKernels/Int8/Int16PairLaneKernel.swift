// The 16-bit pair GEMM's micro-kernel for ARM's widening multiply-accumulate by element (the neon
// level, so every 64-bit ARM CPU: INT8 Winograd and the 10-bit layers, `a10`): `smlal v.4s,
// b.4h, a.h[i]` (and smlal2 on a register's upper 4 halves) multiplies 4 int16 of B by one int16
// of A held in a lane of a vector. A group's 8 rows of packed A (32 bytes: a row's word is its
// two channels' int16 kernels, `Int16PairDot`'s layout) are two plain vector loads, not 16
// broadcasts; B's words (channel 2g in bits 0-15, 2g + 1 in bits 16-31) are split per pair of
// vectors by uzp1 / uzp2 into the two channels' halves, once for the 8 rows.
// Before it, the portable dot (Int16PortablePairDot) compiled to smlal too, but in 4 x 8 tiles:
// per group 8 ld1r broadcasts, their address arithmetic and 6 shifts beside 16 smlal
// (scripts/arm-mca.sh: 80% of smlal's rate in LLVM's Cortex-A72 model, 36% in the A55's). Same
// sums, bit for bit: integer products, wrapping adds, in any order. The driver's edge code
// (partial panels) and the direct conv + pool run the same instructions a row at a time
// (`Int16SplitPairDot`); packed A is the portable dot's.

/// smlal by element on a level's 4 x int32 lanes: the split of B's pair words and the pair
/// multiply-accumulate.
public protocol Int16PairsByLane: Int8Lanes where Acc == SIMD4<Int32>, Floats == SIMD4<Float> {
    /// uzp1 .8h: the low halves (bits 0-15) of x's 4 words in halves 0-3, of y's in halves 4-7.
    static func pairLows(_ x: SIMD4<Int32>, _ y: SIMD4<Int32>) -> SIMD4<Int32>
    /// uzp2 .8h: the high halves (bits 16-31), likewise.
    static func pairHighs(_ x: SIMD4<Int32>, _ y: SIMD4<Int32>) -> SIMD4<Int32>
    /// acc + per lane j: lows' half (upper ? 4 + j : j) x a's half 2·row, plus highs' half
    /// (likewise) x a's half 2·row + 1; int16 x int16 products, wrapping int32 adds. `row` 0...3
    /// (a constant once inlined).
    static func pairDot(_ acc: SIMD4<Int32>, lows: SIMD4<Int32>, highs: SIMD4<Int32>, _ a: SIMD4<Int32>,
                        row: Int, upper: Bool) -> SIMD4<Int32>
}

/// The same instructions for code that takes one row's kernels at a time (the driver's edge code,
/// the direct conv + pool of DirectConvPairs.swift): B split once per vector (then used for every
/// row), a row's word broadcast, two smlal by element per dot. (The portable dot there became
/// mul / mla .4s in the GEMM's edge code, and scalar madd in the direct conv, with Swift 6.0.3 for
/// arm64 Linux.)
public enum Int16SplitPairDot<L: Int16PairsByLane>: Int8DotISA {
    public typealias Acc = SIMD4<Int32>
    public typealias Floats = SIMD4<Float>
    public typealias BOperand = (SIMD4<Int32>, SIMD4<Int32>)
    public typealias AOperand = SIMD4<Int32>
    @inlinable public static var aBytes: Int { 4 }
    @inlinable public static var accumulatesFloats: Bool { true }

    @inlinable @inline(__always)
    public static func packA(_ w0: Int8, _ w1: Int8, _ w2: Int8, _ w3: Int8, into p: UnsafeMutableRawPointer) {
        Int16PortablePairDot<L>.packA(w0, w1, w2, w3, into: p)
    }
    @inlinable @inline(__always)
    public static func loadB(_ p: UnsafeRawPointer) -> BOperand {
        let v = p.loadUnaligned(as: SIMD4<Int32>.self)
        return (L.pairLows(v, v), L.pairHighs(v, v))
    }
    @inlinable @inline(__always)
    public static func loadA(_ p: UnsafeRawPointer) -> AOperand { SIMD4<Int32>(repeating: p.loadUnaligned(as: Int32.self)) }
    @inlinable @inline(__always)
    public static func dot(_ acc: SIMD4<Int32>, _ b: BOperand, _ a: AOperand) -> SIMD4<Int32> {
        L.pairDot(acc, lows: b.0, highs: b.1, a, row: 0, upper: false)
    }
    @inlinable @inline(__always) public static func floats(_ v: SIMD4<Int32>) -> SIMD4<Float> { L.floats(v) }
    @inlinable @inline(__always)
    public static func quantize(_ p: UnsafePointer<Float>, inverseScale: Float, zeroPoint: Float) -> SIMD4<Int32> {
        L.quantize(p, inverseScale: inverseScale, zeroPoint: zeroPoint)
    }
    @inlinable @inline(__always) public static func prefetch(_ p: UnsafeRawPointer) { L.prefetch(p) }
}

/// 8 x 12 int32 sums (24 q accumulators) + B's halves (4 vectors) + 2 vectors of kernels: 30 of
/// the 32 q registers. Per group 48 smlal, 4 uzp and 5 loads.
public enum Int16PairKernel8x3ByLane<L: Int16PairsByLane>: Int8MicroKernel {
    public typealias Dot = Int16SplitPairDot<L>
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
            // Columns 0-3 in the lower halves of l01 / h01, 4-7 in the upper; 8-11 in the lower of l2 / h2.
            let l01 = L.pairLows(b0, b1), h01 = L.pairHighs(b0, b1), l2 = L.pairLows(b2, b2), h2 = L.pairHighs(b2, b2)
            let lo = pa.loadUnaligned(as: V.self), hi = (pa + 16).loadUnaligned(as: V.self)
            @inline(__always) func three(_ x: inout V, _ y: inout V, _ z: inout V, _ w: V, _ row: Int) {
                x = L.pairDot(x, lows: l01, highs: h01, w, row: row, upper: false)
                y = L.pairDot(y, lows: l01, highs: h01, w, row: row, upper: true)
                z = L.pairDot(z, lows: l2, highs: h2, w, row: row, upper: false)
            }
            three(&c00, &c01, &c02, lo, 0); three(&c10, &c11, &c12, lo, 1)
            three(&c20, &c21, &c22, lo, 2); three(&c30, &c31, &c32, lo, 3)
            three(&c40, &c41, &c42, hi, 0); three(&c50, &c51, &c52, hi, 1)
            three(&c60, &c61, &c62, hi, 2); three(&c70, &c71, &c72, hi, 3)
            pa += 32
            pb += 48
        }
        int8StoreTile8x12(((c00, c01, c02), (c10, c11, c12), (c20, c21, c22), (c30, c31, c32),
                           (c40, c41, c42), (c50, c51, c52), (c60, c61, c62), (c70, c71, c72)),
                          c, ldc, accumulate: accumulate, finish: finish, comp: comp, scale: scale, Dot.self)
    }
}

/// `Int16PairsByLane` in Swift lane arithmetic, on any CPU: the model the tests hold the micro-kernel
/// to where the CPU has no smlal (its halves are those uzp1 / uzp2 make, bit for bit).
public enum Int16PairsByLaneModel<L: Int8Lanes>: Int16PairsByLane where L.Acc == SIMD4<Int32>, L.Floats == SIMD4<Float> {
    public typealias Acc = SIMD4<Int32>
    public typealias Floats = SIMD4<Float>
    @inlinable public static func floats(_ v: SIMD4<Int32>) -> SIMD4<Float> { L.floats(v) }
    @inlinable public static func prefetch(_ p: UnsafeRawPointer) { L.prefetch(p) }
    @inlinable
    static func halves(_ x: SIMD4<Int32>, _ y: SIMD4<Int32>, shift: Int32) -> SIMD4<Int32> {
        let h = { (v: Int32) in UInt32(bitPattern: v &>> shift) & 0xFFFF }
        return SIMD4(Int32(bitPattern: h(x[0]) | h(x[1]) << 16), Int32(bitPattern: h(x[2]) | h(x[3]) << 16),
                     Int32(bitPattern: h(y[0]) | h(y[1]) << 16), Int32(bitPattern: h(y[2]) | h(y[3]) << 16))
    }
    @inlinable public static func pairLows(_ x: SIMD4<Int32>, _ y: SIMD4<Int32>) -> SIMD4<Int32> { halves(x, y, shift: 0) }
    @inlinable public static func pairHighs(_ x: SIMD4<Int32>, _ y: SIMD4<Int32>) -> SIMD4<Int32> { halves(x, y, shift: 16) }
    @inlinable
    public static func pairDot(_ acc: SIMD4<Int32>, lows: SIMD4<Int32>, highs: SIMD4<Int32>, _ a: SIMD4<Int32>,
                               row: Int, upper: Bool) -> SIMD4<Int32> {
        /// Half i (0...7) of v as a signed value.
        func half(_ v: SIMD4<Int32>, _ i: Int) -> Int32 { Int32(Int16(truncatingIfNeeded: v[i / 2] &>> Int32(16 * (i % 2)))) }
        var out = acc
        for j in 0..<4 {
            let i = (upper ? 4 : 0) + j
            out[j] = out[j] &+ half(lows, i) &* half(a, 2 * row) &+ half(highs, i) &* half(a, 2 * row + 1)
        }
        return out
    }
}
