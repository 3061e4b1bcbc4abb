#!/usr/bin/env python3
"""Throughput with frames in flight: ours (yolo-bench, N one-thread sessions sharing one model)
against OpenVINO's THROUGHPUT hint (its own choice of streams and requests), FP32 and INT8 (the
NNCF-quantized model of quantize.py, precision hint unset as NNCF's model runs), in alternating
rounds of the same length, on the same input.

    Benchmarks/peers/.venv/bin/python Benchmarks/peers/throughput.py [--rounds 3] [--seconds 5]
        [--ours fp32,int8] [--peers openvino,openvino-int8] [--engine-args "..."]

`--ours int8` runs yolo-bench with `--precision int8`; an engine that refuses it is skipped
with its message (fp32 passes no --precision, so today's engine runs it). Each figure comes with
the load: the cores other processes used meanwhile (/proc/stat less this process and its
finished children, as compare.py counts).
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import time

import numpy as np

import compare
import runtimes


def loaded(measure):
    """measure() -> (result, cores other processes used meanwhile)."""
    def own():
        return sum(int(v) for v in compare._stat_fields("self")[11:15])  # utime stime cutime cstime

    busy0, own0, t0 = compare._machine_busy(), own(), time.monotonic()
    result = measure()
    own1, busy1, t1 = own(), compare._machine_busy(), time.monotonic()
    return result, max(0, (busy1 - busy0) - (own1 - own0)) / compare.HZ / max(t1 - t0, 1e-6)

def _nncf_model(models):
    import quantize

    return quantize.openvino_int8(models)


PEERS = {
    # name: (its model from the converted models, compile config)
    "openvino": (lambda models: models["onnx"], {"INFERENCE_PRECISION_HINT": "f32"}),
    "openvino-int8": (_nncf_model, {}),
}


def openvino_fps(path, config, x, seconds):
    import openvino as ov
    compiled = ov.Core().compile_model(str(path), "CPU", dict(config, PERFORMANCE_HINT="THROUGHPUT"))
    requests = compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")
    streams = compiled.get_property("NUM_STREAMS")
    precision = compiled.get_property("INFERENCE_PRECISION_HINT").to_string()
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
    return done / (time.perf_counter() - start), (f"streams={streams}, requests={requests}, precision hint "
                                                  f"{precision}, convolutions {runtimes.openvino_conv_precisions(compiled)}")


class Refused(Exception):
    pass


def ours_fps(engine, precision, extra, sessions, seconds):
    argv = [engine, "--threads", "1", "--runs", "5", "--conv", "winograd", "--no-layers",
            "--inflight", str(sessions), "--seconds", str(seconds), "--json"] + extra
    if precision != "fp32":
        argv += ["--precision", precision]
    out = subprocess.run(argv, capture_output=True, text=True, cwd=runtimes.ROOT)
    if out.returncode != 0:
        said = next((l for l in out.stderr.splitlines() if not l.startswith("Run '")), "")
        raise Refused(f"{' '.join(argv[1:])} exited with status {out.returncode}: {said}")
    return json.loads(out.stdout.strip().splitlines()[-1])["throughput_fps"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--sessions", type=int, default=os.cpu_count())
    ap.add_argument("--engine", default=str(runtimes.ROOT / ".build/release/yolo-bench"))
    ap.add_argument("--engine-args", default="", help="more arguments for yolo-bench")
    ap.add_argument("--ours", default="fp32,int8", help="our precisions, comma list (default: %(default)s)")
    ap.add_argument("--peers", default=",".join(PEERS), help="comma list from %(default)s")
    args = ap.parse_args()
    ours_names = [p.strip() for p in args.ours.split(",") if p.strip()]
    peer_names = [p.strip() for p in args.peers.split(",") if p.strip()]
    unknown = set(peer_names) - set(PEERS)
    if unknown:
        ap.error(f"unknown peers {sorted(unknown)}; choose from {','.join(PEERS)}")
    models = runtimes.ensure_models()
    x, _ = runtimes.default_input()
    paths = {name: PEERS[name][0](models) for name in peer_names}
    fps = {f"ours-{p}": [] for p in ours_names} | {name: [] for name in peer_names}
    skipped, load = {}, []
    for r in range(args.rounds):
        line = []
        for p in ours_names:
            if f"ours-{p}" in skipped:
                continue
            try:
                value, cores = loaded(lambda: ours_fps(args.engine, p, shlex.split(args.engine_args), args.sessions,
                                                       args.seconds))
                fps[f"ours-{p}"].append(value)
                load.append(cores)
                line.append(f"ours-{p} {value:.1f} fps ({args.sessions} sessions; load {cores:.2f})")
            except Refused as e:
                skipped[f"ours-{p}"] = str(e)
                print(f"skipped ours-{p}: {e}", file=sys.stderr)
        for name in peer_names:
            (value, settings), cores = loaded(lambda: openvino_fps(paths[name], PEERS[name][1], x, args.seconds))
            fps[name].append(value)
            load.append(cores)
            line.append(f"{name} {value:.1f} fps (THROUGHPUT hint, {settings}; load {cores:.2f})")
        print(f"round {r + 1}: " + "; ".join(line), flush=True)
    medians = {name: float(np.median(v)) for name, v in fps.items() if v}
    print("median: " + ", ".join(f"{name} {v:.1f} fps" for name, v in medians.items())
          + f"; load: other processes used {np.median(load):.2f} cores (median of the measurements)")
    for ours in (n for n in medians if n.startswith("ours-")):
        print(f"{ours}: " + ", ".join(f"{medians[ours] / medians[n]:.2f}x {n}" for n in peer_names))
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")


if __name__ == "__main__":
    main()
