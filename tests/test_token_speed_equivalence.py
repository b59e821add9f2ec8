"""The cl100k token sizer reads more exact span sizes off the whole-text stream (issue #27): the same
sizes, chunks and ids as before.

``_exact_one`` used to encode a span's head and tail (before its first and after its last letter end)
alone; now a head or tail that starts or ends inside a letter run at a stream token boundary is read
off the stream (`kireme.length._TokenSizer._letters_from_stream`). Texts of up to a million characters
are encoded in one go, without threads. The frozen copy of the old ``_exact_one`` below is the
reference: every span size, and every chunk of every strategy (ids included), must be what it gives,
on Japanese, English, unpunctuated kana/kanji runs, emoji, combining marks and CRLF text, with the
read-off as configured and with it forced on for heads and tails of any length. Where the old sizes
are not what encoding the span gives (letters newer than tiktoken's Unicode tables, U+323B0), the new
ones are the old ones still.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.strategies import texts

from kireme import Chunk, length, make_chunker
from kireme.length import _encoding, _TokenSizer

# ------------------------------------------------------------------------------ REFERENCE (frozen)
_LETTER_END = regex.compile(r"(?<=\p{L})(?=\P{L})")
_LAST_LETTER_END = regex.compile(r"(?r)(?<=\p{L})(?=\P{L})")


def reference_exact_one(self: _TokenSizer, a: int, b: int) -> int:
    """REFERENCE: ``_TokenSizer._exact_one`` as it was before issue #27, frozen. Do not edit."""
    enc = _encoding()
    text = self._text
    head = _LETTER_END.search(text, a + 1, b)
    tail = _LAST_LETTER_END.search(text, a + 1, min(len(text), b + 1))
    if head is None or tail is None or head.start() > tail.start():
        return len(enc.encode_ordinary(text[a:b]))
    x, y = head.start(), tail.start()
    return (
        len(enc.encode_ordinary(text[a:x]))
        + (self._before(y) - self._before(x))
        + len(enc.encode_ordinary(text[y:b]))
    )


# ------------------------------------------------------------------------------------- texts
_KANA_KANJI = "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをん"
_KANA_KANJI += (
    "アイウエオカキクケコサシスセソタチツテト旅費規程出張宿泊精算申請者上限額東京大阪日本語文章段落"
)
_WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "mat",
    "tokenization",
    "internationalisation",
    "don't",
    "they're",
    "we'll",
    "I'M",
    "'s",
    "O'Reilly",
    "naïve",
    "café",
    "e\u0301",
    "ſt",
]
_SEPARATORS = [" ", "  ", ", ", ". ", "\n", "\n\n", "\r\n", "\r\n\r\n", "\t", "'", "! ", " 42 ", "…"]
_MARKS = [
    "\u0301",
    "\u3099",
    "👍🏽",
    "👨\u200d👩\u200d👧",
    "🇯🇵",
    "\u200d",
    "\ufe0f",
    "。",
    "、",
    "「",
    "」",
    "１０",
]


def _runs(alphabet: str, max_run: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=1, max_size=max_run)


unpunctuated = st.lists(
    st.one_of(_runs(_KANA_KANJI, 400), st.sampled_from(["\n", "\n\n", "\r\n", " ", "。"])),
    min_size=1,
    max_size=8,
).map("".join)
english = st.lists(
    st.one_of(st.sampled_from(_WORDS), st.sampled_from(_SEPARATORS), _runs("abcdefghijklmnopqrstuvwxyz", 60)),
    min_size=1,
    max_size=120,
).map("".join)
mixed = st.lists(
    st.one_of(
        _runs(_KANA_KANJI, 200),
        st.sampled_from(_WORDS + _SEPARATORS + _MARKS),
        _runs("abcXYZ'é\u0301 \n", 20),
    ),
    min_size=1,
    max_size=80,
).map("".join)
any_text = st.one_of(unpunctuated, english, mixed, texts)


@contextmanager
def _reference_sizer() -> Iterator[None]:
    """The old span sizes in place of the new, and the old parallel threshold."""
    new_exact, new_min = _TokenSizer._exact_one, length._PARALLEL_MIN_CHARS
    _TokenSizer._exact_one = reference_exact_one  # type: ignore[method-assign]
    length._PARALLEL_MIN_CHARS = 200_000
    try:
        yield
    finally:
        _TokenSizer._exact_one = new_exact  # type: ignore[method-assign]
        length._PARALLEL_MIN_CHARS = new_min


def _fresh_sizer(text: str) -> _TokenSizer:
    return _TokenSizer(text)


# ------------------------------------------------------------------------------------- spans
@pytest.fixture(params=["default", "always"])
def read_off(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """As configured, and with heads and tails of any length read off the stream where they may be."""
    if request.param == "always":
        monkeypatch.setattr(length, "_READ_OFF_MIN_CHARS", 0)


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(any_text, st.data())
def test_exact_span_sizes_equal_the_reference(read_off: None, text: str, data: st.DataObject) -> None:
    sizer = _fresh_sizer(text)
    n = len(text)
    spans = [(0, n)]
    starts = list(sizer._starts)
    for _ in range(12):
        # chunk edges are mostly where stream tokens start (snap): draw those often, and any position too
        pick = st.one_of(st.integers(0, n), st.sampled_from([*starts, n]) if starts else st.just(n))
        a, b = sorted((data.draw(pick), data.draw(pick)))
        if a < b:
            spans.append((a, b))
    got = [sizer._exact_one(a, b) for a, b in spans]
    want = [reference_exact_one(sizer, a, b) for a, b in spans]
    assert got == want, [(s, g, w) for s, g, w in zip(spans, got, want, strict=True) if g != w]


def test_every_span_of_unpunctuated_text_equals_the_reference(read_off: None) -> None:
    """Edges at every stream token start of a long kana/kanji run, with runs of other letters around."""
    text = ("旅費規程について申請者は上限額および宿泊の精算をしなければならない" * 6) + "。\n\n"
    text += "東京大阪出張" * 30 + " the internationalisation of tokenization\r\nthey're here"
    sizer = _fresh_sizer(text)
    starts = sorted({s for s, f in zip(sizer._starts, sizer._flags, strict=True) if f} | {len(text)})
    for a in starts[::3]:
        for b in starts[::7]:
            if a < b:
                assert sizer._exact_one(a, b) == reference_exact_one(sizer, a, b), (a, b)


def test_heads_and_tails_inside_words_equal_their_encoding(read_off: None) -> None:
    """Spans that start and end at every position of long English words, alone and after a space."""
    enc = _encoding()
    for word in ("internationalization", "tokenization", "understanding", "responsibilities"):
        text = "x" + word + " end, " + word + word + "s"
        sizer = _fresh_sizer(text)
        for a in range(1, len(word) + 1):
            for b in (len(word) + 1, len(word) + 6, len(text) - 7, len(text) - 1 - a):
                if a < b:
                    assert sizer._exact_one(a, b) == len(enc.encode_ordinary(text[a:b])), (text, a, b)


@pytest.mark.parametrize(
    "text",
    [
        "0\U000323b0:A",  # a letter to `regex` (Unicode 17), none to tiktoken's tables
        "旅費規程について\U000323b0申請者は上限額および宿泊の精算をしなければならない。" * 4,
        "\U000323b0" * 40 + "\n\n" + "宿泊費の精算" * 10 + "\U000323b0" * 30,
    ],
)
def test_letters_newer_than_tiktoken_keep_the_reference_sizes(read_off: None, text: str) -> None:
    sizer = _fresh_sizer(text)
    for a in range(len(text)):
        for b in range(a + 1, len(text) + 1, 3):
            assert sizer._exact_one(a, b) == reference_exact_one(sizer, a, b), (a, b)


def test_is_token_looks_the_piece_up() -> None:
    assert length._is_token("hello")
    assert length._is_token(" the")
    assert not length._is_token("qzxjqzxj")
    assert not length._is_token("あ" * 200)  # longer than any token


class _CountingEncoding:
    """The cl100k encoding, counting ``encode_ordinary`` calls."""

    def __init__(self) -> None:
        self.inner = _encoding()
        self.calls = 0

    def encode_ordinary(self, text: str) -> list[int]:
        self.calls += 1
        return self.inner.encode_ordinary(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def test_spans_inside_kana_and_kanji_runs_are_not_encoded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of issue #27's change: a chunk of unpunctuated Japanese cut at stream tokens is
    measured with no encoding (it used to encode everything up to the end of the run it starts in)."""
    run = "旅費規程について申請者は上限額および宿泊の精算をしなければならない" * 8
    text = run + "\n\n" + run + "\n\n" + run
    sizer = _fresh_sizer(text)
    counting = _CountingEncoding()
    monkeypatch.setattr(length, "_encoding", lambda: counting)
    starts = [s for s, f in zip(sizer._starts, sizer._flags, strict=True) if f]
    inside = [s for s in starts if 40 < s < len(run) - 40 or len(run) + 42 < s < 2 * len(run)]
    spans = [(inside[0], inside[-1]), (inside[3], inside[len(inside) // 2]), (inside[5], len(text))]
    for a, b in spans:
        assert sizer._exact_one(a, b) == reference_exact_one(sizer, a, b), (a, b)
    counting.calls = 0
    for a, b in spans:
        sizer._exact_one(a, b)
    assert counting.calls == 0


# ------------------------------------------------------------------------------------ chunks
def _cut(strategy: str, text: str, max_size: int, overlap: int) -> list[tuple[int, int, int, str]]:
    chunks: list[Chunk] = make_chunker(strategy, unit="tokens", max_size=max_size, overlap=overlap).chunk(
        text
    )
    return [(c.start, c.end, c.size, c.id) for c in chunks]


def _both(cut: Callable[[], list[tuple[int, int, int, str]]]) -> tuple[list[tuple[int, int, int, str]], ...]:
    from kireme.text.caches import clear_text_caches

    clear_text_caches()
    new = cut()
    clear_text_caches()
    with _reference_sizer():
        old = cut()
    return new, old


@pytest.mark.parametrize("strategy", ["fixed", "recursive", "paragraph", "sentence"])
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(text=any_text, max_size=st.integers(8, 600), overlap_share=st.sampled_from([0, 0, 4, 8]))
def test_chunks_equal_the_reference(
    read_off: None, strategy: str, text: str, max_size: int, overlap_share: int
) -> None:
    overlap = max_size // overlap_share if overlap_share else 0
    new, old = _both(lambda: _cut(strategy, text, max_size, overlap))
    assert new == old


@pytest.mark.parametrize("strategy", ["fixed", "recursive", "paragraph", "sentence"])
def test_large_text_chunks_equal_the_reference(strategy: str) -> None:
    """A text over the old threshold for threads (now encoded in one go) and long letter runs."""
    part = ("旅費規程について申請者は上限額および宿泊の精算をしなければならない" * 40) + "\n"
    part += "The internationalisation of tokenization, they're saying.\r\n\r\n"
    text = part * (210_000 // len(part) + 1)
    new, old = _both(lambda: _cut(strategy, text, 512, 0))
    assert new == old


def test_parts_encoded_in_threads_give_the_same_stream() -> None:
    text = ("出張の精算。\nThe cat sat.\n" * 20_000) + "end"
    whole = _fresh_sizer(text)
    saved = length._PARALLEL_MIN_CHARS, length._PART_CHARS
    length._PARALLEL_MIN_CHARS, length._PART_CHARS = 1000, 5000
    try:
        parts = _fresh_sizer(text)
    finally:
        length._PARALLEL_MIN_CHARS, length._PART_CHARS = saved
    assert bytes(parts._starts) == bytes(whole._starts)
    assert bytes(parts._flags) == bytes(whole._flags)
