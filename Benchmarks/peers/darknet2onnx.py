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
            if p["activation"] == "leaky":
                nodes.append(helper.make_node("LeakyRelu", [conv_out], [out],
                                              name=f"{out}.leaky", alpha=0.1))
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
            if len(src) == 1:
                out = src[0]  # a single-input route is just an alias
            else:
                nodes.append(helper.make_node("Concat", src, [out], name=out, axis=1))
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
