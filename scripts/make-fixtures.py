#!/usr/bin/env python3
"""Derives the compact test fixtures from Darknet's reference outputs in ../shared/reference.

Run from the repo root: python3 scripts/make-fixtures.py  (needs numpy). The outputs are committed,
so tests never need ../shared. Formats (text, one value per line, floats as %.9g):
  <name>.samples: '# shape C H W' then lines 'index value' at fixed sampled positions,
                  then lines 'sum c value' with each channel's sum (float64).
  <name>_input_416.f32.gz: a whole input tensor, gzip'd (for inputs decoded from JPEG by Darknet's
                  own decoder, which ours cannot reproduce bit for bit).
"""
import gzip, os, sys
import numpy as np

REF = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "reference")
REPO = os.path.join(os.path.dirname(__file__), "..")

def samples(path, shape, out, n=512, seed=0):
    a = np.fromfile(path, "<f4")
    assert a.size == np.prod(shape), (path, a.size, shape)
    rng = np.random.default_rng(seed)
    idx = np.unique(np.concatenate([np.linspace(0, a.size - 1, n // 2).astype(int),
                                    rng.choice(a.size, n // 2, replace=False), [a.argmax(), a.argmin()]]))
    c, h, w = shape
    sums = a.reshape(c, h * w).astype(np.float64).sum(axis=1)
    with open(out, "w") as f:
        f.write(f"# shape {c} {h} {w}\n")
        for i in idx:
            f.write(f"{i} {a[i]:.9g}\n")
        for ci, s in enumerate(sums):
            f.write(f"sum {ci} {s:.17g}\n")

def main():
    eng = os.path.join(REPO, "Tests", "YOLOTests", "Fixtures")
    integ = os.path.join(REPO, "Tests", "IntegrationTests", "Fixtures")
    os.makedirs(eng, exist_ok=True); os.makedirs(integ, exist_ok=True)
    images = [("darknet", "dog"), ("darknet", "person"), ("skimage", "astronaut"), ("skimage", "chelsea"), ("skimage", "coffee")]
    for d, name in images:
        for layer, grid in ((15, 13), (22, 26)):
            target = eng if d == "darknet" else integ
            if True:
                samples(f"{REF}/{d}/{name}_conv{layer}.f32", (255, grid, grid), f"{target}/{name}_conv{layer}.samples")
        if d == "darknet":
            with open(f"{REF}/{d}/{name}_input_416.f32", "rb") as f, \
                 gzip.GzipFile(f"{eng}/{name}_input_416.f32.gz", "wb", mtime=0) as g:
                g.write(f.read())
        else:
            samples(f"{REF}/{d}/{name}_input_416.f32", (3, 416, 416), f"{integ}/{name}_input_416.samples", n=4096)
    index = {}
    for line in open(f"{REF}/darknet/dog_layers_index.txt"):
        if line.startswith("#"): continue
        p = line.split()
        index[int(p[0])] = (int(p[2]), int(p[3]), int(p[4]))
    for i, shape in index.items():
        samples(f"{REF}/darknet/dog_layer{i:02d}.f32", shape, f"{eng}/dog_layer{i:02d}.samples", n=256, seed=i)

if __name__ == "__main__":
    main()
