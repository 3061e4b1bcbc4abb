#!/usr/bin/env bash
# Runs an XCTest bundle's suites as separate processes, JOBS at a time, each with its own time
# limit, so that a slow run can be told from a hung one and one stuck suite fails alone, by name.
# Used by scripts/arm-linux-check.sh inside its root file system (under qemu-user); runs anywhere.
#
#   xctest-shards.sh BUNDLE LIST OUT [SKIP_REGEX]
#     BUNDLE      the .xctest executable (what `swift test` runs)
#     LIST        `swift test list` output: one Module.Suite/test a line
#     OUT         a folder for the logs: OUT/SUITE.log per suite, OUT/results (one line a run)
#     SKIP_REGEX  tests to leave out (extended regular expression on Module.Suite/test)
#   environment: XCTEST_JOBS (default 2), XCTEST_SUITE_TIMEOUT seconds a suite (default 300),
#     XCTEST_TOTAL_TIMEOUT seconds for all (default 900: suites not started by then fail),
#     XCTEST_ORDER an earlier run's OUT/final ("SUITE STATUS SECONDS TESTS FAILURES" lines):
#     the suites that took longest start first, and one that took XCTEST_SPLIT_SECONDS (60) or
#     more runs one process per test.
#
# Each suite runs under `script` (a pseudo-terminal: XCTest's output is then line-buffered, so
# the log shows every test's start as it happens, even of a run that is killed). A suite past its
# limit gets a report before it is killed: the test running (the last "started" line), and the
# state of each of its processes and threads (/proc: state, wchan, CPU ticks), which tells a
# process that computes (ticks grow) from one that waits (docs/arm.md). Failed or ended suites
# run once more, alone; a suite that fails twice fails the run. Prints one line per suite, then
# "xctest-shards: N tests in M suites, F failed" and exits 1 when any failed.
set -uo pipefail
bundle=$1 list=$2 out=$3 skip=${4-}
jobs=${XCTEST_JOBS:-2} limit=${XCTEST_SUITE_TIMEOUT:-300} total=${XCTEST_TOTAL_TIMEOUT:-900}
mkdir -p "$out"; : > "$out/results"
say() { echo "xctest-shards: $*"; }
began=$SECONDS

# Suites and their test specifiers (the whole suite when nothing of it is skipped).
grep -E '^[A-Za-z0-9_]+\.[A-Za-z0-9_]+/[A-Za-z0-9_]+$' "$list" | sort -u > "$out/all.txt"
if [ -n "$skip" ]; then grep -vE "$skip" "$out/all.txt" > "$out/run.txt" || true; else cp "$out/all.txt" "$out/run.txt"; fi
declare -A spec count
while IFS=/ read -r suite _; do count[$suite]=$((${count[$suite]:-0} + 1)); done < "$out/run.txt"
# An earlier run's seconds for a suite (its tests' summed where it ran them one by one) or a test.
earlier() {
    [ -n "${XCTEST_ORDER:-}" ] && [ -f "$XCTEST_ORDER" ] || return 0
    awk -v s="$1" '$1 == s || index($1, s "/") == 1 { t += $3; n++ } END { if (n) print t }' "$XCTEST_ORDER"
}
# What runs as one process: a suite (or the part of it not skipped), or, for a suite that took
# XCTEST_SPLIT_SECONDS (60) or more in the earlier run, each of its tests, so that the two
# workers share the longest suites. Longest first; unknown ones first, as they may be long.
for suite in "${!count[@]}"; do
    t=$(earlier "$suite")
    if [ -n "$t" ] && [ "$t" -ge "${XCTEST_SPLIT_SECONDS:-60}" ] && [ "${count[$suite]}" -gt 1 ]; then
        for item in $(grep "^$suite/" "$out/run.txt"); do
            u=$(earlier "$item"); echo "${u:-$((t / ${count[$suite]}))} $item"
        done
    else
        echo "${t:-100000} $suite"
    fi
done | sort -k1,1nr -k2 > "$out/queue.times"
awk '{ print $2 }' "$out/queue.times" > "$out/queue"
# Each process's test specifier: a test, a whole suite, or the suite's tests not skipped.
while read -r _ item; do
    case $item in
        */*) spec[$item]=$item ;;
        *) if [ "$(grep -c "^$item/" "$out/all.txt")" = "${count[$item]}" ]; then spec[$item]=$item
           else spec[$item]=$(grep "^$item/" "$out/run.txt" | paste -sd,); fi ;;
    esac
done < "$out/queue.times"
say "$(wc -l < "$out/run.txt") tests in ${#count[@]} suites ($(wc -l < "$out/queue") processes), $jobs at a time, $limit s each, $total s in all"

# A process and its descendants (no procps in a minimal root file system): parents from
# /proc/PID/stat's fourth field, read after the command name's closing parenthesis. (`script`
# starts the test process in a session of its own, so a process group would miss it.)
tree() {
    local f rest pid ppid
    declare -A parent
    for f in /proc/[0-9]*/stat; do
        rest=$(cat "$f" 2>/dev/null) || continue
        rest=${rest##*) }   # "STATE PPID PGRP ..."
        pid=${f#/proc/}; pid=${pid%/stat}; ppid=$(cut -d' ' -f2 <<< "$rest")
        parent[$pid]=$ppid
    done
    local found=("$1") grew=1
    while [ $grew = 1 ]; do
        grew=0
        for pid in "${!parent[@]}"; do
            [[ " ${found[*]} " == *" $pid "* ]] && continue
            [[ " ${found[*]} " == *" ${parent[$pid]} "* ]] && { found+=("$pid"); grew=1; }
        done
    done
    echo "${found[@]}"
}

# The state of a suite's processes and threads, for a suite past its limit.
report() {
    local root=$1 log=$2 pid tid
    say "  last test started: $(tr -d '\r' < "$log" | grep -E "^Test Case .* started" | tail -1)"
    for pid in $(tree "$root"); do
        say "  pid $pid $(tr '\0' ' ' < /proc/$pid/cmdline 2>/dev/null | cut -c1-100)"
        for tid in $(ls /proc/$pid/task 2>/dev/null); do
            # stat fields: 3 state, 14 utime, 15 stime (ticks)
            say "    thread $tid: $(awk '{ print "state " $3 ", utime " $14 ", stime " $15 }' /proc/$pid/task/$tid/stat 2>/dev/null), wchan $(cat /proc/$pid/task/$tid/wchan 2>/dev/null)"
        done
    done
}

# Runs one suite: prints and records "SUITE STATUS SECONDS TESTS FAILURES".
run_suite() {
    local suite=$1 worker=$2 log="$out/${1//\//.}.log" t0=$SECONDS status pid
    say "[$worker] start $suite"
    script -qfec "exec '$bundle' '${spec[$suite]}'" /dev/null < /dev/null > "$log" 2>&1 &
    pid=$!
    while kill -0 $pid 2>/dev/null && [ $((SECONDS - t0)) -lt "$limit" ]; do sleep 1; done
    if kill -0 $pid 2>/dev/null; then
        say "[$worker] $suite: still running after $limit s: ending it"
        report $pid "$log"
        kill -KILL $(tree $pid) 2>/dev/null
        wait $pid 2>/dev/null; status=124
    else
        wait $pid; status=$?
    fi
    local line n f
    line=$(tr -d '\r' < "$log" | grep -E "Executed [0-9]+ tests?, with" | tail -1)
    n=$(sed -nE 's/.*Executed ([0-9]+) tests?.*/\1/p' <<< "$line"); f=$(sed -nE 's/.* ([0-9]+) failures?.*/\1/p' <<< "$line")
    [ -n "$line" ] || [ $status != 0 ] || status=1   # (no summary: the process died without one)
    echo "$suite $status $((SECONDS - t0)) ${n:-0} ${f:-0}" >> "$out/results"
    say "[$worker] end $suite: ${n:-?} tests, ${f:-?} failures, status $status, $((SECONDS - t0)) s"
    [ $status = 0 ] || tr -d '\r' < "$log" | grep -E "error: |failed \(|Fatal error|crashed|signal" | head -10 | sed "s/^/xctest-shards:   /"
}

# Workers take the next suite from the queue (a lock file keeps two from taking the same one).
worker() {
    local suite
    while true; do
        suite=$(flock "$out/queue.lock" sh -c 'head -1 "$1"; sed -i 1d "$1"' _ "$out/queue")
        [ -n "$suite" ] || return 0
        if [ $((SECONDS - began)) -ge "$total" ]; then
            say "[$1] $suite: not started, the run is past its $total s"; echo "$suite 125 0 0 0" >> "$out/results"; continue
        fi
        run_suite "$suite" "$1"
    done
}
for k in $(seq 1 "$jobs"); do worker "$k" & done
wait

# Failed suites once more, alone.
mapfile -t failed < <(awk '$2 != 0 { print $1 }' "$out/results")
for suite in "${failed[@]}"; do
    cp "$out/${suite//\//.}.log" "$out/${suite//\//.}-1.log" 2>/dev/null
    say "$suite failed (status $(awk -v s="$suite" '$1 == s { print $2 }' "$out/results" | tail -1)): once more, alone (first log: $out/${suite//\//.}-1.log)"
    limit=$((limit * 2)) run_suite "$suite" retry
done
awk '{ last[$1] = $0 } END { for (s in last) print last[s] }' "$out/results" | sort > "$out/final"
tests=$(awk '{ n += $4 } END { print n + 0 }' "$out/final")
bad=$(awk '$2 != 0' "$out/final" | wc -l)
say "$tests tests in $(wc -l < "$out/final") processes, $bad failed, $((SECONDS - began)) s"
[ "$bad" = 0 ] || { awk '$2 != 0 { print "xctest-shards: FAILED twice: " $1 " (status " $2 ")" }' "$out/final"; exit 1; }
