#!/usr/bin/env bash
# Makes scripts/.venv with the pinned OpenCV (once), builds the yolo tool and compares our heads
# with OpenCV DNN's for the given cfgs (default: every cfg in ../shared/cfg and weights/) at
# 416x416 and 608x352. Extra arguments go to compare-opencv.py, e.g. --sizes 320x320.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x scripts/.venv/bin/python ] || "$PYTHON" -m venv scripts/.venv
scripts/.venv/bin/python -c 'import cv2, numpy' 2>/dev/null ||
    scripts/.venv/bin/python -m pip install --quiet -r scripts/compare-opencv-requirements.txt
swift build -c release --product yolo
cfgs=()
for a in "$@"; do case "$a" in *.cfg) cfgs+=("$a");; esac; done
args=()
for a in "$@"; do case "$a" in *.cfg) ;; *) args+=("$a");; esac; done
if [ ${#cfgs[@]} -eq 0 ]; then cfgs=(../shared/cfg/*.cfg weights/yolov3-tiny.cfg); fi
exec scripts/.venv/bin/python scripts/compare-opencv.py "${cfgs[@]}" --sizes 416x416,608x352 ${args[@]+"${args[@]}"}
