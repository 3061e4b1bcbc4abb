// What the kernel-level detection (Sources/YOLOEngine/Kernels/HostCPU.swift) asks the CPU: CPUID
// and XGETBV on x86, the kernel's AT_HWCAP bits on aarch64. Header only: static inline functions,
// compiled by Swift's Clang importer.
#ifndef YOLO_CCPUID_SHIM_H
#define YOLO_CCPUID_SHIM_H

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

/// CPUID leaf/subleaf into regs[0..3] = eax, ebx, ecx, edx. Returns 0 (regs zeroed) when the
/// leaf is above the CPU's highest basic leaf.
static inline int yolo_cpuid(unsigned leaf, unsigned subleaf, unsigned *regs) {
    regs[0] = regs[1] = regs[2] = regs[3] = 0;
    return __get_cpuid_count(leaf, subleaf, &regs[0], &regs[1], &regs[2], &regs[3]);
}

/// XGETBV(0): the XCR0 register, which state components the OS saves (bit 1 SSE, 2 AVX/YMM,
/// 5-7 AVX-512 opmask/ZMM). Only valid when CPUID.1:ECX.OSXSAVE (bit 27) is set.
static inline unsigned long long yolo_xgetbv0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}
#endif

#if defined(__aarch64__)
#include <sys/auxv.h>

/// The kernel's AT_HWCAP word (HWCAP_ASIMDDP, HWCAP_ASIMDHP, ...). Through this shim because
/// Swift 6.0's Glibc module does not export getauxval (6.2's does).
static inline unsigned long yolo_hwcap(void) {
    return getauxval(AT_HWCAP);
}
#endif

#endif
