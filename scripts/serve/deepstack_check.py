#!/usr/bin/env python3
"""Checks `yolo serve` with the real DeepStack client (deepstack-python, what Home Assistant's
DeepStack integration uses): for each image, the client's predictions must equal `yolo detect
--json`'s detections (given in a JSON-lines file): the same labels in DeepStack's order (the
most confident first),
confidences within 1e-4, boxes within 1 px (DeepStack's whole pixels, clamped to the image).
Checked at min_confidence 0.25 (the CLI's default threshold) and at the client's own default
(0.45: the CLI's detections above it), on /v1/vision/detection and /v1/vision/custom/NAME.
Prints one JSON line with the results; exit status 0 when everything matched."""
import argparse, json, sys

from deepstack.core import DeepstackObject, DeepstackException


def clamp(v, hi):
    return min(max(v, 0.0), float(hi))


def compare(name, expected, predictions, threshold):
    # DeepStack's order: the most confident first (a stable sort of Darknet's order).
    want = sorted((d for d in expected["detections"] if d["confidence"] > threshold), key=lambda d: -d["confidence"])
    problems = []
    if len(want) != len(predictions):
        return [f"{name}: {len(predictions)} predictions, expected {len(want)}"]
    for i, (d, p) in enumerate(zip(want, predictions)):
        if p["label"] != d["class"]:
            problems.append(f"{name}[{i}]: label {p['label']} != {d['class']}")
        if abs(p["confidence"] - d["confidence"]) > 1e-4:
            problems.append(f"{name}[{i}]: confidence {p['confidence']} != {d['confidence']}")
        b, w, h = d["box"], expected["width"], expected["height"]
        for key, value in (("x_min", clamp(b["left"], w)), ("y_min", clamp(b["top"], h)),
                           ("x_max", clamp(b["right"], w)), ("y_max", clamp(b["bottom"], h))):
            if abs(p[key] - value) > 1.0:
                problems.append(f"{name}[{i}]: {key} {p[key]} != {value:.2f}")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--expected", required=True, help="yolo detect --json output, one line per image")
    ap.add_argument("--custom", required=True, help="the server's model name")
    ap.add_argument("--api-key", default="")
    ap.add_argument("images", nargs="+")
    a = ap.parse_args()
    expected = {}
    with open(a.expected) as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                expected[d["image"].split("/")[-1]] = d
    clients = [("detection 0.25", DeepstackObject(ip="127.0.0.1", port=a.port, api_key=a.api_key, min_confidence=0.25), 0.25),
               ("detection default", DeepstackObject(ip="127.0.0.1", port=a.port, api_key=a.api_key), 0.45),
               ("custom 0.25", DeepstackObject(ip="127.0.0.1", port=a.port, api_key=a.api_key, min_confidence=0.25,
                                               custom_model=a.custom), 0.25)]
    problems, checked, predictions_seen = [], 0, 0
    for label, client, threshold in clients:
        for path in a.images:
            name = path.split("/")[-1]
            with open(path, "rb") as f:
                data = f.read()
            try:
                predictions = client.detect(data)
            except DeepstackException as e:
                problems.append(f"{label} {name}: {e}")
                continue
            problems += [f"{label} {p}" for p in compare(name, expected[name], predictions, threshold)]
            checked += 1
            predictions_seen += len(predictions)
    # A custom model the server does not have: the client reports DeepStack's 404.
    try:
        DeepstackObject(ip="127.0.0.1", port=a.port, api_key=a.api_key, custom_model="no-such-model").detect(data)
        problems.append("custom no-such-model: no error")
    except DeepstackException as e:
        if "404" not in str(e):
            problems.append(f"custom no-such-model: {e}")
    print(json.dumps({"checked": checked, "predictions": predictions_seen, "problems": problems}))
    return 0 if not problems and checked == len(clients) * len(a.images) else 1


if __name__ == "__main__":
    sys.exit(main())
