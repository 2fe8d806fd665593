#!/usr/bin/env python3
"""Build the committed English text corpus from the Node.js API reference.

Source: the Markdown API reference that Debian's ``nodejs`` package installs
under ``/usr/share/doc/nodejs/api/*.md`` (MIT licensed, see ``LICENSE`` next to
this script). Standard library only; the output is byte-identical on every run
for the same source files.

Processing, in order:

1. Read every ``*.md`` file of the source directory in sorted file-name order.
2. Remove HTML comments (``<!-- YAML ... -->`` change-history blocks,
   ``<!--introduced_in=...-->``, ``<!--lint ...-->`` and the like) and the
   trailing link-reference definitions (``[`foo`]: bar.md#baz``), outside code
   fences only.
3. Split the file into sections at ``#``, ``##`` and ``###`` headings (headings
   inside fenced code blocks do not count). A section is the heading line plus
   everything up to the next such heading; deeper headings (``####`` ...) stay
   inside their section. Runs of blank lines collapse to one blank line.
4. Drop sections shorter than ``MIN_CHARS`` characters.
5. Keep every ``STRIDE``-th remaining section (global index modulo ``STRIDE``
   == 0), which samples all modules evenly while keeping the corpus around
   1 MB instead of the full 3.5 MB.
6. Cut the kept documents, in order, into ``NUM_SHARDS`` contiguous shards of
   roughly equal byte size and write ``nodejs-api/part-NNNNN.jsonl``, one
   ``{"text": ...}`` object per line.

Usage::

    python golden/corpus/build_corpus.py [SOURCE_DIR] [--out OUT_DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

DEFAULT_SOURCE = Path("/usr/share/doc/nodejs/api")
DEFAULT_OUT = Path(__file__).resolve().parent / "nodejs-api"

SPLIT_LEVEL = 3  # split at headings of level 1..SPLIT_LEVEL
MIN_CHARS = 200  # drop sections shorter than this (in characters)
STRIDE = 3  # keep section i when i % STRIDE == 0
NUM_SHARDS = 6

_FENCE = re.compile(r"^\s{0,3}(```+|~~~+)")
_HEADING = re.compile(r"^(#{1,6})\s+\S")
_LINK_DEF = re.compile(r"^\[[^\]\n]+\]:\s+\S+\s*$")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def _strip_comments(text: str) -> str:
    """Remove HTML comments that start outside fenced code blocks."""
    out: list[str] = []
    lines = text.split("\n")
    in_fence = False
    fence = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _FENCE.match(line)
        if m:
            marker = m.group(1)
            if not in_fence:
                in_fence, fence = True, marker[0] * 3
            elif marker.startswith(fence):
                in_fence = False
            out.append(line)
            i += 1
            continue
        if not in_fence and "<!--" in line:
            # Gather lines until the comment (or comments) opened here close.
            chunk = line
            while chunk.count("<!--") > chunk.count("-->") and i + 1 < len(lines):
                i += 1
                chunk += "\n" + lines[i]
            stripped = _COMMENT.sub("", chunk)
            if stripped.strip():  # text shared a line with a comment: keep it
                out.extend(line.rstrip() for line in stripped.split("\n"))
            i += 1
            continue
        if not in_fence and _LINK_DEF.match(line):
            i += 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def _split_sections(text: str) -> list[str]:
    """Split Markdown into sections at headings of level <= SPLIT_LEVEL."""
    sections: list[list[str]] = [[]]
    in_fence = False
    fence = ""
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if m:
            marker = m.group(1)
            if not in_fence:
                in_fence, fence = True, marker[0] * 3
            elif marker.startswith(fence):
                in_fence = False
        elif not in_fence:
            h = _HEADING.match(line)
            if h and len(h.group(1)) <= SPLIT_LEVEL:
                sections.append([])
        sections[-1].append(line.rstrip())
    return [_tidy("\n".join(s)) for s in sections]


def _tidy(section: str) -> str:
    """Collapse blank-line runs and trim surrounding whitespace."""
    return re.sub(r"\n{3,}", "\n\n", section).strip()


def build_documents(source: Path) -> list[str]:
    """Return the corpus documents, in order, built from ``source/*.md``."""
    files = sorted(source.glob("*.md"))
    if not files:
        raise SystemExit(f"no *.md files under {source}")
    kept: list[str] = []
    index = 0
    for path in files:
        text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
        for section in _split_sections(_strip_comments(text)):
            if len(section) < MIN_CHARS:
                continue
            if index % STRIDE == 0:
                kept.append(section)
            index += 1
    return kept


def shard(docs: list[str], num_shards: int) -> list[list[str]]:
    """Cut ``docs`` into ``num_shards`` contiguous runs of roughly equal bytes."""
    sizes = [len(d.encode("utf-8")) for d in docs]
    total = sum(sizes)
    shards: list[list[str]] = [[] for _ in range(num_shards)]
    acc = 0
    for doc, size in zip(docs, sizes):
        # Assign by the document's midpoint so the cut points stay balanced.
        k = min(num_shards - 1, (acc + size // 2) * num_shards // total)
        shards[k].append(doc)
        acc += size
    return shards


def write_shards(shards: list[list[str]], out: Path) -> list[Path]:
    """Write one JSONL file per shard and remove stale ``part-*.jsonl`` files."""
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("part-*.jsonl"):
        stale.unlink()
    paths = []
    for k, docs in enumerate(shards):
        path = out / f"part-{k:05d}.jsonl"
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            for doc in docs:
                f.write(json.dumps({"text": doc}, ensure_ascii=False, sort_keys=True) + "\n")
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: build, write and print counts."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "source",
        nargs="?",
        type=Path,
        default=DEFAULT_SOURCE,
        help=f"directory holding the *.md files (default {DEFAULT_SOURCE})",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="output directory for part-*.jsonl (default: nodejs-api/ next to this script)",
    )
    args = ap.parse_args(argv)

    docs = build_documents(args.source)
    paths = write_shards(shard(docs, NUM_SHARDS), args.out)
    text_bytes = sum(len(d.encode("utf-8")) for d in docs)
    file_bytes = sum(p.stat().st_size for p in paths)
    print(f"documents: {len(docs)}")
    print(f"text bytes (UTF-8): {text_bytes}")
    print(f"file bytes (JSONL): {file_bytes}")
    print(f"shards: {len(paths)}")
    for p in paths:
        n = sum(1 for _ in open(p, encoding="utf-8"))
        print(f"  {p.name}: {n} documents, {p.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
