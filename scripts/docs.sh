#!/usr/bin/env bash
# The library's documentation, with the DocC that ships with the toolchain (no plugin): builds the
# YOLO product (debug, as `swift test` does, so a test run has it built already), extracts the
# symbol graphs of YOLO and the modules it re-exports (Sources/YOLO/Exports.swift), checks them,
# and converts them with the catalog Sources/YOLO/YOLO.docc into a DocC archive.
#   scripts/docs.sh [--check] [OUTPUT]     OUTPUT default .build/docs/YOLO.doccarchive
# Checks (each failure named): every public symbol of those modules has a doc comment (`///`),
# and every Swift example of the catalog's articles is one of README.md or docs/library.md, where
# ReadmeExamplesTests builds and runs it. --check stops after the checks (no archive).
# Serve the archive with any static file server, or open it in Xcode.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
say() { echo "docs: $*"; }
check_only=false
[ "${1:-}" = --check ] && { check_only=true; shift; }
output=${1:-.build/docs/YOLO.doccarchive}
catalog=Sources/YOLO/YOLO.docc
# YOLO and what it re-exports, read from its @_exported imports.
modules=(YOLO $(sed -nE 's/^@_exported import ([A-Za-z0-9_]+).*/\1/p' Sources/YOLO/Exports.swift))
[ ${#modules[@]} -gt 1 ] || { say "FAILED: no @_exported import in Sources/YOLO/Exports.swift"; exit 1; }

swift build --target YOLO > /dev/null || { say "FAILED: swift build --target YOLO"; exit 1; }
bin=$(swift build --show-bin-path)
graphs=$(mktemp -d); trap 'rm -rf "$graphs"' EXIT
# The C modules the Swift modules import (module maps under Sources/C*).
includes=()
for d in Sources/C*/; do includes+=(-I "$d"); done
for m in "${modules[@]}"; do
    swift symbolgraph-extract -module-name "$m" -target "$(uname -m)-unknown-linux-gnu" -I "$bin/Modules" "${includes[@]}" \
        -minimum-access-level public -output-dir "$graphs" || { say "FAILED: swift symbolgraph-extract -module-name $m"; exit 1; }
done

python3 - "$graphs" "$catalog" <<'EOF'
import glob, json, os, re, sys

graphs, catalog = sys.argv[1:3]
undocumented, count = [], 0
for path in sorted(glob.glob(os.path.join(graphs, "*.symbols.json"))):
    for s in json.load(open(path))["symbols"]:
        # Members the compiler made (a memberwise init, a conformance's default) have no source.
        if s.get("accessLevel") not in ("public", "open") or "::SYNTHESIZED::" in s["identifier"]["precise"]:
            continue
        count += 1
        if not s.get("docComment"):
            where = s.get("location", {})
            uri = where.get("uri", "?").split("/Sources/")[-1]
            line = where.get("position", {}).get("line", -1) + 1
            name = '.'.join(s['pathComponents'])
            undocumented.append(f"Sources/{uri}:{line}: {s['kind']['displayName'].lower()} {name}")
problems = [f"no doc comment: {u}" for u in sorted(set(undocumented))]

# The articles' examples must be tested ones.
fence = re.compile(r"```swift\n(.*?)```", re.S)
tested = fence.findall(open("README.md").read()) + fence.findall(open("docs/library.md").read())
for article in sorted(glob.glob(os.path.join(catalog, "*.md"))):
    for block in fence.findall(open(article).read()):
        if block not in tested:
            problems.append(f"{article}: a Swift example that is not in README.md or docs/library.md: {block.splitlines()[0]}")
for p in problems:
    print("docs: " + p, file=sys.stderr)
print(f"docs: {count} public symbols, {len(set(undocumented))} without a doc comment")
sys.exit(1 if problems else 0)
EOF
$check_only && exit 0

rm -rf "$output"
mkdir -p "$(dirname "$output")"
docc convert "$catalog" --additional-symbol-graph-dir "$graphs" --fallback-display-name YOLO \
    --fallback-bundle-identifier yolo-swift.YOLO --output-path "$output" --warnings-as-errors \
    || { say "FAILED: docc convert"; exit 1; }
say "$output: $(du -sh "$output" | cut -f1), $(find "$output/data/documentation" -name '*.json' | wc -l) pages"
