"""A sentence too long for a chunk is cut outside its short brackets first (`keep_brackets`).

Rules and laws qualify a term with a parenthesis that holds its own full stops and commas
(``出張する場合（日帰りの出張を除く。以下この条において同じ。）には``); the levels that cut inside a sentence
cut after the inner full stop as readily as anywhere, and a chunk started with ``以下この条において同じ。）``,
the exception's second half away from the term it qualifies. A bracket that fills at most half a chunk
(`BRACKET_SHARE`) is now kept whole while the sentence around it has cuts outside it; a larger one, or one
in text with no cut outside it, is cut as before (nothing is lost, no chunk grows past ``max_size``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.invariants import check_invariants

from kireme import Document, make_chunker
from kireme.boundaries.levels import (
    BRACKET_SHARE,
    CLAUSE,
    INSIDE_SENTENCE,
    QUOTED_SENTENCE,
    SENTENCE,
    WORD,
    BracketEdges,
    KeptBrackets,
    MeasuredLimit,
    OutsideBrackets,
    SpanLimit,
    keep_brackets,
)
from kireme.chunkers import Chunker
from kireme.text.sentences import bracket_pairs

STRATEGIES = ["recursive", "sentence", "paragraph", "markdown", "semantic"]

# One sentence of 185 characters, two parentheses with full stops and commas inside them.
RULE = (
    "第12条 会社は、従業員が業務上の必要により出張する場合（日帰りの出張を除く。以下この条において同じ。）"
    "には、別に定める旅費規程により旅費を支給し、その額は出張の日数、目的地及び交通手段に応じて算定するものとし、"
    "当該算定の方法（端数の処理を含む。）及び支給の時期については、総務部長が別に定めるところによる。\n\n"
    "第13条 前条の旅費の精算は、出張から戻った日の翌日から起算して七日以内に行う。"
)


def _chunker(strategy: str, **options) -> Chunker:
    if strategy == "semantic":
        options.setdefault("similarity", "bigram")
        options.setdefault("cache_dir", False)
    return make_chunker(strategy, **options)


def _cut_brackets(text: str, chunks, room: int) -> list[str]:
    """The brackets of at most ``room`` characters with a chunk edge inside them."""
    edges = {c.start for c in chunks} | {c.end for c in chunks}
    return [
        text[a:b]
        for a, b in bracket_pairs(text, 0, len(text))
        if b - a <= room and any(a < e < b for e in edges)
    ]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("max_size", [50, 60, 80, 100, 120])
def test_a_short_parenthesis_in_a_long_sentence_is_not_cut(strategy: str, max_size: int) -> None:
    doc = Document(RULE, metadata={"format": "markdown"} if strategy == "markdown" else {})
    chunker = _chunker(strategy, max_size=max_size)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=max_size, chunker=chunker)
    assert RULE.index("\n\n") > max_size  # the first sentence does not fit a chunk
    assert _cut_brackets(RULE, chunks, int(max_size * BRACKET_SHARE)) == []
    assert not any(c.text.startswith(("以下この条", "端数の")) for c in chunks)


@pytest.mark.parametrize("strategy", ["recursive", "sentence", "markdown"])
@pytest.mark.parametrize(
    "options",
    [{"unit": "tokens", "max_size": 50}, {"unit": "tokens", "max_size": 70}, {"max_size": 80, "overlap": 16}],
)
def test_in_tokens_and_with_an_overlap(strategy: str, options: dict) -> None:
    """In tokens the first parenthesis is 24 tokens: kept whole from a budget of 48 on. An overlap never
    starts inside a bracket either (it starts at a sentence rule's protected quote's edge at the latest)."""
    chunker = _chunker(strategy, **options)
    chunks = chunker.chunk(RULE)
    overlap = options.get("overlap", 0)
    check_invariants(RULE, chunks, max_size=options["max_size"], overlap=overlap, chunker=chunker)
    assert not any(c.text.startswith(("以下この条", "端数の")) for c in chunks)
    assert _cut_brackets(RULE, chunks, 25) == []


def test_a_parenthesis_larger_than_half_a_chunk_is_still_cut_where_it_must_be() -> None:
    """At 40 characters the first parenthesis (25) is more than half a chunk: the sentence is cut at its
    clauses as before, inside it too, and no chunk grows past ``max_size``; the short one (11) stays whole."""
    chunker = make_chunker("recursive", max_size=40)
    chunks = chunker.chunk(RULE)
    check_invariants(RULE, chunks, max_size=40, chunker=chunker)
    assert "（端数の処理を含む。）" in "".join(c.text for c in chunks if "端数" in c.text)
    assert _cut_brackets(RULE, chunks, 20) == []
    assert [c.text for c in chunks if c.text.startswith("以下この条")]  # the long one is cut at its stop


def test_a_bracket_with_no_other_cut_around_it_is_cut_at_its_edges() -> None:
    """Text whose only cuts inside a sentence lie inside its brackets is cut after a bracket kept whole,
    then before one, not inside it nor between arbitrary characters."""
    text = "あ" * 30 + "（規程を参照。例外は別表のとおり、）" + "い" * 30
    chunker = make_chunker("recursive", max_size=45)
    chunks = chunker.chunk(text)
    check_invariants(text, chunks, max_size=45, chunker=chunker)
    assert [c.text for c in chunks] == ["あ" * 30, "（規程を参照。例外は別表のとおり、）", "い" * 30]
    text = "会社は（除く。別表のとおり、）会社は（除く。除く。以下同じ。）会社は、。"
    chunks = make_chunker("recursive", max_size=30).chunk(text)
    assert [c.text for c in chunks] == [
        "会社は（除く。別表のとおり、）",
        "会社は（除く。除く。以下同じ。）会社は、。",
    ]


ENGLISH = (
    "The committee approved the travel policy for every office in the group (see Annex 2. for rates, in yen) "
    "on the condition that receipts are filed within seven days of the return (weekends excluded), "
    "and that any claim above the limit is signed by a director before it is paid."
)


@pytest.mark.parametrize("max_size", [70, 80, 90, 100, 120])
def test_english_parentheses_are_kept_whole_too(max_size: int) -> None:
    """Cut between words, an English sentence lost ``in yen)`` to the next chunk at 70–120 characters."""
    chunker = make_chunker("recursive", max_size=max_size)
    chunks = chunker.chunk(ENGLISH)
    check_invariants(ENGLISH, chunks, max_size=max_size, chunker=chunker)
    assert _cut_brackets(ENGLISH, chunks, max_size // 2) == []
    assert not any(c.text.startswith(("in yen)", "rates,")) for c in chunks)


def test_bracket_pairs_nested_mixed_and_unclosed() -> None:
    text = "規程（「旅費」（日当を含む。）をいう。）と【注】、閉じない（括弧と「引用）余る）"
    pairs = bracket_pairs(text, 0, len(text))
    assert [text[a:b] for a, b in pairs] == [
        "「旅費」",
        "（日当を含む。）",
        "（「旅費」（日当を含む。）をいう。）",
        "【注】",
        "（括弧と「引用）",  # the 「 that never closes is dropped; the last ） pairs with nothing
    ]
    assert bracket_pairs(text, 3, 7) == [(3, 7)]  # only what lies inside [a, b)
    assert bracket_pairs("括弧なし。", 0, 5) == []


def test_keep_brackets_wraps_the_levels_inside_a_sentence_only() -> None:
    levels = keep_brackets([SENTENCE, *INSIDE_SENTENCE], lambda a, b: True)
    n = len(INSIDE_SENTENCE)
    assert levels[0] == SENTENCE
    assert [w.level for w in levels[1 : 1 + n] if isinstance(w, OutsideBrackets)] == list(INSIDE_SENTENCE)
    assert [(type(e), e.after) for e in levels[1 + n : 3 + n]] == [
        (BracketEdges, True),
        (BracketEdges, False),
    ]
    assert levels[3 + n :] == list(INSIDE_SENTENCE)  # the fallback, unwrapped
    assert keep_brackets([SENTENCE, CLAUSE, WORD], lambda a, b: True) == [SENTENCE, CLAUSE, WORD]
    assert keep_brackets([SENTENCE, QUOTED_SENTENCE], None) == [SENTENCE, QUOTED_SENTENCE]


def test_outside_brackets_keeps_the_outermost_that_fits() -> None:
    text = "甲は、乙（丙、丁（戊、己）、庚）、辛。"
    assert CLAUSE.cuts(text, 0, len(text)) == [3, 7, 11, 14, 17]

    def cuts(fits) -> list[int]:
        return OutsideBrackets(CLAUSE, KeptBrackets(fits)).cuts(text, 0, len(text))

    # the outer parenthesis (12 characters) does not fit: the inner one (5) is kept, the outer's commas cut
    assert cuts(lambda a, b: b - a <= 8) == [3, 7, 14, 17]
    assert cuts(lambda a, b: True) == [3, 17]
    assert cuts(lambda a, b: False) == [3, 7, 11, 14, 17]
    edges = KeptBrackets(lambda a, b: b - a <= 8)
    assert BracketEdges(edges).cuts(text, 0, len(text)) == [13]
    assert BracketEdges(edges, after=False).cuts(text, 0, len(text)) == [8]
    assert BracketEdges(edges).cuts(text, 0, 13) == []  # strictly inside the window


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet="甲乙、。（）「」 ab", max_size=60),
    window=st.tuples(st.integers(0, 60), st.integers(0, 60)),
    room=st.integers(2, 20),
)
def test_the_levels_do_not_depend_on_the_window(text: str, window: tuple[int, int], room: int) -> None:
    """A level's cuts inside ``(a, b)`` are its cuts of the whole text that lie there (architecture.md): a
    bracket that opens before the window still protects the window's start."""
    a, b = sorted(min(w, len(text)) for w in window)
    brackets = KeptBrackets(lambda s, e: e - s <= room)
    for level in (
        OutsideBrackets(CLAUSE, brackets),
        OutsideBrackets(QUOTED_SENTENCE, brackets),
        BracketEdges(brackets),
    ):
        whole = level.cuts(text, 0, len(text))
        assert level.cuts(text, a, b) == [c for c in whole if a < c < b]


_PIECE = st.sampled_from(["会社は", "旅費を", "支給し", "規程により", "出張の日数", "総務部長が", "定める"])
_INSIDE = st.sampled_from(["除く。", "以下同じ。", "含む、", "別表のとおり、", "日帰り"])


@st.composite
def _rule_sentences(draw) -> str:
    """A long sentence of short clauses with short parentheses between them (each holding a stop or a
    comma), sometimes two sentences."""
    parts: list[str] = []
    for _ in range(draw(st.integers(4, 24))):
        parts.append(draw(_PIECE))
        if draw(st.booleans()):
            parts.append("（" + "".join(draw(st.lists(_INSIDE, min_size=1, max_size=3))) + "）")
        parts.append(draw(st.sampled_from(["、", "、", "", "。"])))
    return "".join(parts) + "。"


@settings(max_examples=150, deadline=None)
@given(text=_rule_sentences(), max_size=st.integers(30, 120), strategy=st.sampled_from(STRATEGIES))
@example(text="会社は（除く。以下同じ。）旅費を、" * 6 + "。", max_size=30, strategy="recursive")
def test_no_edge_inside_a_bracket_of_half_a_chunk_where_clauses_fit(
    text: str, max_size: int, strategy: str
) -> None:
    doc = Document(text, metadata={"format": "markdown"} if strategy == "markdown" else {})
    chunker = _chunker(strategy, max_size=max_size)
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=max_size, chunker=chunker)
    # every clause (the text between two cuts outside the brackets) is at most 5 + 3 * 8 + 1 characters
    # with its parenthesis: one fits a chunk from 30 on, so no bracket of half a chunk is ever cut
    assert _cut_brackets(text, chunks, int(max_size * BRACKET_SHARE)) == []


@pytest.mark.parametrize("max_unit_chars", [40, 60, 90])
def test_semantic_units_end_outside_short_brackets(max_unit_chars: int) -> None:
    """A topic cut falls between two comparison units: a unit of a long sentence no longer ends inside a
    parenthesis that fits one."""
    from kireme.semantic.units import semantic_units

    first = RULE[: RULE.index("\n\n")]
    units = semantic_units(first, max_unit_chars)
    assert len(units) > 2
    assert all(b <= c for (_, b), (c, _) in itertools.pairwise(units))
    edges = {e for unit in units for e in unit}
    kept = [(a, b) for a, b in bracket_pairs(first, 0, len(first)) if b - a <= max_unit_chars]
    assert kept and not [first[a:b] for a, b in kept if any(a < e < b for e in edges)]


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet="（）「」『』()【】〈〉《》〔〕甲、。\n", max_size=120),
    limit=st.integers(0, 40),
)
@example(text="（" * 40 + "甲" + "）" * 40, limit=80)  # deeper than the stack the scan keeps
@example(text="「（」）（）", limit=10)
@example(text="a (b) [c (d)] e) (f", limit=6)  # one byte a character
@example(text="😀（甲）「😀」(乙", limit=4)  # four bytes a character
def test_kept_brackets_in_c_is_the_python_reference(text: str, limit: int) -> None:
    native = pytest.importorskip("kireme._speedups")
    assert native.kept_brackets(text, limit) == KeptBrackets.reference(text, SpanLimit(limit))
    assert KeptBrackets(SpanLimit(limit)).spans(text) == KeptBrackets.reference(text, SpanLimit(limit))


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet="（）「」『』()【】〈〉《》〔〕甲乙、。\n", max_size=120),
    limit=st.integers(0, 40),
)
@example(text="（" * 40 + "甲" + "）" * 40, limit=80)
def test_kept_brackets_in_c_asks_another_measure_as_the_reference_does(text: str, limit: int) -> None:
    """A measure other than characters (tokens): C finds the pairs and asks ``fits`` of exactly the pairs
    the Python reference asks, in the same order, and keeps what it keeps."""
    native = pytest.importorskip("kireme._speedups")

    def measured(asked: list[tuple[int, int]]) -> Callable[[int, int], bool]:
        def fits(start: int, end: int) -> bool:
            asked.append((start, end))
            return text.count("甲", start, end) * 3 + (end - start) <= limit  # not a length limit

        return fits

    asked_c: list[tuple[int, int]] = []
    asked_py: list[tuple[int, int]] = []
    assert native.kept_brackets(text, 0, measured(asked_c)) == KeptBrackets.reference(
        text, measured(asked_py)
    )
    assert asked_c == asked_py
    assert KeptBrackets(measured([])).spans(text) == KeptBrackets.reference(text, measured([]))


def test_kept_brackets_in_c_passes_on_what_the_measure_raises() -> None:
    native = pytest.importorskip("kireme._speedups")

    def broken(start: int, end: int) -> bool:
        raise ValueError("no tokenizer")

    with pytest.raises(ValueError, match="no tokenizer"):
        native.kept_brackets("甲（乙）丙", 0, broken)
    with pytest.raises(TypeError, match="callable"):
        native.kept_brackets("甲（乙）丙", 0, 5)


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet="（）「」()甲乙、。 a😀\n", max_size=120),
    sure=st.integers(0, 12),
)
def test_kept_brackets_in_c_keeps_short_pairs_of_a_measured_limit_unasked(text: str, sure: int) -> None:
    """A `MeasuredLimit` says that spans up to ``sure`` characters fit: C keeps those without asking its
    test, asks it of the longer ones in the reference's order, and answers as the reference does."""
    native = pytest.importorskip("kireme._speedups")
    asked: list[tuple[int, int]] = []

    def test(start: int, end: int) -> bool:
        asked.append((start, end))
        return end - start <= sure or text.count("甲", start, end) < 2

    expected = KeptBrackets.reference(text, MeasuredLimit(test, sure))
    asked.clear()
    assert native.kept_brackets(text, sure, test) == expected
    assert all(end - start > sure for start, end in asked)
    assert KeptBrackets(MeasuredLimit(test, sure)).spans(text) == expected


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(
        alphabet=st.sampled_from(["甲", "a", " ", "😀", "é", "\u0301", "（", "）", "\n", "。"]), max_size=160
    ),
    size=st.integers(4, 80),
)
def test_a_span_of_the_sure_length_fits_a_token_budget(text: str, size: int) -> None:
    """What `Chunker.fits_budget` promises in cl100k tokens: every span of at most ``sure`` characters fits
    (a character is four bytes at most, a token one byte at least) — the test agrees on each one."""
    chunker = make_chunker("recursive", max_size=size, unit="tokens")
    document = Document(text)
    fits = chunker.fits_budget(document, chunker.measure.for_text(text))
    assert isinstance(fits, MeasuredLimit)
    for start in range(len(text)):
        end = min(len(text), start + fits.sure)
        if start < end:
            assert fits.test(start, end)
