#!/usr/bin/env python3
"""FP32 against INT8 (or BF16) latency in interleaved rounds of `yolo-bench` (one process per round
and precision, alternating, so that load from elsewhere hits both alike):

  scripts/precision-bench.py [--rounds 5] [--runs 30] [--threads 1,2] [--precisions fp32,int8] [--bench PATH]

Prints each round and, per precision and thread count, the minimum and the median of the rounds'
medians, with the most CPU other processes used during a measurement (yolo-bench's
other_cores: above 0.1 of a core the machine was not quiet) and each precision's speed-up over the
first."""
import argparse, json, statistics, subprocess


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--precisions", default="fp32,int8")
    p.add_argument("--bench", default=".build/release/yolo-bench")
    a = p.parse_args()
    precisions = a.precisions.split(",")
    seen = {}
    for r in range(a.rounds):
        for precision in precisions:
            out = subprocess.run([a.bench, "--json", "--precision", precision, "--conv", "winograd", "--threads", a.threads,
                                  "--runs", str(a.runs), "--no-layers", "--inflight", "0"],
                                 check=True, capture_output=True, text=True).stdout
            for res in json.loads(out)["results"]:
                key = (precision, res["threads"])
                seen.setdefault(key, []).append((res["min_ms"], res["median_ms"], res["other_cores"]))
                print(f"round {r + 1} {precision} threads {res['threads']}: min {res['min_ms']:.2f} ms, "
                      f"median {res['median_ms']:.2f} ms, other processes {res['other_cores']:.2f} cores", flush=True)
    for threads in sorted({t for _, t in seen}):
        row = {}
        for precision in precisions:
            v = seen[(precision, threads)]
            row[precision] = (min(x[0] for x in v), statistics.median(x[1] for x in v), max(x[2] for x in v))
            print(f"{precision} threads {threads}: min {row[precision][0]:.2f} ms, median of medians {row[precision][1]:.2f} ms "
                  f"(other processes up to {row[precision][2]:.2f} cores)")
        base = precisions[0]
        for other in precisions[1:]:
            print(f"threads {threads}: {other.upper()} speed-up over {base.upper()} {row[base][0] / row[other][0]:.2f}x (minima), "
                  f"{row[base][1] / row[other][1]:.2f}x (medians)")


main()
