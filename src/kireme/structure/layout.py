"""Step 1 for the structure strategy: a document's outline, and boundary levels graded by structure.

Headings (by level) are the strongest boundaries, then block ends, list items, paragraphs, the line
breaks that end a sentence, sentences and the other line breaks (a line break inside a sentence is a
soft wrap, as in Markdown sources wrapped at a fixed width); table rows and code lines come only after
those, so a table or a code block that fits is never cut; clauses and words follow; and inside a table
row or code line only when that single row or line is larger than the limit. With ``sentences="lines"``
every line break comes before the sentences, as for text with one sentence a line. Lines that only open
something (`<Sandpack>`, `::: tip`) stay with what follows them and lines that only close something
(`</Sandpack>`, `:::`) with what precedes them, at every level before the table rows and code lines;
an HTML comment goes with the block after it while the two fit a chunk (the original of a translated
paragraph or heading), and so does a lead-in, a block whose last line ends with a colon
(``次のようになります：``, ``as follows:``), with the list, code block or table it introduces.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from itertools import pairwise
from operator import attrgetter
from typing import overload

from kireme.boundaries.levels import (
    INSIDE_SENTENCE,
    LINE,
    PARAGRAPH,
    SENTENCE,
    SENTENCE_LINE,
    CodeLinesBetweenBrackets,
    Level,
    Outside,
    PositionLevel,
    _drop_inside,
    keep_brackets,
    with_sentences,
)
from kireme.document import Document
from kireme.text.articles import document_headings, markdown_written_headings
from kireme.text.csvtable import csv_outline, text_tables
from kireme.text.headings import prose_headings
from kireme.text.leads import heading_ends, indent_width, lead_ins
from kireme.text.markdown import (
    MARKDOWN_FORMATS,
    Outline,
    Table,
    line_starts,
    markdown_outline,
)
from kireme.text.sentences import check_sentence_mode

# The outline of every plain-text document (frozen: one shared instance, not one made per document)
_NO_OUTLINE = Outline()


def document_outline(doc: Document) -> Outline:
    """The outline of any loaded document: parsed Markdown, a CSV/TSV table, a plain text's pipe tables
    (`text_tables`: its pipe tables and cells pasted from a spreadsheet; nothing else of a plain text is
    read as Markdown), the chapters and articles of rules written as plain text or read from a PDF
    (`kireme.text.articles`), the ``ARTICLE``/``Section`` lines of an English contract
    (`kireme.text.divisions`) and the ``== Section ==`` lines of a wiki's source (`kireme.text.wikitext`),
    or nothing."""
    fmt = doc.format
    if fmt in MARKDOWN_FORMATS:
        outline = markdown_outline(doc.text, lambda: doc.id)  # the id (maybe a hash) only for a warning
        articles = markdown_written_headings(doc.text, outline)  # Word rules without styles, wiki source
        return replace(outline, headings=articles) if articles else outline
    if fmt in ("csv", "tsv"):
        return csv_outline(doc.text, fmt, doc.title)
    if fmt in ("text", "pdf"):
        tables = text_tables(doc.text) if fmt == "text" else ()
        headings = document_headings(doc.text, fmt) or ()
        if tables or headings:
            return replace(_NO_OUTLINE, tables=tables, headings=headings)
    return _NO_OUTLINE


class LazyLevels(Sequence[Level]):
    """`structure_levels`, made the first time a packer reads them: a document whose sections each fit one
    chunk (most small documents) never needs them."""

    def __init__(
        self,
        doc: Document,
        outline: Outline,
        paragraph_starts: list[int] | None = None,
        sentences: str = "auto",
        fits: Callable[[int, int], bool] | None = None,
        leads: Sequence[tuple[int, int]] | None = None,
        bracket_fits: Callable[[int, int], bool] | None = None,
    ) -> None:
        self._args = (doc, outline, paragraph_starts, sentences, fits, leads, bracket_fits)
        self.outline = outline
        self._levels: list[Level] | None = None
        self._protected: list[tuple[int, int]] | None = None

    def protected(self) -> list[tuple[int, int]]:
        """The outline's code blocks and tables (`Outline.protected`), found once for every section."""
        if self._protected is None:
            self._protected = self.outline.protected()
        return self._protected

    def _made(self) -> list[Level]:
        if self._levels is None:
            self._levels = structure_levels(*self._args)
        return self._levels

    @overload
    def __getitem__(self, index: int) -> Level: ...

    @overload
    def __getitem__(self, index: slice) -> list[Level]: ...

    def __getitem__(self, index: int | slice) -> Level | list[Level]:
        return self._made()[index]

    def __len__(self) -> int:
        return len(self._made())

    def __iter__(self) -> Iterator[Level]:
        return iter(self._made())


def structure_levels(
    doc: Document,
    outline: Outline,
    paragraph_starts: list[int] | None = None,
    sentences: str = "auto",
    fits: Callable[[int, int], bool] | None = None,
    leads: Sequence[tuple[int, int]] | None = None,
    bracket_fits: Callable[[int, int], bool] | None = None,
) -> list[Level]:
    """Levels strongest first for this document's structure (see the module docstring); ``sentences``
    is the sentence mode (`kireme.boundaries.levels.with_sentences`: ``"lines"`` cuts hard-wrapped PDF
    text at its line breaks too, before its sentences). ``fits(start, end)``: whether a span fits one
    chunk, for the opening-tag lines before a code block or table (`_opener_spans`); without it every
    such block is taken to fit. ``leads``: the document's `lead_ins`, when the caller has them.
    ``bracket_fits(start, end)``: whether a bracket is short enough to keep whole (`keep_brackets`);
    without it a long sentence is cut as its levels find."""
    text = doc.text
    protected = outline.protected()
    starts = tuple(s for s, _ in protected)
    ends = tuple(e for _, e in protected)

    def outside(level: Level) -> Level:
        return Outside(level, starts, ends, getattr(level, "name", "") + " (outside tables and code)")

    # runs of opening-tag lines: no prose cut inside them (``start < cut <= end``), so that the tag goes
    # with what it opens; runs of closing-tag lines: none from the end of what they close to the end of
    # their last line (``start <= cut < end``); the cuts come back after every prose cut where
    # `_opener_spans` and `_closer_spans` say so
    openers, early = _opener_spans(outline, fits)
    closers, early_closers = _closer_spans(outline, fits)
    early = sorted(early + [(start - 1, end - 1) for start, end in early_closers])  # the same way
    runs = sorted(openers + [(start - 1, end - 1) for start, end in closers])  # as ``start < cut <= end``
    if runs:
        kept = sorted(protected + [(start, end + 1) for start, end in runs])
        prose_starts = tuple(s for s, _ in kept)
        prose_ends = tuple(e for _, e in kept)
    else:
        prose_starts, prose_ends = starts, ends

    def prose(level: Level) -> Level:
        name = getattr(level, "name", "") + " (outside tables and code)"
        return Outside(level, prose_starts, prose_ends, name)

    headings = outline.headings

    def heading_starts(levels: tuple[int, ...]) -> list[int]:
        return [h.start for h in headings if h.level in levels]

    levels: list[Level] = []
    if headings:
        levels += [
            PositionLevel(heading_starts((1,)), "h1", hard=True),
            PositionLevel(heading_starts((2,)), "h2", hard=True),
            PositionLevel(heading_starts((3,)), "h3", hard=True),
            PositionLevel(heading_starts((4, 5, 6)), "h4-h6", hard=True),
        ]
    # a comment block goes with the block right after it (the original of a paragraph or heading, kept
    # in a comment above its translation): no block or list-item cut between the two while they fit a
    # chunk together (when they do not, the cut between them stays a block cut)
    commented = (
        _commented(text, outline, fits) | _led(text, outline, fits, leads) | _outputs(text, outline, fits)
    )
    if outline.block_starts:
        blocks = _outside_runs(outline.block_starts, runs)
        if commented:
            blocks = [p for p in blocks if p not in commented]
        levels.append(PositionLevel(blocks, "block"))
    if outline.item_starts:
        items = (
            [p for p in outline.item_starts if p not in commented] if commented else list(outline.item_starts)
        )
        nested = _nested_items(text, items, outline.block_starts)
        if nested:  # an item with the items nested under it before a cut between those
            levels.append(prose(PositionLevel([p for p in items if p not in nested], "list item")))
            levels.append(prose(PositionLevel(sorted(nested), "nested list item")))
        else:
            levels.append(prose(PositionLevel(items, "list item")))
    by_lines = check_sentence_mode(sentences) == "lines"
    if paragraph_starts is not None:  # hard-wrapped text (PDF): lines are not boundaries
        levels.append(PositionLevel(_outside_runs(paragraph_starts, runs), "paragraph"))
    elif by_lines:
        levels += [prose(PARAGRAPH), prose(LINE)]
    else:
        # a line break inside a paragraph may be a soft break (Markdown sources are often wrapped at 80
        # columns, Japanese ones mid-sentence too): the lines that end a sentence first (one topic a
        # line), then sentences, then the other line breaks — all before a cut inside a table or code
        levels += [prose(PARAGRAPH), prose(SENTENCE_LINE), prose(SENTENCE), prose(LINE)]
    inside = _line_cuts_inside(text, early)
    if inside:
        levels.append(PositionLevel(inside, "inside opening- and closing-tag lines"))
    rows = table_row_cuts(outline)
    if rows:
        levels.append(PositionLevel(rows, "table row"))
    blank, lines = code_line_cuts(text, outline)
    if blank:
        levels.append(PositionLevel(blank, "code blank line"))
    if lines:
        # a line that closes a bracket or tag (``});``, ``},``, ``</div>``) does not open a chunk, nor does
        # one end with a line that opens one (``artwork: {``), while another line start fits
        bodies = [block.body for block in outline.code_blocks if block.closed]
        levels.append(CodeLinesBetweenBrackets(lines, bodies))
        levels.append(PositionLevel(lines, "code line"))
    tail: list[Level]
    if paragraph_starts is None:  # sentences (or lines) are cuts already
        tail = [SENTENCE, *INSIDE_SENTENCE] if by_lines else [*INSIDE_SENTENCE]
    else:
        tail = with_sentences([SENTENCE, *INSIDE_SENTENCE], sentences)
    # a sentence too long for a chunk is cut outside its brackets that fit one first (`keep_brackets`)
    levels += [outside(level) for level in keep_brackets(tail, bracket_fits)]
    if protected:  # a single row or code line larger than the limit: a row between its cells first
        cells: list[Level] = [TableCells(outline.tables)] if outline.tables else []
        levels += cells + ([SENTENCE, *INSIDE_SENTENCE] if paragraph_starts is None else tail)
    return levels


# A cell delimiter of a pipe-table row (not one escaped as ``\|``) and the blanks after it; of a CSV/TSV
# record, a comma or tab outside double quotes (a quoted field is matched whole, so its commas are skipped)
_START = attrgetter("start")  # of a table or a row, for bisect
_PIPE_CELL = re.compile(r"(?<!\\)\|[ \t]*")
_FIELD = {",": re.compile(r'"(?:[^"]|"")*"|,'), "\t": re.compile(r'"(?:[^"]|"")*"|\t')}


class TableCells:
    """Between the cells of a table row: where a row too large for one chunk is cut, so that no piece is a
    lone ``|`` or half of a value while whole cells fit. Each cut is where a cell's text starts (after the
    delimiter and the blanks after it); none before the first cell or after the last."""

    name = "table cell"

    def __init__(self, tables: Sequence[Table]) -> None:
        self.tables = tables

    def cuts(self, text: str, a: int, b: int) -> list[int]:
        out: list[int] = []
        i = max(bisect_right(self.tables, a, key=_START) - 1, 0)
        for table in self.tables[i:]:
            if table.start >= b:
                break
            if table.end <= a:
                continue
            rows = table.rows
            k = max(bisect_right(rows, a, key=_START) - 1, 0)
            for row in rows[k:]:
                if row.start >= b:
                    break
                if row.end > a:
                    out += [c for c in _cell_starts(text, row.start, row.end, table.dialect) if a < c < b]
        return out


def _cell_starts(text: str, start: int, end: int, dialect: str) -> list[int]:
    """Where each cell after the first of the row ``text[start:end]`` starts."""
    if dialect == "markdown":
        first = start
        while first < end and text[first] in " \t":
            first += 1
        found = [m.end() for m in _PIPE_CELL.finditer(text, start, end) if m.start() != first]
    else:
        pattern = _FIELD["\t" if dialect == "tsv" else ","]
        found = [m.end() for m in pattern.finditer(text, start, end) if m.group() in (",", "\t")]
    stop = end
    while stop > start and text[stop - 1].isspace():
        stop -= 1
    return [c for c in found if start < c < stop and not text.startswith("|", c)]


def _unit_ends(text: str, outline: Outline) -> Callable[[int], int]:
    """``end(after)``: where what a lead-in introduces ends, from its start ``after``: a code block or table
    with the opening-tag lines before it and the closing-tag lines after it, or the next top-level block."""
    opened = dict(outline.openers)  # a run of opening-tag lines: where the block it opens starts
    ends = {c.start: c.end for c in outline.code_blocks if c.closed}
    ends.update((t.start, t.end) for t in outline.tables)
    starts = outline.block_starts

    def end(after: int) -> int:
        begin = opened.get(after, after)
        block_end = ends.get(begin)
        if block_end is not None:
            stop = outline.closed_to(block_end)
        else:
            i = bisect_right(starts, begin)
            stop = starts[i] if i < len(starts) else len(text)
        while stop > after and text[stop - 1].isspace():
            stop -= 1
        return stop

    return end


def _led(
    text: str,
    outline: Outline,
    fits: Callable[[int, int], bool] | None,
    leads: Sequence[tuple[int, int]] | None = None,
) -> set[int]:
    """The starts of the blocks a lead-in introduces (`lead_ins`) that fit one chunk with it (``fits``;
    without it, every one): no block or list-item cut there, so a chunk does not end with the lead-in
    while what it introduces begins the next."""
    if leads is None:
        leads = lead_ins(text, outline)
    if not leads:
        return set()
    if fits is None:
        return {after for _, after in leads}
    end = _unit_ends(text, outline)
    return {after for start, after in leads if fits(start, end(after))}


def _outputs(text: str, outline: Outline, fits: Callable[[int, int], bool] | None) -> set[int]:
    """The starts of the ``output`` blocks (a notebook cell's output, `kireme.load.notebook`) right after
    a code block, only blank lines between, that fit one chunk with it (``fits``; without it, every one):
    no block cut there, so a result (``66``) does not open a chunk away from the code that printed it."""
    out: set[int] = set()
    blocks = outline.code_blocks
    for code, output in pairwise(blocks):
        if (
            output.info != "output"
            or not code.closed
            or not output.closed
            or text[code.end : output.start].strip()
        ):
            continue
        if fits is None or fits(code.start, output.end):
            out.add(output.start)
    return out


def _commented(text: str, outline: Outline, fits: Callable[[int, int], bool] | None) -> set[int]:
    """The starts of the blocks right after a comment block (`Outline.comments`) that fit one chunk with
    it (``fits``; without it, every one)."""
    if not outline.comments:
        return set()
    starts = outline.block_starts
    out: set[int] = set()
    for start, after in outline.comments:
        i = bisect_right(starts, after)
        end = starts[i] if i < len(starts) else len(text)
        while end > after and text[end - 1].isspace():  # where the block's text ends
            end -= 1
        if fits is None or fits(start, end):
            out.add(after)
    return out


def _outside_runs(positions: Sequence[int], runs: list[tuple[int, int]]) -> list[int]:
    """``positions`` (sorted) but those inside a run of opening- or closing-tag lines (``start < p <= end``)."""
    return _drop_inside(list(positions), [start for start, _ in runs], [end + 1 for _, end in runs])


def _opener_spans(
    outline: Outline, fits: Callable[[int, int], bool] | None = None
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The runs of opening-tag lines (`Outline.openers`) a chunk should not end with, and of those the runs
    whose cuts still come before a code line or table row (`_wrapping_spans`; the block they wrap is the
    code block or table right after them: a carved one takes them into its first piece)."""
    blocks = {c.start: c.end for c in outline.code_blocks}
    blocks.update((t.start, t.end) for t in outline.tables)

    def wrapped(run: tuple[int, int]) -> tuple[tuple[int, int], tuple[int, int]] | None:
        start, end = run
        block_end = blocks.get(end)
        return None if block_end is None else ((end, block_end), (start, block_end))

    return _wrapping_spans(outline.openers, wrapped, fits)


def _closer_spans(
    outline: Outline, fits: Callable[[int, int], bool] | None = None
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The runs of closing-tag lines (`Outline.closers`) a chunk should not start with, and of those the
    runs whose cuts still come before a code line or table row (`_wrapping_spans`; the block they wrap is
    the code block or table right before them: a carved one gives them to its last piece, `_carve`)."""
    blocks = {c.end: c.start for c in outline.code_blocks}
    blocks.update((t.end, t.start) for t in outline.tables)

    def wrapped(run: tuple[int, int]) -> tuple[tuple[int, int], tuple[int, int]] | None:
        start, end = run
        block_start = blocks.get(start)
        return None if block_start is None else ((block_start, start), (block_start, end))

    return _wrapping_spans(outline.closers, wrapped, fits)


def _wrapping_spans(
    runs: Sequence[tuple[int, int]],
    wrapped: Callable[[tuple[int, int]], tuple[tuple[int, int], tuple[int, int]] | None],
    fits: Callable[[int, int], bool] | None,
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Of the runs of tag lines around blocks, those no prose cut may fall inside, and of those the ones
    whose cuts come back after every prose cut and before the block's rows and lines. ``wrapped(run)``: the
    span of the code block or table the run wraps, alone and with the run (``None``: prose beside it).

    Beside prose the run is kept (its cuts come with the clauses and words, after the prose's own). Beside
    a block too large for a chunk, kept (the block is cut anyway, and its piece next to the run takes it).
    Beside a block that fits with the run, kept and early (the block is never cut to keep its tag with
    it). Left out: a run beside a block that fits a chunk alone and not with the run (the tag goes where
    any line may). Without ``fits`` every block is taken to fit."""
    kept: list[tuple[int, int]] = []
    early: list[tuple[int, int]] = []
    for run in runs:
        spans = wrapped(run)
        if spans is None:
            kept.append(run)
            continue
        alone, whole = spans
        if fits is not None and not fits(*alone):
            kept.append(run)
        elif fits is None or fits(*whole):
            kept.append(run)
            early.append(run)
    return kept, early


def _line_cuts_inside(text: str, runs: list[tuple[int, int]]) -> list[int]:
    """Where a prose level may cut inside runs of opening-tag lines (``start < cut <= end``): at each
    line's end (before its line feed) and at the next line's start."""
    out: list[int] = []
    for start, end in runs:
        pos = text.find("\n", start, end)
        while pos >= 0:
            if pos > start:
                out.append(pos - 1 if text[pos - 1] == "\r" and pos - 1 > start else pos)
            out.append(pos + 1)
            pos = text.find("\n", pos + 1, end)
    return sorted(set(out))


def _nested_items(text: str, items: list[int], block_starts: Sequence[int]) -> set[int]:
    """The list items (line starts) indented deeper than the shallowest item of their top-level block:
    those nested under another item."""
    by_block: dict[int, list[tuple[int, int]]] = {}
    for p in items:
        block = bisect_right(block_starts, p) - 1
        by_block.setdefault(block, []).append((p, indent_width(text, p)))
    nested: set[int] = set()
    for found in by_block.values():
        shallowest = min(depth for _, depth in found)
        nested.update(p for p, depth in found if depth > shallowest)
    return nested


def heading_rule(
    doc: Document, outline: Outline, sentences: str = "auto"
) -> tuple[bool, Callable[[str, int], bool] | None]:
    """``(keep_headings, heading_end)`` for `kireme.pack.pack`: whether a heading stays with its body,
    and the test for the text before a cut ending with a heading or a lead-in line: parsed headings and
    the lead-in lines outside code and tables for Markdown-like formats (`kept_line_ends`; a ``# comment``
    in a code block is not one), ``None`` (the prose heuristic) for plain text and PDF. Off for CSV/TSV: a
    short record is not a heading; and off for plain text in the ``"lines"`` sentence mode
    (`prose_headings`)."""
    if doc.format in ("csv", "tsv") or not prose_headings(doc.format, sentences):
        return False, None
    if doc.format not in MARKDOWN_FORMATS:
        return True, None
    return True, heading_ends(doc.text, outline)


def table_row_cuts(outline: Outline) -> list[int]:
    """Row starts of every table, except the first body row: a header never ends a chunk alone."""
    return sorted(r.start for t in outline.tables for r in t.rows[1:])


# A run of lines holding only whitespace, found from the line feed before it (a pattern opening with a
# literal is searched for that character at C speed; one opening with ``^`` under ``re.M`` is tried at
# every position): one match per run, not one per line of code
_BLANK_RUN = re.compile(r"\n(?:[^\S\n]*\n)+")
_FIRST_BLANK = re.compile(r"[^\S\n]*\n")


def code_line_cuts(text: str, outline: Outline) -> tuple[list[int], list[int]]:
    """Inside closed code blocks: lines after a blank line, and every line start."""
    closed = [block.body for block in outline.code_blocks if block.closed]
    if not closed:
        return [], []
    lines = line_starts(text)
    blank: list[int] = []
    every: list[int] = []
    for a, b in closed:
        lo, hi = bisect_right(lines, a), bisect_left(lines, b)
        if lo >= hi:
            continue
        every += lines[lo:hi]
        # the blank lines from the one before the first code line on: each ends where a code line starts
        before = lines[lo - 1] if lo else 0
        if before == 0 and (first := _FIRST_BLANK.match(text, 0, lines[hi - 1])) is not None:
            blank.append(first.end())  # the text opens with a blank line: no line feed before it
        for run in _BLANK_RUN.finditer(text, max(before - 1, 0), lines[hi - 1]):
            # one match per run of blank lines (a code block has few): each of them ends at a cut
            at = run.start() + 1
            stop = run.end()
            while at < stop:
                at = text.index("\n", at, stop) + 1
                blank.append(at)
    return blank, every
