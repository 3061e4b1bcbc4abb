// libpng for YOLOImage. libpng reports fatal errors through an error callback that must not
// return; ours longjmps back. Swift cannot use setjmp, so every call into libpng that can
// fail goes through one of the small functions below, each with its own setjmp. They return
// YOLO_PNG_OK or an error code; libpng's message is in `message`.
// Writing goes through yolo_png_write_rgb the same way (the simplified png_image API cannot lift
// libpng's default limit of 1,000,000 pixels a side, which legal PNGs exceed).
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <time.h>
#include <png.h>
#include "fastpath.h"

enum {
    YOLO_PNG_OK = 0,
    YOLO_PNG_CORRUPT = 1,      // libpng's own message is in `message`
    YOLO_PNG_TRUNCATED = 2,    // the data ended before the image did
    YOLO_PNG_UNSUPPORTED = 3,  // the transforms did not give 8-bit RGB
    YOLO_PNG_TIMED_OUT = 4,    // still decoding at `deadline_ns`
};

typedef struct {
    png_structp png;
    png_infop info;
    const unsigned char *data;
    size_t size, position;
    int truncated;
    unsigned long long deadline_ns;  // CLOCK_MONOTONIC; 0: none
    int timed_out;
    char message[256];
} yolo_png;

static inline void yolo_png_error(png_structp png, png_const_charp message) {
    yolo_png *p = (yolo_png *)png_get_error_ptr(png);
    strncpy(p->message, message, sizeof p->message - 1);
    png_longjmp(png, 1);
}

static inline void yolo_png_warning(png_structp png, png_const_charp message) {
    (void)png; (void)message;  // e.g. bad CRC in an ancillary chunk: libpng skips it
}

static inline void yolo_png_read_data(png_structp png, png_bytep out, size_t count) {
    yolo_png *p = (yolo_png *)png_get_io_ptr(png);
    if (count > p->size - p->position) {
        p->truncated = 1;
        png_error(png, "unexpected end of data");
    }
    memcpy(out, p->data + p->position, count);
    p->position += count;
}

// Called by libpng after each row (of each pass, when interlaced): ends a decode past its deadline.
static inline void yolo_png_row_done(png_structp png, png_uint_32 row, int pass) {
    (void)row; (void)pass;
    yolo_png *p = (yolo_png *)png_get_io_ptr(png);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if ((unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec > p->deadline_ns) {
        p->timed_out = 1;
        png_error(png, "time limit");
    }
}

/// Reads the chunks up to the image data of `size` bytes at `data` (which must stay alive
/// until yolo_png_close); afterwards png_get_image_width/height(p->png, p->info) answer.
static inline int yolo_png_open(yolo_png *p, const unsigned char *data, size_t size) {
    memset(p, 0, sizeof *p);
    p->data = data;
    p->size = size;
    p->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, p, yolo_png_error, yolo_png_warning);
    if (p->png) p->info = png_create_info_struct(p->png);
    if (!p->info) { strcpy(p->message, "out of memory"); return YOLO_PNG_CORRUPT; }
    if (setjmp(png_jmpbuf(p->png))) return p->truncated ? YOLO_PNG_TRUNCATED : YOLO_PNG_CORRUPT;
    png_set_read_fn(p->png, p, yolo_png_read_data);
#ifdef PNG_SET_USER_LIMITS_SUPPORTED
    png_set_user_limits(p->png, 0x7fffffff, 0x7fffffff);  // the caller's pixel limit applies instead
    // No chunk holds more than the file (libpng only warns at a chunk over this, but it also
    // caps what a compressed chunk may inflate to), and few ancillary chunks are kept.
    png_set_chunk_malloc_max(p->png, size > 0 ? size : 1);
    png_set_chunk_cache_max(p->png, 64);
#endif
#ifdef PNG_HANDLE_AS_UNKNOWN_SUPPORTED
    // Chunks we do not use are skipped unread rather than copied, decompressed or parsed: text,
    // ICC profiles, suggested palettes, calibration, EXIF (read by our own parser), and any
    // chunk libpng does not know. (Each name is 4 letters and a NUL.)
    static const png_byte skipped[] = "iCCP\0iTXt\0pCAL\0sCAL\0sPLT\0tEXt\0zTXt\0eXIf";
    png_set_keep_unknown_chunks(p->png, PNG_HANDLE_CHUNK_NEVER, NULL, 0);
    png_set_keep_unknown_chunks(p->png, PNG_HANDLE_CHUNK_NEVER, skipped, (int)(sizeof skipped / 5));
#endif
    png_read_info(p->png, p->info);
    return YOLO_PNG_OK;
}

/// Decodes the image into `out` (height rows of width * 3 bytes) the way stb_image does with
/// 3 channels: palette expanded, gray replicated, alpha dropped without compositing, 16-bit
/// samples cut to their high byte, no gamma or colour-profile transform. Fails with
/// YOLO_PNG_TIMED_OUT once CLOCK_MONOTONIC passes `deadline_ns` (0: no deadline).
static inline int yolo_png_read_rgb(yolo_png *p, unsigned char *out, unsigned long long deadline_ns) {
    if (setjmp(png_jmpbuf(p->png)))
        return p->timed_out ? YOLO_PNG_TIMED_OUT : p->truncated ? YOLO_PNG_TRUNCATED : YOLO_PNG_CORRUPT;
    p->deadline_ns = deadline_ns;
    if (deadline_ns) png_set_read_status_fn(p->png, yolo_png_row_done);
    png_uint_32 width = png_get_image_width(p->png, p->info);
    png_uint_32 height = png_get_image_height(p->png, p->info);
    int type = png_get_color_type(p->png, p->info);
    if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(p->png);
    if (type == PNG_COLOR_TYPE_GRAY) png_set_expand_gray_1_2_4_to_8(p->png);
    if (!(type & PNG_COLOR_MASK_COLOR)) png_set_gray_to_rgb(p->png);
    png_set_strip_16(p->png);
    png_set_strip_alpha(p->png);
    int passes = png_set_interlace_handling(p->png);
    png_read_update_info(p->png, p->info);
    if (png_get_rowbytes(p->png, p->info) != (size_t)width * 3) {
        strcpy(p->message, "could not convert the pixels to 8-bit RGB");
        return YOLO_PNG_UNSUPPORTED;
    }
    // With interlace handling, each pass fills in its own pixels of the rows.
    for (int pass = 0; pass < passes; pass++)
        for (png_uint_32 y = 0; y < height; y++)
            png_read_row(p->png, out + (size_t)y * width * 3, NULL);
    return YOLO_PNG_OK;
}

static inline void yolo_png_close(yolo_png *p) {
    png_destroy_read_struct(&p->png, &p->info, NULL);  // NULL-safe
}

/// A growing buffer for a PNG being written (malloc'ed `data`; the caller frees it).
typedef struct {
    unsigned char *data;
    size_t size, capacity;
} yolo_png_output;

static inline void yolo_png_write_data(png_structp png, png_bytep data, size_t count) {
    yolo_png_output *o = (yolo_png_output *)png_get_io_ptr(png);
    if (count > o->capacity - o->size) {
        size_t capacity = o->capacity;
        while (count > capacity - o->size) {
            if (capacity > ((size_t)-1) / 2) png_error(png, "out of memory");
            capacity *= 2;
        }
        unsigned char *grown = (unsigned char *)realloc(o->data, capacity);
        if (!grown) png_error(png, "out of memory");
        o->data = grown;
        o->capacity = capacity;
    }
    memcpy(o->data + o->size, data, count);
    o->size += count;
}

static inline void yolo_png_flush(png_structp png) { (void)png; }

/// Encodes `height` rows of `width` * 3 bytes of 8-bit RGB at `pixels` as a PNG into `out`
/// (which starts with `initial` bytes allocated, at least 1), as libpng's simplified API would:
/// not interlaced, an sRGB chunk, the default filters and compression. Any size PNG allows.
static inline int yolo_png_write_rgb(yolo_png *p, yolo_png_output *out, size_t initial, const unsigned char *pixels,
                                     png_uint_32 width, png_uint_32 height) {
    memset(p, 0, sizeof *p);
    memset(out, 0, sizeof *out);
    out->data = (unsigned char *)malloc(initial > 0 ? initial : 1);
    if (!out->data) { strcpy(p->message, "out of memory"); return YOLO_PNG_CORRUPT; }
    out->capacity = initial > 0 ? initial : 1;
    p->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, p, yolo_png_error, yolo_png_warning);
    if (p->png) p->info = png_create_info_struct(p->png);
    if (!p->info) { strcpy(p->message, "out of memory"); return YOLO_PNG_CORRUPT; }
    if (setjmp(png_jmpbuf(p->png))) return YOLO_PNG_CORRUPT;
    png_set_write_fn(p->png, out, yolo_png_write_data, yolo_png_flush);
#ifdef PNG_SET_USER_LIMITS_SUPPORTED
    png_set_user_limits(p->png, 0x7fffffff, 0x7fffffff);
#endif
    png_set_IHDR(p->png, p->info, width, height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_BASE, PNG_FILTER_TYPE_BASE);
    png_set_sRGB(p->png, p->info, PNG_sRGB_INTENT_PERCEPTUAL);
    png_write_info(p->png, p->info);
    for (png_uint_32 y = 0; y < height; y++)
        png_write_row(p->png, (png_const_bytep)(pixels + (size_t)y * width * 3));
    png_write_end(p->png, p->info);
    return YOLO_PNG_OK;
}

static inline void yolo_png_write_close(yolo_png *p, yolo_png_output *out) {
    png_destroy_write_struct(&p->png, &p->info);  // NULL-safe
    free(out->data);
    out->data = NULL;
}
