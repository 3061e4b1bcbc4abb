#!/usr/bin/env bash
# INT8 against FP32 on arm64 (issue #49): scripts/int8-accuracy.py on the first N photos of the
# evaluation part (eval-photos/eval, sorted by name; scripts/eval-photos.py fetches them), with the
# arm64 `yolo` that scripts/arm-linux-check.sh built (Debian stable's swiftlang, cross build) run
# under qemu-user (its libraries from that check's arm64 sysroot) twice: QEMU_CPU=max (every extension: the dotprod level) and QEMU_CPU=cortex-a72
# (Raspberry Pi 4: the neon level). Both precisions run on arm64; the figures are recall and
# precision of its INT8 against its own FP32 at threshold 0.25 (docs/int8-eval.md).
#   scripts/arm-int8-accuracy.sh [N]        (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/debian-rootfs.sh
rootfs_name=arm-int8-accuracy
count=${1:-20}
root=$rootfs_cache/rootfs-stable-amd64
sysroot=$rootfs_cache/sysroot-stable-arm64
bin=$root/build/stable-arm64/aarch64-unknown-linux-gnu/release/yolo
[ -x "$bin" ] || rootfs_fail "no arm64 yolo at $bin: run scripts/arm-linux-check.sh first"
command -v qemu-aarch64-static >/dev/null || rootfs_fail "no qemu-aarch64-static (apt-get install qemu-user-static)"
[ -d eval-photos/eval ] || rootfs_fail "no eval-photos/eval: run python3 scripts/eval-photos.py"
mapfile -t photos < <(ls eval-photos/eval | sort | head -n "$count" | sed 's|^|eval-photos/eval/|')
[ ${#photos[@]} = "$count" ] || rootfs_fail "eval-photos/eval has ${#photos[@]} photos, not $count"
rootfs_say "arm64 yolo built $(date -u -r "$bin" '+%Y-%m-%d %H:%M UTC'); ${#photos[@]} photos"
wrapper=$(mktemp -d)
trap 'rm -rf "$wrapper"' EXIT
for cpu in max cortex-a72; do
    # qemu-user directly (not binfmt_misc), the arm64 libraries from the sysroot; the host's
    # OpenBLAS and kernel-level settings are not passed on.
    cat > "$wrapper/yolo-$cpu" <<WRAP
#!/bin/sh
exec qemu-aarch64-static -L "$sysroot" -E LD_LIBRARY_PATH=/usr/libexec/swift/lib/swift/linux -cpu $cpu \
    -U OPENBLAS_CORETYPE -U OPENBLAS_L2_SIZE -U YOLO_KERNEL_LEVEL "$bin" "\$@"
WRAP
    chmod +x "$wrapper/yolo-$cpu"
    rootfs_say "QEMU_CPU=$cpu: $("$wrapper/yolo-$cpu" version | grep -o 'selected [a-z0-9]*' || echo 'no kernel level printed')"
    start=$SECONDS
    python3 scripts/int8-accuracy.py "${photos[@]}" --yolo "$wrapper/yolo-$cpu" --thresh 0.25 --require 0 \
        | sed "s|^|[$cpu] |"
    rootfs_say "QEMU_CPU=$cpu: $((SECONDS - start)) s"
done
