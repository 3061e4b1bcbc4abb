#!/usr/bin/env bash
# Runs the test suite under a sanitizer, in its own build directory:
#   scripts/sanitize.sh address [swift test options, e.g. --filter YOLOImageTests]
#       AddressSanitizer + LeakSanitizer (.build-asan); leaks inside Foundation, Dispatch and
#       XCTest's bookkeeping are suppressed by scripts/sanitizers/lsan.supp, ours are not.
#   scripts/sanitize.sh thread [...]
#       ThreadSanitizer (.build-tsan).
#   scripts/sanitize.sh KIND --build-only
#       builds what the test run needs and exits (.ci/run builds TSan's beside ASan's test run).
# The yolo binary that the CLI tests run is built with the same sanitizer. Any report fails the
# run. Ends with the 'N passed, M failed' line of scripts/test.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
kind=${1:-}
shift || true
case $kind in
address)
    scratch=.build-asan
    export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=1:abort_on_error=0:halt_on_error=1"
    export LSAN_OPTIONS="${LSAN_OPTIONS:-}${LSAN_OPTIONS:+:}suppressions=$PWD/scripts/sanitizers/lsan.supp:print_suppressions=0"
    ;;
thread)
    scratch=.build-tsan
    export TSAN_OPTIONS="${TSAN_OPTIONS:-}${TSAN_OPTIONS:+:}halt_on_error=0:exitcode=66:second_deadlock_stack=1"
    ;;
*)
    echo "usage: scripts/sanitize.sh address|thread [swift test options]" >&2
    exit 64
    ;;
esac
# Tests that repeat single-threaded arithmetic over every combination (every convolution algorithm
# at every kernel level) run a subset under a sanitizer: it adds time, not coverage of races or
# memory errors.
export YOLO_TEST_SANITIZER=$kind
if [ "${1:-}" = --build-only ]; then
    exec swift build --build-tests --disable-swift-testing --sanitize="$kind" --scratch-path "$scratch"
fi
scripts/bootstrap.sh >/dev/null
log=$(mktemp); trap 'rm -f "$log"' EXIT
start=$SECONDS
set +e
swift test --disable-swift-testing --sanitize="$kind" --scratch-path "$scratch" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# A report anywhere (also in a yolo subprocess whose exit status a test did not check) fails the run.
if grep -qE '^(==[0-9]+==ERROR: |WARNING: ThreadSanitizer:|SUMMARY: (Address|Thread|Leak)Sanitizer)' "$log"; then
    echo "sanitize: $kind: the sanitizer reported problems (see above)" >&2
    [ "$status" -ne 0 ] || status=1
fi
. scripts/lib/test-summary.sh
test_summary "$log" | sed "s/^/sanitize $kind: /"
echo "sanitize $kind: $((SECONDS - start)) s"
exit "$status"
