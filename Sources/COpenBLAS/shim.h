// OpenBLAS, loaded when first needed rather than linked: only the x86 baseline level and
// `--gemm openblas` use it. Linked, OpenBLAS starts at process start-up a thread pool sized by
// the CPU count, whose threads each reserve a 128 MiB buffer at once; under a data-size limit
// (`ulimit -d`) they spin on the failing allocation and the process hangs at exit joining
// them. Loaded here with OPENBLAS_NUM_THREADS=1 (the engine splits its products over its own
// threads), it starts no thread at all, and a machine without OpenBLAS runs every other level.
//
// The declarations are OpenBLAS's C ABI as Debian builds it (32-bit integers, `blasint`; the
// CBLAS enumerations are ints), so building needs no OpenBLAS headers. Builds that link
// OpenBLAS statically (scripts/arm-check.sh) define YOLO_OPENBLAS_LINKED.
#ifndef YOLO_COPENBLAS_SHIM_H
#define YOLO_COPENBLAS_SHIM_H
#include <stddef.h>
#include <stdlib.h>

enum { YOLO_CBLAS_ROW_MAJOR = 101, YOLO_CBLAS_NO_TRANS = 111 };
typedef void yolo_sgemm_fn(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
                           const float *b, int ldb, float beta, float *c, int ldc);
typedef void yolo_set_threads_fn(int threads);
typedef char *yolo_string_fn(void);

/// OpenBLAS's functions the engine calls; `error` is NULL when all of them were found.
typedef struct {
    yolo_sgemm_fn *sgemm;
    yolo_set_threads_fn *set_num_threads;
    yolo_string_fn *get_corename;
    yolo_string_fn *get_config;
    const char *error;
} yolo_openblas;

#ifdef YOLO_OPENBLAS_LINKED
yolo_sgemm_fn cblas_sgemm;
yolo_set_threads_fn openblas_set_num_threads;
yolo_string_fn openblas_get_corename;
yolo_string_fn openblas_get_config;
#else
#include <dlfcn.h>
#endif

/// Loads OpenBLAS (libopenblas.so.0, else libopenblas.so) and sets it to one thread. Call once
/// per process (the engine keeps the result).
static inline yolo_openblas yolo_openblas_load(void) {
    yolo_openblas b = {0};
#ifdef YOLO_OPENBLAS_LINKED
    b.sgemm = cblas_sgemm;
    b.set_num_threads = openblas_set_num_threads;
    b.get_corename = openblas_get_corename;
    b.get_config = openblas_get_config;
#else
    // Read by OpenBLAS's constructor, which sizes its thread pool. Left set afterwards: unsetting
    // it would move the environment under other threads' getenv.
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    void *h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libopenblas.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        b.error = dlerror();
        if (!b.error) b.error = "libopenblas.so.0: not found";
        return b;
    }
    b.sgemm = (yolo_sgemm_fn *)dlsym(h, "cblas_sgemm");
    b.set_num_threads = (yolo_set_threads_fn *)dlsym(h, "openblas_set_num_threads");
    b.get_corename = (yolo_string_fn *)dlsym(h, "openblas_get_corename");
    b.get_config = (yolo_string_fn *)dlsym(h, "openblas_get_config");
    if (!b.sgemm || !b.set_num_threads || !b.get_corename || !b.get_config) {
        b.error = "the libopenblas found lacks cblas_sgemm, openblas_set_num_threads, openblas_get_corename "
                  "or openblas_get_config";
        b.sgemm = NULL;
        return b;
    }
#endif
    b.set_num_threads(1);
    return b;
}
#endif
