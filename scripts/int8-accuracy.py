#!/usr/bin/env python3
"""INT8 (or --precision bf16 / fp16) against FP32 detections, as issue #20 measures them: `yolo
detect --json` on the images (or directories) given, once in FP32 and once with --precision int8
(or the precision given); a detection of one matches a
detection of the other with the same class and IoU >= 0.5 (greedy, most confident first);
recall = matched / FP32 detections, precision = matched / INT8 detections, pooled over the photos;
drift = the mean and largest confidence change of the matched detections (a finer yardstick than
the counts, which one borderline box moves; scripts/photo-variants.sh makes more inputs).
--flips LIST also counts, at each threshold of LIST, the detections found in one precision only,
and prints their sum over LIST (of the FP32 detections summed over it): a steadier yardstick than
one threshold's counts (detected once, at the lowest threshold given, then filtered).

  scripts/int8-accuracy.py ../shared/images samples [--table F] [--thresh 0.25] [--yolo PATH]
                           [--precision int8|bf16|fp16] [--fallback auto|fp16|bf16|fp32]
                           [--flips 0.1,0.15,0.2,0.25,0.3,0.35,0.4,0.5] [--int8-weights F] [--conv ALGO]
  python3 scripts/eval-photos.py && scripts/int8-accuracy.py eval-photos/eval   (issue #49's set)

--int8-weights and --conv apply to the INT8 run only (the FP32 reference stays on the default
weights and plan): for weights rounded another way (scripts/int8-gptq-experiment.py).

Prints one line per photo where the two differ and the pooled figures; exits 1 when recall or
precision is below --require (default 0.97)."""
import argparse, json, subprocess, sys


def detect(yolo, inputs, thresh, extra):
    out = subprocess.run([yolo, "detect", *inputs, "--json", "--no-draw", "--thresh", str(thresh), *extra],
                         check=True, capture_output=True, text=True).stdout
    return {o["image"]: o["detections"] for o in map(json.loads, out.splitlines())}


def iou(a, b):
    ix = max(0.0, min(a["right"], b["right"]) - max(a["left"], b["left"]))
    iy = max(0.0, min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]))
    inter = ix * iy
    union = (a["right"] - a["left"]) * (a["bottom"] - a["top"]) + (b["right"] - b["left"]) * (b["bottom"] - b["top"]) - inter
    return inter / union if union > 0 else 0.0


def matches(ref, got):
    """The confidence changes of the matched pairs."""
    used, drifts = set(), []
    for a in sorted(ref, key=lambda d: -d["confidence"]):
        best, best_iou = None, 0.5
        for j, b in enumerate(got):
            if j not in used and b["class"] == a["class"] and iou(a["box"], b["box"]) >= best_iou:
                best, best_iou = j, iou(a["box"], b["box"])
        if best is not None:
            used.add(best)
            drifts.append(abs(a["confidence"] - got[best]["confidence"]))
    return drifts


def above(detections, thresh):
    return [d for d in detections if d["confidence"] > thresh]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("inputs", nargs="+")
    p.add_argument("--table", help="INT8 calibration table (default: next to the weights)")
    p.add_argument("--thresh", type=float, default=0.25)
    p.add_argument("--yolo", default=".build/release/yolo")
    p.add_argument("--require", type=float, default=0.97)
    p.add_argument("--precision", default="int8", choices=["int8", "bf16", "fp16"])
    p.add_argument("--fallback", choices=["auto", "fp16", "bf16", "fp32"],
                   help="INT8: the arithmetic of the layers not in INT8 (yolo's --int8-fallback)")
    p.add_argument("--flips", help="thresholds, comma-separated: count the detections in one precision only")
    p.add_argument("--int8-weights", help="the INT8 run's weights (its table must name them)")
    p.add_argument("--conv", help="the INT8 run's --conv")
    a = p.parse_args()
    if (a.table or a.fallback or a.int8_weights) and a.precision != "int8":
        p.error("--table, --fallback and --int8-weights are for --precision int8")
    label = a.precision.upper()
    levels = sorted(float(t) for t in a.flips.split(",")) if a.flips else []
    low = min([a.thresh] + levels)
    fp32 = detect(a.yolo, a.inputs, low, [])
    int8 = detect(a.yolo, a.inputs, low, ["--precision", a.precision] + (["--int8-table", a.table] if a.table else [])
                  + (["--int8-fallback", a.fallback] if a.fallback else [])
                  + (["--weights", a.int8_weights] if a.int8_weights else []) + (["--conv", a.conv] if a.conv else []))
    if levels:
        flips = ref_sum = 0
        for t in levels:
            for image in fp32:
                ref, got = above(fp32[image], t), above(int8.get(image, []), t)
                m = len(matches(ref, got))
                flips, ref_sum = flips + len(ref) + len(got) - 2 * m, ref_sum + len(ref)
        print(f"flips over the thresholds {','.join(map(str, levels))}: {flips} of {ref_sum}")
    fp32 = {image: above(d, a.thresh) for image, d in fp32.items()}
    int8 = {image: above(d, a.thresh) for image, d in int8.items()}
    total_ref = total_got = total_match = 0
    drifts = []
    for image in sorted(fp32):
        ref, got = fp32[image], int8.get(image, [])
        d = matches(ref, got)
        drifts += d
        m = len(d)
        total_ref, total_got, total_match = total_ref + len(ref), total_got + len(got), total_match + m
        if m != len(ref) or m != len(got):
            print(f"{image}: FP32 {len(ref)}, {label} {len(got)}, matched {m}")
    recall = total_match / total_ref if total_ref else 1.0
    precision = total_match / total_got if total_got else 1.0
    print(f"{len(fp32)} photos, threshold {a.thresh}: FP32 {total_ref} detections, {label} {total_got}, matched {total_match}: "
          f"recall {recall:.3f}, precision {precision:.3f}; confidence drift mean {sum(drifts) / max(1, len(drifts)):.4f}, "
          f"max {max(drifts, default=0):.3f}")
    sys.exit(0 if recall >= a.require and precision >= a.require else 1)


main()
