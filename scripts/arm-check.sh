#!/usr/bin/env bash
# Proves the engine on 64-bit ARM without an ARM machine: builds YOLOKernels and the whole
# engine (module YOLO) for aarch64 with Embedded Swift (target aarch64-none-none-elf, NEON),
# links them statically against Debian's arm64 glibc and OpenBLAS, and runs under
# qemu-aarch64-static, once as a Cortex-A72 (Raspberry Pi 4) and once as a Cortex-A76 (Pi 5):
#   1. scripts/arm/KernelCheck*.swift: every kernel against the naive references of
#      Sources/YOLOReference (the module the XCTest suites check against too: seeded random
#      inputs, references in double after Darknet's definitions, the comparisons), over its
#      tables of shapes; its output bits are also compared with the same program built for
#      this host; the INT8 GEMM of the neon level (smull) on both CPUs and of the dotprod level
#      (sdot) on the A76, bit for bit against the naive integer reference, and the 16-bit pair GEMM
#      (smlal by element: INT8 Winograd, 10-bit layers) on both; the FP16 GEMM of the
#      dotprod level (fmla .8h) on the A76, against the naive product of FP16-rounded inputs;
#   2. scripts/arm/Forward.swift: yolov3-tiny on the dog input fixture, both raw heads against
#      Darknet's (YOLOReference's SampledTensor parses the .samples fixtures and compares: max
#      abs diff <= 1e-3, channel means <= 1e-4), 1 and 2 threads: with the
#      engine's own GEMM kernels (the default on aarch64) every convolution algorithm, with
#      OpenBLAS's sgemm the default one (and on the A76 once more, 1 thread, with OpenBLAS's Cortex-A72
#      kernels forced). The Cortex-A72 pass runs the forwards on 1 thread: the engine's FP32 NEON
#      code is the same on both. (Plans measured at load are checked under qemu by
#      arm-linux-check.sh's PlanTests, Int8PlanTests and FP16PlanTests, on small models: here
#      it took 3 minutes of CI.);
#   3. INT8 (the shipped table, every convolution but the first in INT8): yolov3-tiny's heads bit
#      for bit equal to this x86 host's, on the A76 with the dotprod level (sdot; 1, 2, 3, 4 and 8 threads)
#      and on the A72 with the neon level (smull, smlal2, sadalp; 1 thread).
# The two CPUs' passes run at once (each mostly one emulated thread), each printed when it ends.
# --build-only builds (what .ci/run starts in the background while scripts/test runs) and exits.
# Installs what is missing (apt: qemu-user-static, gcc-aarch64-linux-gnu; the arm64 OpenBLAS
# .debs are downloaded and unpacked into .build/arm-cache, not installed) and fetches the
# weights. Any build failure or mismatch ends it with a non-zero status and a FAILED line.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
start=$SECONDS
build_only=""
case ${1:-} in
--build-only) build_only=1 ;;
"") ;;
*) echo "usage: scripts/arm-check.sh [--build-only]" >&2; exit 64 ;;
esac
say() { echo "arm-check: $*"; }
fail() { echo "arm-check: FAILED: $*" >&2; exit 1; }
trap 'rc=$?; [ $rc = 0 ] || echo "arm-check: FAILED (status $rc) at line $LINENO: $BASH_COMMAND" >&2' ERR

cache=.build/arm-cache          # the arm64 OpenBLAS, unpacked (kept between runs)
out=.build/arm-check            # objects and programs
mkdir -p "$cache" "$out"
sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"

# --- Tools -------------------------------------------------------------------------------------
command -v swiftc >/dev/null || fail "swiftc not found (the Swift toolchain, 6.0 or later, on PATH or in /opt/swift/usr/bin)"
embedded_stdlib=$(dirname "$(dirname "$(command -v swiftc)")")/lib/swift/embedded
[ -f "$embedded_stdlib/aarch64-none-none-elf/libswiftUnicodeDataTables.a" ] \
    || fail "this Swift toolchain has no Embedded Swift standard library for aarch64-none-none-elf ($embedded_stdlib)"
updated=""
apt=(apt-get -o DPkg::Lock::Timeout=300)   # wait for another apt (a concurrent bootstrap) to finish
apt_update() { [ -n "$updated" ] || { $sudo "${apt[@]}" update -qq; updated=1; }; }
need=()
command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
command -v aarch64-linux-gnu-ld.gold >/dev/null || need+=(binutils-aarch64-linux-gnu)
if [ ${#need[@]} -gt 0 ]; then
    say "installing ${need[*]}"
    apt_update
    DEBIAN_FRONTEND=noninteractive $sudo "${apt[@]}" install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
blas="$cache/root/usr/lib/aarch64-linux-gnu/openblas-pthread/libopenblas.a"
blas_include="$cache/root/usr/include/aarch64-linux-gnu/openblas-pthread"
if [ ! -f "$blas" ] || [ ! -f "$blas_include/cblas.h" ]; then
    say "downloading Debian's arm64 OpenBLAS into $cache"
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        $sudo dpkg --add-architecture arm64
        updated=""
    fi
    apt_update
    rm -rf "$cache/debs" "$cache/root"; mkdir -p "$cache/debs"
    # apt-get download writes into the current directory (as _apt when it may: let it).
    chmod 777 "$cache/debs"
    (cd "$cache/debs" && apt-get download -q libopenblas-dev:arm64 libopenblas-pthread-dev:arm64 libopenblas0-pthread:arm64 \
        2> >(grep -v "unsandboxed" >&2))
    for deb in "$cache"/debs/*.deb; do dpkg-deb -x "$deb" "$cache/root"; done
    [ -f "$blas" ] || fail "no static libopenblas.a in the arm64 OpenBLAS packages"
fi
weights/fetch.sh >/dev/null
for f in weights/yolov3-tiny.cfg weights/yolov3-tiny.weights; do [ -s "$f" ] || fail "$f missing"; done
say "tools: $(swiftc --version 2>&1 | head -1); $(qemu-aarch64-static --version | head -1); OpenBLAS $(ls "$cache"/debs | sed -n 's/^libopenblas0-pthread_\(.*\)_arm64.deb/\1/p')"

# --- Build (skipped when no input changed since the last successful build) ---------------------
# (Its files are in folders by datatype and algorithm: every .swift under it.)
kernel_sources=()
while IFS= read -r f; do kernel_sources+=("$f"); done < <(find Sources/YOLOKernels -name '*.swift' | LC_ALL=C sort)
# The naive references (imports nothing), linked into both programs.
reference_sources=(Sources/YOLOReference/*.swift)
# Per-ISA kernel targets (Sources/YOLOKernels<Level>/, each its own module over YOLOKernels): all
# are built; those for other architectures compile to nothing here.
level_modules=()
for d in Sources/YOLOKernels?*/; do [ -d "$d" ] && level_modules+=("$(basename "$d")"); done
level_sources=()
for m in "${level_modules[@]}"; do level_sources+=(Sources/"$m"/*.swift); done
# The engine's modules, in dependency order (the umbrella YOLO and what only the full toolchain
# builds, image files and video, are not part of it).
engine_modules=(YOLOCore YOLOEngine YOLODetection)
engine_sources=()
for m in "${engine_modules[@]}"; do
    while IFS= read -r f; do engine_sources+=("$f"); done < <(find "Sources/$m" -name '*.swift' | LC_ALL=C sort)
done
[ ${#kernel_sources[@]} -gt 0 ] && [ -f "${kernel_sources[0]}" ] || fail "no .swift file under Sources/YOLOKernels"
stamp=$( (cat "$0" "${kernel_sources[@]}" "${reference_sources[@]}" "${level_sources[@]}" "${engine_sources[@]}" scripts/arm/*.swift scripts/arm/*.c scripts/arm/Glibc/* Sources/COpenBLAS/* Sources/CHints/* Sources/CDot/*;
          swiftc --version 2>&1; ls -l "$blas") | sha256sum | cut -d' ' -f1)
emb=(swiftc -target aarch64-none-none-elf -enable-experimental-feature Embedded -wmo -parse-as-library -O
     -Xcc -isystem -Xcc /usr/aarch64-linux-gnu/include -I scripts/arm/Glibc -I Sources/CHints -I Sources/CDot -I "$out")
if [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ] && [ -x "$out/kernel-check" ] && [ -x "$out/yolo-forward" ]; then
    say "build: up to date ($out)"
else
    rm -f "$out/stamp"
    say "build: Embedded Swift, aarch64-none-none-elf: Glibc stand-in, YOLOKernels (${#kernel_sources[@]} files), YOLOReference (${#reference_sources[@]} files), ${level_modules[*]:-no kernel levels}, ${engine_modules[*]} (${#engine_sources[@]} files), checks"
    t0=$SECONDS
    # The same kernel check for this machine, to compare output bits: built beside the aarch64
    # objects, on the other core (the build took 414-424 s with it, 393 s without on a less busy
    # host: no saving shown).
    build_host() {
        host=(swiftc -O -wmo -parse-as-library -I Sources/CHints)
        mkdir -p "$out/host"
        "${host[@]}" -module-name YOLOKernels -emit-module -emit-module-path "$out/host/YOLOKernels.swiftmodule" \
            -c -o "$out/host/YOLOKernels.o" "${kernel_sources[@]}" || fail "building YOLOKernels for this host"
        "${host[@]}" -module-name YOLOReference -emit-module -emit-module-path "$out/host/YOLOReference.swiftmodule" \
            -c -o "$out/host/YOLOReference.o" "${reference_sources[@]}" || fail "building YOLOReference for this host"
        # The check imports the baseline level only (the others need their -target-cpu: Package.swift).
        "${host[@]}" -module-name YOLOKernelsBaseline -I "$out/host" -emit-module -emit-module-path "$out/host/YOLOKernelsBaseline.swiftmodule" \
            -c -o "$out/host/YOLOKernelsBaseline.o" Sources/YOLOKernelsBaseline/*.swift || fail "building YOLOKernelsBaseline for this host"
        "${host[@]}" -module-name KernelCheck -I "$out/host" -o "$out/host/kernel-check" scripts/arm/KernelCheck*.swift \
            "$out/host/YOLOKernelsBaseline.o" "$out/host/YOLOKernels.o" "$out/host/YOLOReference.o" || fail "building the kernel check for this host"
    }
    build_host & host_build=$!
    "${emb[@]}" -module-name Glibc -emit-module -emit-module-path "$out/Glibc.swiftmodule" -c -o "$out/Glibc.o" \
        scripts/arm/Glibc/Glibc.swift || fail "building the Glibc stand-in module"
    "${emb[@]}" -module-name YOLOKernels -emit-module -emit-module-path "$out/YOLOKernels.swiftmodule" -c -o "$out/YOLOKernels.o" \
        "${kernel_sources[@]}" || fail "building YOLOKernels for aarch64 (Embedded Swift)"
    "${emb[@]}" -module-name YOLOReference -emit-module -emit-module-path "$out/YOLOReference.swiftmodule" -c -o "$out/YOLOReference.o" \
        "${reference_sources[@]}" || fail "building YOLOReference for aarch64 (Embedded Swift)"
    level_objects=()
    for m in "${level_modules[@]}"; do
        # Each level's CPU, as Package.swift names it for arm64 (the x86 levels compile to nothing here).
        cpu=(); [ "$m" = YOLOKernelsDotProd ] && cpu=(-target-cpu cortex-a76)
        "${emb[@]}" "${cpu[@]}" -module-name "$m" -emit-module -emit-module-path "$out/$m.swiftmodule" -c -o "$out/$m.o" \
            Sources/"$m"/*.swift || fail "building $m for aarch64 (Embedded Swift)"
        level_objects+=("$out/$m.o")
    done
    "${emb[@]}" -module-name KernelCheck -c -o "$out/KernelCheck.o" scripts/arm/KernelCheck*.swift \
        || fail "building scripts/arm/KernelCheck.swift for aarch64"
    # -package-name: the engine has `package` declarations (SwiftPM passes one too).
    engine_objects=()
    for m in "${engine_modules[@]}"; do
        mapfile -t sources < <(find "Sources/$m" -name '*.swift' | LC_ALL=C sort)
        "${emb[@]}" -module-name "$m" -package-name yolo_swift -emit-module -emit-module-path "$out/$m.swiftmodule" -c -o "$out/$m.o" \
            -I Sources/COpenBLAS -Xcc -DYOLO_OPENBLAS_LINKED -I Sources/CCPUID "${sources[@]}" \
            || fail "building the engine module $m (Sources/$m) for aarch64 (Embedded Swift)"
        engine_objects+=("$out/$m.o")
    done
    "${emb[@]}" -module-name Forward -package-name yolo_swift -c -o "$out/Forward.o" -I Sources/COpenBLAS -Xcc -DYOLO_OPENBLAS_LINKED -I Sources/CCPUID \
        scripts/arm/Forward.swift || fail "building scripts/arm/Forward.swift for aarch64"
    aarch64-linux-gnu-gcc -O2 -c -o "$out/support.o" scripts/arm/support.c
    link=(aarch64-linux-gnu-gcc -static -fuse-ld=gold -Wl,--gc-sections)
    unicode="$embedded_stdlib/aarch64-none-none-elf/libswiftUnicodeDataTables.a"
    "${link[@]}" -o "$out/kernel-check" "$out/KernelCheck.o" "${level_objects[@]}" "$out/YOLOKernels.o" "$out/YOLOReference.o" "$out/Glibc.o" "$out/support.o" \
        "$unicode" -lm || fail "linking kernel-check"
    "${link[@]}" -o "$out/yolo-forward" "$out/Forward.o" "${engine_objects[@]}" "${level_objects[@]}" "$out/YOLOKernels.o" "$out/YOLOReference.o" "$out/Glibc.o" "$out/support.o" \
        "$blas" "$unicode" -lpthread -lm || fail "linking yolo-forward"
    wait "$host_build" || fail "building the kernel check for this host (above)"
    echo "$stamp" > "$out/stamp"
    say "build: done in $((SECONDS - t0)) s ($out/kernel-check, $out/yolo-forward: static aarch64 Linux executables)"
fi

if [ -n "$build_only" ]; then say "build only: done in $((SECONDS - start)) s"; exit 0; fi

# --- Run under qemu ----------------------------------------------------------------------------
gunzip -c Tests/YOLOTests/Fixtures/dog_input_416.f32.gz > "$out/dog_input_416.f32"
# INT8 heads on this x86 host (the yolo tool), for the aarch64 engine to match bit for bit: with
# the shipped table's ranges and every convolution but the first in INT8 (its other `fp32` marks
# dropped: FP32 GEMM sums round differently with each kernel level's tiles, the integer sums do
# not, and the first convolution's direct kernel rounds as FMA does on both), the table next to a
# copy of the weights, where yolo-forward's int8=DIR finds it as yolo heads does. FP32 for what
# is not INT8 (--int8-fallback fp32): where this host computes in FP16, the plan of yolo heads
# (every layer's output kept, no conv + pool fusion) would take im2col-fp16 for the first one.
[ -f weights/yolov3-tiny.int8 ] || fail "weights/yolov3-tiny.int8 missing (it is in git)"
swift build --product yolo >/dev/null || fail "building the yolo tool for this host (INT8 heads to compare)"
mkdir -p "$out/int8-weights"
cmp -s weights/yolov3-tiny.weights "$out/int8-weights/yolov3-tiny.weights" || cp weights/yolov3-tiny.weights "$out/int8-weights/"
# Layer 13 (a 1x1) loses its `a10` too: its 10-bit input runs as two INT8 passes where the level
# prefers them to FP32 (vpdpbusd, sdot) and FP32 at the neon level (ChoicePolicy.table); and 15
# and 22 their `a12`: the pair 1x1 form runs where the pair product outruns FP32 (x86), not on
# smlal (Int8Functions.pointwisePreferred). The suites under arm-linux-check test it on arm64.
sed -E '/^layer 0 /!s/ fp32$//; /^layer 13 /s/ a10$//; s/ a12$//' weights/yolov3-tiny.int8 > "$out/int8-weights/yolov3-tiny.int8"
# The A76's dotprod level takes the 10-bit layers (`a10`) as INT8 im2col in two sdot passes
# (Int8TenBit.swift), where this host's table takes F(2x2) or the direct conv + pool on pairs:
# its heads are compared with this host's INT8 im2col ones (--conv im2col, which gives those
# layers INT8 im2col here too), the A72's with the default plan's. The amx level's table takes
# INT8 im2col for 10-bit layers without a pool (Int8Functions.TenBitPreference.winograd): same
# sums, another float output; so on an AMX host the default plan's heads come from avx512vnni.
rm -rf "$out/int8-x86" "$out/int8-x86-im2col"
below_amx=(); grep -qw amx_int8 /proc/cpuinfo && below_amx=(env YOLO_KERNEL_LEVEL=avx512vnni)
for conv in winograd im2col; do
    dir="$out/int8-x86"; [ "$conv" = im2col ] && dir="$out/int8-x86-im2col"
    "${below_amx[@]}" .build/debug/yolo heads "$out/dog_input_416.f32" --out "$dir" --weights "$out/int8-weights/yolov3-tiny.weights" \
        --precision int8 --int8-fallback fp32 --threads 2 --conv "$conv" || fail "yolo heads --precision int8 --conv $conv on this host"
done
"$out/host/kernel-check" -v | grep '^digest ' | sed 's/ max abs diff [^ ]*//' > "$out/digests-host.txt" \
    || fail "the kernel check fails on this host (run $out/host/kernel-check -v)"
# One CPU's pass (its output goes to a log of its own: the two passes run at once, below).
# qemu hands the host's environment to the guest: OpenBLAS must detect the emulated CPU itself.
cpu_pass() {
    local cpu=$1
    qemu=(qemu-aarch64-static -cpu "$cpu" -U OPENBLAS_CORETYPE -U OPENBLAS_L2_SIZE -U OPENBLAS_NUM_THREADS -U YOLO_KERNEL_LEVEL)
    say "[$cpu] kernels"
    t_kernels=$SECONDS
    "${qemu[@]}" "$out/kernel-check" -v > "$out/kernels-$cpu.txt" \
        || { grep -v '^ok \|^digest' "$out/kernels-$cpu.txt" >&2 || true; fail "kernel check on $cpu: mismatches above"; }
    grep -v '^ok \|^digest' "$out/kernels-$cpu.txt"
    # Which INT8 dot products ran: smull (neon level) on both, sdot (dotprod level) where the CPU has it.
    int8_dots=("the baseline kernel set's dot product is smull")
    if [ "$cpu" = cortex-a76 ]; then int8_dots+=("the dotprod kernel set's dot product is sdot"); else int8_dots+=("the dotprod kernel set skipped"); fi
    for d in "${int8_dots[@]}"; do
        grep -q "^int8 gemm: $d" "$out/kernels-$cpu.txt" || fail "kernel check on $cpu: no line 'int8 gemm: $d'"
    done
    grep '^digest ' "$out/kernels-$cpu.txt" | sed 's/ max abs diff [^ ]*//' > "$out/digests-$cpu.txt"
    if cmp -s "$out/digests-host.txt" "$out/digests-$cpu.txt"; then
        say "[$cpu] kernels: every output bit for bit equal to this host's ($(uname -m)) ($((SECONDS - t_kernels)) s)"
    else
        diff "$out/digests-host.txt" "$out/digests-$cpu.txt" | head -20 >&2 || true
        fail "kernel outputs on $cpu differ from this host's in the bits above"
    fi
    heads=(weights/yolov3-tiny.cfg weights/yolov3-tiny.weights "$out/dog_input_416.f32"
           Tests/YOLOTests/Fixtures/dog_conv15.samples Tests/YOLOTests/Fixtures/dog_conv22.samples)
    # Our FP32 kernels are the same NEON code at both levels (neon on the A72; dotprod, built for
    # the A76, there: no fp16 arithmetic), so the A76 pass covers them all; the A72 pass runs each
    # kernel (above), every algorithm on 1 thread and OpenBLAS's own A72 kernels (below), saving
    # the CI about 5 minutes.
    threads=(1 2); [ "$cpu" = cortex-a76 ] || threads=(1)
    say "[$cpu] yolov3-tiny forward, the engine's own GEMM kernels (ModelOptions.gemm .automatic: NEON), threads ${threads[*]}"
    t=$SECONDS
    "${qemu[@]}" "$out/yolo-forward" "${heads[@]}" gemm=automatic "${threads[@]}" \
        || fail "yolov3-tiny forward on $cpu (our GEMM kernels) does not match Darknet's heads (see above)"
    say "[$cpu] our GEMM kernels' forwards: $((SECONDS - t)) s"
    # INT8: the A76 picks the dotprod level (sdot), the A72 the neon level (smull).
    level=neon; x86heads="$out/int8-x86"; [ "$cpu" = cortex-a76 ] && { level=dotprod; x86heads="$out/int8-x86-im2col"; }
    # INT8 on the A76 at 1 to 8 threads: the pool's chunks (docs/threads.md) give the same bits
    # at every thread count, as on x86 (ReferenceTests.testThreadCountsGiveTheSameHeads).
    int8threads=("${threads[@]}"); [ "$cpu" = cortex-a76 ] && int8threads=(1 2 3 4 8)
    say "[$cpu] yolov3-tiny forward, INT8 (level $level): heads bit for bit as this host's, threads ${int8threads[*]}"
    t_int8=$SECONDS
    if ! "${qemu[@]}" "$out/yolo-forward" weights/yolov3-tiny.cfg "$out/int8-weights/yolov3-tiny.weights" "${heads[@]:2}" \
            int8="$x86heads" level=$level "${int8threads[@]}" | tee "$out/int8-$cpu.txt"; then
        fail "INT8 forward on $cpu (level $level) differs from this host's INT8 heads (see above)"
    fi
    # The 10-bit layers (the table's a10): two sdot passes on the A76 (no pair form in its plan), F(2x2) on the A72.
    if [ "$cpu" = cortex-a76 ]; then
        grep -q '^model int8: .*plan: .*winograd2-int8' "$out/int8-$cpu.txt" && fail "[$cpu] the INT8 plan kept F(2x2) on pairs"
    else
        grep -q '^model int8: .*plan: .*winograd2-int8' "$out/int8-$cpu.txt" || fail "[$cpu] the INT8 plan has no F(2x2)"
    fi
    say "[$cpu] INT8 forward: $((SECONDS - t_int8)) s"
    say "[$cpu] yolov3-tiny forward, OpenBLAS's sgemm (ModelOptions.gemm .openBLAS), threads ${threads[*]}"
    t=$SECONDS
    "${qemu[@]}" "$out/yolo-forward" "${heads[@]}" gemm=openblas conv=winograd "${threads[@]}" \
        || fail "yolov3-tiny forward on $cpu (OpenBLAS) does not match Darknet's heads (see above)"
    say "[$cpu] OpenBLAS forwards: $((SECONDS - t)) s"
    [ "$cpu" = cortex-a72 ] && a72_kernels_on_a76
    return 0
}
# OpenBLAS 0.3.21 does not know the Cortex-A76 (Raspberry Pi 5) and takes its generic ARMV8
# kernels (printed above); docs/arm.md suggests OPENBLAS_CORETYPE=CORTEXA72 there: check that
# those kernels give the same heads on an A76 (1 thread: the engine's threads around OpenBLAS's
# sgemm ran above). Run after the Cortex-A72 pass, the shorter one.
a72_kernels_on_a76() {
    say "[cortex-a76, OPENBLAS_CORETYPE=CORTEXA72] yolov3-tiny forward, OpenBLAS's sgemm"
    t=$SECONDS
    qemu-aarch64-static -cpu cortex-a76 -U OPENBLAS_L2_SIZE -U OPENBLAS_NUM_THREADS -E OPENBLAS_CORETYPE=CORTEXA72 \
        "$out/yolo-forward" weights/yolov3-tiny.cfg weights/yolov3-tiny.weights "$out/dog_input_416.f32" \
        Tests/YOLOTests/Fixtures/dog_conv15.samples Tests/YOLOTests/Fixtures/dog_conv22.samples gemm=openblas conv=winograd 1 \
        || fail "yolov3-tiny forward on cortex-a76 with OPENBLAS_CORETYPE=CORTEXA72 does not match Darknet's heads"
    say "[cortex-a76, OPENBLAS_CORETYPE=CORTEXA72] forward: $((SECONDS - t)) s"
}
# The two CPUs' passes at once, each printed once it has ended: each is mostly one emulated
# thread, so on 2 cores they take about as long as the longer one (docs/testing.md).
t_passes=$SECONDS
pids=()
for cpu in cortex-a72 cortex-a76; do
    cpu_pass "$cpu" > "$out/pass-$cpu.log" 2>&1 & pids+=($!)
done
failed=()
for i in 0 1; do
    cpu=$([ "$i" = 0 ] && echo cortex-a72 || echo cortex-a76)
    status=0; wait "${pids[$i]}" || status=$?
    cat "$out/pass-$cpu.log"
    [ "$status" = 0 ] || failed+=("$cpu")
done
[ ${#failed[@]} = 0 ] || fail "the ${failed[*]} pass failed (its lines above)"
say "both passes: $((SECONDS - t_passes)) s"
say "passed in $((SECONDS - start)) s"
