// The kernels' one multiply-add of float vectors (GEMM micro-kernels, Winograd, direct
// convolution): fused where the CPU has FMA, and kept in vector registers by every compiler the
// package supports (Swift 6.0's standard library needs help for 16 lanes).

/// `c + x * b`, lane by lane; one rounding (FMA) when `Tag.fusedMultiplyAdd`.
@inlinable @inline(__always)
func gemmMulAdd<V: SIMD, Tag: GemmISA>(_ c: V, _ x: V, _ b: V, _: Tag.Type) -> V where V.Scalar == Float {
    guard Tag.fusedMultiplyAdd else { return c + x * b }
    #if !compiler(>=6.2)
    // Before 6.2 (seen with 6.0.3) the standard library computes a SIMD addingProduct lane by
    // lane (scalar fmas), which LLVM turns back into vector FMAs for 8 lanes but leaves scalar
    // for 16: the AVX-512 levels' GEMMs ran many times slower (docs/performance.md, "Figures from
    // code comments"). So 16 lanes go as two halves of 8.
    if V.self == SIMD16<Float>.self {
        let c16 = unsafeBitCast(c, to: SIMD16<Float>.self), x16 = unsafeBitCast(x, to: SIMD16<Float>.self)
        let b16 = unsafeBitCast(b, to: SIMD16<Float>.self)
        let r = SIMD16(lowHalf: c16.lowHalf.addingProduct(x16.lowHalf, b16.lowHalf),
                       highHalf: c16.highHalf.addingProduct(x16.highHalf, b16.highHalf))
        return unsafeBitCast(r, to: V.self)
    }
    #endif
    return c.addingProduct(x, b)
}
