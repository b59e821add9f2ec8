"""Markdown headings come from a CommonMark parser, and every chunk of a Markdown document knows its path."""

from __future__ import annotations

from kireme import Document, chunk
from kireme.text.markdown import HeadingPaths, markdown_headings

GUIDE = (
    "# 導入ガイド\r\n\r\n"
    "この文書はツールの導入手順をまとめたものです。\r\n\r\n"
    "## 準備\r\n\r\n"
    "必要なものを用意します。\r\n\r\n"
    "```bash\r\n# これは見出しではなくコメント\r\npip install kireme\r\n```\r\n\r\n"
    "インストール\r\n------\r\n\r\n"
    "コマンドを実行します。\r\n\r\n"
    "# 付録\r\n\r\n"
    "よくある質問をまとめました。\r\n"
)


def test_headings_skip_code_fences_and_find_setext() -> None:
    headings = markdown_headings(GUIDE)
    assert [(h.level, h.title) for h in headings] == [
        (1, "導入ガイド"),
        (2, "準備"),
        (2, "インストール"),
        (1, "付録"),
    ]
    for h in headings:
        assert GUIDE[h.start : h.end].startswith(("#", "インストール"))
        assert "\r" not in GUIDE[h.end - 1 : h.end]


def test_heading_paths_follow_levels() -> None:
    paths = HeadingPaths(markdown_headings(GUIDE))
    assert paths.at(0) == ("導入ガイド",)
    assert paths.at(GUIDE.index("pip install")) == ("導入ガイド", "準備")
    assert paths.at(GUIDE.index("コマンド")) == ("導入ガイド", "インストール")
    assert paths.at(GUIDE.index("よくある")) == ("付録",)


def test_markdown_chunks_carry_their_heading_path() -> None:
    doc = Document(GUIDE, id="guide.md", metadata={"format": "markdown"})
    chunks = chunk(doc, max_size=60)
    by_text = {c.text.splitlines()[0]: c.headings for c in chunks}
    assert all(doc.text[c.start : c.end] == c.text for c in chunks)
    assert by_text["## 準備"] == ("導入ガイド", "準備")
    assert by_text["# 付録"] == ("付録",)
    # plain text documents have no heading paths
    assert all(c.headings == () for c in chunk(Document(GUIDE, id="guide.txt"), max_size=60))


def test_markdown_sections_are_not_joined_and_fence_comments_are_not_headings() -> None:
    doc = Document(GUIDE, id="guide.md", metadata={"format": "markdown"})
    texts = [c.text for c in chunk(doc, max_size=60)]
    assert texts == [
        "# 導入ガイド\r\n\r\nこの文書はツールの導入手順をまとめたものです。",
        "## 準備\r\n\r\n必要なものを用意します。",
        "```bash\r\n# これは見出しではなくコメント\r\npip install kireme\r\n```",
        "インストール\r\n------\r\n\r\nコマンドを実行します。",
        "# 付録\r\n\r\nよくある質問をまとめました。",
    ]


def test_heading_paths_between_lists_the_headings_a_span_holds() -> None:
    text = "# 導入ガイド\n\n前書き。\n\n   ## 準備\n\n必要なもの。\n\n## 実行\n\nコマンド。\n"
    paths = HeadingPaths(markdown_headings(text))
    titles = lambda start, end: [h.title for h in paths.between(start, end)]  # noqa: E731
    assert titles(0, len(text)) == ["導入ガイド", "準備", "実行"]
    indented = text.index("   ## 準備")
    assert titles(indented + 3, len(text)) == ["実行"]  # starts inside the line of 準備: not "between"
    assert paths.chain(indented + 3)[-1].title == "準備" and paths.chain(indented + 3)[-1].end > indented + 3
    assert titles(text.index("前書き"), text.index("## 実行")) == ["準備"]
    assert titles(5, 5) == []
