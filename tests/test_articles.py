"""Rules and laws written as plain text: their chapters and articles are headings (`kireme.text.articles`).

A chunk cut from the middle of an article of a ``.txt`` or PDF rulebook names the article, its caption and
its chapter in ``headings`` — and, with ``--context headings`` (the ``markdown`` strategy's default, what
``kireme index`` uses), in front of its ``embed_text`` — as a chunk of a Markdown file names its section.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.written_outline import chunk_rows, each_heading_in_order

from kireme import Chunk, Document, make_chunker
from kireme.load import load
from kireme.structure.layout import document_outline
from kireme.text.articles import _article_headings, article_headings, text_headings
from kireme.text.caches import clear_text_caches

RULES = """株式会社あおば精機　旅費規程

第１章　総則

（目的）
第１条　この規程は、従業員が業務のため出張する場合の旅費について定める。
２　この規程に定めのない事項は、会社がその都度定める。

第２章　国内出張

（宿泊費）
第２条　宿泊費は、１泊につき９，８００円を上限として実費を支給する。
２　前項の規定にかかわらず、東京都特別区内に宿泊する場合の上限は、１泊につき１３，２００円とする。
３　宿泊費には朝食代を含めるものとし、夕食代は日当から支出する。

第３条（日当）　日当は、出張１日につき２，４００円とする。
２　日帰り出張の日当は、１，２００円とする。

第３条の２　研修のための出張には、前条の規定を準用する。

第三章　海外出張

第十条　海外出張の旅費は、別表に定める。

附　則（２０２５年３月１０日規程第７号）
第１条　この規程は、２０２５年４月１日から施行する。
第２条　旧規程は廃止する。
"""


def _spans(text: str) -> list[tuple[int, str, str]]:
    return [(h.level, text[h.start : h.end], h.title) for h in article_headings(text)]


def test_chapters_articles_captions_and_supplement():
    assert _spans(RULES) == [
        (1, "第１章　総則", "第１章 総則"),
        (2, "（目的）\n第１条", "第１条（目的）"),
        (1, "第２章　国内出張", "第２章 国内出張"),
        (2, "（宿泊費）\n第２条", "第２条（宿泊費）"),
        (2, "第３条（日当）", "第３条（日当）"),
        (2, "第３条の２", "第３条の２"),
        (1, "第三章　海外出張", "第三章 海外出張"),
        (2, "第十条", "第十条"),
        (1, "附　則（２０２５年３月１０日規程第７号）", "附則（２０２５年３月１０日規程第７号）"),
        (2, "第１条", "第１条"),
        (2, "第２条", "第２条"),
    ]


def test_levels_without_chapters():
    """``附則`` over the articles that follow it when there is no chapter; sections under chapters."""
    text = "（目的）\n第1条 目的を定める。\n第2条 対象を定める。\n附則\n第1条 公布の日から施行する。\n"
    assert [(level, title) for level, _, title in _spans(text)] == [
        (2, "第1条（目的）"),
        (2, "第2条"),
        (1, "附則"),
        (2, "第1条"),
    ]
    nested = "第1章 総則\n第1節 通則\n第1条 定める。\n第2節 雑則\n第2条 定める。\n"
    assert [(level, title) for level, _, title in _spans(nested)] == [
        (1, "第1章 総則"),
        (2, "第1節 通則"),
        (3, "第1条"),
        (2, "第2節 雑則"),
        (3, "第2条"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "第３条第２項の規定により、申請書を提出する。\n第４条第１項に定める期限による。\n",  # references in prose
        "第1条件として、在籍一年以上であること。\n第2条件として、上長の推薦を得ること。\n",
        "第2章では、出張の手続きを説明する。\n第3章では、精算の方法を説明する。\n",
        "第２章　出張の手続きを説明する。\n第３章　精算の方法を説明する。\n",  # titles that are sentences
        "先日の会議で次の条文が話題になった。\n第３条　宿泊費は実費とする。\n以上です。\n",  # one article
        "今年の第1回目の会議です。\n第2回目は来月です。\n",
    ],
)
def test_prose_and_single_articles_are_no_outline(text: str):
    assert article_headings(text) == ()


def test_rows_of_a_pasted_table_are_not_headings():
    table = "条文\t見出し\t改正日\n第1条\t目的\t2024-04-01\n第2条\t定義\t2024-04-01\n第3条\t適用\t2025-04\n"
    text = "規程の改正履歴は次の表のとおり。\n\n" + table + "\n以上。\n"
    assert len(article_headings(text)) == 3  # read alone, the rows look like articles
    assert text_headings(text) == ()  # inside the pasted table they are cells
    doc = Document(text, metadata={"format": "text"})
    chunks = make_chunker("recursive", max_size=60).chunk(doc)
    assert all(c.headings == () for c in chunks)


def _inside_article_2(chunks: list[Chunk]) -> list[Chunk]:
    """The chunks that lie in the text of 第２条 after its number (none holds its heading)."""
    after = RULES.index("第２条") + len("第２条")
    end = RULES.index("第３条（日当）")
    return [c for c in chunks if after <= c.start and c.end <= end]


@pytest.mark.parametrize("strategy", ["recursive", "paragraph", "sentence", "fixed", "markdown", "semantic"])
def test_a_chunk_from_the_middle_of_an_article_names_it(strategy: str):
    doc = Document(RULES, id="rules.txt", metadata={"format": "text"})
    options = {"similarity": "bigram", "cache_dir": False} if strategy == "semantic" else {}
    chunks = make_chunker(strategy, max_size=60, **options).chunk(doc)
    for c in chunks:
        assert RULES[c.start : c.end] == c.text
    inside = _inside_article_2(chunks)
    assert inside
    for c in inside:
        assert c.headings == ("第２章 国内出張", "第２条（宿泊費）"), c


def test_context_headings_puts_the_path_in_embed_text():
    doc = Document(RULES, id="旅費規程.txt", metadata={"format": "text", "title": "旅費規程"})
    for chunker in (
        make_chunker("recursive", max_size=80, context="headings"),
        make_chunker("markdown", max_size=100),
    ):
        inside = _inside_article_2(chunker.chunk(doc))
        assert inside
        for c in inside:
            assert c.embed_text.startswith("旅費規程\n第２章 国内出張 > 第２条（宿泊費）\n\n"), c.embed_text
            assert c.embed_text.endswith(c.text)


def test_markdown_cuts_plain_rules_between_articles():
    """The ``markdown`` strategy reads the articles as sections: no chunk holds the end of one article and
    the start of the next when they do not fit together (the tail of 第２条 went with 第３条 before)."""
    doc = Document(RULES, id="rules.txt", metadata={"format": "text"})
    chunks = make_chunker("markdown", max_size=120).chunk(doc)
    for c in chunks:
        assert not ("夕食代" in c.text and "日当は、出張１日" in c.text)
    tail = next(c for c in chunks if "夕食代" in c.text)
    assert tail.headings == ("第２章 国内出張", "第２条（宿泊費）")


def test_pdf_text_is_read_too():
    doc = Document(RULES, id="rules.pdf", metadata={"format": "pdf"})
    chunks = make_chunker("recursive", max_size=80).chunk(doc)
    assert any(c.headings == ("第２章 国内出張", "第２条（宿泊費）") for c in chunks)


def test_a_word_file_without_heading_styles(tmp_path: Path):
    """Word gives each line a paragraph (a blank line between the caption and its article) and no heading
    style: rendered as Markdown with no heading, its articles are the outline."""
    docx = pytest.importorskip("docx")
    document = docx.Document()
    for line in RULES.splitlines():
        document.add_paragraph(line)
    path = tmp_path / "旅費規程.docx"
    document.save(str(path))
    doc = load(path)
    assert doc.format == "docx"
    titles = [h.title for h in document_outline(doc).headings]
    assert titles[:4] == ["第１章 総則", "第１条（目的）", "第２章 国内出張", "第２条（宿泊費）"]
    chunks = make_chunker("recursive", max_size=60).chunk(doc)
    tokyo = next(c for c in chunks if "東京都特別区内" in c.text)
    assert tokyo.headings == ("第２章 国内出張", "第２条（宿泊費）")


def test_articles_in_code_and_tables_of_markdown_are_text():
    text = "```text\n第1条 目的\n第2条 定義\n```\n\n| 条 | 内容 |\n|---|---|\n| 第3条 | 適用 |\n"
    doc = Document(text, metadata={"format": "markdown"})
    assert document_outline(doc).headings == ()


def test_markdown_files_keep_their_own_headings():
    """In Markdown the ``#`` headings are the outline; an article line is a line of text there."""
    text = "# 旅費規程\n\n## 宿泊費\n\n第２条　宿泊費は実費とする。\n第３条　日当は定額とする。\n"
    chunks = make_chunker("recursive", max_size=40).chunk(Document(text, metadata={"format": "markdown"}))
    assert {c.headings for c in chunks} <= {("旅費規程",), ("旅費規程", "宿泊費")}


def test_kireme_chunk_reports_the_path(tmp_path: Path):
    path = tmp_path / "旅費規程.txt"
    path.write_text(RULES, encoding="utf-8")
    tokyo = next(r for r in chunk_rows(path, 80) if "東京都特別区内" in r["text"])
    assert tokyo["headings"] == ["第２章 国内出張", "第２条（宿泊費）"]


def test_the_cache_is_cleared():
    article_headings(RULES)
    assert _article_headings.cache_info().currsize >= 1
    clear_text_caches()
    assert _article_headings.cache_info().currsize == 0


_LINES = st.sampled_from(
    [
        "第１章　総則",
        "第2章 勤務",
        "（目的）",
        "(定義)",
        "第１条　この規則は目的を定める。",
        "第2条（適用）この規則は全員に適用する。",
        "第十四条の二の二　前条の規定は準用する。",
        "第3条",
        "２　前項の規定にかかわらず、別に定める。",
        "　一　始業　午前９時",
        "附　則",
        "附則（令和５年規程第２号）",
        "第３条第２項の規定による。",
        "第1条件を満たすこと。",
        "本文の行です。",
        "",
        "\t第4条\tタブで区切った行",
        "　第5条　字下げした条",
        "第6条\r",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINES, max_size=30))
def test_headings_are_exact_line_spans_in_order(lines: list[str]):
    text = "\n".join(lines)
    headings = article_headings(text)
    for h in each_heading_in_order(text, headings):
        body = text[h.start : h.end]
        if "\n" in body:  # a caption on a line above its article, a blank line between at most
            caption, *blank, article = body.split("\n")
            assert caption.strip().endswith(("）", ")", "】"))
            assert article.lstrip(" \t\u3000").startswith("第")
            assert len(blank) <= 1 and not "".join(blank).strip()
        assert h.title.startswith(("第", "附則"))
        assert "\n" not in h.title and "\u3000" not in h.title


CARRIED = """# 旅費規程

## 第２章　国内出張

### 第２条　宿泊費

宿泊費は、１泊につき９，８００円を上限として実費を支給する。前項の規定にかかわらず、東京都特別区内に宿泊する場合の上限は、１泊につき１３，２００円とする。宿泊費には朝食代を含めるものとし、夕食代は日当から支出する。連泊の場合も同じとする。

## 第３章　海外出張

### 第１０条　旅費

海外出張の旅費は、別表に定める。
"""


@pytest.mark.parametrize("max_size", [88, 97, 106])
def test_a_chapter_heading_with_no_text_leaves_room_for_the_article_path(max_size: int):
    """``## 第２章`` has no text of its own and goes with its first article; the chunks cut from that
    article carry both headings in front, so the room kept for that context is the article's, not the
    chapter's alone — the context gave way entirely (no path, no title) where a piece filled the
    chapter's room (CONTRIBUTING.md of the Japanese React docs: two chunks of 342 and 336 characters)."""
    doc = Document(CARRIED, id="travel.md", metadata={"format": "markdown"})
    chunks = make_chunker("markdown", max_size=max_size).chunk(doc)
    article_line_end = CARRIED.index("宿泊費\n") + len("宿泊費")
    body_end = CARRIED.index("## 第３章")
    inside = [c for c in chunks if article_line_end < c.start < body_end]
    assert inside
    for c in inside:
        assert c.embed_text.endswith(c.text)
        assert (
            "第２章\u3000国内出張 > 第２条\u3000宿泊費" in c.embed_text[: len(c.embed_text) - len(c.text)]
        ), c.embed_text
        assert len(c.embed_text) <= max_size


def test_a_passage_cut_out_of_a_hit_names_its_own_article():
    """`kireme search --budget` and `kireme ask` cite each passage by its heading path; one cut out of a
    larger hit of a plain-text rulebook is cited by the article its lines lie in, not by the path its whole
    hit shares (``第２章 国内出張`` for a chunk that holds 第２条's heading)."""
    from tests.stored_hits import stored_hits

    from kireme.index.passages import assemble_hits

    doc = Document(RULES, id="rules", metadata={"format": "text"})
    chunks = make_chunker("markdown", max_size=200).chunk(doc)
    hit = next(c for c in chunks if "東京都特別区内" in c.text)
    assert hit.headings == ("第２章 国内出張",)  # it holds the article's heading line
    made = assemble_hits(
        stored_hits([hit], doc_id="rules", fmt="text"), 60, {"rules": RULES}.get, query="東京 宿泊"
    )
    (passage,) = made.passages
    assert "東京都特別区内" in passage.span.text and "第２条" not in passage.span.text
    assert passage.to_dict()["headings"] == ["第２章 国内出張", "第２条（宿泊費）"]
