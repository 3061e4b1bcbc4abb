#!/usr/bin/env bash
# The aarch64 INT8 and FP16 micro-kernels' inner loops through llvm-mca (LLVM 16's scheduling models),
# without a board: compiles the dotprod level (sdot, -target-cpu cortex-a76) and the neon level
# (smull + smlal2 + sadalp) for aarch64 as scripts/arm-check.sh does (Embedded Swift), takes
# from the assembly the innermost loop with the most sdot / smull / smlal by element (the 16-bit
# pair GEMM) / fmla .8h (the FP16 GEMM; and the FP32 GEMM's fmla .4s beside it), and reports for each core
# the cycles per iteration, the MACs per cycle (MACs per iteration: tile rows x columns x 4), and
# the same model's peak for that instruction (a block of independent instructions of the same
# kind: 24 sdot; 8 smull + smlal2 + sadalp chains; 24 smlal; 24 fmla), so the two numbers are from one
# model: sdot on the Cortex-A76 and A55, smull on the A72, smlal on all three. LLVM 16 has no model of its own for the A72, A76
# or Neoverse N1: it schedules them as a Cortex-A57 (printed), whose two ASIMD pipes issue 2
# sdot a cycle as the A76's do; the A55's model is its own (in order).
# Usage: scripts/arm-mca.sh [-v] (-v: also the loops and llvm-mca's resource pressure). About 45 s.
# Needs llvm-mca-16 (Debian's llvm-16; installed with apt when missing and root).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
verbose=""; [ "${1:-}" = -v ] && verbose=1
say() { echo "arm-mca: $*"; }
fail() { echo "arm-mca: FAILED: $*" >&2; exit 1; }
mca=llvm-mca-16
if ! command -v $mca >/dev/null; then
    [ "$(id -u)" = 0 ] || fail "$mca not found (apt-get install llvm-16)"
    say "installing llvm-16 (for $mca)"
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends llvm-16 >/dev/null
fi
out=.build/arm-mca
mkdir -p "$out"
emb=(swiftc -target aarch64-none-none-elf -enable-experimental-feature Embedded -wmo -parse-as-library -O
     -Xcc -isystem -Xcc /usr/aarch64-linux-gnu/include -I scripts/arm/Glibc -I Sources/CHints -I Sources/CDot -I "$out")
"${emb[@]}" -module-name YOLOKernels -emit-module -emit-module-path "$out/YOLOKernels.swiftmodule" -c -o "$out/YOLOKernels.o" \
    $(find Sources/YOLOKernels -name '*.swift' | LC_ALL=C sort) || fail "building YOLOKernels for aarch64"
"${emb[@]}" -module-name YOLOKernelsBaseline -S -o "$out/neon.s" Sources/YOLOKernelsBaseline/*.swift \
    || fail "building the neon level for aarch64"
"${emb[@]}" -target-cpu cortex-a76 -module-name YOLOKernelsDotProd -S -o "$out/dotprod.s" Sources/YOLOKernelsDotProd/*.swift \
    || fail "building the dotprod level for aarch64"

# The innermost loop (a label, then instructions up to a branch back to it, no label between)
# with the most instructions named $2.
loop() {
    python3 - "$1" "$2" <<'PY'
import re, sys
lines, key, best = open(sys.argv[1]).read().split('\n'), sys.argv[2], None
op, _, arrangement = key.partition('/')   # "fmla/.8h": fmla on halves only
for i, l in enumerate(lines):
    m = re.match(r'^(\.LBB\w+):', l)
    if not m:
        continue
    body = []
    for t in (x.split('//')[0].strip() for x in lines[i + 1:]):
        if re.match(r'^\.?\w+:', t):
            break
        if not t or t.startswith('.'):
            continue
        body.append(t)
        if re.search(r'[\s,]' + re.escape(m.group(1)) + r'$', t):
            n = sum(1 for b in body if b.split()[0] == op and arrangement in b)
            if best is None or n > best[0]:
                best = (n, body)
            break
if not best or best[0] == 0:
    sys.exit(f"no loop with {key} in {sys.argv[1]}")
print('\n'.join(best[1]))
PY
}
loop "$out/dotprod.s" sdot > "$out/sdot-loop.s" || fail "no sdot loop in the dotprod level's assembly"
loop "$out/neon.s" smull > "$out/smull-loop.s" || fail "no smull loop in the neon level's assembly"
loop "$out/neon.s" "smlal/.h[" > "$out/pairs-loop.s" || fail "no smlal-by-element loop (the pair GEMM) in the neon level's assembly"
loop "$out/dotprod.s" fmla/.8h > "$out/fp16-loop.s" || fail "no fmla .8h loop in the dotprod level's assembly"
loop "$out/dotprod.s" fmla/.4s > "$out/fp32-loop.s" || fail "no fmla .4s loop in the dotprod level's assembly"
# The models' peaks: independent instructions only (as many accumulators as the kernels have).
for i in $(seq 0 23); do echo "sdot v$((i + 8)).4s, v0.16b, v$((i % 4 + 1)).16b"; done > "$out/sdot-peak.s"
{ for i in $(seq 0 7); do echo "smull v$((i + 16)).8h, v0.8b, v$((i % 4 + 1)).8b"; done
  for i in $(seq 0 7); do echo "smlal2 v$((i + 16)).8h, v0.16b, v$((i % 4 + 1)).16b"; done
  for i in $(seq 0 7); do echo "sadalp v$((i + 24)).4s, v$((i + 16)).8h"; done; } > "$out/smull-peak.s"
for i in $(seq 0 23); do echo "smlal v$((i + 8)).4s, v$((i % 3 + 1)).4h, v0.h[$((i % 8))]"; done > "$out/pairs-peak.s"
for i in $(seq 0 23); do echo "fmla v$((i + 8)).8h, v$((i % 3 + 1)).8h, v0.h[$((i % 8))]"; done > "$out/fp16-peak.s"
for i in $(seq 0 23); do echo "fmla v$((i + 8)).4s, v$((i % 3 + 1)).4s, v0.s[$((i % 4))]"; done > "$out/fp32-peak.s"

cycles() {   # cycles per iteration of file $2 on core $1
    $mca -mtriple=aarch64 -mcpu="$1" -mattr=+dotprod,+fullfp16 -iterations=500 "$2" 2>/dev/null \
        | awk '/^Iterations:/ {it = $2} /^Total Cycles:/ {c = $3} END {printf "%.2f", c / it}'
}
report() {   # core, loop file, MACs per iteration, peak file, MACs per peak block, what
    local c p
    c=$(cycles "$1" "$2"); p=$(cycles "$1" "$4")
    # Which scheduling model LLVM uses for the core (LLVM 16 has none of its own for the A72,
    # A76 or N1: they get the Cortex-A57's, units A57Unit*; the A55 has its own).
    local model
    model=$($mca -mtriple=aarch64 -mcpu="$1" -mattr=+dotprod,+fullfp16 -iterations=1 -resource-pressure "$4" 2>/dev/null \
        | sed -n 's/^\[0[.0-9]*\] *- *\(CortexA55\|A57\)Unit.*/\1/p' | head -1)
    say "$(printf '%-11s (model %-9s %-26s %3d instructions, %6.2f cycles/iteration, %3d MACs: %5.2f MACs/cycle; peak %5.2f (%3.0f%%)' \
        "$1" "$model)" "$6" "$(wc -l < "$2")" "$c" "$3" "$(echo "$3 / $c" | bc -l)" "$(echo "$5 / $p" | bc -l)" \
        "$(echo "100 * ($3 / $c) / ($5 / $p)" | bc -l)")"
    if [ -n "$verbose" ]; then
        $mca -mtriple=aarch64 -mcpu="$1" -mattr=+dotprod,+fullfp16 -iterations=500 -resource-pressure "$2" | sed -n '/Resource pressure per iteration/,/^$/p'
    fi
}
[ -n "$verbose" ] && { echo "--- sdot loop (dotprod level, 8 x 12 tile):"; cat "$out/sdot-loop.s"; echo "--- smull loop (neon level, 4 x 8 tile):"; cat "$out/smull-loop.s"; echo "--- smlal loop (pair GEMM, 8 x 12 tile):"; cat "$out/pairs-loop.s"; echo "--- fmla .8h loop (FP16 GEMM, 8 x 24 tile):"; cat "$out/fp16-loop.s"; }
say "$($mca --version | grep -o 'LLVM version [0-9.]*'); one iteration = one group of 4 steps of k over the tile"
report cortex-a76 "$out/sdot-loop.s" 384 "$out/sdot-peak.s" $((24 * 16)) "sdot 8x12 (dotprod level)"
report cortex-a55 "$out/sdot-loop.s" 384 "$out/sdot-peak.s" $((24 * 16)) "sdot 8x12 (dotprod level)"
report cortex-a72 "$out/smull-loop.s" 128 "$out/smull-peak.s" $((8 * 16)) "smull 4x8 (neon level)"
# The 16-bit pair GEMM (INT8 Winograd, 10-bit layers; every arm64 level runs the neon level's):
# one iteration = one group (2 channels) over its 8 x 12 tile, 48 smlal / smlal2 by element.
for core in cortex-a72 cortex-a76 cortex-a55; do
    report $core "$out/pairs-loop.s" 192 "$out/pairs-peak.s" $((24 * 4)) "smlal 8x12 (pair GEMM)"
done
# FP16 (one iteration = one step of k over the 8 x 24 tile: 24 fmla .8h) against FP32's GEMM loop
# of the same level (its 8 x 12 tile: 24 fmla .4s a step).
for core in cortex-a76 cortex-a55; do
    report $core "$out/fp16-loop.s" 192 "$out/fp16-peak.s" $((24 * 8)) "fmla .8h 8x24 (FP16 GEMM)"
    report $core "$out/fp32-loop.s" 96 "$out/fp32-peak.s" $((24 * 4)) "fmla .4s 8x12 (FP32 GEMM)"
done
