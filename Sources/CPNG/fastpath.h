// The fast path of PNG decoding (Sources/YOLOImage/PNGFastPath.swift): the common PNGs (8-bit
// gray, gray + alpha, RGB, RGBA; not interlaced) inflated in one call by libdeflate (2-2.5x
// zlib's speed on photos) and unfiltered here, with an SSE2 Paeth filter on x86 (Debian's
// libpng runs a scalar one: it was most of a photo's decoding time). Header only, like the rest of this module. Everything here works on
// buffers the caller sized; any doubt (a zlib error, a stream that is too short or too long,
// a bad CRC, an unknown filter) returns an error code and the caller falls back to libpng,
// whose messages and limits then apply.
#ifndef YOLO_PNG_FASTPATH_H
#define YOLO_PNG_FASTPATH_H

#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <libdeflate.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/// Whether the CRC stored after the chunk at `chunk` (its length field; the caller checked the
/// length against the file's size) matches its type and data.
static inline int yolo_png_crc_ok(const unsigned char *chunk) {
    uint32_t length = (uint32_t)chunk[0] << 24 | (uint32_t)chunk[1] << 16 | (uint32_t)chunk[2] << 8 | chunk[3];
    const unsigned char *stored = chunk + 8 + length;
    uint32_t crc = (uint32_t)stored[0] << 24 | (uint32_t)stored[1] << 16 | (uint32_t)stored[2] << 8 | stored[3];
    return libdeflate_crc32(0, chunk + 4, (size_t)length + 4) == crc;
}

/// Checks the CRC of each of `count` chunks (offsets of their length fields in `file`, whose
/// lengths the caller checked against the file's size) and inflates their data, in order, as one
/// zlib stream into `out`, which must come out exactly `size` bytes long, with the stream ended
/// at the end of the data. 0 on success, -1 otherwise.
static inline int yolo_png_inflate_chunks(const unsigned char *file, const size_t *offsets, int count,
                                          unsigned char *out, size_t size) {
    size_t total = 0;
    for (int i = 0; i < count; i++) {
        const unsigned char *chunk = file + offsets[i];
        if (!yolo_png_crc_ok(chunk)) return -1;
        total += (uint32_t)chunk[0] << 24 | (uint32_t)chunk[1] << 16 | (uint32_t)chunk[2] << 8 | chunk[3];
    }
    // One chunk is inflated where it lies; several are gathered first (at most the file's size).
    const unsigned char *stream = file + offsets[0] + 8;
    unsigned char *gathered = NULL;
    if (count > 1) {
        gathered = (unsigned char *)malloc(total > 0 ? total : 1);
        if (!gathered) return -1;
        size_t at = 0;
        for (int i = 0; i < count; i++) {
            const unsigned char *chunk = file + offsets[i];
            size_t length = (uint32_t)chunk[0] << 24 | (uint32_t)chunk[1] << 16 | (uint32_t)chunk[2] << 8 | chunk[3];
            memcpy(gathered + at, chunk + 8, length);
            at += length;
        }
        stream = gathered;
    }
    int result = -1;
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    if (d) {
        size_t used = 0, made = 0;
        if (libdeflate_zlib_decompress_ex(d, stream, total, out, size, &used, &made) == LIBDEFLATE_SUCCESS
            && used == total && made == size)
            result = 0;
        libdeflate_free_decompressor(d);
    }
    free(gathered);
    return result;
}

/// PNG's Paeth predictor.
static inline int yolo_png_paeth(int a, int b, int c) {
    int pa = b - c, pb = a - c, pc = a + b - 2 * c;
    pa = pa < 0 ? -pa : pa; pb = pb < 0 ? -pb : pb; pc = pc < 0 ? -pc : pc;
    return (pa <= pb && pa <= pc) ? a : (pb <= pc ? b : c);
}

#if defined(__SSE2__)
/// The Paeth filter over a row of 3- or 4-byte pixels, one pixel per step in 16-bit lanes (the
/// left pixel is the previous step's result, so pixels cannot go side by side). `row` has at
/// least 1 byte after its end that may be read (the next row's filter byte, or padding).
static inline void yolo_png_paeth_row_sse2(unsigned char *row, const unsigned char *up, size_t bytes, int bpp) {
    const __m128i zero = _mm_setzero_si128();
    __m128i a = zero, c = zero;
    for (size_t i = 0; i < bytes; i += (size_t)bpp) {
        uint32_t bw, xw;
        memcpy(&bw, up + i, 4);   // bpp 3: one byte past the pixel, ignored
        memcpy(&xw, row + i, 4);
        __m128i b = _mm_unpacklo_epi8(_mm_cvtsi32_si128((int)bw), zero);
        __m128i x = _mm_unpacklo_epi8(_mm_cvtsi32_si128((int)xw), zero);
        __m128i bc = _mm_sub_epi16(b, c), ac = _mm_sub_epi16(a, c);
        __m128i pa = _mm_max_epi16(bc, _mm_sub_epi16(zero, bc));
        __m128i pb = _mm_max_epi16(ac, _mm_sub_epi16(zero, ac));
        __m128i s = _mm_add_epi16(ac, bc);
        __m128i pc = _mm_max_epi16(s, _mm_sub_epi16(zero, s));
        // b where pb <= pc else c; then a where pa <= min(pb, pc).
        __m128i useC = _mm_cmpgt_epi16(pb, pc);
        __m128i bOrC = _mm_or_si128(_mm_andnot_si128(useC, b), _mm_and_si128(useC, c));
        __m128i notA = _mm_cmpgt_epi16(pa, _mm_min_epi16(pb, pc));
        __m128i pred = _mm_or_si128(_mm_andnot_si128(notA, a), _mm_and_si128(notA, bOrC));
        a = _mm_and_si128(_mm_add_epi16(x, pred), _mm_set1_epi16(0xFF));
        uint32_t result = (uint32_t)_mm_cvtsi128_si32(_mm_packus_epi16(a, zero));
        if (bpp == 4) {
            memcpy(row + i, &result, 4);
        } else {  // constant sizes: no call to memcpy, nothing spilled
            uint16_t low = (uint16_t)result;
            memcpy(row + i, &low, 2);
            row[i + 2] = (unsigned char)(result >> 16);
        }
        c = b;
    }
}
#endif

/// Undoes PNG filter `filter` (0-4) on one row of `bytes` bytes with `bpp` bytes per pixel, in
/// place; `up` is the previous row, already unfiltered, or NULL for the first row. Returns -1 for
/// an unknown filter type.
static inline int yolo_png_unfilter_row(unsigned char *row, const unsigned char *up, size_t bytes, int bpp,
                                        int filter) {
    size_t i;
    switch (filter) {
    case 0:
        return 0;
    case 1:
        for (i = (size_t)bpp; i < bytes; i++) row[i] = (unsigned char)(row[i] + row[i - bpp]);
        return 0;
    case 2:
        if (up) for (i = 0; i < bytes; i++) row[i] = (unsigned char)(row[i] + up[i]);
        return 0;
    case 3:
        if (!up) {
            for (i = (size_t)bpp; i < bytes; i++) row[i] = (unsigned char)(row[i] + (row[i - bpp] >> 1));
            return 0;
        }
        for (i = 0; i < (size_t)bpp && i < bytes; i++) row[i] = (unsigned char)(row[i] + (up[i] >> 1));
        for (; i < bytes; i++) row[i] = (unsigned char)(row[i] + ((row[i - bpp] + up[i]) >> 1));
        return 0;
    case 4:
        if (!up) {  // the predictor is then always the left byte: as filter 1
            for (i = (size_t)bpp; i < bytes; i++) row[i] = (unsigned char)(row[i] + row[i - bpp]);
            return 0;
        }
#if defined(__SSE2__)
        if (bpp == 3) { yolo_png_paeth_row_sse2(row, up, bytes, 3); return 0; }
        if (bpp == 4) { yolo_png_paeth_row_sse2(row, up, bytes, 4); return 0; }
#endif
        for (i = 0; i < (size_t)bpp && i < bytes; i++) row[i] = (unsigned char)(row[i] + up[i]);
        for (; i < bytes; i++) row[i] = (unsigned char)(row[i] + yolo_png_paeth(row[i - bpp], up[i], up[i - bpp]));
        return 0;
    default:
        return -1;
    }
}

/// Unfilters `height` rows of `channels` 8-bit samples per pixel (1 gray, 2 gray + alpha, 3 RGB,
/// 4 RGBA), each a filter byte and `width * channels` bytes, in place in `raw` (which has at
/// least 4 bytes of padding after its end), and writes them to `out` as RGB (gray replicated,
/// alpha dropped), `width * 3` bytes a row. 0 on success, -1 for an unknown filter type.
static inline int yolo_png_unfilter_rgb(unsigned char *raw, uint32_t width, uint32_t height, int channels,
                                        unsigned char *out) {
    size_t bytes = (size_t)width * (size_t)channels;
    const unsigned char *up = NULL;
    for (uint32_t y = 0; y < height; y++) {
        unsigned char *row = raw + (size_t)y * (bytes + 1) + 1;
        if (yolo_png_unfilter_row(row, up, bytes, channels, row[-1]) != 0) return -1;
        unsigned char *o = out + (size_t)y * width * 3;
        switch (channels) {
        case 3: memcpy(o, row, bytes); break;
        case 4: for (uint32_t x = 0; x < width; x++) { o[3*x] = row[4*x]; o[3*x+1] = row[4*x+1]; o[3*x+2] = row[4*x+2]; } break;
        case 1: for (uint32_t x = 0; x < width; x++) { o[3*x] = o[3*x+1] = o[3*x+2] = row[x]; } break;
        default: for (uint32_t x = 0; x < width; x++) { o[3*x] = o[3*x+1] = o[3*x+2] = row[2*x]; } break;
        }
        up = row;
    }
    return 0;
}

#endif
