"""A lead-in that ends a hard-wrapped sentence (``…を使用すると、`` over ``コンパイルエラーが発生します：``,
``…are given in the`` over ``following table:``): the packer moves a lead-in to the chunk of what it
introduces, and it moved the last line alone — the sentence cut in two at a line break. It moves with the
lines of its sentence now (`kireme.text.headings.lead_in_sentence_start`), or stays where it is."""

from __future__ import annotations

import textwrap

import pytest
from tests.invariants import check_invariants

from kireme import Document, make_chunker
from kireme.text.headings import lead_in_line_start, lead_in_sentence_start

JA = (
    "# スライス\n\n"
    "文字列スライスは、文字列の一部への参照です。範囲を使って作ります。\n"
    "スライス版の`first_word`関数を使って、前と同じ誤りを含むプログラムを書いてみると、\n"
    "次のようなコンパイルエラーが発生します：\n\n"
    "```text\nerror[E0502]: cannot borrow `s` as mutable because it is also borrowed as immutable\n"
    "  --> src/main.rs:18:5\n```\n\n"
    "借用規則によれば、不変な参照がある間は可変な参照を得ることはできません。\n"
)

_PARAGRAPH = (
    "Travel allowances are paid for each day of a business trip, and the amount depends on the region "
    "where the employee stays overnight. The daily allowance for each region and the hotel limit are given "
    "in the following table:"
)
EN = (
    "# Travel\n\nEmployees who travel on business are paid an allowance. Receipts are required.\n\n"
    + "\n".join(textwrap.wrap(_PARAGRAPH, 72))
    + "\n\n| Region | Daily | Hotel |\n|---|---|---|\n| Tokyo | 5,000 | 12,000 |\n| Osaka | 4,000 | 11,000 |\n"
)


@pytest.mark.parametrize("fmt", ["markdown", "text"])
@pytest.mark.parametrize("strategy", ["paragraph", "sentence", "markdown"])
def test_a_japanese_lead_in_is_not_cut_from_the_line_it_goes_on_from(strategy: str, fmt: str) -> None:
    """(`recursive` fills a chunk line by line where a paragraph does not fit, its line level before its
    sentences, as LangChain's separators are: it may still cut a hard-wrapped sentence at a line break.)"""
    doc = Document(JA, metadata={"format": fmt})
    cut = JA.index("次のようなコンパイルエラー")
    for size in range(80, 260, 10):
        chunker = make_chunker(strategy, max_size=size, context="none")
        chunks = chunker.chunk(doc)
        check_invariants(doc, chunks, max_size=size, chunker=chunker)
        assert not [c for c in chunks if c.start == cut], (size, [c.text for c in chunks])


@pytest.mark.parametrize("fmt", ["markdown", "text"])
@pytest.mark.parametrize("strategy", ["paragraph", "sentence", "markdown"])
def test_an_english_lead_in_is_not_cut_from_the_sentence_it_ends(strategy: str, fmt: str) -> None:
    """The sentence starts inside a line (``…overnight. The``): its lines go with the lead-in where they fit
    with the table, else the lead-in stays at the end of the chunk before, whole. (`recursive` cuts this
    paragraph at a line break inside it at some sizes all the same: its line level comes before its
    sentences.)"""
    doc = Document(EN, metadata={"format": fmt})
    sentence = EN.index("The\ndaily")
    end = EN.index("table:") + len("table:")
    for size in range(120, 400, 20):
        chunker = make_chunker(strategy, max_size=size, context="none")
        chunks = chunker.chunk(doc)
        check_invariants(doc, chunks, max_size=size, chunker=chunker)
        assert not [c for c in chunks if sentence < c.start < end], (size, [c.text for c in chunks])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("前文。\nこれを使うと、\nエラーになります：", "これを使うと、\nエラーになります："),
        (
            "Intro.\nThe limits are given in the\nfollowing table:",
            "The limits are given in the\nfollowing table:",
        ),
        (
            "第5条（出張手当）\n手当は次のとおり：",
            "手当は次のとおり：",
        ),  # a closing bracket ends the line above
        ("「はい」\nと答えた人は次の：", "と答えた人は次の："),  # a closing quote ends a sentence
        ("- an item that goes on in the\nnext line:", "next line:"),  # the line above opens an item
        ("| a | b |\nnext line:", "next line:"),  # markup above: no prose
        ("prose that goes on\n・項目：", "・項目："),  # the lead-in opens an item itself
        ("To install it:\nrun this:", "run this:"),  # a colon ends the line above
        ("one\n\ntwo words here:", "two words here:"),  # a blank line between
        ("a\n" * 9 + "last line:", "last line:"),  # more lines than a lead-in has: the line alone
        ("a\n" * 8 + "last line:", "a\n" * 8 + "last line:"),
        ("only line:", "only line:"),
    ],
)
def test_where_a_lead_in_starts(text: str, expected: str) -> None:
    line = text.rfind("\n") + 1
    assert text[lead_in_sentence_start(text, line) :] == expected
    assert text[lead_in_line_start(text, len(text)) :] == expected
