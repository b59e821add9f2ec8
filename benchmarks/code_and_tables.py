"""Code in the context a reader gets: passages cut out of fenced code blocks, and the prompt `kireme ask` sends.

Technical documentation is full of fenced code blocks, and a budget is often spent on part of one: a hit
is a piece of a large block, or a passage grows or is cut to fit inside one. Two things went wrong before
2026-12-05: a fence line on its own (```` ```css ````, nothing to read) could be passed as a filler because
its info string held a query term, and in the prompt of `kireme ask` (``POST /ask``) a passage that stopped
inside a block left its fence open, so the next passage's citation line and text were read as code (a
Markdown reader, and a chat model reading Markdown, sees them so). Now a fence line goes with the line of
code next to it in the assembly (`kireme.assemble._Reading`), and the prompt puts the fences of the block
a passage starts or ends inside around it (`kireme.text.markdown.fences_around`).

* **Documents**: every Markdown file of ``../shared/corpora/ja-techdocs-md`` (React, Vite and the Rust book
  in Japanese); ``markdown`` chunks of 320 cl100k_base tokens (the `kireme index` default); BM25 over
  ``embed_text`` (`kireme.evaluate.retrievers.BM25Retriever`), the best 60 chunks.
* **Queries**: the section headings (`benchmarks/comments.py`'s ``questions``), the first ``--limit``.
* **Printed**: per character budget, the passages of `kireme.index.passages.assemble_hits` (what `kireme
  search --budget` passes) that are fence lines only, and that start or end inside a code block; per token
  budget, the prompt of `kireme.index.passages.render_passages` parsed by markdown-it: citation lines read
  as code, with the fences and without them (the render as it was), and the tokens the fences take.

    .venv/bin/python benchmarks/code_and_tables.py [--corpora ../shared/corpora] [--limit 600]

A clean skip (exit 0, a message) when the corpus is absent.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any
from unittest import mock

from markdown_it import MarkdownIt

import kireme.index.passages as passages
from kireme.assemble import ContextSpan

try:  # the module that frames passages (since 2026-12-05); absent from older code measured as "before"
    import kireme.framing as framing_module
except ImportError:  # pragma: no cover - an older kireme
    framing_module = passages  # type: ignore[assignment]
from kireme.document import Document
from kireme.evaluate.retrievers import BM25Retriever
from kireme.index.store import Hit, StoredChunk
from kireme.length import Tokens
from kireme.strategies import make_chunker
from kireme.text.markdown import fenced_blocks, fenced_code, fences_around, markdown_outline, table_header_for

sys.path.insert(0, str(Path(__file__).resolve().parent))
from comments import questions  # the heading queries of the comments benchmark

DEFAULT_CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
_FENCE = re.compile(r"[ \t>]*(?:`{3,}|~{3,})[^\n]*")
_CITATION = re.compile(r"\[\d+\] ")


def _citations_in_code(prompt: str, parser: MarkdownIt) -> tuple[int, int]:
    """The citation lines of a prompt, and how many of them a Markdown reader reads as code."""
    lines = prompt.split("\n")
    cites = [i for i, line in enumerate(lines) if _CITATION.match(line)]
    code: set[int] = set()
    for token in parser.parse(prompt):
        if token.type in ("fence", "code_block") and token.map is not None:
            code.update(range(*token.map))
    return len(cites), sum(1 for i in cites if i in code)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    ap.add_argument("--limit", type=int, default=600, help="queries (the first N headings)")
    ap.add_argument("--budgets", type=int, nargs="+", default=[300, 700, 1500], help="characters")
    ap.add_argument("--token-budgets", type=int, nargs="+", default=[300, 1000])
    args = ap.parse_args(argv)
    root = args.corpora / "ja-techdocs-md"
    if not root.is_dir():
        print(f"skipped: {root} not found (the corpus is in ../shared/corpora)")
        return 0
    started = time.perf_counter()
    texts = {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(root.rglob("*.md"))
        if p.name != "SOURCE.md"
    }
    chunker = make_chunker("markdown", max_size=320, unit="tokens")
    chunks = [
        c
        for doc_id, text in texts.items()
        for c in chunker.chunk(Document(text, id=doc_id, metadata={"format": "markdown"}))
    ]
    retriever = BM25Retriever()
    retriever.fit(chunks)
    qs = [q for doc_id, text in texts.items() for q in questions(doc_id, text)][: args.limit]
    code = {doc_id: fenced_code(text) for doc_id, text in texts.items()}
    fenced = {doc_id: fenced_blocks(text) for doc_id, text in texts.items()}
    blocks = sum(map(len, code.values()))
    print(
        f"ja-techdocs-md: {len(texts)} files, {blocks:,} fenced code blocks, {len(chunks):,} chunks, {len(qs)} queries"
    )

    def hits_for(query: str) -> list[Hit]:
        found = [chunks[i] for i in retriever.search(query, 60)]
        return [
            Hit(
                StoredChunk(
                    id=c.id, doc_id=c.doc_id, index=c.index, start=c.start, end=c.end, text=c.text,
                    embed_text=c.embed_text, headings=c.headings, title="", source=c.doc_id,
                    format="markdown", metadata={},
                ),
                1.0 / rank,
            )
            for rank, c in enumerate(found, start=1)
        ]  # fmt: skip

    ranked = [(query, hits_for(query)) for _, query, _, _ in qs]
    print("\n| characters | passages | fence lines only | starting inside a block | ending inside a block |")
    print("|---:|---:|---:|---:|---:|")
    for budget in args.budgets:
        n = alone = starts = ends = 0
        for query, hits in ranked:
            made = passages.assemble_hits(hits, budget, texts.get, query=query)
            for passage in made.passages:
                span = passage.span
                n += 1
                lines = [line for line in span.text.splitlines() if line.strip()]
                alone += all(_FENCE.fullmatch(line) for line in lines)
                for cs, ce in code[span.doc_id]:
                    opening_end = texts[span.doc_id].find("\n", cs, ce)
                    starts += opening_end >= 0 and opening_end < span.start < ce
                    ends += cs < span.end < ce and not _FENCE.fullmatch(lines[-1])
        print(f"| {budget:,} | {n:,} | {alone} | {starts} | {ends} |")

    parser = MarkdownIt("commonmark")
    tokens = Tokens()
    outlines = {doc_id: markdown_outline(text, warn=False) for doc_id, text in texts.items()}
    print(
        "\n| tokens | prompts | citation lines | read as code: framed / as before | passages starting among "
        "a table's rows | of them with the header nowhere in the prompt: framed / as before "
        "| tokens the framing takes, mean per prompt |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    real_render = passages._render
    seen: list[list[ContextSpan]] = []

    def capture(hits: Any, made: Any, *rest: Any) -> Any:
        seen.append(list(made.spans))
        return real_render(hits, made, *rest)

    def in_rows(span: ContextSpan) -> bool:
        return any(t.header[1] < span.start < t.end for t in outlines[span.doc_id].tables)

    for budget in args.token_budgets:
        cited = bad_framed = bad_plain = rows = headless_framed = headless_plain = spent = 0
        for query, hits in ranked:
            seen.clear()
            with mock.patch.object(passages, "_render", capture):
                rendered = passages.render_passages(hits, budget, texts.get, query=query)
            n_cites, bad = _citations_in_code(rendered.text, parser)
            cited += n_cites
            bad_framed += bad
            for span in seen[-1] if seen else []:
                text = texts[span.doc_id]
                header = table_header_for(text, outlines[span.doc_id].tables, span.start)
                before, after = fences_around(fenced[span.doc_id], span.start, span.end)
                framing = header + before + after
                spent += tokens(header + before) + tokens(after) if framing else 0
                if in_rows(span):
                    rows += 1
                    headless_framed += header not in rendered.text
            seen.clear()
            with (
                mock.patch.object(framing_module, "fences_around", lambda *_: ("", ""), create=True),
                mock.patch.object(framing_module, "table_header_for", lambda *_: "", create=True),
                mock.patch.object(passages, "fences_around", lambda *_: ("", ""), create=True),  # f09f98b's
                mock.patch.object(passages, "table_header_for", lambda *_: "", create=True),
                mock.patch.object(passages, "_render", capture),
            ):
                plain = passages.render_passages(hits, budget, texts.get, query=query)
            bad_plain += _citations_in_code(plain.text, parser)[1]
            for span in seen[-1] if seen else []:
                if in_rows(span):
                    text = texts[span.doc_id]
                    headless_plain += (
                        table_header_for(text, outlines[span.doc_id].tables, span.start) not in plain.text
                    )
        print(
            f"| {budget:,} | {len(ranked)} | {cited:,} | {bad_framed} / {bad_plain} | {rows} "
            f"| {headless_framed} / {headless_plain} | {spent / len(ranked):.1f} |"
        )
    print(f"\n{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
