"""Grapheme-cluster boundaries (UAX #29) found locally, so no cut splits what a reader sees as one character.

A full ``\\X`` scan of a large document is wasted work: only the positions where we want to cut need
checking. We scan a small window that starts at a position known to be a boundary (two adjacent
characters of break class *Other*, or the caller's own known boundary) and read the answer off it.
"""

from __future__ import annotations

import regex

_CLUSTER = regex.compile(r"\X")
# Between two characters of break class Other (letters, kana, kanji, most punctuation, emoji bases)
# UAX #29 always allows a break (no Extend/ZWJ/Prepend/RI/Hangul/Indic-linker context involved).
_OTHER = regex.compile(r"[\p{Grapheme_Cluster_Break=Other}&&[^\p{InCB=Consonant}]]|[\x20-\x7e]")
_WINDOW = 32
_MAX_BACKTRACK = 4096


_NOT_SIMPLE = regex.compile(r"[^\p{Grapheme_Cluster_Break=Other}\n\t]|\p{InCB=Consonant}", regex.VERSION1)


class CutFilter:
    """Drops candidate cuts that would split a grapheme cluster, cheaply.

    Only positions next to a character that can join a cluster (marks, ZWJ, regional indicators,
    CR, Hangul jamo, Indic consonants...) need a real check; for typical Japanese or English text that
    is none at all.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._suspicious = {m.start() for m in _NOT_SIMPLE.finditer(text)}

    def keep(self, cuts: list[int]) -> list[int]:
        if not self._suspicious:
            return cuts
        bad = self._suspicious
        text = self.text
        return [p for p in cuts if (p not in bad and p - 1 not in bad) or is_boundary(text, p)]


def _is_other(ch: str) -> bool:
    return _OTHER.match(ch) is not None


def _safe_start(text: str, p: int, lo: int) -> int:
    """A position ``<= p`` (and ``>= lo``) that is certainly a cluster boundary."""
    s = max(lo, p - _WINDOW)
    steps = 0
    while s > lo and steps < _MAX_BACKTRACK:
        if _is_other(text[s - 1]) and _is_other(text[s]):
            return s
        s -= 1
        steps += 1
    return s


def floor_boundary(text: str, p: int, lo: int = 0) -> int:
    """The largest grapheme boundary ``<= p``; ``lo`` must itself be a known boundary."""
    n = len(text)
    if p <= lo or p >= n:
        return min(max(p, lo), n)
    s = _safe_start(text, p, lo)
    last = s
    for m in _CLUSTER.finditer(text, s, min(n, p + _WINDOW)):
        if m.end() > p:
            return m.start()
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
