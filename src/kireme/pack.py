"""Step 2 of every strategy: choose which candidate gaps become cuts.

One packer serves all strategies, so the guarantees hold everywhere at once:

* every chunk is an exact slice ``[start, end)`` with leading/trailing whitespace left out;
* ``size <= max_size`` in the chosen measure (verified exactly for measures whose span sizes are
  estimates, and re-packed tighter in the rare case a cut changed the tokenisation);
* cuts land on the strongest level that has a cut inside an oversized span; weaker levels are used only
  for the pieces that still do not fit; grapheme clusters are the last resort and are never split unless
  a single cluster is itself larger than the limit;
* pieces are merged greedily up to the limit, a piece below ``min_size`` joins a neighbour when the
  limit allows, and ``overlap`` is taken from the end of the previous chunk after packing, starting at
  the strongest boundary it can.
"""

from __future__ import annotations

import itertools
import logging
import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, cast

from kireme._native import native
from kireme.boundaries.levels import Level, Outside
from kireme.errors import ConfigError
from kireme.length import SpanSizer, _CharSizer
from kireme.text.graphemes import SIMPLE_CHARS, CutFilter, ceil_boundary, floor_boundary
from kireme.text.headings import (
    HeadingEnds,
    at_line_edge,
    ends_with_heading,
    ends_with_titled_line,
    lead_in_line_start,
    speaker_line,
)
from kireme.text.marks import CLAUSE_MARKS, CLOSERS, FULL_STOPS, TERMINATORS
from kireme.text.paragraphs import ends_sentence
from kireme.text.sentences import sentence_index

log = logging.getLogger(__name__)

Span = tuple[int, int]
# A run of whitespace (the stdlib engine's ``\s`` is ``str.isspace``); matches at any position.
_SPACE_RUN = cast(Callable[[str, int, int], re.Match[str]], re.compile(r"\s*").match)
_NATIVE_TRIM: Callable[[str, int, int, set[str]], Span | None] | None = native("trim_span")
# `_Packer.merge_pieces`' loop in characters with the default heading test or parsed heading ends
# (`kireme._speedups.merge_run`)
_NativeMerge = Callable[[str, list[int], int, int, bool, set[str], list[Span], frozenset[int] | None], int]
_NATIVE_MERGE: _NativeMerge | None = native("merge_run")
# `_Packer.run`'s end in characters (`kireme._speedups.char_packed`): the spans with their lengths as sizes
_NATIVE_PACKED: Callable[[type, list[Span], int], list[PackedSpan] | None] | None = native("char_packed")
_NATIVE_HEADING_TEST = native("ends_with_heading")
# `_dp_back`, the optimal packer's dynamic programme (`kireme._speedups.optimal_back`)
_NativeBack = Callable[
    [list[int], list[int], list[int], list[int], list[float], list[bool], float, int, float, float],
    tuple[list[int], int],
]
_NATIVE_BACK: _NativeBack | None = native("optimal_back")
# `_Packer.split_graphemes` in characters (`kireme._speedups.char_windows`): -1 when done, else where to go on
_NATIVE_WINDOWS: Callable[[str, int, int, int, set[str], list[Span], bool], int] | None = native(
    "char_windows"
)


class PackedSpan(NamedTuple):
    """A chunk's span and its exact size in the measure (a named tuple: the packer makes one per chunk, and a
    tuple costs a fifth of a frozen dataclass to make)."""

    start: int
    end: int
    size: int


_new_tuple = tuple.__new__


def _skip_space(text: str, a: int, b: int) -> int:
    """The first offset in ``[a, b)`` that holds no whitespace (``b`` when none does)."""
    while a < b and text[a].isspace():
        a += 1
    return a


_QUESTION_MARKS = "?？"
# a sentence's end in an answer (`answer_cut_inside`): a full-width mark, or a half-width one before whitespace
_SENTENCE_END = re.compile(r"[。！？]|[.!?](?=\s)")


def answer_cut_inside(text: str, lead_end: int, a: int, b: int) -> bool:
    """Whether the lead-in line ending at ``lead_end`` (whitespace after it aside) asks a question and
    ``[a, b)`` — what follows it, whitespace trimmed — can be cut at a sentence end inside it: then the
    question keeps the first sentences of its answer rather than end a chunk alone. The C twin is in
    `kireme._speedups` (`answer_cut_inside`); tests/test_speedups.py holds them equal."""
    end = _back_space(text, 0, lead_end)
    if end <= 0 or text[end - 1] not in _QUESTION_MARKS:
        return False
    if _dialogue(text, end, a, b):
        return False
    # the first sentence end with a character after it: when only whitespace follows it up to ``b``, none
    # later can have more (a question's answer can be pages long, and most have no such end)
    found = _SENTENCE_END.search(text, a, b)
    return found is not None and _skip_space(text, found.start() + 1, b) < b


def _dialogue(text: str, end: int, a: int, b: int) -> bool:
    """Whether the question line ending at ``end`` and the line starting at ``a`` (before ``b``) are two
    speakers' turns (``Bob: …?`` then ``Alice: Sure. …``), neither labelled as a FAQ's: the answer is
    the other speaker's whole turn, not cut to keep its first sentence with the question."""
    stop = text.find("\n", a, b)
    return speaker_line(text[text.rfind("\n", 0, end) + 1 : end].strip()) and speaker_line(
        text[a : b if stop < 0 else stop].strip()
    )


def _back_space(text: str, a: int, b: int) -> int:
    """``b`` moved back over the whitespace before it, not before ``a``."""
    while b > a and text[b - 1].isspace():
        b -= 1
    return b


def _trim(text: str, a: int, b: int) -> Span:
    """``[a, b)`` without its leading and trailing whitespace (``(e, e)`` when that is all it holds).

    The packer asks it of every piece: where kireme's C extension is built, it answers the usual span
    (`kireme._speedups.trim_span`: edges between characters that never join a grapheme cluster) and this
    function only the others; the same answers either way (tests/test_speedups.py)."""
    if _NATIVE_TRIM is not None:
        span: Span | None = _NATIVE_TRIM(text, a, b, SIMPLE_CHARS)
        if span is not None:
            return span
    return _trim_python(text, a, b)


def _trim_python(text: str, a: int, b: int) -> Span:
    """`_trim` in Python alone: the reference, and the answer where the C extension leaves it to Python."""
    s = _SPACE_RUN(text, a, b).end() if a < b and text[a].isspace() else a  # blank lines, indents: one scan
    e = b
    while e > s and text[e - 1].isspace():
        e -= 1
    if s >= e:
        return (e, e)
    if s > a:  # never start on a mark that belongs to a whitespace base (" \u0301")
        s = floor_boundary(text, s, a)
    if e < b:
        e = ceil_boundary(text, e, s)
    return (s, e)


class _Packer:
    def __init__(
        self,
        text: str,
        levels: Sequence[Level],
        sizer: SpanSizer,
        max_size: int,
        min_size: int,
        overlap: int,
        merge: bool,
        keep_headings: bool = True,
        heading_end: Callable[[str, int], bool] | None = None,
        gap_cost: Callable[[int], float] | None = None,
        span: Span | None = None,
        hard_max_size: int | None = None,
        cut_memo: dict[tuple[int, int, int], tuple[int, list[int]]] | None = None,
        overlap_levels: int | None = None,
        no_overlap_inside: Sequence[tuple[int, int]] = (),
    ) -> None:
        if not isinstance(keep_headings, bool):
            raise TypeError(
                f"keep_headings must be True or False, not {keep_headings!r} (a test goes in heading_end)"
            )
        self.text = text
        self.span = span if span is not None else (0, len(text))
        self.keep_headings = keep_headings
        self.ends_with_heading = heading_end if heading_end is not None else ends_with_heading
        # a lead-in takes the lines of the hard-wrapped sentence it ends along in prose (the heuristic or
        # parsed Markdown headings), not in code, whose block openers read as lead-ins (`lead_in_line_start`)
        self.wrapped_lead_ins = heading_end is None or isinstance(heading_end, HeadingEnds)
        self.gap_cost = gap_cost
        # never changed here: a caller's tuple is read as it is (a chunker's levels, made once)
        self.levels: Sequence[Level] = levels if type(levels) is tuple else list(levels)
        # the spans no level cuts inside (`Outside`: a table row or a line of code that fits a chunk); a
        # heading's body is not cut inside one either (`heading_with_body`)
        kept = self.levels[0] if self.levels and isinstance(self.levels[0], Outside) else None
        self.kept: tuple[Sequence[int], Sequence[int]] = (kept.starts, kept.ends) if kept else ((), ())
        self.sizer = sizer
        self.max_size = max_size
        self.min_size = min_size
        self.overlap = overlap
        # how many of the levels (strongest first) an overlap may start at: all, or (code, JSON) those
        # between lines, never inside one
        self.overlap_levels = self.levels if overlap_levels is None else self.levels[:overlap_levels]
        # spans (tables, code blocks) no overlap starts inside: half a row or a command, a stray fence
        self.no_overlap = sorted(no_overlap_inside)
        self.no_overlap_starts = [a for a, _ in self.no_overlap] if self.no_overlap else []
        self.merge = merge
        self.budget = max_size - overlap
        # a grapheme cluster up to this size is never split, even when it is over ``max_size`` (a caller's
        # budget reduced for context, which gives way to it)
        # (the overlap gives way too: a cluster that fits a chunk alone goes alone, without one)
        self.cluster_budget = max(max_size, hard_max_size or 0)
        self.cut_filter = CutFilter(text)
        self.cut_memo = cut_memo
        self.warned_cluster = False
        # merge_pieces' loop in C where it answers the same: sizes in characters, and the default heading
        # test or parsed heading ends (which C reads from their set)
        test = self.ends_with_heading
        self.heading_ends = test.ends if isinstance(test, HeadingEnds) and test.text is text else None
        self.native_merge = (
            _NATIVE_MERGE
            if type(sizer) is _CharSizer
            and (
                not keep_headings
                or self.heading_ends is not None
                or (_NATIVE_HEADING_TEST is not None and test is _NATIVE_HEADING_TEST)
            )
            else None
        )

    # ------------------------------------------------------------------------------ whitespace
    def trim(self, a: int, b: int) -> Span:
        if _NATIVE_TRIM is not None:  # `_trim`, one call less: it is asked of every piece
            span: Span | None = _NATIVE_TRIM(self.text, a, b, SIMPLE_CHARS)
            if span is not None:
                return span
        return _trim_python(self.text, a, b)

    # ------------------------------------------------------------------------------ splitting
    def split(self, a: int, b: int, level: int, budget: int, out: list[Span]) -> None:
        a, b = self.trim(a, b)
        if a >= b:
            return
        top_level_no_merge = level == 0 and not self.merge
        if not top_level_no_merge and self.sizer.estimate(a, b) <= budget:
            out.append((a, b))
            return
        j, cuts = self.strongest_cuts(a, b, level)
        if not cuts:
            self.split_graphemes(a, b, budget, out)
            return
        bounds = [a, *cuts, b]
        if j == 0 and not self.merge:
            for s, e in itertools.pairwise(bounds):
                self.split(s, e, 1, budget, out)
            return
        self.merge_pieces(bounds, j, budget, out)

    def strongest_cuts(self, a: int, b: int, level: int) -> tuple[int, list[int]]:
        """The first level from ``level`` on with cuts inside ``(a, b)``, and those cuts (none: ``[]``;
        callers copy them). With ``cut_memo`` each span's answer is worked out once for all the packings
        of one text with the same levels (a section packed again tighter asks the same spans)."""
        memo = self.cut_memo
        if memo is not None:
            known = memo.get((a, b, level))
            if known is not None:
                return known
        j = level
        found: list[int] = []
        while j < len(self.levels):
            cuts = self.cut_filter.keep(self.levels[j].cuts(self.text, a, b))
            if cuts:
                found = cuts
                break
            j += 1
        if memo is not None:
            memo[(a, b, level)] = (j, found)
        return j, found

    def merge_pieces(self, bounds: list[int], j: int, budget: int, out: list[Span]) -> None:
        """Greedy: each chunk takes as many whole pieces as fit; oversized pieces go one level down.

        A chunk never ends with a heading line: the cut moves back before the heading, or, when the
        heading is all the chunk would hold, `heading_with_body` emits it with the start of its body. A
        lead-in line (``limits below:``) is kept with what it introduces the same way, unless that fits a
        chunk alone but not with it (`lead_in_stays`).
        """
        text = self.text
        n = len(bounds)
        i = 0
        fast = self.native_merge
        while i < n - 1:
            if fast is not None:  # as far as C can go; the piece it stops at is handled below
                i = fast(text, bounds, i, budget, self.keep_headings, SIMPLE_CHARS, out, self.heading_ends)
                if i < 0:  # only headings fit from piece -2 - i: C took the steps back the loop below would
                    i = self.heading_with_body(bounds, -2 - i, j, budget, out)
                    continue
                if i >= n - 1:
                    break
            start = bounds[i]
            k = self.sizer.furthest(start, bounds, i + 1, n, budget)
            if k <= i:
                if self.whole_without_overlap(start, bounds[i + 1]):
                    s, e = self.trim(start, bounds[i + 1])
                    if s < e:
                        out.append((s, e))
                    i += 1
                    continue
                i = self.split_and_absorb(bounds, i, i + 1, j, budget, out)
                continue
            if k < n - 1:
                while self.keep_headings and k > i and self.ends_with_heading(text, bounds[k]):
                    back = self.cut_before_heading(bounds, i, k, budget)
                    if back is None:
                        break
                    k = back
                if k == i:
                    i = self.heading_with_body(bounds, i, j, budget, out)
                    continue
            s, e = self.trim(start, bounds[k])
            if s < e:
                out.append((s, e))
            i = k

    def cut_before_heading(self, bounds: list[int], i: int, k: int, budget: int) -> int | None:
        """Where a chunk ending at ``bounds[k]`` after a heading or lead-in line ends instead: ``k - 1`` (the
        line goes on with what follows it), the bound where a lead-in line split into several pieces
        starts (``Q: 忘れました。どうすればよいですか？`` is two sentences), or ``None`` — it ends there
        (`lead_in_stays`). Only pieces after ``bounds[i]`` are stepped back over."""
        text = self.text
        line = lead_in_line_start(text, bounds[k], self.wrapped_lead_ins)
        if line < 0:
            return k - 1  # a heading never ends a chunk
        before = k - 1
        if not at_line_edge(text, bounds[before]):
            before = k - 2  # the bound where the lead-in line starts, if a piece of this chunk starts there
            while before > i and not (bounds[before] <= line and at_line_edge(text, bounds[before])):
                before -= 1
            if before <= i:
                return None  # the cut would fall inside a line (``def f(a: int,`` | ``b: int) -> int:``)
        if not self.lead_in_stays(bounds, before, k, budget):
            return before
        if bounds[before] < line and self.lead_in_moves_alone(bounds, before, line, k, budget):
            bounds[k] = line  # the lead-in line leaves the larger piece it ends: it opens the next chunk
            return k
        return None

    def lead_in_moves_alone(self, bounds: list[int], before: int, line: int, k: int, budget: int) -> bool:
        """Whether the lead-in line starting at ``line`` inside the piece ``bounds[before]..bounds[k]`` (with
        text before it: a paragraph or section the packer holds as one piece) goes on with the piece it
        introduces, when they fit a chunk together: ``1. Create a virtual environment:`` with its code
        block, not at the end of the chunk of the paragraph above them. The C loop (`merge_run`) does the
        same."""
        text = self.text
        if _skip_space(text, bounds[before], line) >= line:
            return False  # nothing before it: the existing rule (`lead_in_stays`) decides
        end = _back_space(text, _skip_space(text, bounds[k], bounds[k + 1]), bounds[k + 1])
        sizer = self.sizer
        if sizer.exact_estimates:
            return sizer.estimate(line, end) <= budget
        return sizer.exact([(line, end)])[0] <= budget

    def lead_in_stays(self, bounds: list[int], before: int, k: int, budget: int) -> bool:
        """Whether a chunk may end at ``bounds[k]`` after a lead-in line starting at or after
        ``bounds[before]`` (a line edge): when the piece after it fits a chunk alone but not with the
        lead-in line — cutting that piece to keep them together (a code block, a table, one list item)
        would do more harm than the lead-in left at the end of the chunk before it. Not for a question
        whose answer can be cut at a sentence end (`answer_cut_inside`): ``Q: …?`` alone at a chunk's end,
        its answer in the next, is the cut that loses answers; the question goes on with the first
        sentences of its answer."""
        text = self.text
        line = lead_in_line_start(text, bounds[k], self.wrapped_lead_ins)
        # the lead-in moves on with the pieces it ends (the whole of them), or with its line when a piece
        # starts inside that line; sizes without the whitespace at either end, as the chunks will be
        start = min(line, _skip_space(text, bounds[before], bounds[k]))
        after = _skip_space(text, bounds[k], bounds[k + 1])
        end = _back_space(text, after, bounds[k + 1])
        if answer_cut_inside(text, bounds[k], after, end):
            return False  # a question keeps the first sentences of its answer
        sizer = self.sizer
        if sizer.exact_estimates:
            return sizer.estimate(after, end) <= budget < sizer.estimate(start, end)
        alone, together = sizer.exact([(after, end), (start, end)])  # a token estimate may be off by a few
        return alone <= budget < together

    def heading_with_body(self, bounds: list[int], i: int, j: int, budget: int, out: list[Span]) -> int:
        """Pieces from ``i`` are heading lines whose body does not fit with them: emit the headings
        together with the first part of the body (cut with the budget the headings leave)."""
        text = self.text
        n = len(bounds)
        est = self.sizer.estimate
        h = i + 1  # the heading block is bounds[i]..bounds[h]
        head = _skip_space(text, bounds[i], bounds[h])  # where the chunk will start
        while (
            h < n - 1 and self.ends_with_heading(text, bounds[h + 1]) and est(head, bounds[h + 1]) <= budget
        ):
            h += 1
        if h >= n - 1:  # the text ends with headings
            s, e = self.trim(bounds[i], bounds[h])
            if s < e:
                out.append((s, e))
            return h
        body_start = self.trim(bounds[h], bounds[h + 1])[0]
        reduced = budget - est(head, body_start)
        if reduced < max(1, budget // 4):  # the headings fill the chunk: they have to stand alone
            return self.split_and_absorb(bounds, i, h, j, budget, out)
        parts: list[Span] = []
        self.split(bounds[h], bounds[h + 1], j + 1, reduced, parts)
        if not parts:
            return h
        first_end = parts[0][1]
        if est(head, first_end) > budget:  # the body starts with something indivisible
            return self.split_and_absorb(bounds, i, h, j, budget, out)
        if _fenced_block_that_fits(text, body_start, bounds[h + 1], first_end, est, budget):
            # a code block that fits a chunk but not with the headings before it: the headings go alone
            # rather than cut a line of it, or its closing fence (``"a": "Leave at the`` | ``front desk."``)
            return self.split_and_absorb(bounds, i, h, j, budget, out)
        if self.inside_kept(first_end):
            # a table row or a line of code that fits a chunk but not with the headings before it (an
            # opening fence is one): they go alone rather than cut it where the room ran out
            return self.split_and_absorb(bounds, i, h, j, budget, out)
        if _inside_table_row(text, first_end):
            row_start = text.rfind("\n", 0, first_end) + 1
            row_end = text.find("\n", first_end)
            if est(row_start, len(text) if row_end < 0 else row_end) <= budget:
                # a table row that fits a chunk but not with the headings before it: the headings go alone
                # rather than cut the row between its cells (``| 役員 | 15,000円 |`` | ``3,000円 |``)
                return self.split_and_absorb(bounds, i, h, j, budget, out)
        if (
            not at_line_edge(text, first_end)
            and not ends_sentence(text[max(bounds[h], first_end - 64) : first_end])
            and (
                lead_in_line_start(text, bounds[h], self.wrapped_lead_ins) >= 0
                or (
                    ends_with_titled_line(text, bounds[h])
                    and self.starts_clean(bounds[h], bounds[h + 1], j, budget)
                )
            )
        ):
            # a lead-in with what it introduces cut inside a line between words (code: ``def f(a: int,``):
            # the lead-in goes alone rather than cut what follows it there; a question keeps the first
            # sentences of its answer (``Q: Who can access my records?`` / ``A: Only you. …``). So does a
            # title written with a full stop (``Chunking guide.``), which may as well be a one-line sentence
            # over its paragraph, where its body's first sentence fits a chunk alone
            return self.split_and_absorb(bounds, i, h, j, budget, out)
        s, e = self.trim(bounds[i], first_end)
        out.append((s, e))
        if first_end >= bounds[h + 1]:
            return h + 1
        bounds[h] = first_end
        return h

    def inside_kept(self, pos: int) -> bool:
        """Whether ``pos`` falls strictly inside one of the spans no level cuts inside (``kept``)."""
        starts, ends = self.kept
        k = bisect_right(starts, pos - 1) - 1
        return k >= 0 and pos < ends[k]

    def starts_clean(self, a: int, b: int, j: int, budget: int) -> bool:
        """Whether ``text[a:b]``, cut one level below ``j`` within ``budget``, has a first piece that ends at a
        line edge or a sentence end: its first sentence fits a chunk alone."""
        parts: list[Span] = []
        self.split(a, b, j + 1, budget, parts)
        if not parts:
            return False
        end = parts[0][1]
        return at_line_edge(self.text, end) or ends_sentence(self.text[max(a, end - 64) : end])

    def split_and_absorb(
        self, bounds: list[int], i: int, stop: int, j: int, budget: int, out: list[Span]
    ) -> int:
        """Split pieces ``i..stop`` one level down; their last part may still take following pieces.

        Returns the bound index to continue from. Without this, every over-long sentence would leave
        a small remainder chunk behind ("を" alone) instead of sharing it with the next sentence. Across a
        *hard* level (a Markdown heading: a new section) the remainder stays alone.
        """
        parts: list[Span] = []
        self.split(bounds[i], bounds[stop], j + 1, budget, parts)
        hard = j < len(self.levels) and getattr(self.levels[j], "hard", False)
        if len(parts) < 2 or stop >= len(bounds) - 1 or hard:
            out.extend(parts)
            return stop
        out.extend(parts[:-1])
        bounds[stop - 1] = parts[-1][0]
        return stop - 1

    def split_graphemes(self, a: int, b: int, budget: int, out: list[Span]) -> None:
        """No separator left: fill each chunk with as many whole grapheme clusters as fit.

        Where span sizes are estimates (tokens), each window is measured exactly before it is
        emitted and pulled back if a cut inside a word made it a token longer, so windows stay full
        instead of leaving one-token remainders behind.
        """
        sizer = self.sizer
        start = a
        if _NATIVE_WINDOWS is not None and type(sizer) is _CharSizer and a >= 0:
            # the windows whose cuts fall between simple characters, in C; the rest from where it stops
            start = _NATIVE_WINDOWS(self.text, a, b, budget, SIMPLE_CHARS, out, bool(self.levels))
            if start < 0:
                return
        while start < b:
            start, b = self.trim(start, b)
            if start >= b:
                return
            # "does the rest fit?" as the window's reach, not the rest's size: a measure that reads its
            # text (a callable unit) then reads about one window per window, not the whole rest each time
            if sizer.furthest_position(start, b, budget) >= b and (
                sizer.exact_estimates or sizer.exact([(start, b)])[0] <= budget
            ):
                out.append((start, b))
                return
            target = budget
            while True:
                cut = self.grapheme_cut(start, b, target)
                s, e = self.trim(start, cut)
                if sizer.exact_estimates or s >= e or target <= 1:
                    break
                over = sizer.exact([(s, e)])[0] - budget
                if over <= 0:
                    break
                target = max(1, target - over)
            if s < e:
                out.append((s, e))
            start = cut

    def grapheme_cut(self, start: int, b: int, budget: int) -> int:
        """Where a window of ``budget`` (estimated) starting at ``start`` ends, between clusters."""
        text = self.text
        e = self.sizer.furthest_position(start, b, budget)
        cut = floor_boundary(text, self.sizer.snap(e, start), start)
        if cut <= start:
            cut = ceil_boundary(text, start + 1, start)
            # one cluster over a caller's reduced budget still fits the real one: keep it whole
            if self.sizer.estimate(start, cut) > self.cluster_budget or (
                not self.sizer.exact_estimates and self.sizer.exact([(start, cut)])[0] > self.cluster_budget
            ):
                if not self.warned_cluster:
                    self.warned_cluster = True
                    log.warning(
                        "a grapheme cluster at offset %d is larger than the size limit; "
                        "it is split between code points",
                        start,
                    )
                cut = max(start + 1, e)
        if self.levels:
            cut = _word_edge(text, _kinsoku(text, _outside_number(text, cut, start), start), start)
        return cut

    # ------------------------------------------------------------------------------ min size
    def merge_small(self, spans: list[Span]) -> list[Span]:
        """Join each piece below ``min_size`` to its smaller neighbour when the result still fits."""
        if self.min_size <= 0 or len(spans) < 2:
            return spans
        est = self.sizer.estimate
        spans = list(spans)
        i = 0
        while i < len(spans) and len(spans) > 1:
            a, b = spans[i]
            if est(a, b) >= self.min_size:
                i += 1
                continue
            options = []  # (preference, index of the left span of the pair to merge)
            if i > 0:
                options.append((self._merge_preference(spans[i - 1][0], a, b), i - 1))
            if i + 1 < len(spans):
                options.append((self._merge_preference(a, spans[i + 1][0], spans[i + 1][1]), i))
            options = [o for o in options if self._fits(spans[o[1]][0], spans[o[1] + 1][1])]
            if not options:
                i += 1
                continue
            _, left = min(options)
            spans[left : left + 2] = [(spans[left][0], spans[left + 1][1])]
            i = max(left, 0)
        return spans

    def _fits(self, start: int, end: int) -> bool:
        """Whether ``[start, end)`` fits the budget: by its estimate, and where an estimate says no (in tokens
        it may be over by a few near the limit), measured exactly — a one-token piece beside one it fits with
        stayed alone under ``min_size``."""
        sizer = self.sizer
        if sizer.estimate(start, end) <= self.budget:
            return True
        return not sizer.exact_estimates and sizer.exact([(start, end)])[0] <= self.budget

    def _merge_preference(self, start: int, gap: int, end: int) -> float:
        """Lower is better: the distance across the gap when known (semantic), else the merged size."""
        if self.gap_cost is not None:
            return self.gap_cost(gap)
        return float(self.sizer.estimate(start, end))

    # ------------------------------------------------------------------------------ exact sizes
    def enforce(self, spans: list[Span], budget: int) -> tuple[list[Span], list[int]]:
        """Measure every span exactly; re-pack the (rare) ones over ``budget`` with a tighter budget."""
        sizes = self.sizer.exact(spans)
        if all(s <= budget for s in sizes):
            return spans, sizes
        fixed: list[Span] = []
        fixed_sizes: list[int] = []
        for span, size in zip(spans, sizes, strict=True):
            if (
                size <= budget
                or (size <= self.cluster_budget and self.one_cluster(span))
                or (size <= self.max_size and self.whole_without_overlap(*span))
            ):
                fixed.append(span)
                fixed_sizes.append(size)
            else:
                parts, part_sizes = self.repack(span, size, budget)
                fixed.extend(parts)
                fixed_sizes.extend(part_sizes)
        return fixed, fixed_sizes

    def one_cluster(self, span: Span) -> bool:
        """Whether ``span`` is a single grapheme cluster (over a budget the overlap or a context reduced,
        it is kept whole: no cut inside a cluster unless it alone is larger than the limit)."""
        start, end = span
        return end > start and ceil_boundary(self.text, start + 1, start) >= end

    def repack(self, span: Span, size: int, budget: int) -> tuple[list[Span], list[int]]:
        """Split one over-budget span with ever tighter estimates until every part measures in budget."""
        tighter = budget
        while True:
            tighter = max(1, tighter - max(1, size - budget))
            parts: list[Span] = []
            self.split(span[0], span[1], 0, tighter, parts)
            part_sizes = self.sizer.exact(parts)
            if all(s <= budget for s in part_sizes) or tighter == 1:
                return parts, part_sizes
            size = max(part_sizes)

    # ------------------------------------------------------------------------------ overlap
    def add_overlap(self, spans: list[Span]) -> list[Span]:
        if self.overlap <= 0 or len(spans) < 2:
            return spans
        out = [spans[0]]
        for (pa, pe), (s, e) in itertools.pairwise(spans):
            out.append((self.overlap_start(pa, pe, s, e), e))
        return out

    def overlap_start(self, prev_start: int, prev_end: int, start: int, end: int) -> int:
        """Earliest strong boundary in the previous chunk's tail that keeps the overlap in budget."""
        sizer = self.sizer
        # the earliest position whose span to `start` still fits the overlap
        lo = prev_start + 1  # never repeat the whole previous chunk
        hi = start
        while lo < hi:  # binary search: sizes shrink as the position moves right
            mid = (lo + hi) // 2
            if sizer.estimate(mid, start) <= self.overlap and sizer.estimate(mid, end) <= self.max_size:
                hi = mid
            else:
                lo = mid + 1
        earliest = lo
        if earliest >= prev_end:
            return start
        quotes = sentence_index(self.text)  # an overlap never starts inside 「…」 the rules protect
        for level in self.overlap_levels:
            cuts = self.cut_filter.keep(level.cuts(self.text, max(0, earliest - 1), prev_end))
            cuts = [c for c in cuts if c >= earliest and not quotes.inside_quote(c) and not self.blocked(c)]
            if cuts:
                s, _ = self.trim(cuts[0], end)
                if s < prev_end:
                    return s
        if self.levels:  # no boundary in reach: better no overlap than one starting mid-word
            return start
        s = ceil_boundary(self.text, earliest, prev_start)
        s, _ = self.trim(s, end)
        return s if s < prev_end else start

    def whole_without_overlap(self, a: int, b: int) -> bool:
        """Whether the piece ``[a, b)``, over the budget only by the room kept for an overlap, is a chunk of
        its own without one rather than cut: it holds part of a table or code block (`no_overlap`) and fits
        ``max_size`` (an overlap is added only where it fits, so this chunk gets none)."""
        if not self.no_overlap or self.overlap <= 0:
            return False
        i = bisect_left(self.no_overlap_starts, b) - 1  # the last span starting before the piece ends
        if i < 0 or self.no_overlap[i][1] <= a:
            return False
        s, e = self.trim(a, b)
        return s < e and self.sizer.exact([(s, e)])[0] <= self.max_size

    def blocked(self, position: int) -> bool:
        """Whether an overlap may not start at ``position``: strictly inside a span of `no_overlap`."""
        i = bisect_left(self.no_overlap_starts, position) - 1  # the last span starting before it
        return i >= 0 and position < self.no_overlap[i][1]

    # ------------------------------------------------------------------------------ run
    def run(self) -> list[PackedSpan]:
        spans: list[Span] = []
        self.split(self.span[0], self.span[1], 0, self.budget, spans)
        spans = self.merge_small(spans)
        if _NATIVE_PACKED is not None and self.overlap <= 0 and type(self.sizer) is _CharSizer:
            # in characters a span's size is its length: `enforce` and the packed spans in one C call
            packed: list[PackedSpan] | None = _NATIVE_PACKED(PackedSpan, spans, self.budget)
            if packed is not None:
                return packed
        spans, sizes = self.enforce(spans, self.budget)
        if self.overlap > 0 and len(spans) > 1:
            with_overlap = self.add_overlap(spans)
            exact = self.sizer.exact(with_overlap)
            final = []
            for (s, e), size, plain, plain_size in zip(with_overlap, exact, spans, sizes, strict=True):
                final.append(
                    PackedSpan(s, e, size) if size <= self.max_size else PackedSpan(*plain, plain_size)
                )
            return final
        new = _new_tuple  # PackedSpan(s, e, size) without the named tuple's Python-level __new__ (a third faster)
        return [new(PackedSpan, (s, e, size)) for (s, e), size in zip(spans, sizes, strict=True)]


# Costs of the optimal packer, in units of the badness of an empty chunk (1.0). Tuned on JSQuAD valid,
# JaQuAD dev and Chroma (benchmarks/quality.py) and the structure benchmark; see the README.
CUT_STEP = 0.15  # each level weaker than the strongest one that has candidates in the span
MIX_COST = 0.5  # a chunk holding a stronger boundary than the ones it starts or ends at
HEADING_COST = 4.0  # a chunk ending with a heading line (its body went to the next chunk)
MIN_SIZE_COST = 8.0  # a chunk under min_size (merge_small still joins what it can afterwards)
GRAIN = 32  # candidates per chunk length the DP weighs at most (denser ones are thinned)
PACKINGS = ("greedy", "optimal")


class _OptimalPacker(_Packer):
    """All cuts of a span chosen together: dynamic programming over the candidate cuts.

    Line breaking as Knuth and Plass (1981) do it: every candidate cut has a cost (the weaker its
    level, the dearer), every chunk a badness ``((target - size) / target)²``, and the cuts minimising
    the sum win, subject to the hard ``max_size``. The candidates are the ones the greedy packer would
    use: the strongest level with cuts in an oversized span, then weaker levels only inside pieces that
    are still oversized, so a piece that fits is never cut. A small tail is no longer left behind (three
    chunks of 370 instead of 510 + 510 + 80), and a strong boundary a little before the limit wins over a
    weak one at it. The DP looks ahead only as far as one chunk reaches, so the work stays linear in the
    number of candidates times the candidates per chunk.
    """

    def __init__(self, *args: Any, target_size: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # everything but target_size goes to _Packer as it is
        self.target = max(1, min(target_size or self.budget, self.budget))
        self.dp_steps = 0  # chunks the DP weighed (the work linear-work tests count)

    def split(self, a: int, b: int, level: int, budget: int, out: list[Span]) -> None:
        a, b = self.trim(a, b)
        if a >= b:
            return
        if level == 0 and not self.merge:  # one chunk (or more) per top-level piece: never joined
            cuts = self.cut_filter.keep(self.levels[0].cuts(self.text, a, b)) if self.levels else []
            for s, e in itertools.pairwise([a, *cuts, b]):
                self.split(s, e, 1, budget, out)
            return
        if self.sizer.estimate(a, b) <= budget:
            out.append((a, b))
            return
        bounds: list[int] = [a]
        ranks: list[int] = [-1]
        self.collect(a, b, level, budget, bounds, ranks)
        bounds.append(b)
        ranks.append(-1)
        out.extend(self.best(bounds, ranks, budget))

    # ------------------------------------------------------------------------------ candidates
    def heading_before(self, position: int) -> bool:
        """Whether a cut at ``position`` leaves a heading line at the end of a chunk: a lead-in line
        (`lead_in_line_start`) is not one here — weighed as a cost, keeping it with what follows cut code
        blocks that fit whole (the greedy packer's `lead_in_stays` knows the piece after it)."""
        return (
            self.ends_with_heading(self.text, position)
            and lead_in_line_start(self.text, position, self.wrapped_lead_ins) < 0
        )

    def collect(self, a: int, b: int, level: int, budget: int, bounds: list[int], ranks: list[int]) -> None:
        """Append the candidate cuts strictly inside the oversized span ``[a, b)`` with their ranks."""
        s, e = self.trim(a, b)
        if s >= e or self.sizer.estimate(s, e) <= budget:
            return
        j, cuts = self.strongest_cuts(s, e, level)
        if not cuts:
            parts: list[Span] = []
            self.split_graphemes(s, e, budget, parts)
            for ps, _ in parts:  # the first may start after ``s`` (a mark split from its space base)
                self.add_bound(bounds, ranks, ps, len(self.levels))
            return
        pieces = [s, *cuts, e]
        for k, (ps, pe) in enumerate(itertools.pairwise(pieces)):
            if k > 0:
                self.add_bound(bounds, ranks, ps, j)
            inner = budget
            if (
                self.keep_headings
                and k > 0
                and self.heading_before(ps)
                and self.sizer.estimate(pieces[k - 1], pe) > budget
            ):  # heading + this piece do not fit: offer cuts inside it, so the heading keeps a start
                heading = self.sizer.estimate(pieces[k - 1], self.trim(ps, pe)[0])
                inner = max(budget - heading, max(1, budget // 4))
            if self.sizer.estimate(ps, pe) > inner:
                self.collect(ps, pe, j + 1, inner, bounds, ranks)

    def add_bound(self, bounds: list[int], ranks: list[int], position: int, rank: int) -> None:
        """A candidate after the last one; one that only whitespace separates from it is the same cut, kept
        at the later position (a chunk may not start on the space a combining mark sits on)."""
        last = bounds[-1]
        if position <= last:
            return
        if len(bounds) > 1 and self.text[last:position].isspace():
            bounds[-1] = position
            ranks[-1] = min(ranks[-1], rank)
            return
        bounds.append(position)
        ranks.append(rank)

    def thin(self, bounds: list[int], ranks: list[int], budget: int) -> tuple[list[int], list[int]]:
        """At most about `GRAIN` candidates per chunk length: of two closer than ``budget / GRAIN``, the
        stronger (else the first) stays, provided the pieces around it still fit. Keeps the DP linear
        where candidates are dense (every word of a text without punctuation); sizes move by at most
        one grain."""
        reach = self.sizer.furthest_position
        end = bounds[-1]
        grain = max(1, budget // GRAIN)
        out_b, out_r = [bounds[0]], [ranks[0]]
        near = reach(bounds[0], end, grain - 1)  # positions closer than a grain to the last kept one
        fits = reach(bounds[0], end, budget)  # and those a piece from it may end at
        prev_fits = end
        for k in range(1, len(bounds) - 1):
            position, rank = bounds[k], ranks[k]
            if position <= near and len(out_b) > 1:
                if rank < out_r[-1] and position <= prev_fits:
                    out_b[-1], out_r[-1] = position, rank
                    near, fits = reach(position, end, grain - 1), reach(position, end, budget)
                    continue
                if rank >= out_r[-1] and bounds[k + 1] <= fits:
                    continue
            out_b.append(position)
            out_r.append(rank)
            prev_fits = fits
            near, fits = reach(position, end, grain - 1), reach(position, end, budget)
        out_b.append(end)
        out_r.append(ranks[-1])
        return out_b, out_r

    # ------------------------------------------------------------------------------ the DP
    def best(self, bounds: list[int], ranks: list[int], budget: int) -> list[Span]:
        """The cheapest way to cut ``bounds[0]..bounds[-1]`` at some of the inner ``bounds``.

        Whether a chunk fits is asked of the sizer once per start (`furthest_position`); its size for
        the badness is the sum of its pieces' estimates (exact for characters, within a token or so per
        piece otherwise), so the inner loop is arithmetic.
        """
        bounds, ranks = self.thin(bounds, ranks, budget)
        m = len(bounds) - 1
        est = self.sizer.estimate
        step = {r: CUT_STEP * i for i, r in enumerate(sorted(set(ranks[1:-1])))}
        hard_ranks = {j for j in range(len(self.levels)) if getattr(self.levels[j], "hard", False)}
        cut_cost = [0.0] * (m + 1)
        for k in range(1, m):
            cut_cost[k] = step[ranks[k]]
            if self.keep_headings and self.heading_before(bounds[k]):
                cut_cost[k] += HEADING_COST
        # trimmed chunk edges: a chunk (i, k) is [starts[i], ends[k]); its size about total[k] - total[i]
        starts = [self.trim(bounds[i], bounds[i + 1])[0] for i in range(m)]
        ends = [0] + [self.trim(bounds[k - 1], bounds[k])[1] for k in range(1, m + 1)]
        total = [0] * (m + 1)
        for k in range(1, m + 1):
            total[k] = total[k - 1] + est(bounds[k - 1], bounds[k])
        furthest = self.sizer.furthest_position
        end = bounds[-1]
        limits = [furthest(start, end, budget) for start in starts]
        hard = [rank in hard_ranks for rank in ranks]
        solve = _NATIVE_BACK if _NATIVE_BACK is not None else _dp_back
        back, steps = solve(
            total,
            ends,
            limits,
            ranks,
            cut_cost,
            hard,
            float(self.target),
            self.min_size,
            MIX_COST,
            MIN_SIZE_COST,
        )
        self.dp_steps += steps
        spans: list[Span] = []
        k = m
        while k > 0:
            i = back[k]
            s, e = self.trim(bounds[i], bounds[k])
            if s < e:
                spans.append((s, e))
            k = i
        spans.reverse()
        return spans


def _dp_back(
    total: list[int],
    ends: list[int],
    limits: list[int],
    ranks: list[int],
    cut_cost: list[float],
    hard: list[bool],
    target: float,
    min_size: int,
    mix_cost: float,
    min_size_cost: float,
) -> tuple[list[int], int]:
    """The optimal packer's dynamic programme over candidates ``0..m``: for each candidate the one the
    cheapest chunk ending there starts at (``back``), and the chunks weighed (``steps``). A chunk ``(i, k)``
    is about ``total[k] - total[i]`` long and ends at ``ends[k]``, which may not pass ``limits[i]`` (unless it
    is a single piece); ``hard[k]``: candidate ``k`` is on a hard level (a section never joins the next).
    The reference of `kireme._speedups.optimal_back`, which does the same arithmetic in the same order."""
    m = len(total) - 1
    inf = float("inf")
    dp = [inf] * (m + 1)
    back = [0] * (m + 1)
    dp[0] = 0.0
    steps = 0
    for i in range(m):
        base = dp[i]
        if base == inf:
            continue
        limit = limits[i]
        strongest = 1 << 30  # the strongest (lowest) rank strictly inside the chunk so far
        hard_inside = False
        rank_i = ranks[i] if i > 0 else -1
        for k in range(i + 1, m + 1):
            if ends[k] > limit and k > i + 1:
                break  # every longer chunk is over the limit too
            if k > i + 1:
                r = ranks[k - 1]
                if r < strongest:
                    strongest = r
                if hard[k - 1]:
                    hard_inside = True
            rank_k = ranks[k] if k < m else -1
            mixed = rank_i > strongest or rank_k > strongest
            if mixed and hard_inside:  # the rest of a section never joins the next section
                if rank_i > strongest:
                    break  # every longer chunk still holds that boundary
                continue
            size = total[k] - total[i]
            d = (target - size) / target
            cost = base + d * d + cut_cost[k]
            if mixed:
                cost += mix_cost
            if size < min_size and (i > 0 or k < m):
                cost += min_size_cost
            if cost < dp[k]:
                dp[k] = cost
                back[k] = i
        steps += k - i
    return back, steps


_NUMBER_CHARS = frozenset("0123456789０１２３４５６７８９,.，．")
_DIGITS = frozenset("0123456789０１２３４５６７８９")
_NUMBER_JOINERS = frozenset("/-:／－：")  # one number when between digits: 2024/04/01, 10:30, 03-1234-5678
_CURRENCY = frozenset("¥￥$＄€£")  # a sign written before its amount
# Units a Japanese date, time or amount writes between its digits: 2026年12月6日, 10時30分, 1万2千円
_JOINING_UNITS = frozenset("年月日時分万千百億兆")
# What may follow such a unit inside the same amount: 2千円, 3万人
_UNIT_TAILS = frozenset("円万千百億兆人件個名")


# A fallback cut never leaves these to start a chunk (``。``, ``」`` alone) nor an opening bracket to end
# one (the line-breaking rule of Japanese and Chinese typesetting, 禁則)
_NO_LINE_START = frozenset(TERMINATORS + FULL_STOPS + CLOSERS + CLAUSE_MARKS + "…‥ー")
_NO_LINE_END = frozenset("「『（(【〈《〔［[｛{〘〖“‘«‹")
_KINSOKU_STEPS = 4  # how far (in clusters) a fallback cut moves back for it


_WORD_REACH = 24  # how far back a fallback cut inside a run of ASCII letters and digits looks for its edge


_FENCE_START = re.compile(r"[ \t]{0,3}(?:`{3,}|~{3,})")


def _fenced_block_that_fits(
    text: str, start: int, end: int, cut: int, size: Callable[[int, int], int], budget: int
) -> bool:
    """Whether the piece ``[start, end)`` after a heading opens with a code fence, fits ``budget`` alone
    (without its trailing whitespace), and ``cut`` falls inside one of its lines."""
    if at_line_edge(text, cut) or not _FENCE_START.match(text, start):
        return False
    return size(start, _back_space(text, start, end)) <= budget


def _inside_table_row(text: str, pos: int) -> bool:
    """Whether ``pos`` falls inside a line of a pipe table (a line that starts with ``|``), not at its
    edges."""
    if at_line_edge(text, pos):
        return False
    line = text.rfind("\n", 0, pos) + 1
    return text[line:pos].lstrip(" \t").startswith("|")


def _ascii_alnum(c: str) -> bool:
    return c.isascii() and c.isalnum()


def _word_edge(text: str, cut: int, start: int) -> int:
    """A fallback cut inside a run of ASCII letters and digits moved back to where the run began or to
    the last separator in it within reach (``john.doe@|example.com``, ``/config.d/|10-main.conf``,
    ``v10.20.|30``): a URL, a path, an address or a word is cut at its own joints, not mid-word."""
    if cut >= len(text) or not (_ascii_alnum(text[cut - 1]) and _ascii_alnum(text[cut])):
        return cut
    c = cut - 1
    while c > start and cut - c < _WORD_REACH and _ascii_alnum(text[c - 1]):
        c -= 1
    return c if c > start and not _ascii_alnum(text[c - 1]) else cut


def _kinsoku(text: str, cut: int, start: int) -> int:
    """A fallback cut moved back, a cluster at a time (a few at most), until the chunk it ends neither
    ends with an opening bracket nor leaves closing punctuation to start the next (``東京駅です|。`` →
    ``東京駅で|す。``); where no such place is near, the cut stays."""
    c = cut
    for _ in range(_KINSOKU_STEPS + 1):  # the cut, then up to `_KINSOKU_STEPS` clusters back
        if c >= len(text) or (text[c] not in _NO_LINE_START and text[c - 1] not in _NO_LINE_END):
            return c
        c = floor_boundary(text, c - 1, start)
        if c <= start:
            break
    return cut


def _outside_number(text: str, cut: int, start: int) -> int:
    """Move a fallback cut back before a number it would split from itself, from its unit or from the
    currency sign before it.

    ``１０，０|００円`` and ``２，０００|円`` both become ``|２，０００円``: an amount is never cut in half; a
    date or time written with ``/``, ``-`` or ``:`` between digits is one number (``2024/04/|01`` becomes
    ``|2024/04/01``), and a sign before it goes with it (``¥|3,000`` becomes ``|¥3,000``). A Japanese date,
    time or amount is one number too: ``2026年12月|6日``, ``10時|30分`` and ``1万2千|円`` are cut before it.
    """
    c = cut
    n = len(text)
    if c <= start or c >= n:
        return cut
    after = text[c]
    if text[c - 1] in _CURRENCY and after in _DIGITS:
        return c - 1 if c - 1 > start else cut
    splits_number = _in_number(text, c - 1) and (
        _in_number(text, c) or not (after.isspace() or _is_punct(after))
    )
    if splits_number or (_unit_after_digit(text, c - 1) and (after in _DIGITS or after in _UNIT_TAILS)):
        c = _number_start(text, cut, start, units=True)
        if c <= start and splits_number:  # the whole window is one date: cut at its last unit at least
            c = _number_start(text, cut, start, units=False)
    return c if c > start else cut


def _number_start(text: str, cut: int, start: int, *, units: bool) -> int:
    """Where the number that ``cut`` falls in begins (after ``start``), with the currency sign before it;
    ``units``: a date, time or amount with units between its digits is one number."""
    c = cut
    while c > start and (_in_number(text, c - 1) or (units and _unit_after_digit(text, c - 1))):
        c -= 1
    if c < cut and text[c] not in _DIGITS:  # started on a separator such as "，": skip it
        c += 1
    if c - 1 > start and text[c - 1] in _CURRENCY:
        c -= 1
    return c


def _unit_after_digit(text: str, i: int) -> bool:
    """Whether ``text[i]`` is a unit of a Japanese date, time or amount written right after a digit
    (the ``月`` of ``12月``, the ``千`` of ``2千円``)."""
    return i > 0 and text[i] in _JOINING_UNITS and text[i - 1] in _DIGITS


def _in_number(text: str, i: int) -> bool:
    """Whether ``text[i]`` belongs to a number: a digit or a number separator, or ``/``, ``-`` or ``:``
    between two digits (a date, a time, a phone number)."""
    char = text[i]
    if char in _NUMBER_CHARS:
        return True
    return (
        char in _NUMBER_JOINERS
        and 0 < i < len(text) - 1
        and text[i - 1] in _DIGITS
        and text[i + 1] in _DIGITS
    )


def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P")


def whole_span(
    text: str, sizer: SpanSizer, max_size: int, span: Span | None = None
) -> list[PackedSpan] | None:
    """`pack`'s answer (merging) when ``text`` (or ``span`` of it) fits one chunk once trimmed, worked out
    without a level: that one span, or ``[]`` when it is all whitespace; ``None`` when it must be packed.

    One chunk gets no overlap (it has no chunk before it to repeat): it may take all of ``max_size``, not
    ``max_size`` less the room kept for an overlap (a code block that fit was cut for that room)."""
    a, b = span if span is not None else (0, len(text))
    a, b = _trim(text, a, b)
    if a >= b:
        return []
    size = sizer.estimate(a, b)
    if size <= max_size:
        if not sizer.exact_estimates:
            size = sizer.exact([(a, b)])[0]
        if size <= max_size:
            return [_new_tuple(PackedSpan, (a, b, size))]
    return None


def pack(
    text: str,
    levels: Sequence[Level],
    sizer: SpanSizer,
    *,
    max_size: int,
    min_size: int = 0,
    overlap: int = 0,
    merge: bool = True,
    keep_headings: bool = True,
    heading_end: Callable[[str, int], bool] | None = None,
    gap_cost: Callable[[int], float] | None = None,
    span: Span | None = None,
    hard_max_size: int | None = None,
    packing: str = "greedy",
    target_size: int | None = None,
    cut_memo: dict[tuple[int, int, int], tuple[int, list[int]]] | None = None,
    overlap_levels: int | None = None,
    no_overlap_inside: Sequence[tuple[int, int]] = (),
    whole_checked: bool = False,
) -> list[PackedSpan]:
    """Cut ``text`` at the strongest available boundaries into spans of at most ``max_size``.

    ``keep_headings`` keeps a prose heading line (``第2条（宿泊費）``, ``## 手順``) with the start of its
    body; code presets turn it off because short code lines are not headings. ``heading_end(text,
    position)`` says whether the text before a cut ends with a heading (the structure strategy knows its
    headings from the parser); by default the prose heuristic `ends_with_heading`. ``gap_cost(position)``
    tells ``min_size`` merging which neighbour is closer (semantic distance); by default the smaller.
    ``span=(a, b)`` packs only ``text[a:b]`` (one section), with offsets still into ``text``.
    ``hard_max_size``: a caller that lowered ``max_size`` to leave room for context keeps a grapheme
    cluster up to this size whole (the context gives way, the text is not cut).
    ``packing``: ``"greedy"`` fills each chunk in turn; ``"optimal"`` chooses all cuts of a span together
    (`_OptimalPacker`), aiming at chunks of ``target_size`` (default: the largest a chunk may be).
    ``cut_memo``: a dict the caller keeps for several packings of the same ``text`` with the same
    ``levels`` (sections of one document, packed again tighter): the cuts found in a span are reused.
    ``overlap_levels``: how many of ``levels`` (strongest first) an overlap may start at (default all;
    code and JSON: those between lines, so that no overlap starts inside a line). ``no_overlap_inside``:
    spans (a document's tables and code blocks) no overlap starts strictly inside. ``whole_checked``: the
    caller asked `whole_span` of the same text, span, sizer and ``max_size`` and got ``None`` (it is not
    asked again).
    """
    if packing not in PACKINGS:
        raise ConfigError(f"packing must be one of {', '.join(PACKINGS)}, not {packing!r}")
    if merge and not whole_checked and isinstance(keep_headings, bool):  # most small documents: no packer
        whole = whole_span(text, sizer, max_size, span)
        if whole is not None:
            return whole
    # by position: a packer is built per packed text or section
    args = (
        text,
        levels,
        sizer,
        max_size,
        min_size,
        overlap,
        merge,
        keep_headings,
        heading_end,
        gap_cost,
        span,
        hard_max_size,
        cut_memo,
        overlap_levels,
        no_overlap_inside,
    )
    if packing == "optimal":
        return _OptimalPacker(*args, target_size=target_size).run()
    return _Packer(*args).run()
