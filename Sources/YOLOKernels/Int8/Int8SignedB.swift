// Dot products of signed bytes for the INT8 GEMM (Int8Gemm.swift) on 64-bit ARM, whose 8-bit
// multiplies are s8 x s8 while our activations are u8 with a zero point: packed B holds each
// byte with its top bit flipped (b xor 0x80, which as s8 is b - 128), so every sum lacks 128 x the
// row's weight sum. Packed A carries that per row after its panels, and the driver subtracts it
// from the row's comp before the dequantizing store: the int32 results stay exact and equal to
// every other level's. Two layouts:
// - `Int8SignedDot`: ARMv8.2 sdot (Cortex-A55, A76: Raspberry Pi 5), 4 products per int32 lane.
// - `Int8WideningDot`: NEON without dotprod (Cortex-A72: Raspberry Pi 4): smull + smlal2 (s8 x s8
//   -> s16, two products per 16-bit lane) and sadalp (pairs of s16 into s32 lanes).
// The instructions themselves come from the level's target (C intrinsics); the layouts, the
// flip and the correction are here, portable, so the x86 tests run them with Swift models of the
// instructions (Tests/YOLOTests/Int8ArmDotTests.swift).

extension Int8DotISA {
    @inlinable @inline(__always) public static func prepareB(_ v: Acc) -> Acc { v }
    @inlinable public static var activationShift: Int32 { 0 }
    @inlinable public static var accumulatesFloats: Bool { false }
    @inlinable public static var partialVectors: Bool { false }
    @inlinable @inline(__always)
    public static func loadPartial(_ p: UnsafeRawPointer, count: Int) -> Acc { int8LoadLanes(p, count: count) }
    @inlinable @inline(__always)
    public static func storePartial(_ v: Acc, _ p: UnsafeMutableRawPointer, count: Int) { int8StoreLanes(v, p, count: count) }
}

extension Int8PackedGemm {
    /// Bytes of the weight panels in packed A (the row corrections follow them).
    @inlinable @inline(__always)
    static func panelBytes(m: Int, k: Int) -> Int { roundUp(m, K.mr) * ((k + 3) / 4) * K.Dot.aBytes }

    /// Bytes of the row corrections: an Int32 per padded row when the dot shifts B, else none.
    @inlinable @inline(__always)
    static func correctionBytes(m: Int) -> Int { K.Dot.activationShift == 0 ? 0 : 4 * roundUp(m, K.mr) }

    /// activationShift x each row's weight sum (wrapping Int32, as the sums), after the panels.
    @inlinable @inline(__always)
    static func packCorrections(_ a: UnsafePointer<Int8>, lda: Int, m: Int, k: Int, rows: Range<Int>,
                                into p: UnsafeMutableRawPointer) {
        let shift = K.Dot.activationShift
        guard shift != 0 else { return }
        for row in rows {
            var sum: Int32 = 0
            if row < m { for i in 0..<k { sum &+= Int32(a[row * lda + i]) } }
            p.storeBytes(of: shift &* sum, toByteOffset: 4 * row, as: Int32.self)
        }
    }

    /// The last, partial micro-panel of a group (`K.nr` UInt32s at `dst`, written as grouped B)
    /// as packed B holds it.
    @inlinable @inline(__always)
    static func prepareB(_ dst: UnsafeMutablePointer<UInt32>) {
        for v in Swift.stride(from: 0, to: K.nr, by: K.Dot.Acc.scalarCount) {
            let x = UnsafeRawPointer(dst + v).loadUnaligned(as: K.Dot.Acc.self)
            UnsafeMutableRawPointer(dst + v).storeBytes(of: K.Dot.prepareB(x), as: K.Dot.Acc.self)
        }
    }

    /// The comp of `rows` for the dequantizing store: comp itself, or, when the dot shifts B,
    /// comp - the rows' corrections (in `adjusted`, at least MR Int32s).
    @inlinable @inline(__always)
    static func rowComp(_ comp: UnsafePointer<Int32>, _ corrections: UnsafeRawPointer, rows: Range<Int>,
                        into adjusted: UnsafeMutablePointer<Int32>) -> UnsafePointer<Int32> {
        guard K.Dot.activationShift != 0 else { return comp + rows.lowerBound }
        for r in rows {
            adjusted[r - rows.lowerBound] = comp[r] &- corrections.loadUnaligned(fromByteOffset: 4 * r, as: Int32.self)
        }
        return UnsafePointer(adjusted)
    }
}

/// Every byte's top bit flipped: u8 b as the s8 b - 128.
@inlinable @inline(__always)
func int8FlipTopBits<V: SIMD>(_ v: V) -> V where V.Scalar == Int32 { v ^ V(repeating: Int32(bitPattern: 0x8080_8080)) }

/// A signed 8-bit dot instruction (ARM sdot): per 32-bit lane, acc + the 4 products of the s8
/// bytes of `b` and `a`, exact.
public protocol Int8SignedDotProduct: Int8Lanes {
    static func signedDot(_ acc: Acc, _ b: Acc, _ a: Acc) -> Acc
}

/// The sdot layout: B as grouped B with the top bits flipped (lanes x 4 s8), a row's 4 weights
/// broadcast to every lane. 4 products per lane and instruction.
public enum Int8SignedDot<L: Int8SignedDotProduct>: Int8DotISA {
    public typealias Acc = L.Acc
    public typealias Floats = L.Floats
    public typealias BOperand = L.Acc
    public typealias AOperand = L.Acc
    @inlinable public static var aBytes: Int { 4 }
    @inlinable public static var activationShift: Int32 { 128 }

    @inlinable @inline(__always)
    public static func packA(_ w0: Int8, _ w1: Int8, _ w2: Int8, _ w3: Int8, into p: UnsafeMutableRawPointer) {
        p.storeBytes(of: (w0, w1, w2, w3), as: (Int8, Int8, Int8, Int8).self)
    }
    @inlinable @inline(__always) public static func prepareB(_ v: L.Acc) -> L.Acc { int8FlipTopBits(v) }
    @inlinable @inline(__always) public static func loadB(_ p: UnsafeRawPointer) -> L.Acc { p.loadUnaligned(as: L.Acc.self) }
    @inlinable @inline(__always)
    public static func loadA(_ p: UnsafeRawPointer) -> L.Acc { L.Acc(repeating: p.loadUnaligned(as: Int32.self)) }
    @inlinable @inline(__always)
    public static func dot(_ acc: L.Acc, _ b: L.Acc, _ a: L.Acc) -> L.Acc { L.signedDot(acc, b, a) }
    @inlinable @inline(__always) public static func floats(_ v: L.Acc) -> L.Floats { L.floats(v) }
    @inlinable @inline(__always)
    public static func quantize(_ p: UnsafePointer<Float>, inverseScale: Float, zeroPoint: Float) -> L.Acc {
        L.quantize(p, inverseScale: inverseScale, zeroPoint: zeroPoint)
    }
    @inlinable @inline(__always) public static func prefetch(_ p: UnsafeRawPointer) { L.prefetch(p) }
}

/// Widening 8-bit multiplies (NEON smull, smlal2, sadalp) on 16-byte vectors: per 16-bit lane
/// h < 8, p[h] = b[h] x lo[h] + b[8 + h] x hi[8 + h] (bytes as s8, products exact, the sum
/// wrapping in 16 bits), then per 32-bit lane j, acc[j] + p[2j] + p[2j + 1].
public protocol Int8WideningMultiply: Int8Lanes where Acc == SIMD4<Int32> {
    static func wideningDot(_ acc: SIMD4<Int32>, _ b: SIMD4<Int32>, _ lo: SIMD4<Int32>, _ hi: SIMD4<Int32>) -> SIMD4<Int32>
}

/// The smull layout. Packed B per 4 columns: bytes (k0, k1) of columns 0-3, then (k2, k3) of
/// columns 0-3, top bits flipped (grouped B's 16-bit halves deinterleaved); a row's weights as
/// (w0, w1) and (w2, w3) each broadcast to every 16-bit lane. So a 16-bit lane sums two products
/// of one column, |p| <= 2 x 128 x 127 = 32512 fits (weights in -127...127, as symmetric
/// quantization makes them; packA refuses -128), and sadalp adds a column's two lanes in int32.
public enum Int8WideningDot<L: Int8WideningMultiply>: Int8DotISA {
    public typealias Acc = SIMD4<Int32>
    public typealias Floats = L.Floats
    public typealias BOperand = SIMD4<Int32>
    public typealias AOperand = (SIMD4<Int32>, SIMD4<Int32>)
    @inlinable public static var aBytes: Int { 4 }
    @inlinable public static var activationShift: Int32 { 128 }

    @inlinable @inline(__always)
    public static func packA(_ w0: Int8, _ w1: Int8, _ w2: Int8, _ w3: Int8, into p: UnsafeMutableRawPointer) {
        precondition(w0 != -128 && w1 != -128 && w2 != -128 && w3 != -128,
                     "int8 gemm: weight -128 (the widening dot needs -127...127, as symmetric quantization gives)")
        p.storeBytes(of: (w0, w1, w2, w3), as: (Int8, Int8, Int8, Int8).self)
    }
    @inlinable @inline(__always)
    public static func prepareB(_ v: SIMD4<Int32>) -> SIMD4<Int32> {
        let h = unsafeBitCast(int8FlipTopBits(v), to: SIMD8<UInt16>.self)
        return unsafeBitCast(SIMD8<UInt16>(lowHalf: h.evenHalf, highHalf: h.oddHalf), to: SIMD4<Int32>.self)
    }
    @inlinable @inline(__always)
    public static func loadB(_ p: UnsafeRawPointer) -> SIMD4<Int32> { p.loadUnaligned(as: SIMD4<Int32>.self) }
    @inlinable @inline(__always)
    public static func loadA(_ p: UnsafeRawPointer) -> (SIMD4<Int32>, SIMD4<Int32>) {
        (unsafeBitCast(SIMD8<Int16>(repeating: p.loadUnaligned(as: Int16.self)), to: SIMD4<Int32>.self),
         unsafeBitCast(SIMD8<Int16>(repeating: p.loadUnaligned(fromByteOffset: 2, as: Int16.self)), to: SIMD4<Int32>.self))
    }
    @inlinable @inline(__always)
    public static func dot(_ acc: SIMD4<Int32>, _ b: SIMD4<Int32>, _ a: (SIMD4<Int32>, SIMD4<Int32>)) -> SIMD4<Int32> {
        L.wideningDot(acc, b, a.0, a.1)
    }
    @inlinable @inline(__always) public static func floats(_ v: SIMD4<Int32>) -> L.Floats { L.floats(v) }
    @inlinable @inline(__always)
    public static func quantize(_ p: UnsafePointer<Float>, inverseScale: Float, zeroPoint: Float) -> SIMD4<Int32> {
        L.quantize(p, inverseScale: inverseScale, zeroPoint: zeroPoint)
    }
    @inlinable @inline(__always) public static func prefetch(_ p: UnsafeRawPointer) { L.prefetch(p) }
}
