#!/usr/bin/env python3
"""Times the model zoo's cfgs at their cfg size on random weights: ours (yolo-bench) next to OpenCV DNN
and OpenVINO (through Benchmarks/peers/darknet2onnx.py where it converts the cfg), at 1 and 2 threads.

Per cfg: random weights as scripts/zoo-check.py makes them (those of scripts/compare-opencv.py), a
uniform random input at the cfg's size for the peers, then one warm-up forward per runtime and
thread count, then --rounds rounds, in each of which every runtime (order rotated by the round) runs
K forwards per thread count:

- ours (`--ours serve`, the default): one `yolo-bench serve --threads N --input F --cfg C
  --weights W` per thread count, timed as compare.py times it (its Engine), GFLOP counted here as
  yolo-bench counts it; with `--ours bench`: `yolo-bench --cfg C --weights W --threads 1,2 --conv
  winograd --no-layers --inflight 0 --runs K --warmup 1 --json` (its per-thread-count median and
  `other_cores`; GFLOP and peak RSS from the first round); its start-up detection has no
  --max-det, and on random weights it reports millions of boxes (seconds of NMS and output);
- opencv: `cv2.dnn.readNetFromDarknet(C, W)`, DNN_BACKEND_OPENCV / DNN_TARGET_CPU,
  `cv2.setNumThreads(N)`, forward to the net's unconnected outputs (Benchmarks/peers/runtimes.py's
  OpenCV runner, timed as compare.py times a peer, with the cores other processes used meanwhile);
- openvino: the ONNX of darknet2onnx.py, CPU plugin, f32 precision hint, INFERENCE_NUM_THREADS=N,
  LATENCY (runtimes.py's OpenVINO runner); where darknet2onnx.py cannot convert the cfg, the cell
  says why (its error, and every section kind and activation it lacks).

K = clamp(--batch-seconds / OpenCV's 2-thread warm-up forward, 1, 10). A cell is the median over
the rounds of each round's median (ours with --ours bench) or over all forwards (the others);
`other` is the median cores other processes used during its batches (the machine is shared:
compare only cells measured when it was low). Prints a Markdown table and writes every batch to --json.

Run from the repository root with the peers' venv (OpenCV, OpenVINO, onnx):

    Benchmarks/peers/.venv/bin/python scripts/zoo-bench.py --cfgs yolov4-tiny,yolov7-tiny --rounds 3
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from zoolib import REPO, script
import compare  # noqa: E402  (Benchmarks/peers: timed_batch, Peer)
import darknet  # noqa: E402
import darknet2onnx  # noqa: E402
import runtimes  # noqa: E402


zc = script("zoo-check")
CONVERTIBLE_SECTIONS = {"net", "convolutional", "conv", "maxpool", "max", "upsample", "route", "shortcut", "reorg",
                        "yolo", "region"}
CONVERTIBLE_ACTIVATIONS = set(darknet.ACTIVATIONS)


class OpenCV(runtimes.OpenCV):
    """runtimes.py's OpenCV runner, forwarding to the net's own outputs (the [yolo] layers, or the
    [region] layer's `detection_out`, which runtimes.py's conv_<i - 1> naming does not cover)."""

    def __init__(self, models, threads):
        import cv2

        self.cv2, self.version, self.threads = cv2, cv2.__version__, threads
        self.net = cv2.dnn.readNetFromDarknet(str(models["cfg"]), str(models["weights"]))
        self.net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
        self.net.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)
        self.outputs = list(self.net.getUnconnectedOutLayersNames())
        self.settings = f"readNetFromDarknet, DNN_BACKEND_OPENCV/DNN_TARGET_CPU, setNumThreads({threads})"


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def onnx_for(cfg, weights, workdir):
    """(path of darknet2onnx.py's ONNX, None) or (None, why it cannot convert cfg)."""
    try:
        import onnx
        model = darknet.load(cfg, weights)
        path = os.path.join(workdir, os.path.splitext(os.path.basename(cfg))[0] + ".onnx")
        onnx.save(darknet2onnx.convert(model), path)
        return path, None
    except (NotImplementedError, ValueError, KeyError) as e:
        sections = darknet.parse_cfg(cfg)
        kinds = sorted({k for k, _ in sections} - CONVERTIBLE_SECTIONS)
        kinds += sorted({"[route] groups" for k, o in sections if k == "route" and int(o.get("groups", 1)) != 1})
        acts = sorted({o.get("activation", "logistic") for k, o in sections if k in ("convolutional", "conv")}
                      - CONVERTIBLE_ACTIVATIONS)
        lacks = ", ".join([f"[{k}]" if not k.startswith("[") else k for k in kinds] + acts)
        return None, f"darknet2onnx: {e} (lacks {lacks})"


def ours_round(bench, cfg, weights, threads, k, timeout):
    cmd = [bench, "--cfg", cfg, "--weights", weights, "--threads", ",".join(map(str, threads)), "--conv", "winograd",
           "--no-layers", "--inflight", "0", "--runs", str(k), "--warmup", "1", "--json"]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    r = json.loads(p.stdout)
    per = {res["threads"]: {"ms": res["median_ms"], "other_cores": res["other_cores"]} for res in r["results"]}
    return per, r["gflop"], r.get("peak_rss_mib"), cmd


def gflop(cfg):
    """2 x filters x channels x size^2 x output pixels over the convolutions, as yolo-bench counts."""
    sections = zc.co.parse_cfg(cfg)
    net = sections[0][1]
    convs, shapes = zc.co.conv_shapes(sections, int(net["width"]), int(net["height"]))
    convs, total = iter(convs), 0
    for i, (name, _) in enumerate(sections[1:]):
        if name in ("convolutional", "conv"):
            filters, channels, size, _ = next(convs)
            total += 2 * filters * channels * size * size * shapes[i][1] * shapes[i][2]
    return total / 1e9


def peer_batch(rt, k):
    times, _, cores = compare.timed_batch(rt, k, rt.pids() or [os.getpid()])
    return times, cores


def bench_cfg(cfg, args, workdir):
    weights, _, (w, h), _ = zc.make_model(cfg, workdir, args.seed, args.gain)
    x = np.random.default_rng(args.seed).uniform(0, 1, (3, h, w)).astype(np.float32)
    models = {"cfg": cfg, "weights": weights}
    onnx_path, why = onnx_for(cfg, weights, workdir)
    threads = [int(t) for t in args.threads.split(",")]
    peers = {}
    if args.ours == "serve":
        input_path = os.path.join(workdir, "input.f32")
        x.astype("<f4").tofile(input_path)
        for t in threads:
            peers[("ours", t)] = compare.Engine("ours", f"{args.bench} serve", t, input_path,
                                                ["--cfg", cfg, "--weights", weights], args.timeout)
    for t in threads:
        rt = compare.Peer(OpenCV(models, t))
        rt.runner.set_input(x)
        peers[("opencv", t)] = rt
        if onnx_path:
            rt = compare.Peer(runtimes.OpenVINO({"onnx": onnx_path}, t))
            rt.runner.set_input(x)
            peers[("openvino", t)] = rt
    warm = {key: rt.batch(1)[0] for key, rt in peers.items()}
    k = max(1, min(10, int(args.batch_seconds * 1e3 / warm[("opencv", threads[-1])])))
    cells = {key: {"ms": [], "other": [], "load": []} for key in list(peers) + [("ours", t) for t in threads]}
    gflops = rss = cmd = None
    order = (["ours"] if args.ours == "bench" else []) + list(peers)
    for r in range(args.rounds):
        shift = r % len(order)
        for item in order[shift:] + order[:shift]:
            time.sleep(args.gap)
            if item == "ours":
                load = loadavg()
                per, g, peak, c = ours_round(args.bench, cfg, weights, threads, k, args.timeout)
                gflops, rss, cmd = gflops or g, rss or peak, cmd or c
                for t in threads:
                    cells[("ours", t)]["ms"].append(per[t]["ms"])
                    cells[("ours", t)]["other"].append(per[t]["other_cores"])
                    cells[("ours", t)]["load"].append(load)
            else:
                load = loadavg()
                times, cores = peer_batch(peers[item], k)
                cells[item]["ms"] += times
                cells[item]["other"].append(cores)
                cells[item]["load"].append(load)
    for rt in peers.values():
        rt.close()
    if args.ours == "serve":
        gflops, cmd = gflop(cfg), peers[("ours", threads[0])].settings
    summary = {f"{n}-{t}": {"median_ms": statistics.median(c["ms"]), "other_cores": statistics.median(c["other"]),
                            "load": [min(c["load"]), max(c["load"])], "ms": c["ms"]}
               for (n, t), c in cells.items()}
    return {"cfg": os.path.basename(cfg), "size": f"{w}x{h}", "gflop": gflops, "ours": args.ours, "ours_peak_rss_mib": rss, "k": k,
            "rounds": args.rounds, "openvino_skipped": why, "ours_command": cmd, "cells": summary,
            "versions": {"opencv": peers[("opencv", threads[0])].version,
                         "openvino": peers[("openvino", threads[0])].version if onnx_path else None}}


def cell(res, name, t):
    c = res["cells"].get(f"{name}-{t}")
    return f"{c['median_ms']:.0f} ({c['other_cores']:.1f})" if c else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cfgs", default="", help="comma-separated cfg names or paths (default: every cfg in --cfg-dir)")
    ap.add_argument("--cfg-dir", default=os.path.join(REPO, "..", "shared", "cfg"))
    ap.add_argument("--bench", default=os.path.join(REPO, ".build", "release", "yolo-bench"))
    ap.add_argument("--ours", choices=("bench", "serve"), default="serve",
                    help="serve (default): `yolo-bench serve` timed as compare.py does, GFLOP counted here; bench: "
                         "yolo-bench's own timing (its start-up detection on random weights runs NMS over millions "
                         "of boxes on the big models: minutes)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch-seconds", type=float, default=2.0, help="aim of one batch (K forwards), default 2 s")
    ap.add_argument("--gap", type=float, default=0.2, help="seconds of pause before each batch")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per yolo-bench run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gain", type=float, default=1.0, help="random weights' scale, as zoo-check.py's --gain")
    ap.add_argument("--json", help="write every result here")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    cfgs = zc.cfg_paths(args.cfgs, os.path.abspath(args.cfg_dir))
    threads = [int(t) for t in args.threads.split(",")]
    print(f"machine: {compare.cpu_model()}, {os.cpu_count()} cpus; load average {loadavg():.2f} at start")
    heads = " | ".join(f"{n} {t}t" for n in ("ours", "OpenCV", "OpenVINO") for t in threads)
    print(f"| cfg | size | GFLOP | {heads} | K x rounds | load average | OpenVINO |")
    print("|---|---|---|" + "---|" * (3 * len(threads)) + "---|---|---|")
    results = []
    with tempfile.TemporaryDirectory(prefix="zoo-bench-") as workdir:
        for cfg in cfgs:
            res = bench_cfg(cfg, args, workdir)
            results.append(res)
            loads = [v for c in res["cells"].values() for v in c["load"]]
            cols = " | ".join(cell(res, n, t) for n in ("ours", "opencv", "openvino") for t in threads)
            print(f"| {res['cfg']} | {res['size']} | {res['gflop']:.1f} | {cols} | {res['k']} x {res['rounds']} | "
                  f"{min(loads):.1f}-{max(loads):.1f} | {res['openvino_skipped'] or 'converted'} |")
            if args.json:
                with open(args.json, "w") as f:
                    json.dump({"machine": compare.cpu_model(), "results": results}, f, indent=1)
    print("cells: median ms (median cores other processes used during the batches)")


if __name__ == "__main__":
    sys.exit(main())
