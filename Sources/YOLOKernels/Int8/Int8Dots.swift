// Dot products for the INT8 micro-kernels (Int8Gemm.swift) built from what a level has: 16-bit
// multiply-adds (x86 vpmaddwd: AVX2, AVX-512 without VNNI) or plain 32-bit lane arithmetic (the
// portable path: x86-64 baseline, NEON until a dot-product level exists). All are exact, so every
// level computes the same int32 sums. A target supplies its lane types (`Int8Lanes`) and, for the
// multiply-add path, the instruction; a level with a native 8-bit dot product (vpdpbusd) conforms
// its tag to `Int8DotISA` directly.

/// A level's vectors for INT8 work: int32 lanes and floats of the same count.
public protocol Int8Lanes {
    associatedtype Acc: SIMD where Acc.Scalar == Int32
    associatedtype Floats: SIMD where Floats.Scalar == Float
    static func floats(_ v: Acc) -> Floats
    /// W floats at `p` quantized as `Int8Quantization.quantize`.
    static func quantize(_ p: UnsafePointer<Float>, inverseScale: Float, zeroPoint: Float) -> Acc
    static func prefetch(_ p: UnsafeRawPointer)
    /// Whether `loadLanes` / `storeLanes` are masked instructions (default false: the GEMM's last,
    /// partial vector of columns then goes through a scratch tile, Int8EdgeKernels.swift).
    static var partialLanes: Bool { get }
    /// Lanes 0 ..< count of the words at p, 0 past them (the rest not read).
    static func loadLanes(_ p: UnsafeRawPointer, count: Int) -> Acc
    /// Lanes 0 ..< count of v to p (the rest not written).
    static func storeLanes(_ v: Acc, _ p: UnsafeMutableRawPointer, count: Int)
}

extension Int8Lanes {
    @inlinable public static var partialLanes: Bool { false }
    @inlinable @inline(__always)
    public static func loadLanes(_ p: UnsafeRawPointer, count: Int) -> Acc { int8LoadLanes(p, count: count) }
    @inlinable @inline(__always)
    public static func storeLanes(_ v: Acc, _ p: UnsafeMutableRawPointer, count: Int) { int8StoreLanes(v, p, count: count) }

    /// The portable form: lane arithmetic in Swift (the x86 levels use their intrinsics: the
    /// compare-and-select of generic SIMD code does not always become vmaxps/vminps).
    @inlinable @inline(__always)
    public static func quantize(_ p: UnsafePointer<Float>, inverseScale: Float, zeroPoint: Float) -> Acc {
        var t = UnsafeRawPointer(p).loadUnaligned(as: Floats.self) * Floats(repeating: inverseScale) + Floats(repeating: zeroPoint)
        t.replace(with: 0, where: t .< 0)
        t.replace(with: 255, where: t .> 255)
        return unsafeBitCast(t + Floats(repeating: 12_582_912), to: Acc.self) & Acc(repeating: 0xFF)
    }
}

/// Lanes 0 ..< count of the Int32s at p, 0 past them, a word at a time (levels without masked loads).
@inlinable @inline(__always)
public func int8LoadLanes<V: SIMD>(_ p: UnsafeRawPointer, count: Int) -> V where V.Scalar == Int32 {
    var v = V()
    for i in 0..<count { v[i] = p.loadUnaligned(fromByteOffset: 4 * i, as: Int32.self) }
    return v
}

/// Lanes 0 ..< count of v to p, a word at a time (levels without masked stores).
@inlinable @inline(__always)
public func int8StoreLanes<V: SIMD>(_ v: V, _ p: UnsafeMutableRawPointer, count: Int) where V.Scalar == Int32 {
    for i in 0..<count { p.storeBytes(of: v[i], toByteOffset: 4 * i, as: Int32.self) }
}

/// A signed 16 x 16-bit multiply-add: per 32-bit lane, a.lo * b.lo + a.hi * b.hi (vpmaddwd).
public protocol Int16MultiplyAdd: Int8Lanes {
    static func multiplyAdd16(_ a: Acc, _ b: Acc) -> Acc
    /// acc + multiplyAdd16(a, b), wrapping: one instruction where the CPU has one (AVX-512 VNNI's
    /// vpdpwssd, twice vpmaddwd + vpaddd's rate on Sapphire/Emerald Rapids); the same bits.
    static func multiplyAccumulate16(_ acc: Acc, _ a: Acc, _ b: Acc) -> Acc
}

extension Int16MultiplyAdd {
    @inlinable @inline(__always)
    public static func multiplyAccumulate16(_ acc: Acc, _ a: Acc, _ b: Acc) -> Acc { acc &+ multiplyAdd16(a, b) }
}

/// The 8-bit dot from 16-bit multiply-adds. u8 x s8 products do not fit vpmaddubsw's saturating
/// 16-bit sums (255 x 127 x 2 > 32767), so both operands are split into 16-bit halves: B's bytes
/// 0, 2 and 1, 3 by a mask and a shift once per vector, A's weights sign-extended to 16 bits at
/// pack time (8 bytes per row and group: (w0, w2) then (w1, w3)). Two multiply-adds per dot, exact.
public enum Int8MaddDot<L: Int16MultiplyAdd>: Int8DotISA {
    public typealias Acc = L.Acc
    public typealias Floats = L.Floats
    public typealias BOperand = (L.Acc, L.Acc)
    public typealias AOperand = (L.Acc, L.Acc)
    @inlinable public static var aBytes: Int { 8 }

    @inlinable @inline(__always)
    public static func packA(_ w0: Int8, _ w1: Int8, _ w2: Int8, _ w3: Int8, into p: UnsafeMutableRawPointer) {
        p.storeBytes(of: Int16(w0), as: Int16.self)
        p.storeBytes(of: Int16(w2), toByteOffset: 2, as: Int16.self)
        p.storeBytes(of: Int16(w1), toByteOffset: 4, as: Int16.self)
        p.storeBytes(of: Int16(w3), toByteOffset: 6, as: Int16.self)
    }
    @inlinable @inline(__always)
    public static func loadB(_ p: UnsafeRawPointer) -> (L.Acc, L.Acc) {
        let v = p.loadUnaligned(as: L.Acc.self), mask = L.Acc(repeating: 0x00FF_00FF)
        return (v & mask, (v &>> 8) & mask)
    }
    @inlinable @inline(__always)
    public static func loadA(_ p: UnsafeRawPointer) -> (L.Acc, L.Acc) {
        (L.Acc(repeating: p.loadUnaligned(as: Int32.self)), L.Acc(repeating: p.loadUnaligned(fromByteOffset: 4, as: Int32.self)))
    }
    @inlinable @inline(__always)
    public static func dot(_ acc: L.Acc, _ b: (L.Acc, L.Acc), _ a: (L.Acc, L.Acc)) -> L.Acc {
        L.multiplyAccumulate16(L.multiplyAccumulate16(acc, b.0, a.0), b.1, a.1)
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

/// The 8-bit dot in plain int32 lane arithmetic: each byte of B extracted by shift and mask once
/// per vector, the row's 4 weights broadcast, 4 multiplies and adds per dot. Correct on any CPU,
/// not fast: for levels without a dot-product instruction.
public enum Int8PortableDot<L: Int8Lanes>: Int8DotISA {
    public typealias Acc = L.Acc
    public typealias Floats = L.Floats
    public typealias BOperand = (L.Acc, L.Acc, L.Acc, L.Acc)
    public typealias AOperand = (L.Acc, L.Acc, L.Acc, L.Acc)
    @inlinable public static var aBytes: Int { 4 }

    @inlinable @inline(__always)
    public static func packA(_ w0: Int8, _ w1: Int8, _ w2: Int8, _ w3: Int8, into p: UnsafeMutableRawPointer) {
        p.storeBytes(of: w0, as: Int8.self)
        p.storeBytes(of: w1, toByteOffset: 1, as: Int8.self)
        p.storeBytes(of: w2, toByteOffset: 2, as: Int8.self)
        p.storeBytes(of: w3, toByteOffset: 3, as: Int8.self)
    }
    @inlinable @inline(__always)
    public static func loadB(_ p: UnsafeRawPointer) -> BOperand {
        let v = p.loadUnaligned(as: L.Acc.self), mask = L.Acc(repeating: 0xFF)
        return (v & mask, (v &>> 8) & mask, (v &>> 16) & mask, (v &>> 24) & mask)
    }
    @inlinable @inline(__always)
    public static func loadA(_ p: UnsafeRawPointer) -> AOperand {
        @inline(__always) func w(_ i: Int) -> L.Acc { L.Acc(repeating: Int32(p.load(fromByteOffset: i, as: Int8.self))) }
        return (w(0), w(1), w(2), w(3))
    }
    @inlinable @inline(__always)
    public static func dot(_ acc: L.Acc, _ b: BOperand, _ a: AOperand) -> L.Acc {
        acc &+ b.0 &* a.0 &+ b.1 &* a.1 &+ b.2 &* a.2 &+ b.3 &* a.3
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
