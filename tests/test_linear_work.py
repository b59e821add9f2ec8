"""DESIGN invariant 6: the work of chunking grows linearly with the text.

Timing tests are flaky on shared machines, so work is *counted* instead: characters handed to the
boundary levels, characters examined by the grapheme-boundary search (the window scans and the
backward walk for a safe start), and calls to the span sizer. Quadrupling the text must not multiply
the work by much more than four, and the work per chunk must stay below a constant. This is the guard
for the class of bug where every boundary check near Japanese text walked back thousands of characters
(a set-operation regex compiled in the wrong syntax never matched a kanji).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

import kireme.text.graphemes as graphemes
from kireme import Document, chunk, make_chunker
from kireme.boundaries import levels as levels_module
from kireme.length import Chars, Tokens


@dataclass
class Work:
    level_chars: int = 0
    grapheme_chars: int = 0
    sizer_calls: int = 0
    calls: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.level_chars + self.grapheme_chars + self.sizer_calls


class _CountingPattern:
    """Stands in for the grapheme-cluster regex and counts the characters each scan may read."""

    def __init__(self, pattern, work: Work) -> None:
        self._pattern = pattern
        self._work = work

    def finditer(self, text, pos=0, endpos=None):
        end = len(text) if endpos is None else endpos
        self._work.grapheme_chars += max(0, end - pos)
        return self._pattern.finditer(text, pos, endpos if endpos is not None else len(text))

    def match(self, text, pos=0):
        self._work.grapheme_chars += 8
        return self._pattern.match(text, pos)


class _CountingSizer:
    def __init__(self, inner, work: Work) -> None:
        self._inner = inner
        self._work = work
        self.exact_estimates = inner.exact_estimates

    def __getattr__(self, name):
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def counted(*args, **kwargs):
            self._work.sizer_calls += 1
            if name == "exact":
                self._work.sizer_calls += sum(b - a for a, b in args[0])
            return attr(*args, **kwargs)

        return counted


@pytest.fixture
def work(monkeypatch) -> Work:
    w = Work()
    for cls_name in ("RegexLevel", "SentenceLevel", "ParagraphLevel", "PositionLevel"):
        cls = getattr(levels_module, cls_name)
        original = cls.cuts

        def counted_cuts(self, text, a, b, _original=original):
            w.level_chars += max(0, b - a)
            return _original(self, text, a, b)

        monkeypatch.setattr(cls, "cuts", counted_cuts)
    monkeypatch.setattr(graphemes, "_CLUSTER", _CountingPattern(graphemes._CLUSTER, w))
    original_is_other = graphemes._is_other

    def counted_is_other(ch: str) -> bool:
        w.grapheme_chars += 1
        return original_is_other(ch)

    monkeypatch.setattr(graphemes, "_is_other", counted_is_other)
    for measure in (Chars, Tokens):
        original_for_text = measure.for_text

        def for_text(self, text, _original=original_for_text):
            return _CountingSizer(_original(self, text), w)

        monkeypatch.setattr(measure, "for_text", for_text)
    graphemes._all_boundaries.cache_clear()
    return w


def _unpunctuated_japanese(n: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    words = [
        "旅費",
        "規程",
        "出張",
        "宿泊",
        "精算",
        "しなければならない",
        "について",
        "および",
        "申請者",
        "上限額",
    ]
    out: list[str] = []
    size = 0
    while size < n:
        w = rng.choice(words)
        out.append(w)
        size += len(w)
    return "".join(out)[:n]


def _letters_only(n: int) -> str:
    return ("abcdefghij" * (n // 10 + 1))[:n]


def _short_lines(n: int) -> str:
    line = "申請は前日までに行う\n"
    return (line * (n // len(line) + 1))[:n]


def _combining_runs(n: int) -> str:
    # a base letter followed by long runs of combining marks: no safe pair of simple characters nearby
    unit = "e" + "\u0301" * 299
    return (unit * (n // len(unit) + 1))[:n]


def _quoted_japanese(n: int) -> str:
    s = "課長は「申請は前日までに行うこと。宿泊費は上限の範囲で精算すること。」と説明した。"
    return (s * (n // len(s) + 1))[:n]


TEXTS = {
    "unpunctuated-ja": _unpunctuated_japanese,
    "letters-only": _letters_only,
    "short-lines": _short_lines,
    "combining-runs": _combining_runs,
    "quoted-ja": _quoted_japanese,
}


def _measure(
    work: Work, text: str, strategy: str, unit: str, max_size: int, overlap: int, **options
) -> tuple[int, int]:
    before = work.total
    chunks = chunk(text, strategy, max_size=max_size, unit=unit, overlap=overlap, **options)
    return work.total - before, len(chunks)


@pytest.mark.parametrize("kind", sorted(TEXTS))
@pytest.mark.parametrize("strategy", ["fixed", "recursive", "sentence", "paragraph"])
def test_work_grows_linearly_in_chars(work: Work, kind: str, strategy: str) -> None:
    small, large = TEXTS[kind](20_000), TEXTS[kind](80_000)
    w_small, n_small = _measure(work, small, strategy, "chars", 400, 40)
    graphemes._all_boundaries.cache_clear()
    w_large, n_large = _measure(work, large, strategy, "chars", 400, 40)
    assert n_large >= 3 * n_small
    assert w_large <= 4 * w_small * 1.5, (kind, strategy, w_small, w_large)
    # the work per chunk is bounded by a small multiple of what a chunk holds, whatever the text
    assert w_large / n_large <= 40 * 400, (kind, strategy, w_large / n_large)


@pytest.mark.parametrize("kind", sorted(TEXTS))
@pytest.mark.parametrize("unit", ["chars", "tokens"])
def test_optimal_packing_work_grows_linearly(work: Work, kind: str, unit: str) -> None:
    """The optimal packer asks the levels and the sizer about as much as the greedy one: linear."""
    size = 400 if unit == "chars" else 128
    small, large = TEXTS[kind](20_000), TEXTS[kind](80_000)
    w_small, n_small = _measure(work, small, "recursive", unit, size, size // 10, packing="optimal")
    graphemes._all_boundaries.cache_clear()
    w_large, n_large = _measure(work, large, "recursive", unit, size, size // 10, packing="optimal")
    assert n_large >= 3 * n_small
    assert w_large <= 4 * w_small * 1.5, (kind, unit, w_small, w_large)
    assert w_large / n_large <= 40 * 400, (kind, unit, w_large / n_large)


@pytest.mark.parametrize("kind", ["unpunctuated-ja", "letters-only", "quoted-ja"])
@pytest.mark.parametrize("strategy", ["fixed", "recursive", "sentence"])
def test_work_grows_linearly_in_tokens(work: Work, kind: str, strategy: str) -> None:
    small, large = TEXTS[kind](10_000), TEXTS[kind](40_000)
    w_small, n_small = _measure(work, small, strategy, "tokens", 128, 16)
    w_large, n_large = _measure(work, large, strategy, "tokens", 128, 16)
    assert n_large >= 3 * n_small
    assert w_large <= 4 * w_small * 1.5, (kind, strategy, w_small, w_large)


def _grapheme_work_per_chunk(work: Work, text: str, strategy: str) -> float:
    graphemes._all_boundaries.cache_clear()
    work.grapheme_chars = 0
    chunks = chunk(text, strategy, max_size=2000, unit="chars", overlap=200)
    return work.grapheme_chars / len(chunks)


@pytest.mark.parametrize("kind", ["unpunctuated-ja", "letters-only", "short-lines", "quoted-ja"])
@pytest.mark.parametrize("strategy", ["fixed", "recursive", "sentence", "paragraph"])
def test_grapheme_checks_read_a_few_characters_per_cut(work: Work, kind: str, strategy: str) -> None:
    """Finding a cluster boundary reads a small window, not the chunk (max_size 2000 here)."""
    per_chunk = _grapheme_work_per_chunk(work, TEXTS[kind](60_000), strategy)
    assert per_chunk <= 400, (kind, strategy, per_chunk)


def test_the_guard_fails_on_the_old_walk(work: Work, monkeypatch) -> None:
    """The guard can fail: when no kanji is recognised as class Other (the old bug) every boundary
    check walks back through the whole window."""

    def never_other(ch: str) -> bool:
        work.grapheme_chars += 1
        return ch in " abc"

    monkeypatch.setattr(graphemes, "_is_other", never_other)
    monkeypatch.setattr(graphemes, "_MAX_BACKTRACK", 4096)
    monkeypatch.setattr(graphemes, "_SIMPLE_CHARS", set())  # no fast path: every check walks
    monkeypatch.setattr(graphemes, "_learn_simple", lambda ch: False)
    assert _grapheme_work_per_chunk(work, TEXTS["unpunctuated-ja"](60_000), "fixed") > 400


def _long_sentences(n: int, seed: int = 3) -> str:
    """English paragraphs of three sentences each longer than the chunks below, no heading: one section
    whose every piece but the first starts inside a sentence."""
    rng = random.Random(seed)
    clauses = [
        "the claim is filed with the receipts attached",
        "the manager signs it within five working days",
        "payment follows at the end of the next month",
        "a late claim needs a short written reason",
        "taxis are refunded only after ten at night",
    ]
    out: list[str] = []
    size = 0
    while size < n:
        sentence = ", ".join(rng.choice(clauses) for _ in range(6)).capitalize() + "."
        out.append(sentence + ("\n\n" if len(out) % 3 == 2 else " "))
        size += len(out[-1])
    return "".join(out)[:n]


def test_markdown_asks_the_sentences_linearly(monkeypatch) -> None:
    """`markdown` keeps a sentence whole where the context would cut it (`_whole_sentence_budget`): it asks
    where the sentence each piece starts in ends. Asked as every sentence start up to the section's end,
    the answers of one long section grew with the square of its length (a 740k-character file took 0.2 s
    more); each answer now holds the one start it needs."""
    from kireme.text import sentences

    answered = [0]
    cuts, first_cut = sentences.SentenceIndex.cuts, sentences.SentenceIndex.first_cut

    def counted_cuts(self, a, b):
        out = cuts(self, a, b)
        answered[0] += len(out) + 1
        return out

    def counted_first(self, a, b):
        answered[0] += 1
        return first_cut(self, a, b)

    monkeypatch.setattr(sentences.SentenceIndex, "cuts", counted_cuts)
    monkeypatch.setattr(sentences.SentenceIndex, "first_cut", counted_first)
    counts = []
    for size in (20_000, 80_000):
        answered[0] = 0
        doc = Document(_long_sentences(size), metadata={"title": "Expense rules"})
        chunks = make_chunker("markdown", max_size=200).chunk(doc)
        counts.append((answered[0], len(chunks)))
    (small, n_small), (large, n_large) = counts
    assert n_large >= 3 * n_small
    assert large <= 4 * small * 1.5, counts
