"""Titles underlined in a plain text (reStructuredText, setext): a title and its underline stay with the
section they open, in every strategy; a reStructuredText file in a folder is read."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.invariants import check_invariants
from tests.written_outline import chunk_rows, chunks_between, each_heading_in_order

from kireme import Document, make_chunker
from kireme.text.articles import written_headings
from kireme.text.caches import clear_text_caches
from kireme.text.headings import underlined_title
from kireme.text.underlines import _underlined_headings, underlined_headings

GUIDE = """\
=============
Expense guide
=============

This guide explains how staff claim travel expenses. It applies to every office and to contractors.

Before you travel
-----------------

Apply in the expense system at least three working days before you leave. Your manager approves it.

Hotels and other lodging paid by the company while travelling
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~

Hotels are paid up to 9,800 yen a night. Book economy rooms through the travel desk, never online.

After you travel
----------------

Submit receipts within one month. Late claims need a written reason from your manager.
"""

TITLES = ("Expense guide", "Before you travel", "Hotels and other lodging", "After you travel")


def _title_lines(text: str) -> set[int]:
    """The offsets of every line that is part of an underlined title: overline, title and underline."""
    starts = [0, *(i + 1 for i, c in enumerate(text) if c == "\n")]
    found: set[int] = set()
    for k, start in enumerate(starts):
        if underlined_title(text, start):
            found.update(s for s in starts[max(0, k - 1) : k + 2])
    return found


@pytest.mark.parametrize("strategy", ["recursive", "paragraph", "sentence", "markdown"])
@pytest.mark.parametrize("max_size", [160, 220, 400])
def test_no_chunk_ends_with_a_title_or_its_underline(strategy: str, max_size: int) -> None:
    chunks = make_chunker(strategy, max_size=max_size).chunk(Document(GUIDE, id="guide.rst"))
    check_invariants(GUIDE, chunks, max_size=max_size, unit="chars")
    lines = _title_lines(GUIDE)
    for chunk in chunks[:-1]:
        starts = [chunk.start, *(chunk.start + i + 1 for i, c in enumerate(chunk.text) if c == "\n")]
        if starts[-1] in lines:  # only a title too long to go with its first sentence (and its underline)
            assert all(s in lines or not GUIDE[s : s + 1].strip() for s in starts), [c.text for c in chunks]
    for title in TITLES[1:]:
        (holder,) = [c for c in chunks if title in c.text]
        assert holder.text.index(title) < holder.text.index("\n" + "-~"[title.startswith("Hotels")] * 3), (
            title,  # its underline with it
            [c.text for c in chunks],
        )


def test_a_chunk_ended_with_the_next_title_before() -> None:
    """What the prose heuristic did with these lines: a short title is a heading, but its underline is all
    punctuation, and a chunk ended with ``Before you travel`` + ``---``. Now it opens the next chunk."""
    chunks = make_chunker("recursive", max_size=160).chunk(Document(GUIDE, id="guide.rst"))
    assert chunks[1].text.startswith("Before you travel\n-----------------\n\nApply"), [
        c.text for c in chunks
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Totals were checked twice.\n----------------------------\n\nNext.",  # a sentence over a rule
        "  Indented\n  --------\n\nBody.",  # indented: a quotation, no title
        "Rates\n--\n\nBody.",  # under three marks
        "A long title over a short line\n------\n\nBody.",  # shorter than the title
        "Text right above\nTitle\n=====\n\nBody.",  # no blank line, start or overline above
        "Name\n=-=-=\n\nBody.",  # more than one character
        "Contents\n........\n\nBody.",  # dots: leaders, not an adornment
    ],
)
def test_what_is_no_underlined_title(text: str) -> None:
    assert not any(underlined_title(text, s) for s in [0, *(i + 1 for i, c in enumerate(text) if c == "\n")])


def test_titles_reStructuredText_and_setext_write() -> None:
    assert underlined_title("Hotels\n~~~~~~\nBody.", 0)
    assert underlined_title("Intro.\n\n宿泊費\n======\n本文。", 8)  # three characters under three
    assert underlined_title("======\nHotels\n======\nBody.", 7)  # with an overline
    assert underlined_title("What changed?\n^^^^^^^^^^^^^\n\nBody.", 0)
    assert underlined_title("Setup\r\n=====\r\nBody.", 0)  # CRLF


_LINES = ["Hotels", "経費の精算", "Body text goes on here.", "~~~~~~~~", "--------", "", "  code line", "="]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_LINES), min_size=1, max_size=30).map("\n".join), st.sampled_from([40, 80]))
def test_any_text_of_titles_and_rules_keeps_the_invariants(text: str, max_size: int) -> None:
    for strategy in ("recursive", "paragraph", "markdown"):
        chunks = make_chunker(strategy, max_size=max_size).chunk(Document(text, id="t.txt"))
        check_invariants(text, chunks, max_size=max_size, unit="chars")


def test_a_folder_s_restructuredtext_files_are_read(tmp_path: Path) -> None:
    (tmp_path / "guide.rst").write_text(GUIDE, encoding="utf-8")
    rows = chunk_rows(tmp_path, 160)
    assert rows and all(row["doc_id"].endswith("guide.rst") for row in rows)
    assert rows[1]["text"].startswith("Before you travel\n---")


# ------------------------------------------------------------------------------ the outline they write

MANUAL = """\
####################
Travel handbook
####################

How staff travel and claim what they spend.

Lodging
=======

Hotels are paid at cost up to the limit of the region. The travel desk books them for you.

Booking
-------

Book at least a week ahead through the travel desk. Rooms booked online are not refunded at all.

Cancelling
----------

Cancel through the desk too. A fee charged for a late cancellation is refunded only with a reason.

Daily allowance
===============

Staff receive a daily allowance for meals. It is paid with the claim after the trip.
"""


def test_titles_are_headings_at_the_level_of_their_style():
    headings = underlined_headings(MANUAL)
    assert [(h.level, h.title) for h in headings] == [
        (1, "Travel handbook"),
        (2, "Lodging"),
        (3, "Booking"),
        (3, "Cancelling"),
        (2, "Daily allowance"),
    ]
    first = headings[0]  # from its overline to the end of its underline
    assert MANUAL[first.start : first.end] == "#" * 20 + "\nTravel handbook\n" + "#" * 20
    for h in each_heading_in_order(MANUAL, headings):
        assert MANUAL[h.start : h.end].splitlines()[-1].strip("#=-") == ""  # it ends with its underline


@pytest.mark.parametrize("strategy", ["recursive", "paragraph", "sentence", "fixed", "markdown", "semantic"])
def test_a_chunk_from_the_middle_of_a_section_names_it(strategy: str):
    start = "Booking\n-------\n"
    for c in chunks_between(MANUAL, strategy, 60, start, "Cancelling\n"):
        assert c.headings == ("Travel handbook", "Lodging", "Booking"), c


def test_markdown_puts_the_path_in_embed_text_and_cuts_between_sections():
    doc = Document(MANUAL, id="handbook.rst", metadata={"format": "text", "title": "Staff docs"})
    chunks = make_chunker("markdown", max_size=150).chunk(doc)
    refunded = next(c for c in chunks if "not refunded" in c.text)
    assert refunded.embed_text.startswith("Staff docs\nTravel handbook > Lodging > Booking\n\n"), refunded
    # a section's end never shares a chunk with the next section's title; a whole subsection that fits does
    middle = make_chunker("markdown", max_size=250).chunk(doc)
    assert not any("not refunded" in c.text and "Cancelling" in c.text for c in middle)
    wide = make_chunker("markdown", max_size=400).chunk(doc)
    assert any(c.text.startswith("Lodging") and c.text.endswith("with a reason.") for c in wide)
    assert not any("with a reason" in c.text and "Daily allowance" in c.text for c in wide)


def test_one_title_or_a_wiki_s_more_lines_are_no_underlined_outline():
    assert underlined_headings("Notes\n=====\n\nOne title is no outline.\n") == ()
    wiki = "== Lodging ==\nAt cost.\n== Booking ==\nEarly.\n== Meals ==\nPaid.\n"
    both = wiki + "\nRates\n-----\n\nText.\n\nTaxes\n-----\n\nText.\n"
    assert [h.title for h in written_headings(both)] == ["Lodging", "Booking", "Meals"]


def test_rules_under_underlined_titles_have_their_articles_below_them():
    text = "総則\n====\n\n第1条　この規程は出張の旅費を定める。\n第2条　役員にも適用する。\n\n国内出張\n========\n\n第3条　宿泊費は実費とする。\n"
    assert [(h.level, h.title) for h in written_headings(text)] == [
        (1, "総則"),
        (2, "第1条"),
        (2, "第2条"),
        (1, "国内出張"),
        (2, "第3条"),
    ]


def test_the_cache_is_cleared():
    underlined_headings(MANUAL)
    assert _underlined_headings.cache_info().currsize >= 1
    clear_text_caches()
    assert _underlined_headings.cache_info().currsize == 0


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([*_LINES, "#####", "Lodging", "= Page =", "======"]), max_size=30))
def test_headings_are_exact_spans_of_title_and_underline(lines: list[str]):
    text = "\n".join(lines)
    for h in each_heading_in_order(text, underlined_headings(text)):
        block = text[h.start : h.end].split("\n")
        assert len(block) in (2, 3)  # title and underline, an overline above them
        assert block[-2].rstrip(" \t\r") == h.title.strip() or h.title in block[-2]
        assert underlined_title(text, h.start if len(block) == 2 else text.index("\n", h.start) + 1)
