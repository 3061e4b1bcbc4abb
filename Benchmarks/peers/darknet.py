"""Darknet cfg + weights reader shared by the ONNX and ncnn converters, and a numpy forward of
the layers they read (for the INT8 experiments in scripts/).

`load(cfg, weights)` returns a `Model`: the input shape and a list of layers in cfg
order, each with the indices of the layers it reads (-1 = network input), its output
shape (c, h, w) and, for convolutions, float32 OIHW weights and bias with batch norm
already folded in. The heads are the layers feeding each [yolo] section.
"""

from dataclasses import dataclass, field

import numpy as np

BN_EPS = 0.000001  # Darknet adds it to sqrt(var), not to var


@dataclass
class Layer:
    index: int
    kind: str  # conv | maxpool | upsample | route | shortcut | reorg | yolo
    inputs: list
    shape: tuple  # output (c, h, w)
    params: dict = field(default_factory=dict)
    weight: np.ndarray = None  # conv: (out, in/groups, k, k) float32
    bias: np.ndarray = None  # conv: (out,) float32

    @property
    def name(self):
        return f"{self.kind}{self.index}"


@dataclass
class Model:
    input_shape: tuple  # (c, h, w)
    layers: list
    heads: list  # indices of the layers whose outputs are the model outputs
    version: tuple  # weights header (major, minor, revision)
    seen: int


def parse_cfg(path):
    sections = []
    with open(path) as f:
        for raw in f:
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if line.startswith("["):
                sections.append((line.strip("[]").strip().lower(), {}))
            else:
                key, value = line.split("=", 1)
                sections[-1][1][key.strip()] = value.strip()
    return sections


class _WeightReader:
    def __init__(self, path):
        self.data = np.fromfile(path, dtype=np.uint8)
        self.pos = 0

    def take(self, dtype, count):
        nbytes = np.dtype(dtype).itemsize * count
        if self.pos + nbytes > len(self.data):
            raise ValueError("weights file is shorter than the cfg requires")
        out = self.data[self.pos:self.pos + nbytes].view(dtype).copy()
        self.pos += nbytes
        return out

    def header(self):
        major, minor, revision = (int(v) for v in self.take("<i4", 3))
        seen_type = "<i8" if major * 10 + minor >= 2 else "<i4"
        return (major, minor, revision), int(self.take(seen_type, 1)[0])


def _relative(index, value):
    value = int(value)
    return index + value if value < 0 else value


def load(cfg_path, weights_path):
    sections = parse_cfg(cfg_path)
    if not sections or sections[0][0] not in ("net", "network"):
        raise ValueError(f"{cfg_path}: first section must be [net]")
    net = sections[0][1]
    input_shape = (int(net.get("channels", 3)), int(net["height"]), int(net["width"]))

    reader = _WeightReader(weights_path)
    version, seen = reader.header()

    layers, heads = [], []
    for index, (kind, opt) in enumerate(sections[1:]):
        prev = index - 1
        c, h, w = layers[prev].shape if prev >= 0 else input_shape
        if kind in ("convolutional", "conv"):
            layers.append(_conv(index, prev, (c, h, w), opt, reader))
        elif kind in ("maxpool", "max"):
            layers.append(_maxpool(index, prev, (c, h, w), opt))
        elif kind == "upsample":
            stride = int(opt.get("stride", 2))
            if stride < 0:
                raise NotImplementedError("upsample with negative stride (downsampling)")
            layers.append(Layer(index, "upsample", [prev], (c, h * stride, w * stride),
                                {"stride": stride, "scale": float(opt.get("scale", 1))}))
        elif kind == "route":
            # groups=G group_id=K: each input's K-th of G equal channel slices (CSP blocks).
            groups, group_id = int(opt.get("groups", 1)), int(opt.get("group_id", 0))
            srcs = [_relative(index, v) for v in opt["layers"].split(",")]
            shapes = [layers[s].shape for s in srcs]
            if len({s[1:] for s in shapes}) != 1:
                raise ValueError(f"route {index}: inputs differ in size {shapes}")
            if any(s[0] % groups for s in shapes) or not 0 <= group_id < groups:
                raise ValueError(f"route {index}: groups={groups} group_id={group_id} for {shapes}")
            layers.append(Layer(index, "route", srcs, (sum(s[0] // groups for s in shapes),) + shapes[0][1:],
                                {"groups": groups, "group_id": group_id}))
        elif kind == "shortcut":
            # out = prev + from over their common channels (the rest is prev's), then the activation.
            src = _relative(index, opt["from"].split(",")[0])
            if "," in opt["from"] or opt.get("weights_type", "none") != "none":
                raise NotImplementedError(f"shortcut {index}: several sources or weights")
            if layers[src].shape[1:] != (h, w):
                raise NotImplementedError(f"shortcut {index}: sizes differ")
            activation = opt.get("activation", "linear")
            _check_activation(index, activation)
            layers.append(Layer(index, "shortcut", [prev, src], (c, h, w), {"activation": activation}))
        elif kind == "reorg":
            stride = int(opt.get("stride", 1))
            if int(opt.get("reverse", 0)) or h % stride or w % stride:
                raise NotImplementedError(f"reorg {index}: reverse, or a size not divisible by the stride")
            layers.append(Layer(index, "reorg", [prev], (c * stride * stride, h // stride, w // stride),
                                {"stride": stride}))
        elif kind in ("yolo", "region", "detection"):
            layers.append(Layer(index, "yolo", [prev], (c, h, w)))
            heads.append(prev)
        else:
            raise NotImplementedError(f"layer {index}: [{kind}] is not supported")

    left = len(reader.data) - reader.pos
    if left:
        raise ValueError(f"{weights_path}: {left} bytes left after the last layer")
    return Model(input_shape, layers, heads, version, seen)


ACTIVATIONS = ("leaky", "linear", "logistic", "mish", "swish", "relu")


def _check_activation(index, activation):
    if activation not in ACTIVATIONS:
        raise NotImplementedError(f"layer {index}: activation {activation}")


def reorg_indices(c, h, w, stride):
    """Darknet's reorg (reverse=0) as a gather: flattened output element n is flattened input
    element indices[n]. Its reorg_cpu runs with forward=0, out[in_index] = x[out_index]: n runs
    over (c, h, w) in the input's order, and the source reads the input as (c/s^2, h*s, w*s)."""
    out_c = c // (stride * stride)
    k, j, i = np.meshgrid(np.arange(c), np.arange(h), np.arange(w), indexing="ij")
    c2, offset = k % out_c, k // out_c
    w2, h2 = i * stride + offset % stride, j * stride + offset // stride
    source = w2 + w * stride * (h2 + h * stride * c2)
    return source.reshape(-1).astype(np.int64)


def _conv(index, prev, in_shape, opt, reader):
    c, h, w = in_shape
    n = int(opt["filters"])
    size = int(opt.get("size", 1))
    stride = int(opt.get("stride", 1))
    groups = int(opt.get("groups", 1))
    pad = size // 2 if int(opt.get("pad", 0)) else int(opt.get("padding", 0))
    activation = opt.get("activation", "logistic")
    _check_activation(index, activation)
    if int(opt.get("dilation", 1)) != 1:
        raise NotImplementedError(f"conv {index}: dilation")
    if c % groups or n % groups:
        raise ValueError(f"conv {index}: groups={groups} does not divide {c} -> {n}")

    bias = reader.take("<f4", n).astype(np.float64)
    if int(opt.get("batch_normalize", 0)):
        scales = reader.take("<f4", n).astype(np.float64)
        mean = reader.take("<f4", n).astype(np.float64)
        var = reader.take("<f4", n).astype(np.float64)
    weight = reader.take("<f4", n * (c // groups) * size * size)
    weight = weight.reshape(n, c // groups, size, size).astype(np.float64)
    if int(opt.get("batch_normalize", 0)):
        factor = scales / (np.sqrt(var) + BN_EPS)
        weight = weight * factor[:, None, None, None]
        bias = bias - mean * factor

    out_h = (h + 2 * pad - size) // stride + 1
    out_w = (w + 2 * pad - size) // stride + 1
    return Layer(index, "conv", [prev], (n, out_h, out_w),
                 {"size": size, "stride": stride, "pad": pad, "groups": groups,
                  "activation": activation},
                 weight.astype(np.float32), bias.astype(np.float32))


def _maxpool(index, prev, in_shape, opt):
    c, h, w = in_shape
    size = int(opt.get("size", 1))
    stride = int(opt.get("stride", 1))
    padding = int(opt.get("padding", size - 1))
    out_h = (h + padding - size) // stride + 1
    out_w = (w + padding - size) // stride + 1
    # Windows start at -padding/2; taps past the input are skipped, never read as zero.
    begin = padding // 2
    end_h = max(0, (out_h - 1) * stride + size - begin - h)
    end_w = max(0, (out_w - 1) * stride + size - begin - w)
    return Layer(index, "maxpool", [prev], (c, out_h, out_w),
                 {"size": size, "stride": stride, "pads": (begin, begin, end_h, end_w)})


def im2col(x, k, pad):
    """The (c*k*k, h*w) column matrix of a stride-1 k x k convolution on x (c, h, w), zero padding."""
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    cols = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(1, 2))  # c, h, w, k, k
    return cols.transpose(0, 3, 4, 1, 2).reshape(x.shape[0] * k * k, -1)


def forward(model, x, visit=None, conv=None):
    """Each layer's output (float32) of the network on x ((c, h, w) float32): convolutions with a
    linear or leaky activation, max pools, upsample, plain routes. visit(index, input) is called
    before each convolution; conv(input, layer) gives its output before the activation (default:
    float32 im2col GEMM + bias; the activation is applied in conv's dtype, then cast to float32)."""
    def gemm(a, layer):
        cols = im2col(a, layer.params["size"], layer.params["pad"])
        y = layer.weight.reshape(layer.weight.shape[0], -1) @ cols
        return y.reshape(-1, a.shape[1], a.shape[2]) + layer.bias[:, None, None]
    conv = conv or gemm
    outs = []
    for layer in model.layers:
        ins = [outs[i] if i >= 0 else x for i in layer.inputs]
        if layer.kind == "conv":
            if layer.params["stride"] != 1 or layer.params["groups"] != 1:
                raise NotImplementedError(f"conv {layer.index}: only stride 1, ungrouped")
            if visit:
                visit(layer.index, ins[0])
            y = conv(ins[0], layer)
            if layer.params["activation"] == "leaky":
                y = np.where(y > 0, y, 0.1 * y)
            elif layer.params["activation"] != "linear":
                raise NotImplementedError(f"conv {layer.index}: activation {layer.params['activation']}")
            outs.append(y.astype(np.float32))
        elif layer.kind == "maxpool":
            (top, left, bottom, right), size, stride = layer.params["pads"], layer.params["size"], layer.params["stride"]
            ap = np.pad(ins[0], ((0, 0), (top, bottom), (left, right)), constant_values=-np.inf)
            c, oh, ow = layer.shape
            y = np.full((c, oh, ow), -np.inf, np.float32)
            for i in range(size):
                for j in range(size):
                    y = np.maximum(y, ap[:, i:i + stride * oh:stride, j:j + stride * ow:stride])
            outs.append(y)
        elif layer.kind == "upsample":
            outs.append(ins[0].repeat(2, axis=1).repeat(2, axis=2))
        elif layer.kind == "route" and layer.params.get("groups", 1) == 1:
            outs.append(np.concatenate(ins, axis=0))
        elif layer.kind == "yolo":
            outs.append(ins[0])
        else:
            raise NotImplementedError(f"layer {layer.index}: {layer.kind}")
    return outs
