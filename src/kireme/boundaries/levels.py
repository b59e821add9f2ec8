"""Boundary levels: each finds candidate cut positions inside a span of the text."""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import regex

from kireme._native import native
from kireme.errors import ConfigError, PatternTimeoutError
from kireme.text.headings import after_speaker_label
from kireme.text.marks import CLOSERS, FULL_STOPS, TERMINATORS
from kireme.text.patterns import compile_pattern
from kireme.text.sentences import bracket_pairs, check_sentence_mode, paragraph_cuts, sentence_cuts


class Level(Protocol):
    """One strength of boundary. ``cuts`` returns sorted positions strictly inside ``(a, b)``."""

    @property
    def name(self) -> str: ...

    def cuts(self, text: str, a: int, b: int) -> list[int]: ...


@dataclass(frozen=True)
class RegexLevel:
    """Cut where a regular expression matches; the separator stays with the text that follows.

    A zero-width pattern (a lookbehind such as ``(?<=、)``) cuts right after what it looks at, which is
    how clause marks stay with the clause they end. ``cut_after=True`` cuts at the end of each match
    instead: the same cut as a lookbehind, found many times faster (a lookbehind is tried at every
    position of the text, a consuming pattern only where its first character occurs).
    """

    pattern: str
    name: str = ""
    cut_after: bool = False
    # Seconds a search may take, plus as much again per million characters searched: set for patterns
    # users write (`levels_for_separators`), which may backtrack catastrophically; None for our own.
    time_limit: float | None = None
    _compiled: regex.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            compiled = compile_pattern(self.pattern)
        except regex.error as exc:
            raise ConfigError(f"invalid separator regex {self.pattern!r}: {exc}") from exc
        object.__setattr__(self, "_compiled", compiled)
        if not self.name:
            object.__setattr__(self, "name", self.pattern)

    def cuts(self, text: str, a: int, b: int) -> list[int]:
        seconds = None if self.time_limit is None else self.time_limit * (1 + (b - a) / 1e6)
        try:
            matches = self._compiled.finditer(text, a, b, timeout=seconds)
            found = [m.end() for m in matches] if self.cut_after else [m.start() for m in matches]
        except TimeoutError:  # only with a time limit
            raise PatternTimeoutError(self.pattern, seconds or 0.0, b - a) from None
        # sorted already (an empty match may repeat the end of the one before it): strictly inside, once
        lo, hi = bisect_right(found, a), bisect_left(found, b)
        if lo > 0 or hi < len(found):
            found = found[lo:hi]
        return list(dict.fromkeys(found)) if len(set(found)) < len(found) else found


# The C scan of `LineLevel` (`kireme._speedups.line_cuts`), or None: the regex then finds the cuts.
_NATIVE_LINE_CUTS: Callable[[str, int, int], list[int]] | None = native("line_cuts")
# `SentenceLineLevel`'s filter of the line breaks (`kireme._speedups.sentence_line_breaks`)
_NATIVE_SENTENCE_LINES: Callable[[str, list[int], list[int], str, str], list[int]] | None = native(
    "sentence_line_breaks"
)
# The C scans of `CLAUSE` and `WORD` (`kireme._speedups.clause_cuts`, `word_cuts`), or None: the regex then.
_NATIVE_CLAUSE_CUTS: Callable[[str, int, int, bool], list[int]] | None = native("clause_cuts")
_NATIVE_QUOTED_ENDS: Callable[[str, int, int], list[int]] | None = native("quoted_ends")
_NATIVE_WORD_CUTS: Callable[[str, int, int], list[int]] | None = native("word_cuts")
# The C scan of `PairLevel` (`kireme._speedups.pair_cuts`), or None: the regex then finds the cuts.
_NATIVE_PAIR_CUTS: Callable[[str, int, int, bytes, bytes], list[int] | None] | None = native("pair_cuts")
# The Basic Multilingual Plane, every code point once (lone surrogates included): what a character class's
# bitmap is read off.
_BMP_SIZE = 0x10000


def bmp_plane() -> str:
    """Every code point of the Basic Multilingual Plane in order, lone surrogates included."""
    return array("I", range(_BMP_SIZE)).tobytes().decode("utf-32-le", "surrogatepass")


def class_bitmap(char_class: str, plane: str | None = None) -> bytes:
    """Bit ``c`` (bit ``c % 8`` of byte ``c // 8``) set for every code point ``c`` of the Basic Multilingual
    Plane that the `regex` engine's ``char_class`` (a pattern matching one character) matches. ``plane``:
    `bmp_plane`, when the caller has it already."""
    plane = bmp_plane() if plane is None else plane
    bits = bytearray(_BMP_SIZE // 8)
    for run in compile_pattern(f"(?:{char_class})+").finditer(plane):
        lo, hi = run.span()
        while lo < hi and lo % 8:  # the bits before the first whole byte
            bits[lo >> 3] |= 1 << (lo & 7)
            lo += 1
        while hi > lo and hi % 8:  # after the last whole byte
            hi -= 1
            bits[hi >> 3] |= 1 << (hi & 7)
        bits[lo >> 3 : hi >> 3] = b"\xff" * ((hi - lo) >> 3)
    return bytes(bits)


@dataclass(frozen=True)
class PairLevel:
    """Cut between two neighbouring characters where one of class ``first`` is followed by one of class
    ``second`` (`regex` character classes): the cut of ``first(?=second)`` with ``cut_after``.

    The `script` level is one: hiragana before kanji or katakana, searched in every span of unspaced,
    unpunctuated Japanese, where a regex match object per cut was half of the chunking time. The C scan
    (`kireme._speedups.pair_cuts`) reads each class from a bitmap of the Basic Multilingual Plane made
    once from the `regex` engine itself, so both agree on every character; text with characters beyond
    that plane, and a build without the extension, take the regex (`reference`), which stays the rule.
    """

    first: str
    second: str
    name: str
    reference: RegexLevel = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        level = RegexLevel(f"{self.first}(?={self.second})", self.name, cut_after=True)
        object.__setattr__(self, "reference", level)

    def bitmaps(self) -> tuple[bytes, bytes]:
        """The two classes as BMP bitmaps (`class_bitmap`), made on first use."""
        made: tuple[bytes, bytes] | None = self.__dict__.get("_bitmaps")
        if made is None:
            plane = bmp_plane()
            made = (class_bitmap(self.first, plane), class_bitmap(self.second, plane))
            object.__setattr__(self, "_bitmaps", made)
        return made

    def cuts(self, text: str, a: int, b: int) -> list[int]:
        if _NATIVE_PAIR_CUTS is not None:
            found = _NATIVE_PAIR_CUTS(text, a, b, *self.bitmaps())
            if found is not None:
                return found
        return self.reference.cuts(text, a, b)


@dataclass(frozen=True)
class LineLevel:
    """Line breaks: a cut before each ``\\r?\\n`` (the break stays with the line after it).

    The commonest level of Markdown, code and line-per-item text, asked for every span the packer splits:
    a C scan (`kireme._speedups.line_cuts`) finds the breaks without a regex match object per line; the
    regex (`reference`) stays the rule and the fallback.
    """

    name: str = "line"
    reference: RegexLevel = field(default=RegexLevel(r"\r?\n", "line"), repr=False, compare=False)

    def cuts(self, text: str, a: int, b: int) -> list[int]:
        if _NATIVE_LINE_CUTS is not None:
            return _NATIVE_LINE_CUTS(text, a, b)
        return self.reference.cuts(text, a, b)


_YEAR = r"[ \t][12][0-9]{3}(?![0-9])"  # a space and a year of four digits: what follows a date's comma


@dataclass(frozen=True)
class ClauseLevel:
    """Clause marks: a cut after each ``、;；``, and after each ``，,:：`` that is not followed by a digit
    (``１０，０００円``, ``10:30`` are numbers, not two clauses) — nor an ASCII ``:`` followed by ``/`` or
    ``\\`` (``https://…``, ``C:\\Users``: a URL or a path, not two clauses), nor an ASCII ``,`` between a
    day of one or two digits and a year (``Apr. 1, 2025``, ``January 15, 2025``: a date), nor the colon
    after a speaker's name at a line's start (``Bob Lee: yes, …``: the name would be a chunk alone).

    Asked for every sentence longer than the limit: a C scan (`kireme._speedups.clause_cuts`) finds the
    marks without a regex match object per cut; the regex (`reference`) stays the rule and the fallback.
    """

    name: str = "clause"
    reference: RegexLevel = field(
        default=RegexLevel(
            r"[、;；]|[，：](?![0-9０-９])|:(?![0-9０-９/\\])"
            # a comma between a day and a year is a date's (``Apr. 1, 2025``), not a clause's
            rf"|,(?![0-9０-９])(?!{_YEAR})|(?<![0-9]),(?={_YEAR})|(?<=[0-9]{{3}}),(?={_YEAR})",
            "clause",
            cut_after=True,
        ),
        repr=False,
        compare=False,
    )

    def cuts(self, text: str, a: int, b: int) -> list[int]:
        if _NATIVE_CLAUSE_CUTS is not None:  # the speakers' names judged in C too
            return _NATIVE_CLAUSE_CUTS(text, a, b, True)
        found = self.reference.cuts(text, a, b)
        # no cut right after a speaker's name at a line's start (``Bob Lee:`` alone in a chunk)
        if any(text[c - 1] in ":：" for c in found):
            found = [c for c in found if not after_speaker_label(text, c)]
        return found


@dataclass(frozen=True)
class WordLevel:
    """Spaces: a cut before each run of spaces, tabs and ideographic spaces (the run stays with the word
    after it).

    It meets every space of English and code: a C scan (`kireme._speedups.word_cuts`) finds the runs
    without a regex match object per cut; the regex (`reference`) stays the rule and the fallback.
    """

    name: str = "word"
    reference: RegexLevel = field(default=RegexLevel(r"[ \t\u3000]+", "word"), repr=False, compare=False)

    def cuts(self, text: str, a: int, b: int) -> list[int]:
        if _NATIVE_WORD_CUTS is not None:
            return _NATIVE_WORD_CUTS(text, a, b)
        return self.reference.cuts(text, a, b)


@dataclass(frozen=True)
class SentenceLevel:
    """Sentence starts, by the Japanese/English rules of `kireme.text.sentences`."""

    name: str = "sentence"

    def cuts(self, text: str, a: int, b: int) -> list[int]:
        return sentence_cuts(text, a, b)


# The full-width terminators (and the half-width ``｡``): ``!``/``?`` inside a span are URLs, code or
# ``"Really?" he said``, which the sentence rules declined for good reason.
_QUOTED_TERMINATORS = "。！？｡"
# A run of them that the sentence rules passed over (they do inside ``「…」``, ``『…』``, ``（…）``), not
# closing a quote or bracket, and the spaces after it: where a quoted sentence ends.
_QUOTED_END = re.compile(
    rf"[{re.escape(_QUOTED_TERMINATORS)}]+(?![{re.escape(CLOSERS + TERMINATORS)}])[ \t\u3000]*"
)


@dataclass(frozen=True)
class QuotedSentenceLevel:
    """The sentence ends inside a quotation or bracket: a cut after ``。！？`` that does not close it.

    The sentence rules keep ``「…」`` whole (``「行こう。」と言った`` is one sentence), which is right until the
    quotation is longer than the limit: then a speech of several sentences was cut at a comma or mid-word
    though its own sentence ends fit. This level sits between `SENTENCE` and `CLAUSE`; it is asked only for
    spans the sentence level could not split small enough, where every such terminator is an inner one.
    """

    name: str = "quoted sentence"

    def cuts(self, text: str, a: int, b: int) -> list[int]:
        if _NATIVE_QUOTED_ENDS is not None:  # the same scan in C (`kireme._speedups.quoted_ends`)
            return _NATIVE_QUOTED_ENDS(text, a, b)
        return self.reference(text, a, b)

    @staticmethod
    def reference(text: str, a: int, b: int) -> list[int]:
        """The rule: the end of each `_QUOTED_END` match strictly inside ``(a, b)``."""
        return [e for m in _QUOTED_END.finditer(text, a, b) if a < (e := m.end()) < b]


@dataclass(frozen=True)
class SentenceLineLevel:
    """The line breaks that end a sentence (cut where `LINE` cuts, before the break): a sentence starts
    on the next line by the sentence rules (after a terminator, an item, label or title line), or the
    line ends with a terminator or full stop, closers and spaces aside (``game . `` in tokenised text).
    One topic a line, with no blank line between them, is cut here before a sentence in the middle of a
    line; a line break inside a sentence (text wrapped at a fixed width) is not a cut of this level."""

    name: str = "sentence line"

    def cuts(self, text: str, a: int, b: int) -> list[int]:
        breaks = LINE.cuts(text, a, b)  # where `LINE` cuts: before each "\r?\n"
        if not breaks:
            return breaks
        found = sentence_cuts(text, a, min(len(text), b + 1))
        if _NATIVE_SENTENCE_LINES is not None:
            return _NATIVE_SENTENCE_LINES(
                text, breaks, sorted(found), _LINE_END_MARK_TEXT, _LINE_END_CLOSER_TEXT
            )
        starts = frozenset(found)
        return [brk for brk in breaks if _next_ink(text, brk) in starts or _ends_sentence_mark(text, brk)]


_SPACE_RUN = re.compile(r"\s*")  # the stdlib's whitespace, as a sentence start skips it


def _next_ink(text: str, position: int) -> int:
    """The first position from ``position`` on past whitespace (where a sentence after it starts)."""
    found = _SPACE_RUN.match(text, position)
    return position if found is None else found.end()


_LINE_END_MARKS = frozenset(TERMINATORS + FULL_STOPS)
_LINE_END_CLOSERS = frozenset(CLOSERS)
_LINE_END_MARK_TEXT = "".join(sorted(_LINE_END_MARKS))  # the same for C
_LINE_END_CLOSER_TEXT = "".join(sorted(_LINE_END_CLOSERS))


def _ends_sentence_mark(text: str, brk: int) -> bool:
    """Whether the line before the line break at ``brk`` ends with a terminator or full stop (closing
    brackets, quotes and spaces after it aside)."""
    k = brk
    while k > 0 and text[k - 1] in " \t\u3000\r":
        k -= 1
    while k > 0 and text[k - 1] in _LINE_END_CLOSERS:
        k -= 1
    return k > 0 and text[k - 1] in _LINE_END_MARKS


@dataclass(frozen=True)
class ParagraphLevel:
    """Blank lines, and line breaks before an item marker (``・``, ``1.``, ``第3条``, ``【``)."""

    name: str = "paragraph"

    def cuts(self, text: str, a: int, b: int) -> list[int]:
        return paragraph_cuts(text, a, b)


@dataclass(frozen=True)
class PositionLevel:
    """Cuts at known positions (headings found by a parser, topic changes found by embeddings)."""

    positions: Sequence[int]
    name: str = "positions"
    hard: bool = False  # a new section starts here: the packer never joins text across it by absorption

    def cuts(self, text: str, a: int, b: int) -> list[int]:
        lo, hi = bisect_right(self.positions, a), bisect_left(self.positions, b)
        return list(self.positions[lo:hi])


# `_drop_inside` in C (`kireme._speedups.drop_inside`), asked by every prose level of every split span
_NATIVE_DROP: Callable[[list[int], Sequence[int], Sequence[int]], list[int]] | None = native("drop_inside")


@dataclass(frozen=True)
class Outside:
    """A level whose cuts inside protected spans (tables, code blocks) are dropped."""

    level: Level
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    name: str = ""

    def cuts(self, text: str, a: int, b: int) -> list[int]:
        return _drop_inside(self.level.cuts(text, a, b), self.starts, self.ends)

    @property
    def hard(self) -> bool:
        """The wrapped level's: a heading level keeps its sections apart with or without protected spans."""
        return bool(getattr(self.level, "hard", False))


def outside_all(levels: Sequence[Level], starts: tuple[int, ...], ends: tuple[int, ...]) -> list[Level]:
    """Each of ``levels`` with no cut inside the spans (``starts``, ``ends``), under its own name: rows of a
    table, a CSV's quoted line breaks."""
    return [Outside(level, starts, ends, getattr(level, "name", "")) for level in levels]


# How much of a chunk's budget a bracket kept whole (`keep_brackets`) may fill: a larger one (a law's
# parenthesis of 385 characters) left the words before and after it as chunks of 17–81 characters.
BRACKET_SHARE = 0.5


@dataclass(frozen=True)
class SpanLimit:
    """``limit(start, end)``: whether a span is at most ``limit`` characters long — a measure of what fits
    that C can apply too (`KeptBrackets`)."""

    limit: int

    def __call__(self, start: int, end: int) -> bool:
        return end - start <= self.limit


class MeasuredLimit:
    """``test(start, end)`` for a measure other than characters (tokens), with what C may read: every span
    of at most ``sure`` characters fits (its answer is ``True``; `KeptBrackets` does not ask it). A plain
    class with slots: a document measured in tokens makes its own."""

    __slots__ = ("sure", "test")

    def __init__(self, test: Callable[[int, int], bool], sure: int) -> None:
        self.test = test
        self.sure = sure

    def __call__(self, start: int, end: int) -> bool:
        return self.test(start, end)


# `KeptBrackets.spans` in C (`kireme._speedups.kept_brackets`: a `SpanLimit` read there, another test called,
# a `MeasuredLimit`'s short spans kept without asking it), or None: the reference.
_NATIVE_KEPT_BRACKETS: Callable[..., tuple[list[int], list[int]]] | None = native("kept_brackets")


class KeptBrackets:
    """The brackets of a text that a chunk keeps whole: the outermost balanced ones (`bracket_pairs`) that
    fit (``fits(start, end)``; an inner one where the outer does not), as sorted starts and ends (after the
    closing bracket). Found once per text, over the whole text, the first time a level asks — only for a
    sentence longer than a chunk — so that the answer never depends on the window asked about."""

    __slots__ = ("_last", "fits")

    def __init__(self, fits: Callable[[int, int], bool]) -> None:
        self.fits = fits
        # the last text and its spans, as one value: threads sharing a chunker read a consistent pair
        self._last: tuple[str, tuple[list[int], list[int]]] | None = None

    def spans(self, text: str) -> tuple[list[int], list[int]]:
        last = self._last
        if last is not None and last[0] is text:
            return last[1]
        fits = self.fits
        if _NATIVE_KEPT_BRACKETS is None:
            found = self.reference(text, fits)
        elif type(fits) is SpanLimit:
            found = _NATIVE_KEPT_BRACKETS(text, fits.limit)
        elif type(fits) is MeasuredLimit:  # the pairs found in C, the longer ones asked of the test
            found = _NATIVE_KEPT_BRACKETS(text, fits.sure, fits.test)
        else:  # the pairs found in C, each asked of ``fits`` as the reference asks it
            found = _NATIVE_KEPT_BRACKETS(text, -1, fits)
        self._last = (text, found)
        return found

    @staticmethod
    def reference(text: str, fits: Callable[[int, int], bool]) -> tuple[list[int], list[int]]:
        """`spans` in Python: the reference, and the answer for a measure other than characters."""
        starts: list[int] = []
        ends: list[int] = []
        # outermost first: by opening, the longer of two that open together first
        for start, end in sorted(bracket_pairs(text, 0, len(text)), key=_outer_first):
            if (not ends or start >= ends[-1]) and fits(start, end):
                starts.append(start)
                ends.append(end)
        return starts, ends


def _outer_first(pair: tuple[int, int]) -> tuple[int, int]:
    return (pair[0], -pair[1])


class OutsideBrackets:
    """A level below the sentence whose cuts inside a bracket or quotation kept whole are dropped.

    A sentence longer than a chunk is cut at the sentence ends quoted in it, then at its clauses, words and
    script changes; in law and rules text those fall inside a short parenthesis as often as outside one:
    ``有価証券（特定有価証券を除く。`` ‖ ``以下この条において同じ。）が…`` left the exception's second half in
    the next chunk, away from the term it qualifies. Asked first, this level cuts only outside the
    brackets of `KeptBrackets`; `keep_brackets` puts the same level unwrapped after it. (A plain class
    with slots: in tokens a document's levels are made for it, and a frozen dataclass costs more to make.)
    """

    __slots__ = ("brackets", "level", "name")

    def __init__(self, level: Level, brackets: KeptBrackets, name: str = "") -> None:
        self.level = level
        self.brackets = brackets
        self.name = name

    def __repr__(self) -> str:
        return f"OutsideBrackets({self.level!r}, name={self.name!r})"

    def cuts(self, text: str, a: int, b: int) -> list[int]:
        cuts = self.level.cuts(text, a, b)
        if not cuts:
            return cuts
        starts, ends = self.brackets.spans(text)
        return _drop_inside(cuts, starts, ends) if starts else cuts


class BracketEdges:
    """After (``after``) or before each bracket that `KeptBrackets` keeps whole: where a sentence with no
    other cut outside its brackets (``会社は（除く。）会社は（含む。）``) is cut rather than inside one —
    after a closing bracket first, which leaves the term with the parenthesis that qualifies it."""

    __slots__ = ("after", "brackets", "name")

    def __init__(self, brackets: KeptBrackets, after: bool = True, name: str = "after brackets") -> None:
        self.brackets = brackets
        self.after = after
        self.name = name

    def __repr__(self) -> str:
        return f"BracketEdges(after={self.after!r}, name={self.name!r})"

    def cuts(self, text: str, a: int, b: int) -> list[int]:
        starts, ends = self.brackets.spans(text)
        edges = ends if self.after else starts
        return edges[bisect_right(edges, a) : bisect_left(edges, b)]


def keep_brackets(
    levels: Sequence[Level],
    fits: Callable[[int, int], bool] | None,
    cache: dict[tuple[int, ...], tuple[Level, ...]] | None = None,
) -> list[Level]:
    """``levels`` with the run of levels that cut inside a sentence (from `QUOTED_SENTENCE` on: its clauses,
    lines, words, script changes) asked first outside the brackets that fit (`OutsideBrackets`), then after
    and before those brackets (`BracketEdges`), then as they are. Unchanged without `QUOTED_SENTENCE` (a
    user's separators, code) or without ``fits``. ``cache``: the wrapped runs made with this ``fits``
    before, kept by a caller whose ``fits`` is the same for every text (in characters), so that a short
    document does not pay for making them."""
    out = list(levels)
    if fits is None:
        return out
    ids = list(map(id, out))  # the built-in levels are compared as themselves: their ids never change
    if _QUOTED_SENTENCE_ID not in ids:
        return out
    first = ids.index(_QUOTED_SENTENCE_ID)
    last = first + 1
    while last < len(out) and ids[last] in _INSIDE_SENTENCE_IDS:
        last += 1
    run = out[first:last]
    key = tuple(ids[first:last])
    wrapped = cache.get(key) if cache is not None else None
    if wrapped is None:
        brackets = KeptBrackets(fits)
        wrapped = (
            *[OutsideBrackets(level, brackets, _OUTSIDE_NAMES[id(level)]) for level in run],
            BracketEdges(brackets),
            BracketEdges(brackets, False, "before brackets"),
            *run,
        )
        if cache is not None:
            cache[key] = wrapped
    return [*out[:first], *wrapped, *out[last:]]


def _drop_inside(cuts: list[int], starts: Sequence[int], ends: Sequence[int]) -> list[int]:
    """``cuts`` (sorted) but those inside a span (``starts[i] < cut < ends[i]``, a span ending no later
    than one after the next one's start: nested spans are read as the outer one up to there); in C where
    kireme's extension is built (`kireme._speedups.drop_inside`, the same answers)."""
    if _NATIVE_DROP is not None:
        return _NATIVE_DROP(cuts, starts, ends)
    return _drop_inside_python(cuts, starts, ends)


def _drop_inside_python(cuts: list[int], starts: Sequence[int], ends: Sequence[int]) -> list[int]:
    """`_drop_inside` in Python: the reference, and the answer without the extension."""
    if not starts or not cuts:
        return cuts
    # a cut is dropped when it lies inside the last protected span that starts before it: span i
    # governs the cuts in (starts[i], starts[i + 1]]; only the spans among the cuts are visited, and
    # the cuts between them are kept by the slice
    first = max(0, bisect_left(starts, cuts[0]) - 1)
    last = bisect_left(starts, cuts[-1])
    out: list[int] = []
    kept = 0  # cuts[kept:] are not decided yet
    for i in range(first, last):
        stop = min(ends[i], starts[i + 1] + 1) if i + 1 < len(starts) else ends[i]
        lo = bisect_right(cuts, starts[i], kept)
        hi = bisect_left(cuts, stop, lo)
        if lo < hi:
            out += cuts[kept:lo]
            kept = hi
    if not kept:
        return cuts
    out += cuts[kept:]
    return out


# The time limit of a user's separator regex (seconds, plus as much per million characters searched).
USER_PATTERN_SECONDS = 2.0

# Built-in levels shared by strategies and presets.
LINE = LineLevel()
# Clause marks; a comma or colon between digits is part of a number (１０，０００円, 10:30), not a clause end.
CLAUSE = ClauseLevel()
# Sentence ends inside a quotation too long to keep whole: before the clauses.
QUOTED_SENTENCE = QuotedSentenceLevel()
WORD = WordLevel()
# Where hiragana gives way to kanji or katakana a new content word usually starts: a far better cut
# for unspaced Japanese than an arbitrary character.
SCRIPT = PairLevel(r"\p{Hiragana}", r"[\p{Han}\p{Katakana}]", "script")
PARAGRAPH = ParagraphLevel()
SENTENCE = SentenceLevel()
SENTENCE_LINE = SentenceLineLevel()
# What cuts a sentence longer than the limit, strongest first: the ends of the sentences quoted in it,
# clauses, spaces, then where hiragana gives way to kanji or katakana.
INSIDE_SENTENCE: tuple[Level, ...] = (QUOTED_SENTENCE, CLAUSE, WORD, SCRIPT)
# The same for a "sentence" that runs over several lines, as strategies that see no Markdown structure get
# them (an unpunctuated table, list or transcript is one sentence to the rules): after its clauses, its
# line breaks, so a row stays whole, then spaces and script changes.
INSIDE_SENTENCE_LINES: tuple[Level, ...] = (QUOTED_SENTENCE, CLAUSE, LINE, WORD, SCRIPT)
# The same, as `keep_brackets` finds them in a strategy's levels.
_QUOTED_SENTENCE_ID = id(QUOTED_SENTENCE)
_INSIDE_SENTENCE_IDS = frozenset(map(id, INSIDE_SENTENCE_LINES))
_OUTSIDE_NAMES = {id(level): f"{level.name} (outside brackets)" for level in INSIDE_SENTENCE_LINES}


def with_sentences(levels: Sequence[Level], mode: str = "auto") -> list[Level]:
    """``levels`` for the sentence mode ``mode`` (`kireme.text.sentences.SENTENCE_MODES`).

    ``"auto"``: unchanged. ``"lines"``: every line break ends a sentence, so `LINE` goes in front of the
    sentence level (unless a stronger level is `LINE` already; a `LINE` below the sentence level, which
    cuts a long sentence at its lines, moves up); the punctuation rules stay behind it, to cut a line
    longer than the limit.
    """
    out = list(levels)
    if check_sentence_mode(mode) == "auto":
        return out
    for i, level in enumerate(out):
        if level == LINE:
            return out
        if level == SENTENCE:
            return [*out[:i], LINE, *(lv for lv in out[i:] if lv != LINE)]
    return out


def levels_for_separators(separators: Sequence[str | Level]) -> list[Level]:
    """User separators (regex strings or Level objects), strongest first."""
    if isinstance(separators, str):
        raise ConfigError("separators must be a list of regular expressions, not one string")
    levels: list[Level] = []
    for sep in separators:
        if isinstance(sep, str):
            if sep == "":
                raise ConfigError(
                    "an empty separator matches everywhere; graphemes are the last level already"
                )
            levels.append(RegexLevel(sep, time_limit=USER_PATTERN_SECONDS))
        else:
            levels.append(sep)
    return levels


# a code line that closes what an earlier line opened — a bracket, or a tag (``</div>``, ``/>``) — and a code
# line that ends by opening what a later line closes (trailing blanks aside): found from the line feed
_CLOSING_CODE_LINE = re.compile(r"\n[ \t]*(?:[}\])]|</|/?>)")
_OPENING_CODE_END = re.compile(r"[{\[(][ \t\r]*\n")


class CodeLinesBetweenBrackets:
    """The code line starts (``lines``, inside the code ``bodies``) where a chunk may start and end without
    cutting a bracket's opening or closing line away from what it holds: not before a line that closes
    (``});``, ``},``, ``</div>``), not after a line that ends by opening (``artwork: {``, ``items.map(item =>
    (``). A code block larger than a chunk was cut at any line: chunks opened with ``});`` or ``},`` (82 of
    13,075 `markdown` chunks on ja-techdocs at 400 characters). Worked out for a block at the first question
    about it, so a block that fits a chunk costs nothing."""

    name = "code line between brackets"
    __slots__ = ("bodies", "kept", "lines", "starts")

    def __init__(self, lines: Sequence[int], bodies: Sequence[tuple[int, int]]) -> None:
        self.lines = lines
        self.bodies = bodies  # sorted, apart
        self.starts = [start for start, _ in bodies]
        self.kept: dict[int, list[int]] = {}  # by body index: its line starts that are kept

    def __repr__(self) -> str:
        return f"CodeLinesBetweenBrackets({len(self.lines)} lines)"

    def cuts(self, text: str, a: int, b: int) -> list[int]:
        bodies = self.bodies
        out: list[int] = []
        for k in range(max(bisect_right(self.starts, a) - 1, 0), bisect_left(self.starts, b)):
            if bodies[k][1] <= a:
                continue
            kept = self.kept.get(k)
            if kept is None:
                kept = self.kept[k] = self._kept(text, *bodies[k])
            out += kept[bisect_right(kept, a) : bisect_left(kept, b)]
        return out

    def _kept(self, text: str, start: int, end: int) -> list[int]:
        lines = self.lines
        mine = lines[bisect_right(lines, start) : bisect_left(lines, end)]
        # the body starts at its first line: the line feed before it is the fence line's
        dropped = {m.start() + 1 for m in _CLOSING_CODE_LINE.finditer(text, max(start - 1, 0), end)}
        dropped.update(m.end() for m in _OPENING_CODE_END.finditer(text, start, end))
        return [at for at in mine if at not in dropped] if dropped else list(mine)
