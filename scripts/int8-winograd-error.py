#!/usr/bin/env python3
"""Would INT8 Winograd be as accurate as the INT8 im2col the engine runs? Measured per layer on
real activations (a numpy yolov3-tiny forward in float64 on the photos given), for each 3x3
convolution after the first: the input quantized as the shipped table says (u8, per tensor,
weights/yolov3-tiny.int8); im2col INT8 as the engine does it (s8 weights per filter); and
Winograd F(2x2) / F(4x4) with the input's (q - zero point) transformed exactly in integers (V,
int16), the kernel transformed in float (U = G g G^T) and quantized per (filter, position) to
UBITS-bit signed integers, int32 sums over the channels, the output transform in float. Prints
each one's RMS error relative to the FP32 output's RMS, and the largest |V| and |sum| seen (int16
and int32 headroom).

  Benchmarks/peers/.venv/bin/python scripts/int8-winograd-error.py ../shared/images/dog.jpg samples/coffee.png
"""
import sys
import numpy as np
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent / "Benchmarks/peers"))
import darknet, photos

m = darknet.load("weights/yolov3-tiny.cfg", "weights/yolov3-tiny.weights")
table = {}
for line in open("weights/yolov3-tiny.int8"):
    f = line.split()
    if f and f[0] == "layer":
        table[int(f[1])] = (float(f[3]), float(f[5]))

def im2col_conv(x, w, pad):
    c, h, wd = x.shape
    n, _, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    cols = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(1, 2))  # c, h, w, k, k
    return np.einsum("chwij,ncij->nhw", cols, w, optimize=True)

def forward(x):
    inputs = {}
    conv = lambda a, L: im2col_conv(a.astype(np.float64), L.weight.astype(np.float64), L.params["pad"]) + L.bias[:, None, None]
    darknet.forward(m, x, visit=inputs.__setitem__, conv=conv)
    return inputs

F = {
    4: (np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
                  [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], np.int64),
        np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6],
                  [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]]),
        np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], np.float64)),
    2: (np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.int64),
        np.array([[1, 0, 0], [.5, .5, .5], [.5, -.5, .5], [0, 0, 1]]),
        np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float64)),
}

def winograd_int8(qd, sx, w, mt, ubits=8):
    BT, G, AT = F[mt]
    a = mt + 2
    c, h, wd = qd.shape
    n = w.shape[0]
    th, tw = -(-h // mt), -(-wd // mt)
    xp = np.zeros((c, th * mt + 2, tw * mt + 2), np.int64)
    xp[:, 1:h + 1, 1:wd + 1] = qd
    tiles = np.lib.stride_tricks.sliding_window_view(xp, (a, a), axis=(1, 2))[:, ::mt, ::mt]  # c, th, tw, a, a
    V = np.einsum("ij,cxyjk,lk->ilcxy", BT, tiles, BT, optimize=True)  # a, a, c, th, tw (exact ints)
    U = np.einsum("ij,ncjk,lk->ilnc", G, w.astype(np.float64), G, optimize=True)  # a, a, n, c
    lim = 2 ** (ubits - 1) - 1
    su = np.abs(U).max(axis=3, keepdims=True) / lim
    su[su == 0] = 1
    Uq = np.round(U / su).astype(np.int64)
    M = np.einsum("ilnc,ilcxy->ilnxy", Uq, V, optimize=True)  # exact int sums
    big = np.abs(M).max()
    Mf = M * su[..., None] * sx  # dequantized per (filter, position)
    Y = np.einsum("pi,ilnxy,ql->nxpyq", AT, Mf, AT, optimize=True).reshape(n, th * mt, tw * mt)
    return Y[:, :h, :wd], int(np.abs(V).max()), int(big)

for path in sys.argv[1:]:
    x, _ = photos.load(path)
    inputs = forward(x.astype(np.float32))
    print(path)
    for i, xin in inputs.items():
        L = m.layers[i]
        if L.params["size"] != 3 or i not in table or i == 0:
            continue
        lo, hi = table[i]
        sx = (hi - lo) / 255
        zp = np.round(-lo / sx)
        q = np.clip(np.round(xin / sx) + zp, 0, 255)
        qd = (q - zp).astype(np.int64)
        w = L.weight.astype(np.float64)
        ref = im2col_conv(xin.astype(np.float64), w, 1)
        sw = np.abs(w).reshape(w.shape[0], -1).max(1) / 127
        wq = np.round(w / sw[:, None, None, None])
        yA = im2col_conv(qd.astype(np.float64), wq, 1) * (sw * sx)[:, None, None]
        norm = np.sqrt((ref ** 2).mean())
        line = f"  layer {i:2d} C={w.shape[1]:4d}: im2col int8 {np.sqrt(((yA - ref) ** 2).mean()) / norm:.4f}"
        for mt, ubits in [(2, 8), (4, 8), (4, 10), (4, 12)]:
            yB, vmax, mmax = winograd_int8(qd, sx, w, mt, ubits)
            line += f" | F({mt}x{mt}) U{ubits} {np.sqrt(((yB - ref) ** 2).mean()) / norm:.4f} (|V|<={vmax}, |sum|<={mmax:.2g})"
        print(line)
