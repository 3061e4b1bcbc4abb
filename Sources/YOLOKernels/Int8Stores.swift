// How the INT8 micro-kernels' int32 sums reach C: stored as they are between blocks of k, added
// to those there, and after the last block dequantized to floats (sum - comp) x scale.

/// One vector of a tile's row to C: int32 sums stored, or added to those there, and when
/// `finish`, Float(sum - comp) * scale instead.
@inlinable @inline(__always)
func int8Store<D: Int8DotISA>(_ v: D.Acc, _ c: UnsafeMutablePointer<Float>, accumulate: Bool, finish: Bool,
                              comp: Int32, scale: Float, _: D.Type) {
    let raw = UnsafeMutableRawPointer(c)
    var s = v
    if accumulate { s &+= raw.loadUnaligned(as: D.Acc.self) }
    if finish {
        raw.storeBytes(of: D.floats(s &- D.Acc(repeating: comp)) * D.Floats(repeating: scale), as: D.Floats.self)
    } else {
        raw.storeBytes(of: s, as: D.Acc.self)
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
