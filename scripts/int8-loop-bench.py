#!/usr/bin/env python3
"""The AVX2 pair GEMM's inner loop (Int16PairKernel6x2 in Sources/YOLOKernels/Int8/Int16Pairs.swift) on
this CPU's hardware, in assembly, outside the engine: what the loop itself reaches, against the
vpmaddwd peak and against what llvm-mca says (docs/performance-int8-zen3.md: "How far INT8 can go without VNNI").

  scripts/int8-loop-bench.py [--cc cc]

Prints the clock (from a loop of independent FMAs, two a cycle), then GMAC/s (16-bit products a
second) and products a cycle of:
  6x16      today's tile: 2 column vectors loaded, 6 row broadcasts, 12 vpmaddwd + 12 vpaddd
  2x48      2 row broadcasts, 6 column vectors as memory operands of 12 vpmaddwd + 12 vpaddd
  6x16 A from memory   the 6x16 loop with A streamed from 38 MB (layer 12's F(4x4) kernels)
x86-64 with AVX2 only; needs a C compiler. Nothing is written outside a temporary directory."""
import argparse, os, subprocess, sys, tempfile


def loop_6x16():
    s = ["vmovdqu (%rsi), %ymm12", "vmovdqu 32(%rsi), %ymm13"]
    for r in range(6):
        s += [f"vpbroadcastd {4 * r}(%rdi), %ymm14", "vpmaddwd %ymm12, %ymm14, %ymm15", f"vpaddd %ymm15, %ymm{2 * r}, %ymm{2 * r}",
              "vpmaddwd %ymm13, %ymm14, %ymm15", f"vpaddd %ymm15, %ymm{2 * r + 1}, %ymm{2 * r + 1}"]
    return s + ["addq $24, %rdi", "addq $64, %rsi"]


def loop_2x48():
    s = ["vpbroadcastd (%rdi), %ymm12", "vpbroadcastd 4(%rdi), %ymm13"]
    for j in range(6):
        s += [f"vpmaddwd {32 * j}(%rsi), %ymm12, %ymm14", f"vpaddd %ymm14, %ymm{2 * j}, %ymm{2 * j}",
              f"vpmaddwd {32 * j}(%rsi), %ymm13, %ymm15", f"vpaddd %ymm15, %ymm{2 * j + 1}, %ymm{2 * j + 1}"]
    return s + ["addq $8, %rdi", "addq $192, %rsi"]


def function(name, body):
    # (a, b, groups): runs `groups` iterations; returns a past its last group.
    return [f".globl {name}", f"{name}:", "mov %rdx, %rcx", f".L{name}:"] + body + \
           ["decq %rcx", f"jne .L{name}", "mov %rdi, %rax", "vzeroupper", "ret"]


def fma_function():
    return [".globl fma_loop", "fma_loop:", "mov %rdi, %rcx", ".Lfma:"] + \
           [f"vfmadd231ps %ymm14, %ymm15, %ymm{i}" for i in range(10)] + ["decq %rcx", "jne .Lfma", "vzeroupper", "ret"]


DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
char *loop_6x16(const void *, const void *, long);
char *loop_2x48(const void *, const void *, long);
void fma_loop(long);
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static double best_of(char *(*f)(const void *, const void *, long), const char *a, size_t a_bytes, const void *b, long groups, long calls) {
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
        const char *p = a; double t = now();
        for (long i = 0; i < calls; i++) { p = f(p, b, groups); if ((size_t)(p - a) + 24 * groups > a_bytes) p = a; }
        t = now() - t; if (t < best) best = t;
    }
    return best;
}
int main(void) {
    double best = 1e9;
    for (int r = 0; r < 5; r++) { double t = now(); fma_loop(50000000); t = now() - t; if (t < best) best = t; }
    double ghz = 10.0 * 50000000 / best / 2e9;
    printf("clock: %.2f GHz (10 independent FMAs a loop at two a cycle)\n", ghz);
    static int b[64 * 96] __attribute__((aligned(64)));
    size_t small = 64 * 24, big = 38000000;
    char *a = aligned_alloc(64, big + 4096); memset(a, 1, big + 4096);
    long groups = 64, calls = 400000;
    double t = best_of(loop_6x16, a, small, b, groups, calls);
    double macs = 192.0 * groups * calls;
    printf("6x16 (today's tile), operands in L1: %.1f GMAC/s, %.1f products a cycle (vpmaddwd peak 32)\n", macs / t / 1e9, macs / t / 1e9 / ghz);
    t = best_of(loop_2x48, a, small, b, groups, calls);
    printf("2x48 (columns as memory operands), in L1: %.1f GMAC/s, %.1f products a cycle\n", macs / t / 1e9, macs / t / 1e9 / ghz);
    calls = big / (24 * groups);
    t = best_of(loop_6x16, a, big, b, groups, calls);
    macs = 192.0 * groups * calls;
    printf("6x16, A streamed from %.0f MB: %.1f GMAC/s, %.1f products a cycle, A read at %.1f GB/s\n", big / 1e6, macs / t / 1e9,
           macs / t / 1e9 / ghz, 24.0 * groups * calls / t / 1e9);
    return 0;
}
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cc", default=os.environ.get("CC", "cc"))
    a = p.parse_args()
    flags = open("/proc/cpuinfo").read()
    if " avx2 " not in flags or " fma " not in flags:
        sys.exit("int8-loop-bench: this CPU has no AVX2 and FMA")
    with tempfile.TemporaryDirectory() as d:
        asm = [".text"] + function("loop_6x16", loop_6x16()) + function("loop_2x48", loop_2x48()) + fma_function()
        asm += ['.section .note.GNU-stack,"",@progbits']
        open(os.path.join(d, "loops.s"), "w").write("\n".join(asm) + "\n")
        open(os.path.join(d, "main.c"), "w").write(DRIVER)
        exe = os.path.join(d, "bench")
        subprocess.run([a.cc, "-O2", "-o", exe, os.path.join(d, "main.c"), os.path.join(d, "loops.s")], check=True)
        subprocess.run([exe], check=True)


if __name__ == "__main__":
    main()
