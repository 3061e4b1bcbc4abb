#!/usr/bin/env python3
"""Checks Benchmarks/peers/darknet2onnx.py on the model zoo: for each cfg (default ../shared/cfg/*.cfg),
random weights as scripts/zoo-check.py makes them, the ONNX it converts, run on ONNX Runtime with a
uniform random input at the cfg's size, against `yolo heads` on the same input and weights (our
heads match OpenCV DNN's; ModelZooTests). Prints, per cfg, the largest difference of each head
relative to the head's largest value; exit status 1 when one is above --tolerance or a cfg does
not convert. What the zoo's OpenVINO timings (scripts/zoo-bench.py) rest on.

Run from the repository root with the peers' venv (onnx, onnxruntime):

    Benchmarks/peers/.venv/bin/python scripts/zoo-onnx-check.py --cfgs yolov2,yolov4-tiny,yolov7-tiny
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np

from zoolib import REPO, script
import darknet  # noqa: E402  (Benchmarks/peers, on the path through zoolib)
import darknet2onnx  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cfgs", default="", help="comma-separated cfg names (default: every cfg in --cfg-dir)")
    ap.add_argument("--cfg-dir", default=os.path.join(REPO, "..", "shared", "cfg"))
    ap.add_argument("--yolo", default=os.path.join(REPO, ".build", "release", "yolo"))
    ap.add_argument("--keep", help="weights, ONNX and heads go here and stay (default: a temporary directory)")
    ap.add_argument("--tolerance", type=float, default=1e-4)
    a = ap.parse_args()
    import onnx
    import onnxruntime as ort
    names = [n for n in a.cfgs.split(",") if n] or sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(a.cfg_dir, "*.cfg")))
    work = a.keep or tempfile.mkdtemp(prefix="zoo-onnx-")
    os.makedirs(work, exist_ok=True)
    zc, failed = script("zoo-check"), False
    for name in names:
        cfg = os.path.join(a.cfg_dir, name + ".cfg")
        weights = os.path.join(work, f"{name}-random.weights")
        if not os.path.exists(weights):
            weights = zc.make_model(cfg, work, gain=1.0)[0]
        try:
            model = darknet.load(cfg, weights)
            path = os.path.join(work, name + ".onnx")
            onnx.save(darknet2onnx.convert(model), path)
        except (NotImplementedError, ValueError) as e:
            print(f"{name}: FAIL, not converted: {e}")
            failed = True
            continue
        c, h, w = model.input_shape
        x = np.random.default_rng(3).random((1, c, h, w), dtype=np.float32)
        x.tofile(os.path.join(work, name + ".in.f32"))
        out = os.path.join(work, name + ".heads")
        r = subprocess.run([a.yolo, "heads", os.path.join(work, name + ".in.f32"), "--out", out, "--cfg", cfg,
                            "--weights", weights, "--threads", "2"], capture_output=True, text=True)
        if r.returncode:
            print(f"{name}: FAIL, yolo heads: {r.stderr.strip()[-300:]}")
            failed = True
            continue
        got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"data": x})
        rel = []
        for i, g in enumerate(got):
            ref = np.fromfile(os.path.join(out, f"head{i}.f32"), dtype=np.float32).reshape(g.shape)
            rel.append(float(np.abs(g - ref).max() / max(1e-12, float(np.abs(ref).max()))))
        ok = max(rel) <= a.tolerance
        failed |= not ok
        print(f"{name}: {'ok' if ok else 'FAIL'}, {len(got)} heads, max |ONNX Runtime - ours| / max |ours| = "
              + ", ".join(f"{v:.1e}" for v in rel))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
