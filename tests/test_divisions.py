"""English contracts and handbooks written as plain text: their parts, articles and sections are headings
(`kireme.text.divisions`).

A chunk cut from the middle of a section of a ``.txt`` or PDF contract names the section and its article in
``headings`` and, with ``--context headings`` (the ``markdown`` strategy's default, what ``kireme index``
uses), in front of its ``embed_text``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.written_outline import chunk_rows, chunks_between, each_heading_in_order

from kireme import Chunk, Document, make_chunker
from kireme.text.articles import written_headings
from kireme.text.caches import clear_text_caches
from kireme.text.divisions import _division_headings, division_headings

CONTRACT = """SERVICES AGREEMENT

ARTICLE 1
DEFINITIONS
In this agreement the Provider is the party that runs the service and the Client is the party that pays for it.

ARTICLE 2 – FEES AND PAYMENT
Section 2.1 Fees. The Client pays the monthly fee listed in Appendix A for each month of service.
Section 2.2 Late payment
An invoice unpaid after thirty days bears interest at one percent a month. The Provider may suspend the service after a second reminder. Section 3 of this agreement still applies while the service is suspended.

Article 3: Term and Termination
Either party may end this agreement with ninety days' written notice.

Appendix A: Fee Schedule
The monthly fee is 1,200 dollars.
"""


def _spans(text: str) -> list[tuple[int, str, str]]:
    return [(h.level, text[h.start : h.end], h.title) for h in division_headings(text)]


def test_articles_sections_and_appendices():
    assert _spans(CONTRACT) == [
        (1, "ARTICLE 1\nDEFINITIONS", "Article 1 DEFINITIONS"),
        (1, "ARTICLE 2 – FEES AND PAYMENT", "Article 2 FEES AND PAYMENT"),
        (3, "Section 2.1 Fees.", "Section 2.1 Fees"),
        (3, "Section 2.2 Late payment", "Section 2.2 Late payment"),
        (1, "Article 3: Term and Termination", "Article 3 Term and Termination"),
        (1, "Appendix A: Fee Schedule", "Appendix A Fee Schedule"),
    ]


def test_levels_by_kind_and_by_dots():
    text = "PART I\nGeneral\nChapter 1 Scope\nSection 1 Who is covered\nSection 1.1 Staff\n§ 2 Visitors\n"
    assert [(h.level, h.title) for h in division_headings(text)] == [
        (1, "Part I"),
        (2, "Chapter 1 Scope"),
        (3, "Section 1 Who is covered"),
        (4, "Section 1.1 Staff"),
        (3, "§ 2 Visitors"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Section 3 of this agreement applies.\nArticle 5 shall apply from April.\n",  # references in prose
        "section 1 Scope\narticle 2 Fees\n",  # keywords in lower case
        "Section 4 Fees\nThe fee is due monthly.\n",  # a single heading line is a quotation
        "Part of the fee is due now.\nChapter and verse are given below.\n",  # no number
        "Section 2a Fees\nSECTION3 Terms\n",  # no space after the number, or before it
        "Section 1 The Client pays the monthly fee listed in the appendix for each month of the service\n"
        "Section 2 The Provider runs the service every day of the year without any exception at all\n",
    ],
)
def test_prose_and_single_lines_are_no_outline(text: str):
    assert division_headings(text) == ()


def _inside_section_2_2(chunks: list[Chunk]) -> list[Chunk]:
    """The chunks that lie in the text of Section 2.2 after its heading line."""
    after = CONTRACT.index("Section 2.2 Late payment") + len("Section 2.2 Late payment")
    end = CONTRACT.index("Article 3:")
    return [c for c in chunks if after <= c.start and c.end <= end]


@pytest.mark.parametrize("strategy", ["recursive", "paragraph", "sentence", "fixed", "markdown", "semantic"])
def test_a_chunk_from_the_middle_of_a_section_names_it(strategy: str):
    for c in chunks_between(CONTRACT, strategy, 90, "Section 2.2 Late payment", "Article 3:"):
        assert c.headings == ("Article 2 FEES AND PAYMENT", "Section 2.2 Late payment"), c


def test_markdown_puts_the_path_in_embed_text():
    doc = Document(CONTRACT, id="agreement.txt", metadata={"format": "text", "title": "Services Agreement"})
    chunks = make_chunker("markdown", max_size=160).chunk(doc)
    inside = _inside_section_2_2(chunks)
    assert inside
    for c in inside:
        assert c.embed_text.startswith(
            "Services Agreement\nArticle 2 FEES AND PAYMENT > Section 2.2 Late payment\n\n"
        ), c.embed_text
    # the articles are sections of their own: the end of Article 2 does not share a chunk with Article 3
    assert not any("suspended." in c.text and "ninety days" in c.text for c in chunks)


def test_japanese_articles_win_where_there_are_more_of_them():
    text = "第1条　目的を定める。\n第2条　適用範囲を定める。\n第3条　定義を定める。\nSection 1 Scope\nSection 2 Terms\n"
    assert [h.title for h in written_headings(text)] == ["第1条", "第2条", "第3条"]


def test_kireme_chunk_reports_the_path(tmp_path: Path):
    path = tmp_path / "agreement.txt"
    path.write_text(CONTRACT, encoding="utf-8")
    late = next(r for r in chunk_rows(path, 90) if "second reminder" in r["text"])
    assert late["headings"] == ["Article 2 FEES AND PAYMENT", "Section 2.2 Late payment"]


def test_the_cache_is_cleared():
    division_headings(CONTRACT)
    assert _division_headings.cache_info().currsize >= 1
    clear_text_caches()
    assert _division_headings.cache_info().currsize == 0


_LINES = st.sampled_from(
    [
        "ARTICLE 1",
        "DEFINITIONS",
        "Article 2 – Fees",
        "Section 2.1 Fees. The Client pays.",
        "SECTION 3: TERM",
        "§ 4 Notices",
        "Part II",
        "Appendix A: Forms",
        "Section 3 of this agreement applies.",
        "The Client pays monthly.",
        "",
        "  Chapter 5 Indented",
        "Section 6 Trailing.\r",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINES, max_size=30))
def test_headings_are_exact_line_spans_in_order(lines: list[str]):
    text = "\n".join(lines)
    headings = division_headings(text)
    for h in each_heading_in_order(text, headings):
        body = text[h.start : h.end]
        assert body.strip().split()[0].lower() in {"article", "section", "§", "part", "appendix", "chapter"}
        assert not body.endswith((" ", "\r", "\n"))
        assert body.count("\n") <= 1  # a title on the line below at most
        assert "\n" not in h.title and not h.title.endswith(".")
