// 16-bit products for INT8 Winograd (the engine's `winograd4-int8`, `winograd2-int8`): after the
// integer input transform the activations are int16 (|v| <= 100 x 255 for F(4x4), 4 x 255 for
// F(2x2)) and the transformed kernels int16 too (10 bits for F(4x4), at most 9 x 127 for F(2x2):
// products up to 1020 x 1143, below F(4x4)'s 511 x 25500), so the GEMM multiplies pairs of int16, not 4 bytes: B's UInt32 per column
// and group holds the values of two channels (bits 0-15, 16-31), A's 4 "weights" of a group are
// the little-endian bytes of two int16 kernels. The driver, packing and tails are those of the
// INT8 GEMM (Int8Gemm.swift), with k counted in bytes of A (2 per channel).
//
// Sums of products that large overflow int32 past about 164 channels (511 x 25500 per product),
// so these dots accumulate in float between blocks of k (`accumulatesFloats`): each block's exact
// int32 sum is converted and scaled, then added to C. A block must stay below that depth: give
// `Int8Functions.make` a kc of at most `Int16Pairs.maxGroupsPerBlock` groups. There is no zero
// point (the transform works on q - zp): comp is ignored.

public enum Int16Pairs {
    /// Groups of k (2 channels each) per block: 128 channels, at most 128 x 2 x 511 x 25500 <
    /// 2^31 in any int32 lane.
    public static let maxGroupsPerBlock = 64
    /// The largest magnitude of a transformed kernel value (10 bits).
    public static let kernelLimit: Int32 = 511
}

/// Pairs of int16 with a 16-bit multiply-add (vpmaddwd + vpaddd, or vpdpwssd): exact.
public enum Int16PairDot<L: Int16MultiplyAdd>: Int8DotISA {
    public typealias Acc = L.Acc
    public typealias Floats = L.Floats
    public typealias BOperand = L.Acc
    public typealias AOperand = L.Acc
    @inlinable public static var aBytes: Int { 4 }
    @inlinable public static var accumulatesFloats: Bool { true }

    @inlinable @inline(__always)
    public static func packA(_ w0: Int8, _ w1: Int8, _ w2: Int8, _ w3: Int8, into p: UnsafeMutableRawPointer) {
        p.storeBytes(of: w0, as: Int8.self)
        p.storeBytes(of: w1, toByteOffset: 1, as: Int8.self)
        p.storeBytes(of: w2, toByteOffset: 2, as: Int8.self)
        p.storeBytes(of: w3, toByteOffset: 3, as: Int8.self)
    }
    @inlinable @inline(__always)
    public static func loadB(_ p: UnsafeRawPointer) -> L.Acc { p.loadUnaligned(as: L.Acc.self) }
    @inlinable @inline(__always)
    public static func loadA(_ p: UnsafeRawPointer) -> L.Acc { L.Acc(repeating: p.loadUnaligned(as: Int32.self)) }
    @inlinable @inline(__always)
    public static func dot(_ acc: L.Acc, _ b: L.Acc, _ a: L.Acc) -> L.Acc { L.multiplyAccumulate16(acc, b, a) }
    @inlinable @inline(__always) public static func floats(_ v: L.Acc) -> L.Floats { L.floats(v) }
    @inlinable public static var partialVectors: Bool { L.partialLanes }
    @inlinable @inline(__always)
    public static func loadPartial(_ p: UnsafeRawPointer, count: Int) -> L.Acc { L.loadLanes(p, count: count) }
    @inlinable @inline(__always)
    public static func storePartial(_ v: L.Acc, _ p: UnsafeMutableRawPointer, count: Int) { L.storeLanes(v, p, count: count) }
    @inlinable @inline(__always)
    public static func quantize(_ p: UnsafePointer<Float>, inverseScale: Float, zeroPoint: Float) -> L.Acc {
        L.quantize(p, inverseScale: inverseScale, zeroPoint: zeroPoint)
    }
    @inlinable @inline(__always) public static func prefetch(_ p: UnsafeRawPointer) { L.prefetch(p) }
}

/// Pairs of int16 in plain int32 lane arithmetic (sign-extended halves, two multiplies): any CPU.
public enum Int16PortablePairDot<L: Int8Lanes>: Int8DotISA {
    public typealias Acc = L.Acc
    public typealias Floats = L.Floats
    public typealias BOperand = (L.Acc, L.Acc)
    public typealias AOperand = (L.Acc, L.Acc)
    @inlinable public static var aBytes: Int { 4 }
    @inlinable public static var accumulatesFloats: Bool { true }

    @inlinable @inline(__always)
    public static func packA(_ w0: Int8, _ w1: Int8, _ w2: Int8, _ w3: Int8, into p: UnsafeMutableRawPointer) {
        Int16PairDot<Int16PairModel<L>>.packA(w0, w1, w2, w3, into: p)
    }
    @inlinable @inline(__always)
    public static func loadB(_ p: UnsafeRawPointer) -> BOperand {
        let v = p.loadUnaligned(as: L.Acc.self)
        let low: L.Acc = (v &<< 16) &>> 16
        return (low, v &>> 16)
    }
    @inlinable @inline(__always)
    public static func loadA(_ p: UnsafeRawPointer) -> AOperand {
        (L.Acc(repeating: Int32(p.loadUnaligned(as: Int16.self))),
         L.Acc(repeating: Int32(p.loadUnaligned(fromByteOffset: 2, as: Int16.self))))
    }
    @inlinable @inline(__always)
    public static func dot(_ acc: L.Acc, _ b: BOperand, _ a: AOperand) -> L.Acc {
        let low: L.Acc = b.0 &* a.0
        return acc &+ low &+ b.1 &* a.1
    }
    @inlinable @inline(__always) public static func floats(_ v: L.Acc) -> L.Floats { L.floats(v) }
    @inlinable public static var partialVectors: Bool { L.partialLanes }
    @inlinable @inline(__always)
    public static func loadPartial(_ p: UnsafeRawPointer, count: Int) -> L.Acc { L.loadLanes(p, count: count) }
    @inlinable @inline(__always)
    public static func storePartial(_ v: L.Acc, _ p: UnsafeMutableRawPointer, count: Int) { L.storeLanes(v, p, count: count) }
    @inlinable @inline(__always)
    public static func quantize(_ p: UnsafePointer<Float>, inverseScale: Float, zeroPoint: Float) -> L.Acc {
        L.quantize(p, inverseScale: inverseScale, zeroPoint: zeroPoint)
    }
    @inlinable @inline(__always) public static func prefetch(_ p: UnsafeRawPointer) { L.prefetch(p) }
}

/// vpmaddwd in Swift lane arithmetic: the model the tests hold the instruction's users to, and
/// the packing shared by both pair dots.
public enum Int16PairModel<L: Int8Lanes>: Int16MultiplyAdd {
    public typealias Acc = L.Acc
    public typealias Floats = L.Floats
    @inlinable @inline(__always) public static func floats(_ v: L.Acc) -> L.Floats { L.floats(v) }
    @inlinable public static var partialVectors: Bool { L.partialLanes }
    @inlinable @inline(__always)
    public static func loadPartial(_ p: UnsafeRawPointer, count: Int) -> L.Acc { L.loadLanes(p, count: count) }
    @inlinable @inline(__always)
    public static func storePartial(_ v: L.Acc, _ p: UnsafeMutableRawPointer, count: Int) { L.storeLanes(v, p, count: count) }
    @inlinable @inline(__always)
    public static func quantize(_ p: UnsafePointer<Float>, inverseScale: Float, zeroPoint: Float) -> L.Acc {
        L.quantize(p, inverseScale: inverseScale, zeroPoint: zeroPoint)
    }
    @inlinable @inline(__always)
    public static func multiplyAdd16(_ a: L.Acc, _ b: L.Acc) -> L.Acc {
        // (In steps: Swift 6.0's type checker gives up on the one-line form.)
        let aLow: L.Acc = (a &<< 16) &>> 16, bLow: L.Acc = (b &<< 16) &>> 16
        let high: L.Acc = (a &>> 16) &* (b &>> 16)
        return aLow &* bLow &+ high
    }
    @inlinable @inline(__always) public static func prefetch(_ p: UnsafeRawPointer) { L.prefetch(p) }
}

/// 6 x (2·W) for the pair dots: 12 accumulators + 2 B vectors + 1 broadcast (15 of x86's 16
/// ymm registers; the 8-bit dots' 4 x 2 leaves room for their split operands, these have none).
public enum Int16PairKernel6x2<D: Int8DotISA>: Int8MicroKernel {
    public typealias Dot = D
    @inlinable public static var mr: Int { 6 }
    @inlinable public static var nr: Int { 2 * D.Acc.scalarCount }

    @inlinable @inline(__always)
    public static func run(_ groups: Int, _ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ c: UnsafeMutablePointer<Float>,
                           _ ldc: Int, accumulate: Bool, finish: Bool, comp: UnsafePointer<Int32>,
                           scale: UnsafePointer<Float>) {
        let vb = 4 * D.Acc.scalarCount, ab = D.aBytes
        var c00 = D.Acc(), c01 = D.Acc(), c10 = D.Acc(), c11 = D.Acc(), c20 = D.Acc(), c21 = D.Acc()
        var c30 = D.Acc(), c31 = D.Acc(), c40 = D.Acc(), c41 = D.Acc(), c50 = D.Acc(), c51 = D.Acc()
        var pa = a, pb = b
        for _ in 0..<groups {
            let b0 = D.loadB(pb), b1 = D.loadB(pb + vb)
            var x = D.loadA(pa)
            c00 = D.dot(c00, b0, x); c01 = D.dot(c01, b1, x)
            x = D.loadA(pa + ab)
            c10 = D.dot(c10, b0, x); c11 = D.dot(c11, b1, x)
            x = D.loadA(pa + 2 * ab)
            c20 = D.dot(c20, b0, x); c21 = D.dot(c21, b1, x)
            x = D.loadA(pa + 3 * ab)
            c30 = D.dot(c30, b0, x); c31 = D.dot(c31, b1, x)
            x = D.loadA(pa + 4 * ab)
            c40 = D.dot(c40, b0, x); c41 = D.dot(c41, b1, x)
            x = D.loadA(pa + 5 * ab)
            c50 = D.dot(c50, b0, x); c51 = D.dot(c51, b1, x)
            pa += 6 * ab
            pb += 2 * vb
        }
        let w = D.Acc.scalarCount
        @inline(__always) func row(_ r: Int, _ x0: D.Acc, _ x1: D.Acc) {
            let pc = c + r * ldc, k = finish ? comp[r] : 0, s = finish || D.accumulatesFloats ? scale[r] : 0
            int8Store(x0, pc, accumulate: accumulate, finish: finish, comp: k, scale: s, D.self)
            int8Store(x1, pc + w, accumulate: accumulate, finish: finish, comp: k, scale: s, D.self)
        }
        row(0, c00, c01); row(1, c10, c11); row(2, c20, c21); row(3, c30, c31); row(4, c40, c41); row(5, c50, c51)
    }
}
