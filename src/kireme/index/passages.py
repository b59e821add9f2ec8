"""Search results turned into the context a reader gets within a budget: spans of the indexed documents.

`kireme search --budget`, `kireme ask` and the Python API call `budgeted_context`: the ranked hits of a
`Searcher` go to `kireme.assemble` (merged, grown at sentence boundaries, never over the budget) with the
documents' texts that `kireme index` keeps in the manifest, so every span is an exact slice of its
document. A document indexed before texts were kept has its hits passed whole (still exact, not grown).

`render_passages` makes the string a chat model reads — each span under a line citing its source and
heading path — and checks its size against the budget on the exact string.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kireme.assemble import (
    DEFAULT_WIDEN,
    Assembler,
    Context,
    ContextSpan,
    HiddenOf,
    PathOf,
    Ranked,
    measure_of,
    same_passage,
)
from kireme.errors import BudgetTooSmallError, ConfigError
from kireme.framing import Framing, table_rows
from kireme.index.context import AssembledContext, Source, _one_line, _page_key, _source_name
from kireme.index.context import _chunk_pages as _pages
from kireme.index.manifest import Manifest
from kireme.index.store import Hit, StoredChunk
from kireme.length import Tokens
from kireme.text.articles import document_headings
from kireme.text.markdown import (
    MARKDOWN_FORMATS,
    HeadingPaths,
    comment_blocks,
)

UNITS = ("chars", "tokens")


@dataclass(frozen=True)
class Passage:
    """One span of the context with where it came from: the `ContextSpan` and its document's source
    path and title (from the best hit it holds), the pages of the hits it holds and, for a transcript
    (`.srt`, `.vtt`), the time its earliest hit starts at."""

    span: ContextSpan
    source: str
    title: str
    pages: tuple[Any, ...] = ()
    time: str | None = None  # a transcript's: the start of the earliest hit it holds (``00:01:02.500``)

    def to_dict(self) -> dict[str, Any]:
        """The JSON row of ``kireme search --budget``: doc_id, source, title, start, end, headings, ranks
        (1-based ranks of the hits it holds), size (in the budget's unit), cut, pages, time (transcripts
        only), text."""
        row = self.span.to_dict()
        text = row.pop("text")
        row.update({"source": self.source, "title": self.title, "pages": list(self.pages)})
        if self.time is not None:
            row["time"] = self.time
        row["text"] = text
        return row


@dataclass(frozen=True)
class BudgetedContext:
    """What `budgeted_context` returns: the passages (documents by best hit, spans in document order),
    the hits they were made from (best first), and the `Context` with its size and budget."""

    passages: tuple[Passage, ...]
    hits: tuple[Hit, ...]
    context: Context
    texts_known: int = 0  # documents whose kept text let their hits grow

    @property
    def text(self) -> str:
        return self.context.text

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.context.to_dict().items() if k != "spans"}
        out["passages"] = [p.to_dict() for p in self.passages]
        return out


def manifest_texts(db: str | Path) -> Callable[[str], str | None]:
    """``doc_id -> text`` from an index directory's manifest (``None`` for a document without a current
    kept text). Opens the manifest on first use and keeps each text read."""
    cache: dict[str, str | None] = {}
    manifest: list[Manifest] = []

    def text_of(doc_id: str) -> str | None:
        if doc_id not in cache:
            if not manifest:
                manifest.append(Manifest(Path(db) / "manifest.sqlite"))
            cache[doc_id] = manifest[0].current_text(doc_id)
        return cache[doc_id]

    return text_of


def document_paths(hits: Sequence[Hit], text_of: Callable[[str], str | None]) -> PathOf:
    """``(doc_id, start, end) -> heading path`` for the documents among ``hits`` that have headings
    (Markdown files, and HTML, DOCX and notebooks as kireme loads them; rules and laws as plain text or
    PDF, by their articles): the path all of that part of the kept text shares, made as a chunk's
    ``headings`` are (`kireme.text.articles.document_headings`, read once per document, only when a part
    of it is asked for); ``None`` for any other document."""
    formats = {h.chunk.doc_id: h.chunk.format for h in hits if h.chunk.format in _WITH_HEADINGS}
    outlines: dict[str, HeadingPaths | None] = {}

    def path_of(doc_id: str, start: int, end: int) -> tuple[str, ...] | None:
        if doc_id not in formats:
            return None
        if doc_id not in outlines:
            text = text_of(doc_id)
            headings = None if text is None else document_headings(text, formats[doc_id])
            outlines[doc_id] = None if headings is None else HeadingPaths(headings)
        paths = outlines[doc_id]
        return None if paths is None else paths.titles(start, end)[0]

    return path_of


# the formats whose documents may have headings (`document_headings`)
_WITH_HEADINGS = MARKDOWN_FORMATS | {"text", "pdf"}


def markdown_hidden(hits: Sequence[Hit], text_of: Callable[[str], str | None]) -> HiddenOf:
    """``doc_id -> spans`` a reader never sees, for the documents among ``hits`` whose text is Markdown:
    their top-level HTML comments (`kireme.text.markdown.comment_blocks`: a translation's original above
    each paragraph, notes to the authors), left out of the context; none for any other document."""
    markdown = {h.chunk.doc_id for h in hits if h.chunk.format in MARKDOWN_FORMATS}

    def hidden(doc_id: str) -> list[tuple[int, int]]:
        text = text_of(doc_id) if doc_id in markdown else None
        return [] if text is None else comment_blocks(text)

    return hidden


def hit_formats(hits: Sequence[Hit]) -> dict[str, str]:
    """``doc_id -> format`` of the documents among ``hits``."""
    return {h.chunk.doc_id: h.chunk.format for h in hits}


def measure_for(unit: str) -> Callable[[str], int]:
    """``len`` for ``"chars"``, cl100k_base tokens (offline) for ``"tokens"``."""
    if unit not in UNITS:
        raise ConfigError(f"unknown budget unit {unit!r}: choose chars or tokens")
    return measure_of(unit)


def candidates_for(budget: int, unit: str, k: int = 5) -> int:
    """How many hits to rank for a budget: enough small chunks to fill it twice over, at least ``k``."""
    per_hit = 40 if unit == "chars" else 25
    return max(k, min(200, 10 + math.ceil(2 * budget / per_hit)))


def ranked(hits: Sequence[Hit]) -> list[Ranked]:
    return [
        Ranked(
            h.chunk.doc_id,
            h.chunk.start,
            h.chunk.end,
            h.chunk.text,
            tuple(h.chunk.headings),
            h.score,
            metadata={"id": h.chunk.id},
        )
        for h in hits
    ]


def passages_from(hits: Sequence[Hit], made: Context) -> tuple[Passage, ...]:
    """Each span of ``made`` with the source, title and pages of the hits it holds."""
    out = []
    for span in made.spans:
        held = [hits[r - 1].chunk for r in span.ranks if 0 < r <= len(hits)]
        best: StoredChunk | None = held[0] if held else None
        pages: list[Any] = []
        for chunk in held:
            pages.extend(_pages(chunk.metadata))
        times = [t for t in (chunk.metadata.get("time") for chunk in held) if isinstance(t, str)]
        out.append(
            Passage(
                span=span,
                source=best.source if best else "",
                title=best.title if best else "",
                pages=tuple(sorted(set(pages), key=_page_key)),
                time=min(times) if times else None,
            )
        )
    return tuple(out)


def assemble_hits(
    hits: Sequence[Hit],
    budget: int,
    text_of: Callable[[str], str | None],
    *,
    unit: str = "chars",
    query: str = "",
    policy: str = "spans",
    widen: float = DEFAULT_WIDEN,
    overhead: Callable[[str, tuple[str, ...]], int] | None = None,
    comments: bool = False,
) -> BudgetedContext:
    """`kireme.assemble` over search hits (best first): the context within ``budget`` ``unit``, exact slices
    of the documents (tables read by rows, code blocks by lines). The HTML comments of Markdown documents
    are left out (`markdown_hidden`) unless ``comments``."""
    framing = Framing(text_of, hit_formats(hits))  # for its code blocks and tables; nothing is added
    made = Assembler(
        text_of,
        measure_for(unit),
        unit=unit,
        policy=policy,
        widen=widen,
        overhead=overhead,
        paths=document_paths(hits, text_of),
        hidden=None if comments else markdown_hidden(hits, text_of),
        code=framing.code,
        tables=table_rows(framing.tables),
    ).assemble(ranked(hits), budget, query)
    known = sum(1 for d in {h.chunk.doc_id for h in hits} if text_of(d) is not None)  # not blanked for this
    return BudgetedContext(passages_from(hits, made), tuple(hits), made, known)


def budgeted_context(
    searcher: Any,
    query: str,
    budget: int,
    *,
    unit: str = "chars",
    k: int = 5,
    mode: str = "hybrid",
    where: Mapping[str, str] | None = None,
    exact: bool = False,
    policy: str = "spans",
    widen: float = DEFAULT_WIDEN,
    comments: bool = False,
) -> BudgetedContext:
    """Search ``searcher`` (a `kireme.index.search.Searcher`) for ``query`` and assemble the context within
    ``budget`` ``unit`` from the ranked hits and the documents' kept texts (the HTML comments of Markdown
    documents left out unless ``comments``)."""
    if not isinstance(budget, int) or isinstance(budget, bool) or budget <= 0:
        raise ConfigError(f"the context budget must be a whole number of {unit} > 0, got {budget!r}")
    measure_for(unit)
    hits = searcher.search(query, candidates_for(budget, unit, k), mode, where, exact=exact)
    return assemble_hits(
        hits,
        budget,
        manifest_texts(searcher.db),
        unit=unit,
        query=query,
        policy=policy,
        widen=widen,
        comments=comments,
    )


# ------------------------------------------------------------------------------------ for a chat model


def render_passages(
    hits: Sequence[Hit],
    budget: int,
    text_of: Callable[[str], str | None],
    *,
    query: str = "",
    measure: Callable[[str], int] | None = None,
    separator: str = "\n\n",
    widen: float = DEFAULT_WIDEN,
    comments: bool = False,
) -> AssembledContext:
    """The context string for a chat model within ``budget`` tokens (of ``measure``, cl100k_base by
    default): passages assembled from exact offsets, each under a line citing its source, heading path
    and pages (``[1] 規程/旅費.md — 第3章 宿泊 > 第3条 宿泊費 (p.3)``); documents numbered by their best
    hit. The size is checked on the exact string returned. The HTML comments of Markdown documents are left
    out (a passage around one is passed as its parts under one citation) unless ``comments``."""
    measure = measure if measure is not None else Tokens()
    if budget <= 0:
        return AssembledContext(text="", skipped=list(hits), budget=budget)
    sep = measure(separator)
    chunks = {h.chunk.doc_id: h.chunk for h in reversed(hits)}  # the best hit of each document
    widest = f"[{len(chunks)}] "  # no document number is wider

    def citation(doc_id: str, headings: tuple[str, ...]) -> str:
        """``規程/旅費.md — 第3章 宿泊 > 第3条 宿泊費``: a span's header after its ``[n] ``."""
        path = [line for line in (_one_line(h) for h in headings) if line]
        return _source_name(chunks[doc_id]) + (" — " + " > ".join(path) if path else "")

    def overhead(doc_id: str, headings: tuple[str, ...]) -> int:
        return measure(widest + citation(doc_id, headings) + "\n") + sep

    paths = document_paths(hits, text_of)
    hidden = None if comments else markdown_hidden(hits, text_of)
    framing = Framing(text_of, hit_formats(hits))
    tables = table_rows(framing.tables)

    needs: list[int] = []  # what a refusal said the smallest budget is (`BudgetTooSmallError`)

    def fitted(framed: bool, target: int) -> tuple[Context, str, list[Hit], list[Source], int] | None:
        """The context rendered within the budget, its passages framed (`Framing`) or as they are, with
        its size; ``None`` when nothing fits. ``target``: the budget the assembly is given first (lowered
        while the rendered text runs over)."""
        for _ in range(6):
            try:
                made = Assembler(
                    text_of,
                    measure,
                    unit="tokens",
                    widen=widen,
                    overhead=overhead,
                    paths=paths,
                    hidden=hidden,
                    code=framing.code,
                    tables=tables,
                    framing=framing if framed else None,
                ).assemble(ranked(hits), target, query)
            except BudgetTooSmallError as exc:
                # asked of a target below the budget (the rendered text ran over): the budget itself needs
                # what the target lacked as well
                needs.append(exc.needs + budget - target)
                return None
            except ConfigError:
                return None
            text, used, sources = _render(
                hits, made, citation, separator, framing.of_span if framed else None, framing.unframed
            )
            size = measure(text)
            if size <= budget:
                if made.best_left_out and target != budget:  # what the target lacked, the budget lacks too
                    made = replace(made, best_needs=made.best_needs + budget - target)
                return made, text, used, sources, size
            target -= size - budget + 1
            if target <= 0:
                break
        return None

    # each passage's overhead counts the separator before it, which the first has none of: the assembly
    # may take that much more (a budget exactly the size of one passage and its citation passed none)
    roomy = budget + sep

    def hit_span(rank: int) -> tuple[int, int]:
        chunk = hits[rank - 1].chunk
        return chunk.start, chunk.end

    best = plain = fitted(False, roomy)
    if plain is None or framing.needed(plain[0]):
        framed = fitted(True, roomy)
        if framed is not None:
            if framing.costs_nothing(framed[0], plain[0] if plain else None, hit_span):
                best = framed
            elif sep:
                # the plain context holds the best hit's text by the room of that separator, the framed one
                # (a fence or header more) does not: framed, as without that room, rather than left open
                tighter = fitted(False, budget)
                if tighter is None or framing.costs_nothing(framed[0], tighter[0], hit_span):
                    best = framed
    if best is None:
        return AssembledContext(text="", skipped=list(hits), budget=budget, best_needs=min(needs, default=0))
    made, text, used, sources, size = best
    skipped = [h for i, h in enumerate(hits, start=1) if i not in set(made.ranks)]
    return AssembledContext(
        text=text,
        used=used,
        skipped=skipped,
        tokens=size,
        sources=sources,
        budget=budget,
        best_cut=made.cut,
        best_left_out=made.best_left_out,
        best_needs=made.best_needs,
    )


def _render(
    hits: Sequence[Hit],
    made: Context,
    citation: Callable[[str, tuple[str, ...]], str],
    separator: str,
    framing: Callable[[ContextSpan], tuple[str, str]] | None = None,
    unframed: Callable[[ContextSpan], str] | None = None,
) -> tuple[str, list[Hit], list[Source]]:
    """The blocks ``[n] citation`` + passage text, documents numbered by their best hit (the order the
    spans come in), the hits used, and one `Source` per document. The parts of one passage (spans of one
    document holding the same ranks: what was left around its hidden text) go under one citation.
    ``framing(span)``: the lines to put before and after a span's text (the header of the table it starts
    inside, the fences of the code block it starts or ends inside); without it, ``unframed(span)``: the text
    passed, a fence line it holds alone left out (`Framing.unframed`)."""
    blocks: list[str] = []
    used: list[Hit] = []
    sources: list[Source] = []
    by_doc: dict[str, list[ContextSpan]] = {}
    for span in made.spans:
        by_doc.setdefault(span.doc_id, []).append(span)
    for number, (doc_id, spans) in enumerate(by_doc.items(), start=1):
        paths: list[tuple[str, ...]] = []
        pages: list[Any] = []
        offsets = sorted({(span.start, span.end) for span in spans})
        first: StoredChunk | None = None
        for k, span in enumerate(spans):
            text = span.text.strip(chr(13) + chr(10))
            if framing is not None:
                before, after = framing(span)
                text = before + text + after
            elif unframed is not None:
                text = unframed(span).strip(chr(13) + chr(10))
            if k and same_passage(spans[k - 1], span):
                blocks[-1] += separator + text  # a part of the same passage
                continue
            blocks.append(f"[{number}] {citation(doc_id, span.headings)}\n{text}")
            for r in span.ranks:
                chunk = hits[r - 1].chunk
                first = first or chunk
                used.append(hits[r - 1])
                pages.extend(_pages(chunk.metadata))
            if span.headings and tuple(span.headings) not in paths:
                paths.append(tuple(span.headings))
        if first is not None:
            sources.append(
                Source(
                    number=number,
                    source=_source_name(first),
                    doc_id=doc_id,
                    title=first.title,
                    headings=tuple(paths),
                    pages=tuple(sorted(set(pages), key=_page_key)),
                    spans=tuple(offsets),
                )
            )
    return separator.join(blocks), used, sources
