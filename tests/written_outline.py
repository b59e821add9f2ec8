"""Shared checks for the outlines a plain text writes in its own lines (`kireme.text.articles`,
`kireme.text.wikitext`, `kireme.text.divisions`): every strategy names the section a chunk lies in, and
``kireme chunk`` reports it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kireme import Chunk, Document, make_chunker
from kireme.text.markdown import Heading


def chunks_between(text: str, strategy: str, max_size: int, after: str, before: str) -> list[Chunk]:
    """``text`` (a plain text) chunked by ``strategy``, every chunk checked to be an exact slice; those that
    lie after the end of ``after`` and before ``before`` (the text of one section, its heading line aside)."""
    doc = Document(text, id="doc.txt", metadata={"format": "text"})
    options: dict[str, Any] = {"similarity": "bigram", "cache_dir": False} if strategy == "semantic" else {}
    chunks = make_chunker(strategy, max_size=max_size, **options).chunk(doc)
    for c in chunks:
        assert text[c.start : c.end] == c.text
    start, end = text.index(after) + len(after), text.index(before)
    inside = [c for c in chunks if start <= c.start and c.end <= end]
    assert inside, "no chunk lies inside the section"
    return inside


def chunk_rows(path: Path, max_size: int) -> list[dict[str, Any]]:
    """The JSONL rows ``kireme chunk PATH --max-size N`` prints."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "kireme.cli",
            "chunk",
            str(path),
            "--max-size",
            str(max_size),
            "--format",
            "jsonl",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [json.loads(line) for line in out.splitlines()]


def each_heading_in_order(text: str, headings: tuple[Heading, ...]) -> Iterator[Heading]:
    """Each of ``headings`` checked for what every written outline holds — two headings or none, each a
    span of ``text`` that starts a line, in order and apart, at a level from 1 to 6 — for the caller's own
    checks."""
    assert headings == () or len(headings) >= 2
    previous_end = -1
    for h in headings:
        assert 0 <= h.start < h.end <= len(text)
        assert h.start > previous_end  # in order, apart
        previous_end = h.end
        assert h.start == 0 or text[h.start - 1] == "\n"  # each starts a line
        assert 1 <= h.level <= 6
        yield h
