// How the INT8 micro-kernels' int32 sums reach C: stored as they are between blocks of k, added
// to those there, and after the last block dequantized to floats (sum - comp) x scale; for the
// dots that accumulate in float (`Int16Pairs`), every block's sum x scale added to C.

/// One vector of a tile's row to C: int32 sums stored, or added to those there, and when
/// `finish`, Float(sum - comp) * scale instead.
@inlinable @inline(__always)
func int8Store<D: Int8DotISA>(_ v: D.Acc, _ c: UnsafeMutablePointer<Float>, accumulate: Bool, finish: Bool,
                              comp: Int32, scale: Float, _: D.Type) {
    let raw = UnsafeMutableRawPointer(c)
    if D.accumulatesFloats {
        // Each block's exact sum scaled, then added (no zero point: comp is not used).
        var f = D.floats(v) * D.Floats(repeating: scale)
        if accumulate { f += raw.loadUnaligned(as: D.Floats.self) }
        raw.storeBytes(of: f, as: D.Floats.self)
        return
    }
    var s = v
    if accumulate { s &+= raw.loadUnaligned(as: D.Acc.self) }
    if finish {
        raw.storeBytes(of: D.floats(s &- D.Acc(repeating: comp)) * D.Floats(repeating: scale), as: D.Floats.self)
    } else {
        raw.storeBytes(of: s, as: D.Acc.self)
    }
}

/// `int8Store` of lanes 0 ..< count only (masked loads and stores: `Int8DotISA.partialVectors`),
/// the same roundings; the words past them are neither read nor written.
@inlinable @inline(__always)
func int8StorePartial<D: Int8DotISA>(_ v: D.Acc, _ c: UnsafeMutablePointer<Float>, count: Int, accumulate: Bool,
                                     finish: Bool, comp: Int32, scale: Float, _: D.Type) {
    let raw = UnsafeMutableRawPointer(c)
    if D.accumulatesFloats {
        var f = D.floats(v) * D.Floats(repeating: scale)
        if accumulate { f += unsafeBitCast(D.loadPartial(raw, count: count), to: D.Floats.self) }
        D.storePartial(unsafeBitCast(f, to: D.Acc.self), raw, count: count)
        return
    }
    var s = v
    if accumulate { s &+= D.loadPartial(raw, count: count) }
    if finish {
        let f = D.floats(s &- D.Acc(repeating: comp)) * D.Floats(repeating: scale)
        D.storePartial(unsafeBitCast(f, to: D.Acc.self), raw, count: count)
    } else {
        D.storePartial(s, raw, count: count)
    }
}

/// Scalar twin of `int8Store`, for edge tiles (the same roundings).
@inlinable @inline(__always)
func int8StoreScalar(_ v: Int32, _ c: UnsafeMutablePointer<Float>, accumulate: Bool, finish: Bool, comp: Int32,
                     scale: Float) {
    let raw = UnsafeMutableRawPointer(c)
    var s = v
    if accumulate { s &+= raw.load(as: Int32.self) }
    if finish { c.pointee = Float(s &- comp) * scale } else { raw.storeBytes(of: s, as: Int32.self) }
}

/// One value of an edge tile (at `tile`, written by `int8Store` with accumulate and finish false)
/// merged into C as `int8Store` would have stored it.
@inlinable @inline(__always)
func int8MergeScalar<D: Int8DotISA>(_ tile: UnsafeRawPointer, _ c: UnsafeMutablePointer<Float>, accumulate: Bool,
                                    finish: Bool, comp: Int32, scale: Float, _: D.Type) {
    if D.accumulatesFloats {
        let t = tile.load(as: Float.self)
        c.pointee = accumulate ? t + c.pointee : t
    } else {
        int8StoreScalar(tile.load(as: Int32.self), c, accumulate: accumulate, finish: finish, comp: comp, scale: scale)
    }
}
