#!/usr/bin/env python3
"""Throughput with frames in flight: ours (yolo-bench, N one-thread sessions sharing one model)
against OpenVINO's THROUGHPUT hint (f32, its own choice of streams and requests), in alternating
rounds of the same length, on the same input.

    Benchmarks/peers/.venv/bin/python Benchmarks/peers/throughput.py [--rounds 3] [--seconds 5]
"""
import argparse
import json
import os
import subprocess
import time

import numpy as np

import runtimes


def openvino_fps(models, x, seconds):
    import openvino as ov
    core = ov.Core()
    compiled = core.compile_model(str(models["onnx"]), "CPU", {
        "INFERENCE_PRECISION_HINT": "f32",
        "PERFORMANCE_HINT": "THROUGHPUT",
    })
    requests = compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")
    streams = compiled.get_property("NUM_STREAMS")
    queue = ov.AsyncInferQueue(compiled, requests)
    tensor = ov.Tensor(np.ascontiguousarray(x[None]))
    for _ in range(2 * requests):  # warm-up
        queue.start_async({0: tensor})
    queue.wait_all()
    done = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        queue.start_async({0: tensor})
        done += 1
    queue.wait_all()
    return done / (time.perf_counter() - start), f"streams={streams}, requests={requests}"


def ours_fps(engine, sessions, seconds):
    out = subprocess.run([engine, "--threads", "1", "--runs", "5", "--conv", "winograd", "--no-layers",
                          "--inflight", str(sessions), "--seconds", str(seconds), "--json"],
                         capture_output=True, text=True, check=True, cwd=runtimes.ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])["throughput_fps"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--sessions", type=int, default=os.cpu_count())
    ap.add_argument("--engine", default=str(runtimes.ROOT / ".build/release/yolo-bench"))
    args = ap.parse_args()
    models = runtimes.ensure_models()
    x, _ = runtimes.default_input()
    ours, theirs, settings = [], [], ""
    for r in range(args.rounds):
        ours.append(ours_fps(args.engine, args.sessions, args.seconds))
        fps, settings = openvino_fps(models, x, args.seconds)
        theirs.append(fps)
        print(f"round {r + 1}: ours {ours[-1]:.1f} fps ({args.sessions} sessions), "
              f"openvino {theirs[-1]:.1f} fps (THROUGHPUT hint, f32, {settings})", flush=True)
    mo, mt = float(np.median(ours)), float(np.median(theirs))
    print(f"median: ours {mo:.1f} fps, openvino {mt:.1f} fps, ours/openvino {mo / mt:.2f}")


if __name__ == "__main__":
    main()
