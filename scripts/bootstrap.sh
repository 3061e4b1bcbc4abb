#!/usr/bin/env bash
# Installs what building and testing need, once: Debian's OpenBLAS, libjpeg, libpng, libdeflate and libmicrohttpd
# development packages and ffmpeg for 'yolo stream' and its tests (when missing), the
# yolov3-tiny weights and the sample photos.
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
