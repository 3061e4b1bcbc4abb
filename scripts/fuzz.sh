#!/usr/bin/env bash
# Builds the libFuzzer harnesses in Fuzz/ with AddressSanitizer and runs each for a fixed time,
# $FUZZ_JOBS (2) at a time (libFuzzer runs one thread).
#   scripts/fuzz.sh [SECONDS-PER-TARGET] [TARGET ...]     targets: cfg weights image int8 (default all)
#   scripts/fuzz.sh --build-only                          builds them all and exits (.ci/run does
#                                                         it beside scripts/test: one core, mostly)
# Each module is compiled directly with swiftc (SwiftPM cannot build a libFuzzer executable):
# YOLOKernels, YOLO, YOLOImage with -sanitize=fuzzer,address, then one binary per harness, in
# .build-fuzz/. The seeds in Fuzz/corpus/<target> are read-only (Fuzz/<target>.dict, where there is
# one, gives libFuzzer the format's words and edge numbers); new inputs go to
# .build-fuzz/corpus/<target>, crashes to .build-fuzz/crashes/. Fails when any target crashes,
# leaks, times out on one input or runs out of memory; prints per target the executions run and
# the corpus size.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
build_only=""
[ "${1:-}" != --build-only ] || { build_only=1; shift; }
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(cfg weights image int8)
B=.build-fuzz
mkdir -p "$B/obj" "$B/crashes"

# OpenBLAS's and libjpeg's/libpng's headers; their libraries are linked as the module maps say.
cflags=()
for pkg in openblas libjpeg libpng; do
    for f in $(pkg-config --cflags-only-I "$pkg" 2>/dev/null); do cflags+=(-Xcc "$f"); done
done
libdirs=()
for f in $(pkg-config --libs-only-L openblas libjpeg libpng 2>/dev/null); do libdirs+=("$f"); done
common=(-O -g -sanitize=fuzzer,address -parse-as-library -swift-version 5 -package-name yolo_swift
        -I "$B/obj" "${cflags[@]}")
# Every C module of the package (system-library targets: a module map and a shim header each).
for d in Sources/C*/; do common+=(-I "${d%/}"); done

# module NAME [extra flags]: Sources/NAME/**/*.swift -> $B/obj/NAME.o + NAME.swiftmodule,
# rebuilt when a source is newer than the object, or when a module compiled before it was rebuilt
# (they are compiled in dependency order, and an object kept from before a change of its
# dependencies' types links their old symbols).
rebuilt=0
module() {
    local name=$1; shift
    local sources; mapfile -t sources < <(find "Sources/$name" -name '*.swift' | sort)
    local obj="$B/obj/$name.o"
    if [ "$rebuilt" = 0 ] && [ -f "$obj" ] \
        && [ -z "$(find "Sources/$name" Sources/CJPEG Sources/CPNG -newer "$obj" -print -quit)" ]; then return; fi
    rebuilt=1
    echo "fuzz: compiling $name (${#sources[@]} files)"
    swiftc "${common[@]}" "$@" -module-name "$name" -wmo -emit-module -emit-module-path "$B/obj/$name.swiftmodule" \
        -c "${sources[@]}" -o "$obj"
}
module YOLOKernels
# The GEMM kernel levels, each for its CPU, read from the manifest (swift package dump-package, with
# a scratch path of its own: .build may be locked by a build running beside) so that a level
# added to Package.swift is compiled here too: every YOLOKernels<Level> target with
# its -target-cpu flag, if it has one for this architecture (the levels of the other architecture
# build empty).
kernelLevels=()
while read -r name cpu; do
    if [ "$cpu" = - ]; then module "$name"; else module "$name" -target-cpu "$cpu"; fi
    kernelLevels+=("$name")
done < <(swift package --scratch-path "$B/manifest" dump-package | python3 -c '
import json, sys
for t in json.load(sys.stdin)["targets"]:
    if not t["name"].startswith("YOLOKernels") or t["name"] == "YOLOKernels":
        continue
    cpu = "-"
    for s in t.get("settings", []):
        flags = s["kind"].get("unsafeFlags", {}).get("_0", [])
        if "-target-cpu" in flags:
            cpu = flags[flags.index("-target-cpu") + 1]
    print(t["name"], cpu)')
[ ${#kernelLevels[@]} -gt 1 ] || { echo "fuzz: no kernel levels found in the manifest" >&2; exit 1; }
for m in YOLOCore YOLOEngine YOLODetection YOLO; do module "$m"; done
module YOLOImage -enable-testing   # the image harness calls the internal EXIF parsers

harness() {  # harness TARGET SOURCE OBJECTS...
    local target=$1 source=$2; shift 2
    echo "fuzz: linking fuzz-$target"
    # (gold warns once per ASan helper symbol that it cannot export: noise, filtered)
    swiftc "${common[@]}" "$source" "$@" "${libdirs[@]}" -lopenblas -ljpeg -lpng16 -ldeflate -o "$B/fuzz-$target" 2>&1 \
        | { grep -v "Cannot export local symbol" || true; }
}
objs=("$B/obj/YOLOKernels.o")
for m in "${kernelLevels[@]}"; do objs+=("$B/obj/$m.o"); done
for m in YOLOCore YOLOEngine YOLODetection YOLO; do objs+=("$B/obj/$m.o"); done
for t in "${targets[@]}"; do
    case $t in
    cfg) harness cfg Fuzz/CfgFuzzer.swift "${objs[@]}" ;;
    weights) harness weights Fuzz/WeightsFuzzer.swift "${objs[@]}" ;;
    image) harness image Fuzz/ImageFuzzer.swift "${objs[@]}" "$B/obj/YOLOImage.o" ;;
    int8) harness int8 Fuzz/Int8TableFuzzer.swift "${objs[@]}" ;;
    *) echo "fuzz: unknown target '$t' (cfg, weights, image, int8)" >&2; exit 64 ;;
    esac
done

if [ -n "$build_only" ]; then echo "fuzz: built ${targets[*]} in $B"; exit 0; fi

export OPENBLAS_NUM_THREADS=1
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=1:allocator_may_return_null=0"
# libFuzzer reports a trap (a Swift overflow or precondition) with its stack; Swift's own
# backtracer, left on, crashes reading memory under ASan and hides which check failed.
export SWIFT_BACKTRACE=enable=no
# run_one TARGET: its log in $B/fuzz-TARGET.log, its exit status in $B/fuzz-TARGET.status.
run_one() {
    local t=$1 status=0 dict=()
    mkdir -p "$B/corpus/$t"
    [ -f "Fuzz/$t.dict" ] && dict=(-dict="Fuzz/$t.dict")
    "$B/fuzz-$t" "$B/corpus/$t" "Fuzz/corpus/$t" "${dict[@]}" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
        -max_len=16384 -print_final_stats=1 -artifact_prefix="$B/crashes/$t-" >"$B/fuzz-$t.log" 2>&1 || status=$?
    echo "$status" > "$B/fuzz-$t.status"
}
pids=()
for t in "${targets[@]}"; do
    echo "fuzz: running $t for ${seconds}s"
    rm -f "$B/fuzz-$t.status"
    run_one "$t" & pids+=($!)
    if [ ${#pids[@]} -ge "${FUZZ_JOBS:-2}" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
wait
failed=0
summary=()
for t in "${targets[@]}"; do
    log="$B/fuzz-$t.log"
    status=$(cat "$B/fuzz-$t.status" 2>/dev/null || echo "none (the run did not end)")
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    corpus=$(grep -E '^#[0-9]+.*(DONE|pulse|NEW|REDUCE|INITED)' "$log" | grep -oE 'corp: [0-9]+/[0-9]+[a-zA-Z]*' | tail -1)
    line="$t: ${runs:-?} executions, ${corpus:-corp: ?} (inputs/size), exit $status"
    summary+=("$line")
    if [ "$status" != 0 ]; then
        failed=1
        echo "fuzz: $t FAILED (exit $status); the log's end ($log):" >&2
        grep -E 'ERROR|SUMMARY|Test unit written|==[0-9]+==|Fatal|fatal' "$log" | head -20 >&2 || true
        tail -30 "$log" >&2
    fi
done
printf 'fuzz: %s\n' "${summary[@]}"
[ $failed = 0 ] || { echo "fuzz: a target failed; reproduce with $B/fuzz-<target> <crash file>" >&2; exit 1; }
echo "fuzz: all targets passed"
