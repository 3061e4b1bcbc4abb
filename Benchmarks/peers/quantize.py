#!/usr/bin/env python3
"""INT8 models of the ONNX conversion, calibrated on the sample photos (samples/, letterboxed
as Darknet does: photos.py; or on the folder PEERS_CALIBRATION names: photos.py), for the
low-precision peers.

- OpenVINO: NNCF post-training quantization (`nncf.quantize`, its defaults: the PERFORMANCE
  preset, i.e. symmetric activations and weights, per-channel weights, min-max activation
  ranges, fast bias correction), of the ONNX model read by OpenVINO; saved as IR with the
  remaining float constants kept f32 (`compress_to_fp16=False`).
- ONNX Runtime: `onnxruntime.quantization.quantize_static`, QDQ format, per-channel weights,
  MinMax calibration, int8 activations and weights (its defaults otherwise), after its
  recommended pre-processing (`quant_pre_process`: ONNX shape inference, the shapes being static,
  and graph optimization).

Both go to models/ and are rebuilt when the cfg, the weights, the converters, this file,
photos.py or a calibration photo is newer than them.

    Benchmarks/peers/.venv/bin/python Benchmarks/peers/quantize.py [--force]
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import photos
import runtimes


def calibration_inputs(net_w=416, net_h=416):
    return [photos.load(p, net_w, net_h)[0][None] for p in photos.calibration_photos()]


def _sources(models):
    return [models["cfg"], models["weights"], runtimes.PEERS / "darknet.py", runtimes.PEERS / "darknet2onnx.py",
            Path(__file__).resolve(), runtimes.PEERS / "photos.py", *photos.calibration_photos()]


def openvino_int8(models, force=False):
    """Path of the NNCF-quantized OpenVINO IR (.xml; its .bin beside it)."""
    xml = runtimes.MODELS / (Path(models["onnx"]).stem + "-nncf-int8" + photos.calibration_tag() + ".xml")
    if force or runtimes._stale([xml, xml.with_suffix(".bin")], _sources(models)):
        import nncf
        import openvino as ov

        t0 = time.monotonic()
        print(f"quantize: NNCF {nncf.__version__} on {Path(models['onnx']).name} "
              f"({len(photos.calibration_photos())} calibration photos) -> {xml.name}", file=sys.stderr)
        model = ov.Core().read_model(str(models["onnx"]))
        data = calibration_inputs()
        quantized = nncf.quantize(model, nncf.Dataset(data), subset_size=len(data))
        ov.save_model(quantized, str(xml), compress_to_fp16=False)
        print(f"quantize: {xml.name} in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    return xml


class _Reader:
    """onnxruntime.quantization.CalibrationDataReader over the calibration photos."""

    def __init__(self, name):
        self.items = iter([{name: x} for x in calibration_inputs()])

    def get_next(self):
        return next(self.items, None)


def onnxruntime_int8(models, force=False):
    """Path of the statically quantized QDQ ONNX model."""
    out = runtimes.MODELS / (Path(models["onnx"]).stem + "-qdq-int8" + photos.calibration_tag() + ".onnx")
    if force or runtimes._stale([out], _sources(models)):
        import onnxruntime
        from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                              quant_pre_process, quantize_static)

        t0 = time.monotonic()
        print(f"quantize: onnxruntime {onnxruntime.__version__} quantize_static on {Path(models['onnx']).name} "
              f"({len(photos.calibration_photos())} calibration photos) -> {out.name}", file=sys.stderr)
        reader = type("Reader", (_Reader, CalibrationDataReader), {})("data")
        with tempfile.TemporaryDirectory() as tmp:
            prepared = Path(tmp) / "prepared.onnx"
            quant_pre_process(str(models["onnx"]), str(prepared), skip_symbolic_shape=True)  # static shapes
            quantize_static(str(prepared), str(out), reader, quant_format=QuantFormat.QDQ, per_channel=True,
                            calibrate_method=CalibrationMethod.MinMax,
                            activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
        print(f"quantize: {out.name} in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--force", action="store_true", help="rebuild even when up to date")
    args = ap.parse_args()
    models = runtimes.ensure_models()
    print(openvino_int8(models, args.force))
    print(onnxruntime_int8(models, args.force))


if __name__ == "__main__":
    main()
