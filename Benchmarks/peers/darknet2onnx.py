#!/usr/bin/env python3
"""Convert a Darknet cfg + weights to ONNX.

Input "data" is (1, C, H, W) float32; the outputs are the raw tensors feeding each
[yolo] layer, named after their Darknet layer ("conv15", "conv22" for yolov3-tiny).
"""

import argparse
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import darknet

OPSET = 13


def convert(model: darknet.Model):
    nodes, inits = [], []
    blob = {-1: "data"}

    def const(name, values, dtype=np.int64):
        inits.append(numpy_helper.from_array(np.array(values, dtype=dtype), name))
        return name

    def channels(src, begin, end, out):
        """src[:, begin:end]."""
        nodes.append(helper.make_node("Slice", [src, const(f"{out}.b", [begin]), const(f"{out}.e", [end]),
                                               const(f"{out}.a", [1])], [out], name=out))
        return out

    def activate(src, out, activation):
        """Darknet's activation of src into out (linear: src itself)."""
        if activation == "linear":
            return src
        if activation == "leaky":
            nodes.append(helper.make_node("LeakyRelu", [src], [out], name=f"{out}.leaky", alpha=0.1))
        elif activation == "relu":
            nodes.append(helper.make_node("Relu", [src], [out], name=f"{out}.relu"))
        elif activation == "logistic":
            nodes.append(helper.make_node("Sigmoid", [src], [out], name=f"{out}.logistic"))
        elif activation == "swish":  # x * sigmoid(x)
            nodes.append(helper.make_node("Sigmoid", [src], [f"{out}.sig"], name=f"{out}.sig"))
            nodes.append(helper.make_node("Mul", [src, f"{out}.sig"], [out], name=f"{out}.swish"))
        elif activation == "mish":  # x * tanh(softplus(x))
            nodes.append(helper.make_node("Softplus", [src], [f"{out}.sp"], name=f"{out}.sp"))
            nodes.append(helper.make_node("Tanh", [f"{out}.sp"], [f"{out}.tanh"], name=f"{out}.tanh"))
            nodes.append(helper.make_node("Mul", [src, f"{out}.tanh"], [out], name=f"{out}.mish"))
        else:
            raise NotImplementedError(f"activation {activation}")
        return out

    for layer in model.layers:
        src = [blob[i] for i in layer.inputs]
        out = layer.name
        p = layer.params
        if layer.kind == "conv":
            w_name, b_name = f"{out}.weight", f"{out}.bias"
            inits += [numpy_helper.from_array(layer.weight, w_name),
                      numpy_helper.from_array(layer.bias, b_name)]
            conv_out = out if p["activation"] == "linear" else f"{out}.pre"
            k, s, pad = p["size"], p["stride"], p["pad"]
            nodes.append(helper.make_node(
                "Conv", [src[0], w_name, b_name], [conv_out], name=out,
                kernel_shape=[k, k], strides=[s, s], pads=[pad] * 4, group=p["groups"]))
            out = activate(conv_out, out, p["activation"])
        elif layer.kind == "maxpool":
            k, s = p["size"], p["stride"]
            # ONNX MaxPool skips padded taps, as Darknet does.
            nodes.append(helper.make_node("MaxPool", src, [out], name=out, kernel_shape=[k, k],
                                          strides=[s, s], pads=list(p["pads"])))
        elif layer.kind == "upsample":
            scales = f"{out}.scales"
            inits.append(numpy_helper.from_array(
                np.array([1, 1, p["stride"], p["stride"]], dtype=np.float32), scales))
            resized = out if p["scale"] == 1 else f"{out}.pre"
            nodes.append(helper.make_node("Resize", [src[0], "", scales], [resized], name=out,
                                          mode="nearest", coordinate_transformation_mode="asymmetric",
                                          nearest_mode="floor"))
            if p["scale"] != 1:
                factor = f"{out}.factor"
                inits.append(numpy_helper.from_array(np.array(p["scale"], dtype=np.float32), factor))
                nodes.append(helper.make_node("Mul", [resized, factor], [out], name=f"{out}.scale"))
        elif layer.kind == "route":
            g, gid = p["groups"], p["group_id"]
            if g != 1:  # each input's group_id-th of groups channel slices
                src = [channels(b, gid * model.layers[i].shape[0] // g, (gid + 1) * model.layers[i].shape[0] // g,
                                f"{out}.part{n}" if len(src) > 1 else out)
                       for n, (b, i) in enumerate(zip(src, layer.inputs))]
            if len(src) == 1:
                out = src[0]  # a single-input route is just an alias (or the slice)
            else:
                nodes.append(helper.make_node("Concat", src, [out], name=out, axis=1))
        elif layer.kind == "shortcut":
            cp, cf = model.layers[layer.inputs[0]].shape[0], model.layers[layer.inputs[1]].shape[0]
            total = out if p["activation"] == "linear" else f"{out}.sum"
            if cp == cf:
                nodes.append(helper.make_node("Add", src, [total], name=total))
            elif cf > cp:  # only prev's channels of from
                nodes.append(helper.make_node("Add", [src[0], channels(src[1], 0, cp, f"{out}.from")], [total], name=total))
            else:  # from adds to prev's first cf channels; the rest are prev's
                nodes.append(helper.make_node("Add", [channels(src[0], 0, cf, f"{out}.head"), src[1]], [f"{out}.added"],
                                              name=f"{out}.added"))
                nodes.append(helper.make_node("Concat", [f"{out}.added", channels(src[0], cf, cp, f"{out}.tail")], [total],
                                              name=total, axis=1))
            out = activate(total, out, p["activation"])
        elif layer.kind == "reorg":
            c, h, w = model.layers[layer.inputs[0]].shape if layer.inputs[0] >= 0 else model.input_shape
            flat = f"{out}.flat"
            nodes.append(helper.make_node("Reshape", [src[0], const(f"{out}.all", [-1])], [flat], name=flat))
            nodes.append(helper.make_node("Gather", [flat, const(f"{out}.idx", darknet.reorg_indices(c, h, w, p["stride"]))],
                                          [f"{out}.gathered"], name=f"{out}.gathered", axis=0))
            nodes.append(helper.make_node("Reshape", [f"{out}.gathered", const(f"{out}.shape", [1, *layer.shape])], [out], name=out))
        elif layer.kind == "yolo":
            out = src[0]
        blob[layer.index] = out

    c, h, w = model.input_shape
    inputs = [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, c, h, w])]
    outputs = [helper.make_tensor_value_info(blob[i], TensorProto.FLOAT,
                                             [1, *model.layers[i].shape]) for i in model.heads]
    graph = helper.make_graph(nodes, "darknet", inputs, outputs, inits)
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                   producer_name="darknet2onnx")
    onnx_model.ir_version = 8  # readable by older runtimes too
    onnx.checker.check_model(onnx_model, full_check=True)
    return onnx_model


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("cfg")
    ap.add_argument("weights")
    ap.add_argument("output", help="path of the .onnx file to write")
    args = ap.parse_args(argv)
    model = darknet.load(args.cfg, args.weights)
    onnx.save(convert(model), args.output)
    heads = ", ".join(f"{model.layers[i].name} {model.layers[i].shape}" for i in model.heads)
    print(f"wrote {args.output}: {len(model.layers)} layers, heads {heads}", file=sys.stderr)


if __name__ == "__main__":
    main()
