#!/usr/bin/env python3
"""Accuracy of the low-precision runtimes: their detections against the same runtime's FP32
detections (openvino-int8 and openvino-bf16 against openvino, onnxruntime-int8 against
onnxruntime, ours-int8/bf16/fp16 against ours) and against our FP32 detections, on photos
no calibration saw (default: Darknet's seven in ../shared/images; quantize.py calibrates on
samples/).

Each photo is letterboxed as Darknet does (photos.py); each runtime's raw heads are decoded
with our decoder's semantics (decode.py: threshold 0.25, per-class NMS 0.45); a detection
matches a reference one of the same class with IoU >= 0.5 (greedy by confidence, each used
once). Recall = matched / reference detections, precision = matched / detections, summed over
the photos. Ours runs through `yolo heads` (ours-P adds `--precision P`; an engine that refuses
it is skipped, saying so); `yolo detect --json` on the same photos checks the decoder here
against ours.

    Benchmarks/peers/.venv/bin/python Benchmarks/peers/accuracy.py
        [--runtimes openvino-int8,onnxruntime-int8,openvino-bf16,ours-int8] [--images DIR ...]
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import darknet
import decode
import photos
import runtimes

OURS = "ours"
# The FP32 runtime each low-precision one is measured against.
REFERENCE = {"openvino-int8": "openvino", "openvino-bf16": "openvino", "openvino-fp16": "openvino", "onnxruntime-int8": "onnxruntime",
             "ours-int8": OURS, "ours-bf16": OURS, "ours-fp16": OURS}
DEFAULT = "openvino-int8,onnxruntime-int8,openvino-bf16,ours-int8,ours-bf16"


class Ours:
    """Our engine's heads through `yolo heads` (one process per photo)."""

    def __init__(self, name, yolo, threads, models):
        self.name, self.yolo = name, yolo
        self.argv = [yolo, "heads", "--threads", str(threads), "--cfg", str(models["cfg"]),
                     "--weights", str(models["weights"])]
        precision = name[len(OURS) + 1:]
        if precision:
            self.argv += ["--precision", precision]

    def heads(self, x, shapes):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "input.f32"
            x.astype("<f4").tofile(path)
            out = subprocess.run(self.argv + [str(path), "--out", tmp], capture_output=True, text=True,
                                 cwd=runtimes.ROOT)
            if out.returncode != 0:
                said = next((l for l in out.stderr.splitlines() if not l.startswith("Run '")), "")
                flag = " ".join(self.argv[-2:]) if "--precision" in self.argv else ""
                raise runtimes.Skip(f"`yolo heads {flag}` exited with status {out.returncode}: {said}")
            return [runtimes.load_tensor(Path(tmp) / f"head{i}.f32", s) for i, s in enumerate(shapes)]


class Peer:
    def __init__(self, name, models, threads):
        self.name = name
        self.runner = runtimes.PEER_RUNNERS[name](models, threads)

    def heads(self, x, shapes):
        self.runner.set_input(x)
        return [np.asarray(h).reshape(s) for h, s in zip(self.runner.heads(), shapes)]


def yolo_detect(yolo, paths, threshold, models):
    """Our CLI's detections per photo path (the decoder check)."""
    out = subprocess.run([yolo, "detect", "--json", "--no-draw", "--no-exif", "--thresh", str(threshold),
                          "--cfg", str(models["cfg"]), "--weights", str(models["weights"])] + [str(p) for p in paths],
                         capture_output=True, text=True, cwd=runtimes.ROOT)
    if out.returncode not in (0, 1):
        sys.exit(f"yolo detect exited with status {out.returncode}: {out.stderr.strip()}")
    found = {}
    for line in out.stdout.splitlines():
        if line.strip():
            r = json.loads(line)
            found[r["image"]] = [decode.Detection(d["class_index"], d["confidence"], d["box"]["left"], d["box"]["top"],
                                                  d["box"]["right"], d["box"]["bottom"]) for d in r["detections"]]
    return found


def totals(reference, test, iou):
    """Recall and precision over all photos, and for the matched pairs the mean IoU and the
    largest confidence difference."""
    found = [pair for photo in reference for pair in decode.pairs(reference[photo], test[photo], iou)]
    ref_n = sum(len(v) for v in reference.values())
    test_n = sum(len(v) for v in test.values())
    return {"matched": len(found), "reference": ref_n, "detections": test_n,
            "recall": len(found) / ref_n if ref_n else float("nan"),
            "precision": len(found) / test_n if test_n else float("nan"),
            "mean_iou": float(np.mean([decode.iou(a, b) for a, b in found])) if found else float("nan"),
            "max_conf_diff": max((abs(a.conf - b.conf) for a, b in found), default=float("nan"))}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runtimes", default=DEFAULT,
                    help=f"comma list (default: %(default)s); any of {','.join([OURS, *REFERENCE, *runtimes.PEER_RUNNERS])}")
    ap.add_argument("--images", nargs="+", default=[str(photos.SHARED_IMAGES)], help="folders of photos")
    ap.add_argument("--threshold", type=float, default=0.25)
    ap.add_argument("--nms", type=float, default=0.45)
    ap.add_argument("--iou", type=float, default=0.5, help="IoU for a match (same class)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--yolo", default=str(runtimes.ROOT / ".build/release/yolo"), help="our CLI")
    ap.add_argument("--per-photo", action="store_true", help="also print the counts per photo")
    ap.add_argument("--json", help="write the table and every detection to this file")
    args = ap.parse_args()

    asked = [n.strip() for n in args.runtimes.split(",") if n.strip()]
    known = {OURS, *REFERENCE, *runtimes.PEER_RUNNERS}
    if set(asked) - known:
        ap.error(f"unknown runtimes {sorted(set(asked) - known)}; choose from {','.join(sorted(known))}")
    skipped = {}
    names = []
    for n in [OURS] + [REFERENCE.get(n, n) for n in asked] + asked:
        if n not in names:
            names.append(n)
    if not Path(args.yolo).exists():
        for n in [n for n in names if n == OURS or n.startswith(OURS + "-")]:
            names.remove(n)
            skipped[n] = f"{args.yolo} not found (swift build -c release --product yolo)"
    paths = [p for folder in args.images for p in photos.photos_in(folder)]

    models = runtimes.ensure_models()
    layers, net_size = decode.yolo_layers(models["cfg"])
    model = darknet.load(models["cfg"], models["weights"])
    shapes = [model.layers[i].shape for i in model.heads]

    dets, heads0 = {}, {}
    for name in names:
        try:
            rt = (Ours(name, args.yolo, args.threads, models) if name == OURS or name.startswith(OURS + "-")
                  else Peer(name, models, args.threads))
            dets[name], heads0[name] = {}, {}
            for path in paths:
                x, size = photos.load(path, *net_size)
                h = rt.heads(x, shapes)
                heads0[name][path.name] = h
                dets[name][path.name] = decode.decode(h, layers, net_size, size, args.threshold, args.nms)
        except runtimes.Skip as e:
            skipped[name] = str(e)
            dets.pop(name, None)
            print(f"skipped {name}: {e}", file=sys.stderr)

    print(f"photos: {len(paths)} ({', '.join(p.name for p in paths)}); threshold {args.threshold}, "
          f"NMS {args.nms}, match: same class and IoU >= {args.iou}")
    if OURS in dets:
        cli = yolo_detect(args.yolo, paths, args.threshold, models)
        mine = {p.name: dets[OURS][p.name] for p in paths}
        theirs = {p.name: cli[str(p)] for p in paths}
        t = totals(theirs, mine, 0.99)
        matched = [pair for p in mine for pair in decode.pairs(theirs[p], mine[p], 0.99)]
        conf = max((abs(a.conf - b.conf) for a, b in matched), default=0.0)
        edge = max((abs(u - v) for a, b in matched for u, v in zip((a.left, a.top, a.right, a.bottom),
                                                                   (b.left, b.top, b.right, b.bottom))), default=0.0)
        print(f"decoder check: our heads decoded here vs `yolo detect --json`: {t['matched']} of "
              f"{t['reference']} detections matched at IoU >= 0.99 ({t['detections']} here), "
              f"max |conf diff| {conf:.1e}, max edge diff {edge:.1e} px")

    rows = []
    for name in (n for n in dets if n != OURS):  # ours FP32 is the reference of the last columns
        ref = REFERENCE.get(name)
        row = {"runtime": name, "reference": ref}
        if ref in dets:
            row["vs_reference"] = totals(dets[ref], dets[name], args.iou)
            row["max_head_diff"] = max(runtimes.max_abs_diff(heads0[ref][p], heads0[name][p]) for p in heads0[name])
        if OURS in dets and name != OURS:
            row["vs_ours"] = totals(dets[OURS], dets[name], args.iou)
        rows.append(row)

    def cells(t):
        return (f"{t['reference']:>4} {t['detections']:>4} {t['matched']:>5} {t['recall']:>6.3f} {t['precision']:>6.3f} "
                f"{t['mean_iou']:>5.3f} {t['max_conf_diff']:>6.3f}" if t else
                f"{'-':>4} {'-':>4} {'-':>5} {'-':>6} {'-':>6} {'-':>5} {'-':>6}")

    head = f"{'ref':>4} {'dets':>4} {'match':>5} {'recall':>6} {'prec':>6} {'mIoU':>5} {'dconf':>6}"
    print(f"\n{'':<17} {'':<12} {'against the reference':<45}  {'':>9}  against ours FP32")
    print(f"{'runtime':<17} {'reference':<12} {head}  {'head diff':>9}  {head}")
    for row in rows:
        diff = f"{row['max_head_diff']:.1e}" if "max_head_diff" in row else "-"
        print(f"{row['runtime']:<17} {row['reference'] or '-':<12} {cells(row.get('vs_reference'))}  {diff:>9}  "
              f"{cells(row.get('vs_ours'))}")
    print("ref/dets: detections of the reference/runtime; match: same class, IoU >= "
          f"{args.iou}; mIoU: mean IoU of the matches; dconf: largest confidence difference of a match; "
          "head diff: max |heads - reference heads| over the photos")
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")

    if args.per_photo:
        print("\nper photo: detections (matched with the reference)")
        for p in paths:
            parts = []
            for name in dets:
                ref = REFERENCE.get(name)
                m = f"/{decode.match(dets[ref][p.name], dets[name][p.name], args.iou)[0]}" if ref in dets else ""
                parts.append(f"{name} {len(dets[name][p.name])}{m}")
            print(f"  {p.name}: " + ", ".join(parts))

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"photos": [str(p) for p in paths], "threshold": args.threshold, "nms": args.nms,
                       "iou": args.iou, "rows": rows, "skipped": skipped,
                       "detections": {n: {p: [vars(d) for d in ds] for p, ds in v.items()} for n, v in dets.items()}},
                      f, indent=1)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
