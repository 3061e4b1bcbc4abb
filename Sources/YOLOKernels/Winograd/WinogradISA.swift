// What the SIMD Winograd transforms (WinogradSIMD.swift) are built from: the per-ISA protocol
// `WinogradISA` with its default (de)interleaving loads and stores for SIMD4, SIMD8 and SIMD16,
// the lane-by-lane Bᵀ and Aᵀ expressions of F(4x4, 3x3), and the clipped scatter of output tiles.
// After editing this file, touch Sources/YOLOKernels{Baseline,AVX2,AVX512}/*.swift (an
// incremental debug build does not recompile them for a change inside @inlinable bodies).

/// What a per-ISA target provides to the SIMD Winograd transforms: its vector type and the
/// (de)interleaving loads and stores. Default implementations for SIMD4, SIMD8 and SIMD16 of
/// Float follow; a target declares a private tag type with `Vector` set (the tag keeps its
/// specializations' symbol names apart from every other target's).
public protocol WinogradISA: KernelMetatype {
    associatedtype Vector: SIMD where Vector.Scalar == Float
    /// Lanes (p[0], p[2], ..., p[2W-2]) and (p[1], p[3], ..., p[2W-1]).
    static func load2(_ p: UnsafePointer<Float>) -> (Vector, Vector)
    /// Lanes (p[j], p[4+j], ..., p[4W-4+j]) for j = 0, 1, 2, 3.
    static func load4(_ p: UnsafePointer<Float>) -> (Vector, Vector, Vector, Vector)
    /// p[0...2W-1] = a[0], b[0], a[1], b[1], ...
    static func store2(_ a: Vector, _ b: Vector, to p: UnsafeMutablePointer<Float>)
    /// p[0...4W-1] = a[0], b[0], c[0], d[0], a[1], ...
    static func store4(_ a: Vector, _ b: Vector, _ c: Vector, _ d: Vector, to p: UnsafeMutablePointer<Float>)
    /// Per lane Swift's max(x[i], y[i]) (`y >= x ? y : x`), as `maxPool2x2` takes it. The default
    /// goes lane by lane (a generic SIMD select compiles to no better); x86 levels use intrinsics.
    static func poolMax(_ x: Vector, _ y: Vector) -> Vector
}

extension WinogradISA {
    @inlinable @inline(__always)
    public static func poolMax(_ x: Vector, _ y: Vector) -> Vector {
        var r = x
        for i in r.indices { r[i] = max(x[i], y[i]) }
        return r
    }
}

// The (de)interleaving goes through vectors of twice the width (SIMD8 for SIMD4, ...), whose
// evenHalf / oddHalf compile to two-source shuffles (shufps, vpermt2ps, uzp1/uzp2); stride 4
// is stride 2 twice (SIMD64's evenHalf is not unrolled, so it is avoided).

extension WinogradISA where Vector == SIMD4<Float> {
    @inlinable @inline(__always)
    public static func load2(_ p: UnsafePointer<Float>) -> (Vector, Vector) {
        let w = UnsafeRawPointer(p).loadUnaligned(as: SIMD8<Float>.self)
        return (w.evenHalf, w.oddHalf)
    }
    @inlinable @inline(__always)
    public static func load4(_ p: UnsafePointer<Float>) -> (Vector, Vector, Vector, Vector) {
        let (e0, o0) = load2(p), (e1, o1) = load2(p + 8)
        let e = SIMD8(lowHalf: e0, highHalf: e1), o = SIMD8(lowHalf: o0, highHalf: o1)
        return (e.evenHalf, o.evenHalf, e.oddHalf, o.oddHalf)
    }
    @inlinable @inline(__always)
    public static func store2(_ a: Vector, _ b: Vector, to p: UnsafeMutablePointer<Float>) {
        var w = SIMD8<Float>()
        w.evenHalf = a; w.oddHalf = b
        UnsafeMutableRawPointer(p).storeBytes(of: w, as: SIMD8<Float>.self)
    }
    @inlinable @inline(__always)
    public static func store4(_ a: Vector, _ b: Vector, _ c: Vector, _ d: Vector, to p: UnsafeMutablePointer<Float>) {
        var e = SIMD8<Float>(), o = SIMD8<Float>()
        e.evenHalf = a; e.oddHalf = c      // a0 c0 a1 c1 ...
        o.evenHalf = b; o.oddHalf = d      // b0 d0 b1 d1 ...
        store2(e.lowHalf, o.lowHalf, to: p)
        store2(e.highHalf, o.highHalf, to: p + 8)
    }
}

extension WinogradISA where Vector == SIMD8<Float> {
    @inlinable @inline(__always)
    public static func load2(_ p: UnsafePointer<Float>) -> (Vector, Vector) {
        let w = UnsafeRawPointer(p).loadUnaligned(as: SIMD16<Float>.self)
        return (w.evenHalf, w.oddHalf)
    }
    @inlinable @inline(__always)
    public static func load4(_ p: UnsafePointer<Float>) -> (Vector, Vector, Vector, Vector) {
        let (e0, o0) = load2(p), (e1, o1) = load2(p + 16)
        let e = SIMD16(lowHalf: e0, highHalf: e1), o = SIMD16(lowHalf: o0, highHalf: o1)
        return (e.evenHalf, o.evenHalf, e.oddHalf, o.oddHalf)
    }
    @inlinable @inline(__always)
    public static func store2(_ a: Vector, _ b: Vector, to p: UnsafeMutablePointer<Float>) {
        var w = SIMD16<Float>()
        w.evenHalf = a; w.oddHalf = b
        UnsafeMutableRawPointer(p).storeBytes(of: w, as: SIMD16<Float>.self)
    }
    @inlinable @inline(__always)
    public static func store4(_ a: Vector, _ b: Vector, _ c: Vector, _ d: Vector, to p: UnsafeMutablePointer<Float>) {
        var e = SIMD16<Float>(), o = SIMD16<Float>()
        e.evenHalf = a; e.oddHalf = c
        o.evenHalf = b; o.oddHalf = d
        store2(e.lowHalf, o.lowHalf, to: p)
        store2(e.highHalf, o.highHalf, to: p + 16)
    }
}

extension WinogradISA where Vector == SIMD16<Float> {
    @inlinable @inline(__always)
    public static func load2(_ p: UnsafePointer<Float>) -> (Vector, Vector) {
        let w = UnsafeRawPointer(p).loadUnaligned(as: SIMD32<Float>.self)
        return (w.evenHalf, w.oddHalf)
    }
    @inlinable @inline(__always)
    public static func load4(_ p: UnsafePointer<Float>) -> (Vector, Vector, Vector, Vector) {
        let (e0, o0) = load2(p), (e1, o1) = load2(p + 32)
        let e = SIMD32(lowHalf: e0, highHalf: e1), o = SIMD32(lowHalf: o0, highHalf: o1)
        return (e.evenHalf, o.evenHalf, e.oddHalf, o.oddHalf)
    }
    @inlinable @inline(__always)
    public static func store2(_ a: Vector, _ b: Vector, to p: UnsafeMutablePointer<Float>) {
        var w = SIMD32<Float>()
        w.evenHalf = a; w.oddHalf = b
        UnsafeMutableRawPointer(p).storeBytes(of: w, as: SIMD32<Float>.self)
    }
    @inlinable @inline(__always)
    public static func store4(_ a: Vector, _ b: Vector, _ c: Vector, _ d: Vector, to p: UnsafeMutablePointer<Float>) {
        var e = SIMD32<Float>(), o = SIMD32<Float>()
        e.evenHalf = a; e.oddHalf = c
        o.evenHalf = b; o.oddHalf = d
        store2(e.lowHalf, o.lowHalf, to: p)
        store2(e.highHalf, o.highHalf, to: p + 32)
    }
}

/// W floats at p (unaligned).
@inlinable @inline(__always)
func winogradLoad<V: SIMD>(_ p: UnsafePointer<Float>) -> V where V.Scalar == Float {
    UnsafeRawPointer(p).loadUnaligned(as: V.self)
}

/// Stores v's W floats at p (unaligned).
@inlinable @inline(__always)
func winogradStore<V: SIMD>(_ v: V, _ p: UnsafeMutablePointer<Float>) where V.Scalar == Float {
    UnsafeMutableRawPointer(p).storeBytes(of: v, as: V.self)
}

/// `winograd4B` (Bᵀ of F(4x4, 3x3) applied to six values) lane by lane, the same expressions.
@inlinable @inline(__always)
func winograd4B<V: SIMD>(_ x0: V, _ x1: V, _ x2: V, _ x3: V, _ x4: V, _ x5: V) -> (V, V, V, V, V, V)
    where V.Scalar == Float {
    (4 * x0 - 5 * x2 + x4,
     -4 * (x1 + x2) + x3 + x4,
     4 * (x1 - x2) - x3 + x4,
     2 * (x3 - x1) - x2 + x4,
     2 * (x1 - x3) - x2 + x4,
     4 * x1 - 5 * x3 + x5)
}

/// Aᵀ of F(4x4, 3x3) applied to six values, lane by lane (the expressions of winograd4Output).
@inlinable @inline(__always)
func winograd4A<V: SIMD>(_ x0: V, _ x1: V, _ x2: V, _ x3: V, _ x4: V, _ x5: V) -> (V, V, V, V)
    where V.Scalar == Float {
    let p12 = x1 + x2, m12 = x1 - x2, p34 = x3 + x4, m34 = x3 - x4
    return (x0 + p12 + p34, m12 + 2 * m34, p12 + 4 * p34, m12 + 8 * m34 + x5)
}

/// Copies one computed chunk of output tiles, tiles t ..< t + count of the block (`chunk`:
/// `tile` floats per tile for each of the `tile` output rows of a tile, rows `rowStride` apart),
/// into the output plane, tile row by tile row, clipped at outHeight and outWidth.
@inlinable
func winogradScatter(_ chunk: UnsafePointer<Float>, rowStride: Int, tile: Int, t: Int, count: Int, firstTileRow: Int,
                     tilesWide tw: Int, outHeight: Int, outWidth: Int, into plane: UnsafeMutablePointer<Float>) {
    var i = 0
    while i < count {
        let n = (t + i) / tw, tx = t + i - n * tw
        let run = min(count - i, tw - tx)          // tiles of this chunk in tile row n
        let y0 = tile * (firstTileRow + n), x0 = tile * tx
        let columns = min(tile * run, outWidth - x0)
        if columns > 0 {
            for row in 0..<min(tile, outHeight - y0) {
                (plane + (y0 + row) * outWidth + x0).update(from: chunk + row * rowStride + tile * i, count: columns)
            }
        }
        i += run
    }
}
