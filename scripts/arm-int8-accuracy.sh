#!/usr/bin/env bash
# INT8 against FP32 on arm64 (issue #49): scripts/int8-accuracy.py on the first N photos of the
# evaluation part (eval-photos/eval, sorted by name; scripts/eval-photos.py fetches them), with the
# arm64 `yolo` that scripts/arm-linux-check.sh built (Debian stable's swiftlang, cross build) run
# under qemu-user twice: QEMU_CPU=max (every extension: the dotprod level) and QEMU_CPU=cortex-a72
# (Raspberry Pi 4: the neon level). Both precisions run on arm64; the figures are recall and
# precision of its INT8 against its own FP32 at threshold 0.25 (docs/int8-eval.md).
#   scripts/arm-int8-accuracy.sh [N]        (default 20; needs root, as arm-linux-check does)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
. scripts/lib/debian-rootfs.sh
rootfs_init arm-int8-accuracy "$@"
count=${1:-20}
root=$rootfs_cache/rootfs-stable-amd64
sysroot=$rootfs_cache/sysroot-stable-arm64
bin=/build/stable-arm64/aarch64-unknown-linux-gnu/release/yolo
[ -x "$root$bin" ] || rootfs_fail "no arm64 yolo at $root$bin: run scripts/arm-linux-check.sh first"
[ -d eval-photos/eval ] || rootfs_fail "no eval-photos/eval: run python3 scripts/eval-photos.py"
mapfile -t photos < <(ls eval-photos/eval | sort | head -n "$count" | sed 's|^|eval-photos/eval/|')
[ ${#photos[@]} = "$count" ] || rootfs_fail "eval-photos/eval has ${#photos[@]} photos, not $count"
rootfs_say "arm64 yolo built $(date -u -r "$root$bin" '+%Y-%m-%d %H:%M UTC'); ${#photos[@]} photos"
wrapper=$(mktemp -d)
trap 'rm -rf "$wrapper"' EXIT
for cpu in max cortex-a72; do
    # The checkout and the arm64 libraries, mounted into the root file system for this process only.
    cat > "$wrapper/yolo-$cpu" <<WRAP
#!/usr/bin/env bash
exec unshare --mount --propagation private /bin/bash -c 'set -e
    mkdir -p "$root/sysroot" "$root$repo"
    mount --bind "$sysroot" "$root/sysroot"; mount --bind "$repo" "$root$repo"
    exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 QEMU_LD_PREFIX=/sysroot QEMU_CPU=$cpu \
        /bin/bash -c "cd $repo && exec $bin \"\\\$@\"" yolo "\$@"' bash "\$@"
WRAP
    chmod +x "$wrapper/yolo-$cpu"
    level=$("$wrapper/yolo-$cpu" version | grep -o 'selected [a-z0-9]*' || true)
    rootfs_say "QEMU_CPU=$cpu: ${level:-no kernel level printed}"
    start=$SECONDS
    python3 scripts/int8-accuracy.py "${photos[@]}" --yolo "$wrapper/yolo-$cpu" --thresh 0.25 --require 0 \
        | sed "s|^|[$cpu] |"
    rootfs_say "QEMU_CPU=$cpu: $((SECONDS - start)) s"
done
