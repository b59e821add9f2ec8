"""The scanned Markdown outline against markdown-it's whole parse, on every real document at hand.

`kireme.text.markdown` reads headings, column-0 fences, HTML comments and blocks and plain paragraphs
itself and leaves only the regions between (lists, quotes, tables, …) to markdown-it (issue #27). Property
tests prove the two outlines equal on generated Markdown; this checks it on real files — every ``.md`` of
the corpora and of this repository's docs, the Markdown kireme's loaders make of the HTML pages and
notebooks — and times both (outline only, CPU, one pass each, caches cleared). Run on demand::

    .venv/bin/python benchmarks/markdown_outline.py
    .venv/bin/python benchmarks/markdown_outline.py --corpora /path/to/corpora --max-files 200

Any document whose outlines differ is named and the exit status is 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from _corpora import REPO, add_corpora_argument, corpora_present, corpus_path
from kireme.text.markdown import Outline, _parsed_outline, _scanned_outline, front_matter


def documents(root: Path, max_files: int) -> list[tuple[str, str]]:
    """(name, Markdown text) of every document found: ``.md`` files, then HTML pages and notebooks as
    kireme's loaders turn them into Markdown."""
    from kireme.load.html import load_html
    from kireme.load.notebook import load_notebook

    out: list[tuple[str, str]] = []
    folders = [corpus_path(root, name) for name in ("ja-techdocs-md", "ja-techdocs-html", "notebooks")]
    md_files = [p for f in folders if f is not None for p in sorted(f.rglob("*.md"))]
    md_files += sorted((REPO / "docs").rglob("*.md")) + sorted(REPO.glob("*.md"))
    for path in md_files[:max_files]:
        out.append((str(path), path.read_bytes().decode("utf-8", errors="replace")))
    loaded: list[tuple[Path, Callable[[bytes, str], object]]] = []
    for folder in folders[1:]:
        if folder is not None:
            loaded += [(p, load_html) for p in sorted(folder.rglob("*.html"))[:max_files]]
            loaded += [(p, load_notebook) for p in sorted(folder.rglob("*.ipynb"))[:max_files]]
    for path, loader in loaded:
        doc = loader(path.read_bytes(), str(path))
        out.append((str(path), doc.text))  # type: ignore[attr-defined]
    return out


def scanned(text: str) -> Outline:
    fm_end, fm_title = front_matter(text)
    found = _scanned_outline(text, fm_end, fm_title)
    return found if found is not None else _parsed_outline(text, fm_end, fm_title)


def parsed(text: str) -> Outline:
    return _parsed_outline(text, *front_matter(text))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_corpora_argument(ap)
    ap.add_argument("--max-files", type=int, default=10_000, help="at most this many files of each kind")
    args = ap.parse_args(argv)
    if not corpora_present(args.corpora, "markdown_outline"):
        return 0
    import logging

    logging.getLogger("kireme").setLevel(logging.ERROR)  # the loaders' notes on left-out page parts
    docs = documents(args.corpora, args.max_files)
    differing = [name for name, text in docs if scanned(text) != parsed(text)]
    whole = sum(1 for _, text in docs if _scanned_outline(text, *front_matter(text)) is None)
    seconds = {}
    for label, outline in (("markdown-it, whole parse", parsed), ("scanned + regions", scanned)):
        start = time.process_time()
        for _, text in docs:
            outline(text)
        seconds[label] = time.process_time() - start
    chars = sum(len(text) for _, text in docs)
    print(f"{len(docs)} documents, {chars / 1e6:.2f} M characters; parsed whole (lone CR): {whole}")
    for label, s in seconds.items():
        print(f"  {label:26} {s:6.3f} s CPU  {chars / 1e6 / s:6.1f} M chars/s")
    print(f"  differing outlines: {len(differing)}")
    for name in differing:
        print(f"    {name}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
