#!/usr/bin/env python3
"""Stand-in for `yolo-bench serve`, speaking the same line protocol, backed by onnxruntime.

    mock_engine.py [serve] --threads N --input PATH.f32 [--cfg F --weights F] [--precision fp32|int8]

(--precision int8 runs the onnxruntime-int8 peer's model; any other precision is refused, as
an engine without it would.)

Prints `ready` once loaded, then per stdin line:
    run K      -> K forwards, prints `ms t1 ... tK` (milliseconds per forward)
    heads DIR  -> writes DIR/head0.f32, DIR/head1.f32 (raw heads, float32), prints `ok`
    quit       -> exits
"""

import argparse
import os
import sys
import time

import numpy as np

import runtimes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", nargs="?", default="serve", choices=["serve"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--input", required=True)
    ap.add_argument("--cfg", default=str(runtimes.CFG))
    ap.add_argument("--weights", default=str(runtimes.WEIGHTS))
    ap.add_argument("--precision", default="fp32", choices=["fp32", "int8"])
    args = ap.parse_args(argv)

    kind = runtimes.OnnxRuntimeInt8 if args.precision == "int8" else runtimes.OnnxRuntime
    runner = kind(runtimes.ensure_models(args.cfg, args.weights), args.threads)
    runner.set_input(runtimes.load_tensor(args.input))
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "run" and len(words) == 2:
            times = []
            for _ in range(int(words[1])):
                t0 = time.perf_counter()
                runner.forward()
                times.append((time.perf_counter() - t0) * 1e3)
            print("ms " + " ".join(f"{t:.4f}" for t in times), flush=True)
        elif words[0] == "heads" and len(words) == 2:
            for i, head in enumerate(runner.heads()):
                np.ascontiguousarray(head, dtype="<f4").tofile(os.path.join(words[1], f"head{i}.f32"))
            print("ok", flush=True)
        elif words[0] == "quit":
            break
        else:
            print(f"error unknown command: {line.strip()}", flush=True)


if __name__ == "__main__":
    main()
