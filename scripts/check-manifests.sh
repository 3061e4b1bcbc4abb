#!/usr/bin/env bash
# Checks that Package.swift and Package@swift-6.0.swift (the manifest Swift 6.0 and 6.1 read)
# describe the same package: both are loaded by this toolchain (`swift package dump-package`) and
# compared with everything but the tools version and how a CPU is named (`-target-cpu X` in one,
# `-Xcc -march=X` in the other). Any other difference (a target, a dependency, a product, a
# resource, a setting) fails with the differing entries named. Each manifest makes its kernel level
# targets from one table (`kernelLevels`); this also checks that every Sources/YOLOKernels<Level>
# folder is a target of that table and that the engine depends on every one. Run by scripts/test.
# Skipped, with a line saying so, by a toolchain older than 6.2 (it cannot read Package.swift).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "check-manifests: $*"; }
other=Package@swift-6.0.swift
[ -f "$other" ] || { say "no $other: nothing to compare"; exit 0; }
version=$(swift --version 2>/dev/null | sed -nE 's/.*Swift version ([0-9]+)\.([0-9]+).*/\1 \2/p' | head -1)
read -r major minor <<< "${version:-0 0}"
if [ "$major" -lt 6 ] || { [ "$major" = 6 ] && [ "$minor" -lt 2 ]; }; then
    say "skipped: Swift $major.$minor cannot read Package.swift (tools version 6.2)"
    exit 0
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
swift package dump-package > "$tmp/main.json" || { say "FAILED: swift package dump-package on Package.swift"; exit 1; }
mkdir "$tmp/old"
cp "$other" "$tmp/old/Package.swift"
(cd "$tmp/old" && swift package dump-package > "$tmp/old.json") \
    || { say "FAILED: swift package dump-package on $other"; exit 1; }
python3 - "$tmp/main.json" "$tmp/old.json" "$other" <<'EOF'
import json, os, sys

def normalize(value):
    """The manifest minus what may differ: the tools version, where it lies, CPU flag spelling."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in ("toolsVersion", "packageKind"):
                continue
            if key == "unsafeFlags":
                flags = [f for f in item["_0"] if f not in ("-target-cpu", "-Xcc")]
                item = {"_0": [f[len("-march="):] if f.startswith("-march=") else f for f in flags]}
            out[key] = normalize(item)
        return out
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value

main, old, name = normalize(json.load(open(sys.argv[1]))), normalize(json.load(open(sys.argv[2]))), sys.argv[3]
problems = []
# The kernel levels: a folder without a target (or a target the engine does not depend on) would
# build nothing, or never be picked.
levels = sorted(d for d in os.listdir("Sources") if d.startswith("YOLOKernels") and d != "YOLOKernels")
targets = {t["name"]: t for t in main["targets"]}
engine = {d["byName"][0] for d in targets.get("YOLOEngine", {}).get("dependencies", []) if "byName" in d}
for level in levels:
    if level not in targets:
        problems.append(f"Sources/{level} is not a target of Package.swift (add it to kernelLevels)")
    elif level not in engine:
        problems.append(f"YOLOEngine does not depend on {level}")
for section in ("targets", "products"):
    a = {t["name"]: t for t in main.get(section, [])}
    b = {t["name"]: t for t in old.get(section, [])}
    for n in sorted(a.keys() - b.keys()):
        problems.append(f"{section[:-1]} {n} is in Package.swift, not in {name}")
    for n in sorted(b.keys() - a.keys()):
        problems.append(f"{section[:-1]} {n} is in {name}, not in Package.swift")
    for n in sorted(a.keys() & b.keys()):
        for key in sorted(a[n].keys() | b[n].keys()):
            if a[n].get(key) != b[n].get(key):
                problems.append(f"{section[:-1]} {n}: '{key}' differs: Package.swift {json.dumps(a[n].get(key))}, "
                                f"{name} {json.dumps(b[n].get(key))}")
    main.pop(section, None); old.pop(section, None)
for key in sorted(main.keys() | old.keys()):
    if main.get(key) != old.get(key):
        problems.append(f"package '{key}' differs: Package.swift {json.dumps(main.get(key))}, {name} {json.dumps(old.get(key))}")
if problems:
    print(f"check-manifests: FAILED: Package.swift and {name} must describe the same package:", file=sys.stderr)
    for p in problems:
        print("  " + p, file=sys.stderr)
    sys.exit(1)
print(f"check-manifests: Package.swift and {name} agree ({len(a)} products, "
      f"{len(json.load(open(sys.argv[1]))['targets'])} targets, {len(levels)} kernel levels)")
EOF
