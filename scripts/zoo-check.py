#!/usr/bin/env python3
"""Runs `yolo detect` on every Darknet cfg of the model zoo at its cfg size, on random weights, in
each precision, and checks that it runs and that every box is finite (issue #51).

For each cfg (default ../shared/cfg/*.cfg): writes a random weights file that fits it (the
functions of scripts/compare-opencv.py: batch-norm variance near 1, weights scaled by
--gain/sqrt(fan-in), default 1.0, so activations stay in range) and a names file with the cfg's
class count, then runs, under /usr/bin/time -v,

    yolo detect IMAGE --cfg C --weights W --names N --json --no-draw --thresh T --max-det 20
        --precision P [--int8-table T8]

for each precision P of --precisions (default fp32,bf16,fp16,int8). INT8 first makes the table
with `yolo calibrate PHOTOS --out T8 --cfg C --weights W --max-effect none` (the per-layer effect
measurement costs one network pass per convolution and photo: --max-effect E turns it on). Random
weights give meaningless detections: the check is the exit status (yolo detect fails an image whose
raw heads or decoded boxes are not all finite), that every number of every detection reported
(box, rel, confidence, objectness) is finite, and the time and peak RSS.

Prints one line per cfg x precision: status (ok, REFUSED: the engine declined with exit 64,
FAIL: another exit status or a non-finite value, TIMEOUT), detections, all finite, seconds (wall,
the whole process: load, plan, decode the photo, one forward, decoding and NMS), the forward's
inference_ms, peak RSS MiB; then the command of every line that is not ok. Exit status 1 when any
line is FAIL or TIMEOUT.

Run from the repository root (no venv needed: numpy only):

    python3 scripts/zoo-check.py                                  # all 16 cfgs, 4 precisions
    python3 scripts/zoo-check.py --cfgs yolov4-tiny,yolov7 --precisions fp32,int8 --keep /tmp/zoo
"""
import argparse
import glob
import importlib.util
import json
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def _compare_opencv():
    """scripts/compare-opencv.py as a module (its name has a dash)."""
    spec = importlib.util.spec_from_file_location("compare_opencv", os.path.join(REPO, "scripts", "compare-opencv.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


co = _compare_opencv()


def cfg_paths(spec, cfg_dir):
    """--cfgs: comma-separated names (yolov4, yolov4.cfg) or paths; empty: every cfg in cfg_dir."""
    if not spec:
        return sorted(glob.glob(os.path.join(cfg_dir, "*.cfg")))
    out = []
    for item in spec.split(","):
        item = item.strip()
        path = item if os.path.exists(item) else os.path.join(cfg_dir, item if item.endswith(".cfg") else item + ".cfg")
        if not os.path.exists(path):
            sys.exit(f"zoo-check: no cfg {item!r} (looked for {path})")
        out.append(path)
    return out


def make_model(cfg, workdir, seed=1, gain=1.3):
    """Random weights and a names file for cfg at its own size: (weights, names, (w, h), classes)."""
    sections = co.parse_cfg(cfg)
    net = sections[0][1]
    width, height = int(net["width"]), int(net["height"])
    convs, _ = co.conv_shapes(sections, width, height)
    stem = os.path.splitext(os.path.basename(cfg))[0]
    weights = os.path.join(workdir, f"{stem}-random.weights")
    with open(weights, "wb") as f:
        f.write(co.random_weights(convs, np.random.default_rng(seed), gain))
    classes = [int(o["classes"]) for name, o in sections if name in ("yolo", "region") and "classes" in o][-1]
    names = os.path.join(workdir, f"{stem}.names")
    with open(names, "w") as f:
        f.write("".join(f"class{k}\n" for k in range(classes)))
    return weights, names, (width, height), classes


def timed(cmd, timeout):
    """Runs cmd under /usr/bin/time -v: (returncode or None on timeout, stdout, stderr, seconds, peak RSS MiB)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        t0 = time.monotonic()
        try:
            p = subprocess.run(["/usr/bin/time", "-v", "-o", tf.name] + cmd, cwd=REPO,
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            return None, e.stdout or "", e.stderr or "", time.monotonic() - t0, float("nan")
        seconds = time.monotonic() - t0
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", tf.read())
        rss = int(m.group(1)) / 1024 if m else float("nan")
    # time -v reports "Command terminated by signal N" with its own exit status 0 in some versions.
    return p.returncode, p.stdout, p.stderr, seconds, rss


def all_finite(value):
    if isinstance(value, dict):
        return all(all_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(all_finite(v) for v in value)
    if isinstance(value, float):
        return math.isfinite(value)
    return True


def check_output(stdout):
    """(detections, all finite, inference_ms, problem or '') from `yolo detect --json` output."""
    dets, finite, ms, problem = 0, True, float("nan"), ""
    lines = [l for l in stdout.splitlines() if l.strip()]
    if not lines:
        return 0, False, ms, "no JSON line on stdout"
    for line in lines:
        try:
            r = json.loads(line)  # json accepts NaN and Infinity: all_finite then catches them
        except json.JSONDecodeError as e:
            return dets, False, ms, f"unparsable JSON line ({e}): {line[:120]}"
        if "error" in r:
            problem = f"error: {r['error']}"
        dets += len(r.get("detections", []))
        finite &= all_finite(r.get("detections", []))
        ms = r.get("inference_ms", ms)
    return dets, finite, ms, problem


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1][:200] if lines else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cfgs", default="", help="comma-separated cfg names or paths (default: every cfg in --cfg-dir)")
    ap.add_argument("--cfg-dir", default=os.path.join(REPO, "..", "shared", "cfg"))
    ap.add_argument("--precisions", default="fp32,bf16,fp16,int8")
    ap.add_argument("--image", default=os.path.join(REPO, "..", "shared", "images", "dog.jpg"),
                    help="the photo to detect (default ../shared/images/dog.jpg)")
    ap.add_argument("--calib", default=os.path.join(REPO, "..", "shared", "images"),
                    help="comma-separated photos or directories for yolo calibrate (default ../shared/images: 7 photos)")
    ap.add_argument("--max-effect", default="none", help="yolo calibrate --max-effect (default none: not measured)")
    ap.add_argument("--thresh", default="0.2",
                    help="yolo detect --thresh for [yolo] heads (default 0.2: on random weights most confidences are "
                         "near 0.5 x 0.5 = 0.25, so nearly every (box, class) pair passes, and --max-det bounds the NMS)")
    ap.add_argument("--max-det", default="20",
                    help="yolo detect --max-det (default 20: per-class NMS stops after that many kept boxes; without "
                         "it, NMS over millions of random candidates takes minutes: yolov3_5l at --thresh 0.25 "
                         "did not finish in 600 s)")
    ap.add_argument("--region-thresh", default="0.005",
                    help="--thresh for [region] heads (default 0.005: on random weights their class probabilities, "
                         "objectness x softmax, are near 0.5 / classes, so 0.25 would leave no box to check)")
    ap.add_argument("--yolo", default=os.path.join(REPO, ".build", "release", "yolo"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=600, help="seconds per command (default 600)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gain", type=float, default=1.0,
                    help="weights scale, times 1/sqrt(fan-in) (default 1.0; compare-opencv.py's 1.3 makes the heads of "
                         "the residual YOLOv3s reach ~1000, exp(tw) overflows and yolo detect rightly refuses the weights)")
    ap.add_argument("--keep", help="write weights, names and tables here and keep them (default: a temporary directory)")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)

    cfgs = cfg_paths(args.cfgs, os.path.abspath(args.cfg_dir))
    precisions = [p.strip() for p in args.precisions.split(",") if p.strip()]
    workdir = args.keep or tempfile.mkdtemp(prefix="zoo-check-")
    os.makedirs(workdir, exist_ok=True)
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"yolo {args.yolo}; image {args.image}; threads {args.threads}; load average {' '.join(load)} at start")
    print("| cfg | size | precision | status | detections | all finite | seconds | forward ms | peak RSS MiB | note |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    failures, bad = [], False
    for cfg in cfgs:
        name = os.path.basename(cfg)
        weights, names, (w, h), _ = make_model(cfg, workdir, args.seed, args.gain)
        region = any(s == "region" for s, _ in co.parse_cfg(cfg))
        base = [args.yolo, "detect", args.image, "--cfg", cfg, "--weights", weights, "--names", names,
                "--json", "--no-draw", "--threads", str(args.threads),
                "--thresh", args.region_thresh if region else args.thresh, "--max-det", args.max_det]
        for precision in precisions:
            cmd = base + ["--precision", precision]
            note = ""
            if precision == "int8":
                table = os.path.join(workdir, os.path.splitext(os.path.basename(weights))[0] + ".int8")
                calib = [args.yolo, "calibrate", *args.calib.split(","), "--out", table, "--cfg", cfg,
                         "--weights", weights, "--threads", str(args.threads), "--max-effect", args.max_effect]
                rc, _, err, secs, rss = timed(calib, args.timeout)
                note = f"calibrate {secs:.1f} s, {rss:.0f} MiB"
                if rc != 0:
                    status = "TIMEOUT" if rc is None else ("REFUSED" if rc == 64 else "FAIL")
                    print(f"| {name} | {w}x{h} | int8 | {status} (calibrate) | - | - | {secs:.1f} | - | {rss:.0f} | "
                          f"calibrate exit {rc}: {last_line(err)} |")
                    failures.append((name, "int8 calibrate", calib))
                    bad |= status != "REFUSED"
                    continue
                cmd += ["--int8-table", table]
            rc, out, err, secs, rss = timed(cmd, args.timeout)
            dets, finite, ms, problem = check_output(out)
            if rc is None:
                status, problem = "TIMEOUT", f"killed after {args.timeout:.0f} s"
            elif rc == 64:
                status, problem = "REFUSED", last_line(err)
            elif rc != 0 or problem or not finite:
                status = "FAIL"
                if rc != 0:
                    problem = f"exit {rc}: {last_line(err)}"
                problem = problem or "non-finite values"
            else:
                status = "ok"
            if status != "ok":
                failures.append((name, precision, cmd))
                bad |= status != "REFUSED"
            note = "; ".join(x for x in (note, problem) if x)
            print(f"| {name} | {w}x{h} | {precision} | {status} | {dets} | {'yes' if finite else 'NO'} | {secs:.1f} | "
                  f"{ms:.0f} | {rss:.0f} | {note} |")
    with open("/proc/loadavg") as f:
        print(f"load average {' '.join(f.read().split()[:3])} at the end; files in {workdir}")
    for name, precision, cmd in failures:
        print(f"not ok: {name} {precision}: {shlex.join(cmd)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
