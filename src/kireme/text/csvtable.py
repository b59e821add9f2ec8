"""CSV and TSV files as one table whose rows keep exact offsets into the decoded text.

Python's `csv` module gives cell values but no positions, so records are found here first (a line break
ends a record unless it is inside double quotes, where RFC 4180 allows it) and each record's text is
then handed to `csv` for its cells. The first non-blank record is the header.
"""

from __future__ import annotations

import csv

from kireme.text.markdown import Outline, Table, TableRow


def record_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every non-blank record, line breaks excluded; quoted line breaks stay inside."""
    spans: list[tuple[int, int]] = []
    in_quotes = False
    start = 0
    n = len(text)
    i = 0
    while i < n:
        ch = text[i]
        if ch == '"':
            in_quotes = not in_quotes  # "" inside a quoted field toggles twice: no net change
        elif ch == "\n" and not in_quotes:
            _add(text, start, i, spans)
            start = i + 1
        i += 1
    _add(text, start, n, spans)
    return spans


def _add(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    while end > start and text[end - 1] == "\r":
        end -= 1
    if text[start:end].strip():
        spans.append((start, end))


def _cells(record: str, delimiter: str) -> tuple[str, ...]:
    try:
        row = next(csv.reader([record], delimiter=delimiter, strict=False), [])
    except csv.Error:
        row = record.split(delimiter)
    return tuple(cell.strip() for cell in row)


def csv_outline(text: str, dialect: str = "csv", name: str = "") -> Outline:
    """The whole text as one table (``dialect`` ``"csv"`` or ``"tsv"``); no table when it is empty."""
    delimiter = "\t" if dialect == "tsv" else ","
    spans = record_spans(text)
    if not spans:
        return Outline()
    cells = [_cells(text[s:e], delimiter) for s, e in spans]
    first = _header_index(cells)
    header = spans[first]
    rows = tuple(
        TableRow(s, e, row)
        for (s, e), row in zip(spans[first + 1 :], cells[first + 1 :], strict=True)
        if any(row)  # a row of empty cells (``,,,``: Excel's blank row) is no record
    )
    table = Table(
        start=header[0],
        end=spans[-1][1],
        header=header,
        columns=cells[first],
        rows=rows,
        dialect=dialect,
        name=name,
    )
    starts = (spans[0][0], header[0]) if first else (header[0],)  # a title above the table: its own block
    return Outline(block_starts=starts, tables=(table,), title=name)


def _header_index(cells: list[tuple[str, ...]]) -> int:
    """Which record is the header: the first, unless it holds one filled cell at most (an Excel sheet's
    title in A1, ``価格表（４月改定）,,,``, and blank rows under it) and a later one within the first five
    holds two or more: then that one."""
    if sum(1 for c in cells[0] if c) > 1:
        return 0
    for i, row in enumerate(cells[1:5], start=1):
        if sum(1 for c in row if c) > 1:
            return i
    return 0


def quoted_line_breaks(text: str, records: list[tuple[int, int]] | None = None) -> list[tuple[int, int]]:
    """The records of a CSV or TSV text that hold a line break inside quotes (Excel writes one for a cell
    with Alt+Enter): no cut may fall inside them, or a cell is cut in two (``"業務用、`` | ``５枚セット"``).
    ``records``: the text's `record_spans`, when the caller has them."""
    spans = record_spans(text) if records is None else records
    return [(start, end) for start, end in spans if "\n" in text[start:end]]
