"""What a passage cut out of a table or a code block needs around it to be read as one.

A passage of a context is an exact slice of its document. Cut out of a table it is rows without the header
that names their columns; cut out of a fenced code block it is code without its language, or a fence left
open that turns whatever a prompt puts after it into code. `Framing` gives the lines a reader needs
around such a passage — the table's header above it (`kireme.text.markdown.table_header_for`), the fences
of the code block it starts or ends inside (`kireme.text.markdown.fences_around`) — and is what
`kireme.assemble.Assembler` counts in the budget (``framing``): `kireme ask`'s prompt (``POST /ask``,
`kireme.index.passages.render_passages`) puts them around its passages. `kireme search --budget` and
`kireme eval --budget` pass exact slices without them (counting them there cost hits at small budgets),
but read tables by rows and code blocks by lines with `Framing.tables` and `Framing.code` all the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from kireme.assemble import Context, ContextSpan
from kireme.document import Document
from kireme.structure.layout import document_outline
from kireme.text.markdown import (
    MARKDOWN_FORMATS,
    CodeBlock,
    Table,
    fenced_blocks,
    fences_around,
    table_header_for,
)
from kireme.text.tableheaders import TABLE_FORMATS

__all__ = ["TABLE_FORMATS", "Framing", "table_rows", "tables_of"]


def tables_of(
    text_of: Callable[[str], str | None], formats: Mapping[str, str]
) -> Callable[[str], tuple[Table, ...]]:
    """``doc_id -> tables`` of the documents that have them as kireme reads them (Markdown pipe tables, in
    Markdown, HTML, DOCX and notebooks, and those of a plain text; a CSV or TSV file as one table), each
    document's outline read once, when asked for; none for any other document. ``formats``: each
    document's format."""
    found: dict[str, tuple[Table, ...]] = {}

    def tables(doc_id: str) -> tuple[Table, ...]:
        if doc_id not in found:
            fmt = formats.get(doc_id, "")
            text = text_of(doc_id) if fmt in TABLE_FORMATS else None
            found[doc_id] = (
                ()
                if text is None
                else document_outline(Document(text, id=doc_id, metadata={"format": fmt})).tables
            )
        return found[doc_id]

    return tables


def table_rows(tables: Callable[[str], tuple[Table, ...]]) -> Callable[[str], list[tuple[int, int, int]]]:
    """``doc_id -> (start, end, end of the header)`` of each table (`tables_of`): what
    `kireme.assemble.Assembler` reads by rows."""
    return lambda doc_id: [(t.start, t.end, t.header[1]) for t in tables(doc_id)]


class Framing:
    """The lines a passage ``[start, end)`` of a document needs around it, for documents of the given
    ``formats`` whose texts ``text_of`` gives: called with ``(doc_id, start, end)`` it is an
    `kireme.assemble.Assembler`'s ``framing``. ``code`` and ``tables`` are the documents' fenced code
    blocks and tables, for the assembler to read by lines and rows."""

    def __init__(self, text_of: Callable[[str], str | None], formats: Mapping[str, str]) -> None:
        self.text_of = text_of
        self._markdown = {doc_id for doc_id, fmt in formats.items() if fmt in MARKDOWN_FORMATS}
        self._blocks: dict[str, list[CodeBlock]] = {}
        self.tables = tables_of(text_of, formats)

    def blocks(self, doc_id: str) -> list[CodeBlock]:
        """The fenced code blocks of a Markdown document (`fenced_blocks`), read once; none for another."""
        found = self._blocks.get(doc_id)
        if found is None:
            text = self.text_of(doc_id) if doc_id in self._markdown else None
            found = self._blocks[doc_id] = [] if text is None else fenced_blocks(text)
        return found

    def code(self, doc_id: str) -> list[tuple[int, int]]:
        """``(start, end)`` of each fenced code block of the document: what the assembler reads by lines."""
        return [(block.start, block.end) for block in self.blocks(doc_id)]

    def __call__(self, doc_id: str, start: int, end: int) -> tuple[str, str]:
        text = self.text_of(doc_id)
        if text is None:
            return "", ""
        header = table_header_for(text, self.tables(doc_id), start)
        before, after = fences_around(self.blocks(doc_id), start, end)
        return header + before, after

    def of_span(self, span: ContextSpan) -> tuple[str, str]:
        """The lines around ``span``; none for a hit passed as its own text (its document no longer holds it)."""
        text = self.text_of(span.doc_id)
        if text is None or text[span.start : span.end] != span.text:
            return "", ""
        return self(span.doc_id, span.start, span.end)

    def unframed(self, span: ContextSpan) -> str:
        """``span``'s text passed without the lines around it, less a fence line it holds alone: the closing
        fence of a block it starts inside (its opening line is not in the passage) and the opening fence of
        a block it ends inside (it would stay open and turn what follows it in a prompt into code)."""
        text = span.text
        doc_text = self.text_of(span.doc_id)
        if doc_text is None or doc_text[span.start : span.end] != text:
            return text
        drop: list[tuple[int, int]] = []  # spans of the document to leave out
        for block in self.blocks(span.doc_id):
            if block.end <= span.start or block.start >= span.end or not block.opening:
                continue
            opening_end = block.start + len(block.opening)
            if block.closed and opening_end < span.start and block.end <= span.end:
                # a closing fence without its opening: its line, line feed and all
                after = block.end + 1 if doc_text[block.end : block.end + 1] == "\n" else block.end
                drop.append((block.end - len(block.closing), min(span.end, after)))
            if span.start <= block.start and opening_end < span.end < block.end - len(block.closing):
                drop.append((block.start, min(span.end, opening_end + 1)))  # an opening fence left open
        if not drop:
            return text
        kept, pos = [], span.start
        for a, b in sorted(drop):
            kept.append(doc_text[pos:a])
            pos = max(pos, b)
        kept.append(doc_text[pos : span.end])
        return "".join(kept).strip("\r\n")

    def needed(self, made: Context) -> bool:
        """Whether some passage of ``made`` starts among a table's rows or starts or ends inside a code block."""
        return any(self.of_span(span) != ("", "") for span in made.spans)

    @staticmethod
    def costs_nothing(
        framed: Context, plain: Context | None, hit_span: Callable[[int], tuple[int, int]] | None = None
    ) -> bool:
        """Whether the framed context still holds the best hit the one as it is holds, there where it holds
        it (a passage overlapping each of its passages of that hit, not another part of the same hit: a
        header taking the room of the answer row may leave a paragraph far from it): a header or a fence
        is worth its room unless it pushes that text out (the answer row for its column names); a later
        hit's passage may give way to it, as any later passage gives way to a better one. ``hit_span``:
        the offsets of the hit of a rank; then the framed context must overlap the hit's own text in each
        such passage, not only the sentences the passage grew by around it."""
        if plain is None:
            return True
        best = min(plain.ranks, default=0)
        held = [s for s in plain.spans if best in s.ranks]  # the best hit's text the plain context passes
        if hit_span is not None and held:
            lo, hi = hit_span(best)
            own = [replace(s, start=max(s.start, lo), end=min(s.end, hi)) for s in held]
            held = [s for s in own if s.start < s.end] or held
        return bool(framed.ranks) and all(
            any(f.doc_id == s.doc_id and f.start < s.end and s.start < f.end for f in framed.spans)
            for s in held
        )
