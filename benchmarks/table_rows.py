"""Table rows in the chunks of every strategy: cut inside, and without their header.

    .venv/bin/python benchmarks/table_rows.py [--corpora ../shared/corpora] [--sizes 400 1000]
        [--format markdown|text]

Every Markdown file of ``ja-techdocs-md`` (``Document(format="markdown")``, as ``kireme chunk`` loads a
``.md`` file; ``--format text``: as a plain text, as a ``.txt`` file or a string is read), each strategy that cuts tables where its own levels say (`recursive`, `paragraph`,
`sentence`) and `markdown` for reference, in characters (and tokens 512). Tables and rows are the parser's
(`kireme.text.markdown.markdown_outline`). Per configuration:

* ``among rows``: chunks that start among a table's body rows (after its header);
* ``with header``: of those, the ones whose ``embed_text`` holds the table's header in front;
* ``in a row``: chunks with a start or end strictly inside a row that fits a chunk (a row's last cells in
  the next chunk);
* ``header parted``: chunks with a start or end strictly inside a table's header lines and first body row
  where those fit a chunk together (else inside the header lines, where they fit): the column names in
  one chunk, the rows they name in the next;
* ``over``: chunks whose ``embed_text`` is over ``max_size`` (0 is the contract).

Skips cleanly when the corpus is absent.
"""

from __future__ import annotations

import argparse
import sys
from bisect import bisect_right
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kireme import Document, make_chunker
from kireme.text.markdown import Table, markdown_outline
from throughput_docs import load_set

STRATEGIES = ("recursive", "paragraph", "sentence", "markdown")


def _header_guard(
    text: str, table: Table, size_of: Callable[[str], int], size: int
) -> tuple[int, int] | None:
    """The span no chunk edge should fall inside: the header lines with the first body row where they fit a
    chunk together, else the header lines where they fit; ``None`` where not even those fit."""
    start, end = table.header
    if table.rows and size_of(text[start : table.rows[0].end]) <= size:
        return start, table.rows[0].end
    return (start, end) if size_of(text[start:end]) <= size else None


def measure(texts: list[str], strategy: str, unit: str, size: int, fmt: str = "markdown") -> dict[str, int]:
    """The counts of one configuration over every text read as ``fmt``; the tables are Markdown's."""
    chunker = make_chunker(strategy, max_size=size, unit=unit)
    counts = {"chunks": 0, "among rows": 0, "with header": 0, "in a row": 0, "header parted": 0, "over": 0}
    for i, text in enumerate(texts):
        doc = Document(text, id=f"d{i}", metadata={"format": fmt})
        tables = markdown_outline(text, warn=False).tables
        bodies = [(t.header[1], t.end, text[t.header[0] : t.header[1]].split("\n")[0]) for t in tables]
        body_starts = [b for b, _, _ in bodies]
        rows = [
            (r.start, r.end) for t in tables for r in t.rows if chunker.measure(text[r.start : r.end]) <= size
        ]
        row_starts = [a for a, _ in rows]
        heads = [guard for t in tables if (guard := _header_guard(text, t, chunker.measure, size))]
        for chunk in chunker.chunk(doc):
            counts["chunks"] += 1
            counts["over"] += chunker.measure(chunk.embed_text) > size
            j = bisect_right(body_starts, chunk.start) - 1
            if j >= 0 and chunk.start < bodies[j][1]:
                counts["among rows"] += 1
                header_cells = [c.strip() for c in bodies[j][2].strip().strip("|").split("|")]
                prefix = chunk.embed_text[: len(chunk.embed_text) - len(chunk.text)]
                counts["with header"] += all(c in prefix for c in header_cells)
            if any(a < cut < b for a, b in heads for cut in (chunk.start, chunk.end)):
                counts["header parted"] += 1
            for cut in (chunk.start, chunk.end):
                k = bisect_right(row_starts, cut) - 1
                if k >= 0 and rows[k][0] < cut < rows[k][1]:
                    counts["in a row"] += 1
                    break
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--corpora", type=Path, default=Path(__file__).resolve().parents[1] / ".." / "shared" / "corpora"
    )
    ap.add_argument("--sizes", type=int, nargs="+", default=[400, 1000])
    ap.add_argument("--strategies", nargs="+", default=list(STRATEGIES))
    ap.add_argument(
        "--format",
        choices=["markdown", "text"],
        default="markdown",
        help="read each file as Markdown (as `kireme chunk` reads a .md file) or as plain text (a .txt file)",
    )
    args = ap.parse_args()
    docs = load_set(args.corpora, "ja-techdocs-md")
    if docs is None:
        print(f"skipped: ja-techdocs-md not found under {args.corpora}")
        return
    configs = [("chars", size) for size in args.sizes] + [("tokens", 512)]
    print("| strategy | size | chunks | among rows | with header | in a row | header parted | over |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for strategy in args.strategies:
        for unit, size in configs:
            c = measure(docs.texts, strategy, unit, size, args.format)
            print(
                f"| `{strategy}` | {size} {unit} | {c['chunks']:,} | {c['among rows']} | {c['with header']} "
                f"| {c['in a row']} | {c['header parted']} | {c['over']} |"
            )


if __name__ == "__main__":
    main()
