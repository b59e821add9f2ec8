"""What leaving HTML comments out of the context buys on a translated manual (`Assembler(hidden=...)`).

Translations of documentation often keep the original above each heading and paragraph in an HTML comment,
which the rendered page never shows: the Japanese Rust book in ``../shared/corpora/ja-techdocs-md``
(``rust-book-ja``, 106 files) is 57% comments by characters. A context assembled from its chunks spends
that share of the budget on English the reader has already in Japanese. `kireme search --budget`,
`kireme ask` and ``POST /search``/``/ask`` leave the comments of Markdown documents out since 2026-12-05
(``--comments`` passes them); this measures what that changes at the same budget.

* **Questions**: every ``##``–``####`` heading whose section opens with a paragraph (after the comment
  that holds the heading's original): the query is the heading's Japanese title, the gold the section's
  first paragraph (its translation). A hit: the context holds the gold paragraph whole in one passage.
  Heading titles are queries a reader of the book would type; they are not questions with answers, and
  the gold is where the section starts — a measure of what a budget holds, not of answering.
* **Chunks and retriever**: `markdown` at 320 cl100k_base tokens (the `kireme index` default), BM25 over
  each chunk's ``embed_text`` (`kireme.evaluate.retrievers.BM25Retriever`, Japanese bigrams), the best 60
  chunks; `kireme.assemble.Assembler` in characters with the fenced code blocks read by lines and the
  tables by rows, as ``kireme search --budget`` does, once with the comments passed (``comments``) and once left out
  (``hidden``), everything else the same.
* **Printed**: per budget the hit rate of each, the exact McNemar p of the difference, the mean characters
  passed and the share of them inside comments.

    .venv/bin/python benchmarks/comments.py [--corpora ../shared/corpora] [--budgets 300 700 1500 3000]

A clean skip (exit 0, a message) when the corpus is absent.
"""

from __future__ import annotations

import argparse
import sys
import time
from math import comb
from pathlib import Path

from kireme.assemble import Assembler, Ranked
from kireme.document import Document
from kireme.evaluate.retrievers import BM25Retriever
from kireme.strategies import make_chunker
from kireme.text.markdown import comment_blocks, fenced_code, markdown_outline

DEFAULT_CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
_NOT_PARAGRAPH = ("<", "#", "```", "~~~", "-", "*", "+", "|", ">", " ", "\t", "!", "[")


def questions(doc_id: str, text: str) -> list[tuple[str, str, int, int]]:
    """``(doc_id, query, start, end)``: each heading's title and the first paragraph of its section."""
    outline = markdown_outline(text, warn=False)
    starts = [*outline.block_starts, len(text)]
    hidden = {a for a, _ in comment_blocks(text, outline)}
    # by the start of the heading's own line (a heading's ``start`` is the comment above it, its original)
    heads = {text.rfind("\n", 0, h.end) + 1: h for h in outline.headings}
    out = []
    for i, start in enumerate(starts[:-1]):
        head = heads.get(start)
        if head is None or head.level < 2 or not head.title.strip():
            continue
        j = i + 1
        while j < len(starts) - 1 and starts[j] in hidden:
            j += 1  # the comment holding the original of what follows
        if j >= len(starts) - 1 or starts[j] in heads or text.startswith(_NOT_PARAGRAPH, starts[j]):
            continue
        a, b = starts[j], starts[j + 1]
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            out.append((doc_id, head.title, a, b))
    return out


def mcnemar(a: list[bool], b: list[bool]) -> float:
    """Exact two-sided McNemar p (binomial on the questions where exactly one of the two hits)."""
    only_a = sum(x and not y for x, y in zip(a, b, strict=True))
    only_b = sum(y and not x for x, y in zip(a, b, strict=True))
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(only_a, only_b) + 1)) / 2**n
    return min(1.0, 2 * tail)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    ap.add_argument("--budgets", type=int, nargs="+", default=[300, 700, 1500, 3000])
    ap.add_argument("--depth", type=int, default=60, help="chunks ranked per question")
    args = ap.parse_args(argv)
    root = args.corpora / "ja-techdocs-md" / "rust-book-ja" / "src"
    if not root.is_dir():
        print(f"skipped: {root} not found (the corpus is in ../shared/corpora)")
        return 0
    started = time.perf_counter()
    texts = {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in sorted(root.glob("*.md"))}
    chunker = make_chunker("markdown", max_size=320, unit="tokens")
    chunks = [
        c
        for doc_id, text in texts.items()
        for c in chunker.chunk(Document(text, id=doc_id, metadata={"format": "markdown"}))
    ]
    retriever = BM25Retriever()
    retriever.fit(chunks)
    qs = [q for doc_id, text in texts.items() for q in questions(doc_id, text)]
    hidden = {doc_id: comment_blocks(text) for doc_id, text in texts.items()}
    share = sum(b - a for spans in hidden.values() for a, b in spans) / sum(map(len, texts.values()))
    print(
        f"rust-book-ja: {len(texts)} files, {sum(map(len, texts.values())):,} characters ({share:.0%} in comments), "
        f"{len(chunks):,} chunks, {len(qs)} questions"
    )
    code = {doc_id: fenced_code(text) for doc_id, text in texts.items()}
    tables = {
        doc_id: [(t.start, t.end, t.header[1]) for t in markdown_outline(text, warn=False).tables]
        for doc_id, text in texts.items()
    }
    ways = {"comments passed": None, "comments left out": lambda d: hidden[d]}
    results: dict[str, dict[int, tuple[list[bool], list[int], list[int]]]] = {}
    for name, hide in ways.items():
        rows: dict[int, tuple[list[bool], list[int], list[int]]] = {b: ([], [], []) for b in args.budgets}
        # as kireme search does: code blocks read by lines, tables by rows
        assembler = Assembler(texts.get, hidden=hide, code=lambda d: code[d], tables=lambda d: tables[d])
        for doc_id, query, a, b in qs:
            ranked = [
                Ranked(chunks[i].doc_id, chunks[i].start, chunks[i].end, chunks[i].text, chunks[i].headings)
                for i in retriever.search(query, args.depth)
            ]
            for budget in args.budgets:
                made = assembler.assemble(ranked, budget, query)
                hit = any(s.doc_id == doc_id and s.start <= a and b <= s.end for s in made.spans)
                inside = sum(
                    max(0, min(e, s.end) - max(c, s.start)) for s in made.spans for c, e in hidden[s.doc_id]
                )
                passed = sum(len(s.text) for s in made.spans)
                rows[budget][0].append(hit)
                rows[budget][1].append(passed)
                rows[budget][2].append(inside)
        results[name] = rows
    print()
    print(
        "| budget | comments passed: hit / chars / in comments | left out: hit / chars / in comments | ±pp (p) |"
    )
    print("|---:|---:|---:|---:|")
    kept, left = results["comments passed"], results["comments left out"]
    n = len(qs)
    for budget in args.budgets:
        (h1, c1, i1), (h2, c2, i2) = kept[budget], left[budget]
        r1, r2 = sum(h1) / n, sum(h2) / n
        print(
            f"| {budget:,} | {r1:.3f} / {sum(c1) / n:,.0f} / {sum(i1) / max(1, sum(c1)):.0%} "
            f"| {r2:.3f} / {sum(c2) / n:,.0f} / {sum(i2) / max(1, sum(c2)):.0%} "
            f"| {100 * (r2 - r1):+.1f} ({mcnemar(h2, h1):.3g}) |"
        )
    print(f"\n{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
