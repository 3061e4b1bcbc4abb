// libjpeg(-turbo) for YOLOImage. libjpeg reports fatal errors through error_exit, which by
// default calls exit(); ours longjmps back instead. Swift cannot use setjmp, so every call
// into libjpeg that can fail goes through one of the small functions below, each with its
// own setjmp. They return YOLO_JPEG_OK or an error code; the message is in `message`.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <time.h>
#include <jpeglib.h>
#include <jerror.h>

enum {
    YOLO_JPEG_OK = 0,
    YOLO_JPEG_CORRUPT = 1,      // libjpeg's own message is in `message`
    YOLO_JPEG_TRUNCATED = 2,    // the data ended before the image did
    YOLO_JPEG_EMPTY_IMAGE = 3,  // width or height 0 in the frame header
    YOLO_JPEG_TOO_BIG = 4,      // over libjpeg's own dimension limit
    YOLO_JPEG_UNSUPPORTED = 5,  // e.g. 12-bit samples, unknown colour space
    YOLO_JPEG_TOO_MANY_SCANS = 6,  // more scans than `max_scans`
    YOLO_JPEG_TIMED_OUT = 7,       // still decoding at `deadline_ns`
};

typedef struct {
    struct jpeg_decompress_struct cinfo;
    struct jpeg_compress_struct cinfo_out;
    struct jpeg_error_mgr jerr;
    jmp_buf jump;
    int truncated;       // libjpeg warned "premature end of JPEG file"
    int data_missing;    // libjpeg warned that entropy-coded data ran out
    int corrupt_data;    // libjpeg warned about corrupt scan data (message in `message`)
    int components;      // samples per output pixel: 1 (gray), 3 (RGB) or 4 (CMYK)
    int inverted_cmyk;   // CMYK samples are stored inverted (Adobe APP14 marker seen)
    struct jpeg_progress_mgr progress;
    int max_scans;                    // 0: no limit
    unsigned long long deadline_ns;   // CLOCK_MONOTONIC; 0: none
    int too_many_scans, timed_out;
    char message[JMSG_LENGTH_MAX];
} yolo_jpeg;

static inline void yolo_jpeg_error_exit(j_common_ptr cinfo) {
    yolo_jpeg *j = (yolo_jpeg *)cinfo->client_data;
    (*cinfo->err->format_message)(cinfo, j->message);
    longjmp(j->jump, 1);
}

// Warnings (level -1) and trace messages: never printed. A truncated file is only a warning
// to libjpeg (it pads the data with an EOI marker and the image with gray); we remember it
// and report an error. Warnings about corrupt data (libjpeg's "Corrupt JPEG data: ..." on the
// scan data: a scan cut short before an EOI marker, a bad Huffman or arithmetic code, a lost
// restart marker, an inconsistent progression) are errors too: libjpeg would go on with gray
// or garbage blocks. Warnings about metadata only (unknown JFIF version or Adobe transform
// code, a bad ICC marker, stray bytes before a marker) leave the pixels intact: ignored.
static inline void yolo_jpeg_emit_message(j_common_ptr cinfo, int level) {
    yolo_jpeg *j = (yolo_jpeg *)cinfo->client_data;
    if (level >= 0) return;
    switch (cinfo->err->msg_code) {
    case JWRN_JPEG_EOF: j->truncated = 1; return;
    case JWRN_JFIF_MAJOR: case JWRN_ADOBE_XFORM: case JWRN_BOGUS_ICC: case JWRN_EXTRANEOUS_DATA:
        return;
    default:
        if (cinfo->err->msg_code == JWRN_HIT_MARKER) j->data_missing = 1;
        if (j->truncated) longjmp(j->jump, 1);  // the data ran out: reported as truncated
        (*cinfo->err->format_message)(cinfo, j->message);
        j->corrupt_data = 1;
        longjmp(j->jump, 1);
    }
}

// libjpeg calls this before each row of MCUs it reads or writes out, in every scan. Each scan of
// a multi-scan (progressive) image is another pass over all of its blocks, so a file of a few
// kilobytes with thousands of scans costs thousands of passes: refused past `max_scans` (as
// libjpeg-turbo's TurboJPEG scan limit and djpeg -maxscans do), and any decode past its deadline.
static inline void yolo_jpeg_progress(j_common_ptr cinfo) {
    yolo_jpeg *j = (yolo_jpeg *)cinfo->client_data;
    if (j->max_scans > 0 && j->cinfo.input_scan_number > j->max_scans) {
        j->too_many_scans = 1;
        longjmp(j->jump, 1);
    }
    if (j->deadline_ns) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        if ((unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec > j->deadline_ns) {
            j->timed_out = 1;
            longjmp(j->jump, 1);
        }
    }
}

static inline int yolo_jpeg_failure(yolo_jpeg *j) {
    if (j->too_many_scans) return YOLO_JPEG_TOO_MANY_SCANS;
    if (j->timed_out) return YOLO_JPEG_TIMED_OUT;
    if (j->truncated) return YOLO_JPEG_TRUNCATED;
    if (j->corrupt_data) return YOLO_JPEG_CORRUPT;
    switch (j->jerr.msg_code) {
    case JERR_EMPTY_IMAGE: return YOLO_JPEG_EMPTY_IMAGE;
    case JERR_IMAGE_TOO_BIG: return YOLO_JPEG_TOO_BIG;
    case JERR_BAD_PRECISION: case JERR_CONVERSION_NOTIMPL: case JERR_SOF_UNSUPPORTED:
        return YOLO_JPEG_UNSUPPORTED;
    default: return YOLO_JPEG_CORRUPT;
    }
}

static inline void yolo_jpeg_init(yolo_jpeg *j) {
    memset(j, 0, sizeof *j);
    j->cinfo.err = jpeg_std_error(&j->jerr);
    j->cinfo_out.err = &j->jerr;
    j->jerr.error_exit = yolo_jpeg_error_exit;
    j->jerr.emit_message = yolo_jpeg_emit_message;
    j->cinfo.client_data = j;
    j->cinfo_out.client_data = j;
}

/// Reads the headers of `size` bytes at `data` (which must stay alive until yolo_jpeg_close).
/// Afterwards cinfo.image_width/image_height, components and inverted_cmyk are set. The decode
/// fails with YOLO_JPEG_TOO_MANY_SCANS at scan `max_scans` + 1 (0: no limit) and with
/// YOLO_JPEG_TIMED_OUT once CLOCK_MONOTONIC passes `deadline_ns` (0: no deadline).
static inline int yolo_jpeg_open(yolo_jpeg *j, const unsigned char *data, unsigned long size,
                                 int max_scans, unsigned long long deadline_ns) {
    yolo_jpeg_init(j);
    j->max_scans = max_scans;
    j->deadline_ns = deadline_ns;
    if (setjmp(j->jump)) return yolo_jpeg_failure(j);
    jpeg_create_decompress(&j->cinfo);
    j->progress.progress_monitor = yolo_jpeg_progress;
    j->cinfo.progress = &j->progress;  // after jpeg_create_decompress, which clears the struct
    jpeg_mem_src(&j->cinfo, data, size);
    jpeg_read_header(&j->cinfo, TRUE);
    switch (j->cinfo.jpeg_color_space) {
    case JCS_GRAYSCALE: j->cinfo.out_color_space = JCS_GRAYSCALE; j->components = 1; break;
    case JCS_CMYK: case JCS_YCCK: j->cinfo.out_color_space = JCS_CMYK; j->components = 4; break;
    default: j->cinfo.out_color_space = JCS_RGB; j->components = 3; break;
    }
    j->inverted_cmyk = j->cinfo.saw_Adobe_marker;
    if (j->truncated) return YOLO_JPEG_TRUNCATED;
    return YOLO_JPEG_OK;
}

/// Decodes the image into `out`: height rows of width * components bytes.
static inline int yolo_jpeg_read(yolo_jpeg *j, unsigned char *out) {
    if (setjmp(j->jump)) return yolo_jpeg_failure(j);
    jpeg_start_decompress(&j->cinfo);
    size_t stride = (size_t)j->cinfo.output_width * (size_t)j->cinfo.output_components;
    while (j->cinfo.output_scanline < j->cinfo.output_height) {
        JSAMPROW row = out + (size_t)j->cinfo.output_scanline * stride;
        jpeg_read_scanlines(&j->cinfo, &row, 1);
    }
    jpeg_finish_decompress(&j->cinfo);
    if (j->max_scans > 0 && j->cinfo.input_scan_number > j->max_scans) return YOLO_JPEG_TOO_MANY_SCANS;
    // A single-scan image whose coded data was all there lacks only its final EOI marker:
    // every pixel is real, so accept it (as libjpeg and stb_image do).
    int single_scan = !j->cinfo.progressive_mode && j->cinfo.comps_in_scan == j->cinfo.num_components;
    if (j->truncated && (j->data_missing || !single_scan)) return YOLO_JPEG_TRUNCATED;
    return YOLO_JPEG_OK;
}

static inline void yolo_jpeg_close(yolo_jpeg *j) {
    jpeg_destroy_decompress(&j->cinfo);
}

/// Encodes 8-bit interleaved RGB (row stride width * 3) into a malloc'ed buffer that the caller
/// frees with free(*out), also on failure.
static inline int yolo_jpeg_encode(yolo_jpeg *j, const unsigned char *rgb, unsigned width,
                                   unsigned height, int quality,
                                   unsigned char **out, unsigned long *out_size) {
    yolo_jpeg_init(j);
    *out = NULL;
    *out_size = 0;
    if (setjmp(j->jump)) {
        jpeg_destroy_compress(&j->cinfo_out);
        return YOLO_JPEG_CORRUPT;
    }
    jpeg_create_compress(&j->cinfo_out);
    jpeg_mem_dest(&j->cinfo_out, out, out_size);
    j->cinfo_out.image_width = width;
    j->cinfo_out.image_height = height;
    j->cinfo_out.input_components = 3;
    j->cinfo_out.in_color_space = JCS_RGB;
    jpeg_set_defaults(&j->cinfo_out);
    jpeg_set_quality(&j->cinfo_out, quality, TRUE);
    jpeg_start_compress(&j->cinfo_out, TRUE);
    while (j->cinfo_out.next_scanline < height) {
        JSAMPROW row = (JSAMPROW)(rgb + (size_t)j->cinfo_out.next_scanline * width * 3);
        jpeg_write_scanlines(&j->cinfo_out, &row, 1);
    }
    jpeg_finish_compress(&j->cinfo_out);
    jpeg_destroy_compress(&j->cinfo_out);
    return YOLO_JPEG_OK;
}
