# Sourced by scripts/test and scripts/sanitize.sh. test_summary LOG prints XCTest's totals from
# the last "Executed N tests, with [K tests skipped and] M failures" line of LOG (it covers all
# suites) as 'P passed, M failed' (P = N - M - K), and 'K skipped' on a line of its own when
# tests were skipped; nothing when LOG has no such line (the build failed).
test_summary() {
    local line total skipped failed
    line=$(grep -E 'Executed [0-9]+ tests?, with ([0-9]+ tests? skipped and )?[0-9]+ failures?' "$1" | tail -1 || true)
    [ -n "$line" ] || return 0
    total=$(sed -E 's/.*Executed ([0-9]+) tests?.*/\1/' <<< "$line")
    failed=$(sed -E 's/.* ([0-9]+) failures?.*/\1/' <<< "$line")
    skipped=0
    grep -qE '[0-9]+ tests? skipped' <<< "$line" && skipped=$(sed -E 's/.*with ([0-9]+) tests? skipped.*/\1/' <<< "$line")
    echo "$((total - failed - skipped)) passed, $failed failed"
    [ "$skipped" = 0 ] || echo "$skipped skipped"
}
