#!/usr/bin/env python3
"""Checks the relative links of README.md and docs/*.md: every link or image whose target is a
path in the repository must name a file or directory that exists, and every #anchor (alone, or
after a Markdown file's path) must be a heading of that file as GitHub makes its anchors.

Usage: scripts/check-links.py [FILE.md ...]   (default: README.md and docs/*.md)
Prints one line per broken link (FILE:LINE: target: why) and exits 1 when there is any, else
prints a summary line and exits 0. Python 3 standard library only.
"""
import glob
import os
import re
import sys
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# [text](target) and ![alt](target); the target may be <...> and be followed by a title.
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]*)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTML_ANCHOR = re.compile(r"<a\s+[^>]*(?:name|id)\s*=\s*[\"']([^\"']+)[\"']", re.I)


def prose_lines(text):
    """(line number, line) for each line outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
                continue
            yield number, line
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and line.strip() == m.group(1):
            fence = None


def slug(heading):
    """GitHub's anchor for a heading's text: markup dropped, lower case, punctuation but '-' and
    '_' removed, spaces made '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)   # links and images: their text
    text = re.sub(r"<[^>]+>", "", text)                          # inline HTML tags
    text = text.replace("`", "")
    text = re.sub(r"(\*\*|__|\*)", "", text)                      # emphasis (a lone '_' stays: GitHub keeps it)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_anchors = {}


def anchors(path):
    """The anchors a Markdown file defines: its headings' slugs (repeats get -1, -2, ...) and
    explicit <a name|id=...> anchors."""
    if path in _anchors:
        return _anchors[path]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found, seen = set(), {}
    for _, line in prose_lines(text):
        m = HEADING.match(line)
        if m:
            content = re.sub(r"[ \t]+#+$", "", m.group(2) or "")
            base = slug(content)
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        for a in HTML_ANCHOR.findall(line):
            found.add(a)
    _anchors[path] = found
    return found


def links(text):
    """(line number, target) for every link, image and reference definition outside code."""
    for number, line in prose_lines(text):
        line = INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
        for m in LINK.finditer(line):
            yield number, m.group(1)
        m = REFERENCE.match(line)
        if m:
            yield number, m.group(1)


def check(path):
    """The broken links of one file, as messages."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    name = os.path.relpath(path, ROOT)
    problems = []
    for number, target in links(text):
        target = target[1:-1] if target.startswith("<") and target.endswith(">") else target
        if not target:
            problems.append(f"{name}:{number}: an empty link target")
            continue
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", target) or target.startswith("//"):
            continue   # a URL (http:, https:, mailto:, ...): not checked here
        file_part, _, anchor = target.partition("#")
        file_part = urllib.parse.unquote(file_part)
        anchor = urllib.parse.unquote(anchor)
        if file_part:
            if file_part.startswith("/"):
                resolved = os.path.normpath(os.path.join(ROOT, file_part.lstrip("/")))
            else:
                resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
            if not os.path.exists(resolved):
                problems.append(f"{name}:{number}: {target}: no such file or directory ({os.path.relpath(resolved, ROOT)})")
                continue
            if not resolved.startswith(ROOT + os.sep) and resolved != ROOT:
                problems.append(f"{name}:{number}: {target}: outside the repository")
                continue
        else:
            resolved = path
        if "#" in target:
            if not anchor:
                problems.append(f"{name}:{number}: {target}: an empty anchor")
            elif not resolved.endswith(".md") or os.path.isdir(resolved):
                problems.append(f"{name}:{number}: {target}: an anchor into a file that is not Markdown")
            elif anchor not in anchors(resolved):
                problems.append(f"{name}:{number}: {target}: no heading of {os.path.relpath(resolved, ROOT)} has the anchor #{anchor}")
    return problems


def main(argv):
    files = argv[1:] or [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    problems, count = [], 0
    for path in files:
        path = os.path.abspath(path)
        if not os.path.isfile(path):
            problems.append(f"{path}: no such file")
            continue
        count += 1
        problems += check(path)
    for p in problems:
        print(p)
    sys.stdout.flush()
    if problems:
        print(f"check-links: {len(problems)} broken link(s) in {count} file(s)", file=sys.stderr)
        return 1
    print(f"check-links: every relative link and anchor in {count} file(s) resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
