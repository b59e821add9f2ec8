"""The optional C extension (`kireme._speedups`) answers exactly what the pure-Python code answers.

Issue #27 allows a compiled core on two conditions: the pure-Python path stays the reference and the
fallback, and a property test proves both give identical chunks and ids. The text layer's per-character
loops run in C when the extension is built: the sentence scanner's quotations and candidate ends, item
lines, paragraph breaks, the heading test at a chunk end, whitespace trimming, the greedy packer's loop in
characters, the chunk objects with their ids, and the line and script levels' cuts. These tests run each C
function and its Python twin on the same generated Japanese and English text, and chunk with four
strategies both ways, ids included. Where the extension is not built (no C compiler at install time)
they skip, and kireme runs in pure Python.
"""

from __future__ import annotations

import array
import hashlib
import itertools
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import regex
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.strategies import markdown_texts, text_and_window
from tests.strategies import texts as mixed_texts

import kireme.document as document_module
import kireme.length as length_module
from kireme import Document, chunkers, make_chunker, pack
from kireme.boundaries import levels
from kireme.boundaries.levels import CLAUSE, LINE, QUOTED_SENTENCE, SCRIPT, SENTENCE_LINE, WORD
from kireme.document import NO_METADATA, Chunk, ChunkIds, Region
from kireme.pack import PackedSpan
from kireme.structure import layout
from kireme.text import (
    articles,
    divisions,
    graphemes,
    headings,
    leads,
    markdown,
    openers,
    sentences,
    underlines,
    wikitext,
)
from kireme.text.caches import clear_text_caches
from kireme.text.graphemes import SIMPLE_CHARS
from kireme.text.marks import CLOSERS, OPEN_TO_CLOSE, TERMINATORS

native = pytest.importorskip(
    "kireme._speedups", reason="kireme._speedups is not built (no C compiler at install?)"
)

# Everything the scanner treats specially, densely: every terminator, closer and bracket, the particles
# after a closing quote, digits before "．", periods in English, item lines, blank lines, "\r\n", the
# information separators U+001C..U+001F (whitespace to `str.isspace`, not to the `regex` engine).
_MARKS = [*TERMINATORS, *CLOSERS, *OPEN_TO_CLOSE, "．", ".", "..", "...", "．．"]
_WORDS = [
    "今日は晴れです",
    "と",
    "って",
    "という",
    "の",
    "より",
    "から",
    "まで",
    "など",
    "か、",
    "か。",
    "かな",
    "会議室",
    "9",
    "９",
    "3.5",
    "第2条",
    "Dr",
    "e.g",
    "U.S",
    "He said",
    "the end",
    "When",
    "i",
    "A",
    "a",
    # the period rules: abbreviations (those that may end a sentence too), initials, list numbers, acronyms,
    # words and next characters in other scripts (full-width, accented, superscript: left to Python)
    "etc",
    "a.m",
    "Prof",
    "J",
    "R",
    "Smith",
    "method B",
    "ph.d",
    "$6.25",
    "12",
    "1234",
    "No",
    "°C",
    "café",
    "Ｘ",
    "２",
    "x²",
    "次に",
    "「",
    "(",
    "〇",
    "—",
    "ß",
    # "!" and "?" inside markup, code and URLs (`_inside_token`): what comes before and after them
    "<",
    "=",
    "[",
    "/",
    "`",
    ";",
    "id_2",
    # item, title and label lines
    "【見出し】",
    "【",
    "】",
    "第",
    "第3条",
    "第十二章",
    "第百",
    "千",
    "（1）",
    "(a)",
    "(ｱ)",
    "(abcd)",
    "（イ）",
    "①",
    "⑳",
    "・",
    "※",
    "- ",
    "-",
    "* ",
    "+\t",
    "1234.",
    "12)",
    "１．",
    "label:",
    "項目：",
    "とても長いラベルの名前ですね：",
    # a wrapped English line that only looks like a label (`_label_wrap`): a long line ending inside a
    # sentence, then a lower-case word, a colon and a space
    "both owners try to release the same buffer and this is a",
    "problem: ",
    "step-2:\t",
    "x_y: ",
    "well,",
    # numbers a last-resort cut keeps whole (`_outside_number`): dates, times, signs before amounts
    "2024/04/01",
    "10:30",
    "03-1234",
    "¥3,000",
    "＄１２",
    "一　嘱託社員",
    # numbered FAQ labels (`_period_ends`), the full stops of other scripts, units inside numbers
    "Q3.",
    "A12.",
    " et al. (",
    " Sec. 4",
    " art. ",
    "[12]",
    "Q3.14",
    "।",
    "؟",
    "۔",
    "2026年12月6日",
    "1万2千円",
    "10時30分",
]
_SPACES = [
    " ",
    "  ",
    "\t",
    "\u3000",
    "\n",
    "\n\n",
    "\r\n",
    "\r\n\r\n",
    "\x1c",
    "\x1f",
    "\x85",
    "\u2028",
    "\n1. ",
    "\n・",
    "\n \t\u3000\r\n",
    "\n \n",
    "\r",
]
dense_texts = st.lists(st.sampled_from(_MARKS + _WORDS + _SPACES), max_size=80).map("".join)
# The C loops read each kind of string (one, two or four bytes per character) on its own code unit type:
# the pieces that fit in Latin-1 alone, and dense text with a character beyond the BMP somewhere in it.
_LATIN1 = [piece for piece in _MARKS + _WORDS + _SPACES if max(map(ord, piece)) < 0x100]
latin1_texts = st.lists(st.sampled_from(_LATIN1), max_size=80).map("".join)
astral_texts = st.tuples(dense_texts, st.sampled_from(["𠮷", "😀"]), st.integers(0, 400)).map(
    lambda case: case[0][: case[2]] + case[1] + case[0][case[2] :]
)
scanned_texts = st.one_of(dense_texts, mixed_texts, latin1_texts, astral_texts)


# Where the library holds each function the extension speeds up: (module, name, the C one, the Python one;
# None where the Python path is taken when the name holds None).
SWITCHES = [
    (sentences, "_NATIVE_SCAN", native.scan_sentence_cuts, None),
    (sentences, "_NATIVE_PERIODS", native.judge_periods, None),
    (sentences, "_NATIVE_LINE_BREAKS", native.line_break_cuts, None),
    (sentences, "_NATIVE_BREAKS", native.paragraph_breaks, None),
    (sentences, "_NATIVE_RUN", native.scan_run, None),
    (sentences, "_item_line_starts", native.item_line_starts, sentences._item_line_starts_python),
    (headings, "ends_with_heading", native.ends_with_heading, headings._ends_with_heading_python),
    (pack, "ends_with_heading", native.ends_with_heading, headings._ends_with_heading_python),
    (pack, "_NATIVE_TRIM", native.trim_span, None),
    (chunkers, "_NATIVE_CHUNKS", native.make_chunks, None),
    (Chunk, "id", native.IdField("id"), document_module._FromIds("id")),
    (Chunk, "doc_id", native.IdField("doc_id"), document_module._FromIds("doc_id")),
    (graphemes, "_NATIVE_ALL_SIMPLE", native.all_simple, None),
    (pack, "_NATIVE_MERGE", native.merge_run, None),
    (levels, "_NATIVE_PAIR_CUTS", native.pair_cuts, None),
    (levels, "_NATIVE_LINE_CUTS", native.line_cuts, None),
    (pack, "_NATIVE_WINDOWS", native.char_windows, None),
    (pack, "_NATIVE_PACKED", native.char_packed, None),
    (pack, "_NATIVE_BACK", native.optimal_back, None),
    (levels, "_NATIVE_SENTENCE_LINES", native.sentence_line_breaks, None),
    (levels, "_NATIVE_DROP", native.drop_inside, None),
    (levels, "_NATIVE_CLAUSE_CUTS", native.clause_cuts, None),
    (levels, "_NATIVE_WORD_CUTS", native.word_cuts, None),
    (levels, "_NATIVE_QUOTED_ENDS", native.quoted_ends, None),
    (levels, "_NATIVE_KEPT_BRACKETS", native.kept_brackets, None),
    (length_module, "_NATIVE_TOKEN_OFFSETS", native.token_offsets, None),
    (markdown, "line_starts", native.line_starts, markdown._line_starts_python),
    (
        markdown,
        "_plain_paragraph_starts",
        native.plain_paragraph_starts,
        markdown._plain_paragraph_starts_python,
    ),
    (layout, "line_starts", native.line_starts, markdown._line_starts_python),
    (markdown, "_NATIVE_LINE_MARKS", native.line_marks, None),
    (leads, "_NATIVE_LINE_END_MARKS", native.line_end_marks, None),
    (markdown, "_delimiter_lines", native.delimiter_lines, markdown._delimiter_lines_python),
    (openers, "_heading_lines", native.heading_lines, openers._heading_lines_python),
]


@contextmanager
def scanner(c: bool) -> Iterator[None]:
    """Every function the extension speeds up in its C version (``c``) or its pure-Python one, with the
    per-text caches cleared (the modules that bound a function at import are switched too)."""
    saved = [getattr(module, name) for module, name, _, _ in SWITCHES]
    for module, name, in_c, in_python in SWITCHES:
        setattr(module, name, in_c if c else in_python)
    clear_text_caches()
    try:
        yield
    finally:
        for (module, name, _, _), value in zip(SWITCHES, saved, strict=True):
            setattr(module, name, value)
        clear_text_caches()


def _same(used: object, function: object) -> bool:
    """``used`` is the extension's ``function`` (for the id descriptors: one of its `IdField`s)."""
    return used is function or (isinstance(function, native.IdField) and isinstance(used, native.IdField))


def test_the_library_uses_the_extension_when_it_is_built() -> None:
    in_c = [(getattr(module, name), function) for module, name, function, _ in SWITCHES]
    if os.environ.get("KIREME_PURE_PYTHON", "") not in ("", "0"):  # turned off: not one of them is used
        assert not any(_same(used, function) for used, function in in_c)
    else:
        assert all(_same(used, function) for used, function in in_c)


def test_the_compiled_reference_words_are_the_python_ones() -> None:
    assert native.reference_words() == sentences._REFERENCE_WORDS
    assert native.label_words() == sentences._LABEL_WORDS


def test_the_compiled_marks_are_the_vocabulary() -> None:
    terminators, closers, openers, their_closers = native.vocabulary()
    assert terminators == TERMINATORS
    assert closers == CLOSERS
    assert openers == "".join(OPEN_TO_CLOSE)
    assert their_closers == "".join(OPEN_TO_CLOSE.values())


@given(st.one_of(scanned_texts, st.text(max_size=80)))
def test_token_tables_in_c_equal_the_numpy_ones(text: str) -> None:
    """Where each token of the stream starts, for any text (characters of one to four UTF-8 bytes, a token
    that starts inside a character): the numpy steps and the one C pass agree."""
    if not text:
        return
    with scanner(c=True):  # the C pass, even where kireme runs in pure Python (KIREME_PURE_PYTHON=1)
        starts, flags = length_module._token_tables_native(text)
    numpy_starts, numpy_flags = length_module._token_tables_numpy(text)
    assert list(starts) == list(numpy_starts) and list(flags) == list(numpy_flags)


def test_token_tables_in_c_refuse_an_id_beyond_them() -> None:
    counts, firsts, _ = length_module._token_char_tables()
    ids = array.array("I", [0, len(counts)])
    with pytest.raises(ValueError, match="not in the tables"):
        native.token_offsets(ids, counts, firsts)
    with pytest.raises(ValueError, match="4-byte"):
        native.token_offsets(b"abc", counts, firsts)


@pytest.mark.parametrize("strategy", ["fixed", "recursive", "paragraph", "sentence"])
@given(text=st.one_of(scanned_texts, markdown_texts), size=st.sampled_from([8, 30, 120]))
def test_token_chunks_are_the_same_either_way(strategy: str, text: str, size: int) -> None:
    chunker = make_chunker(strategy, max_size=size, unit="tokens")
    with scanner(c=False):
        expected = chunker.chunk(text)
    with scanner(c=True):
        assert chunker.chunk(text) == expected


_LINE_END_TEXTS = st.text(alphabet=" \t\r\n\u3000:：?？.．aZ名_-", max_size=50)


@settings(max_examples=1500, deadline=None)
@given(text=_LINE_END_TEXTS, lo=st.integers(0, 55), hi=st.integers(0, 55))
@example("a:\r \n", 0, 5)  # a "\r" before blanks: the C look back takes it, the lead-in pattern does not
@example("Cell.\u3000\nbody", 0, 11)
@example("x?", 0, 2)  # the end of the window ends the line
def test_marks_at_line_ends_in_c_find_what_the_patterns_find(text: str, lo: int, hi: int) -> None:
    """`leads._at_line_ends` with the marks that end a line found in C (`line_end_marks`, then each pattern
    tried there) gives the matches of searching each pattern through ``[lo, hi)``, for the three kinds
    of line end the lead-in rules read: a lead-in with the blank lines after it, a lead-in line's end, a
    paragraph title's full stop."""
    families = [
        dict(zip(leads._MARKS, leads._LEAD_IN_ENDS, strict=True)),
        dict(zip(leads._MARKS, leads._LEAD_IN_LINE_ENDS, strict=True)),
        dict(zip(".．", leads._TITLE_STOPS, strict=True)),
    ]
    for patterns in families:
        with scanner(c=False):
            expected = [m.span() for m in leads._at_line_ends(text, lo, hi, patterns)]
        with scanner(c=True):
            assert [m.span() for m in leads._at_line_ends(text, lo, hi, patterns)] == expected


_DELIMITER_TEXTS = st.text(alphabet=" \t\r\n|-:a表😀", max_size=40)


@settings(max_examples=1000, deadline=None)
@given(text=_DELIMITER_TEXTS)
@example("a\n |--\r")  # a carriage return at the end of the text
@example("a\n|-\rx\n")  # a carriage return inside the line: no delimiter row
def test_delimiter_rows_in_c_are_the_patterns(text: str) -> None:
    """`delimiter_lines` (C) finds the line feed before each line `_DELIMITER_LINE` matches, in texts
    of one, two and four bytes a character; and a plain text's tables are the same either way."""
    assert native.delimiter_lines(text) == markdown._delimiter_lines_python(text)
    with scanner(c=False):
        expected = markdown.plain_text_tables(text)
    with scanner(c=True):
        assert markdown.plain_text_tables(text) == expected


@given(scanned_texts)
def test_paragraph_breaks_in_c_equal_the_python_ones(text: str) -> None:
    starts, blocks, items = native.paragraph_breaks(text)
    assert sentences._breaks_python(text) == (tuple(starts), blocks, items)


@given(text_and_window(scanned_texts))
def test_item_lines_in_c_equal_the_python_ones(case: tuple[str, int, int]) -> None:
    text, a, b = case
    assert native.item_line_starts(text, a, b) == sentences._item_line_starts_python(text, a, b)


heading_texts = st.one_of(
    scanned_texts,
    st.lists(
        st.sampled_from(
            [
                "# ",
                "###### ",
                "####### ",
                "#",
                "##\t",
                "第2条（宿泊費）",
                "はい。」",
                "見出し",
                "a" * 41,
                "===",
                "-----",
                "~~~~~~~~~~~~",
                "^^",
                "Hotels",
                "経費の精算",
                "  ",
                "・",
                "> ",
                "|",
                "-",
                "…",
                "、",
                ":",
                "：",
                "次のとおり：",
                "休日は、次のとおりとする。",
                "十万円以下の罰金に処する。",
                "どうすればよいですか？",
                "Why?",
                "as follows.",
                "以上",
                "以　上",
                "以上の件",
                "田中",
                "Yamada",
                "第1条",
                "1",
                "１",
                "[10:17]",
                "]",
                "】",
                "x" * 58 + "次の",
                "（1）",
                "(a)",
                "（ア）",
                "（十）",
                "（1234）",
                "（一同うなずく）",
                "(laughter)",
                "（",
                "(",
                "田中：了解です",
                "2.",
                "３．",
                "4)",
                "3.14",
                "Cell culture.",
                "2.2 Requests.",
                "e.g. x.",
                "U.S.",
                "．",
                "土曜日",
                "」",
                "）",
                " ",
                "\u3000",
                "\r",
                "\n",
                "\n\n",
                "\r\n",
                "\t",
                "x",
            ]
        ),
        max_size=30,
    ).map("".join),
)


@given(text_and_window(scanned_texts))
def test_trim_in_c_equals_the_python_one(case: tuple[str, int, int]) -> None:
    text, a, b = case
    for lo, hi in ((a, b), (b, a), (a - 1, b), (a, b + 1)):
        span = native.trim_span(text, lo, hi, SIMPLE_CHARS)
        if span is not None:
            assert span == pack._trim_python(text, lo, hi)
    with scanner(c=True):
        assert pack._trim(text, a, b) == pack._trim_python(text, a, b)


# Text where some cuts would split a cluster: combining marks, ZWJ sequences, regional indicators, CR LF,
# Hangul jamo, a Devanagari conjunct, beside plain kana and Latin letters.
_CLUSTER_PIECES = [
    *"あア漢ab \n",
    "\r",
    "\u0301",
    "\u200d",
    "\U0001f468",
    "\U0001f1ef",
    "\U0001f1f5",
    "\u1100",
    "\u1161",
    "\u0915",
    "\u094d",
]
_CLUSTER_TEXT = st.text(st.sampled_from(_CLUSTER_PIECES), max_size=30)


@given(_CLUSTER_TEXT, st.data())
def test_cut_filter_in_c_keeps_what_python_keeps(text: str, data: st.DataObject) -> None:
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(text)), max_size=8))))
    with scanner(c=True):
        in_c = graphemes.CutFilter(text).keep(list(cuts))
    with scanner(c=False):
        assert in_c == graphemes.CutFilter(text).keep(list(cuts))


def test_the_memo_of_simple_characters_belongs_to_the_set_it_was_read_from() -> None:
    """C remembers which characters it found in the set of simple characters; another set starts afresh."""
    both = {"交", "通"}
    assert native.all_simple("交通費", [1], both)
    assert native.all_simple("交通費", [1], both)  # read off the memo
    assert not native.all_simple("交通費", [1], {"交"})  # another set: 通 is not in it
    assert native.trim_span(" 交通", 0, 3, {" ", "交"}) == (1, 3)  # the new start lies between " " and 交
    assert native.trim_span(" 交通", 0, 3, {"交"}) is None  # " " was simple in the other set only
    assert native.all_simple("交通費", [1], both)


# Text for the last resort, windows of characters: the clusters above, amounts in both widths whose digits
# `_outside_number` keeps together, and whitespace at window edges.
_WINDOW_TEXT = st.text(st.sampled_from([*_CLUSTER_PIECES, *"\t\u3000", *"1２,．円"]), max_size=60)


@settings(max_examples=300)
@given(_WINDOW_TEXT, st.integers(1, 12), st.booleans())
def test_character_windows_in_c_are_the_python_windows(text: str, size: int, with_words: bool) -> None:
    """`char_windows`: the fixed strategy's windows, and the last resort under a level (then an amount is
    not cut after its digits), as `split_graphemes` cuts them."""
    from kireme.boundaries.levels import WORD
    from kireme.length import Chars

    chosen = [WORD] if with_words else []
    with scanner(c=True):
        in_c = pack.pack(text, chosen, Chars().for_text(text), max_size=size)
    with scanner(c=False):
        assert in_c == pack.pack(text, chosen, Chars().for_text(text), max_size=size)


def test_character_windows_in_c_cut_between_characters_and_keep_amounts_whole() -> None:
    from kireme.boundaries.levels import WORD
    from kireme.length import Chars

    text = "交通費は１２，０００円です" * 3
    with scanner(c=True):
        windows = pack.pack(text, [], Chars().for_text(text), max_size=8)
        under_a_level = pack.pack(text, [WORD], Chars().for_text(text), max_size=8)
    assert [w.end - w.start for w in windows] == [8] * 4 + [7]
    assert all(not text[w.end - 1].isdigit() or not text[w.end].isdigit() for w in under_a_level[:-1])
    with scanner(c=False):
        assert pack.pack(text, [WORD], Chars().for_text(text), max_size=8) == under_a_level


# Unspaced Japanese in every script the `script` level tells apart, with what sits at its edges: the
# iteration marks (々 is Han, ゝ hiragana), the long vowel mark and middle dot (Common), half-width katakana,
# kanji beyond the Basic Multilingual Plane (𠮷, 𩸽: the C scan hands such text back to the regex), and
# characters of other scripts.
_SCRIPT_TEXT = st.lists(
    st.sampled_from(list("はをゝゞゟぁ漢々〆〇アヽー・ｱﾞ㋐㌀𠮷𩸽𛀁a1、\n가α")),
    max_size=40,
).map("".join)


@given(text_and_window(_SCRIPT_TEXT))
def test_script_cuts_in_c_equal_the_regex_ones(case: tuple[str, int, int]) -> None:
    text, a, b = case
    expected = SCRIPT.reference.cuts(text, a, b)
    found = native.pair_cuts(text, a, b, *SCRIPT.bitmaps())
    if any(ord(c) > 0xFFFF for c in text[a:b]) and b - a > 1:
        assert found is None  # beyond the BMP: the regex decides
    else:
        assert found == expected
    with scanner(c=True):
        assert SCRIPT.cuts(text, a, b) == expected


@given(
    text_and_window(
        st.lists(st.sampled_from(["\r", "\n", "\r\n", "\n\r", "行", "a", " ", "𠮷"]), max_size=30).map(
            "".join
        )
    )
)
def test_line_cuts_in_c_equal_the_regex_ones(case: tuple[str, int, int]) -> None:
    text, a, b = case
    expected = LINE.reference.cuts(text, a, b)
    assert native.line_cuts(text, a, b) == expected
    with scanner(c=True):
        assert LINE.cuts(text, a, b) == expected


# Every character the clause and word levels look at, their neighbours in number and code, and others.
_CLAUSE_AND_WORD_CHARS = ["、", ";", "；", "，", ",", ":", "：", "1", "９", " ", "\t", "\u3000", "\xa0", "\n"]
clause_and_word_texts = st.lists(
    st.sampled_from(
        [*_CLAUSE_AND_WORD_CHARS, "語", "a", "-", "<", "=", "𠮷", "。", ", 2025", " 1999", "15", "2", "0"]
    ),
    max_size=40,
).map("".join)


@given(text_and_window(clause_and_word_texts))
def test_clause_and_word_cuts_in_c_equal_the_regex_ones(case: tuple[str, int, int]) -> None:
    text, a, b = case
    for level, scan in ((CLAUSE, native.clause_cuts), (WORD, native.word_cuts)):
        expected = level.reference.cuts(text, a, b)
        assert scan(text, a, b) == expected, level.name
        with scanner(c=True):
            assert level.cuts(text, a, b) == expected
        with scanner(c=False):
            assert level.cuts(text, a, b) == expected


def test_clause_and_word_cuts_on_written_text() -> None:
    text = "料金は１０，０００円、時刻は10:30です。Then, we  wait;\u3000next"
    assert [text[c - 1] for c in native.clause_cuts(text, 0, len(text))] == ["、", ",", ";"]
    # a date's comma is no clause's (it left "1," alone between "Apr." and "2025"); a list's is
    dates = "It starts on Apr. 1, 2025 and ends on January 15, 2026, as agreed; chapters 1, 2, 3."
    cuts = native.clause_cuts(dates, 0, len(dates))
    assert cuts == CLAUSE.reference.cuts(dates, 0, len(dates))
    assert [dates[:c].rsplit(" ", 1)[-1] for c in cuts] == ["2026,", "agreed;", "1,", "2,"]
    assert [text[c : c + 2] for c in native.word_cuts(text, 0, len(text))] == [" w", "  ", "\u3000n"]


quoted_texts = st.lists(
    st.sampled_from(
        ["。", "！", "？", "｡", "」", "』", "）", ")", "!", "?", "‼", " ", "\t", "\u3000", "\n", "語", "a"]
    ),
    max_size=30,
).map("".join)


@given(text_and_window(quoted_texts))
def test_quoted_sentence_ends_in_c_equal_the_regex_ones(case: tuple[str, int, int]) -> None:
    text, a, b = case
    expected = QUOTED_SENTENCE.reference(text, a, b)
    assert native.quoted_ends(text, a, b) == expected
    for c in (True, False):
        with scanner(c=c):
            assert QUOTED_SENTENCE.cuts(text, a, b) == expected


def test_quoted_sentence_ends_on_written_text() -> None:
    speech = "「行こう。急がないと。」と彼は言った。「本当？　間に合う！？」"
    cuts = native.quoted_ends(speech, 0, len(speech))
    # after each 。！？ run that closes nothing, the spaces after it included; none before 」 (it closes a quote)
    assert [speech[c] for c in cuts] == ["急", "「", "間"]
    assert cuts == QUOTED_SENTENCE.reference(speech, 0, len(speech))


# Lines of chats, transcripts, FAQs and headings: speakers' names before a colon, and colons that end none
_DIALOGUE_PIECES = [
    "田中：", "Bob Lee: ", "Alice:", "[10:17] ", "Yamada: ", "Q: ", "A：", "第1条：", "Step 1: ", "Note: ",
    "了解です", "yes, and", "ok", "。", "、", "\n", "\r\n", "\n\n", " ", "\u3000", "：", ":", "1", "(笑)",
]  # fmt: skip
dialogue_texts = st.lists(st.sampled_from(_DIALOGUE_PIECES), max_size=24).map("".join)


@given(text_and_window(dialogue_texts))
def test_clause_cuts_judge_speakers_names_in_c_as_python_does(case: tuple[str, int, int]) -> None:
    """The clause level's cuts with the speakers' names left out in C (`clause_cuts(..., True)`) are the
    regex's cuts less those `after_speaker_label` (Python) leaves out, and `ClauseLevel.cuts` gives the same
    either way."""
    text, a, b = case
    expected = [c for c in CLAUSE.reference.cuts(text, a, b) if not headings.after_speaker_label(text, c)]
    assert native.clause_cuts(text, a, b, True) == expected
    assert native.clause_cuts(text, a, b) == CLAUSE.reference.cuts(text, a, b)
    for c in (True, False):
        with scanner(c=c):
            assert CLAUSE.cuts(text, a, b) == expected


def test_clause_cuts_keep_a_speakers_name_with_what_they_said() -> None:
    chat = "田中：了解です、明日送ります\n佐藤：ありがとう、助かります\n\n以上です。\n\nNote: this line, alone, is no turn"
    cuts = native.clause_cuts(chat, 0, len(chat), True)
    # no cut after 田中： or 佐藤： (a name alone in a chunk); the commas and Note's colon are clauses' ends
    assert [chat[c - 1] for c in cuts] == ["、", "、", ":", ",", ","]
    assert len(native.clause_cuts(chat, 0, len(chat))) == len(cuts) + 2


@given(
    st.lists(st.sampled_from(["\r", "\n", "\r\n", "\n\n", "行", "a", " ", "𠮷", "é"]), max_size=30).map(
        "".join
    )
)
def test_line_starts_in_c_equal_the_regex_ones(text: str) -> None:
    expected = markdown._line_starts_python(text)
    assert native.line_starts(text) == expected
    assert expected[0] == 0 and all(text[p - 1] == "\n" for p in expected[1:])
    assert len(expected) == text.count("\n") + 1


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "é", "行", "𠮷"]), st.integers(0, 40), st.sampled_from(["\n", "\r\n"])
        ),
        max_size=6,
    ),
    st.sampled_from(["", "x", "行", "𠮷"]),
)
def test_line_breaks_are_found_inside_runs_of_any_length(
    lines: list[tuple[str, int, str]], tail: str
) -> None:
    """Lines of every length on each side of the blocks the C scans compare at once (16 one-byte, 8
    two-byte or 4 four-byte code units), forwards and back, in each of the string's code unit widths."""
    text = "".join(char * length + end for char, length, end in lines) + tail
    assert native.line_starts(text) == markdown._line_starts_python(text)
    a, b = len(text) // 3, len(text)
    assert native.line_cuts(text, a, b) == LINE.reference.cuts(text, a, b)
    starts, _, _ = native.paragraph_breaks(text)
    assert starts == list(sentences._breaks_python(text).paragraphs)
    headed = "## " + text  # the heading test scans back to the line's start
    for pos in range(len(headed) + 1):
        assert native.ends_with_heading(headed, pos) == headings._ends_with_heading_python(headed, pos), pos


def test_the_script_bitmaps_are_the_regex_classes_on_every_bmp_character() -> None:
    import regex

    for bitmap, char_class in zip(SCRIPT.bitmaps(), (SCRIPT.first, SCRIPT.second), strict=True):
        pattern = regex.compile(char_class)
        members = {c for c in range(0x10000) if bitmap[c >> 3] >> (c & 7) & 1}
        assert members == {c for c in range(0x10000) if pattern.fullmatch(chr(c))}
    hiragana, kanji_or_katakana = SCRIPT.bitmaps()
    assert hiragana[ord("は") >> 3] >> (ord("は") & 7) & 1
    assert not kanji_or_katakana[ord("ー") >> 3] >> (ord("ー") & 7) & 1  # the long vowel mark is Common


def test_the_script_level_cuts_unpunctuated_japanese_before_each_content_word() -> None:
    text = "社員は毎月の交通費をまとめて申請しなければならない"
    cuts = SCRIPT.cuts(text, 0, len(text))
    assert [text[c : c + 2] for c in cuts] == ["毎月", "交通", "申請"]
    assert cuts == SCRIPT.reference.cuts(text, 0, len(text))
    assert SCRIPT.cuts("吉野家は𠮷野家と書く", 0, 10) == [4, 8]  # an astral kanji: the regex finds it


_TITLE_LINES = ["Hotels", "Expense guide", "経費の精算", " Indented", "a" * 45, "===", "-----", "~~~~~~", "= = =",
                "====================================================", "^^", "", " ", "\u3000", "text.", "\r"]  # fmt: skip
underlined_texts = st.lists(st.sampled_from(_TITLE_LINES), max_size=12).map("\n".join)


@given(underlined_texts)
@example("Expense guide\n=============\n\nBody.\n\nHotels\n~~~~~~\nBody.")
@example("======\nHotels\n======\nBody.")
def test_underlined_titles_in_c_equal_the_python_ones(text: str) -> None:
    for mark in "=-~^\"'+*#_`.:!$%&|<>/":  # every adornment, and marks that are none, in both
        title = "A title longer than the prose rule's forty characters"  # a heading by its underline alone
        case = f"Intro.\n\n{title}\n{mark * len(title)}\n\nBody."
        for pos in (8 + len(title), 9 + 2 * len(title)):  # after the title, after its underline
            assert native.ends_with_heading(case, pos) == headings._ends_with_heading_python(case, pos), mark
            assert headings._ends_with_heading_python(case, pos) == (mark in "=-~^\"'+*#_"), (mark, pos)
    for pos in range(-1, len(text) + 2):
        assert native.ends_with_heading(text, pos) == headings._ends_with_heading_python(text, pos), pos
    for start in [0, *(i + 1 for i, c in enumerate(text) if c == "\n")]:
        if headings.underlined_title(text, start):  # no cut after the title, nor after its underline
            title_end = text.index("\n", start)
            assert native.ends_with_heading(text, title_end)
            under_end = text.find("\n", title_end + 1)
            if under_end >= 0:  # (a cut at the text's end is none)
                assert native.ends_with_heading(text, under_end)


@given(heading_texts)
@example("\u3000=\r\r\n以上\r")  # the closing word's line ends in a lone "\r" at the text's end
@example("Intro.\n\n2.2 Requests.\nEach request.")
def test_heading_test_in_c_equals_the_python_one(text: str) -> None:
    for pos in range(-1, len(text) + 2):
        assert native.ends_with_heading(text, pos) == headings._ends_with_heading_python(text, pos), pos


@given(text_and_window(scanned_texts), st.booleans())
def test_scan_in_c_equals_the_python_scan(case: tuple[str, int, int], caseless: bool) -> None:
    text, a, b = case
    with scanner(c=True):
        in_c = sentences._scan_sentence_cuts(text, a, b, caseless)
    with scanner(c=False):
        assert in_c == sentences._scan_sentence_cuts(text, a, b, caseless)


@given(
    scanned_texts, st.lists(st.tuples(st.integers(0, 400), st.integers(0, 400)), max_size=6), st.booleans()
)
# a first window inside the first block: its run ends at the next block's start, a cut only because a blank
# line is before it (the heading above has no terminator), and no later run holds it
@example(text="見出し\n\n本文です。\n\n次の段落", windows=[(0, 3)], dots_by_case=False)
def test_a_run_scanned_in_one_call_equals_the_calls_it_stands_for(
    text: str, windows: list[tuple[int, int]], dots_by_case: bool
) -> None:
    """`scan_run` (the scan, the judged full stops, the line breaks and the block starts of a run of
    blocks, merged in C) against the same C functions called one by one from Python, for windows asked
    in any order (a window before text already scanned too)."""
    text = text.upper() if dots_by_case else text
    windows = [(min(a, b, len(text)), min(max(a, b), len(text))) for a, b in windows]
    answers = []
    for run in (native.scan_run, None):
        with scanner(c=True):
            sentences._NATIVE_RUN = run
            index = sentences.SentenceIndex(text)
            answers.append(
                [index.cuts(a, b) for a, b in windows]
                + [index.cuts(0, len(text)), [p for p in range(len(text) + 1) if index.inside_quote(p)]]
            )
    assert answers[0] == answers[1]


# a wrapped line that only looks like a label (`_label_wrap`), one under a short line, one under an item
_WRAPPED = "both owners try to release the same buffer and this is a\r\nproblem: when the two go out of scope, they both free the\n  x_y: same memory\n- item\n"


@example((_WRAPPED, 0, len(_WRAPPED)))
@example((_WRAPPED, 70, len(_WRAPPED) - 3))
@example(("a title\nstep-2:\tgo on, then stop\nnext\n", 0, 36))
@given(text_and_window(scanned_texts))
def test_line_break_cuts_in_c_equal_the_python_ones(case: tuple[str, int, int]) -> None:
    text, a, b = case
    with scanner(c=True):
        in_c = sentences._line_break_cuts(text, a, b)
    with scanner(c=False):
        assert in_c == sentences._line_break_cuts(text, a, b)


def _judged_candidates(text: str, a: int, b: int) -> list[tuple[int, int]]:
    """The candidate ends in ``[a, b)`` the rules judge (first character ``.``, ``．`` or ``!?！？``)."""
    return [
        (m.start(), m.end())
        for m in sentences._CANDIDATE.finditer(text, a, b)
        if text[m.start()] in sentences._JUDGED
    ]


def _judged_in_c(text: str) -> tuple[list[tuple[int, int]], list[int], list[tuple[int, int]]]:
    """The whole text's judged candidates, and what `judge_periods` makes of them: the sentence starts it
    decides and the candidates it leaves to Python."""
    pending = _judged_candidates(text, 0, len(text))
    cuts, left = native.judge_periods(
        text, pending, 0, len(text), False, sentences._ABBREVIATIONS, sentences._MAY_END
    )
    return pending, cuts, left


# Periods in every context the rules tell apart: numbers of one to four digits (list numbers at a line
# start), acronyms of two to four letters, abbreviations, initials after initials, words and marks, each
# followed by a capital, a lower-case word, a digit, a bracket, kana or a character of another script.
_PERIOD_WORDS = [
    *("1", "12", "123", "1234", "U.S", "a.b", "Ph.D", "a.b.c.d", "e.g", "J", "R", "x", "Dr", "etc", "al"),
    *("Smith", "met", "$6.25", "café", "２", "Ｘ", "設定", "!", "?", "II", "iv", "5", "13"),
    *("0.98±0.02", "10−5", "Jβ2.6", "37°C", "π", "×2", "Москва", "a→b", "µm", "x²", "games ", "2014 ", "β "),
]
_PERIOD_GAPS = [". ", ".  ", ".\n", ". \n", ". \u3000", "."]
_PERIOD_NEXT = [
    "",
    "He",
    "he",
    "1",
    "「",
    "(",
    "次",
    "É",
    '"',
    "x",
    "The",
    "β",
    "Β",
    "ͺ",
    "Ж",
    "“A",
    "[1]",
    "_",
]
# each part: what comes before the word (a line break makes it a line start), the word, its period and
# the whitespace after it, the next word (none: the next part's word follows, as initials do)
period_texts = st.lists(
    st.tuples(
        # a heading's label word before its number (``ARTICLE 5.``, ``PART II.``), or other words
        st.sampled_from(
            [
                "",
                "\n",
                " ",
                "x ",
                "! ",
                "\nARTICLE ",
                "Section ",
                "## Part ",
                "> step\t",
                "\n\x0cItem ",
                "Ｐart ",
                "see note ",
                "\nTitle  ",
                "#appendix ",
                "β-catenin at ",
                "\u212aey ",
                "Sectİon ",
            ]
        ),
        st.sampled_from(_PERIOD_WORDS),
        st.sampled_from(_PERIOD_GAPS),
        st.sampled_from(_PERIOD_NEXT),
    ),
    min_size=1,
    max_size=8,
).map(lambda parts: "".join(before + word + gap + after for before, word, gap, after in parts))


@settings(max_examples=1000)
@given(text_and_window(st.one_of(scanned_texts, period_texts)), st.booleans())
def test_periods_judged_in_c_are_judged_as_in_python(case: tuple[str, int, int], caseless: bool) -> None:
    """Every candidate `judge_periods` decides gets `_judged_end`'s answer; the rest it hands back whole."""
    text, a, b = case
    if len(text) % 2:  # half of them whole, so that a list number at the text's start is judged too
        a, b = 0, len(text)
    pending = _judged_candidates(text, a, b)
    cuts, left = native.judge_periods(
        text, pending, a, b, caseless, sentences._ABBREVIATIONS, sentences._MAY_END
    )
    assert set(left) <= set(pending)
    decided = [p for p in pending if p not in left]
    expected = [c for s, e in decided if (c := sentences._judged_end(text, s, e, a, b, caseless)) is not None]
    assert sorted(cuts) == sorted(expected)


@pytest.mark.parametrize(
    "text",
    [
        "本文です。\n\n<!--\nThe original.\n-->\n訳文です。",
        '呼び出します println!("{}", x); 次へ。',
        "`vec!` マクロ、`panic!` マクロ。`?` 演算子。",
        "if a != b! then x?: string; f()?; go!{ x } ![図](a.png) Really?! Yes! No?",
        "!<!x!=`!`!(?;",
    ],
)
def test_bangs_in_code_and_markup_are_judged_in_c_as_in_python(text: str) -> None:
    """The ASCII ``!`` and ``?`` runs C decides by the characters around them (`<!--`, ``!=``, a code span's
    end, a macro, an optional field) get `_inside_token`'s answer, every window; C decides some of them."""
    decided_somewhere = False
    for a in range(len(text)):
        for b in (a + 1, len(text)):
            pending = _judged_candidates(text, a, b)
            cuts, left = native.judge_periods(
                text, pending, a, b, False, sentences._ABBREVIATIONS, sentences._MAY_END
            )
            decided = [p for p in pending if p not in left]
            decided_somewhere |= any(text[s] in "!?" for s, _ in decided)
            expected = [
                c for s, e in decided if (c := sentences._judged_end(text, s, e, a, b, False)) is not None
            ]
            assert sorted(cuts) == sorted(expected), (a, b)
    assert decided_somewhere


def test_what_c_reads_as_no_word_before_a_period_is_no_latin_letter_nor_number() -> None:
    """The characters outside ASCII the C period rule reads as the end of the word before a period
    (`word_break_other` in _speedups.c: ° ± µ · × ÷, Greek and Cyrillic, arrows, mathematical operators) are
    neither Latin nor numbers to `_WORD_BEFORE`, so Python's word stops there too."""
    word_char = regex.compile(r"[\p{Latin}\p{N}.]")
    ranges = [
        (0xB0, 0xB1),
        (0xB5, 0xB5),
        (0xB7, 0xB7),
        (0xD7, 0xD7),
        (0xF7, 0xF7),
        (0x370, 0x4FF),
        (0x2190, 0x22FF),
    ]
    assert not [hex(c) for lo, hi in ranges for c in range(lo, hi + 1) if word_char.match(chr(c))]
    # after a period, a Greek or Cyrillic letter is lower case for C as for `_LOWER_NEXT` (``\p{Ll}``)
    lower = regex.compile(r"\p{Ll}")
    c_lower = [c for c in range(0x370, 0x500) if chr(c).islower() and c != 0x37A]
    assert c_lower == [c for c in range(0x370, 0x500) if lower.match(chr(c))]


def test_tokenised_periods_and_greek_after_a_period_are_judged_in_c() -> None:
    """Tokenised English (``games . When``: a period between spaces, as in WikiText) and a Greek or Cyrillic
    word after a period are decided in C, as Python decides them; a capital outside ASCII after a spaced
    period goes back to Python."""
    text = (
        'The games . When it ended . the crowd left . In 2014 . Then 3 . "Yes" he said .  [1] more .\n'
        "the complex. β-catenin binds. Β-sheets form. Жуков won. It ends . Élan follows."
    )
    pending, cuts, left = _judged_in_c(text)
    assert [text[s - 2 : e + 2] for s, e in left] == ["s . É"]
    decided = [p for p in pending if p not in left]
    expected = [c for s, e in decided if (c := sentences._judged_end(text, s, e, 0, len(text), False))]
    assert sorted(cuts) == sorted(expected)
    assert {text[c : c + 4] for c in cuts} >= {"When", "In 2", "Then", '"Yes', "Β-sh", "Жуко"}
    assert not {"the ", "β-ca"} & {text[c : c + 4] for c in cuts}


def test_plain_periods_are_judged_in_c() -> None:
    """English with abbreviations, initials and list numbers, and periods in Japanese technical prose: C
    decides them all; a word or next character in another script goes back to Python."""
    text = (
        "Dr. Smith met J. R. Tolkien at 9 a.m. on the U.S. tour, etc. Then they left.\n"
        "1. Install it. 2. Run it.\n設定は config.yaml. 次にサーバーを起動します。Done. the end. Café. É. x². Ｘ."
    )
    _, cuts, left = _judged_in_c(text)
    assert [text[s - 1] for s, _ in left] == ["é", "É", "²"]  # "Ｘ." ends the text: no word asked
    starts = [text[c : c + 4] for c in cuts]
    assert "次にサー" in starts
    assert "Then" in starts and "1. I" in starts and "the " not in starts  # a lower-case word goes on
    # "Dr." an abbreviation, "R." an initial after an initial, "U.S." an acronym, "1." a list number
    assert not {"Smit", "Tolk", "tour", "Inst"} & set(starts)


def test_full_width_marks_are_judged_in_c_unless_a_closer_ends_them() -> None:
    """A full-width "！" or "？" ends its sentence (C decides it); one whose run ends with a closer may go on
    with a lower-case word after a space ('"Are you sure？" he asked'): Python's, and judged alike."""
    text = "すごい！次へ。本当？？　はい。「行く？」 he asked. 「来た！」と言う。Wow！」 and then。"
    pending, cuts, left = _judged_in_c(text)
    assert [text[s:e] for s, e in left] == ["？」", "！」", "！」"]
    assert [text[c] for c in cuts] == ["次", "は", "「"]  # the "." of "asked." too
    expected = [c for s, e in pending if (c := sentences._judged_end(text, s, e, 0, len(text), False))]
    with scanner(c=True):
        in_c = sentences._scan_sentence_cuts(text, 0, len(text), False)
    with scanner(c=False):
        assert in_c == sentences._scan_sentence_cuts(text, 0, len(text), False)
    assert set(cuts) <= set(expected)


def test_scan_in_c_knows_every_mark_of_the_vocabulary() -> None:
    """Each terminator before each closer, and each bracket pair around a sentence, scanned in C and in
    Python: the compiled classes of marks (`MARK_CLASS`) hold every mark `kireme.text.marks` names."""
    texts = [f"前の文です{end}{closer} 次の文です。" for end in TERMINATORS for closer in [*CLOSERS, ""]]
    texts += [f"彼は{o}行きます。{c}と言った。次に{o}帰る{c}。最後。" for o, c in OPEN_TO_CLOSE.items()]
    for text in texts:
        with scanner(c=True):
            in_c = sentences._scan_sentence_cuts(text, 0, len(text), False)
        with scanner(c=False):
            assert in_c == sentences._scan_sentence_cuts(text, 0, len(text), False), text


def test_marks_inside_markup_and_urls_are_left_to_python_and_judged_alike() -> None:
    """An ASCII "!" or "?" with an ASCII character before it, or "=" or "[" after it, may be markup, code
    or a URL (`_inside_token`): the C scan leaves it to Python, and both say the same, in every window."""
    text = (
        "前の文です。\n\n<!--\nKeep it!\n-->\n\n`a != b` と `x?=y` を使う。![図](a.png)の通り。\n"
        "https://example.com/p?id=3 を見る。`u?.name` を読む。本当?はい!次。Really? Yes!\n"
        "`panic!`と`日本語!`とprintln!(x)とf()?;を書く。x = !done と name?: string。最後!\n"
    )
    for a, b in [(0, len(text)), (8, 40), (text.index("!["), len(text)), (text.index("?id") + 1, len(text))]:
        with scanner(c=True):
            in_c = sentences._scan_sentence_cuts(text, a, b, False)
        with scanner(c=False):
            assert in_c == sentences._scan_sentence_cuts(text, a, b, False), (a, b)
    with scanner(c=True):
        cuts, _ = sentences._scan_sentence_cuts(text, 0, len(text), False)
    starts = {text[c : c + 3] for c in cuts}
    assert {
        "--\n",
        "= b",
        "=y`",
        "[図]",
        "id=",
        ".na",
        "`マク",
        "`と`",
        "`とp",
        "(x)",
        ";を書",
        "done",
        ": st",
    }.isdisjoint(starts)
    assert {"はい!", "次。R", "Yes"} <= starts


def test_scan_in_c_on_written_text() -> None:
    """Quotations, particles after them, digits before a full-width period, English abbreviations."""
    text = (
        "規程は四月に改定された。「出張は事前に申請すること。」と部長は言った。"
        "宿泊費は１．５万円まで（ただし東京は別。）です！\n\n"
        'Dr. Smith arrived at 9 a.m. He said: "We leave now." Then he left... The end.'
    )
    for a, b in [(0, len(text)), (5, 60), (30, len(text) - 3)]:
        with scanner(c=True):
            got = sentences._scan_sentence_cuts(text, a, b, False)
        with scanner(c=False):
            assert got == sentences._scan_sentence_cuts(text, a, b, False)
    with scanner(c=True):
        cuts, quotes = sentences._scan_sentence_cuts(text, 0, len(text), False)
    starts = [text[c : c + 4] for c in cuts]
    assert "「出張は" in starts  # a sentence ends before the quotation
    assert not any(s.startswith("と部長") for s in starts)  # 。」と: the sentence goes on
    assert "Then" in starts and "He s" in starts
    assert "Smit" not in starts  # "Dr." is an abbreviation
    assert quotes[0] == (text.index("「"), text.index("」"))


_ENGLISH = (
    'Dr. Smith arrived at 9 a.m. He said: "We leave now." Then he left... The end.\n\n'
    "1. Book the room\n2. Send the form.\r\nNotes: none\r\n\r\nLast line (see above)."
)
# One text for each way CPython stores a string: one byte a character (Latin-1), two (the BMP), four.
_KINDS = {
    "latin-1": _ENGLISH + " \u00abFin.\u00bb Done.",
    "bmp": "規程は四月に改定された。「出張は事前に申請すること。」と部長は言った。\n\n・交通費\n" + _ENGLISH,
    "astral": "𠮷野家は駅前にある。「𠮷の字は土。」と店員は言った。\n・営業時間\n" + _ENGLISH,
}


@pytest.mark.parametrize("kind", list(_KINDS))
def test_every_scan_in_c_answers_as_python_on_each_kind_of_string(kind: str) -> None:
    """The whole-text loops read each kind of string on its own code unit type (`next_mattering`,
    `next_newline`): every scan, on every window of a written text of each kind, as in Python."""
    text = _KINDS[kind]
    widest = max(map(ord, text))
    assert (widest < 0x100, 0x100 <= widest <= 0xFFFF, widest > 0xFFFF)[list(_KINDS).index(kind)]
    n = len(text)
    windows = [(0, n), *((a, b) for a in range(0, n, 7) for b in range(a + 1, n + 1, 11))]
    for a, b in windows:
        with scanner(c=True):
            in_c = (
                sentences._scan_sentence_cuts(text, a, b, False),
                sentences._line_break_cuts(text, a, b),
                native.item_line_starts(text, a, b),
                native.line_cuts(text, a, b),
                native.line_starts(text[a:b]),
                native.clause_cuts(text, a, b),
                native.word_cuts(text, a, b),
            )
        with scanner(c=False):
            in_python = (
                sentences._scan_sentence_cuts(text, a, b, False),
                sentences._line_break_cuts(text, a, b),
                sentences._item_line_starts_python(text, a, b),
                LINE.reference.cuts(text, a, b),
                markdown._line_starts_python(text[a:b]),
                CLAUSE.reference.cuts(text, a, b),
                WORD.reference.cuts(text, a, b),
            )
        assert in_c == in_python, (a, b)
    starts, blocks, items = native.paragraph_breaks(text)
    assert sentences._breaks_python(text) == (tuple(starts), blocks, items)
    cuts, _ = sentences._scan_sentence_cuts(text, 0, n, False)
    assert "Then" in [text[c : c + 4] for c in cuts]  # found in C: the period before it is judged
    assert items and native.line_cuts(text, 0, n)


@pytest.mark.parametrize(
    ("strategy", "fmt"),
    [
        ("fixed", "text"),
        ("sentence", "text"),
        ("recursive", "text"),
        ("recursive", "markdown"),  # the markdown preset: parsed code blocks and headings
        ("paragraph", "text"),
        ("markdown", "markdown"),
    ],
)
@given(text=st.one_of(scanned_texts, markdown_texts), size=st.sampled_from([40, 120, 400]))
def test_chunks_and_ids_are_the_same_either_way(strategy: str, fmt: str, text: str, size: int) -> None:
    chunker = make_chunker(strategy, max_size=size)
    document = Document(text, metadata={"format": fmt})
    with scanner(c=False):
        expected = chunker.chunk(document)
    with scanner(c=True):
        assert chunker.chunk(document) == expected


def test_a_lead_in_moved_out_of_a_larger_piece_is_moved_alike_in_c() -> None:
    # `merge_run` moves the bound itself (`_Packer.lead_in_moves_alone`) and goes on from it as Python does
    from tests.test_chunkers import SETUP_STEPS

    document = Document(SETUP_STEPS, metadata={"format": "markdown"})
    for size in range(90, 260, 7):
        chunker = make_chunker("recursive", max_size=size)
        with scanner(c=False):
            expected = chunker.chunk(document)
        with scanner(c=True):
            assert chunker.chunk(document) == expected, size


# Documents that take every branch of building chunks: a title (context in embed_text), pages (regions in
# metadata), Markdown (heading paths), and ids over names of any length (the id prefix crosses SHA-256's
# 64-byte blocks at different places).
_NAMES = st.text(st.sampled_from("ab規程\ud800"), max_size=150)


@settings(max_examples=300, deadline=None)
@given(
    text=st.one_of(scanned_texts, markdown_texts),
    name=_NAMES,
    title=st.sampled_from(["", "出張旅費規程"]),
    pages=st.integers(0, 3),
    strategy=st.sampled_from(["recursive", "sentence", "markdown"]),
    context=st.sampled_from(["none", "title", "headings"]),
)
def test_chunks_with_context_regions_and_any_id_are_the_same_either_way(
    text: str, name: str, title: str, pages: int, strategy: str, context: str
) -> None:
    """Chunks made in C (`make_chunks`: objects and SHA-256 ids) equal the Python ones field by field,
    whatever the chunk carries: a title or heading path in ``embed_text``, page metadata, headings."""
    step = max(1, len(text) // max(1, pages))
    regions = tuple(
        Region(a, min(len(text), a + step), "page", {"page": k + 1})
        for k, a in enumerate(range(0, len(text), step))
    )[:pages]
    metadata = {"title": title, "format": "markdown" if strategy == "markdown" else "text"}
    document = Document(text, id=name, metadata=metadata, regions=regions)
    chunker = make_chunker(strategy, max_size=60, context=context)
    with scanner(c=False):
        expected = chunker.chunk(document)
    with scanner(c=True):
        made = chunker.chunk(document)
    assert made == expected
    assert [vars(c) for c in made] == [vars(c) for c in expected]  # the same fields, in the same order


@contextmanager
def sha256_extensions(on: bool) -> Iterator[bool]:
    """Chunk ids hashed with the processor's SHA extensions (``on``, where it has them) or the portable loop;
    yields whether the extensions are in use. The choice made at import is restored after."""
    chosen = native.sha256_extensions(True)
    try:
        yield native.sha256_extensions(on)
    finally:
        native.sha256_extensions(chosen)


class _GivenIds:
    """What `IdField` reads off a document's `ChunkIds`: its ``prefix`` (asked once), ``_sha``, ``_doc_id``."""

    def __init__(self, prefix: bytes) -> None:
        self._given = prefix
        self.asked = 0
        self._sha: bytes | None = None
        self._doc_id = "d"

    @property
    def prefix(self) -> bytes:
        self.asked += 1
        return self._given


@pytest.mark.parametrize("extensions", [False, True], ids=["portable", "sha-extensions"])
@given(
    prefix=st.binary(max_size=300),
    spans=st.lists(
        st.tuples(st.integers(0, 10**7), st.integers(0, 10**7)).map(sorted).map(tuple), min_size=1, max_size=5
    ),
)
def test_ids_made_in_c_are_the_sha256_ids(
    extensions: bool, prefix: bytes, spans: list[tuple[int, int]]
) -> None:
    """The C SHA-256 against hashlib, with the processor's SHA extensions and without: any prefix length
    (block edges), any offsets (digits of any width); the prefix is read once for all of a document's ids."""
    text = "x" * max(end for _, end in spans)
    packed = [PackedSpan(a, b, 0) for a, b in spans]
    owner = _GivenIds(prefix)
    made = native.make_chunks(Chunk, text, packed, owner, "chars", "", (), NO_METADATA, None)
    field = native.IdField("id")
    with sha256_extensions(extensions) as used:
        if extensions and not used:
            pytest.skip("this processor has no SHA extensions")
        ids = [field.__get__(chunk, Chunk) for chunk in made]
    assert owner.asked == 1
    for chunk, span, made_id in zip(made, packed, ids, strict=True):
        key = prefix + f"{span.start}\x1f{span.end}".encode("ascii")
        assert made_id == hashlib.sha256(key).hexdigest()[:32] == vars(chunk)["id"]
        assert vars(chunk)["doc_id"] == "d" and "_ids" not in vars(chunk)


@given(st.lists(st.integers(0, 10**12), max_size=5))
def test_make_chunks_refuses_offsets_outside_the_text(ends: list[int]) -> None:
    wide = [PackedSpan(0, 0, 0)]
    for big in ends:  # offsets far past any text's length are refused
        with pytest.raises(ValueError, match="outside the text"):
            native.make_chunks(
                Chunk, "", [PackedSpan(0, big + 1, 0)], object(), "chars", "", (), NO_METADATA, None
            )
    assert native.make_chunks(Chunk, "", wide, object(), "chars", "", (), NO_METADATA, None)[0].text == ""


@pytest.mark.parametrize("extensions", [False, True], ids=["portable", "sha-extensions"])
def test_ids_read_in_c_are_chunk_ids_of_the_document(extensions: bool) -> None:
    """Chunks made in C hold the document's `ChunkIds` until their id is read: then `IdField` gives the ids
    `ChunkIds` makes in Python (`chunk_id`), each chunk its own, and lets the `ChunkIds` go."""
    document = Document("規程の本文です。" * 30, id="docs/規程.md")
    spans = [PackedSpan(0, 8, 8), PackedSpan(8, 240, 232), PackedSpan(9, 9, 0)]
    ids = ChunkIds(document, "0123456789abcdef")
    made = native.make_chunks(Chunk, document.text, spans, ids, "chars", "", (), NO_METADATA, None)
    assert all(vars(c)["_ids"] is ids and "id" not in vars(c) and "doc_id" not in vars(c) for c in made)
    assert [c.index for c in made] == [0, 1, 2] and made[1].text == document.text[8:240] == made[1].embed_text
    field, doc_field = native.IdField("id"), native.IdField("doc_id")
    with sha256_extensions(extensions):
        assert doc_field.__get__(made[2], Chunk) == "docs/規程.md"
        assert "_ids" in vars(made[0]) and "id" not in vars(made[0])  # only the chunk read
        read = [field.__get__(c, Chunk) for c in made]
    assert read == [vars(c)["id"] for c in made] == [ids(s.start, s.end) for s in spans]
    assert {vars(c)["doc_id"] for c in made} == {"docs/規程.md"} and not any("_ids" in vars(c) for c in made)
    assert field.__get__(None, Chunk) is field and repr(field) == "IdField('id')"


class _RacedIds(_GivenIds):
    """Ids whose prefix, while it is made, lets another reader of the same chunk finish first (another
    thread: making the prefix runs Python code, where threads switch)."""

    def __init__(self, prefix: bytes) -> None:
        super().__init__(prefix)
        self.chunk: Chunk | None = None

    @property
    def prefix(self) -> bytes:
        assert self.chunk is not None
        state = vars(self.chunk)
        if "_ids" in state:
            state.update(id="the other reader's", doc_id="d")
            del state["_ids"]
        return self._given

    def __call__(self, start: int, end: int) -> str:  # `_FromIds`' way to the id
        _ = self.prefix
        return hashlib.sha256(self._given + f"{start}\x1f{end}".encode("ascii")).hexdigest()[:32]

    @property
    def doc_id(self) -> str:
        return self._doc_id


@pytest.mark.parametrize("in_c", [True, False], ids=["IdField", "_FromIds"])
def test_an_id_read_while_another_reader_finishes_first_is_no_error(in_c: bool) -> None:
    ids = _RacedIds(b"prefix\x1f")
    (chunk,) = native.make_chunks(
        Chunk, "本文です。", [PackedSpan(0, 5, 5)], ids, "chars", "", (), NO_METADATA, None
    )
    ids.chunk = chunk
    field = native.IdField("id") if in_c else document_module._FromIds("id")
    made = field.__get__(chunk, Chunk)
    assert made == hashlib.sha256(b"prefix\x1f0\x1f5").hexdigest()[:32] == vars(chunk)["id"]
    assert "_ids" not in vars(chunk) and vars(chunk)["doc_id"] == "d"


def test_an_id_field_on_a_chunk_without_ids_is_an_attribute_error() -> None:
    field = native.IdField("doc_id")
    with pytest.raises(AttributeError, match="doc_id"):
        field.__get__(object.__new__(Chunk), Chunk)
    with pytest.raises(TypeError):
        native.IdField(3)


@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 3000)), max_size=20), st.integers(0, 3000))
def test_char_packed_spans_are_the_spans_with_their_lengths(
    starts: list[tuple[int, int]], budget: int
) -> None:
    spans = [(a, a + length) for a, length in starts]
    made = native.char_packed(PackedSpan, spans, budget)
    if any(b - a > budget for a, b in spans):  # Python re-packs: nothing made
        assert made is None
        return
    assert made == [PackedSpan(a, b, b - a) for a, b in spans]
    assert all(type(p) is PackedSpan and (p.start, p.end, p.size) == tuple(p) for p in made)


def test_char_packed_leaves_what_is_not_int_pairs_to_python() -> None:
    with pytest.raises(TypeError, match="tuple class"):
        native.char_packed(list, [(0, 1)], 5)
    assert native.char_packed(PackedSpan, [(0, 1, 2)], 5) is None
    assert native.char_packed(PackedSpan, [[0, 1]], 5) is None
    assert native.char_packed(PackedSpan, [(0, True)], 5) is None  # an int subclass: not made in C


def test_make_chunks_refuses_lists_of_another_length() -> None:
    spans = [PackedSpan(0, 1, 1), PackedSpan(1, 2, 1)]
    with pytest.raises(ValueError, match="not as long as the spans"):
        native.make_chunks(Chunk, "ab", spans, object(), "chars", "", [()], NO_METADATA, None)


def test_cut_positions_of_any_integer_type_pack_and_chunk_the_same_either_way() -> None:
    """A level of the caller's may give its cuts as NumPy integers: the C loops read any integer."""
    numpy = pytest.importorskip("numpy")
    from kireme.boundaries.levels import PositionLevel
    from kireme.length import Chars

    text = "規程の本文です。\n" * 40
    level = PositionLevel(list(numpy.arange(9, len(text), 9)), "lines as numpy integers")
    with scanner(c=True):
        in_c = pack.pack(text, [level], Chars().for_text(text), max_size=50)
    with scanner(c=False):
        assert in_c == pack.pack(text, [level], Chars().for_text(text), max_size=50)
    assert [span.end - span.start for span in in_c] == [44] * 8


def test_kireme_pure_python_turns_the_extension_off() -> None:
    code = "import kireme.text.sentences as s; print(s._NATIVE_SCAN is None)"
    for value, answer in (("1", "True"), ("0", "False")):
        env = {**os.environ, "KIREME_PURE_PYTHON": value}
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == answer


@st.composite
def _dp_inputs(draw: st.DrawFn) -> tuple:
    """Candidates of a span as the optimal packer hands them to its programme: piece sizes, ranks (-1 at
    both ends), the reach of each start, cut costs, hard levels, a target and a minimum size."""
    m = draw(st.integers(1, 40))
    pieces = draw(st.lists(st.integers(0, 60), min_size=m, max_size=m))
    total = [0]
    for size in pieces:
        total.append(total[-1] + size)
    ends = [0] + [t - draw(st.integers(0, 2)) for t in total[1:]]  # trimmed ends lie a little before
    limits = [t + draw(st.integers(0, 150)) for t in total[:-1]]
    inner = draw(st.lists(st.integers(0, 6), min_size=m - 1, max_size=m - 1))
    ranks = [-1, *inner, -1]
    hard_levels = draw(st.sets(st.integers(0, 6), max_size=2))
    hard = [rank in hard_levels for rank in ranks]
    cut_cost = [0.0] + [0.15 * rank + draw(st.sampled_from([0.0, 4.0])) for rank in inner] + [0.0]
    target = float(draw(st.integers(1, 200)))
    min_size = draw(st.sampled_from([0, 20, 80]))
    return total, ends, limits, ranks, cut_cost, hard, target, min_size, pack.MIX_COST, pack.MIN_SIZE_COST


@settings(max_examples=400, deadline=None)
@given(_dp_inputs())
def test_the_optimal_packers_programme_in_c_is_the_python_one(args: tuple) -> None:
    assert native.optimal_back(*args) == pack._dp_back(*args)


def test_optimal_packing_is_the_same_either_way_on_written_text() -> None:
    text = RULES_FOR_OPTIMAL * 3
    for size in (40, 90, 200):
        chunker = make_chunker("recursive", max_size=size, packing="optimal")
        with scanner(c=False):
            expected = chunker.chunk(text)
        with scanner(c=True):
            assert chunker.chunk(text) == expected


RULES_FOR_OPTIMAL = (
    "第1条（目的）この規程は、社員が業務のため出張する場合の旅費について定める。\n\n"
    "第2条（日当）日当は、一日につき２，０００円とする。ただし、半日の出張の場合は１，０００円とする。\n"
    "宿泊を伴う場合は、宿泊料として一泊につき９，０００円を支給する。\n\n"
    "Travel within the city is paid at cost. Receipts are required for every claim over 5,000 yen.\n"
)


_LINE_TEXTS = st.lists(
    st.sampled_from(
        [
            "出張の日当は２，０００円とする。",
            "宿泊料は一泊",
            "につき支給する",
            "「承認」）",
            "Receipts are required.",
            "wrapped at a fixed",
            "width .",
            "・交通費",
            " \u3000",
            "\r",
            "\n",
            "\n\n",
            "。」\u3000\n",
            "\u2028",
        ]
    ),
    max_size=24,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(_LINE_TEXTS, scanned_texts, markdown_texts), data=st.data())
def test_the_line_breaks_that_end_a_sentence_are_the_same_in_c(text: str, data: st.DataObject) -> None:
    a = data.draw(st.integers(0, len(text)))
    b = data.draw(st.integers(a, len(text)))
    with scanner(c=False):
        expected = SENTENCE_LINE.cuts(text, a, b)
    with scanner(c=True):
        assert SENTENCE_LINE.cuts(text, a, b) == expected


@st.composite
def _cuts_and_spans(draw: st.DrawFn) -> tuple[list[int], tuple[int, ...], tuple[int, ...]]:
    """Sorted cuts and protected spans as `structure_levels` makes them: sorted by start, some nested or
    overlapping (a code block inside a table cell, a run of tag lines touching a code block)."""
    cuts = sorted(set(draw(st.lists(st.integers(0, 200), max_size=40))))
    spans = sorted(
        (a, a + length)
        for a, length in draw(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 60)), max_size=12))
    )
    return cuts, tuple(a for a, _ in spans), tuple(b for _, b in spans)


@settings(max_examples=500, deadline=None)
@given(_cuts_and_spans())
def test_cuts_dropped_inside_protected_spans_in_c_are_the_python_ones(case: tuple) -> None:
    cuts, starts, ends = case
    expected = levels._drop_inside_python(list(cuts), starts, ends)
    assert native.drop_inside(list(cuts), starts, ends) == expected
    assert native.drop_inside(list(cuts), list(starts), list(ends)) == expected


def _c_and_python_differ(
    strategy: str, lines: list[str], repeat: int, sizes: tuple[int, ...]
) -> list[tuple[tuple[str, ...], int]]:
    """The documents (every sequence of ``repeat`` of ``lines``) and sizes whose chunks differ between the
    C path and the pure-Python one."""
    differ = []
    for combo in itertools.product(lines, repeat=repeat):
        document = Document("\n".join(combo), id="lines.txt")
        for size in sizes:
            chunker = make_chunker(strategy, max_size=size)
            with scanner(c=False):
                expected = chunker.chunk(document)
            with scanner(c=True):
                if chunker.chunk(document) != expected:
                    differ.append((combo, size))
    return differ


_FAQ_LINES = [
    "Q: パスワードを忘れました。どうすればよいですか？",
    "Q: Who can see my records?",
    "A: 申請画面から再発行できます。本人確認のあと、新しいパスワードをメールで送ります。",
    "A: Only you. A parent can see a child's. Nobody else can.",
    "日当の上限は次のとおりです：",
    "・国内は二千円とする。",
    "def f(a: int, b: int) -> int:",
    "    return a + b",
    "",
]


@pytest.mark.parametrize("strategy", ["recursive", "sentence"])
def test_questions_and_lead_ins_are_cut_the_same_either_way(strategy: str) -> None:
    """The lead-in rule in C (`merge_run`) and in Python (`_Packer.cut_before_heading`): a question keeps
    the first sentences of its answer, a lead-in line in several pieces moves on whole. Every sequence of
    four of these lines, at sizes where each rule decides somewhere."""
    differ = _c_and_python_differ(strategy, _FAQ_LINES[:6], 4, (45, 60, 90))
    assert not differ, differ[:3]


_DIALOGUE_LINES = [
    "Bob: Can you give us a number for that?",
    "Alice: Sure. A scan of a billion vectors takes minutes. An index makes it milliseconds.",
    "質問：在宅勤務の申請は誰にしますか？",
    "佐藤：課長です。前日までにメールで送ってください。",
    "Q: Who approves it?",
    "A: Your manager. Then HR records it in the system.",
    "",
]


@pytest.mark.parametrize("strategy", ["recursive", "sentence"])
def test_a_dialogues_answer_is_cut_the_same_either_way(strategy: str) -> None:
    """`_dialogue` (another speaker's whole turn answers a question: not cut to keep its first sentence
    with it) in C and in Python, over every sequence of three of these lines."""
    differ = _c_and_python_differ(strategy, _DIALOGUE_LINES, 3, (50, 70, 100))
    assert not differ, differ[:3]


_WRAPPED_LINES = st.sampled_from(
    [
        "Travel allowances are paid for each day of a trip, and the",
        "amount depends on the region. The",
        "daily allowance is given in the",
        "following table:",
        "To install it:",
        "スライスを使用すると、",
        "コンパイルエラーが発生します：",
        "「はい」",
        "第5条（出張手当）",
        "- an item that goes on in the",
        "  next line:",
        "1. 手順は次の",
        "とおり：",
        "　字下げした行で",
        "| a | b |",
        "|---|---|",
        "```",
        "",
        "ok?",
    ]
)


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(_WRAPPED_LINES, min_size=1, max_size=24),
    strategy=st.sampled_from(["recursive", "paragraph", "sentence", "markdown"]),
    fmt=st.sampled_from(["text", "markdown"]),
    size=st.sampled_from([30, 60, 90, 140]),
)
def test_a_lead_in_ending_a_wrapped_sentence_is_moved_alike_in_c(
    lines: list[str], strategy: str, fmt: str, size: int
) -> None:
    # `merge_run` reads the lines of a hard-wrapped sentence above a lead-in line as Python does
    # (`lead_in_sentence_start`)
    document = Document("\n".join(lines), metadata={"format": fmt})
    chunker = make_chunker(strategy, max_size=size)
    with scanner(c=False):
        expected = chunker.chunk(document)
    with scanner(c=True):
        assert chunker.chunk(document) == expected


_ARTICLE_TEXTS = st.lists(
    st.sampled_from(
        [
            "第１章　総則",
            "（目的）",
            "第1条 目的を定める。",
            "　第2条",
            "\t附則",
            "附　則",
            "本文。",
            "x第3条",
            "",
            " ",
            "第",
            "附",
            "\r",
            "😀第",
        ]
    ),
    max_size=12,
).map("\n".join)


@settings(max_examples=1000, deadline=None)
@given(
    text=_ARTICLE_TEXTS
    | st.lists(
        st.sampled_from(
            [
                "== A ==",
                " = = B = = ",
                "\t=",
                "x = y",
                "Part 1",
                "SECTION 2.1 Fees",
                "Sections",
                "§ 3",
                "Annex\tB",
                "",
                "Lodging",
                "-------",
                "~~~ ",
                "***\r",
                "##",
                "### Rates",
                "---x",
                " ___",
                "'''",
                '""""',
            ]
        ),
        max_size=12,
    ).map("\n".join)
    | st.text(alphabet=" \t\u3000\n\r第附a😀=§PartSECTION-~#*", max_size=30)
)
def test_heading_lines_in_c_are_the_patterns(text: str) -> None:
    """`heading_lines` (C) finds the start of each line that may open with a written heading (第, 附, ``=``,
    ``§``, an English division keyword and a space) after blanks, as `_heading_lines_python` does, in texts
    of one, two and four bytes a character; and a plain text's articles, wiki sections and divisions are
    the same either way."""
    assert native.heading_lines(text) == openers._heading_lines_python(text)
    with scanner(c=False):
        clear_text_caches()
        expected = (
            articles.article_headings(text),
            wikitext.wiki_headings(text),
            divisions.division_headings(text),
            underlines.underlined_headings(text),
        )
    with scanner(c=True):
        clear_text_caches()
        got = (
            articles.article_headings(text),
            wikitext.wiki_headings(text),
            divisions.division_headings(text),
            underlines.underlined_headings(text),
        )
    assert got == expected


def test_heading_lines_in_c_know_every_division_keyword() -> None:
    """The keywords compiled into `heading_lines` are `kireme.text.openers.DIVISION_KEYWORDS`, each only
    before a space or a tab."""
    for word in openers.DIVISION_KEYWORDS:
        for text in (f"x\n{word} 1\n", f"x\n  {word}\tA", f"x\n{word}s 1\n", f"x\n{word[:-1]} 1\n"):
            assert native.heading_lines(text) == openers._heading_lines_python(text), text
        assert native.heading_lines(f"x\n{word} 1\n") == [2]
        assert native.heading_lines(f"x\n{word}s 1\n") == []
