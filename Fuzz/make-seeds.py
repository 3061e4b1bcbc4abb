#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora (Fuzz/corpus/{cfg,weights,image,int8}); run from the repo root.
cfg: the weights fuzzer's three cfgs, two cfgs without weighted layers (one of YOLOv2's [reorg] and
[region]), yolov3-tiny.cfg if present.
weights: for each of the weights fuzzer's cfgs, its selector byte and a well-formed weights file
(and a short and an old-header variant). image: small PNG/JPEG test fixtures. int8: the shipped
calibration table's first lines, as format 1, and as format 2 with short GPTQ `rounding` lines.
Also the inputs of issue #16: cfgs with CRLF and lone-CR line ends and a UTF-8 byte-order mark,
and 137-byte PNGs whose tEXt / iTXt / zTXt chunk claims 2^31 - 1 bytes; cfgs whose numbers overflowed
the shape arithmetic. A progressive JPEG of 640 scans (over the scan limit: the fuzzer mutates
scan headers and counts from it) and one of 64 (under it)."""
import os, random, re, shutil, struct, subprocess, zlib

root = os.getcwd()
src = open("Fuzz/WeightsFuzzer.swift").read()
cfgs = [re.sub(r"(?m)^    ", "", c).strip() + "\n" for c in re.findall(r'"""\n(.*?)    """', src, re.S)]
counts = [int(n) for n in re.search(r"fuzzParameterCounts = \[([0-9, ]+)\]", src).group(1).split(",")]
assert len(cfgs) == 3, len(cfgs)

def params(cfg):
    """Float count per the weights layout: per conv, biases (+ scales, means, variances) + weights."""
    secs = re.split(r"(?m)^\[", cfg)[1:]
    c = None; shapes = []; total = 0
    for s in secs:
        name = s.split("]")[0]
        kv = dict(l.split("=", 1) for l in s.splitlines()[1:] if "=" in l)
        if name == "net": c = int(kv["channels"]); continue
        if name == "convolutional":
            f, k = int(kv.get("filters", 1)), int(kv.get("size", 1))
            total += f * (4 if kv.get("batch_normalize") == "1" else 1) + f * c * k * k
            c = f
    return total

out = "Fuzz/corpus"
for i, cfg in enumerate(cfgs):
    open(f"{out}/cfg/small{i}.cfg", "w").write(cfg)
open(f"{out}/cfg/noweights.cfg", "w").write(
    "[net]\nwidth=8\nheight=6\nchannels=2\n[maxpool]\nsize=2\nstride=2\n[upsample]\nstride=2\n"
    "[route]\nlayers=-1,-2\n[maxpool]\nsize=2\nstride=1\n[yolo]\nmask=0\nanchors=3,4\nclasses=1\nnum=1\n")
# YOLOv2's sections: space to depth, then a [region] head (anchors in grid cells, softmax).
open(f"{out}/cfg/region-reorg.cfg", "w").write(
    "[net]\nwidth=8\nheight=8\nchannels=4\nletter_box=1\n[reorg]\nstride=2\n[maxpool]\nsize=2\nstride=2\n"
    "[region]\nanchors=0.5,1,2,3\nclasses=3\ncoords=4\nnum=2\nsoftmax=1\nthresh=.6\n")
if os.path.exists("weights/yolov3-tiny.cfg"):
    shutil.copy("weights/yolov3-tiny.cfg", f"{out}/cfg/yolov3-tiny.cfg")
# Line ends and byte-order marks from other systems (the parser splits LF, CRLF and CR alike).
small = cfgs[0].encode()
open(f"{out}/cfg/small0_crlf.cfg", "wb").write(small.replace(b"\n", b"\r\n"))
open(f"{out}/cfg/small0_cr.cfg", "wb").write(small.replace(b"\n", b"\r"))
open(f"{out}/cfg/small0_bom.cfg", "wb").write(b"\xef\xbb\xbf" + small)
open(f"{out}/cfg/small0_bom_crlf.cfg", "wb").write(b"\xef\xbb\xbf" + small.replace(b"\n", b"\r\n"))
# Numbers that overflowed the shape arithmetic (CI's fuzz run of stop 45; the first found with
# Fuzz/cfg.dict): a kernel size past 32 bits, a pool padding and an upsample stride near Int.max.
open(f"{out}/cfg/overflow-conv-size.cfg", "wb").write(
    small.replace(b"\n", b"\r").replace(b"size=1\r", b"size=21073741824\r", 1))
open(f"{out}/cfg/overflow-pool-upsample.cfg", "w").write(
    "[net]\nwidth=8\nheight=8\nchannels=3\n[maxpool]\nsize=2\nstride=2\npadding=9223372036854775807\n"
    "[upsample]\nstride=4611686018427387904\n")

rng = random.Random(1)
for i, cfg in enumerate(cfgs):
    n = params(cfg)
    assert n == counts[i], (i, n, counts[i])  # keep WeightsFuzzer.swift's counts in step
    floats = struct.pack(f"<{n}f", *[abs(rng.gauss(0, 0.3)) + 0.01 for _ in range(n)])
    new = bytes([i]) + struct.pack("<iiiQ", 0, 2, 0, 32013312) + floats
    old = bytes([i]) + struct.pack("<iiii", 0, 1, 0, 0) + floats
    open(f"{out}/weights/cfg{i}.seed", "wb").write(new)
    open(f"{out}/weights/cfg{i}_old_header.seed", "wb").write(old)
    open(f"{out}/weights/cfg{i}_short.seed", "wb").write(new[: len(new) // 2])
    # fit mode (bit 6): the harness pads or cuts the weights to the size the cfg needs
    open(f"{out}/weights/cfg{i}_fit.seed", "wb").write(bytes([0x40 | i]) + new[1:64])

for name in ["gray1.png", "palette2_interlaced.png", "gray8_trns.png", "exif6.png", "palette8_trns.png",
             "graya16.png", "rgb8.png", "rgb8_interlaced.png", "gray.jpg", "cmyk.jpg", "progressive.jpg",
             "rgb.jpg", "exif6_mm.jpg", "many_scans.jpg"]:
    shutil.copy(f"Tests/YOLOImageTests/Fixtures/{name}", f"{out}/image/{name}")

# Progressive JPEGs of one-coefficient scans (scripts/make-jpeg-scans.py): 64 scans, under the limit.
subprocess.run(["python3", "scripts/make-jpeg-scans.py", f"{out}/image/scans64.jpg", "--size", "24x16", "--passes", "1"],
               check=True, stdout=subprocess.DEVNULL)

# A 4x4 PNG whose text chunk claims 2^31 - 1 bytes, 96 of which follow (137 bytes in all).
def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
ihdr = png_chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0))
for kind in [b"tEXt", b"iTXt", b"zTXt"]:
    png = b"\x89PNG\r\n\x1a\n" + ihdr + struct.pack(">I", 0x7FFFFFFF) + kind + b"Comment\0" + b"x" * 88
    assert len(png) == 137
    open(f"{out}/image/huge_{kind.decode()}.png", "wb").write(png)

# INT8 tables: the shipped table's header and layer lines, without and with rounding lines
# (9 + 1 weights of layer 2 in two lines, 4 of layer 6; codes four to a byte from the low bits).
import base64
head = [l for l in open("weights/yolov3-tiny.int8").read().splitlines() if not l.startswith("rounding")][:14]
os.makedirs(f"{out}/int8", exist_ok=True)
open(f"{out}/int8/shipped-v1.seed", "w").write("\n".join(["yolo-swift int8 1"] + head[1:]) + "\n")
rounding = [f"rounding 2 0 9 {base64.b64encode(bytes([0x44, 0x04, 0x01])).decode()}",
            f"rounding 2 9 1 {base64.b64encode(bytes([1])).decode()}", f"rounding 6 0 4 {base64.b64encode(bytes([0x92])).decode()}"]
open(f"{out}/int8/rounding-v2.seed", "w").write("\n".join(["yolo-swift int8 2"] + head[1:] + rounding) + "\n")
