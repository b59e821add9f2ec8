"""Guards for the core's sharp edges: regex syntax, window-independent boundaries, quotes and overlap.

Each test here stands for a bug that once shipped or nearly did: a set-operation pattern compiled in
the wrong syntax (it silently never matched a kanji), sentence cuts that depended on the window the
packer asked about (so an overlap could start inside 「…」), and fast scanners that must agree with the
patterns they replace.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from kireme import chunk
from kireme.text import graphemes
from kireme.text.patterns import compile_pattern, uses_set_operations
from kireme.text.sentences import (
    PARAGRAPH_BREAK,
    SentenceIndex,
    _breaks,
    _quoted_spans,
    first_sentence_cut,
    paragraph_cuts,
    sentence_cuts,
    sentence_index,
)

SRC = Path(__file__).resolve().parent.parent / "src" / "kireme"

# ----------------------------------------------------------------------------------- regex syntax


def _literal(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _set_operation_patterns_without_version1(tree: ast.AST) -> list[tuple[int, str]]:
    bad = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "compile" or not node.args:
            continue
        pattern = _literal(node.args[0])
        if pattern is None or not uses_set_operations(pattern):
            continue
        flags = ast.unparse(node.args[1]) if len(node.args) > 1 else ""
        flags += " ".join(ast.unparse(k.value) for k in node.keywords)
        if "VERSION1" not in flags and "V1" not in flags:
            bad.append((node.lineno, pattern))
    return bad


def test_every_set_operation_pattern_is_compiled_with_version1() -> None:
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        offenders += [
            (str(path.relative_to(SRC)), *b) for b in _set_operation_patterns_without_version1(tree)
        ]
    assert offenders == []


def test_the_syntax_check_catches_the_old_bug() -> None:
    old = 'import regex\n_OTHER = regex.compile(r"[\\p{Grapheme_Cluster_Break=Other}&&[^\\p{InCB=Consonant}]]")\n'
    assert _set_operation_patterns_without_version1(ast.parse(old)) != []


def test_class_other_recognises_japanese_and_english() -> None:
    for ch in "あア漢。、aZ 1":
        assert graphemes._is_other(ch), ch
    for ch in "\u0301\u200d\U0001f1ef\u1100":  # combining mark, ZWJ, regional indicator, jamo
        assert not graphemes._is_other(ch), ch


def test_compile_pattern_switches_syntax_only_for_set_operations() -> None:
    assert compile_pattern(r"[\p{Han}&&[^一]]").match("漢")
    assert not compile_pattern(r"[\p{Han}&&[^一]]").match("一")
    assert compile_pattern(r"a&&b").match("a&&b")  # outside a class "&&" is literal in every syntax
    assert compile_pattern(r"[a-z]+").flags & regex.VERSION1 == 0


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="e\u0301\u0308aあ\n\r", min_size=0, max_size=1200), st.data())
def test_floor_boundary_is_a_real_boundary_beyond_the_backtrack_limit(text: str, data) -> None:
    """Long runs without a safe pair fall back to the text's own boundaries: still exact."""
    graphemes._all_boundaries.cache_clear()
    truth = graphemes.boundaries(text)
    p = data.draw(st.integers(0, len(text)))
    expected = max(b for b in truth if b <= p)
    assert graphemes.floor_boundary(text, p) == expected


def test_floor_boundary_after_a_thousand_combining_marks() -> None:
    text = "あ" + "e" + "\u0301" * 1000 + "い"
    graphemes._all_boundaries.cache_clear()
    assert graphemes.floor_boundary(text, 500) == 1
    assert graphemes.ceil_boundary(text, 500) == 1002


# --------------------------------------------------------------------- window-independent boundaries

_PIECES = [
    "彼は",
    "「",
    "」",
    "（",
    "）",
    "今日は晴れ",
    "。",
    "、",
    "と言った",
    "\n",
    "\n\n",
    "\r\n",
    "・項目",
    "1. ",
    "第3条",
    "The cat sat",
    ". ",
    "Dr. Smith",
    "? ",
    "  ",
]
_texts = st.lists(st.sampled_from(_PIECES), max_size=60).map("".join)


@settings(max_examples=150, deadline=None)
@given(_texts, st.data())
def test_sentence_cuts_do_not_depend_on_the_window(text: str, data) -> None:
    a = data.draw(st.integers(0, len(text)))
    b = data.draw(st.integers(a, len(text)))
    whole = sentence_cuts(text)
    assert sentence_cuts(text, a, b) == [c for c in whole if a < c < b]


@settings(max_examples=150, deadline=None)
@given(_texts, st.data())
def test_windows_asked_in_any_order_give_the_whole_texts_cuts(text: str, data) -> None:
    """A fresh index asked about windows out of order (blocks scanned after blocks further on) keeps its
    cuts and quotations in order: each window and each first cut is what the whole text gives."""
    reference = SentenceIndex(text)
    whole = reference.cuts(0, len(text))
    index = SentenceIndex(text)
    for _ in range(data.draw(st.integers(1, 6))):
        a = data.draw(st.integers(0, len(text)))
        b = data.draw(st.integers(a, len(text)))
        inside = [c for c in whole if a < c < b]
        if data.draw(st.booleans()):
            assert index.first_cut(a, b) == (inside[0] if inside else None)
        else:
            assert index.cuts(a, b) == inside
    assert index.cuts(0, len(text)) == whole
    assert index._quotes == reference._quotes


def test_quotes_of_blocks_scanned_out_of_order_stay_in_order() -> None:
    block = "課長は「申請は前日までに行う。宿泊費は上限内で精算する。」と述べた。次の文です。"
    text = "\n\n".join([block] * 4)
    reference = SentenceIndex(text)
    whole = reference.cuts(0, len(text))
    index = SentenceIndex(text)
    third = 2 * (len(block) + 2)
    assert index.first_cut(third, len(text)) == next(c for c in whole if c > third)
    assert index.cuts(0, len(block)) == [c for c in whole if c < len(block)]
    assert index.cuts(0, len(text)) == whole
    assert index._quotes == reference._quotes
    inside = text.index("宿泊費")
    assert all(index.inside_quote(inside + k * (len(block) + 2)) for k in range(4))


@settings(max_examples=150, deadline=None)
@given(_texts, st.data())
def test_first_sentence_cut_is_the_first_of_the_window(text: str, data) -> None:
    a = data.draw(st.integers(0, len(text)))
    b = data.draw(st.integers(a, len(text)))
    inside = sentence_cuts(text, a, b)
    assert first_sentence_cut(text, a, b) == (inside[0] if inside else None)


@settings(max_examples=150, deadline=None)
@given(_texts, st.data())
def test_paragraph_cuts_do_not_depend_on_the_window(text: str, data) -> None:
    a = data.draw(st.integers(0, len(text)))
    b = data.draw(st.integers(a, len(text)))
    assert paragraph_cuts(text, a, b) == [c for c in paragraph_cuts(text) if a < c < b]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from([*_PIECES, "\r", "\u3000", "【注】", "（1）", "①", "- ", "-x", "+ ", "*"]),
        max_size=50,
    )
)
def test_fast_paragraph_scanner_agrees_with_the_pattern(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert _breaks(text).paragraphs == tuple(m.start() for m in PARAGRAPH_BREAK.finditer(text))


def test_a_blank_line_ends_a_sentence() -> None:
    text = "見出し\n\n本文です。次の文。"
    assert sentence_cuts(text) == [5, 10]


# ------------------------------------------------------------------------------ quotes and overlap

_SENTENCES = [
    "課長は「申請は前日までに行うこと。宿泊費は上限内で精算すること。」と説明した。",
    "「はい、わかりました。」",
    "部長（当時、営業部）が承認した。",
    "旅費は実費とする。",
    "規程は『出張旅費規程。第2版。』による。",
    "次に進む。",
]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.sampled_from(_SENTENCES), min_size=2, max_size=14),
    st.sampled_from(["", "\n", "\n\n"]),
    st.integers(0, 10_000),
)
def test_no_chunk_starts_inside_a_protected_quote(sentences: list[str], sep: str, seed: int) -> None:
    """Overlap included: quotations (shorter than the budget) are never entered from the side."""
    text = sep.join(sentences)
    longest = max(len(s) for s in sentences)
    overlap = 8 + seed % 20
    max_size = longest + overlap + seed % 30
    quotes = _quoted_spans(text, 0, len(text))
    for strategy in ("sentence", "paragraph", "recursive"):
        chunks = chunk(text, strategy, max_size=max_size, overlap=overlap)
        for c in chunks:
            inside = [q for q in quotes if q[0] < c.start <= q[1]]
            assert not inside, (strategy, c.start, c.text, inside)


def test_overlap_example_from_the_issue() -> None:
    text = "".join(itertools.repeat(_SENTENCES[0], 6))
    chunks = chunk(text, "sentence", max_size=60, overlap=14)
    index = sentence_index(text)
    assert len(chunks) > 2
    assert any(c.start < p.end for p, c in itertools.pairwise(chunks))  # overlap does happen
    assert not any(index.inside_quote(c.start) for c in chunks)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "第2条",
                "（宿泊費）",
                "# ",
                "## x",
                "#",
                "#######",
                " ",
                "\u3000",
                "\t",
                "\r",
                "\xa0",
                "\x1c",
                "。",
                "、",
                "…",
                ".",
                "!",
                "」",
                "』",
                ")",
                "】",
                "・",
                "- ",
                "|",
                ">",
                "a",
                "x" * 20,
                ":",
                "：",
                "田中",
                "第1条",
                "7",
                "[10:17]",
                "？",
                "次のとおりとする。",
                "as follows.",
                "Cell culture.",
                "2.1 Scope.",
                "\n",
                "\n\n",
            ]
        ),
        max_size=14,
    ),
    st.data(),
)
def test_fast_heading_test_agrees_with_the_line_rule(pieces: list[str], data) -> None:
    from kireme.text.headings import (
        _MARKDOWN_HEADING,
        _ends_line,
        ends_with_heading,
        in_dialogue,
        in_list,
        is_heading_line,
        is_lead_in_line,
        line_before,
        titled_paragraph_line,
    )

    text = "".join(pieces)
    pos = data.draw(st.integers(-1, len(text) + 1))
    at_line_end = 0 < pos <= len(text) and ("\n" in text[pos - 1 : pos + 1] or _ends_line(text, pos))
    line = line_before(text, pos) if at_line_end else ""
    heading = is_heading_line(line)
    if heading and _MARKDOWN_HEADING.match(line.strip()) is None:  # a speaker's turn next to another: none
        end = pos
        while end > 0 and text[end - 1].isspace():
            end -= 1
        heading = not in_dialogue(text, text.rfind("\n", 0, end) + 1, end)
    if at_line_end and not heading and line.rstrip().endswith((".", "．")):  # a paragraph's title with a stop
        end = pos
        while end > 0 and text[end - 1].isspace():
            end -= 1
        start = text.rfind("\n", 0, end) + 1
        heading = titled_paragraph_line(text, start, end) and not in_list(text, start, end)
    assert ends_with_heading(text, pos) == (at_line_end and (heading or is_lead_in_line(line)))


# ------------------------------------------------------------------------------------ token offsets

_TOKEN_PIECES = [
    "今日は晴れ。",
    "𠮷野家",
    "👨‍👩‍👧",
    "é",
    "ﾃﾞｰﾀ",
    "鬱",
    " a b",
    "Hello, world. ",
    "\n",
    "  ",
    "123",
    "ĳ",
]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_TOKEN_PIECES), min_size=1, max_size=12).map("".join), st.data())
def test_token_offsets_from_ids_agree_with_the_bytes(text: str, data) -> None:
    """The sizer reads character offsets off the token ids (`_token_char_tables`); the reference reads
    them off the UTF-8 bytes, as it once did. Spans are then measured exactly as encoded alone."""
    import numpy as np

    from kireme import length

    sizer = length._TokenSizer(text)
    enc = length._encoding()
    tokens = enc.encode_ordinary(text)
    raw = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    is_start = (raw & 0xC0) != 0x80
    char_of_byte = np.cumsum(is_start) - 1
    byte_starts = np.cumsum([0] + [len(enc.decode_single_token_bytes(t)) for t in tokens])[:-1]
    assert list(sizer._starts) == [int(char_of_byte[b]) for b in byte_starts]
    exact = sorted({int(char_of_byte[b]) for b in byte_starts if is_start[b]})
    a = data.draw(st.integers(0, len(text)))
    b = data.draw(st.integers(a, len(text)))
    assert sizer._straddle(a) == (0 if a >= len(text) or a in exact else 1)
    before = [c for c in exact if c <= b]
    expected = before[-1] if before and a < before[-1] and b - before[-1] < 64 else b
    assert sizer.snap(b, a) == expected
    if a < b:
        assert sizer.exact([(a, b)]) == [len(enc.encode_ordinary(text[a:b]))]


def test_clearing_the_text_caches_forgets_every_text() -> None:
    from kireme.text import graphemes, markdown, sentences
    from kireme.text.caches import clear_text_caches

    text = "# 見出し\n\n本文です。次の文。\n\n・項目\n"
    chunk(text, "sentence", max_size=5)
    markdown.markdown_headings(text)
    clear_text_caches()
    for cached in (markdown._outline, sentences.sentence_index, sentences._breaks, graphemes._all_boundaries):
        assert cached.cache_info().currsize == 0
