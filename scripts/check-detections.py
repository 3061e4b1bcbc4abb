#!/usr/bin/env python3
"""Compares `yolo detect` with the original Darknet's detections (../shared/reference/*/detections.json).

Runs `yolo detect --json --no-draw --no-exif` at thresholds 0.25 and 0.1 on Darknet's sample photos
(../shared/images) and on the scikit-image photos listed in ../shared/reference/skimage/detections.json
(read from samples/, see scripts/fetch-samples.sh), and checks that both report the same (class, box)
pairs: confidence within 0.005 and box edges within 1 px for PNGs; within 0.02 and 3 px for JPEGs
(Darknet decodes them with stb_image, yolo with libjpeg). A pair whose confidence is within 0.01 of the
threshold may be missing on either side. Box edges of the reference come from its unclamped `rel`.

Usage: python3 scripts/check-detections.py [--yolo .build/release/yolo] [--shared ../shared]
Prints one line per image and a summary `N passed, M failed`; exits 1 on any failure.
"""
import argparse, json, os, subprocess, sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
THRESHOLDS = ("0.25", "0.1")
NEAR = 0.01


def run_yolo(yolo, images, thresh, extra):
    cmd = [yolo, "detect", "--json", "--no-draw", "--no-exif", "--thresh", thresh] + extra + images
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if p.returncode not in (0, 1):
        sys.exit(f"check-detections: {' '.join(cmd[:8])} ... exited {p.returncode}:\n{p.stderr}")
    out = {}
    for line in p.stdout.splitlines():
        if line.strip():
            r = json.loads(line)
            out[r["image"]] = r
    return out, p.stderr


def edges_ref(d, w, h):
    x, y, bw, bh = d["rel"]
    return [(x - bw / 2) * w, (y - bh / 2) * h, (x + bw / 2) * w, (y + bh / 2) * h]


def edges_ours(d):
    b = d["box"]
    return [b["left"], b["top"], b["right"], b["bottom"]]


def compare(ref, ours, w, h, thresh, conf_tol, px_tol):
    """Matches reference and our (class, box) pairs; returns (problems, matched, max dconf, max dpx)."""
    t = float(thresh)
    problems, matched, max_conf, max_px = [], 0, 0.0, 0.0
    left = list(ours)
    for r in ref:
        re = edges_ref(r, w, h)
        best, best_px = None, None
        for o in left:
            if o["class_index"] != r["class_index"]:
                continue
            px = max(abs(a - b) for a, b in zip(re, edges_ours(o)))
            if best is None or px < best_px:
                best, best_px = o, px
        if best is None or best_px > 4 * px_tol + 10:
            if abs(r["prob"] - t) > NEAR:
                problems.append(f"missing {r['class']} {r['prob']:.4f} at [{', '.join(f'{v:.0f}' for v in re)}]")
            continue
        left.remove(best)
        matched += 1
        dc = abs(best["confidence"] - r["prob"])
        max_conf, max_px = max(max_conf, dc), max(max_px, best_px)
        if dc > conf_tol:
            problems.append(f"{r['class']}: confidence {best['confidence']:.4f} vs {r['prob']:.4f}")
        if best_px > px_tol:
            problems.append(f"{r['class']}: box edges off by {best_px:.2f} px")
    for o in left:
        if abs(o["confidence"] - t) > NEAR:
            problems.append(f"extra {o['class']} {o['confidence']:.4f} at [{', '.join(f'{v:.0f}' for v in edges_ours(o))}]")
    return problems, matched, max_conf, max_px


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--yolo", default=".build/release/yolo", help="the yolo binary (default .build/release/yolo)")
    ap.add_argument("--shared", default=os.path.join(REPO, "..", "shared"), help="the shared/ folder (default ../shared)")
    ap.add_argument("--samples", default=os.path.join(REPO, "samples"), help="scikit-image photos (default samples/)")
    ap.add_argument("--threads", default=None, help="pass --threads N to yolo")
    args = ap.parse_args()
    yolo = os.path.abspath(args.yolo) if os.path.sep in args.yolo else args.yolo
    if not os.path.exists(yolo):
        sys.exit(f"check-detections: {args.yolo} not found (build with: swift build -c release)")
    extra = ["--threads", args.threads] if args.threads else []

    cases = []  # (name, path, reference entry)
    for folder, image_dir in (("darknet", os.path.join(args.shared, "images")), ("skimage", args.samples)):
        ref_path = os.path.join(args.shared, "reference", folder, "detections.json")
        with open(ref_path) as f:
            refs = json.load(f)
        for name in sorted(refs):
            cases.append((name, os.path.abspath(os.path.join(image_dir, name)), refs[name]))

    present = [c for c in cases if os.path.exists(c[1])]
    results = {}
    for t in THRESHOLDS:
        results[t], stderr = run_yolo(yolo, [c[1] for c in present], t, extra)
        if stderr.strip():
            sys.stderr.write(stderr)

    passed = failed = 0
    for name, path, ref in cases:
        if not os.path.exists(path):
            hint = " (run scripts/fetch-samples.sh)" if path.startswith(os.path.abspath(args.samples)) else ""
            print(f"FAIL {name}: {path} is missing{hint}")
            failed += 1
            continue
        jpeg = name.lower().endswith((".jpg", ".jpeg"))
        conf_tol, px_tol = (0.02, 3.0) if jpeg else (0.005, 1.0)
        problems, notes = [], []
        for t in THRESHOLDS:
            ours = results[t].get(path)
            if ours is None:
                problems.append(f"t={t}: yolo reported nothing for this image")
                continue
            if (ours["width"], ours["height"]) != (ref["width"], ref["height"]):
                problems.append(f"size {ours['width']}x{ours['height']} vs Darknet's {ref['width']}x{ref['height']}")
            p, matched, dc, dpx = compare(ref["t" + t], ours["detections"], ref["width"], ref["height"], t, conf_tol, px_tol)
            problems += [f"t={t}: {x}" for x in p]
            notes.append(f"t={t} {matched}/{len(ref['t' + t])} matched, max dconf {dc:.1e}, max dedge {dpx:.1e} px")
        status = "FAIL" if problems else "PASS"
        passed += not problems
        failed += bool(problems)
        print(f"{status} {name}: " + "; ".join(notes) + ("" if not problems else " | " + "; ".join(problems)))
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
