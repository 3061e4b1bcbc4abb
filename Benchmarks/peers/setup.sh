#!/usr/bin/env bash
# Creates Benchmarks/peers/.venv with the pinned peer runtimes. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
stamp=.venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -r requirements.txt
    echo "$want" > "$stamp"
fi
.venv/bin/python -c 'import onnx, onnxruntime, openvino, cv2, ncnn, numpy, nncf; print("peers ready:", "onnxruntime", onnxruntime.__version__, "| nncf", nncf.__version__, "| openvino", openvino.__version__.split("-")[0], "| opencv", cv2.__version__, "| ncnn", ncnn.__version__, "| onnx", onnx.__version__, "| numpy", numpy.__version__)'
