// Software prefetch for the GEMM micro-kernels (Sources/YOLOKernels/PackedGemm.swift), which
// Swift cannot express. Header only: a static inline function the Clang importer compiles into
// the per-ISA kernel targets, where LLVM inlines it into the kernel loop (one prefetcht0 /
// prfm pldl1keep). A prefetch never faults, so addresses past the end of a buffer are harmless.
#ifndef YOLO_CPREFETCH_SHIM_H
#define YOLO_CPREFETCH_SHIM_H

/// Asks the CPU to bring the cache line holding `p` into L1 for reading.
static inline void yolo_prefetch(const void *p) { __builtin_prefetch(p, 0, 3); }

#endif
