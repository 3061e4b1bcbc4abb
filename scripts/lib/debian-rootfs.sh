# Sourced (not run) by scripts/arm-linux-check.sh and scripts/oldest-swift-check.sh: Debian root
# file systems with Debian's own Swift toolchain (`swiftlang`), made once with mmdebstrap and
# kept in a cache directory outside the repository, and the checkout built and tested in them.
#
#   rootfs_init NAME              messages are prefixed with NAME; re-runs the caller as root
#                                 (sudo) when it is not (chroot, mounts and mmdebstrap need it)
#   rootfs_skip WHY               says SKIPPED and WHY loudly and exits 0: for a check that cannot
#                                 run on this machine at all (never for a failing step)
#   rootfs_tools ARCH             installs mmdebstrap (and for a foreign ARCH qemu-user-static
#                                 and arch-test) when missing, registers qemu's binfmt handler;
#                                 returns 2, with $rootfs_skip_reason, when this machine cannot
#                                 do it at all (no namespaces or chroot, no apt, cannot run ARCH)
#   rootfs_make SUITE ARCH PKG... makes (or reuses) $rootfs_cache/rootfs-SUITE-ARCH: Debian SUITE
#                                 for ARCH with `swiftlang` and PKG...; sets $rootfs. A cached one
#                                 that lacks some of PKG gets them with apt (not remade)
#   rootfs_sysroot SUITE ARCH PKG...
#                                 makes (or reuses) $rootfs_cache/sysroot-SUITE-ARCH: the files of
#                                 Debian SUITE's `swiftlang` and PKG... for ARCH, only unpacked
#                                 (mmdebstrap's extract variant: no package script runs, so no
#                                 emulation; about half a minute), a cross build's SDK and what
#                                 qemu loads the built programs' libraries from; sets
#                                 $rootfs_sysroot_dir, which rootfs_run then mounts at /sysroot
#   rootfs_sync                   copies the checkout (tracked and untracked-but-not-ignored files,
#                                 the fetched weights and samples) to $rootfs/src/yolo-swift, by
#                                 content: unchanged files keep their time stamps, so a build
#                                 kept in the root file system stays incremental
#   rootfs_suite_times LOG PREFIX prints, for each XCTest suite in the `swift test` output LOG,
#                                 a line "PREFIXSuite: N tests, M failures, T s"
#   rootfs_run COMMAND            runs the bash COMMAND in $rootfs/src/yolo-swift (its own mount
#                                 and process namespace: /proc is mounted there and every process
#                                 it started ends with it), with a clean environment; with
#                                 $rootfs_sysroot_dir set, that is mounted at /sysroot and
#                                 QEMU_LD_PREFIX=/sysroot (programs built for its architecture run
#                                 there through binfmt_misc and qemu)
#
# The cache: $YOLO_ROOTFS_CACHE, default ~/.cache/yolo-swift (each root file system about 3 GB).
# A root file system is reused while its recipe (suite, architecture, mirror) is unchanged, and
# packages added to a caller's list are installed into it;
# YOLO_ROOTFS_REFRESH=1 makes it again (Debian unstable moves on; the cached one does not).
# The archive: $YOLO_DEBIAN_MIRROR, default http://deb.debian.org/debian; Release files are
# accepted past their Valid-Until date (a snapshot mirror's are expired).

rootfs_cache=${YOLO_ROOTFS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/yolo-swift}
rootfs_mirror=${YOLO_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# Changing how a root file system is made (below) must change this, so cached ones are remade.
rootfs_recipe=1

# What the package needs besides `swiftlang` to build and test in a root file system of the
# machine's own architecture (oldest-swift-check, and arm-linux-check's cross builder).
rootfs_build_packages=(libopenblas-dev libjpeg-dev libpng-dev libdeflate-dev libmicrohttpd-dev pkg-config ffmpeg curl time)

rootfs_say() { echo "$rootfs_name: $*"; }
rootfs_fail() { echo "$rootfs_name: FAILED: $*" >&2; exit 1; }
# The check cannot run on this machine at all: says so loudly (stdout and stderr) and exits 0.
rootfs_skip() {
    local line
    for line in "****************************************************************************" \
                "SKIPPED: $*" \
                "****************************************************************************"; do
        echo "$rootfs_name: $line"; echo "$rootfs_name: $line" >&2
    done
    exit 0
}

rootfs_init() {
    rootfs_name=$1; shift
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null || rootfs_skip "nothing was run: it needs root (chroot, mounts, mmdebstrap) and there is no sudo"
        rootfs_say "re-running as root (sudo)"
        exec sudo --preserve-env=YOLO_ROOTFS_CACHE,YOLO_ROOTFS_REFRESH,YOLO_DEBIAN_MIRROR,PATH "$0" "$@"
    fi
}

rootfs_tools() {
    local arch=$1 host need=()
    host=$(dpkg --print-architecture)
    command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
    if [ "$arch" != "$host" ]; then
        command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
        command -v arch-test >/dev/null || need+=(arch-test)
    fi
    # What a root file system needs of this machine: mount and process namespaces and chroot
    # (a container without CAP_SYS_ADMIN has neither), and apt to install mmdebstrap with.
    if ! unshare --mount --pid --fork chroot / true 2>/dev/null; then
        rootfs_skip_reason="this machine cannot make mount and process namespaces or chroot (unshare --mount --pid --fork chroot / true failed)"
        return 2
    fi
    if [ ${#need[@]} -gt 0 ] && ! command -v apt-get >/dev/null; then
        rootfs_skip_reason="${need[*]} missing and no apt-get to install it (not a Debian-based machine)"
        return 2
    fi
    if [ ${#need[@]} -gt 0 ]; then
        rootfs_say "installing ${need[*]}"
        apt-get -o DPkg::Lock::Timeout=300 update -qq || rootfs_fail "apt-get update"
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
            "${need[@]}" >/dev/null || rootfs_fail "installing ${need[*]} with apt"
    fi
    [ "$arch" != "$host" ] || return 0
    # qemu's handler (no systemd here to register it): the kernel's binfmt_misc, mounted if it
    # is not, then Debian's entry (flag F: the interpreter is opened now, so it works in a chroot).
    local binfmt=/proc/sys/fs/binfmt_misc qemu_arch conf
    case $arch in arm64) qemu_arch=aarch64 ;; *) qemu_arch=$arch ;; esac
    conf=/usr/lib/binfmt.d/qemu-$qemu_arch.conf
    if [ ! -e "$binfmt/register" ]; then
        mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null || true
    fi
    if [ ! -e "$binfmt/register" ]; then
        rootfs_skip_reason="the kernel's binfmt_misc is not available here (cannot mount it on $binfmt)"
        return 2
    fi
    if [ ! -e "$binfmt/qemu-$qemu_arch" ] && [ -f "$conf" ]; then
        cat "$conf" > "$binfmt/register" 2>/dev/null || true
    fi
    [ -e "$binfmt/qemu-$qemu_arch" ] && grep -qx enabled "$binfmt/qemu-$qemu_arch" || {
        rootfs_skip_reason="no enabled binfmt_misc handler for $arch ($binfmt/qemu-$qemu_arch; registering $conf failed)"
        return 2
    }
    arch-test "$arch" >/dev/null 2>&1 || {
        rootfs_skip_reason="arch-test: this machine cannot execute $arch binaries (qemu $(qemu-$qemu_arch-static --version | head -1))"
        return 2
    }
}

# One run at a time per root file system or sysroot DIR: a lock held until the script ends.
rootfs_lock() {
    local fd
    mkdir -p "$rootfs_cache"
    exec {fd}>"$1.lock"
    flock -n "$fd" || { rootfs_say "waiting for another run that uses $1"; flock "$fd"; }
}

rootfs_make() {
    local suite=$1 arch=$2; shift 2
    local pkgs=(swiftlang "$@") key tmp
    rootfs=$rootfs_cache/rootfs-$suite-$arch
    # The stamp: "recipe N; SUITE ARCH; PACKAGES; MIRROR".
    key="recipe $rootfs_recipe; $suite $arch; ${pkgs[*]}; $rootfs_mirror"
    rootfs_lock "$rootfs"
    local stamp have missing=() p
    stamp=$(cat "$rootfs/.yolo-rootfs" 2>/dev/null || true)
    if [ "${YOLO_ROOTFS_REFRESH:-0}" != 1 ] && [ -n "$stamp" ] \
        && [ "${stamp%%; *}; $(cut -d';' -f2 <<< "$stamp" | sed 's/^ //'); $(sed 's/.*; //' <<< "$stamp")" \
            = "recipe $rootfs_recipe; $suite $arch; $rootfs_mirror" ]; then
        have=" $(cut -d';' -f3 <<< "$stamp") "
        for p in "${pkgs[@]}"; do [[ $have == *" $p "* ]] || missing+=("$p"); done
        rootfs_say "root file system: reusing $rootfs (made or last added to $(date -r "$rootfs/.yolo-rootfs" '+%Y-%m-%d %H:%M'))"
        [ ${#missing[@]} -gt 0 ] || return 0
        rootfs_say "root file system: installing ${missing[*]} into it"
        rootfs_apt "${missing[@]}" || rootfs_fail "apt-get install ${missing[*]} in $rootfs (log: $rootfs_cache/apt-$suite-$arch.log)"
        echo "recipe $rootfs_recipe; $suite $arch;$have${missing[*]}; $rootfs_mirror" | tr -s ' ' > "$rootfs/.yolo-rootfs"
        return 0
    fi
    tmp=$rootfs.new
    rm -rf "$tmp" "$rootfs"
    rootfs_say "root file system: making $rootfs (Debian $suite, $arch: ${pkgs[*]})"
    local t=$SECONDS
    mmdebstrap --mode=root --variant=apt --arch="$arch" --aptopt='Acquire::Check-Valid-Until "false"' \
        --include="$(IFS=,; echo "${pkgs[*]}")" "$suite" "$tmp" "$rootfs_mirror" > "$rootfs_cache/mmdebstrap-$suite-$arch.log" 2>&1 || {
        tail -20 "$rootfs_cache/mmdebstrap-$suite-$arch.log" >&2
        rm -rf "$tmp"
        rootfs_fail "mmdebstrap could not make Debian $suite for $arch (log above: $rootfs_cache/mmdebstrap-$suite-$arch.log)"
    }
    rootfs_testing_stub "$tmp"
    echo "$key" > "$tmp/.yolo-rootfs"
    mv "$tmp" "$rootfs"
    rootfs_say "root file system: made in $((SECONDS - t)) s ($(du -sh "$rootfs" 2>/dev/null | cut -f1))"
}

rootfs_sysroot() {
    local suite=$1 arch=$2; shift 2
    local pkgs=(swiftlang "$@") key dir tmp t=$SECONDS
    dir=$rootfs_cache/sysroot-$suite-$arch
    key="recipe $rootfs_recipe; $suite $arch extract, links 1; ${pkgs[*]}; $rootfs_mirror"
    rootfs_lock "$dir"
    rootfs_sysroot_dir=$dir
    if [ "${YOLO_ROOTFS_REFRESH:-0}" != 1 ] && [ "$(cat "$dir/.yolo-sysroot" 2>/dev/null)" = "$key" ]; then
        rootfs_say "sysroot: reusing $dir (made $(date -r "$dir/.yolo-sysroot" '+%Y-%m-%d %H:%M'))"
        return 0
    fi
    tmp=$dir.new
    rm -rf "$tmp" "$dir"
    rootfs_say "sysroot: making $dir (Debian $suite, $arch, unpacked: ${pkgs[*]})"
    mmdebstrap --mode=root --variant=extract --arch="$arch" --aptopt='Acquire::Check-Valid-Until "false"' \
        --include="$(IFS=,; echo "${pkgs[*]}")" "$suite" "$tmp" "$rootfs_mirror" > "$rootfs_cache/mmdebstrap-sysroot-$suite-$arch.log" 2>&1 || {
        tail -20 "$rootfs_cache/mmdebstrap-sysroot-$suite-$arch.log" >&2
        rm -rf "$tmp"
        rootfs_fail "mmdebstrap could not unpack Debian $suite's packages for $arch (log above: $rootfs_cache/mmdebstrap-sysroot-$suite-$arch.log)"
    }
    # What installing would have made: the merged /usr's links (linker scripts such as libm.so
    # name /lib/...), the alternatives' links to OpenBLAS (libopenblas.so.0, which the engine
    # loads, is one), and the stand-in for the missing _Testing_Foundation library (rootfs_make).
    local d f
    for d in bin sbin lib; do [ -e "$tmp/$d" ] || [ ! -d "$tmp/usr/$d" ] || ln -s "usr/$d" "$tmp/$d"; done
    for f in "$tmp"/usr/lib/*-linux-gnu/openblas-pthread/lib*.so.[0-9]; do
        [ -e "$f" ] && [ ! -e "$(dirname "$(dirname "$f")")/$(basename "$f")" ] || continue
        ln -s "openblas-pthread/$(basename "$f")" "$(dirname "$(dirname "$f")")/$(basename "$f")"
    done
    rootfs_testing_stub "$tmp"
    echo "$key" > "$tmp/.yolo-sysroot"
    mv "$tmp" "$dir"
    rootfs_say "sysroot: made in $((SECONDS - t)) s ($(du -sh "$dir" 2>/dev/null | cut -f1))"
}

# Debian's swiftlang 6.2.3 ships the _Testing_Foundation module without its library, which a
# test build links against (even with --disable-swift-testing): an empty archive stands in.
rootfs_testing_stub() {
    local lib
    for lib in "$1"/usr/libexec/swift/lib/swift/linux; do
        if [ -d "$lib/_Testing_Foundation.swiftmodule" ] && [ ! -e "$lib/lib_Testing_Foundation.a" ] \
            && [ ! -e "$lib/lib_Testing_Foundation.so" ]; then
            printf '!<arch>\n' > "$lib/lib_Testing_Foundation.a"
        fi
    done
}

rootfs_sync() {
    local dest=$rootfs/src/yolo-swift f n=0 changed=0
    mkdir -p "$dest"
    git rev-parse --is-inside-work-tree >/dev/null 2>&1 || rootfs_fail "not a git checkout (rootfs_sync copies what git lists)"
    local list; list=$(mktemp)
    { git ls-files -co --exclude-standard
      for f in weights/yolov3-tiny.cfg weights/yolov3-tiny.weights weights/coco.names samples/*; do [ -f "$f" ] && echo "$f"; done
    } | LC_ALL=C sort -u > "$list"
    while IFS= read -r f; do
        [ -f "$f" ] || continue     # listed by git, deleted in the work tree
        n=$((n + 1))
        if ! cmp -s "$f" "$dest/$f"; then
            mkdir -p "$dest/$(dirname "$f")"
            rm -f "$dest/$f"; cp "$f" "$dest/$f"
            changed=$((changed + 1))
        fi
    done < "$list"
    # Files gone from the checkout go from the copy too (not the builds kept there).
    (cd "$dest" && find . \( -name '.build*' -o -name .swiftpm \) -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort) \
        | LC_ALL=C comm -23 - "$list" \
        | while IFS= read -r f; do rm -f "$dest/$f"; done
    rm -f "$list"
    rootfs_say "checkout: $n files in $dest ($changed copied, the rest unchanged)"
    # The builds kept there go when any source changes: an incremental build across a change of a
    # struct that other modules' copies of @inlinable code lay out (KernelSet, built into the
    # per-ISA targets) kept stale code, which crashed at the first kernel set (2026-12-04, debug
    # builds of Swift 6.0.3 and 6.3.1 alike); so did a test module built against a struct's old
    # layout (Int8Calibration, 2026-12-07).
    local stamp="$dest/.build-sources-sha256" sum
    sum=$(git ls-files -co --exclude-standard Sources Tests 'Package*.swift' | LC_ALL=C sort | xargs cat | sha256sum | cut -d' ' -f1)
    if [ -e "$dest/.build" ] && [ "$(cat "$stamp" 2>/dev/null)" != "$sum" ]; then
        rm -rf "$dest"/.build "$dest"/.build-*
        rootfs_say "checkout: the sources changed since the kept builds (or no record of it): they are removed, a clean build follows"
    fi
    echo "$sum" > "$stamp"
}

rootfs_suite_times() {
    awk -v p="$2" '
        /^Test Suite .* (passed|failed) at/ { split($0, q, "\047"); name = q[2] }
        /Executed [0-9]+ tests?, with/ && name != "" && name !~ /^(All tests|Selected tests)$|\.xctest$/ {
            match($0, /Executed [0-9]+/); n = substr($0, RSTART + 9, RLENGTH - 9)
            match($0, /with [0-9]+ failure/); f = substr($0, RSTART + 5, RLENGTH - 13)
            match($0, /in [0-9.]+ /); t = substr($0, RSTART + 3, RLENGTH - 4)
            printf "%s%s: %d tests, %d failures, %.1f s\n", p, name, n, f, t; name = "" }' "$1"
}

# Installs Debian packages into $rootfs (its own apt, the archive of its stamp's suite).
rootfs_apt() {
    local log=$rootfs_cache/apt-$(basename "$rootfs" | sed 's/^rootfs-//').log
    rootfs_run "export DEBIAN_FRONTEND=noninteractive; apt-get -o Acquire::Check-Valid-Until=false update -qq \
        && apt-get install -y -qq --no-install-recommends $* && apt-get clean" > "$log" 2>&1 || { tail -20 "$log" >&2; return 1; }
}

rootfs_run() {
    # -i: only what is set here reaches the build (not the host's OPENBLAS_* or PATH). The chain
    # of execs keeps bash process 1 of the namespace (init ignores signals).
    unshare --mount --propagation private --pid --fork --kill-child --mount-proc="$rootfs/proc" \
        /bin/bash -c 'set -e; root=$1 command=$2 sysroot=$3
            [ -z "$sysroot" ] || { mkdir -p "$root/sysroot"; mount --bind "$sysroot" "$root/sysroot"; }
            # Pseudo-terminals of its own (scripts/lib/xctest-shards.sh runs each suite on one).
            mkdir -p "$root/dev/pts"; touch "$root/dev/ptmx" 2>/dev/null || true
            mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$root/dev/pts" \
                && mount --bind "$root/dev/pts/ptmx" "$root/dev/ptmx" || echo "rootfs_run: no pseudo-terminals in $root" >&2
            exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
                PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin ${sysroot:+QEMU_LD_PREFIX=/sysroot} \
                /bin/bash -c "cd /src/yolo-swift && $command; exit \$?"' rootfs_run "$rootfs" "$1" "${rootfs_sysroot_dir:-}"
}
