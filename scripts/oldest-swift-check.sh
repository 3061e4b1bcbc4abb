#!/usr/bin/env bash
# The oldest Swift toolchain this package supports, tested: Debian stable's own `swiftlang`
# (6.0.3 today; the one Raspberry Pi OS users get from apt), which reads Package@swift-6.0.swift.
# Makes (or reuses, from ~/.cache/yolo-swift: scripts/lib/debian-rootfs.sh) an amd64 Debian
# stable root file system with `swiftlang`, the -dev packages, ffmpeg and curl, copies the
# checkout in and, at full speed (no emulation):
#   build   `swift build --build-tests`: every target and product and every test suite, compiled
#           by 6.0.3 (the build is kept in the root file system: a rerun rebuilds what changed);
#   tests   `swift test --skip-build --filter` the suites below: what differs between 6.0 and the
#           newer toolchains and what that build alone has: the kernel levels compiled with
#           `-Xcc -march` (GEMM, Winograd transforms excepted, INT8 with AVX-512 VNNI), the
#           engine's layers and planner, decoding (the [Float] literal 6.0 infers as [Double]),
#           detections against Darknet's, libjpeg/libpng (YOLOImage), the CLI (the Bundle crash of
#           Debian's Foundation), one ffmpeg message (ffmpeg 7), yolo serve (libmicrohttpd).
#           Left out for time (about 10 minutes on 2 cores in all): the long reference, Winograd,
#           concurrency, stream, README, tuning and real-client suites, which use nothing of the
#           toolchain that the chosen ones do not. OLDEST_SWIFT_TESTS=all runs every suite
#           (scripts/test: about 25 minutes on 2 cores), or set it to another --filter regex.
# Every step prints its time; a failing step ends the script with "FAILED in step: STEP" and
# why. When this machine cannot run it at all (no root, no mmdebstrap and no apt to install it,
# no chroot or mount namespaces), it says SKIPPED loudly and exits 0; every other problem (a
# root file system that cannot be made, a build error, a failing test) is a failure.
#   scripts/oldest-swift-check.sh [SUITE]    Debian suite, default stable
set -Eeuo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/debian-rootfs.sh
rootfs_init oldest-swift-check "$@"
suite=${1:-stable}
default_tests='YOLOTests\.(GemmKernelTests|WinogradTransformTests|ReferenceTests|ReferenceModuleTests|Int8KernelTests|Int8ConvTests|LayerTests|PlanTests|DetectDecodeTests|CfgSemanticsTests'
default_tests+='|EngineLimitsTests|FileIOTests|BadInputTests|TrackerTests)|YOLOImageTests\.|DarknetImageTests'
default_tests+='|StreamTests/testMissingFFmpegAndUnopenableInputAreClearErrors|ServeAPITests'
tests=${OLDEST_SWIFT_TESTS:-$default_tests}
out=$PWD/.build/oldest-swift-check
mkdir -p "$out"
start=$SECONDS step="tools" step_start=$SECONDS
times=()
trap 'echo "oldest-swift-check: FAILED in step: $step (status $?, after $((SECONDS - step_start)) s, at line $LINENO: $BASH_COMMAND)" >&2' ERR
begin() { step=$1; step_start=$SECONDS; rootfs_say "$step"; }
finish() { local s=$((SECONDS - step_start)); rootfs_say "$step: ok ($s s)"; times+=("$step $s s"); }
fail() { rootfs_fail "in step: $step: $*"; }

arch=$(dpkg --print-architecture 2>/dev/null || echo unknown)
begin tools
rc=0; rootfs_tools "$arch" || rc=$?
[ $rc != 2 ] || rootfs_skip "nothing was built or run with the oldest toolchain: $rootfs_skip_reason"
[ $rc = 0 ] || fail "setting up the tools (status $rc)"
scripts/bootstrap.sh >/dev/null      # the weights and samples that are copied in
finish

begin "root file system"
rootfs_make "$suite" "$arch" "${rootfs_build_packages[@]}"
rootfs_sync
toolchain=$(rootfs_run 'swift --version 2>/dev/null | head -1') || fail "swift --version in $rootfs"
rootfs_say "toolchain: $toolchain ($arch, Debian $suite)"
finish

# Runs the test COMMAND in the root file system; prints each suite's count, failures and time
# and the summary; a failure ends the script naming the step.
run_tests() {
    local status=0 summary
    rootfs_run "$1" > "$out/test.log" 2>&1 || status=$?
    cat "$out/test.log" >> "$out/tests-all.log"
    rootfs_suite_times "$out/test.log" "oldest-swift-check: $step: "
    summary=$(grep -E "Executed [0-9]+ tests?, with ([0-9]+ tests? skipped and )?[0-9]+ failures?" "$out/test.log" | tail -1 | sed -E 's/^[[:space:]]+//' || true)
    if [ "$status" != 0 ]; then
        grep -E "error: |failed \(|Fatal error|crashed|signal" "$out/test.log" | head -20 >&2 || true
        fail "with $toolchain: status $status, ${summary:-no test summary: a crash?} (log: $out/test.log)"
    fi
    [ -n "$summary" ] || fail "no 'Executed N tests' line (log: $out/test.log)"
    rootfs_say "$step: $summary"
    finish
    total_tests=$((total_tests + $(sed -E 's/Executed ([0-9]+) .*/\1/' <<< "$summary")))
}
total_tests=0
rm -f "$out/tests-all.log"

if [ "$tests" = all ]; then
    begin "scripts/test"
    run_tests scripts/test
else
    begin build
    rootfs_run "swift build --build-tests --disable-swift-testing" > "$out/build.log" 2>&1 || {
        grep -E 'error:' "$out/build.log" | head -20 >&2 || tail -30 "$out/build.log" >&2
        fail "swift build --build-tests with $toolchain: the errors above (whole log: $out/build.log)"
    }
    rootfs_say "build: $(grep -E '^Build complete' "$out/build.log" | tail -1)"
    finish

    # Two runs: CLITests alone first (in Debian's 6.0.3 Foundation, Bundle.allBundles as a
    # process's first Bundle call crashed it), then the rest.
    begin "tests (CLITests alone)"
    run_tests "swift test --skip-build --disable-swift-testing --filter 'yoloTests\.CLITests/'"
    begin "tests (the named suites)"
    rootfs_say "$step: --filter '$tests'"
    run_tests "swift test --skip-build --disable-swift-testing --filter '$tests'"
fi
rootfs_say "step times:"
for t in "${times[@]}"; do rootfs_say "  $t"; done
rootfs_say "passed in $((SECONDS - start)) s: $total_tests tests with $toolchain, 0 failures"
