#!/usr/bin/env bash
# The `yolo serve` load measurements of docs/performance-batch-serve.md (run by hand, not by the test suite: they
# want the machine to themselves for about two minutes; the suite runs short versions).
#  1. yolo-bench's throughput with SESSIONS one-thread sessions in flight (forward passes only),
#     measured just before and just after each load below, which is set against their mean;
#  2. 16 clients posting photos to DeepStack's endpoint for 30 s (scripts/serve/load.py): the
#     answers by status (only 200 and 503 expected), throughput, latency percentiles, and the
#     server's RSS each second (flat: the 30th second within 5% of the 10th); once with the
#     samples as fetched (PNG, one JPEG), once with them as JPEG (what cameras send), each
#     followed by the mean time of each stage from /metrics;
#  3. the live view of a synthetic clip read as fast as the detector goes (--no-realtime): its
#     frame rate alone, then with 20 clients reading the MJPEG stream.
# Usage: scripts/serve-load.sh [SESSIONS]   (default 2). Release build; prints JSON lines.
set -euo pipefail
cd "$(dirname "$0")/.."
sessions=${1:-2}
python=$(scripts/serve-test-setup.sh | tail -1)
swift build -c release --product yolo >&2
swift build -c release --product yolo-bench >&2
work=$(mktemp -d); server=""
cleanup() { [ -n "$server" ] && kill -TERM "$server" 2>/dev/null && wait "$server" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
bench() {  # yolo-bench's in-flight throughput now (frames per second), and a JSON line saying so
    local line
    line=$(.build/release/yolo-bench --threads 1 --runs 5 --no-layers --conv winograd --inflight "$sessions" --seconds 10 --json \
        2>/dev/null | "$python" -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({"yolo_bench_inflight_fps": d.get("throughput_fps"), "sessions": '"$sessions"', "machine_quiet": d.get("machine_quiet"), "warnings": d.get("warnings")}))')
    echo "$line"
    fps=$("$python" -c 'import json,sys; print(json.loads(sys.argv[1])["yolo_bench_inflight_fps"])' "$line")
}

start_server() {  # args: extra options; sets $server and $port
    .build/release/yolo serve --listen 127.0.0.1:0 --sessions "$sessions" --threads 1 "$@" 2> "$work/serve.err" &
    server=$!
    for _ in $(seq 1 300); do grep -q "listening on" "$work/serve.err" && break; sleep 0.1; done
    port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$work/serve.err")
}
stop_server() { kill -TERM "$server"; wait "$server" || true; server=""; }

photos="samples/coffee.png samples/motorcycle_left.png samples/camera.png samples/rocket.jpg"
jpegs=""
for f in $photos; do
    name=$(basename "${f%.*}")
    ffmpeg -hide_banner -loglevel error -y -i "$f" -q:v 2 "$work/$name.jpg"
    jpegs="$jpegs $work/$name.jpg"
done
for set in "$photos" "$jpegs"; do
    start_server
    # shellcheck disable=SC2086
    bench; before=$fps
    "$python" scripts/serve/load.py --port "$port" --clients 16 --seconds 30 --warmup 3 --pid "$server" $set | tee "$work/load.json"
    bench  # again after: this machine's speed drifts by 10-20% over minutes, so the load is set against both
    "$python" -c 'import json,sys; t=json.load(open(sys.argv[1]))["throughput_per_s"]; b=(float(sys.argv[2])+float(sys.argv[3]))/2; print(json.dumps({"throughput_per_s": t, "yolo_bench_inflight_fps_mean": round(b, 1), "ratio": round(t / b, 3)}))' "$work/load.json" "$before" "$fps"
    curl -s "http://127.0.0.1:$port/metrics" | grep -E '^yolo_stage_seconds_(sum|count)\{path="request"' > "$work/stages"
    "$python" - "$work/stages" <<'PY'
import re, sys, json
sums, counts = {}, {}
for line in open(sys.argv[1]):
    m = re.match(r'yolo_stage_seconds_(sum|count)\{path="request",stage="(\w+)"\} ([0-9.e+-]+)', line)
    if m:
        (sums if m.group(1) == "sum" else counts)[m.group(2)] = float(m.group(3))
print(json.dumps({"request_stage_mean_ms": {k: round(1000 * sums[k] / counts[k], 2) for k in sums if counts.get(k)}}))
PY
    stop_server
done

ffmpeg -hide_banner -loglevel error -y -loop 1 -i samples/coffee.png \
    -vf "zoompan=z='1+0.001*on':x='iw/2-(iw/zoom/2)':y='ih/2-(ih/zoom/2)':d=1:s=640x480:fps=25" \
    -frames:v 100 -c:v mjpeg -q:v 3 "$work/live.avi"
start_server --input "$work/live.avi" --loop --no-realtime
sleep 3
"$python" scripts/serve/load.py --port "$port" --seconds 10 --live-clients 20
stop_server
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
