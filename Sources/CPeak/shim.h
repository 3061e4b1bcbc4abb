// The peak rate of each arithmetic instruction the kernel levels compute with, measured on the
// running CPU (yolo-bench's per-layer table gives each layer's share of it: docs/performance.md,
// "Share of the peak"). Header only, each function with its own target attribute (the module that
// imports it needs no -target-cpu; the caller runs only what the CPU has). Each loop keeps 8-12
// independent accumulators, more than latency x throughput, so that the instruction's throughput
// alone bounds it, and returns the sum of its accumulators as a checksum: with inputs a and b it is
// exactly accumulators x lanes x iterations x (products per lane) x a x b, which tests check.
#ifndef YOLO_CPEAK_SHIM_H
#define YOLO_CPEAK_SHIM_H

#include <stdint.h>
#include <string.h>

// Makes the compiler forget what v holds: a loop cannot be folded into one multiply.
#define YOLO_PEAK_OPAQUE(v, constraint) __asm__ volatile("" : "+" constraint(v))

// Accumulators as named variables (an array is not always kept in registers): X(i) for each.
#define YOLO_PEAK_8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define YOLO_PEAK_12(X) YOLO_PEAK_8(X) X(8) X(9) X(10) X(11)
#define YOLO_PEAK_DECLARE(i) vector_t acc##i = zero;
#define YOLO_PEAK_STEP(i) acc##i = step(acc##i, va, vb);
#define YOLO_PEAK_ADD(i)                                                                 \
    {                                                                                    \
        lane_t out[sizeof(vector_t) / sizeof(lane_t)];                                   \
        memcpy(out, &acc##i, sizeof out);                                                \
        for (unsigned l = 0; l < sizeof out / sizeof out[0]; l++) sum += (double)out[l];  \
    }

// A probe: NAME(n, a, b) runs n iterations of STEP(acc, va, vb) on each of the accumulators
// REPEAT names (vectors VECTOR of lanes LANE: va and vb from a and b by SET_A and SET_B, the
// accumulators from ZERO), in a function with the attributes TARGET (YOLO_PEAK_TARGET(...) or
// nothing); returns the lanes' sum.
#define YOLO_PEAK_TARGET(features) __attribute__((target(features)))
#define YOLO_PEAK_PROBE(NAME, TARGET, REPEAT, A, B, VECTOR, LANE, SET_A, SET_B, ZERO, STEP, CONSTRAINT) \
    static inline TARGET __attribute__((always_inline))                                  \
    VECTOR NAME##_step(VECTOR acc, VECTOR va, VECTOR vb) { return STEP; }                \
    static inline TARGET double NAME(long n, A a, B b) {                                 \
        typedef VECTOR vector_t;                                                         \
        typedef LANE lane_t;                                                             \
        vector_t (*const step)(vector_t, vector_t, vector_t) = NAME##_step;              \
        vector_t va = SET_A, vb = SET_B, zero = ZERO;                                    \
        REPEAT(YOLO_PEAK_DECLARE)                                                        \
        for (long i = 0; i < n; i++) {                                                   \
            YOLO_PEAK_OPAQUE(va, CONSTRAINT);                                            \
            REPEAT(YOLO_PEAK_STEP)                                                       \
        }                                                                                \
        double sum = 0;                                                                  \
        REPEAT(YOLO_PEAK_ADD)                                                            \
        return sum;                                                                      \
    }

#if defined(__x86_64__)
#include <immintrin.h>

/// vfmadd231ps ymm, 12 accumulators: 8 lanes, one product each.
YOLO_PEAK_PROBE(yolo_peak_fma256, YOLO_PEAK_TARGET("avx2,fma"), YOLO_PEAK_12, float, float, __m256, float, _mm256_set1_ps(a),
                _mm256_set1_ps(b), _mm256_setzero_ps(), _mm256_fmadd_ps(va, vb, acc), "x")
/// vfmadd231ps zmm, 12 accumulators: 16 lanes, one product each.
YOLO_PEAK_PROBE(yolo_peak_fma512, YOLO_PEAK_TARGET("avx512f"), YOLO_PEAK_12, float, float, __m512, float, _mm512_set1_ps(a),
                _mm512_set1_ps(b), _mm512_setzero_ps(), _mm512_fmadd_ps(va, vb, acc), "v")
/// vpmaddwd + vpaddd ymm (the AVX2 INT8 kernels' pair), 8 accumulators: 8 lanes, two products each.
YOLO_PEAK_PROBE(yolo_peak_maddwd256, YOLO_PEAK_TARGET("avx2"), YOLO_PEAK_8, int16_t, int16_t, __m256i, int32_t, _mm256_set1_epi16(a),
                _mm256_set1_epi16(b), _mm256_setzero_si256(), _mm256_add_epi32(acc, _mm256_madd_epi16(va, vb)), "x")
/// vpmaddwd + vpaddd zmm, 8 accumulators: 16 lanes, two products each.
YOLO_PEAK_PROBE(yolo_peak_maddwd512, YOLO_PEAK_TARGET("avx512f,avx512bw"), YOLO_PEAK_8, int16_t, int16_t, __m512i, int32_t,
                _mm512_set1_epi16(a), _mm512_set1_epi16(b), _mm512_setzero_si512(),
                _mm512_add_epi32(acc, _mm512_madd_epi16(va, vb)), "v")
/// vpdpbusd ymm (AVX-VNNI), 12 accumulators: 8 lanes, four u8 x s8 products each.
YOLO_PEAK_PROBE(yolo_peak_dpbusd256, YOLO_PEAK_TARGET("avx2,avxvnni"), YOLO_PEAK_12, uint8_t, int8_t, __m256i, int32_t,
                _mm256_set1_epi8((char)a), _mm256_set1_epi8(b), _mm256_setzero_si256(), _mm256_dpbusd_avx_epi32(acc, va, vb), "x")
/// vpdpbusd zmm (AVX-512 VNNI), 12 accumulators: 16 lanes, four u8 x s8 products each.
YOLO_PEAK_PROBE(yolo_peak_dpbusd512, YOLO_PEAK_TARGET("avx512f,avx512vnni"), YOLO_PEAK_12, uint8_t, int8_t, __m512i, int32_t,
                _mm512_set1_epi8((char)a), _mm512_set1_epi8(b), _mm512_setzero_si512(), _mm512_dpbusd_epi32(acc, va, vb), "v")
/// vdpbf16ps zmm, 12 accumulators: 16 FP32 lanes, two bfloat16 products each (a, b: bfloat16 bits;
/// the operands travel as FP32 vectors of the same bits).
YOLO_PEAK_PROBE(yolo_peak_dpbf16, YOLO_PEAK_TARGET("avx512f,avx512bf16"), YOLO_PEAK_12, uint16_t, uint16_t, __m512, float,
                _mm512_castsi512_ps(_mm512_set1_epi16((short)a)), _mm512_castsi512_ps(_mm512_set1_epi16((short)b)),
                _mm512_setzero_ps(), _mm512_dpbf16_ps(acc, (__m512bh)va, (__m512bh)vb), "v")
/// vfmadd231ph zmm, 12 accumulators: 32 FP16 lanes, one product each (a, b: FP16 bits; the sums
/// are FP16: exact up to 2048).
YOLO_PEAK_PROBE(yolo_peak_fma_ph512, YOLO_PEAK_TARGET("avx512f,avx512fp16"), YOLO_PEAK_12, uint16_t, uint16_t, __m512h, _Float16,
                _mm512_castsi512_ph(_mm512_set1_epi16((short)a)), _mm512_castsi512_ph(_mm512_set1_epi16((short)b)),
                _mm512_castsi512_ph(_mm512_setzero_si512()), _mm512_fmadd_ph(va, vb, acc), "v")

#define YOLO_PEAK_AMX_FN static inline __attribute__((target("amx-tile,amx-int8,amx-bf16")))

/// Tiles 0-7 of 16 rows x 64 bytes; A in 4-5 and B in 6-7 filled with the 16-bit `pattern`
/// (repeated bytes for INT8), the accumulators 0-3 zeroed. The caller must hold Linux's
/// permission for tile state (the amx kernel level asks for it).
YOLO_PEAK_AMX_FN void yolo_peak_amx_start(uint16_t aPattern, uint16_t bPattern) {
    struct __attribute__((aligned(64))) {
        uint8_t palette, startRow, reserved[14];
        uint16_t colsb[16];
        uint8_t rows[16];
    } config;
    memset(&config, 0, sizeof config);
    config.palette = 1;
    for (int t = 0; t < 8; t++) { config.colsb[t] = 64; config.rows[t] = 16; }
    _tile_loadconfig(&config);
    uint16_t a[512] __attribute__((aligned(64))), b[512] __attribute__((aligned(64)));
    for (int i = 0; i < 512; i++) { a[i] = aPattern; b[i] = bPattern; }
    _tile_loadd(4, a, 64); _tile_loadd(5, a, 64);
    _tile_loadd(6, b, 64); _tile_loadd(7, b, 64);
    _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
}

/// The four accumulators' sum (int32 or FP32 elements), tiles released.
YOLO_PEAK_AMX_FN double yolo_peak_amx_finish(int isFloat) {
    int32_t c[4][256] __attribute__((aligned(64)));
    _tile_stored(0, c[0], 64); _tile_stored(1, c[1], 64); _tile_stored(2, c[2], 64); _tile_stored(3, c[3], 64);
    _tile_release();
    double sum = 0;
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < 256; i++) {
            float f;
            memcpy(&f, &c[t][i], 4);
            sum += isFloat ? (double)f : (double)c[t][i];
        }
    return sum;
}

/// tdpbsud (s8 x u8, as the INT8 tile GEMM), 4 accumulator tiles: 256 int32 each, 64 products
/// per element per instruction (a: s8, b: u8).
YOLO_PEAK_AMX_FN double yolo_peak_amx_int8(long n, int8_t a, uint8_t b) {
    yolo_peak_amx_start((uint16_t)((uint8_t)a * 0x0101u), (uint16_t)(b * 0x0101u));
    for (long i = 0; i < n; i++) {
        _tile_dpbsud(0, 4, 6); _tile_dpbsud(1, 4, 7); _tile_dpbsud(2, 5, 6); _tile_dpbsud(3, 5, 7);
    }
    return yolo_peak_amx_finish(0);
}

/// tdpbf16ps, 4 accumulator tiles: 256 FP32 each, 32 bfloat16 products per element per
/// instruction (a, b: bfloat16 bits).
YOLO_PEAK_AMX_FN double yolo_peak_amx_bf16(long n, uint16_t a, uint16_t b) {
    yolo_peak_amx_start(a, b);
    for (long i = 0; i < n; i++) {
        _tile_dpbf16ps(0, 4, 6); _tile_dpbf16ps(1, 4, 7); _tile_dpbf16ps(2, 5, 6); _tile_dpbf16ps(3, 5, 7);
    }
    return yolo_peak_amx_finish(1);
}
#endif  // __x86_64__

#if defined(__aarch64__)
#include <arm_neon.h>

/// fmla .4s (NEON), 12 accumulators: 4 lanes, one product each.
YOLO_PEAK_PROBE(yolo_peak_fmla4s, , YOLO_PEAK_12, float, float, float32x4_t, float, vdupq_n_f32(a), vdupq_n_f32(b),
                vdupq_n_f32(0), vfmaq_f32(acc, va, vb), "w")
#endif  // __aarch64__

#endif
