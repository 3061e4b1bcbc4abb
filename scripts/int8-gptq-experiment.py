#!/usr/bin/env python3
"""Would GPTQ-style rounding of the INT8 weights lower the INT8 model's error (issue #49)? An
experiment, not a part of the engine: it writes a copy of the Darknet weights whose folded weights
of the layers given already sit on the engine's INT8 grid (each filter's scale max|w| / 127 kept,
its largest weight at +-127), rounded by GPTQ instead of to the nearest step, so that the engine's
own round-to-nearest reproduces the chosen integers; and a copy of the shipped table with those
weights' fingerprint and the marks given. docs/int8-rounding.md has what it measured.

GPTQ, per layer: H = sum over the calib photos of X X^T, X the layer's im2col columns of its input
quantized as the table says (u8, or 10 bits for the --a10 layers), from a float32 numpy forward of
the FP32 model (Benchmarks/peers/darknet.py); the filters' weights are rounded one column (input
channel x tap) at a time, the rounding error of each spread over the columns not yet rounded
through the Cholesky factor of H^-1 (damping --damp x mean(diag H)), in blocks of 128 columns.

  Benchmarks/peers/.venv/bin/python scripts/int8-gptq-experiment.py --layers 2,6,8 --out /tmp/gptq
  Benchmarks/peers/.venv/bin/python scripts/int8-gptq-experiment.py --layers 0,2,4,6,8 --errors
  python3 scripts/int8-accuracy.py eval-photos/eval --require 0 --table /tmp/gptq/gptq.int8 \\
      --int8-weights /tmp/gptq/gptq.weights --conv im2col --flips 0.1,0.15,0.2,0.25,0.3,0.35,0.4,0.5

(`yolo calibrate --gptq` does the same in the engine; this script was its prototype.) --errors
instead prints, per layer, the RMS error of its output (after leaky) relative to the FP32 output's,
alone on FP32 inputs: weights to the nearest step (Wq) or by GPTQ (Wg), the input in 8 or 10 bits
(X8, X10), and the combinations; H from the first 16 calib photos, errors on the next 16.
"""
import argparse, sys
from pathlib import Path
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "Benchmarks/peers"))
import darknet, photos  # noqa: E402


def quantized(x, lo, hi, levels):
    """x through the engine's activation quantization (range widened to hold 0, per tensor)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    s = (hi - lo) / levels
    z = np.clip(np.round(-lo / s), 0, levels)
    return ((np.clip(np.round(x / s) + z, 0, levels) - z) * s).astype(np.float32)


def gptq(weight, h, damp, block=128):
    """Integers (filters x columns) for the folded `weight`, each filter's scale max|w| / 127."""
    o = weight.shape[0]
    w = weight.reshape(o, -1).astype(np.float64)
    scale = np.abs(w).max(1) / 127
    scale[scale == 0] = 1
    h = h.copy()
    dead = np.diag(h) == 0
    h[dead, dead] = 1
    h += damp * np.mean(np.diag(h)) * np.eye(h.shape[0])
    u = np.linalg.cholesky(np.linalg.inv(h)).T  # upper: H^-1 = U^T U
    work, q = w.copy(), np.zeros_like(w)
    for b0 in range(0, w.shape[1], block):
        b1 = min(w.shape[1], b0 + block)
        err = np.zeros((o, b1 - b0))
        for i in range(b0, b1):
            q[:, i] = np.clip(np.round(work[:, i] / scale), -127, 127)
            err[:, i - b0] = (work[:, i] - q[:, i] * scale) / u[i, i]
            work[:, i + 1:b1] -= np.outer(err[:, i - b0], u[i, i + 1:b1])
        work[:, b1:] -= err @ u[b0:b1, b1:]
    largest = np.abs(w).argmax(1)  # keep the grid: the engine derives the scale from the largest
    q[np.arange(o), largest] = np.sign(w[np.arange(o), largest]) * 127
    nearest = np.clip(np.round(w / scale[:, None]), -127, 127)
    return q, scale, float((q != nearest).mean())


def fingerprint(data):
    """Int8Calibration.weightsFingerprint: FNV-1a over 8-byte words, then the count."""
    prime, mask, value = 0x100000001B3, (1 << 64) - 1, 0xCBF29CE484222325
    n = len(data) // 8
    for word in np.frombuffer(data[:8 * n], "<u8").tolist():
        value = ((value ^ word) * prime) & mask
    for byte in data[8 * n:]:
        value = ((value ^ byte) * prime) & mask
    return f"{((value ^ len(data)) * prime) & mask:016x}"


def errors(model, convs, layers, ranges, shots, hs, visit):
    for path in shots[:16]:
        darknet.forward(model, photos.load(str(path))[0].astype(np.float32), visit)
    rounded = {}
    for i in sorted(layers):
        q, scale, _ = gptq(convs[i].weight.astype(np.float64), hs[i], 0.01)
        rounded[i] = (q * scale[:, None]).reshape(convs[i].weight.shape).astype(np.float32)
    sums = {}

    def measure(i, x):
        if i not in layers:
            return
        w, b, k = convs[i].weight, convs[i].bias, convs[i].params["size"]
        nearest = np.abs(w.reshape(w.shape[0], -1)).max(1) / 127
        wq = (np.clip(np.round(w / nearest[:, None, None, None]), -127, 127) * nearest[:, None, None, None]).astype(np.float32)
        out = lambda x_, w_: leaky_out(w_.reshape(w_.shape[0], -1) @ darknet.im2col(x_, k, k // 2), b, x.shape)
        x8, x10 = quantized(x, *ranges[i], 255), quantized(x, *ranges[i], 1023)
        ref = out(x, w)
        for name, y in [("Wq", out(x, wq)), ("Wg", out(x, rounded[i])), ("X8", out(x8, w)), ("X8+Wq", out(x8, wq)),
                        ("X8+Wg", out(x8, rounded[i])), ("X10", out(x10, w)), ("X10+Wq", out(x10, wq)), ("X10+Wg", out(x10, rounded[i]))]:
            s = sums.setdefault((i, name), [0.0, 0.0])
            s[0] += float(((y - ref) ** 2).sum())
            s[1] += float((ref ** 2).sum())
    for path in shots[16:32]:
        darknet.forward(model, photos.load(str(path))[0].astype(np.float32), measure)
    names = ["Wq", "Wg", "X8", "X8+Wq", "X8+Wg", "X10", "X10+Wq", "X10+Wg"]
    print("layer " + " ".join(f"{n:>8}" for n in names))
    for i in sorted(layers):
        print(f"{i:5} " + " ".join(f"{np.sqrt(sums[(i, n)][0] / sums[(i, n)][1]):8.2e}" for n in names))


def leaky_out(y, b, shape):
    y = y.reshape(-1, shape[1], shape[2]) + b[:, None, None]
    return np.where(y > 0, y, np.float32(0.1) * y)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", required=True, help="convolutions to round by GPTQ, e.g. 2,6,8")
    p.add_argument("--a10", default="2,4,6,8,13", help="the table's 10-bit layers (default: the shipped table's)")
    p.add_argument("--fp32", default="0,15,22", help="the table's layers out of INT8 (default: the shipped table's)")
    p.add_argument("--cfg", default=str(ROOT / "weights/yolov3-tiny.cfg"))
    p.add_argument("--weights", default=str(ROOT / "weights/yolov3-tiny.weights"))
    p.add_argument("--table", default=str(ROOT / "weights/yolov3-tiny.int8"), help="ranges from this table")
    p.add_argument("--photos", default=str(ROOT / "eval-photos/calib"), help="H from these (never the eval part)")
    p.add_argument("--damp", type=float, default=0.01)
    p.add_argument("--out", help="directory for gptq.weights and gptq.int8")
    p.add_argument("--errors", action="store_true", help="print each layer's output errors instead (see above)")
    a = p.parse_args()
    ints = lambda s: {int(v) for v in s.split(",") if v}
    layers, a10, fp32 = ints(a.layers), ints(a.a10), ints(a.fp32)
    model = darknet.load(a.cfg, a.weights)
    ranges = {}
    for line in open(a.table):
        f = line.split()
        if f and f[0] == "layer":
            ranges[int(f[1])] = (float(f[3]), float(f[5]))
    convs = {l.index: l for l in model.layers if l.kind == "conv"}
    for i in layers:
        if i not in convs or i not in ranges or i in fp32:
            sys.exit(f"--layers: {i} is not an INT8 convolution of the table")
    hs = {}

    def visit(i, x):
        if i in layers:
            k = convs[i].params["size"]
            cols = darknet.im2col(quantized(x, *ranges[i], 1023 if i in a10 else 255), k, k // 2).astype(np.float64)
            hs[i] = hs.get(i, 0) + cols @ cols.T
    shots = photos.photos_in(a.photos)
    if a.errors:
        return errors(model, convs, layers, ranges, shots, hs, visit)
    if not a.out:
        sys.exit("--out DIR is required (or --errors)")
    for path in shots:
        darknet.forward(model, photos.load(str(path))[0].astype(np.float32), visit)
    rounded = {}
    for i in sorted(layers):
        q, scale, changed = gptq(convs[i].weight.astype(np.float64), hs[i], a.damp)
        rounded[i] = (q * scale[:, None]).reshape(convs[i].weight.shape)
        print(f"layer {i}: {q.shape[1]} columns, {100 * changed:.1f}% of its weights rounded the other way "
              f"than to the nearest step (H from {len(shots)} photos)")
    # Unfold each layer back through its batch norm, as darknet.py folds it, into a copy of the file.
    raw = bytearray(Path(a.weights).read_bytes())
    major, minor = np.frombuffer(bytes(raw[:8]), "<i4")
    pos = 12 + (8 if major * 10 + minor >= 2 else 4)
    sections = [s for s in darknet.parse_cfg(a.cfg) if s[0] not in ("net", "network")]
    for index, (kind, opt) in enumerate(sections):
        if kind != "convolutional":
            continue
        layer, n = convs[index], convs[index].weight.shape[0]
        factor = np.ones(n)
        pos += 4 * n
        if int(opt.get("batch_normalize", 0)):
            gamma = np.frombuffer(bytes(raw[pos:pos + 4 * n]), "<f4").astype(np.float64)
            var = np.frombuffer(bytes(raw[pos + 8 * n:pos + 12 * n]), "<f4").astype(np.float64)
            factor = gamma / (np.sqrt(var) + darknet.BN_EPS)
            pos += 12 * n
        if index in rounded:
            raw[pos:pos + 4 * layer.weight.size] = (rounded[index] / factor[:, None, None, None]).astype("<f4").tobytes()
        pos += 4 * layer.weight.size
    if pos != len(raw):
        sys.exit(f"{a.weights}: {len(raw)} bytes, the cfg reads {pos}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gptq.weights").write_bytes(bytes(raw))
    lines = []
    for line in open(a.table):
        f = line.split()
        if f and f[0] == "weights":
            line = f"weights {fingerprint(bytes(raw))}\n"
        elif f and f[0] == "layer":
            i = int(f[1])
            mark = " fp32" if i in fp32 else " a10" if i in a10 else ""
            line = " ".join(f[:8]) + mark + "\n"
        lines.append(line)
    (out / "gptq.int8").write_text("".join(lines))
    print(f"wrote {out / 'gptq.weights'} and {out / 'gptq.int8'}")


main()
