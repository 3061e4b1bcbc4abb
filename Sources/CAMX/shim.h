// Intel AMX (Advanced Matrix Extensions) for the amx kernel level (Sources/YOLOKernelsAMX): tile
// configuration and the tile loops of the INT8 and BF16 GEMMs. Header only: static inline
// functions compiled by Swift's Clang importer, each with its own target attribute, so the module
// that imports this header needs no AMX -target-cpu (and none of this runs unless the engine found
// AMX usable: CPUID, XCR0 and the kernel's permission, HostCPU.swift). Tile numbers must be
// constants, hence one function per tile shape.
//
// Tiles: 0-3 accumulators (C00, C01, C10, C11), 4-5 A (two 16-row panels), 6-7 B (two 16-column
// panels); every tile 16 rows of 64 bytes. One step of k: 64 bytes of a row (INT8: 16 groups of 4
// bytes; BF16: 16 pairs). Packed A and B store each (panel, step) tile as 1 KiB, rows 64 bytes apart.
#ifndef YOLO_CAMX_SHIM_H
#define YOLO_CAMX_SHIM_H

#if defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>

#define YOLO_AMX_FN static inline __attribute__((target("amx-tile,amx-int8,amx-bf16")))

/// Palette 1 with tiles 0-7 of 16 rows x 64 bytes. Once per GEMM call on the calling thread,
/// before any other function here; `yolo_amx_release` after the last.
YOLO_AMX_FN void yolo_amx_configure(void) {
    struct __attribute__((aligned(64))) {
        uint8_t palette, startRow, reserved[14];
        uint16_t colsb[16];
        uint8_t rows[16];
    } config = {0};
    config.palette = 1;
    for (int t = 0; t < 8; t++) {
        config.colsb[t] = 64;
        config.rows[t] = 16;
    }
    _tile_loadconfig(&config);
}

/// Tiles back to their initial state: a thread between GEMMs carries no AMX state (context
/// switches and signal frames stay small).
YOLO_AMX_FN void yolo_amx_release(void) { _tile_release(); }

// The accumulators: zero, or loaded from `c` (row stride ldc bytes; tile (i, j) at row 16 i,
// byte 64 j).
#define YOLO_AMX_START(rt, ct, c, ldc)                                                          \
    do {                                                                                        \
        if (c) {                                                                                \
            _tile_loadd(0, (const char *)(c), (ldc));                                           \
            if ((ct) > 1) _tile_loadd(1, (const char *)(c) + 64, (ldc));                        \
            if ((rt) > 1) _tile_loadd(2, (const char *)(c) + 16 * (ldc), (ldc));                \
            if ((rt) > 1 && (ct) > 1) _tile_loadd(3, (const char *)(c) + 16 * (ldc) + 64, (ldc)); \
        } else {                                                                                \
            _tile_zero(0);                                                                      \
            if ((ct) > 1) _tile_zero(1);                                                        \
            if ((rt) > 1) _tile_zero(2);                                                        \
            if ((rt) > 1 && (ct) > 1) _tile_zero(3);                                            \
        }                                                                                       \
    } while (0)

#define YOLO_AMX_STORE(rt, ct, c, ldc)                                                          \
    do {                                                                                        \
        _tile_stored(0, (char *)(c), (ldc));                                                    \
        if ((ct) > 1) _tile_stored(1, (char *)(c) + 64, (ldc));                                 \
        if ((rt) > 1) _tile_stored(2, (char *)(c) + 16 * (ldc), (ldc));                         \
        if ((rt) > 1 && (ct) > 1) _tile_stored(3, (char *)(c) + 16 * (ldc) + 64, (ldc));        \
    } while (0)

// One step: A tiles at a (+ aPanel for the second row panel), B tiles at b (+ bPanel), then the
// products of the shape rt x ct with instruction DOT.
#define YOLO_AMX_STEPS(DOT, rt, ct)                                                             \
    for (long s = 0; s < steps; s++) {                                                          \
        const char *pa = (const char *)a + 1024 * s, *pb = (const char *)b + 1024 * s;          \
        _tile_loadd(4, pa, 64);                                                                 \
        _tile_loadd(6, pb, 64);                                                                 \
        if ((rt) > 1) _tile_loadd(5, pa + aPanel, 64);                                          \
        if ((ct) > 1) _tile_loadd(7, pb + bPanel, 64);                                          \
        DOT(0, 4, 6);                                                                           \
        if ((ct) > 1) DOT(1, 4, 7);                                                             \
        if ((rt) > 1) DOT(2, 5, 6);                                                             \
        if ((rt) > 1 && (ct) > 1) DOT(3, 5, 7);                                                 \
    }

/// C (rt x ct tiles of 16 x 16 int32, rt and ct 1 or 2) = [cin +] A · B over `steps` steps of 64
/// bytes: A s8 weights (16 rows x 16 groups of 4 k a tile), B u8 activations in the grouped layout
/// (16 groups x 16 columns of 4 k a tile), tdpbsud: each int32 the exact sum of its products.
/// cin (may be null: from zero) and cout may be the same; row strides in bytes.
YOLO_AMX_FN void yolo_amx_int8_block(int rt, int ct, long steps, const void *a, long aPanel, const void *b, long bPanel,
                                     const void *cin, long ldcin, void *cout, long ldcout) {
    // The branches give each shape its own loop, with only constants as tile numbers.
    if (rt > 1 && ct > 1) {
        YOLO_AMX_START(2, 2, cin, ldcin);
        YOLO_AMX_STEPS(_tile_dpbsud, 2, 2)
        YOLO_AMX_STORE(2, 2, cout, ldcout);
    } else if (rt > 1) {
        YOLO_AMX_START(2, 1, cin, ldcin);
        YOLO_AMX_STEPS(_tile_dpbsud, 2, 1)
        YOLO_AMX_STORE(2, 1, cout, ldcout);
    } else if (ct > 1) {
        YOLO_AMX_START(1, 2, cin, ldcin);
        YOLO_AMX_STEPS(_tile_dpbsud, 1, 2)
        YOLO_AMX_STORE(1, 2, cout, ldcout);
    } else {
        YOLO_AMX_START(1, 1, cin, ldcin);
        YOLO_AMX_STEPS(_tile_dpbsud, 1, 1)
        YOLO_AMX_STORE(1, 1, cout, ldcout);
    }
}

/// C (rt x ct tiles of 16 x 16 FP32) = A · B over `steps` steps of 32 k, from zero: A and B
/// bfloat16 pairs (low half the even k), a tile 16 rows x 16 pairs, tdpbf16ps (FP32 sums).
YOLO_AMX_FN void yolo_amx_bf16_block(int rt, int ct, long steps, const void *a, long aPanel, const void *b, long bPanel,
                                     void *cout, long ldcout) {
    const void *none = 0;
    if (rt > 1 && ct > 1) {
        YOLO_AMX_START(2, 2, none, 0);
        YOLO_AMX_STEPS(_tile_dpbf16ps, 2, 2)
        YOLO_AMX_STORE(2, 2, cout, ldcout);
    } else if (rt > 1) {
        YOLO_AMX_START(2, 1, none, 0);
        YOLO_AMX_STEPS(_tile_dpbf16ps, 2, 1)
        YOLO_AMX_STORE(2, 1, cout, ldcout);
    } else if (ct > 1) {
        YOLO_AMX_START(1, 2, none, 0);
        YOLO_AMX_STEPS(_tile_dpbf16ps, 1, 2)
        YOLO_AMX_STORE(1, 2, cout, ldcout);
    } else {
        YOLO_AMX_START(1, 1, none, 0);
        YOLO_AMX_STEPS(_tile_dpbf16ps, 1, 1)
        YOLO_AMX_STORE(1, 1, cout, ldcout);
    }
}

// One step with B read in place: a tile is 16 rows (groups) of 64 bytes, `ldb` bytes apart, the
// step's rows 16 ldb further on and the second 16-column panel 64 bytes to the right.
#define YOLO_AMX_DIRECT_STEPS(rt, ct)                                                           \
    for (long s = 0; s < steps; s++) {                                                          \
        const char *pa = (const char *)a + 1024 * s, *pb = (const char *)b + 16 * ldb * s;      \
        _tile_loadd(4, pa, 64);                                                                 \
        _tile_loadd(6, pb, ldb);                                                                \
        if ((rt) > 1) _tile_loadd(5, pa + aPanel, 64);                                          \
        if ((ct) > 1) _tile_loadd(7, pb + 64, ldb);                                             \
        _tile_dpbsud(0, 4, 6);                                                                  \
        if ((ct) > 1) _tile_dpbsud(1, 4, 7);                                                    \
        if ((rt) > 1) _tile_dpbsud(2, 5, 6);                                                    \
        if ((rt) > 1 && (ct) > 1) _tile_dpbsud(3, 5, 7);                                        \
    }                                                                                           \
    if (tail) {                                                                                 \
        const char *pa = (const char *)a + 1024 * steps, *pb = (const char *)tail;              \
        _tile_loadd(4, pa, 64);                                                                 \
        _tile_loadd(6, pb, 64);                                                                 \
        if ((rt) > 1) _tile_loadd(5, pa + aPanel, 64);                                          \
        if ((ct) > 1) _tile_loadd(7, pb + 1024, 64);                                            \
        _tile_dpbsud(0, 4, 6);                                                                  \
        if ((ct) > 1) _tile_dpbsud(1, 4, 7);                                                    \
        if ((rt) > 1) _tile_dpbsud(2, 5, 6);                                                    \
        if ((rt) > 1 && (ct) > 1) _tile_dpbsud(3, 5, 7);                                        \
    }

/// `yolo_amx_int8_block` with B read where it lies, no copy: `steps` whole steps of grouped B
/// (row stride `ldb` bytes, every column of the block's 16 ct within it), then, when `tail` is not
/// null, one more step from packed tiles there (one 1 KiB tile per 16-column panel, zero past
/// the last group) for a k that ends inside a step.
YOLO_AMX_FN void yolo_amx_int8_block_direct(int rt, int ct, long steps, const void *a, long aPanel, const void *b, long ldb,
                                            const void *tail, const void *cin, long ldcin, void *cout, long ldcout) {
    if (rt > 1 && ct > 1) {
        YOLO_AMX_START(2, 2, cin, ldcin);
        YOLO_AMX_DIRECT_STEPS(2, 2)
        YOLO_AMX_STORE(2, 2, cout, ldcout);
    } else if (rt > 1) {
        YOLO_AMX_START(2, 1, cin, ldcin);
        YOLO_AMX_DIRECT_STEPS(2, 1)
        YOLO_AMX_STORE(2, 1, cout, ldcout);
    } else if (ct > 1) {
        YOLO_AMX_START(1, 2, cin, ldcin);
        YOLO_AMX_DIRECT_STEPS(1, 2)
        YOLO_AMX_STORE(1, 2, cout, ldcout);
    } else {
        YOLO_AMX_START(1, 1, cin, ldcin);
        YOLO_AMX_DIRECT_STEPS(1, 1)
        YOLO_AMX_STORE(1, 1, cout, ldcout);
    }
}

/// A 3x3 stride-1 convolution's tile products straight from padded planes (TapConv.swift,
/// AMXTapConv.swift): C (32 filters, two A panels `aPanel` bytes apart, x 2 tiles of 16 pixels)
/// over `steps` steps, step s's first B tile at b + offsets[s] (16 planes `ldb` bytes apart, 16
/// pixels of each), its second `second` bytes further (the next 16 pixels, or a 10-bit input's
/// lo planes). Stored from zero into `out` (row stride 128 bytes: the first tile's 16 sums, then
/// the second's); rt 1: the first 16 filters only. INT8 (tdpbsud: int32 sums) and BF16 pairs
/// (tdpbf16ps: FP32 sums).
#define YOLO_AMX_TAPS_BLOCK(NAME, DOT)                                                                                     \
    YOLO_AMX_FN void NAME(int rt, long steps, const void *a, long aPanel, const void *b, long second, long ldb,             \
                          const long *offsets, void *out) {                                                                \
        _tile_zero(0);                                                                                                     \
        _tile_zero(1);                                                                                                     \
        if (rt > 1) {                                                                                                      \
            _tile_zero(2);                                                                                                 \
            _tile_zero(3);                                                                                                 \
            for (long s = 0; s < steps; s++) {                                                                             \
                const char *pa = (const char *)a + 1024 * s, *pb = (const char *)b + offsets[s];                           \
                _tile_loadd(4, pa, 64);                                                                                    \
                _tile_loadd(6, pb, ldb);                                                                                   \
                _tile_loadd(5, pa + aPanel, 64);                                                                           \
                _tile_loadd(7, pb + second, ldb);                                                                          \
                DOT(0, 4, 6);                                                                                              \
                DOT(1, 4, 7);                                                                                              \
                DOT(2, 5, 6);                                                                                              \
                DOT(3, 5, 7);                                                                                              \
            }                                                                                                              \
            _tile_stored(2, (char *)out + 16 * 128, 128);                                                                  \
            _tile_stored(3, (char *)out + 16 * 128 + 64, 128);                                                             \
        } else {                                                                                                           \
            for (long s = 0; s < steps; s++) {                                                                             \
                const char *pb = (const char *)b + offsets[s];                                                             \
                _tile_loadd(4, (const char *)a + 1024 * s, 64);                                                            \
                _tile_loadd(6, pb, ldb);                                                                                   \
                _tile_loadd(7, pb + second, ldb);                                                                          \
                DOT(0, 4, 6);                                                                                              \
                DOT(1, 4, 7);                                                                                              \
            }                                                                                                              \
        }                                                                                                                  \
        _tile_stored(0, (char *)out, 128);                                                                                 \
        _tile_stored(1, (char *)out + 64, 128);                                                                            \
    }
YOLO_AMX_TAPS_BLOCK(yolo_amx_int8_taps_block, _tile_dpbsud)
YOLO_AMX_TAPS_BLOCK(yolo_amx_bf16_taps_block, _tile_dpbf16ps)
#undef YOLO_AMX_TAPS_BLOCK

/// The store of a taps block's tile into a plane-major output (each filter `plane` floats, rows of
/// `w`), for `rows` filters and the pixels from padded index p0 (rows `wp` wide, columns past w
/// and rows past h skipped). Kind 0: INT8, Float(sum - comp[r]) * scale[r] for 32 pixels; kind 1:
/// the same for 16 pixels whose sum is 32 x the first tile's + the second's (10 bits); both rounded
/// as AMXStores.finish rounds (one conversion, one multiply). Kind 2: BF16's FP32 sums as they are
/// (comp and scale unused).
static inline __attribute__((target("avx512f"))) void yolo_amx_taps_store(const void *t, int rows, int kind, long p0, long wp,
                                                                          long w, long h, float *out, long plane,
                                                                          const int32_t *comp, const float *scale) {
    // The runs of lanes that land in one output row, the same for every filter: at most 3 a vector
    // while rows are 14 or more pixels wide, 16 in all.
    __mmask16 masks[2][16];
    long offsets[2][16];
    int runs[2] = {0, 0};
    const int tenBit = kind == 1;
    for (int v = 0; v < (tenBit ? 1 : 2); v++) {
        long q0 = p0 + 16 * v;
        for (long j = 0; j < 16;) {
            long p = q0 + j, y = p / wp, x = p - y * wp;
            if (y >= h) break;
            if (x >= w) { j += wp - x; continue; }
            long run = 16 - j < w - x ? 16 - j : w - x;
            masks[v][runs[v]] = (__mmask16)((((1u << run) - 1)) << j);
            offsets[v][runs[v]++] = y * w + x - j;
            j += run;
        }
    }
    for (int r = 0; r < rows; r++) {
        const char *row = (const char *)t + 128 * r;
        __m512i k = _mm512_set1_epi32(kind == 2 ? 0 : comp[r]);
        __m512 sc = _mm512_set1_ps(kind == 2 ? 1 : scale[r]);
        float *dst = out + r * plane;
        for (int v = 0; v < (tenBit ? 1 : 2); v++) {
            __m512i sum = _mm512_loadu_si512(row + 64 * v);
            if (tenBit) sum = _mm512_add_epi32(_mm512_slli_epi32(sum, 5), _mm512_loadu_si512(row + 64));
            __m512 f = kind == 2 ? _mm512_castsi512_ps(sum) : _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(sum, k)), sc);
            for (int q = 0; q < runs[v]; q++) _mm512_mask_storeu_ps(dst + offsets[v][q], masks[v][q], f);
        }
    }
}

/// The 2x2 stride-2 max pool of two conv rows' taps blocks, stored into the pooled output's row
/// (each filter `plane` floats): kind 0, one INT8 tile with the upper row's 16 pixels then the
/// lower row's; kind 1, 10 bits, `top` the upper row's hi and lo sums and `bottom` the lower's.
/// Dequantized as yolo_amx_taps_store (a positive scale: the max of the floats is the float of
/// the max), then the max of each pixel pair: `count` (at most 8) pooled values from column 0.
static inline __attribute__((target("avx512f"))) void yolo_amx_taps_store_pooled(const void *top, const void *bottom, int rows,
                                                                                 int kind, int count, float *out, long plane,
                                                                                 const int32_t *comp, const float *scale) {
    const __m512i even = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 15, 13, 11, 9, 7, 5, 3, 1);
    const __mmask16 mask = (__mmask16)((1u << count) - 1);
    for (int r = 0; r < rows; r++) {
        const char *up = (const char *)top + 128 * r, *down = (const char *)bottom + 128 * r;
        __m512i a, b;
        if (kind == 1) {
            a = _mm512_add_epi32(_mm512_slli_epi32(_mm512_loadu_si512(up), 5), _mm512_loadu_si512(up + 64));
            b = _mm512_add_epi32(_mm512_slli_epi32(_mm512_loadu_si512(down), 5), _mm512_loadu_si512(down + 64));
        } else {
            a = _mm512_loadu_si512(up);
            b = _mm512_loadu_si512(up + 64);
        }
        __m512i k = _mm512_set1_epi32(comp[r]);
        __m512 sc = _mm512_set1_ps(scale[r]);
        __m512 fa = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(a, k)), sc);
        __m512 fb = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(b, k)), sc);
        __m512 m = _mm512_max_ps(fa, fb);
        __m512 pooled = _mm512_max_ps(_mm512_permutexvar_ps(even, m), _mm512_permutexvar_ps(odd, m));
        _mm512_mask_storeu_ps(out + r * plane, mask, pooled);
    }
}

#undef YOLO_AMX_DIRECT_STEPS
#undef YOLO_AMX_START
#undef YOLO_AMX_STORE
#undef YOLO_AMX_STEPS
#undef YOLO_AMX_FN
#endif  // __x86_64__

#endif
