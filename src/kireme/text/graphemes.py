"""Grapheme-cluster boundaries (UAX #29) found locally, so no cut splits what a reader sees as one character.

A full ``\\X`` scan of a large document is wasted work: only the positions where we want to cut need
checking. We scan a small window that starts at a position known to be a boundary (two adjacent
characters of break class *Other*, or the caller's own known boundary) and read the answer off it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from functools import lru_cache
from itertools import repeat
from operator import add, itemgetter

import regex

from kireme._native import native
from kireme.text.patterns import lazy_regex

_CLUSTER = lazy_regex(r"\X")
_WINDOW = 32
_MAX_BACKTRACK = 256


# Between two characters of break class Other (letters, kana, kanji, most punctuation, emoji bases) UAX
# #29 always allows a break (no Extend/ZWJ/Prepend/RI/Hangul/Indic-linker context involved), and so it
# does after a line feed and around a tab. Any character outside that set may join its neighbour.
_NOT_SIMPLE = lazy_regex(r"[^\p{Grapheme_Cluster_Break=Other}\n\t]|\p{InCB=Consonant}", regex.VERSION1)


class CutFilter:
    """Drops candidate cuts that would split a grapheme cluster, cheaply.

    Only positions next to a character that can join a cluster (marks, ZWJ, regional indicators,
    CR, Hangul jamo, Indic consonants...) need a real check; for typical Japanese or English text that
    is none at all. The characters on both sides of every candidate are gathered and compared with the
    set of known simple characters in bulk (C-level ``itemgetter`` and set operations), so a list of
    candidates costs no Python work per candidate unless one of them stands next to such a character
    (then each is checked as `is_boundary` does). The text itself is never scanned.
    """

    def __init__(self, text: str) -> None:
        self.text = text

    def keep(self, cuts: list[int]) -> list[int]:
        text = self.text
        if _NATIVE_ALL_SIMPLE is not None and cuts and _NATIVE_ALL_SIMPLE(text, cuts, _SIMPLE_CHARS):
            return cuts  # the usual answer, in one C call (`kireme._speedups.all_simple`)
        if len(cuts) > 1 and cuts[0] > 0 and cuts[-1] < len(text):
            around = set(itemgetter(*cuts)(text))
            around.update(itemgetter(*map(add, cuts, repeat(-1)))(text))
            if not around.issubset(_SIMPLE_CHARS):
                for ch in around.difference(_SIMPLE_CHARS):
                    _learn_simple(ch)
            if around.issubset(_SIMPLE_CHARS):
                return cuts
        return [p for p in cuts if is_boundary(text, p)]


# Characters of break class Other (and not Indic consonants), plus \n and \t: a cut between two of
# them never splits a cluster. Grows as characters are met; bounded by the alphabet in use.
_SIMPLE_CHARS: set[str] = set("\n\t")
SIMPLE_CHARS = _SIMPLE_CHARS  # the same set, read by kireme.pack's C trim (`kireme._speedups.trim_span`)
_NATIVE_ALL_SIMPLE: Callable[[str, list[int], set[str]], bool] | None = native("all_simple")


def _learn_simple(ch: str) -> bool:
    if _NOT_SIMPLE.match(ch) is None:
        _SIMPLE_CHARS.add(ch)
        return True
    return False


def _is_other(ch: str) -> bool:
    """True for a character that never joins a neighbour into one cluster (see `_NOT_SIMPLE`)."""
    return ch in _SIMPLE_CHARS or _learn_simple(ch)


def _safe_start(text: str, p: int, lo: int) -> int:
    """A position ``<= p`` (and ``>= lo``) that is certainly a cluster boundary.

    Usually two adjacent simple characters (class Other) are found within a few steps. Text without such a
    pair nearby (long runs of combining marks, jamo, regional indicators) is answered from every
    boundary of the text, computed once and bisected, so the work stays linear in the text.
    """
    s = max(lo, p - _WINDOW)
    stop = max(lo, s - _MAX_BACKTRACK)
    while s > stop:
        prev = text[s - 1]
        if prev == "\n" or (_is_other(prev) and _is_other(text[s])):
            return s
        s -= 1
    if s == lo:
        return lo
    bounds = _all_boundaries(text)
    return max(lo, bounds[bisect_right(bounds, s) - 1])


@lru_cache(maxsize=4)
def _all_boundaries(text: str) -> tuple[int, ...]:
    """Every cluster boundary of ``text``: the fallback for text without safe pairs nearby."""
    return tuple(boundaries(text))


def floor_boundary(text: str, p: int, lo: int = 0) -> int:
    """The largest grapheme boundary ``<= p``; ``lo`` must itself be a known boundary."""
    n = len(text)
    if p <= lo or p >= n:
        return min(max(p, lo), n)
    before, after = text[p - 1], text[p]
    simple = _SIMPLE_CHARS
    if (before in simple or _learn_simple(before)) and (after in simple or _learn_simple(after)):
        return p  # between two characters that never join a cluster: the usual case, no scan
    s = _safe_start(text, p, lo)
    last = s
    for m in _CLUSTER.finditer(text, s, min(n, p + _WINDOW)):
        if m.end() > p:
            return int(m.start())
        last = m.end()
    return last


def ceil_boundary(text: str, p: int, lo: int = 0) -> int:
    """The smallest grapheme boundary ``>= p``."""
    n = len(text)
    if p <= lo or p >= n:
        return min(max(p, lo), n)
    f = floor_boundary(text, p, lo)
    if f == p:
        return p
    m = _CLUSTER.match(text, f)
    return m.end() if m else n


def is_boundary(text: str, p: int, lo: int = 0) -> bool:
    """True when a cut at ``p`` does not split a grapheme cluster."""
    return floor_boundary(text, p, lo) == p


def boundaries(text: str) -> list[int]:
    """Every grapheme boundary of ``text`` (0 and ``len(text)`` included); a full scan, for tests."""
    out = [0]
    out.extend(m.end() for m in _CLUSTER.finditer(text))
    return out if text else [0]
