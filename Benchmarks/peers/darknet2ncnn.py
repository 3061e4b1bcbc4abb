#!/usr/bin/env python3
"""Convert a Darknet cfg + weights to ncnn's .param (text) and .bin.

Input blob "data" is (C, H, W); the output blobs are the raw tensors feeding each
[yolo] layer, named after their Darknet layer ("conv15", "conv22" for yolov3-tiny).
"""

import argparse
import struct
import sys
from collections import defaultdict

import numpy as np

import darknet

MAGIC = 7767517


def convert(model: darknet.Model):
    """Returns (param text, bin bytes, output blob names)."""
    entries = []  # [type, name, inputs, outputs, params]
    weights = bytearray()
    blob = {-1: "data"}

    c, h, w = model.input_shape
    entries.append(["Input", "data", [], ["data"], f"0={w} 1={h} 2={c}"])
    for layer in model.layers:
        src = [blob[i] for i in layer.inputs]
        out = layer.name
        p = layer.params
        if layer.kind == "conv":
            if p["activation"] not in ("leaky", "linear"):
                raise NotImplementedError(f"conv {layer.index}: activation {p['activation']}")
            k, s, pad, groups = p["size"], p["stride"], p["pad"], p["groups"]
            params = (f"0={layer.shape[0]} 1={k} 3={s} 4={pad} 5=1 6={layer.weight.size}")
            if p["activation"] == "leaky":
                params += " 9=2 -23310=1,1.000000e-01"
            kind = "Convolution"
            if groups > 1:
                kind = "ConvolutionDepthWise"
                params += f" 7={groups}"
            entries.append([kind, out, src, [out], params])
            # A zero tag word marks the weights as plain float32; the bias has no tag.
            weights += struct.pack("<I", 0) + layer.weight.astype("<f4").tobytes()
            weights += layer.bias.astype("<f4").tobytes()
        elif layer.kind == "maxpool":
            k, s = p["size"], p["stride"]
            top, left, bottom, right = p["pads"]
            # pad_mode 1 (valid): exactly these pads, filled with -FLT_MAX.
            entries.append(["Pooling", out, src, [out],
                            f"0=0 1={k} 2={s} 3={left} 13={top} 14={right} 15={bottom} 5=1"])
        elif layer.kind == "upsample":
            if p["scale"] != 1:
                raise NotImplementedError("upsample with scale != 1")
            f = float(p["stride"])
            entries.append(["Interp", out, src, [out], f"0=1 1={f:e} 2={f:e}"])
        elif layer.kind == "route":
            if p["groups"] != 1:
                raise NotImplementedError(f"route {layer.index}: groups")
            if len(src) == 1:
                out = src[0]
            else:
                entries.append(["Concat", out, src, [out], "0=0"])
        elif layer.kind == "yolo":
            out = src[0]
        else:
            raise NotImplementedError(f"layer {layer.index}: {layer.kind}")
        blob[layer.index] = out

    outputs = [blob[i] for i in model.heads]
    entries = _insert_splits(entries)
    blobs = {b for e in entries for b in e[3]}
    lines = [str(MAGIC), f"{len(entries)} {len(blobs)}"]
    for kind, name, ins, outs, params in entries:
        lines.append(f"{kind:<24} {name:<24} {len(ins)} {len(outs)} {' '.join(ins + outs)} {params}")
    return "\n".join(lines) + "\n", bytes(weights), outputs


def _insert_splits(entries):
    """ncnn wants each blob consumed once: fan-outs go through a Split layer."""
    consumers = defaultdict(int)
    for e in entries:
        for b in e[2]:
            consumers[b] += 1
    result, seen = [], defaultdict(int)
    for kind, name, ins, outs, params in entries:
        renamed = []
        for b in ins:
            if consumers[b] > 1:
                renamed.append(f"{b}_split{seen[b]}")
                seen[b] += 1
            else:
                renamed.append(b)
        result.append([kind, name, renamed, outs, params])
        for b in outs:
            if consumers[b] > 1:
                copies = [f"{b}_split{i}" for i in range(consumers[b])]
                result.append(["Split", f"{b}_split", [b], copies, ""])
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("cfg")
    ap.add_argument("weights")
    ap.add_argument("output", help="path prefix: writes PREFIX.param and PREFIX.bin")
    args = ap.parse_args(argv)
    model = darknet.load(args.cfg, args.weights)
    param, weights, outputs = convert(model)
    with open(args.output + ".param", "w") as f:
        f.write(param)
    with open(args.output + ".bin", "wb") as f:
        f.write(weights)
    print(f"wrote {args.output}.param/.bin: outputs {', '.join(outputs)}", file=sys.stderr)


if __name__ == "__main__":
    main()
