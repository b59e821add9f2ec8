"""Tables whose rows stand alone: fill-down, header repetition, group-by and records.

These change only what is embedded (`Chunk.embed_text`); ``text`` and its offsets stay the exact slice
of the document. Modes:

* ``rows`` (default): a table larger than the limit is split between rows; every piece repeats the
  header in its ``embed_text``.
* ``fill-down``: as ``rows``, and blank cells that mean "same as above" are filled from the row above, in
  the leading columns that have such blanks (the columns a spreadsheet would show as merged cells).
* ``group-by:COLUMN``: one table per run of equal values in COLUMN (filled down first), each with the
  header and a line naming the value.
* ``records``: one row per chunk, embedded as ``column: value`` lines (filled down first).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from kireme.errors import ConfigError
from kireme.text.markdown import Table

TABLE_MODES = ("rows", "fill-down", "group-by", "records")


@dataclass(frozen=True)
class TableMode:
    """How tables are split and embedded; ``column`` is the group-by column."""

    mode: str = "rows"
    column: str = ""

    def __post_init__(self) -> None:
        if self.mode not in TABLE_MODES:
            raise ConfigError(
                f"unknown table mode {self.mode!r}: choose one of rows, fill-down, group-by:COLUMN, records"
            )
        if self.mode == "group-by" and not self.column.strip():
            raise ConfigError("table mode group-by needs a column: group-by:COLUMN (e.g. group-by:区分)")
        if self.mode != "group-by" and self.column:
            raise ConfigError(f"a column is only used with group-by, not with {self.mode}")

    @classmethod
    def parse(cls, spec: str | TableMode) -> TableMode:
        """``"rows"``, ``"fill-down"``, ``"records"``, ``"group-by:区分"`` or ``"group-by 区分"``."""
        if isinstance(spec, TableMode):
            return spec
        text = spec.strip()
        for sep in (":", "=", " "):
            head, found, rest = text.partition(sep)
            if found and head.strip() == "group-by":
                return cls("group-by", rest.strip())
        return cls(text)

    @property
    def fills(self) -> bool:
        return self.mode in ("fill-down", "group-by", "records")

    def spec(self) -> str:
        return f"group-by:{self.column}" if self.mode == "group-by" else self.mode


def fill_down_columns(table: Table) -> set[int]:
    """Leading columns with blanks under a non-blank first row: "same as above" columns.

    Scanning stops at the first column without blanks, so a blank 備考 column to the right of complete
    columns is never filled.
    """
    out: set[int] = set()
    if not table.rows:
        return out
    width = max(len(table.columns), *(len(r.cells) for r in table.rows))
    for col in range(width):
        values = [r.cells[col] if col < len(r.cells) else "" for r in table.rows]
        if not values[0] or all(values):
            break
        out.add(col)
    return out


def row_values(table: Table, fill: bool, also: int | None = None) -> list[tuple[str, ...]]:
    """Each row's cells, blanks filled from the row above where ``fill`` (and in column ``also``).

    The "same as above" columns are a hierarchy (大分類, 中分類): a blank is filled only while no column to
    its left starts a new group in that row — under a new 大分類 a blank 中分類 is blank, not the last
    group's (``住宅,,家賃補助`` under ``,自家用車,ガソリン代`` is no 自家用車 allowance)."""
    leading = fill_down_columns(table)
    columns = set(leading) if fill else set()
    if also is not None:
        columns.add(also)
    levels = sorted(columns | leading)  # the columns whose new value starts a new group, left to right
    out: list[tuple[str, ...]] = []
    previous: tuple[str, ...] = ()
    for row in table.rows:
        cells = list(row.cells)
        new_group = False
        for col in levels:
            if col >= len(cells):
                break
            if cells[col]:
                new_group = True
            elif col in columns and not new_group and col < len(previous):
                cells[col] = previous[col]
        previous = tuple(cells)
        out.append(previous)
    return out


def column_index(table: Table, column: str) -> int | None:
    """Index of a header cell by name (exact, then ignoring case and surrounding space)."""
    if column in table.columns:
        return table.columns.index(column)
    folded = [c.strip().casefold() for c in table.columns]
    key = column.strip().casefold()
    return folded.index(key) if key in folded else None


def render_row(cells: tuple[str, ...], dialect: str) -> str:
    """One row written back in the table's own syntax."""
    if dialect == "markdown":
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"
    buffer = io.StringIO()
    csv.writer(buffer, delimiter="\t" if dialect == "tsv" else ",", lineterminator="").writerow(cells)
    return buffer.getvalue()


def render_record(columns: tuple[str, ...], cells: tuple[str, ...]) -> str:
    """A row as ``column: value`` lines (blank cells left out), for embedding one row alone."""
    lines = []
    for i, value in enumerate(cells):
        if not value:
            continue
        name = columns[i] if i < len(columns) and columns[i] else f"列{i + 1}"
        lines.append(f"{name}: {value}")
    return "\n".join(lines)


def group_runs(values: list[tuple[str, ...]], col: int) -> list[tuple[int, int, str]]:
    """``(first row, end row, value)`` for each run of rows with the same value in ``col``."""
    runs: list[tuple[int, int, str]] = []
    for i, cells in enumerate(values):
        value = cells[col] if col < len(cells) else ""
        if runs and runs[-1][2] == value:
            runs[-1] = (runs[-1][0], i + 1, value)
        else:
            runs.append((i, i + 1, value))
    return runs
