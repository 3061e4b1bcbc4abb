// 8- and 16-bit dot-product instructions Swift has no words for, for the INT8 kernels
// (Sources/YOLOKernels/Int8Gemm.swift). Header only: static inline wrappers over the compiler's
// intrinsics, each compiled only where the importing module's -target-cpu has the instruction
// (so this header builds in every target, and a kernel target calls only what its CPU has).
// Vectors cross into Swift as SIMD8<Int32> / SIMD16<Int32> (clang ext_vector_type).
#ifndef YOLO_CDOT_SHIM_H
#define YOLO_CDOT_SHIM_H

#if defined(__x86_64__)
#include <immintrin.h>

typedef int yolo_i32x8 __attribute__((ext_vector_type(8)));
typedef int yolo_i32x16 __attribute__((ext_vector_type(16)));

#if defined(__AVX2__)
/// vpmaddwd (ymm): per 32-bit lane, a.lo16 * b.lo16 + a.hi16 * b.hi16 (signed 16-bit, exact).
static inline __attribute__((always_inline)) yolo_i32x8 yolo_madd16_256(yolo_i32x8 a, yolo_i32x8 b) {
    return (yolo_i32x8)_mm256_madd_epi16((__m256i)a, (__m256i)b);
}
#endif

#if defined(__AVX512BW__)
/// vpmaddwd (zmm).
static inline __attribute__((always_inline)) yolo_i32x16 yolo_madd16_512(yolo_i32x16 a, yolo_i32x16 b) {
    return (yolo_i32x16)_mm512_madd_epi16((__m512i)a, (__m512i)b);
}
#endif

#if defined(__AVX512VNNI__)
/// vpdpbusd (zmm): acc + per 32-bit lane the 4 products of u8 bytes of `u` and s8 bytes of `s`,
/// summed without saturation.
static inline __attribute__((always_inline)) yolo_i32x16 yolo_dpbusd_512(yolo_i32x16 acc, yolo_i32x16 u, yolo_i32x16 s) {
    return (yolo_i32x16)_mm512_dpbusd_epi32((__m512i)acc, (__m512i)u, (__m512i)s);
}
#endif

#endif  // __x86_64__
#endif
