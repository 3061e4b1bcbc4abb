#!/usr/bin/env python3
"""Compares our raw YOLO heads ([yolo] and [region]) with OpenCV DNN's for any Darknet cfg, on random weights.

For each cfg and size: writes a random weights file that fits the cfg (small weights, batch
norm with variance near 1, so activations stay in range), a random input tensor, runs
`.build/release/yolo heads INPUT.f32 --out DIR --cfg F --weights W --size WxH` and OpenCV's
`cv2.dnn.readNetFromDarknet` on the same input (a copy of the cfg with that width and
height), and compares every head: max |ours - OpenCV| relative to the head's range
(max - min), which must be within --tolerance (default 1e-3).

Set-up (once): scripts/compare-opencv.sh makes scripts/.venv with the pinned OpenCV
(opencv-python-headless 4.14; 5.x dropped the Darknet importer); then

    swift build -c release --product yolo
    scripts/.venv/bin/python scripts/compare-opencv.py ../shared/cfg/*.cfg --sizes 416x416,608x320

Exit status 0 when every head of every run is within the tolerance, 1 otherwise.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np


def parse_cfg(path):
    """[(name, {key: value}, line)] as Darknet reads it: whitespace dropped, # and ; comments."""
    sections = []
    with open(path) as f:
        for line in f:
            line = re.sub(r"\s+", "", line)
            line = re.split(r"[#;]", line, maxsplit=1)[0]
            if not line:
                continue
            if line.startswith("["):
                sections.append((line[1:-1], {}))
            else:
                key, _, value = line.partition("=")
                sections[-1][1][key] = value
    return sections


def conv_shapes(sections, width, height):
    """Per [convolutional] section in order: (filters, input channels, size, batch_normalize)."""
    net = sections[0][1]
    shape = (int(net.get("channels", 3)), height, width)
    shapes, convs = [], []
    for i, (name, o) in enumerate(sections[1:]):
        c, h, w = shape

        def ref(v):
            v = int(v)
            return v + i if v < 0 else v
        if name in ("convolutional", "conv"):
            filters, size, stride = int(o.get("filters", 1)), int(o.get("size", 1)), int(o.get("stride", 1))
            pad = size // 2 if int(o.get("pad", 0)) else int(o.get("padding", 0))
            convs.append((filters, c, size, int(o.get("batch_normalize", 0))))
            shape = (filters, (h + 2 * pad - size) // stride + 1, (w + 2 * pad - size) // stride + 1)
        elif name in ("maxpool", "max"):
            stride = int(o.get("stride", 1))
            size = int(o.get("size", stride))
            padding = int(o.get("padding", size - 1))
            shape = (c, (h + padding - size) // stride + 1, (w + padding - size) // stride + 1)
        elif name == "upsample":
            s = int(o.get("stride", 2))
            shape = (c, h * s, w * s)
        elif name == "route":
            layers = [ref(v) for v in o["layers"].split(",")]
            groups = int(o.get("groups", 1))
            shape = (sum(shapes[l][0] // groups for l in layers), shapes[layers[0]][1], shapes[layers[0]][2])
        elif name == "reorg":
            s = int(o.get("stride", 2))
            shape = (c * s * s, h // s, w // s)
        elif name in ("shortcut", "yolo", "region"):
            pass
        else:
            raise SystemExit(f"{name}: section not handled by this script")
        shapes.append(shape)
    return convs, shapes


def random_weights(convs, rng, gain=1.3):
    """A Darknet weights file (version 0.2, 20-byte header) with random parameters."""
    parts = [np.array([0, 2, 0], dtype="<i4").tobytes(), np.array([0], dtype="<i8").tobytes()]
    for filters, channels, size, bn in convs:
        fan_in = channels * size * size
        if bn:
            parts.append(rng.uniform(-0.1, 0.1, filters))            # biases (beta)
            parts.append(rng.uniform(0.7, 1.1, filters))             # scales (gamma)
            parts.append(rng.uniform(-0.1, 0.1, filters))            # rolling mean
            parts.append(rng.uniform(0.8, 1.2, filters))             # rolling variance
        else:
            parts.append(rng.uniform(-0.1, 0.1, filters))            # biases
        parts.append(rng.normal(0, gain / np.sqrt(fan_in), filters * fan_in))
    return b"".join(p if isinstance(p, bytes) else p.astype("<f4").tobytes() for p in parts)


def with_size(cfg_text, width, height):
    """The cfg text with [net] width and height replaced (the first occurrences)."""
    cfg_text = re.sub(r"(?m)^(\s*width\s*=\s*)\d+", rf"\g<1>{width}", cfg_text, count=1)
    return re.sub(r"(?m)^(\s*height\s*=\s*)\d+", rf"\g<1>{height}", cfg_text, count=1)


def compare(cfg, width, height, yolo, tolerance, seed, workdir, threads):
    import cv2
    sections = parse_cfg(cfg)
    convs, shapes = conv_shapes(sections, width, height)
    rng = np.random.default_rng(seed)
    weights = os.path.join(workdir, "random.weights")
    with open(weights, "wb") as f:
        f.write(random_weights(convs, rng))
    inp = rng.uniform(0, 1, (3, height, width)).astype("<f4")
    inp_path = os.path.join(workdir, "input.f32")
    inp.tofile(inp_path)
    sized_cfg = os.path.join(workdir, os.path.basename(cfg))
    with open(cfg) as f, open(sized_cfg, "w") as g:
        g.write(with_size(f.read(), width, height))

    out = os.path.join(workdir, "heads")
    subprocess.run([yolo, "heads", inp_path, "--out", out, "--cfg", cfg, "--weights", weights,
                    "--size", f"{width}x{height}", "--threads", str(threads)], check=True)

    net = cv2.dnn.readNetFromDarknet(sized_cfg, weights)
    net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
    net.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)
    heads = [i for i, (name, _) in enumerate(sections[1:]) if name in ("yolo", "region")]
    names = net.getLayerNames()
    wanted = []
    activations = ("relu", "leaky", "logistic", "sigmoid", "mish", "swish", "tanh", "elu", "hswish")
    for i in heads:
        # OpenCV names layers <type>_<cfg index>; the head is the output of layer i - 1. A
        # convolution's batch norm is bn_<i - 1> but its activation <act>_<i> (e.g. the
        # logistic of Scaled-YOLOv4's new_coords heads): take the last of them.
        candidates = [n for n in names if n.rsplit("_", 1)[-1] == str(i - 1)]
        pos = names.index(candidates[-1])
        while pos + 1 < len(names) and names[pos + 1].rsplit("_", 1)[-1] == str(i) \
                and names[pos + 1].rsplit("_", 1)[0] in activations:
            pos += 1
        wanted.append(names[pos])
    net.setInput(inp[None])
    theirs = net.forward(wanted)
    rows = []
    for k, (i, name) in enumerate(zip(heads, wanted)):
        c, h, w = shapes[i - 1]
        ours = np.fromfile(os.path.join(out, f"head{k}.f32"), dtype="<f4").reshape(c, h, w)
        cv = np.asarray(theirs[k]).reshape(c, h, w)
        diff = float(np.abs(ours.astype(np.float64) - cv).max())
        span = float(ours.max() - ours.min())
        rows.append((f"{c}x{h}x{w}", diff, span, diff / span if span > 0 else float("inf")))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cfgs", nargs="+")
    ap.add_argument("--sizes", default="416x416", help="comma-separated WxH list, default 416x416")
    ap.add_argument("--yolo", default=".build/release/yolo")
    ap.add_argument("--tolerance", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    import cv2
    print(f"OpenCV {cv2.__version__}; max |ours - OpenCV| per head, relative to the head's range (max - min)")
    print("| cfg | size | heads | max abs diff / range per head | worst |")
    print("|---|---|---|---|---|")
    failed = False
    for cfg in args.cfgs:
        for size in args.sizes.split(","):
            width, height = (int(v) for v in size.lower().split("x"))
            with tempfile.TemporaryDirectory() as tmp:
                rows = compare(cfg, width, height, args.yolo, args.tolerance, args.seed, tmp, args.threads)
            worst = max(r[3] for r in rows)
            ok = worst <= args.tolerance
            failed |= not ok
            detail = ", ".join(f"{r[1]:.1e}/{r[2]:.1f} = {r[3]:.1e}" for r in rows)
            print(f"| {os.path.basename(cfg)} | {width}x{height} | {', '.join(r[0] for r in rows)} | {detail} | "
                  f"{worst:.1e} {'ok' if ok else 'FAIL'} |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
