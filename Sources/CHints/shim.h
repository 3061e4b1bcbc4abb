// CPU hints Swift cannot express. Header only: static inline functions the Clang importer
// compiles into the modules that import them, where LLVM inlines them.
// - yolo_prefetch: software prefetch for the GEMM micro-kernels (Sources/YOLOKernels/PackedGemm.swift):
//   one prefetcht0 / prfm pldl1keep. A prefetch never faults, so addresses past the end of a
//   buffer are harmless.
// - yolo_spin_pause: the body of a spin-wait loop (Sources/YOLO/Threading.swift): pause on x86,
//   yield on ARM, so a spinning thread leaves the core's resources to its SMT sibling.
#ifndef YOLO_CHINTS_SHIM_H
#define YOLO_CHINTS_SHIM_H

/// Asks the CPU to bring the cache line holding `p` into L1 for reading.
static inline void yolo_prefetch(const void *p) { __builtin_prefetch(p, 0, 3); }

/// One step of a spin-wait.
static inline void yolo_spin_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ volatile("yield");
#endif
}

#endif
