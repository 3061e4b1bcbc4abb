#!/usr/bin/env bash
# The quickstart: sets up (scripts/bootstrap.sh), builds the release `yolo` and detects the
# objects in a sample photo, writing predictions.png. Extra arguments go to `yolo detect`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
# Progress lines hidden; a failed build stops here (pipefail: grep's status is not the pipe's).
swift build -c release --product yolo 2>&1 | { grep -v '^\[' || true; }
image=samples/motorcycle_left.png
.build/release/yolo detect "$image" --output predictions.png "$@"
echo "annotated image: $(pwd)/predictions.png"
