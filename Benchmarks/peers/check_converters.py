#!/usr/bin/env python3
"""Check the converted models against Darknet's own raw heads.

Each PREFIX names a reference set: PREFIX_input_416.f32 and PREFIX_<head>.f32 for each
head (conv15, conv22 for yolov3-tiny), as in shared/reference/darknet/dog. Runs every peer
runtime on each input and prints the max abs difference per head. Exits 1 when a
difference is above --tolerance.
"""

import argparse
import sys

import numpy as np

import runtimes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("prefixes", nargs="+", help="e.g. ../shared/reference/darknet/dog")
    ap.add_argument("--runtimes", default=",".join(runtimes.FP32_PEERS))
    ap.add_argument("--tolerance", type=float, default=1e-3)
    args = ap.parse_args(argv)

    models = runtimes.ensure_models()
    names = runtimes.head_names(models["cfg"])
    runners = [runtimes.PEER_RUNNERS[n](models, 1) for n in args.runtimes.split(",")]
    worst = 0.0
    print(f"{'reference':<12} {'runtime':<12} " + " ".join(f"{n:>10}" for n in names) + "   max |ref|")
    for prefix in args.prefixes:
        x = runtimes.load_tensor(f"{prefix}_input_416.f32")
        refs = [np.fromfile(f"{prefix}_{n}.f32", dtype="<f4") for n in names]
        for r in runners:
            r.set_input(x)
            diffs = [float(np.max(np.abs(h.reshape(-1) - ref))) for h, ref in zip(r.heads(), refs)]
            worst = max(worst, *diffs)
            label = prefix.rstrip("/").rsplit("/", 1)[-1]
            print(f"{label:<12} {r.name:<12} " + " ".join(f"{d:>10.2e}" for d in diffs)
                  + f"   {max(float(np.abs(ref).max()) for ref in refs):.1f}")
    print(f"worst: {worst:.2e}")
    return 0 if worst <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
