"""CSV and TSV files as one table whose rows keep exact offsets into the decoded text.

Python's `csv` module gives cell values but no positions, so records are found here first (a line break
ends a record unless it is inside double quotes, where RFC 4180 allows it) and each record's text is
then handed to `csv` for its cells. The first non-blank record is the header.

A plain text holds tables too: a pipe table (`kireme.text.markdown.plain_text_tables`) and cells pasted
from a spreadsheet, which arrive separated by tabs (`pasted_tables`); `text_tables` gives both.
"""

from __future__ import annotations

import csv
import re
from functools import lru_cache

from kireme.text.markdown import Outline, Table, TableRow, plain_text_tables


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


# a line that may be a row pasted from a spreadsheet: a tab between two cells, nothing indented (a line that
# starts with white space is indented text or code, not the first cell of a row)
_TAB_LINE = re.compile(r"^[^\s][^\n]*\t[^\n]*$", re.MULTILINE)
PASTED_ROWS_MIN = 3  # a header and two rows: two lines with a tab each are too little to call a table


def text_tables(text: str) -> tuple[Table, ...]:
    """The tables of a plain text, in order: its pipe tables (`plain_text_tables`) and the cells pasted from
    a spreadsheet (`pasted_tables`) outside them. ``()`` for a text without either."""
    if "|" not in text and "\t" not in text:
        return ()
    pipes = plain_text_tables(text)
    pasted = pasted_tables(text)
    if not pasted:
        return pipes
    if pipes:
        pasted = _outside(pasted, pipes)
    return tuple(sorted((*pipes, *pasted), key=lambda table: table.start))


def _outside(tables: tuple[Table, ...], others: tuple[Table, ...]) -> tuple[Table, ...]:
    """The ``tables`` that overlap none of ``others`` (both in order, neither overlapping itself): one pass
    over the two."""
    kept: list[Table] = []
    i = 0
    for table in tables:
        while i < len(others) and others[i].end <= table.start:
            i += 1  # ends before this table and every later one
        if i == len(others) or table.end <= others[i].start:
            kept.append(table)
    return tuple(kept)


def pasted_tables(text: str) -> tuple[Table, ...]:
    """Cells copied from a spreadsheet (Excel, Google Sheets, LibreOffice) and pasted into a plain text: at
    least `PASTED_ROWS_MIN` lines in a row that each hold the same number of tabs, none indented, the first
    naming the columns (every cell filled, a letter in it: ``地域<TAB>日当<TAB>宿泊費``). Each is a ``tsv``
    table whose rows are the lines under that first one, so a chunk that starts among them gets the header
    in front, and no strategy cuts a row in two. Two lines are no table (a ``key<TAB>value`` pair), nor is
    a run whose first line has an empty cell or only numbers (data with no header to repeat). Cells are
    read as a TSV file's are (trimmed; a quoted cell as ``csv`` reads it). Kept for the last few texts
    (`clear_text_caches`)."""
    if "\t" not in text:
        return ()
    return _pasted_tables(text)


@lru_cache(maxsize=4)
def _pasted_tables(text: str) -> tuple[Table, ...]:
    tables: list[Table] = []
    run: list[tuple[int, int]] = []
    tabs = -1
    for found in _TAB_LINE.finditer(text):
        start, end = found.span()
        while end > start and text[end - 1] == "\r":
            end -= 1
        count = text.count("\t", start, end)
        if run and (count != tabs or not _follows(text, run[-1], start)):
            _add_pasted(text, run, tables)
            run = []
        run.append((start, end))
        tabs = count
    _add_pasted(text, run, tables)
    return tuple(tables)


def _follows(text: str, previous: tuple[int, int], start: int) -> bool:
    """Whether the line at ``start`` is the one right after ``previous`` (its line break, nothing else)."""
    gap = text[previous[1] : start]
    return gap in ("\n", "\r\n")


def _add_pasted(text: str, run: list[tuple[int, int]], tables: list[Table]) -> None:
    if len(run) < PASTED_ROWS_MIN:
        return
    header = run[0]
    columns = _cells(text[header[0] : header[1]], "\t")
    if not all(columns) or not any(ch.isalpha() for ch in text[header[0] : header[1]]):
        return
    rows = tuple(TableRow(s, e, _cells(text[s:e], "\t")) for s, e in run[1:])
    tables.append(
        Table(start=header[0], end=run[-1][1], header=header, columns=columns, rows=rows, dialect="tsv")
    )
