"""A wiki page's source: its ``== Section ==`` lines are headings (`kireme.text.wikitext`).

A chunk cut from the middle of a section of a MediaWiki export (a ``.wiki`` file, a page's source saved as
``.txt`` or ``.md``) names its page and section in ``headings`` and, with ``--context headings`` (the
``markdown`` strategy's default, what ``kireme index`` uses), in front of its ``embed_text``; ``markdown``
cuts between the pages and sections.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.written_outline import chunk_rows, chunks_between, each_heading_in_order

from kireme import Chunk, Document, make_chunker
from kireme.load import load
from kireme.structure.layout import document_outline
from kireme.text.articles import text_headings, written_headings
from kireme.text.caches import clear_text_caches
from kireme.text.wikitext import _wiki_headings, wiki_headings

WIKI = """= Expense Handbook =
This page explains how staff claim travel costs. The finance team keeps it up to date.

== Lodging ==
Hotels are paid at cost up to 9,800 yen a night. In central Tokyo the limit is 13,200 yen a night. Breakfast is included, and dinner comes out of the daily allowance.

=== Booking ===
Book through the travel desk at least five working days ahead. A late booking needs a manager's approval in writing, sent before the trip.

== Daily allowance ==
The daily allowance is 2,400 yen for each day away. A trip that returns the same day earns half of it.

= Security Handbook =
This page lists the rules for laptops and badges.

== Laptops ==
Lock the screen whenever you leave your desk. Report a lost laptop to the help desk within one hour.
"""


def _spans(text: str) -> list[tuple[int, str, str]]:
    return [(h.level, text[h.start : h.end], h.title) for h in wiki_headings(text)]


def test_pages_sections_and_subsections():
    assert _spans(WIKI) == [
        (1, "= Expense Handbook =", "Expense Handbook"),
        (2, "== Lodging ==", "Lodging"),
        (3, "=== Booking ===", "Booking"),
        (2, "== Daily allowance ==", "Daily allowance"),
        (1, "= Security Handbook =", "Security Handbook"),
        (2, "== Laptops ==", "Laptops"),
    ]


def test_the_spaced_marks_of_a_corpus_dump_and_other_spellings():
    """WikiText-103 writes a space between the marks and around every line; MediaWiki needs no space
    inside; CRLF line ends and trailing spaces stay out of the heading."""
    dump = " = Harbour Museum = \n The museum opened in 1931 . \n = = History = = \n It began as a warehouse . \n"
    assert _spans(dump) == [(1, " = Harbour Museum =", "Harbour Museum"), (2, " = = History = =", "History")]
    assert _spans("==Access==\r\nBy bus.\r\n===  Parking  === \r\nNone.") == [
        (2, "==Access==", "Access"),
        (3, "===  Parking  ===", "Parking"),
    ]
    japanese = "== 概要 ==\n社内の申請手順をまとめたページです。\n=== 経費精算 ===\n月末までに申請する。\n"
    assert [h.title for h in wiki_headings(japanese)] == ["概要", "経費精算"]


@pytest.mark.parametrize(
    "text",
    [
        "== Notes ==\nOnly one heading line is no outline.\n",
        "Title\n=====\n\nBody\n\nOther\n=====\n",  # setext underlines, rules
        "a == b\nx = y = z\n",  # comparisons, assignments
        "== Rules =\ntext\n= Rules ==\ntext\n",  # marks that do not balance
        "= =\n== ==\n=== ===\n",  # no title
        "== " + "x" * 151 + " ==\n== " + "y" * 151 + " ==\n",  # too long for a title
        "======= Seven =======\n======= Marks =======\n",  # MediaWiki stops at six
        "text == Inline ==\nmore == Inline ==\n",  # not at the start of a line
    ],
)
def test_lines_that_are_no_outline(text: str):
    assert wiki_headings(text) == ()


def _inside_booking(chunks: list[Chunk]) -> list[Chunk]:
    """The chunks that lie in the text of the Booking section, after its heading line."""
    after = WIKI.index("=== Booking ===") + len("=== Booking ===")
    end = WIKI.index("== Daily allowance ==")
    return [c for c in chunks if after <= c.start and c.end <= end]


@pytest.mark.parametrize("strategy", ["recursive", "paragraph", "sentence", "fixed", "markdown", "semantic"])
def test_a_chunk_from_the_middle_of_a_section_names_it(strategy: str):
    for c in chunks_between(WIKI, strategy, 70, "=== Booking ===", "== Daily allowance =="):
        assert c.headings == ("Expense Handbook", "Lodging", "Booking"), c


def test_markdown_puts_the_path_in_embed_text_and_cuts_between_pages():
    doc = Document(WIKI, id="handbook.wiki", metadata={"format": "text", "title": "Staff wiki"})
    chunks = make_chunker("markdown", max_size=100).chunk(doc)
    inside = _inside_booking(chunks)
    assert inside
    for c in inside:
        assert c.embed_text.startswith("Staff wiki\nExpense Handbook > Lodging > Booking\n\n"), c.embed_text
        assert c.embed_text.endswith(c.text)
    laptops = next(c for c in chunks if "Report a lost laptop" in c.text)
    assert laptops.embed_text.startswith("Staff wiki\nSecurity Handbook > Laptops\n\n")
    # the end of one page never shares a chunk with the next page, though they fit 200 characters together
    wide = make_chunker("markdown", max_size=200).chunk(doc)
    assert not any("half of it" in c.text and "laptops and badges" in c.text for c in wide)


def test_a_page_source_saved_as_markdown():
    """In a ``.md`` with no ``#`` heading the wiki lines are its outline, outside code and tables; where the
    Markdown has ``#`` headings of its own, they are the outline and a wiki line is text."""
    doc = Document(WIKI, metadata={"format": "markdown"})
    assert [h.title for h in document_outline(doc).headings][:3] == ["Expense Handbook", "Lodging", "Booking"]
    fenced = "```text\n== Lodging ==\n== Booking ==\n```\n\n| a | b |\n|---|---|\n| == x == | y |\n"
    assert document_outline(Document(fenced, metadata={"format": "markdown"})).headings == ()
    own = "# Handbook\n\n== Lodging ==\nAt cost.\n== Booking ==\nEarly.\n"
    chunks = make_chunker("recursive", max_size=30).chunk(Document(own, metadata={"format": "markdown"}))
    assert {c.headings for c in chunks} == {("Handbook",)}


def test_a_wiki_page_of_rules_has_its_articles_below_its_sections():
    text = (
        "== 第1章 総則 ==\n（目的）\n第1条　この規程は出張の旅費を定める。\n第2条　役員にも適用する。\n"
        "== 第2章 国内出張 ==\n第3条　宿泊費は実費とする。\n"
    )
    assert [(h.level, h.title) for h in written_headings(text)] == [
        (2, "第1章 総則"),
        (3, "第1条（目的）"),
        (3, "第2条"),
        (2, "第2章 国内出張"),
        (3, "第3条"),
    ]
    assert text_headings(text) == written_headings(text)


def test_a_wiki_file_in_a_folder(tmp_path: Path):
    """A folder's ``.wiki`` files are read (as plain text) and chunked with their headings."""
    (tmp_path / "handbook.wiki").write_text(WIKI, encoding="utf-8")
    assert load(tmp_path / "handbook.wiki").format == "text"
    booking = next(r for r in chunk_rows(tmp_path, 70) if "travel desk" in r["text"])
    assert booking["headings"] == ["Expense Handbook", "Lodging", "Booking"]


def test_the_cache_is_cleared():
    wiki_headings(WIKI)
    assert _wiki_headings.cache_info().currsize >= 1
    clear_text_caches()
    assert _wiki_headings.cache_info().currsize == 0


_LINES = st.sampled_from(
    [
        "= Page =",
        "== Section ==",
        "=== Sub section ===",
        " = = Spaced = = ",
        "==Tight==",
        "== Unbalanced =",
        "=====",
        "a == b",
        "== a = b ==",
        "Body text of the page.",
        "",
        "\t== Tabbed ==\t",
        "== CRLF ==\r",
        "====== Six ======",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINES, max_size=30))
def test_headings_are_exact_line_spans_in_order(lines: list[str]):
    text = "\n".join(lines)
    headings = wiki_headings(text)
    for h in each_heading_in_order(text, headings):
        line = text[h.start : h.end]
        assert "\n" not in line and "\r" not in line
        marks = line.strip()
        assert marks.startswith("=") and marks.endswith("=") and h.title in line
        opening = marks[: marks.index(h.title)]
        assert h.level == opening.count("=") and set(opening) <= {"=", " ", "\t"}
        assert marks.endswith(opening.rstrip(" \t"))  # the same marks close it
        assert h.title == h.title.strip() and h.title[0] != "=" and h.title[-1] != "="


def test_a_passage_cut_out_of_a_hit_names_its_own_section():
    """`kireme search --budget` and `kireme ask` cite a passage cut out of a larger hit of a wiki page by
    the section its lines lie in, not by the path its whole hit shares."""
    from tests.stored_hits import stored_hits

    from kireme.index.passages import assemble_hits

    doc = Document(WIKI, id="handbook", metadata={"format": "text"})
    chunks = make_chunker("markdown", max_size=400).chunk(doc)
    hit = next(c for c in chunks if "travel desk" in c.text)
    assert hit.headings == ("Expense Handbook", "Lodging")  # it holds the Booking heading line
    made = assemble_hits(
        stored_hits([hit], doc_id="handbook", fmt="text"),
        140,
        {"handbook": WIKI}.get,
        query="travel desk booking",
    )
    (passage,) = made.passages
    assert "travel desk" in passage.span.text and passage.span.start > hit.start  # cut out of the hit
    assert passage.to_dict()["headings"] == ["Expense Handbook", "Lodging", "Booking"]
