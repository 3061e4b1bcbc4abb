// 8- and 16-bit dot-product instructions Swift has no words for, for the INT8 kernels
// (Sources/YOLOKernels/Int8Gemm.swift, Int8SignedB.swift) and the BF16 ones (BF16Gemm.swift). Header only: static inline wrappers
// over the compiler's intrinsics, each compiled only where the importing module's -target-cpu has
// the instruction (so this header builds in every target, and a kernel target calls only what its
// CPU has). Vectors cross into Swift as SIMD4/8/16<Int32> (clang ext_vector_type): x86 (AVX2,
// AVX-512, VNNI) and 64-bit ARM (NEON's widening multiplies; ARMv8.2 dotprod's sdot).
#ifndef YOLO_CDOT_SHIM_H
#define YOLO_CDOT_SHIM_H

#if defined(__x86_64__)
#include <immintrin.h>

typedef int yolo_i32x8 __attribute__((ext_vector_type(8)));
typedef int yolo_i32x16 __attribute__((ext_vector_type(16)));
typedef float yolo_f32x8 __attribute__((ext_vector_type(8)));
typedef float yolo_f32x16 __attribute__((ext_vector_type(16)));

// The quantization below must round exactly as the scalar Swift reference (Quantize.swift):
// a multiply, then an add, never fused.
#pragma clang fp contract(off)

#if defined(__AVX__)
/// 8 floats at p -> u8 in the low byte of each lane: clamp(x * inv + zp, 0, 255) + 1.5 * 2^23,
/// whose low mantissa bits are the value rounded to nearest even.
static inline __attribute__((always_inline)) yolo_i32x8 yolo_quantize_256(const float *p, float inv, float zp) {
    __m256 t = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(p), _mm256_set1_ps(inv)), _mm256_set1_ps(zp));
    t = _mm256_min_ps(_mm256_max_ps(t, _mm256_setzero_ps()), _mm256_set1_ps(255.0f));
    __m256i bits = _mm256_castps_si256(_mm256_add_ps(t, _mm256_set1_ps(12582912.0f)));
    return (yolo_i32x8)_mm256_castps_si256(_mm256_and_ps(_mm256_castsi256_ps(bits), _mm256_castsi256_ps(_mm256_set1_epi32(0xFF))));
}

/// Swift's max(x, y) per lane (as yolo_swift_max_512).
static inline __attribute__((always_inline)) yolo_f32x8 yolo_swift_max_256(yolo_f32x8 x, yolo_f32x8 y) {
    return (yolo_f32x8)_mm256_blendv_ps((__m256)x, (__m256)y, _mm256_cmp_ps((__m256)y, (__m256)x, _CMP_GE_OQ));
}

/// vcvtdq2ps (ymm): int32 -> float per lane, rounded to nearest even (as Float(Int32)).
static inline __attribute__((always_inline)) yolo_f32x8 yolo_float_256(yolo_i32x8 v) {
    return (yolo_f32x8)_mm256_cvtepi32_ps((__m256i)v);
}
#endif

#if defined(__AVX512F__)
/// Swift's max(x, y) per lane, `y >= x ? y : x` (an ordered compare, then a blend): the same
/// value as the scalar max of the pooling kernels, NaNs and signed zeros included.
static inline __attribute__((always_inline)) yolo_f32x16 yolo_swift_max_512(yolo_f32x16 x, yolo_f32x16 y) {
    __mmask16 k = _mm512_cmp_ps_mask((__m512)y, (__m512)x, _CMP_GE_OQ);
    return (yolo_f32x16)_mm512_mask_blend_ps(k, (__m512)x, (__m512)y);
}

/// 16 floats at p -> u8 in the low byte of each lane (as yolo_quantize_256).
static inline __attribute__((always_inline)) yolo_i32x16 yolo_quantize_512(const float *p, float inv, float zp) {
    __m512 t = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(p), _mm512_set1_ps(inv)), _mm512_set1_ps(zp));
    t = _mm512_min_ps(_mm512_max_ps(t, _mm512_setzero_ps()), _mm512_set1_ps(255.0f));
    __m512i bits = _mm512_castps_si512(_mm512_add_ps(t, _mm512_set1_ps(12582912.0f)));
    return (yolo_i32x16)_mm512_and_si512(bits, _mm512_set1_epi32(0xFF));
}

/// vcvtdq2ps (zmm).
static inline __attribute__((always_inline)) yolo_f32x16 yolo_float_512(yolo_i32x16 v) {
    return (yolo_f32x16)_mm512_cvtepi32_ps((__m512i)v);
}

/// Lanes 0 ..< count (0 ... 16) of the 32-bit words at p, 0 past them (a masked load: the lanes
/// past count are not read, so they may lie past the end of memory). For the INT8 GEMM's last,
/// partial vector of columns (Int8EdgeKernels.swift).
static inline __attribute__((always_inline)) yolo_i32x16 yolo_load_partial_512(const void *p, int count) {
    return (yolo_i32x16)_mm512_maskz_loadu_epi32((__mmask16)((1u << count) - 1), p);
}

/// Stores lanes 0 ..< count (0 ... 16) of v to p; the words past them are not touched.
static inline __attribute__((always_inline)) void yolo_store_partial_512(void *p, yolo_i32x16 v, int count) {
    _mm512_mask_storeu_epi32(p, (__mmask16)((1u << count) - 1), (__m512i)v);
}
#endif

#if defined(__AVX2__)
/// vpmaddwd (ymm): per 32-bit lane, a.lo16 * b.lo16 + a.hi16 * b.hi16 (signed 16-bit, exact).
static inline __attribute__((always_inline)) yolo_i32x8 yolo_madd16_256(yolo_i32x8 a, yolo_i32x8 b) {
    return (yolo_i32x8)_mm256_madd_epi16((__m256i)a, (__m256i)b);
}

/// The lanes below count (0 ... 8) set, for vpmaskmovd.
static inline __attribute__((always_inline)) __m256i yolo_lanes_below_256(int count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/// As yolo_load_partial_512, 8 lanes (vpmaskmovd: masked lanes are not read).
static inline __attribute__((always_inline)) yolo_i32x8 yolo_load_partial_256(const void *p, int count) {
    return (yolo_i32x8)_mm256_maskload_epi32((const int *)p, yolo_lanes_below_256(count));
}

/// As yolo_store_partial_512, 8 lanes.
static inline __attribute__((always_inline)) void yolo_store_partial_256(void *p, yolo_i32x8 v, int count) {
    _mm256_maskstore_epi32((int *)p, yolo_lanes_below_256(count), (__m256i)v);
}
#endif

#if defined(__AVXVNNI__)
/// vpdpbusd (ymm, VEX: AVX-VNNI): acc + per 32-bit lane the 4 products of u8 bytes of `u` and s8
/// bytes of `s`, summed without saturation.
static inline __attribute__((always_inline)) yolo_i32x8 yolo_dpbusd_256(yolo_i32x8 acc, yolo_i32x8 u, yolo_i32x8 s) {
    return (yolo_i32x8)_mm256_dpbusd_avx_epi32((__m256i)acc, (__m256i)u, (__m256i)s);
}

/// vpdpwssd (ymm, VEX): acc + per 32-bit lane a.lo16 * b.lo16 + a.hi16 * b.hi16 (signed, wrapping).
/// In inline assembly, VEX-encoded, as `yolo_dpwssd_512` (which says why). (Braces in GCC-style
/// assembly are dialect alternatives: `%{vex%}`, not `{vex}`, which Swift's build let through as
/// a silently empty instruction.)
static inline __attribute__((always_inline)) yolo_i32x8 yolo_dpwssd_256(yolo_i32x8 acc, yolo_i32x8 a, yolo_i32x8 b) {
    __m256i r = (__m256i)acc;
    __asm__("%{vex%} vpdpwssd %2, %1, %0" : "+x"(r) : "x"((__m256i)a), "x"((__m256i)b));
    return (yolo_i32x8)r;
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

/// vpdpwssd (zmm): acc + per 32-bit lane a.lo16 * b.lo16 + a.hi16 * b.hi16 (signed, wrapping:
/// the bits of vpmaddwd + vpaddd). In inline assembly: where an accumulator takes several of
/// these in one basic block (the direct conv's three taps), LLVM's machine combiner split all but
/// the first into vpmaddwd + vpaddd, two uops for one (docs/performance-emerald-rapids-zen4.md).
static inline __attribute__((always_inline)) yolo_i32x16 yolo_dpwssd_512(yolo_i32x16 acc, yolo_i32x16 a, yolo_i32x16 b) {
    __m512i r = (__m512i)acc;
    __asm__("vpdpwssd %2, %1, %0" : "+v"(r) : "v"((__m512i)a), "v"((__m512i)b));
    return (yolo_i32x16)r;
}
#endif

#if defined(__AVX512BF16__) && defined(__AVX512BW__)
/// vcvtne2ps2bf16 + vpermw: lanes of x0 and x1 rounded to bfloat16 (to nearest even; the
/// instruction's own rules for NaN and denormals, see `bfloat16Bits` in BF16Gemm.swift), paired per
/// 32-bit lane: bits 0-15 from x0, 16-31 from x1 (the operand layout of vdpbf16ps).
static inline __attribute__((always_inline)) yolo_i32x16 yolo_bf16_pairs_512(yolo_f32x16 x0, yolo_f32x16 x1) {
    __m512i both = (__m512i)_mm512_cvtne2ps_pbh((__m512)x1, (__m512)x0);   // words 0-15: x0, 16-31: x1
    // Word 2j of the result from word j (x0[j]), word 2j + 1 from word 16 + j (x1[j]).
    const __m512i order = _mm512_set_epi32(0x1F000F, 0x1E000E, 0x1D000D, 0x1C000C, 0x1B000B, 0x1A000A, 0x190009, 0x180008,
                                           0x170007, 0x160006, 0x150005, 0x140004, 0x130003, 0x120002, 0x110001, 0x100000);
    return (yolo_i32x16)_mm512_permutexvar_epi16(order, both);
}

/// vdpbf16ps (zmm): acc + per 32-bit lane the 2 products of the bfloat16 pairs of `a` and `b`,
/// accumulated in FP32.
static inline __attribute__((always_inline)) yolo_f32x16 yolo_dpbf16_512(yolo_f32x16 acc, yolo_i32x16 a, yolo_i32x16 b) {
    return (yolo_f32x16)_mm512_dpbf16_ps((__m512)acc, (__m512bh)a, (__m512bh)b);
}
#endif

#endif  // __x86_64__

#if defined(__x86_64__) && defined(__AVX512FP16__) && defined(__AVX512BW__)
/// vfmadd231ph (zmm): c + b * x per lane (32 halves), one rounding; x broadcast from memory.
static inline __attribute__((always_inline)) __m512h yolo_fmadd_ph_512(__m512h c, __m512h b, const _Float16 *x) {
    return _mm512_fmadd_ph(b, _mm512_set1_ph(*x), c);
}

/// The same with x a pair of equal halves, broadcast as a 32-bit word: vpbroadcastd from memory
/// is a load alone, where vpbroadcastw adds a port-5 shuffle beside the multiply-adds.
static inline __attribute__((always_inline)) __m512h yolo_fmadd_ph_512_pair(__m512h c, __m512h b, const _Float16 *x) {
    int word;
    __builtin_memcpy(&word, x, 4);
    return _mm512_fmadd_ph(b, _mm512_castsi512_ph(_mm512_set1_epi32(word)), c);
}

/// The larger of a and b per lane (vmaxph: b where either is NaN).
static inline __attribute__((always_inline)) __m512h yolo_max_ph_512(__m512h a, __m512h b) {
    return _mm512_max_ph(a, b);
}

/// 32 floats at p -> 32 halves (vcvtps2phx: round to nearest even, infinity past 65504).
static inline __attribute__((always_inline)) __m512h yolo_halves_512(const float *p) {
    __m256i lo = _mm256_castph_si256(_mm512_cvtxps_ph(_mm512_loadu_ps(p)));
    __m256i hi = _mm256_castph_si256(_mm512_cvtxps_ph(_mm512_loadu_ps(p + 16)));
    return _mm512_castsi512_ph(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1));
}

/// 32 halves -> FP32 at p (exact), added to the floats there when `accumulate`.
static inline __attribute__((always_inline)) void yolo_store_halves_512(__m512h h, float *p, int accumulate) {
    __m512i bits = _mm512_castph_si512(h);
    __m512 lo = _mm512_cvtxph_ps(_mm256_castsi256_ph(_mm512_castsi512_si256(bits)));
    __m512 hi = _mm512_cvtxph_ps(_mm256_castsi256_ph(_mm512_extracti64x4_epi64(bits, 1)));
    if (accumulate) {
        lo = _mm512_add_ps(lo, _mm512_loadu_ps(p));
        hi = _mm512_add_ps(hi, _mm512_loadu_ps(p + 16));
    }
    _mm512_storeu_ps(p, lo);
    _mm512_storeu_ps(p + 16, hi);
}
#endif

#if defined(__aarch64__)
#include <arm_neon.h>

typedef int yolo_i32x4 __attribute__((ext_vector_type(4)));

/// smull + smlal2 + sadalp (any ARMv8-A NEON): per 16-bit lane h < 8, p = b[h] * lo[h] +
/// b[8 + h] * hi[8 + h] (s8 bytes, 16-bit wrapping sum), then acc[j] + p[2j] + p[2j + 1] in
/// int32 (Int8WideningDot's layout keeps |p| <= 32512, so nothing wraps).
static inline __attribute__((always_inline)) yolo_i32x4 yolo_smull_dot(yolo_i32x4 acc, yolo_i32x4 b, yolo_i32x4 lo, yolo_i32x4 hi) {
    int16x8_t p = vmull_s8(vget_low_s8((int8x16_t)b), vget_low_s8((int8x16_t)lo));
    p = vmlal_high_s8(p, (int8x16_t)b, (int8x16_t)hi);
    return (yolo_i32x4)vpadalq_s16((int32x4_t)acc, p);
}

/// uzp1 .8h: the low halves (bits 0-15) of x's 4 words in halves 0-3, of y's in halves 4-7.
static inline __attribute__((always_inline)) yolo_i32x4 yolo_pair_lows(yolo_i32x4 x, yolo_i32x4 y) {
    return (yolo_i32x4)vuzp1q_s16((int16x8_t)x, (int16x8_t)y);
}

/// uzp2 .8h: the high halves (bits 16-31), likewise.
static inline __attribute__((always_inline)) yolo_i32x4 yolo_pair_highs(yolo_i32x4 x, yolo_i32x4 y) {
    return (yolo_i32x4)vuzp2q_s16((int16x8_t)x, (int16x8_t)y);
}

/// smlal (smlal2 when `upper`) by element, twice (any ARMv8-A NEON): acc + per lane j the half
/// j (4 + j) of `lows` x half 2·row of `a`, + the same half of `highs` x half 2·row + 1 of `a`
/// (int16 x int16 -> int32, wrapping adds). `row` 0...3. (By element, a must sit in v0-v15: the
/// compiler's business.)
static inline __attribute__((always_inline)) yolo_i32x4 yolo_smlal_pair_lane(yolo_i32x4 acc, yolo_i32x4 lows, yolo_i32x4 highs,
                                                                            yolo_i32x4 a, int row, int upper) {
    int32x4_t c = (int32x4_t)acc;
    int16x8_t l = (int16x8_t)lows, h = (int16x8_t)highs, w = (int16x8_t)a;
#define YOLO_PAIR_LANE(r) \
    if (upper) { c = vmlal_high_laneq_s16(c, l, w, 2 * (r)); return (yolo_i32x4)vmlal_high_laneq_s16(c, h, w, 2 * (r) + 1); } \
    c = vmlal_laneq_s16(c, vget_low_s16(l), w, 2 * (r)); return (yolo_i32x4)vmlal_laneq_s16(c, vget_low_s16(h), w, 2 * (r) + 1);
    switch (row & 3) {
    case 0: YOLO_PAIR_LANE(0)
    case 1: YOLO_PAIR_LANE(1)
    case 2: YOLO_PAIR_LANE(2)
    default: YOLO_PAIR_LANE(3)
    }
#undef YOLO_PAIR_LANE
}

#if defined(__ARM_FEATURE_DOTPROD)
/// sdot (ARMv8.2 dotprod): acc + per 32-bit lane the 4 products of the s8 bytes of b and a.
static inline __attribute__((always_inline)) yolo_i32x4 yolo_sdot(yolo_i32x4 acc, yolo_i32x4 b, yolo_i32x4 a) {
    return (yolo_i32x4)vdotq_s32((int32x4_t)acc, (int8x16_t)b, (int8x16_t)a);
}

/// sdot by element: acc + per 32-bit lane the 4 products of the s8 bytes of b and those of lane
/// `lane` of a (one row's 4 weights), `lane` 0...3.
static inline __attribute__((always_inline)) yolo_i32x4 yolo_sdot_lane(yolo_i32x4 acc, yolo_i32x4 b, yolo_i32x4 a, int lane) {
    int32x4_t c = (int32x4_t)acc;
    int8x16_t x = (int8x16_t)b, y = (int8x16_t)a;
    switch (lane & 3) {
    case 0: return (yolo_i32x4)vdotq_laneq_s32(c, x, y, 0);
    case 1: return (yolo_i32x4)vdotq_laneq_s32(c, x, y, 1);
    case 2: return (yolo_i32x4)vdotq_laneq_s32(c, x, y, 2);
    default: return (yolo_i32x4)vdotq_laneq_s32(c, x, y, 3);
    }
}
#else
/// Stand-ins for a module built without dotprod that imports the dotprod level's code: Embedded
/// Swift (scripts/arm-check.sh) serializes bodies, so its clients must find the names. The level
/// keeps its kernels in its own object (KernelsDotProd.kernelSet's body is not exported), so
/// these are never called; should a client ever compile the kernels itself, they trap rather
/// than compute with code other than the intrinsics above.
static inline yolo_i32x4 yolo_sdot(yolo_i32x4 acc, yolo_i32x4 b, yolo_i32x4 a) { __builtin_trap(); }
static inline yolo_i32x4 yolo_sdot_lane(yolo_i32x4 acc, yolo_i32x4 b, yolo_i32x4 a, int lane) { __builtin_trap(); }
#endif
#endif  // __aarch64__
#endif
