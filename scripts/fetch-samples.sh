#!/usr/bin/env bash
# Fetches sample photos from the scikit-image wheel (skimage/data/) into samples/.
# Any platform's wheel carries the same data files, so one is pinned.
set -euo pipefail
cd "$(dirname "$0")/.."
PHOTOS="astronaut.png camera.png chelsea.png coffee.png horse.png hubble_deep_field.jpg logo.png motorcycle_left.png rocket.jpg"
mkdir -p samples
missing=0; for f in $PHOTOS; do [ -s "samples/$f" ] || missing=1; done
if [ $missing = 0 ]; then echo "samples: already present"; exit 0; fi
PY=$(command -v python3 || command -v python || true)
[ -n "$PY" ] || { echo "scripts/fetch-samples.sh: needs python3 with pip" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "samples: downloading the scikit-image 0.26.0 wheel from PyPI..."
"$PY" -m pip download --quiet --no-deps --only-binary :all: --platform manylinux_2_28_x86_64 \
    --python-version 3.11 --implementation cp scikit-image==0.26.0 -d "$tmp" >&2
whl=$(ls "$tmp"/scikit_image-*.whl)
"$PY" - "$whl" samples $PHOTOS <<'PYEOF'
import sys, zipfile
whl, dest, names = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(whl) as z:
    for n in names:
        with open(f"{dest}/{n}", "wb") as out:
            out.write(z.read(f"skimage/data/{n}"))
PYEOF
echo "samples: $PHOTOS in $(pwd)/samples"
