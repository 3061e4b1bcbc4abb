#!/usr/bin/env bash
# The ordinary Swift toolchain on arm64 Linux: for each Debian suite given (default:
# $ARM_LINUX_SUITES, else "stable"; stable's `swiftlang` is 6.0.x, what Raspberry Pi OS users get
# from apt, reading Package@swift-6.0.swift; unstable's is 6.2.x, reading Package.swift), the whole
# package built for arm64 by Debian's own `swiftlang` of that suite, then run under qemu-user
# (binfmt_misc). Two ways to build (ARM_LINUX_MODE):
#   cross   (the default on amd64; what CI runs) Debian SUITE's amd64 `swiftlang`, at full
#           speed in an amd64 root file system (the one scripts/oldest-swift-check.sh uses), compiles for
#           aarch64-unknown-linux-gnu against a sysroot of SUITE's arm64 packages (swiftlang's
#           arm64 standard library, Foundation and XCTest, the -dev packages), only unpacked
#           (scripts/lib/debian-rootfs.sh): the same compiler version and the same arm64 libraries
#           as on a board, 2 minutes of build instead of 45; the arm64 programs then run in that root
#           file system through qemu, loading their libraries from the sysroot;
#   native  as a Raspberry Pi user would: an arm64 root file system with `swiftlang` installed
#           (mmdebstrap under emulation, 10-16 minutes) in which qemu runs the compiler itself
#           (45-65 minutes for the build): too long for CI, kept to check the toolchain on arm64;
#           the default on an arm64 machine, where nothing is emulated.
# Then, for either:
#   build   `swift build -c release --build-tests -Xswiftc -enable-testing`: the whole package
#           (every target and product, the test suites too) in release, in one build;
#   detect  `yolo detect --json --thresh 0.1` on the samples, compared with this machine's
#           (x86_64) `yolo` (scripts/compare-detections.py: confidence within 1e-4, box edges
#           within 0.1 px), once with qemu's default CPU (every extension: the dotprod level) and
#           once as a Cortex-A72 (Raspberry Pi 4: the neon level);
#   bench   `yolo-bench --runs 2`: the kernel level it picks (must be `neon` or `dotprod`) and the
#           memory it reports (timings under emulation mean nothing);
#   memory  peak RSS of `yolo detect` per convolution setting (/usr/bin/time; qemu's own
#           footprint is measured with `yolo --help` and shown apart);
#   tests   the XCTest suites, all but those named in $ARM_LINUX_SKIP_TESTS (default below:
#           they run for long under emulation and repeat on arm64 what the others cover), each
#           suite a process of its own, $ARM_LINUX_TEST_JOBS (2) at a time, each within
#           $ARM_LINUX_SUITE_TIMEOUT s (300), all within $ARM_LINUX_TEST_TIMEOUT s (900)
#           (scripts/lib/xctest-shards.sh; docs/arm.md has the suites' times under qemu).
# Outputs and logs: .build/arm-linux-check/. Every step prints its time; a failing step ends
# the script with "FAILED in step: [suite] step" and why. When this machine cannot run arm64
# binaries at all (no binfmt_misc, qemu's handler cannot be registered), it says SKIPPED loudly
# and exits 0; every other problem is a failure. Needs root (re-runs itself with sudo).
#   scripts/arm-linux-check.sh [SUITE ...]       e.g. ARM_LINUX_MODE=native scripts/arm-linux-check.sh unstable
set -Eeuo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
. scripts/lib/debian-rootfs.sh
rootfs_init arm-linux-check "$@"

suites=("$@")
[ ${#suites[@]} -gt 0 ] || read -r -a suites <<< "${ARM_LINUX_SUITES:-stable}"
# (On an arm64 machine there is nothing to cross: native mode runs there without emulation.)
mode=${ARM_LINUX_MODE:-$([ "$(dpkg --print-architecture 2>/dev/null)" = arm64 ] && echo native || echo cross)}
[ "$mode" = cross ] || [ "$mode" = native ] || rootfs_fail "ARM_LINUX_MODE must be cross or native, not '$mode'"
# Tests not run under emulation (a regular expression for `swift test --skip`; empty: run all).
# A forward pass takes seconds under qemu, so what only repeats on arm64 what runs elsewhere is
# left out:
#  - tests of concurrency alone (pipelines, shared models and sessions on several threads): qemu
#    on an x86 host keeps x86's memory ordering, so they show nothing the x86 runs and
#    ThreadSanitizer do not; StreamTests also needs ffmpeg, which the root file system lacks;
#  - detections on the samples against Darknet's, the CLI's options over 14 forwards, and yolo
#    serve's answers against yolo detect's and its DeepStack API over a dozen forwards each (1-1.5
#    minutes apiece under qemu): the detect step compares every arm64 detection with this
#    machine's, which scripts/test checks against Darknet's, and the rest of ServeAPITests runs;
#  - what measures or loads (yolo tune, yolo-bench's busy-machine report, INT8 accuracy over the
#    samples, the live view, yolo serve under load), builds the README's examples as packages,
#    or needs the real HTTP clients (Chromium, a PyPI venv), Java (Spark) or Python, which the root file
#    system lacks;
#  - the data-size limit (ulimit -d) tests: qemu itself cannot start under those limits.
default_skip='StreamTests|FramePipelineTests|ConcurrencyTests|ReadmeExamplesTests'
default_skip+='|CLITests/test(ADataSizeLimit|AnImageTooLargeForTheDataSizeLimit)'
default_skip+='|ReferenceTests/(testOneDetectorCalledFromTwoThreadsSerializes|testTwoSessionsOnTwoThreadsMatchOneSession|testOneModelSharedAcrossTasks)'
default_skip+='|DarknetImageTests/testDetectionsMatchDarknet|CLITests/testClassFilterMaxDetectionsSizeAndWeightsDirectory'
default_skip+='|ServeAPITests/test(DeepStackWithCurl|DetectAnswersWhatDetectJSONPrints)'
default_skip+='|TuneTests|BenchTests|Int8AccuracyTests|ServeLiveTests|ServeLimitsTests|ServeClientsTests|SparkTests'
#  - and, to keep CI within its time: what runs the same Swift code whatever the CPU (yolo
#    calibrate's FP32 forwards, the server's query parameters and API keys over many requests:
#    2 1/2 minutes together under qemu); ReferenceTests' heads against Darknet's run a third of
#    their level x algorithm matrix (YOLO_TEST_EMULATED, as under a sanitizer: every level with
#    Winograd, every algorithm at the selected level).
default_skip+='|CLITests/testCalibrateWritesATableTheModelReads|ServeAPITests/test(DetectQueryParameters|APIKeyIsRequiredWhereverItIsSet)'
#  - FP16's detections on the samples against FP32's (18 forwards: 4 1/2 minutes under qemu; on
#    2026-12-03 with the real fmla .8h kernels: 9 photos, 4 / 4 / 4 detections at 0.25, 12 / 12 / 12
#    at 0.1, drift mean 0.0020, max 0.0036): x86 runs it with the software model of those kernels,
#    and FP16PlanTests, GemmKernelTests and CLITests run the real ones here.
default_skip+='|FP16AccuracyTests'
#  - the CLI's and the server's policies added since (outputs by file kind, names, usage, the
#    calibrate command, Host/Origin, framing, costly requests, the bounded stop: the same Swift
#    code on every CPU, run by scripts/test and the sanitizers); CLITests, BatchTests and
#    ServeAPITests keep the yolo binary and the server running on arm64.
default_skip+='|WriteTargetTests|InputsNamesTests|CLIUsageTests|CLICalibrateTests'
default_skip+='|ServeCostTests|ServeShutdownTests|ServeHostTests|ServeFramingTests'
#  - every cfg of ../shared/cfg loaded with random weights (ModelZooTests: hundreds of MB of
#    weights made and read; RegionReorgTests runs the new layers here).
default_skip+='|ModelZooTests'
skip_tests=${ARM_LINUX_SKIP_TESTS-$default_skip}
emulated=""; [ "$(dpkg --print-architecture 2>/dev/null)" = arm64 ] || emulated="YOLO_TEST_EMULATED=qemu"
out=$PWD/.build/arm-linux-check
mkdir -p "$out"
start=$SECONDS
suite="-" step="tools" step_start=$SECONDS
times=()
trap 'echo "arm-linux-check: FAILED in step: [$suite] $step (status $?, after $((SECONDS - step_start)) s, at line $LINENO: $BASH_COMMAND)" >&2' ERR
# Peak RSS in KiB of a command under qemu (qemu's own code and translation cache included).
rss() { rootfs_run "/usr/bin/time -f %M -o /tmp/rss $* > /dev/null 2>&1; cat /tmp/rss"; }
begin() { step=$1; step_start=$SECONDS; rootfs_say "[$suite] $step"; }
finish() { local s=$((SECONDS - step_start)); rootfs_say "[$suite] $step: ok ($s s)"; times+=("[$suite] $step $s s"); }
fail() { rootfs_fail "in step: [$suite] $step: $*"; }

# --- Tools, and whether this machine can run arm64 binaries at all ----------------------------
begin tools
rc=0; rootfs_tools arm64 || rc=$?
[ $rc != 2 ] || rootfs_skip "nothing was built or run for arm64: $rootfs_skip_reason"
[ $rc = 0 ] || fail "setting up the tools (status $rc)"
rootfs_say "qemu: $(qemu-aarch64-static --version | head -1)"
finish

# --- This machine's detections, the reference ----------------------------------------------
suite=x86_64
begin "reference detections"
scripts/bootstrap.sh >/dev/null
swift build --product yolo > "$out/x86-build.log" 2>&1 || { tail -20 "$out/x86-build.log" >&2; fail "building yolo for this machine"; }
x86_yolo=$(swift build --product yolo --show-bin-path)/yolo
detect_args=(detect --json --no-draw --thresh 0.1 --threads 2)
mapfile -t images < <(ls samples/*.png samples/*.jpg)
[ ${#images[@]} -gt 0 ] || fail "no samples/*.png or *.jpg (scripts/fetch-samples.sh)"
"$x86_yolo" "${detect_args[@]}" "${images[@]}" > "$out/detect-x86_64.jsonl" || fail "yolo detect on this machine"
finish

# A cross build: what every `swift` command of the package gets (the manifest chooses the arm64
# flags from YOLO_TARGET_ARCH; pkg-config reads the sysroot's .pc files).
cross_env="export YOLO_TARGET_ARCH=aarch64 PKG_CONFIG_SYSROOT_DIR=/sysroot"
cross_env+=" PKG_CONFIG_PATH=/sysroot/usr/lib/aarch64-linux-gnu/pkgconfig:/sysroot/usr/share/pkgconfig"
# (the C shim one CLI test preloads into yolo must be built for arm64 too)
cross_env+=" YOLO_TEST_CC='/usr/libexec/swift/bin/clang --target=aarch64-linux-gnu --sysroot=/sysroot -fuse-ld=lld';"
cross_flags=(--triple aarch64-unknown-linux-gnu --sdk /sysroot -Xswiftc -sdk -Xswiftc /sysroot
             -Xswiftc -resource-dir -Xswiftc /sysroot/usr/libexec/swift/lib/swift -Xswiftc -use-ld=lld)
for suite in "${suites[@]}"; do
    log=$out/$suite
    begin "root file system"
    if [ "$mode" = cross ]; then
        host=$(dpkg --print-architecture)
        [ "$host" = amd64 ] || fail "a cross build needs an amd64 machine (this one is $host): ARM_LINUX_MODE=native"
        rootfs_make "$suite" amd64 "${rootfs_build_packages[@]}"
        rootfs_sysroot "$suite" arm64 libopenblas0 libjpeg-dev libpng-dev libdeflate-dev libmicrohttpd-dev
        env=$cross_env
    else
        rootfs_make "$suite" arm64 libopenblas-dev libjpeg-dev libpng-dev libdeflate-dev libmicrohttpd-dev pkg-config time curl
        env=""
    fi
    rootfs_sync
    toolchain=$(rootfs_run "swift --version 2>/dev/null | head -1") || fail "swift --version in $rootfs"
    rootfs_say "[$suite] toolchain: $toolchain (Debian $suite's; $mode build for arm64)"
    finish

    begin build
    # The build lives outside the copied checkout (rootfs_sync removes what the checkout lacks).
    # -gnone: no debug info (a sixth of the compile time, more of the link time, under qemu).
    build=(-c release -Xswiftc -enable-testing -Xswiftc -gnone --disable-swift-testing --scratch-path /build/$suite-arm64)
    [ "$mode" = native ] || build+=("${cross_flags[@]}")
    # (An incremental build can link against a module's old symbols after its types change:
    # SwiftPM does not rebuild every module that reaches it. A failed build starts over once clean.)
    # An incremental build kept old code twice: the kernels' specializations in the level targets,
    # and a test module built against a struct's old layout; both crashed (docs/extending.md).
    # When any source differs from the last build's, start clean.
    stamp=$(find Sources Tests Package*.swift -type f | LC_ALL=C sort | xargs sha1sum | sha1sum | cut -c1-40)
    [ "$(cat "$rootfs/build/$suite-arm64/.kernels-stamp" 2>/dev/null)" = "$stamp" ] || rm -rf "$rootfs/build/$suite-arm64"
    if ! rootfs_run "$env swift build ${build[*]} --build-tests" > "$log-build.log" 2>&1 \
        && { rootfs_say "[$suite] build: failed incrementally; again from a clean scratch path"
             rm -rf "$rootfs/build/$suite-arm64"
             ! rootfs_run "$env swift build ${build[*]} --build-tests" > "$log-build.log" 2>&1; }; then
        grep -E 'error:|warning: .*unhandled|Exited with' "$log-build.log" | head -20 >&2 || tail -30 "$log-build.log" >&2
        fail "swift build ${build[*]} --build-tests: the errors above (whole log: $log-build.log)"
    fi
    guest_bin=$(rootfs_run "$env swift build ${build[*]} --show-bin-path" 2>/dev/null) || fail "swift build --show-bin-path"
    bin=$rootfs$guest_bin
    for p in yolo yolo-bench; do [ -x "$bin/$p" ] || fail "no $p in $bin after the build"; done
    [ "$(od -An -tx1 -j18 -N2 "$bin/yolo" | tr -d ' ')" = b700 ] || fail "$bin/yolo is not an arm64 executable (ELF machine)"
    echo "$stamp" > "$rootfs/build/$suite-arm64/.kernels-stamp"
    rootfs_say "[$suite] build: $(grep -E '^Build complete' "$log-build.log" | tail -1)"
    finish

    begin detect
    for cpu in max cortex-a72; do
        rootfs_run "QEMU_CPU=$cpu $guest_bin/yolo ${detect_args[*]} ${images[*]}" > "$out/detect-$suite-arm64-$cpu.jsonl" \
            2> "$log-detect.err" || { cat "$log-detect.err" >&2; fail "yolo detect under qemu -cpu $cpu"; }
        python3 scripts/compare-detections.py --thresh 0.1 "$out/detect-x86_64.jsonl" "$out/detect-$suite-arm64-$cpu.jsonl" \
            | sed "s/^/arm-linux-check: [$suite] qemu -cpu $cpu: /" || fail "the arm64 detections (qemu -cpu $cpu) differ from this machine's (above)"
    done
    finish

    begin bench
    rootfs_run "$guest_bin/yolo-bench --runs 2 --warmup 0 --threads 2 --conv winograd --no-layers --inflight 0" > "$log-bench.log" 2>&1 \
        || { tail -20 "$log-bench.log" >&2; fail "yolo-bench under qemu (log: $log-bench.log)"; }
    grep -iE 'level|rss|kernel' "$log-bench.log" | head -12 | sed "s/^/arm-linux-check: [$suite] bench: /"
    grep -qE '\b(neon|dotprod)\b' "$log-bench.log" || fail "yolo-bench reports neither the neon nor the dotprod kernel level (log: $log-bench.log)"
    finish

    begin memory
    base=$(rss "$guest_bin/yolo --help") || fail "measuring yolo --help"
    rootfs_say "[$suite] memory: peak RSS under qemu, yolo --help (qemu and the process alone): $((base / 1024)) MiB"
    for setting in "" "--conv winograd2" "--conv im2col" "--conv im2col --threads 1" "--precision int8"; do
        kib=$(rss "$guest_bin/yolo detect --no-draw ${setting:---threads 2} samples/coffee.png") || fail "measuring yolo detect $setting"
        rootfs_say "[$suite] memory: yolo detect ${setting:-(defaults, 2 threads)}: peak RSS $((kib / 1024)) MiB, $(((kib - base) / 1024)) MiB above yolo --help"
    done
    finish

    begin tests
    rootfs_run "$env swift test ${build[*]} --skip-build list" > "$log-list.txt" 2>/dev/null || fail "swift test list"
    total=$(grep -c '/' "$log-list.txt" || true)
    skipped=0; [ -z "$skip_tests" ] || skipped=$(grep -cE "$skip_tests" "$log-list.txt" || true)
    rootfs_say "[$suite] tests: $total tests in the package; running $((total - skipped)), skipping $skipped${skip_tests:+:}"
    [ -z "$skip_tests" ] || grep -E "$skip_tests" "$log-list.txt" | sed "s/^/arm-linux-check: [$suite] tests:   skipped /"
    # Each suite in a process of its own, two at a time, each with its own limit
    # (scripts/lib/xctest-shards.sh: a stuck suite fails alone, by name, with the state of its
    # threads; a failed one runs once more alone). The run's folder is kept in the root file
    # system (/build), with the suites' times of the last run (on a first run, those of
    # scripts/lib/arm-xctest-times.txt): the longest start first, the longest split by test.
    runs=/build/$suite-xctest
    cp "$log-list.txt" "$rootfs/build/$suite-list.txt"
    if [ -f "$rootfs$runs/final" ]; then cp "$rootfs$runs/final" "$rootfs/build/$suite-xctest-order"
    else cp scripts/lib/arm-xctest-times.txt "$rootfs/build/$suite-xctest-order"; fi
    status=0
    rootfs_run "$env $emulated XCTEST_JOBS=${ARM_LINUX_TEST_JOBS:-2} XCTEST_SUITE_TIMEOUT=${ARM_LINUX_SUITE_TIMEOUT:-300} \
        XCTEST_TOTAL_TIMEOUT=${ARM_LINUX_TEST_TIMEOUT:-900} XCTEST_ORDER=/build/$suite-xctest-order \
        bash scripts/lib/xctest-shards.sh $guest_bin/yolo-swiftPackageTests.xctest /build/$suite-list.txt $runs '$skip_tests'" \
        2>&1 | tee "$log-tests.log" | sed -u "s/^/arm-linux-check: [$suite] tests: /" || status=$?
    rm -rf "$log-suites"; cp -r "$rootfs$runs" "$log-suites"
    [ "${status:-0}" = 0 ] || fail "a suite failed twice (above; each suite's log: $log-suites/SUITE.log)"
    finish
done

rootfs_say "step times:"
for t in "${times[@]}"; do rootfs_say "  $t"; done
rootfs_say "passed in $((SECONDS - start)) s (${suites[*]})"
