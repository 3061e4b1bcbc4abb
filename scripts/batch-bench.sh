#!/usr/bin/env bash
# The batch measurements of docs/performance-batch-serve.md (run by hand, not by the test suite: they want the
# machine to themselves for a few minutes; the suite checks the same things on small inputs).
#  1. Throughput: a folder of 200 photos of mixed sizes (the samples, scaled by ffmpeg to 11
#     widths from 320 to 1920 pixels; every 5th a PNG, the rest JPEG), `yolo detect DIR --json
#     --no-draw --stats` with SESSIONS one-thread sessions, against `yolo-bench --inflight
#     SESSIONS` (forward passes only), alternated ROUNDS times; the ratio of the medians, and
#     where a batch's time goes (read and decode, preprocess, inference, postprocess, idle).
#  2. Memory: `yolo detect --files-from` over 1,000 and 10,000 paths (the 200 photos listed
#     over and over), peak RSS of each.
# Usage: scripts/batch-bench.sh [SESSIONS [ROUNDS]]   (default 2 and 3). Release build; prints JSON lines.
set -euo pipefail
cd "$(dirname "$0")/.."
sessions=${1:-2}
rounds=${2:-3}
swift build -c release --product yolo >&2
swift build -c release --product yolo-bench >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export YOLO_WEIGHTS="$PWD/weights"

# The photos.
mkdir -p "$work/photos"
widths=(320 416 512 640 800 1024 1280 1600 1920 480 720)
samples=(samples/*.png samples/*.jpg)
for i in $(seq 0 199); do
    src=${samples[$((i % ${#samples[@]}))]}
    w=${widths[$((i % ${#widths[@]}))]}
    ext=jpg; [ $((i % 5)) -eq 4 ] && ext=png
    ffmpeg -hide_banner -loglevel error -y -i "$src" -vf "scale=$w:-2" -q:v 3 "$work/photos/photo$(printf %03d "$i").$ext"
done
echo "{\"photos\": 200, \"bytes\": $(du -sb "$work/photos" | cut -f1), \"load_average\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"

# 1. Throughput, alternated.
for r in $(seq 1 "$rounds"); do
    bench=$(.build/release/yolo-bench --threads 1 --runs 3 --no-layers --conv winograd --inflight "$sessions" --seconds 10 --json 2>/dev/null \
            | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["throughput_fps"], d.get("machine_quiet"))')
    stats=$(.build/release/yolo detect "$work/photos" --json --no-draw --stats --sessions "$sessions" --threads 1 2>&1 >/dev/null | tail -1)
    echo "{\"round\": $r, \"yolo_bench_inflight_fps\": ${bench% *}, \"bench_machine_quiet\": \"${bench#* }\", \"batch\": \"${stats#yolo: }\", \"load_average\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
done

# 2. Memory over long path lists.
for n in 1000 10000; do
    for i in $(seq 1 $((n / 200))); do ls -1 "$work"/photos/*; done > "$work/paths-$n.txt"
    stats=$(.build/release/yolo detect --files-from "$work/paths-$n.txt" --json --stats --sessions "$sessions" --threads 1 2>&1 >/dev/null | tail -1)
    echo "{\"paths\": $n, \"batch\": \"${stats#yolo: }\"}"
done
