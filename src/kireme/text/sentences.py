"""Sentence and paragraph boundaries for Japanese and English, without configuration.

Rules (measured against the libraries in ``benchmarks/sentence_segmenters.py``, see the README):

* ``。！？!?｡`` end a sentence even when no space follows; ``．`` does too unless it sits between digits.
* Closing brackets and quotes after the terminator stay with their sentence (``…です。」``).
* Inside ``「…」『…』（…）`` nothing ends a sentence, as long as the bracket closes within the paragraph.
* A single line break is not a sentence end (hard-wrapped text); a blank line is, and so is a line break
  followed by an item marker (``・``, ``1.``, ``（1）``, ``第3条``, ``【…】``, ``- ``).
* ``.`` ends an English sentence when whitespace and a plausible sentence start follow and the word before
  it is not a known abbreviation (``Dr.``, ``e.g.``, ``U.S.``), a single initial or a number.

Every function returns offsets into the text it was given; nothing is copied or re-joined.
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple, cast

import regex

from kireme.text.marks import BULLETS, CLOSERS, ITEM_MARKER, OPEN_TO_CLOSE, TERMINATORS

# The shared vocabulary (`kireme.text.marks`): terminators, closing brackets/quotes, item markers.
_HARD_END = TERMINATORS
_CLOSERS = CLOSERS
_OPEN_TO_CLOSE = OPEN_TO_CLOSE

_ONLY_SPACE_LEFT = regex.compile(r"\s*\Z")
_BLANK_LINE = r"\r?\n[ \t\u3000]*\r?\n"
_ITEM_START = regex.compile(ITEM_MARKER)
PARAGRAPH_BREAK = regex.compile(rf"{_BLANK_LINE}|\r?\n(?={ITEM_MARKER})")
# The same breaks, found fast: the stdlib engine jumps from one "\n" to the next (a pattern that starts
# with "\r?" defeats that), and a cheap look at the first character after the indent runs the full
# item-marker pattern only where an item can start. A "\r" before the "\n" is added back by the caller.
# tests/test_sentences.py checks the two agree.
_ITEM_FIRST = "[ \t\u3000]*[【第0-9０-９（(①-⑳" + BULLETS + "*+\\-]"
_FAST_PARAGRAPH_BREAK = re.compile(rf"\n(?:[ \t\u3000]*\r?\n|(?={_ITEM_FIRST})(?={ITEM_MARKER}))")
_SPACE_RUN = re.compile(r"\s*")

_ABBREVIATIONS = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "sr",
        "jr",
        "st",
        "mt",
        "vs",
        "etc",
        "e.g",
        "i.e",
        "cf",
        "al",
        "fig",
        "figs",
        "no",
        "nos",
        "vol",
        "vols",
        "pp",
        "ed",
        "eds",
        "approx",
        "dept",
        "est",
        "inc",
        "ltd",
        "co",
        "corp",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "mon",
        "tue",
        "wed",
        "thu",
        "fri",
        "sat",
        "sun",
        "u.s",
        "u.k",
        "u.n",
        "a.m",
        "p.m",
        "ph.d",
        "b.a",
        "m.a",
        "gen",
        "col",
        "lt",
        "sgt",
        "rev",
        "hon",
        "gov",
        "sen",
        "rep",
    ]
)
# Abbreviations that often end a sentence too: they end one when a capitalised word follows.
_MAY_END = frozenset(["etc", "al", "a.m", "p.m"])

_CANDIDATE = regex.compile(
    rf"[{regex.escape(_HARD_END)}]+[{regex.escape(_CLOSERS)}]*"
    rf"|(?<![0-9０-９])．[{regex.escape(_CLOSERS)}]*"
    rf"|(?<=\S)\.+[{regex.escape(_CLOSERS)}]*(?=\s|$)"
    rf"|(?<=\w[ \t])\.(?=[ \t]+[\p{{Lu}}\"'“(\[])"  # tokenised text: "games . When"
    rf"|{_BLANK_LINE}"
    rf"|\r?\n(?={ITEM_MARKER})"
    rf"|\r?\n"
)
_WORD_BEFORE = regex.compile(r"(?r)([\p{Latin}\p{N}.]+)\Z")  # searched backwards from the dot
_SPACE_THEN_LOWER = regex.compile(r"\s+\p{Ll}")
# A line that is an item, a bracketed title or a "label: value" line ends its sentence even without a
# terminator; any other single line break is a hard wrap inside a sentence.
_ITEM_LINE = regex.compile(
    rf"(?:{ITEM_MARKER}|[ \t\u3000]*【[^】\n]*】[ \t\u3000]*$|[ \t\u3000]*[^\s：:]{{1,12}}[：:])"
)
_LABEL_BEFORE_DOT = regex.compile(r"(?:^|\n)[ \t\u3000]*[\p{L}\p{N}]$")
# What may follow a closing quote inside the same sentence: particles and quotative verbs.
_QUOTE_CONTINUES = regex.compile(r"(?:と|って|という|の|が|を|は|に|で|も|や|より|から|まで|など|か[、。])")
_NEXT_START = regex.compile(r"\s*([\p{Lu}\p{N}\"'“‘(\[「『（]|[^\p{L}\p{N}\s]|[^\p{Latin}\s])")
_LOWER_NEXT = regex.compile(r"\s*\p{Ll}")


def _period_ends(text: str, dot: int, after: int, caseless: bool = False) -> bool:
    """Decide an English '.' at ``dot`` (the candidate match ends at ``after``).

    ``caseless``: the text has (almost) no capitals, as in lower-cased corpora, so a lower-case word
    after the period may start a sentence.
    """
    m = _WORD_BEFORE.search(text, max(0, dot - 40), dot)
    word = m.group(1).lower() if m else ""
    if _ONLY_SPACE_LEFT.match(text, after):
        return True
    word_start = m.start(1) if m else dot
    at_line_start = text[text.rfind("\n", 0, word_start) + 1 : word_start].strip() == ""
    if word.isdigit() and len(word) <= 3 and at_line_start:  # "1. " list marker
        return False
    if caseless:
        next_is_start = (
            _NEXT_START.match(text, after) is not None or _LOWER_NEXT.match(text, after) is not None
        )
    else:
        next_is_start = _NEXT_START.match(text, after) is not None and not _LOWER_NEXT.match(text, after)
    if not next_is_start:
        return False
    if not word:
        return True
    if word in _MAY_END:
        return True
    if word in _ABBREVIATIONS or word.rstrip(".") in _ABBREVIATIONS:
        return False
    if len(word) == 1 and word.isalpha() and _is_initial(text, word_start):  # "J. R. Smith"
        return False
    # "U.S." style acronyms do not end a sentence; "$6.25." does
    letters = word.replace(".", "")
    return not ("." in word and letters.isalpha() and len(letters) <= 3)


def _is_initial(text: str, letter: int) -> bool:
    """A single capital after a capitalised word, another initial or a sentence start (not 'method B.')."""
    if not text[letter].isupper():
        return False
    if letter > 0 and not text[letter - 1].isspace():
        return False  # "°C." is a unit, not an initial
    before = text[max(0, letter - 30) : letter].rstrip()
    if not before or before[-1] in ".!?":
        return True
    prev_word = before.split()[-1]
    return prev_word[:1].isupper()


_OPENERS = "".join(_OPEN_TO_CLOSE)
_CLOSER_OF = _OPEN_TO_CLOSE
_CLOSING_SET = frozenset(_OPEN_TO_CLOSE.values())
_BRACKETS = regex.compile("[" + regex.escape(_OPENERS + "".join(_CLOSING_SET)) + "]|" + _BLANK_LINE)
_QUOTE_SPAN_LIMIT = 2000  # a "quote" longer than this is treated as unbalanced text
_MAX_DEPTH = 32


def _quoted_spans(text: str, a: int, b: int) -> list[tuple[int, int]]:
    """Outermost balanced brackets ``(open, close)`` that close within their paragraph.

    One pass with a bounded stack: a bracket that never closes (or closes more than
    ``_QUOTE_SPAN_LIMIT`` characters later) protects nothing, so unbalanced text cannot swallow the
    rest of a document into one sentence.
    """
    spans: list[tuple[int, int]] = []
    stack: list[tuple[int, str]] = []
    for m in _BRACKETS.finditer(text, a, b):
        pos = m.start()
        ch = text[pos]
        if ch in "\r\n":
            stack.clear()
        elif ch in _CLOSER_OF:
            if len(stack) >= _MAX_DEPTH:
                del stack[0]
            stack.append((pos, _CLOSER_OF[ch]))
        else:
            for depth in range(len(stack) - 1, -1, -1):
                if stack[depth][1] == ch:
                    opened = stack[depth][0]
                    del stack[depth:]
                    if not stack and pos - opened <= _QUOTE_SPAN_LIMIT:
                        spans.append((opened, pos))
                    break
    return spans


def _ends_item_line(text: str, s: int, e: int, b: int) -> bool:
    """A single line break ends a sentence after an item/title/label line or before an item line."""
    if e < b and _ITEM_START.match(text, e):
        return True
    line_start = text.rfind("\n", 0, s) + 1
    return _ITEM_LINE.match(text[line_start:s]) is not None


_CAPITAL = regex.compile(r"\p{Lu}|\p{Lt}")
_LOWER = regex.compile(r"\p{Ll}")


def _is_caseless(text: str, a: int, b: int) -> bool:
    """Lower-cased text (a corpus that was lower-cased): cased letters, but not a single capital.

    Cased text is recognised at its first capital, so the usual answer costs a few characters.
    """
    if b - a < 200:
        return False
    return _CAPITAL.search(text, a, b) is None and _LOWER.search(text, a, b) is not None


def _scan_sentence_cuts(text: str, a: int, b: int, caseless: bool) -> list[int]:
    """Sentence starts strictly inside ``(a, b)``, judged from ``text[a:b]`` alone."""
    quoted = _quoted_spans(text, a, b)
    qi = 0
    cuts: list[int] = []
    for m in _CANDIDATE.finditer(text, a, b):
        s, e = m.start(), m.end()
        first = text[s]
        if first in "\r\n" and e - s <= 2 and text[e - 1] == "\n" and not _ends_item_line(text, s, e, b):
            continue  # a hard-wrapped line, not a sentence end
        if first not in "\r\n":
            while qi < len(quoted) and quoted[qi][1] < s:
                qi += 1
            if qi < len(quoted) and quoted[qi][0] < s <= quoted[qi][1]:
                # Inside a balanced quote: only a terminator that closes the whole quote can end the
                # sentence, and not when the sentence goes on (「行こう。」と言った).
                closes_quote = e == quoted[qi][1] + 1
                if not closes_quote or (e < b and _QUOTE_CONTINUES.match(text, e)):
                    continue
            if first == "." and not _period_ends(text, s, e, caseless):
                continue
            if first == "．" and _LABEL_BEFORE_DOT.search(text, max(0, s - 2), s):
                continue  # "Ｑ．" / "A．" labels at a line start
            if first in "!?！？" and text[e - 1] in _CLOSERS and _SPACE_THEN_LOWER.match(text, e):
                continue  # '"Are you sure?" he asked.'

        while e < b and text[e].isspace():
            e += 1
        if a < e < b and (not cuts or cuts[-1] != e):
            cuts.append(e)
    return cuts


class SentenceIndex:
    """The sentence starts and protected quotations of one text, computed once and bisected.

    Whether a position starts a sentence must not depend on which span is asked about (a window that
    begins inside ``「…」`` cannot see the opening bracket). Quotes never reach across a blank line and
    a blank line always ends a sentence, so the text is judged block by block (blocks end at blank
    lines), each block once, and only the blocks a query touches are ever scanned: the work stays
    linear in the text however many windows the packer asks about.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        n = len(text)
        self._block_starts = _breaks(text).block_starts
        self._caseless = _is_caseless(text, 0, n)
        self._cuts: dict[int, list[int]] = {}
        self._quotes: dict[int, list[tuple[int, int]]] = {}

    def _block_range(self, a: int, b: int) -> range:
        starts = self._block_starts
        first = max(0, bisect_right(starts, a) - 1)
        last = max(first, bisect_left(starts, b) - 1)
        return range(first, min(last, len(starts) - 2) + 1)

    def _block_cuts(self, i: int) -> list[int]:
        cuts = self._cuts.get(i)
        if cuts is None:
            s, e = self._block_starts[i], self._block_starts[i + 1]
            cuts = _scan_sentence_cuts(self.text, s, e, self._caseless)
            if 0 < e < len(self.text):
                cuts.append(e)  # the blank line before the next block ends this block's sentence
            self._cuts[i] = cuts
        return cuts

    def cuts(self, a: int, b: int) -> list[int]:
        """Sentence starts strictly inside ``(a, b)``."""
        out: list[int] = []
        for i in self._block_range(a, b):
            block = self._block_cuts(i)
            out.extend(block[bisect_right(block, a) : bisect_left(block, b)])
        return out

    def _block_quotes(self, i: int) -> list[tuple[int, int]]:
        spans = self._quotes.get(i)
        if spans is None:  # outermost quotations: disjoint, in order
            spans = _quoted_spans(self.text, self._block_starts[i], self._block_starts[i + 1])
            self._quotes[i] = spans
        return spans

    def quotes(self, a: int, b: int) -> list[tuple[int, int]]:
        """Protected quotations ``(open, close)`` that overlap ``[a, b)``."""
        out: list[tuple[int, int]] = []
        for i in self._block_range(a, b):
            out.extend(q for q in self._block_quotes(i) if q[1] >= a and q[0] < b)
        return out

    def inside_quote(self, position: int) -> bool:
        """True when ``position`` lies inside a protected quotation (after its opener, up to its closer)."""
        starts = self._block_starts
        i = max(0, min(bisect_right(starts, position) - 1, len(starts) - 2))
        spans = self._block_quotes(i)
        k = bisect_left(spans, (position, -1)) - 1
        return k >= 0 and spans[k][0] < position <= spans[k][1]


@lru_cache(maxsize=8)
def sentence_index(text: str) -> SentenceIndex:
    """The (cached) `SentenceIndex` of ``text``: the last few texts are kept, like the Markdown outline."""
    return SentenceIndex(text)


def sentence_cuts(text: str, a: int = 0, b: int | None = None) -> list[int]:
    """Positions strictly inside ``(a, b)`` where a new sentence starts (after any whitespace).

    The answer is the whole text's: a window never changes whether a position starts a sentence.
    """
    b = len(text) if b is None else b
    return sentence_index(text).cuts(a, b)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every sentence, whitespace at either side excluded."""
    return _spans_from_cuts(text, sentence_cuts(text))


def paragraph_cuts(text: str, a: int = 0, b: int | None = None) -> list[int]:
    """Positions inside ``(a, b)`` where a paragraph starts: blank lines and item-marker lines.

    Found once per text (cached) and bisected, so the answer never depends on the window.
    """
    b = len(text) if b is None else b
    cuts = _paragraph_positions(text)
    return list(cuts[bisect_right(cuts, a) : bisect_left(cuts, b)])


def _paragraph_positions(text: str) -> tuple[int, ...]:
    return _breaks(text).paragraphs


class _Breaks(NamedTuple):
    paragraphs: tuple[int, ...]  # where paragraphs start: blank lines and item lines (the break's start)
    block_starts: list[int]  # 0, the first character after each blank-line run, len(text)


@lru_cache(maxsize=8)
def _breaks(text: str) -> _Breaks:
    """Paragraph breaks and the blocks between blank lines, from one scan of the text (cached)."""
    n = len(text)
    paragraphs = []
    blocks = [0]
    after_space = cast(Callable[[str, int], re.Match[str]], _SPACE_RUN.match)  # r"\s*" always matches
    for m in _FAST_PARAGRAPH_BREAK.finditer(text):
        p = m.start()
        paragraphs.append(p - 1 if p and text[p - 1] == "\r" else p)
        if m.end() - p > 1:  # a blank line (an item line's break is the "\n" alone)
            e = after_space(text, m.end()).end()
            if 0 < e < n and e != blocks[-1]:
                blocks.append(e)
    blocks.append(n)
    return _Breaks(tuple(paragraphs), blocks)


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every paragraph, whitespace at either side excluded."""
    return _spans_from_cuts(text, paragraph_cuts(text))


def _spans_from_cuts(text: str, cuts: list[int]) -> list[tuple[int, int]]:
    spans = []
    bounds = [0, *cuts, len(text)]
    for s, e in itertools.pairwise(bounds):
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if s < e:
            spans.append((s, e))
    return spans
