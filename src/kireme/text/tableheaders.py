"""The header of every table of a document, for the chunks that start among its rows.

A table longer than a chunk is cut between rows; the pieces after the first hold rows without the header
that names their columns (``| 大阪 | 15,000円 |`` — fifteen thousand yen of what?). The `markdown` and
`structure` strategies plan tables as sections of their own and repeat the header in each piece's
``embed_text``; every other strategy (`recursive`, `paragraph`, `sentence`, `semantic`) cuts a table where
its own levels say, and `kireme.chunkers.Chunker` puts the header found here in front of the ``embed_text``
of each chunk that starts inside a table's body. ``text`` and its offsets never change.

Tables are the parser's (`kireme.text.markdown`: pipe tables of Markdown, and of HTML, Word and notebooks
rendered as Markdown; the tables of a plain text, `kireme.text.csvtable.text_tables`) and a CSV/TSV
file's header record (`kireme.text.csvtable`).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import lru_cache

from kireme.text.markdown import MARKDOWN_FORMATS, Table

__all__ = ["TABLE_FORMATS", "TableHeaders", "compact_header", "table_headers"]

# the formats whose documents may hold tables (``text``: pipe tables and pasted cells, `text_tables`)
TABLE_FORMATS = MARKDOWN_FORMATS | {"csv", "tsv", "text"}


@dataclass(frozen=True)
class TableHeaders:
    """The tables of one text, in order: where each one's body starts (after its header and, in Markdown,
    its delimiter row) and ends, and the header lines with their line break, as a chunk repeats them."""

    text: str = field(repr=False)
    body_starts: tuple[int, ...]
    ends: tuple[int, ...]
    headers: tuple[str, ...]
    row_starts: tuple[frozenset[int], ...]  # where each table's body rows start

    def at(self, start: int) -> str:
        """The header a chunk starting at ``start`` repeats: its table's, when it starts among the rows
        (after the header), else ``""`` (outside every table, or the chunk holds the header itself)."""
        i = bisect_right(self.body_starts, start) - 1
        if i >= 0 and start < self.ends[i]:
            return self.headers[i]
        return ""

    def tables(self) -> list[tuple[int, int, str, frozenset[int]]]:
        """``(body start, end, header, row starts)`` of each table, in order."""
        return list(zip(self.body_starts, self.ends, self.headers, self.row_starts, strict=True))


_PADDING = re.compile(r"(?<=\S)  +| {2,}(?=\S)|-{4,}")


def compact_header(header: str) -> str:
    """A pipe table's header and delimiter rows without the padding that aligns its columns in the
    source (``| Named    |`` → ``| Named |``, ``|---------|`` → ``|---|``): the same table to a reader
    or a model, in a fraction of the room (an aligned header of a wide table took more than half a chunk,
    and went unrepeated). What every strategy repeats, `markdown` included."""
    return _PADDING.sub(lambda m: "---" if m.group().startswith("-") else " ", header)


def table_headers(text: str, fmt: str) -> TableHeaders | None:
    """The headers of the tables in ``text`` read as ``fmt`` (a loader's format name); ``None`` when the
    format has no tables or the text none. Kept for the last few texts (`clear_text_caches`)."""
    if fmt not in TABLE_FORMATS or (fmt == "text" and "|" not in text and "\t" not in text):
        return None
    return _table_headers(text, fmt)


@lru_cache(maxsize=4)
def _table_headers(text: str, fmt: str) -> TableHeaders | None:
    tables: tuple[Table, ...]
    if fmt in ("csv", "tsv"):
        from kireme.text.csvtable import csv_outline

        tables = csv_outline(text, fmt).tables
    elif fmt == "text":
        from kireme.text.csvtable import text_tables

        tables = text_tables(text)
    else:
        if "|" not in text:  # no pipe table without a pipe: the outline is not asked for
            return None
        from kireme.text.markdown import markdown_outline

        tables = markdown_outline(text, warn=False).tables
    if not tables:
        return None
    headers = []
    for table in tables:
        newline = "\r\n" if text.startswith("\r\n", table.header[1]) else "\n"
        header = text[table.header[0] : table.header[1]]
        if table.dialect == "markdown":
            header = compact_header(header)
        headers.append(header + newline)
    return TableHeaders(
        text=text,
        body_starts=tuple(t.header[1] for t in tables),
        ends=tuple(t.end for t in tables),
        headers=tuple(headers),
        row_starts=tuple(frozenset(row.start for row in t.rows) for t in tables),
    )
