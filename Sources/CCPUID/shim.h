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

#if defined(__linux__) && defined(__x86_64__)
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

/// Asks Linux for the AMX tile data state (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)):
/// without it the first tile instruction kills the process (SIGILL). Returns 0, or the errno
/// (ENOSYS before Linux 5.16, EPERM, ...). Through this shim because syscall(2) is variadic.
static inline int yolo_amx_request_permission(void) {
    long r = syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */);
    return r == 0 ? 0 : errno;
}
#else
static inline int yolo_amx_request_permission(void) { return 38; /* ENOSYS: AMX state is Linux's to grant here */ }
#endif
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
