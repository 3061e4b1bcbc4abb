#!/usr/bin/env bash
# Makes variants of photos that are different network inputs, for measuring INT8 against FP32
# (or calibrating) on more than a handful of photos: for each photo of the directories given,
# 12 PNGs in OUT (mirrored; cropped to 50-85%; scaled to 55%, 80% and 130%; brightness and
# contrast, gamma and saturation changed; rotated by 4.6 degrees; a wide strip). docs/precision.md, Accuracy:
#   scripts/photo-variants.sh ../shared/images samples /tmp/variants
#   python3 scripts/int8-accuracy.py /tmp/variants --thresh 0.1
# Needs ffmpeg. Nothing it makes is committed: it follows from the photos.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: scripts/photo-variants.sh DIR... OUT" >&2; exit 2; }
command -v ffmpeg >/dev/null || { echo "scripts/photo-variants.sh: needs ffmpeg" >&2; exit 1; }
out="${*: -1}"
mkdir -p "$out"
for dir in "${@:1:$#-1}"; do
    [ -d "$dir" ] || { echo "scripts/photo-variants.sh: $dir is not a directory" >&2; exit 1; }
    found=0
    for photo in "$dir"/*.png "$dir"/*.jpg "$dir"/*.jpeg; do
        [ -f "$photo" ] || continue
        found=1
        name=$(basename "${photo%.*}")
        while read -r suffix filter; do
            ffmpeg -nostdin -loglevel error -y -i "$photo" -vf "$filter" "$out/${name}_$suffix.png"
        done <<'EOF'
flip hflip
c70 crop=iw*0.7:ih*0.7
c80tl crop=iw*0.8:ih*0.8:0:0
c60brf crop=iw*0.6:ih*0.75:iw*0.4:ih*0.25,hflip
s55 scale=trunc(iw*0.55/2)*2:-2
s130c75 scale=trunc(iw*1.3/2)*2:-2,crop=iw*0.75:ih*0.75:iw*0.1:ih*0.2
bright eq=brightness=0.06:contrast=1.15
gammaf eq=gamma=0.8:saturation=0.8,hflip
c50 crop=iw*0.5:ih*0.5
c85s80 crop=iw*0.85:ih*0.9:iw*0.15:0,scale=trunc(iw*0.8/2)*2:-2
rot rotate=0.08:fillcolor=gray,crop=iw*0.9:ih*0.9
wide crop=iw:ih*0.6:0:ih*0.2
EOF
    done
    [ $found = 1 ] || { echo "scripts/photo-variants.sh: no .png or .jpg photos in $dir" >&2; exit 1; }
done
echo "photo variants: $(ls "$out" | wc -l) images in $out"
