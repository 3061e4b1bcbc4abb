#!/usr/bin/env python3
"""Compares two runs of `yolo detect --json` (one JSON object per image per line), e.g. an arm64
build's against this machine's: the same images, and per image the same (class, box) pairs, with
confidences within --conf and box edges within --px pixels. A pair whose confidence is within
--conf of --thresh may be missing on either side.

Usage: python3 scripts/compare-detections.py REFERENCE.jsonl OTHER.jsonl [--conf 1e-4] [--px 0.1] [--thresh 0.25]
Prints one line per image and the largest differences; exits 1 on any mismatch.
"""
import argparse, json, os, sys


def load(path):
    out = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                out[os.path.basename(r["image"])] = r
    return out


def edges(d):
    b = d["box"]
    return [b["left"], b["top"], b["right"], b["bottom"]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("reference")
    ap.add_argument("other")
    ap.add_argument("--conf", type=float, default=1e-4, help="confidence tolerance (default 1e-4)")
    ap.add_argument("--px", type=float, default=0.1, help="box edge tolerance in pixels (default 0.1)")
    ap.add_argument("--thresh", type=float, default=0.25, help="the threshold both ran with (default 0.25)")
    args = ap.parse_args()
    ref, other = load(args.reference), load(args.other)
    problems, pairs, max_conf, max_px = [], 0, 0.0, 0.0
    if not ref:
        problems.append(f"{args.reference}: no detections at all (no image processed)")
    for name in sorted(ref.keys() | other.keys()):
        if name not in other or name not in ref:
            problems.append(f"{name}: only in {args.reference if name in ref else args.other}")
            continue
        a, b = ref[name], other[name]
        if (a["width"], a["height"]) != (b["width"], b["height"]):
            problems.append(f"{name}: size {a['width']}x{a['height']} vs {b['width']}x{b['height']}")
        left = list(b["detections"])
        for d in a["detections"]:
            candidates = [o for o in left if o["class_index"] == d["class_index"]]
            best = min(candidates, key=lambda o: max(abs(x - y) for x, y in zip(edges(d), edges(o))), default=None)
            if best is None:
                if abs(d["confidence"] - args.thresh) > args.conf:
                    problems.append(f"{name}: {d['class']} {d['confidence']:.6f} missing from {args.other}")
                continue
            left.remove(best)
            pairs += 1
            dc = abs(d["confidence"] - best["confidence"])
            dpx = max(abs(x - y) for x, y in zip(edges(d), edges(best)))
            max_conf, max_px = max(max_conf, dc), max(max_px, dpx)
            if dc > args.conf or dpx > args.px:
                problems.append(f"{name}: {d['class']}: confidence {d['confidence']:.6f} vs {best['confidence']:.6f}, "
                                f"edges off by {dpx:.4f} px")
        for o in left:
            if abs(o["confidence"] - args.thresh) > args.conf:
                problems.append(f"{name}: {o['class']} {o['confidence']:.6f} only in {args.other}")
    print(f"compare-detections: {len(ref)} images, {pairs} (class, box) pairs; max |dconfidence| {max_conf:.1e} "
          f"(tolerance {args.conf:g}), max |dedge| {max_px:.1e} px (tolerance {args.px:g})")
    for p in problems:
        print("  MISMATCH " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
