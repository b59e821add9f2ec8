"""The ``markdown`` strategy (alias ``structure``): cut along a document's own structure.

Sections are the unit: a heading with everything under it stays one chunk when it fits ``max_size``;
otherwise the heading's own text is packed alone and each subsection is tried the same way. Inside a
section the structure levels of `kireme.structure.layout` decide the cuts, so lists, paragraphs, code
blocks and tables stay whole when they fit. A table or code block larger than the limit becomes its own
section, cut between rows or lines, and every piece repeats the table header (or reopens the fence) in its
``embed_text``. The title and heading path go in front of ``embed_text`` (``context``) and count toward
``max_size`` when ``context_in_budget``. ``text`` and offsets are never changed.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from kireme.boundaries.levels import BRACKET_SHARE, Level
from kireme.chunkers import Chunker, ChunkPlan, TextItself
from kireme.context import ContextBuilder
from kireme.document import Document
from kireme.errors import ConfigError
from kireme.length import Chars, SpanSizer, Tokens
from kireme.pack import PackedSpan, pack
from kireme.structure.layout import LazyLevels, document_outline, heading_rule
from kireme.structure.tables import (
    TableMode,
    column_index,
    group_runs,
    render_record,
    render_row,
    row_values,
)
from kireme.text.leads import lead_ins
from kireme.text.markdown import CodeBlock, HeadingPaths, Outline, Table, plain_text_lead_outline
from kireme.text.quick import has_content
from kireme.text.sentences import first_sentence_cut, sentence_cuts
from kireme.text.subword import DEFAULT_TOKENIZER
from kireme.text.tableheaders import compact_header

log = logging.getLogger(__name__)
# The heading paths of a document without headings (shared: nothing in it changes once made)
_NO_HEADINGS = HeadingPaths(())

# A chunk takes its next sibling section only while it is under this share of max_size: small items
# (項, 号, short options) are packed together, but a chunk is not filled up with many topics (on law QA,
# packing to the full limit passed more characters for a lower hit@1; benchmarks/lawqa.py).
SIBLING_FILL = 0.5


def _opening_headings_end(text: str, context: ContextBuilder, a: int, b: int) -> int:
    """Where the run of heading lines that opens ``[a, b)`` ends (``## 第2章`` with no text of its own right
    over ``### 第2条``): the pieces after it sit under the deepest of them, whose path the section's budget
    leaves room for (`ContextBuilder.largest`). ``a`` when the section does not open with a heading."""
    if context.paths is None:
        return a
    end = a
    for heading in context.paths.between(a, b):
        if text[end : heading.start].strip():
            break
        end = heading.end
    return end


def _inside_sentences(text: str, section: Section, packed: Sequence[PackedSpan]) -> int:
    """How many of the pieces after the first start inside a sentence of the section (not where one of its
    sentences, list items, lines that end a sentence or blocks starts: `sentence_cuts`)."""
    if len(packed) < 2:
        return 0
    starts = set(sentence_cuts(text, section.start, section.end))
    return sum(1 for p in packed[1:] if p.start not in starts)


def _whole_sentence_budget(
    text: str, section: Section, packed: Sequence[PackedSpan], sizer: SpanSizer, budget: int, max_size: int
) -> int:
    """The budget at which no piece of ``packed`` starts inside a sentence that fits ``max_size`` with the
    piece before it: the largest such piece, the sentence's end included, when it is at most a twentieth
    of ``max_size`` over ``budget`` (else, and when there is none, ``budget``). A budget lowered for the
    context cut such sentences for it (``== Lodging ==`` and its first sentence one character over:
    ``…9,800 yen a`` | ``night.``); at this budget they stay whole and their context gives way instead.
    Further over, the context is worth more than the cut it saves: without a limit law QA with BM25 lost
    three questions at 100 and at 160 characters, with a tenth the dense model two on the plain-text laws
    at 160 and at 200; a twentieth moves them by a question or two either way."""
    limit = min(max_size, budget + max_size // 20)
    if limit <= budget:  # nothing was taken for the context: no sentence was cut for it
        return budget
    wanted = budget
    for before, piece in itertools.pairwise(packed):
        if "\n" in text[before.end : piece.start]:
            continue  # a cut between lines or blocks
        if first_sentence_cut(text, piece.start - 1, piece.start + 1) == piece.start:
            continue  # a cut between sentences
        after = first_sentence_cut(text, piece.start, section.end)
        end = section.end if after is None else after
        while end > piece.start and text[end - 1].isspace():
            end -= 1
        size = sizer.estimate(before.start, end)
        if wanted < size <= limit:
            wanted = size
    return wanted


def _has_fragment(packed: list[PackedSpan], budget: int) -> bool:
    """Whether a packing of several pieces has one under a quarter of ``budget``."""
    return len(packed) > 1 and min(p.size for p in packed) * 4 < budget


_FENCE_LINE = re.compile(r"[ \t]*(?:`{3,}|~{3,})[ \t]*")


def _closing_fence_not_alone(
    text: str, packed: list[PackedSpan], sizer: SpanSizer, max_size: int
) -> list[PackedSpan]:
    """A code block's pieces with a last piece that is only the closing fence (```` ``` ````) joined to the
    piece before it, when the two fit ``max_size`` together: a chunk of three backticks is a vector no
    question finds. The piece keeps its text; its ``embed_text`` gives up the reopened fence (or the context)
    if it must, as any piece's does."""
    if len(packed) < 2:
        return packed
    last = packed[-1]
    if not _FENCE_LINE.fullmatch(text, last.start, last.end):
        return packed
    before = packed[-2]
    # measured exactly: in tokens an estimate from the document's token stream may be one off, and this
    # size is the chunk's own (`Chunk.size`) and its limit a hard one
    (size,) = sizer.exact([(before.start, last.end)])
    if size > max_size:
        return packed
    return [*packed[:-2], PackedSpan(before.start, last.end, size)]


@dataclass(frozen=True)
class Section:
    """A span packed on its own, with the budget left after its context and block prefix."""

    start: int
    end: int
    max_size: int
    table: Table | None = None
    code: CodeBlock | None = None
    group_line: str = ""  # group-by: "区分: 役員", in front of every piece of the group
    repeat: str = ""  # the header (or opening fence) for pieces that do not hold it
    repeat_after: int = 0  # pieces starting after this offset get ``repeat``
    close: str = ""  # the closing fence for pieces that end before it
    close_before: int = 0


@dataclass(frozen=True)
class StructureChunker(Chunker):
    """Chunks that follow headings, lists, code blocks and tables; each carries its heading path.

    ``table``: ``rows`` (default), ``fill-down``, ``group-by:COLUMN`` or ``records`` (see
    `kireme.structure.tables`). ``context`` defaults to ``headings``.
    """

    context: str = "headings"
    table: str = "rows"
    strategy: ClassVar[str] = "markdown"
    string_format: ClassVar[str | None] = "markdown"  # `chunk("# 見出し…")`: a string given to it is Markdown

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "table", TableMode.parse(self.table).spec())

    @property
    def table_mode(self) -> TableMode:
        mode: TableMode | None = self.__dict__.get("_table_mode")
        if mode is None:  # parsed once per chunker: every piece's embed_text asks
            mode = TableMode.parse(self.table)
            object.__setattr__(self, "_table_mode", mode)
        return mode

    def options(self) -> dict[str, Any]:
        return {"table": self.table}

    def levels(self) -> list[Level]:
        raise ConfigError("the markdown strategy's levels depend on the document: call chunk()")

    # ------------------------------------------------------------------------------ plan
    def plan(self, doc: Document) -> ChunkPlan:
        """Sections packed one by one with the budget their context and block prefix leave; each piece's
        ``embed_text`` made here (the heading path, a repeated table header or fence, rewritten rows)."""
        outline = document_outline(doc)
        title = doc.title or outline.title
        sizer = self.measure.for_text(doc.text)
        whole = self._whole_plan(doc, outline, title, sizer)
        if whole is not None:
            return whole
        paths = HeadingPaths(outline.headings)
        context = self.context_builder(doc, paths, title)
        paragraphs = None
        if doc.format == "pdf":
            from kireme.text.paragraphs import pdf_paragraph_starts

            paragraphs = pdf_paragraph_starts(doc.text)

        def fits(start: int, end: int) -> bool:
            """Whether a block (with the opening tags before it) fits a chunk: a code block that fits
            ``max_size`` is never cut for the context (`_carve`)."""
            return sizer.estimate(start, end) <= self.max_size

        # the lead-ins (`lead_ins`), found once for the levels and the sections
        leads = lead_ins(
            doc.text,
            # a plain text's tables: the line right above one may introduce it, though nothing else of a
            # plain text is read as blocks (`plain_text_blocks`)
            plain_text_lead_outline(doc.text, outline.tables)
            if doc.format == "text" and outline.tables
            else outline,
        )
        bracket_fits = self.fits_budget(doc, sizer, BRACKET_SHARE)
        levels = LazyLevels(doc, outline, paragraphs, self.sentences, fits, leads, bracket_fits)
        keep_headings, heading_end = heading_rule(doc, outline, self.sentences)
        spans: list[PackedSpan] = []
        embeds: dict[tuple[int, int], str] = {}
        cut_memo: dict[tuple[int, int, int], tuple[int, list[int]]] = {}  # shared by the packings below
        warned = False
        # no heading, title or table: every piece's context is empty and its text its own embed_text
        bare = not outline.headings and not title and not outline.tables and self._sizes_add_up()
        rewritten = False  # whether some piece's embed_text was made (`_embed_text`), not its text alone
        counts = self.context_counts
        text = doc.text
        # a plain piece's embed_text is its context and its text, whose sizes add up (`_plain_sizes`)
        mode = self.table_mode
        simple = self._sizes_add_up() and not (outline.tables and (mode.fills or mode.mode == "records"))
        floor = self._floor()

        def measured(
            section: Section, packed: list[PackedSpan], plain: bool
        ) -> tuple[list[tuple[str, int, int]] | None, list[int], list[int]]:
            """The pieces' embed_texts where they are made (else ``None``), the size of each as made and
            with its whole context."""
            if bare and plain:
                sizes = [p.size for p in packed] if counts else []
                return None, sizes, sizes
            if plain and simple:  # sizes first; the strings only for the packing that is kept
                return None, *self._plain_sizes(context, packed)
            made = [self._embed_text(doc, outline, context, section, p.start, p.end, p.size) for p in packed]
            return made, [size for _, size, _ in made], [full for _, _, full in made]

        for section in self._sections(doc, outline, paths, context, sizer, leads):
            budget = lowest = section.max_size
            plain = section.table is None and section.code is None
            if plain and self.context_counts:
                # start from what the first piece's own context leaves (a piece holding its heading line
                # is not prefixed with it); pieces whose context would not fit make the budget tighter,
                # down to the budget that leaves room for any context of the section
                budget = max(budget, self.max_size - context.measured(context.prefix(section.start)))
            first_budget = budget
            first_packed: list[PackedSpan] | None = None  # the packing at first_budget, kept for `wider`
            # the packing before the budget was last tightened for the context, with what `measured` made
            # of it and how many of its pieces start inside a sentence
            looser: tuple[list[PackedSpan], Any, list[int], list[int], int, int] | None = None
            widened = False  # the budget raised once to keep sentences whole (`_whole_sentence_budget`)
            while True:
                span = (section.start, section.end)
                packed = self._pack(
                    doc, levels, sizer, budget, keep_headings, heading_end, span, cut_memo, block=not plain
                )
                if first_packed is None:
                    first_packed = packed
                    if plain and counts and not widened and self.packing == "greedy" and len(packed) > 1:
                        widened = True
                        kept_whole = _whole_sentence_budget(
                            doc.text, section, packed, sizer, budget, self.max_size
                        )
                        if kept_whole > budget:  # sentences were cut for the context: kept whole
                            budget = first_budget = kept_whole
                            first_packed = None
                            continue
                if section.code is not None and self.packing == "greedy" and _has_fragment(packed, budget):
                    # a code block too large for one chunk, filled in turn, often leaves a fragment (the
                    # ``}`` and ``);`` of a function, a vector no question finds): as many pieces, as even
                    even = self._pack(
                        doc,
                        levels,
                        sizer,
                        budget,
                        keep_headings,
                        heading_end,
                        span,
                        cut_memo,
                        packing="optimal",
                        block=True,
                    )
                    if len(even) <= len(packed):
                        packed = even
                if section.code is not None:
                    packed = _closing_fence_not_alone(doc.text, packed, sizer, self.max_size)
                made, sizes, fulls = measured(section, packed, plain)
                # how far the largest embed_text is over max_size as made (`over`: the context may have
                # given way) and as wanted (context and all); both negative when the context does not count
                over = max(sizes, default=0) - self.max_size
                wanted = max(fulls, default=0) - self.max_size
                tighten = plain and wanted > 0 and budget > lowest
                # counted once a packing is compared or kept to compare: most sections never are
                inside = _inside_sentences(doc.text, section, packed) if looser is not None or tighten else 0
                if looser is not None and inside > looser[5]:
                    # packed tighter for the context, a piece now starts inside a sentence (``…the last 24``
                    # | ``changes.``): the looser packing stays, and the context gives way where it must
                    packed, made, sizes, fulls, budget, _ = looser
                    over = max(sizes, default=0) - self.max_size
                    break
                if tighten:
                    looser = (packed, made, sizes, fulls, budget, inside)
                    budget = max(lowest, budget - wanted)  # some piece's context did not fit: tighter
                    continue
                if over <= 0 or budget <= floor:
                    break
                budget = max(floor, budget - over)  # filled-in cells or a join took more: pack tighter
            if plain and counts and budget < first_budget and len(packed) > 1 and self.packing == "greedy":
                # the budget was tightened for the pieces under the whole heading path; the first piece,
                # which holds the heading line and so is not prefixed with it, may still take what its own
                # context leaves (a sentence was cut short of its end for room its chunk never used)
                wider = first_packed  # the first pass of the loop packed the section at first_budget
                if wider and packed[0].end < wider[0].end < section.end:
                    rest = (wider[0].end, section.end)
                    candidate = [
                        wider[0],
                        *self._pack(doc, levels, sizer, budget, keep_headings, heading_end, rest, cut_memo),
                    ]
                    tried = measured(section, candidate, plain)
                    # every piece fits as made, and none is longer with its context than the longest of
                    # the packing it replaces (a piece whose context fits in neither is no reason to
                    # cut the first piece short: it was, at "must be at|least 14 characters")
                    kept = max(self.max_size, max(fulls, default=0))
                    ok = max(tried[1], default=0) <= self.max_size and max(tried[2], default=0) <= kept
                    if ok and len(candidate) <= len(packed):
                        packed, (made, sizes, fulls) = candidate, tried
            if self.context_counts and over > 0 and not warned:
                warned = True
                log.warning(
                    "%s: some embed_text is longer than max_size %d %s: a table row rewritten by --table "
                    "(filled-in cells, records) is longer than the row itself (raise --max-size)",
                    doc.id,
                    self.max_size,
                    self.measure.name,
                )
            spans.extend(packed)
            if made is not None:
                rewritten = True
                embeds.update(((p.start, p.end), text) for p, (text, _, _) in zip(packed, made, strict=True))
            elif not (bare and plain):
                rewritten = True
                for p, size in zip(packed, sizes, strict=True):
                    piece = text[p.start : p.end]
                    # the context went in front, as much of it as fits with the text (`_plain_sizes`)
                    if not counts:
                        embeds[(p.start, p.end)] = context.prefix(p.start, p.end) + piece
                    elif size > p.size:
                        embeds[(p.start, p.end)] = (
                            context.prefix_within(p.start, p.end, self.max_size - p.size) + piece
                        )
                    else:
                        embeds[(p.start, p.end)] = piece
            else:
                embeds.update(((p.start, p.end), text[p.start : p.end]) for p in packed)
        if not rewritten:  # a bare document (no heading, title or table): each chunk's text is its embed_text
            return ChunkPlan(spans, _NO_HEADINGS, title, TextItself(text))
        return ChunkPlan(spans, paths, title, lambda start, end: embeds[(start, end)], self._headings(paths))

    def _whole_plan(self, doc: Document, outline: Outline, title: str, sizer: SpanSizer) -> ChunkPlan | None:
        """The plan of a document with no structure (no heading, code block or table, no title) that
        fits one chunk: what the sections below come to for it — one section, packed once, its text its
        own ``embed_text``, no heading path — without building them (a short document costs a third as
        much). ``None`` for any other document."""
        text = doc.text
        if outline.headings or outline.code_blocks or outline.tables or title or doc.format == "pdf":
            return None
        if sizer.estimate(0, len(text)) > self.max_size:
            return None
        levels = LazyLevels(doc, outline, None, self.sentences)
        packed = self._pack(
            doc, levels, sizer, self.max_size, *heading_rule(doc, outline, self.sentences), (0, len(text))
        )
        if len(packed) != 1 or packed[0].size > self.max_size:
            return None
        # no headings: every chunk's path is () and it holds no sub-heading, so no per-chunk lookup
        return ChunkPlan(packed, _NO_HEADINGS, title, TextItself(text))

    def _pack(
        self,
        doc: Document,
        levels: LazyLevels,
        sizer: SpanSizer,
        budget: int,
        keep_headings: bool,
        heading_end: Callable[[str, int], bool] | None,
        span: tuple[int, int],
        cut_memo: dict[tuple[int, int, int], tuple[int, list[int]]] | None = None,
        packing: str | None = None,
        block: bool = False,
    ) -> list[PackedSpan]:
        """``span`` of the document packed within ``budget`` (a section's, less what goes in front of
        its pieces); one piece may still hold up to ``max_size`` when it cannot be cut smaller.
        ``cut_memo``: `kireme.pack.pack`'s, one per document. ``packing``: another packing than the
        chunker's own (``"optimal"`` for a code block cut into even pieces, aiming at chunks of ``budget``).
        ``block``: the section is a table or code block too large for a chunk, cut between rows or lines
        with its header or fence repeated: no overlap (it would cost rows their room and start inside one),
        and no overlap anywhere starts inside a table or code block."""
        overlap = 0 if block else self.overlap
        return pack(
            doc.text,
            levels,
            sizer,
            max_size=budget,
            min_size=min(self.min_size, budget - overlap),
            overlap=overlap,
            no_overlap_inside=levels.protected() if overlap else (),
            keep_headings=keep_headings,
            heading_end=heading_end,
            span=span,
            hard_max_size=self.max_size,
            cut_memo=cut_memo,
            **(self.packing_options() if packing is None else {"packing": packing}),
        )

    def _floor(self) -> int:
        """The smallest budget a section gets, however much context and header it carries."""
        return min(self.max_size, self.overlap + max(1, (self.max_size - self.overlap) // 2))

    # ------------------------------------------------------------------------------ sections
    def _budget(self, context: ContextBuilder, start: int, extra: str = "", end: int | None = None) -> int:
        """``max_size`` less what goes in front of this section's pieces, when that counts (``end``: the
        section's end, for the headings inside it: the pieces under them carry their paths too).

        Never less than half of what a chunk may hold: a table header and a deep heading path must not
        crowd out the rows. Where they would, `_embed_text` cuts the context down (then leaves the header out).
        """
        if not self.context_counts:
            # no context; a repeated header or group line still counts (unless told not)
            if not extra or self.context_in_budget is False:
                return self.max_size
            return max(self.max_size - self.measure(extra), self._floor())
        taken = context.largest(start, end) + (self.measure(extra) if extra else 0)
        return max(self.max_size - taken, self._floor())

    def _fits_whole(self, context: ContextBuilder, sizer: SpanSizer, start: int, end: int) -> bool:
        """Whether ``[start, end)`` fits one chunk with the context it would get: a section starting at
        its heading holds that line, so its context is only the path above it."""
        taken = context.measured(context.prefix(start)) if self.context_counts else 0
        return sizer.estimate(start, end) + taken <= self.max_size

    def _sections(
        self,
        doc: Document,
        outline: Outline,
        paths: HeadingPaths,
        context: ContextBuilder,
        sizer: SpanSizer,
        lead_pairs: list[tuple[int, int]],
    ) -> list[Section]:
        """Heading sections (whole subtrees when they fit), then oversized blocks carved out of them.
        ``lead_pairs``: the document's `lead_ins`."""
        text = doc.text
        heads = outline.headings
        starts = [h.start for h in heads]
        bounds: list[tuple[int, int]] = []
        first = heads[0].start if heads else len(text)
        if has_content(text, outline.front_matter_end, first) or (
            not heads and has_content(text, 0, len(text))
        ):
            bounds.append((0, first))
        elif outline.front_matter_end and heads:
            # front matter alone goes with the first section when they fit one chunk; else it is a section
            # of its own, so the first section starts at its heading (a chunk holding the title's heading
            # line is not prefixed with the title: its text may take that room)
            own_end = starts[1] if len(heads) > 1 else len(text)
            if self._fits_whole(context, sizer, 0, own_end):
                starts[0] = 0
            else:
                bounds.append((0, first))
        i = 0
        carry: int | None = None  # a heading with no text of its own goes with its first subsection
        while i < len(heads):
            start = starts[i] if carry is None else carry
            end_of_own = starts[i + 1] if i + 1 < len(heads) else len(text)
            j = i + 1
            while j < len(heads) and heads[j].level > heads[i].level:
                j += 1
            subtree_end = starts[j] if j < len(heads) else len(text)
            if j > i + 1 and self._fits_whole(context, sizer, start, subtree_end):
                bounds.append((start, subtree_end))
                carry = None
                i = j
            elif (
                i + 1 < len(heads)
                and heads[i + 1].level > heads[i].level  # into its own subsection, never the next article
                and not text[heads[i].end : end_of_own].strip()
            ):
                carry = start
                i += 1
            else:
                bounds.append((start, end_of_own))
                carry = None
                i += 1
        bounds = self._pack_siblings(bounds, paths, context, sizer)
        sections: list[Section] = []
        leads = {after: start for start, after in lead_pairs}  # by where what they introduce starts
        for a, b in bounds:
            sections.extend(self._carve(doc, outline, context, sizer, a, b, leads))
        return sections

    def _pack_siblings(
        self, bounds: list[tuple[int, int]], paths: HeadingPaths, context: ContextBuilder, sizer: SpanSizer
    ) -> list[tuple[int, int]]:
        """Join neighbouring sections while the chunk is still small (under `SIBLING_FILL` of
        ``max_size``), the whole fits, and no part of it loses a heading it sits under (siblings share
        their parent's path; a parent's own text takes its first subsections; the last subsection of one
        article never joins the next article). Then a section under ``min_size`` joins a neighbour on the
        same terms when the limit allows."""

        def joinable(a: int, b: int) -> bool:
            return self._fits_whole(context, sizer, a, b) and paths.span(a, b).keeps_context

        groups: list[list[tuple[int, int]]] = []
        for a, b in bounds:
            if (
                groups
                and groups[-1][-1][1] == a
                and sizer.estimate(groups[-1][0][0], groups[-1][-1][1]) < self.max_size * SIBLING_FILL
                and joinable(groups[-1][0][0], b)
            ):
                groups[-1].append((a, b))
            else:
                groups.append([(a, b)])
        if self.min_size > 0:
            self._fill_small(groups, joinable, sizer.estimate)
        return [(g[0][0], g[-1][1]) for g in groups]

    def _fill_small(
        self,
        groups: list[list[tuple[int, int]]],
        joinable: Callable[[int, int], bool],
        size: Callable[[int, int], int],
    ) -> None:
        """A group under ``min_size`` joins a neighbour, or takes sections from it (the split between the
        two that leaves the larger of the two smallest), when the limit and the headings allow."""
        i = 0
        while i < len(groups):
            group = groups[i]
            if size(group[0][0], group[-1][1]) >= self.min_size:
                i += 1
                continue
            best: tuple[int, int, list[list[tuple[int, int]]]] | None = None  # (neighbour, rank, parts)
            for j in (i - 1, i + 1):
                if not 0 <= j < len(groups):
                    continue
                lo, hi = min(i, j), max(i, j)
                if groups[lo][-1][1] != groups[hi][0][0]:
                    continue
                members = groups[lo] + groups[hi]
                if joinable(members[0][0], members[-1][1]):
                    best = (j, 1 << 62, [members])
                    break
                for k in range(1, len(members)):
                    left, right = members[:k], members[k:]
                    if not (joinable(left[0][0], left[-1][1]) and joinable(right[0][0], right[-1][1])):
                        continue
                    smaller = min(size(left[0][0], left[-1][1]), size(right[0][0], right[-1][1]))
                    if smaller >= self.min_size and (best is None or smaller > best[1]):
                        best = (j, smaller, [left, right])
            if best is None:
                i += 1
                continue
            j, _, parts = best
            lo = min(i, j)
            groups[lo : lo + 2] = parts
            i = lo + len(parts)  # the parts are settled: both fit, and each is at least min_size or whole

    def _headings(self, paths: HeadingPaths) -> Callable[[int, int], tuple[tuple[str, ...], dict[str, Any]]]:
        """A chunk's heading path (what all of it shares) and the sub-headings it holds below that."""

        def headings(start: int, end: int) -> tuple[tuple[str, ...], dict[str, Any]]:
            path, inside = paths.titles(start, end)
            return path, ({"subheadings": inside} if inside else {})

        return headings

    def _carve(
        self,
        doc: Document,
        outline: Outline,
        context: ContextBuilder,
        sizer: SpanSizer,
        a: int,
        b: int,
        leads: dict[int, int],
    ) -> list[Section]:
        """Split a section around the tables and code blocks in it that need pieces of their own. ``leads``:
        the document's lead-ins by where what they introduce starts (`lead_ins`)."""
        budget = self._budget(context, a, end=_opening_headings_end(doc.text, context, a, b))
        mode = self.table_mode
        text = doc.text
        # (start, end, sections) per block needing its own sections; build(lead) gives the same sections
        # with the first one starting at ``lead`` (a short lead-in sentence joins the block's first piece)
        blocks: list[tuple[int, int, list[Section], Callable[[int], list[Section]]]] = []
        for table in outline.tables:
            if a <= table.start and table.end <= b:

                def build(lead: int, table: Table = table) -> list[Section]:
                    return self._table_sections(text, table, context, sizer, budget, mode, doc, lead)

                own = build(table.start)
                if own:
                    blocks.append((table.start, table.end, own, build))
        for code in (c for c in outline.code_blocks if c.closed and a <= c.start and c.end <= b):
            # with its tag lines and lead-in a block may be larger than the budget while it fits max_size:
            # then it is one piece with them, as a block that alone fits max_size and not the budget
            front = outline.opened_from(code.start)
            front = max(a, leads.get(front, front))
            if sizer.estimate(front, code.end) > budget or (
                front > a  # under headings only, which do not fit with it: carved, it goes whole
                and sizer.estimate(a, code.end) > budget
                and sizer.estimate(front, code.end) <= self.max_size
                and _only_headings(text, outline, a, front)
            ):
                # a code block that fits max_size is never cut to make room for the context (the
                # context gives way), nor a code line for the context and the fences
                whole = sizer.estimate(code.start, code.end)
                widest = (
                    whole
                    if whole <= self.max_size
                    else self._widest_line(text, sizer, *code.body, code.start)
                )

                def build_code(lead: int, code: CodeBlock = code, widest: int = widest) -> list[Section]:
                    repeat = code.opening + "\n"
                    close = "\n" + code.closing
                    # a block that fits max_size with its tags or lead-in above it is one piece with them
                    together = sizer.estimate(lead, code.end) if lead < code.start else 0
                    cap = together if widest < together <= self.max_size else min(self.max_size, widest)
                    return [
                        Section(
                            lead,
                            code.end,
                            max(self._budget(context, code.start, repeat + close), cap),
                            code=code,
                            repeat=repeat,
                            repeat_after=code.body[0],
                            close=close,
                            close_before=code.body[1],
                        )
                    ]

                blocks.append((code.start, code.end, build_code(code.start), build_code))
        out: list[Section] = []
        pos = a
        for start, end, own, rebuild in sorted(blocks, key=lambda x: x[0]):
            if start < pos:  # a block nested in one already carved out (a fence in a table cell)
                continue
            # the opening-tag lines right before the block (`<Sandpack>`, `::: details`) open it: they
            # go with its first piece, never at the end of the text before it; and so does a lead-in
            # right before them ("次のエラーを得ます：") that takes no more than half of that piece
            lead = max(outline.opened_from(start), pos)
            budget_of_block = own[0].max_size
            if lead > pos:
                led = leads.get(lead)
                if led is not None and led >= pos and sizer.estimate(led, lead) <= budget_of_block // 2:
                    lead = led
            # a block that fits whole is not cut to keep its tag or lead-in with it; a code block that fits
            # max_size with them is one piece with them (`build_code`)
            if (
                len(own) == 1
                and sizer.estimate(start, end) <= budget_of_block < sizer.estimate(lead, end)
                and (own[0].code is None or sizer.estimate(lead, end) > self.max_size)
            ):
                lead = start
            if (
                has_content(text, pos, lead)
                and sizer.estimate(pos, start) > own[0].max_size // 2
                and not _only_headings(text, outline, pos, lead)  # a heading goes on with its lead-in
            ):
                out.append(Section(pos, lead, budget))
                if lead < start:
                    own = rebuild(lead)
            elif has_content(text, pos, start):
                if (
                    own[0].code is not None
                    and len(own) == 1
                    and sizer.estimate(lead, end) <= self.max_size < sizer.estimate(pos, end)
                    and has_content(text, pos, lead)
                ):  # a code block that fits is never cut to keep the heading above it: that goes before it
                    out.append(Section(pos, lead, budget))
                    if lead < start:
                        own = rebuild(lead)
                else:
                    own = rebuild(pos)  # "料金は次のとおり。" goes with the header and first rows
            # the closing-tag lines right after the block (`</Sandpack>`) go with its last piece, unless
            # the block fits whole and not with them (it is not cut for them)
            trail = min(outline.closed_to(end), b)
            last = own[-1]
            if trail > end and not (
                sizer.estimate(last.start, end) <= last.max_size < sizer.estimate(last.start, trail)
                and len(own) == 1
            ):
                own = [*own[:-1], replace(last, end=trail)]
                end = trail
            out.extend(own)
            pos = end
        if has_content(text, pos, b) or not out:
            out.append(Section(pos, b, budget))
        return out

    def _widest_line(self, text: str, sizer: SpanSizer, a: int, b: int, fence: int | None = None) -> int:
        """The size of the longest line in ``text[a:b]``; with ``fence`` (where the opening fence line of a
        code block whose body ``[a, b)`` is starts), the fence line with the first line counts as one: a
        fence never ends a piece, and a first line that fits with it was cut where the room ran out
        (``function PeoplePicker({people,`` | ``activeId, onPick}) {``) when the piece's budget was
        only the widest line's."""
        first = 0
        if fence is not None:
            end = text.find("\n", a, b)
            first = sizer.estimate(fence, b if end < 0 else end)
            if first > self.max_size:  # it cannot be one piece whatever the budget
                first = 0
        if isinstance(self.measure, Chars):  # a line's size is its length
            return max(first, *map(len, text[a:b].split("\n")))
        widest = first
        pos = a
        while pos < b:
            end = text.find("\n", pos, b)
            end = b if end < 0 else end
            widest = max(widest, sizer.estimate(pos, end))
            pos = end + 1
        return widest

    def _table_sections(
        self,
        text: str,
        table: Table,
        context: ContextBuilder,
        sizer: SpanSizer,
        budget: int,
        mode: TableMode,
        doc: Document,
        lead: int | None = None,
    ) -> list[Section]:
        """Sections for a table that must be cut: too large, or one per group / per row by mode.

        The first section starts at ``lead`` (a lead-in before the table) or at the table.
        """
        if not table.rows:
            return []
        first = table.start if lead is None else lead
        if mode.mode == "records":
            sections = []
            for k, row in enumerate(table.rows):
                start = first if k == 0 else row.start
                end = table.end if k == len(table.rows) - 1 else table.rows[k + 1].start
                # a record stays whole when it fits at all: the context gives way to it (see _embed_text)
                budget_k = max(
                    self._budget(context, table.start), min(self.max_size, sizer.estimate(start, end))
                )
                sections.append(Section(start, end, budget_k, table=table))
            return sections
        if mode.mode == "group-by":
            col = column_index(table, mode.column)
            if col is None:
                if lead in (None, table.start):  # said once: `_carve` builds again with a lead-in
                    log.warning(
                        "%s: table has no column %r (columns: %s); its rows are not grouped",
                        doc.id,  # asked only here: a document's id may still have to be hashed
                        mode.column,
                        ", ".join(table.columns),
                    )
            else:
                values = row_values(table, True, also=col)
                sections = []
                runs = group_runs(values, col)
                for n, (lo, hi, value) in enumerate(runs):
                    start = first if n == 0 else table.rows[lo].start
                    end = table.end if n == len(runs) - 1 else table.rows[hi].start
                    line = f"{table.columns[col]}: {value}\n" if value else ""
                    sections += self._header_first(
                        text, table, sizer, context, start, end, lo, hi, line, with_header=n == 0
                    )
                return sections
        whole = sizer.estimate(table.start, table.end)
        if whole <= budget:
            return []
        if whole <= self.max_size:  # it fits, only not with its context: the context gives way
            return [
                Section(first, table.end, max(budget, min(self.max_size, sizer.estimate(first, table.end))))
            ]
        return self._header_first(text, table, sizer, context, first, table.end, 0, len(table.rows), "")

    def _header_first(
        self,
        text: str,
        table: Table,
        sizer: SpanSizer,
        context: ContextBuilder,
        start: int,
        end: int,
        lo: int,
        hi: int,
        line: str,
        with_header: bool = True,
    ) -> list[Section]:
        """Rows ``lo..hi`` of a table as sections: the first holds the header itself (as many rows as
        fit with it), the rest repeat it in their ``embed_text`` and leave room for it."""
        newline = "\r\n" if text.startswith("\r\n", table.header[1]) else "\n"
        repeat = text[table.header[0] : table.header[1]]
        if table.dialect == "markdown":  # without the padding that aligns its columns in the source
            repeat = compact_header(repeat)
        repeat += newline
        # a row is never cut to make room for the context or the repeated header: they give way to it
        widest = max((sizer.estimate(r.start, r.end) for r in table.rows[lo:hi]), default=0)
        rest = Section(
            start,
            end,
            max(self._budget(context, table.start, line + repeat), min(self.max_size, widest)),
            table=table,
            group_line=line,
            repeat=repeat,
            repeat_after=table.header[1],
        )
        if not with_header:
            return [rest]
        head = table.header[0]
        if sizer.estimate(head, table.rows[lo].end) > self.max_size:
            # the header and first row do not fit one chunk: the header goes alone (with what comes before
            # it), so that the first row stays whole and carries the header in its embed_text, as the rest
            return [
                Section(start, table.rows[lo].start, self.max_size, table=table, group_line=line),
                replace(rest, start=table.rows[lo].start),
            ]
        full = self._budget(context, table.start, line)
        k = lo
        while k < hi and sizer.estimate(start, table.rows[k].end) <= full:
            k += 1
        k = max(k, lo + 1)  # the header never goes without its first row
        # the header and first row stay whole even if the context has to make room (see _embed_text)
        full = max(full, min(self.max_size, sizer.estimate(start, table.rows[k - 1].end)))
        if k >= hi:
            return [replace(rest, max_size=full, repeat="")]
        return [
            Section(start, table.rows[k].start, full, table=table, group_line=line),
            replace(rest, start=table.rows[k].start),
        ]

    # ------------------------------------------------------------------------------ embed text
    def _embed_text(
        self,
        doc: Document,
        outline: Outline,
        context: ContextBuilder,
        section: Section,
        start: int,
        end: int,
        span_size: int | None = None,
    ) -> tuple[str, int, int]:
        """Context, the block's decorations (group line, repeated header, reopened fence), the text.

        A piece that holds none of the section's table or code block (a lead-in sentence packed alone)
        gets no decoration. When the context counts toward ``max_size`` and the whole would not fit,
        the context goes first, then the repeated header or fence: the size limit is kept. Returns the
        text, its size and the size of the whole with context (both 0 when the context does not count:
        nothing was measured). ``span_size``: the packed span's own size, which spares measuring the
        whole again where sizes add up (`_sizes_add_up`) and no table row is rewritten.
        """
        body = self._table_text(doc, outline, start, end)
        block = section.table or section.code
        touches = block is not None and end > block.start
        prefix = context.prefix(start, end)
        group = section.group_line if touches else ""
        repeat = section.repeat if touches and section.repeat and start >= section.repeat_after else ""
        close = section.close if touches and section.close and end <= section.close_before else ""
        embed = prefix + group + repeat + body + close
        raw = doc.text[start:end]
        if not self.context_counts and (
            self.context_in_budget is False or not (group or repeat or close or body != raw)
        ):
            # no context, and nothing added or rewritten that counts (a repeated header, a record): no sizes
            return embed, 0, 0
        if (
            span_size is not None
            and not (group or repeat or close)
            and self._sizes_add_up()
            and (not outline.tables or (len(body) == end - start and body == raw))
        ):
            full = context.measured(prefix) + span_size
            if full <= self.max_size:
                return embed, full, full
            within = context.prefix_within(start, end, self.max_size - span_size)  # what fits of it
            return within + body, context.measured(within) + span_size, full
        full = self.measure(embed)
        if full <= self.max_size:
            return embed, full, full
        candidates = [group + repeat + body + close, body + close, body]
        known: dict[str, int] = {}  # sizes measured here already (a token count costs an encoding)
        if self.context_counts:
            rest = candidates[0]
            known[rest] = rest_size = self.measure(rest)
            if rest_size < self.max_size:
                # the part of the context that fits with the decorations and the text, outer headings first
                within = context.prefix_within(start, end, self.max_size - rest_size)
                if within:
                    candidates.insert(0, within + rest)
        if body != raw:
            # rows rewritten longer (records, filled cells) than rows that fit: passed as they are
            candidates += [prefix + group + repeat + raw, group + repeat + raw, raw]
        for candidate in candidates:
            size = known.get(candidate)
            if size is None:
                size = self.measure(candidate)
            if size <= self.max_size:
                return candidate, size, full
        return body, self.measure(body), full

    def _plain_sizes(self, context: ContextBuilder, packed: list[PackedSpan]) -> tuple[list[int], list[int]]:
        """The size of each piece's ``embed_text`` and of its text with its whole context, for a piece of a
        plain section (no table or code block of its own) whose text is never rewritten and whose context
        and text measure the sum of their sizes: what `_embed_text` gives, without making the strings
        (a section packed again tighter throws them away). Both 0 when the context does not count."""
        if not self.context_counts:
            zeros = [0] * len(packed)
            return zeros, zeros
        limit = self.max_size
        prefix = context.prefix
        measured = context.measured
        fulls = [measured(prefix(p.start, p.end)) + p.size for p in packed]
        # a context that does not fit whole gives way as far as it must (`ContextBuilder.prefix_within`)
        sizes = [
            full
            if full <= limit
            else p.size + measured(context.prefix_within(p.start, p.end, limit - p.size))
            for p, full in zip(packed, fulls, strict=True)
        ]
        return sizes, fulls

    def _sizes_add_up(self) -> bool:
        """Whether a context prefix and the text after it measure the sum of their sizes: in characters,
        and in cl100k_base tokens — a prefix ends with a blank line, and cl100k's pre-tokenizer never
        joins a line break to the text after it, so no token spans the two (a property test holds it)."""
        measure = self.measure
        return isinstance(measure, Chars) or (
            isinstance(measure, Tokens) and measure.tokenizer == DEFAULT_TOKENIZER
        )

    def _table_text(self, doc: Document, outline: Outline, start: int, end: int) -> str:
        """The chunk text with whole table rows rewritten by the table mode (filled, as records)."""
        text = doc.text
        if not outline.tables:
            return text[start:end]
        mode = self.table_mode
        if not (mode.fills or mode.mode == "records"):
            return text[start:end]
        edits: list[tuple[int, int, str]] = []
        for table in outline.tables:
            if table.end <= start or table.start >= end:
                continue
            col = column_index(table, mode.column) if mode.mode == "group-by" else None
            values = row_values(table, True, also=col)
            inside = [
                (row, cells)
                for row, cells in zip(table.rows, values, strict=True)
                if start <= row.start and row.end <= end
            ]
            if mode.mode == "records":
                if not inside:
                    continue
                a = max(start, table.start)
                b = min(end, table.end)
                records = "\n\n".join(render_record(table.columns, cells) for _, cells in inside)
                edits.append((max(a, start), b, records))
                continue
            for row, cells in inside:
                if cells != row.cells:
                    edits.append((row.start, row.end, render_row(cells, table.dialect)))
        if not edits:
            return text[start:end]
        out = []
        pos = start
        for a, b, new in sorted(edits):
            out.append(text[pos:a])
            out.append(new)
            pos = b
        out.append(text[pos:end])
        return "".join(out)


def _only_headings(text: str, outline: Outline, a: int, b: int) -> bool:
    """Whether ``text[a:b]`` holds nothing but heading lines (and blank ones): a section's heading right
    above the lead-in of a table or code block carved out of it, which must not be left alone."""
    rest = []
    pos = a
    for heading in outline.headings:
        if heading.start >= b:
            break
        if heading.start < a:
            continue
        rest.append(text[pos : heading.start])
        pos = heading.end
    rest.append(text[pos:b])
    return pos > a and not "".join(rest).strip()
