"""Markdown headings come from a CommonMark parser, and every chunk of a Markdown document knows its path."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from kireme import Document, chunk, make_chunker
from kireme._native import native
from kireme.text.markdown import (
    HeadingPaths,
    Outline,
    _Found,
    _inline,
    _inline_text,
    _parsed_outline,
    _parser,
    _plain,
    _plain_outline,
    _plain_paragraph_starts_python,
    _scanned_block,
    _scanned_list,
    _scanned_outline,
    front_matter,
    has_block_syntax,
    markdown_headings,
    markdown_outline,
    paragraph_starts,
)
from kireme.text.quick import has_content, holds

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


# ---------------------------------------------------------------- the unparsed outline of plain text
# Line openings: plain text and blank lines (which keep a text on the fast path: most examples), and
# block markers of every kind, indentation and characters markdown-it does not call space (one such line
# sends the text to the parser, or must give the parser's outline where it does not).
_PLAIN = [*("", "", "", " ", "\t ", "x", "あ", "テキスト", "a|b", "1x", "2024年", "\u3000", "\ufeff", "\x0c")]
_MARKED = [
    *("\x00", "\\#", "  ", "    ", "\t", "#", "# ", "###### ", ">", "- ", "-", "* ", "+ ", "_", "___", "="),
    *("===", "---", "```", "~~~", "<div>", "<!-- c -->", "[a]: /u", "|", "| a |", ":", ":--|", "1. ", "1)"),
    "12.",
]
_NESTED = ["- x", "> y", "1. z", "```", "~~~ py", "# h", "| c |", "|--|", "<p>", "    code", "***", "[r]: /u"]
_REST = ["", "", "text", "テキスト。", " a ", "|b|", "\t", "  ", "**x**", "`c`", " # x", "\\", "---"]


@st.composite
def _texts(draw: st.DrawFn) -> str:
    openings = st.sampled_from(_PLAIN)
    rest = st.sampled_from(_REST)
    if draw(st.booleans()):  # some lines may carry a block marker, nested ones after indentation
        openings = st.one_of(openings, st.sampled_from(_MARKED))
        rest = st.sampled_from(_REST + _NESTED)
    blank = st.sampled_from([("", ""), (" ", ""), ("\t", " ")])
    lines = draw(st.lists(st.one_of(blank, st.tuples(openings, rest)), max_size=12))
    newlines = ["\n", "\n", "\r\n", "\r"] if draw(st.booleans()) else ["\n", "\n", "\r\n"]
    breaks = draw(st.lists(st.sampled_from(newlines), min_size=len(lines), max_size=len(lines)))
    text = "".join(a + b + nl for (a, b), nl in zip(lines, breaks, strict=True))
    return text.rstrip("\r\n") if draw(st.booleans()) else text


def _fast_and_parsed(text: str) -> tuple[Outline | None, Outline]:
    fm_end, fm_title = front_matter(text)
    fast = None if fm_end else _plain_outline(text)
    return fast, _parsed_outline(text, fm_end, fm_title)


@settings(max_examples=3000, deadline=None)
@given(_texts())
def test_unparsed_outline_of_plain_text_is_the_parsers(text: str) -> None:
    """A text with no block syntax is not parsed: its outline (paragraph starts) is the parser's."""
    fast, parsed = _fast_and_parsed(text)
    if fast is not None:
        assert fast == parsed
        assert not parsed.headings and not parsed.code_blocks and not parsed.tables


# The single patterns the two scans stand for (``^`` under ``re.M``, ``\A`` or a line feed): the reference
_BLOCK_SYNTAX_REFERENCE = re.compile(r"^(?:[ \t]+[^ \t\r\n]|[#>*+\-_=`~<\[|:]|[0-9]+[.)])", re.M)
_PARAGRAPH_START_REFERENCE = re.compile(r"(?:\A|\n[ \t]*\r?\n)(?:[ \t]*\r?\n)*(?=[^ \t\r\n])")


@settings(max_examples=1000, deadline=None)
@given(st.one_of(_texts(), st.text(alphabet=" \t\r\n#-1.)x|", max_size=20)))
def test_block_syntax_and_paragraph_starts_are_the_single_patterns(text: str) -> None:
    """The first line matched and every other searched from its line feed find what one ``^``-anchored
    (``re.M``) pattern finds, and the paragraph starts what ``(?:\\A|\n…)`` finds."""
    assert has_block_syntax(text) == (_BLOCK_SYNTAX_REFERENCE.search(text) is not None)
    assert paragraph_starts(text) == [m.end() for m in _PARAGRAPH_START_REFERENCE.finditer(text)]


@settings(max_examples=1000, deadline=None)
@given(st.one_of(_texts(), st.text(alphabet=" \t\r\n#-1.)x|\x00\u3000", max_size=20)))
def test_plain_paragraph_starts_in_c_are_the_patterns(text: str) -> None:
    """The C pass over the lines (`kireme._speedups.plain_paragraph_starts`) answers what the two patterns
    do: ``None`` for block syntax or a lone ``\\r``, else the same paragraph starts."""
    in_c = native("plain_paragraph_starts")
    if in_c is None:
        pytest.skip("kireme's C extension is not built")
    assert in_c(text) == _plain_paragraph_starts_python(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "一行だけ",
        "段落一\n続き\n\n段落二\r\n\r\n  \n\t\n段落三",
        "\n\n先頭が空行\n \n末尾も\n\n",
        "見出し風 # でも行頭ではない\n2024年の記録\n1x\n",
        "\ufeff本文\n\n\u3000全角空白で始まる行\n",
    ],
)
def test_plain_texts_take_the_fast_path_and_agree(text: str) -> None:
    fast, parsed = _fast_and_parsed(text)
    assert fast == parsed


@pytest.mark.parametrize(
    "text",
    [
        "# 見出し",
        "本文\n===",
        "本文\n---",
        "    コード",
        "本文\n  続き",
        "> 引用",
        "- 項目",
        "1. 項目",
        "1) 項目",
        "```\nコード\n```",
        "<div>\n</div>",
        "[a]: /url",
        "a | b\n:-- | --",
        "| a | b |",
        "一行目\r二行目",
        "---\ntitle: x\n---\n本文",
    ],
)
def test_block_syntax_is_left_to_the_parser(text: str) -> None:
    fast, _ = _fast_and_parsed(text)
    assert fast is None


@settings(max_examples=3000, deadline=None)
@given(
    st.text(st.sampled_from([*"ab あ漢 \t\u3000\xa0.,()|'\"/?", *"\n!#$%&*+-:<=>@[\\]^_`{}~"]), max_size=12)
)
def test_unparsed_inline_text_is_the_parsers(content: str) -> None:
    """Heading titles and table cells with no inline syntax are not parsed: their text is the parse's."""
    inline = Token("inline", "", 0, content=content)
    known = _inline_text(inline)
    if known is not None:
        children = _inline(inline, {})
        assert known == _plain(inline, children)
        assert known == (_plain(inline, children) if children else "")


# Around each star: letters, kana, kanji, spaces of every kind markdown-it knows, ASCII punctuation and
# Unicode punctuation and symbols (「」・〜＄→), so that every flanking case of ``scanDelims`` is met.
_AROUND_STARS = st.text(
    st.sampled_from([*"ab あ漢 \t\u3000\xa0\u2003", *"/{}-.,()'\"?#$%+:;=>@^|~", *"「」・〜＄→、"]),
    max_size=5,
)


@settings(max_examples=3000, deadline=None)
@given(_AROUND_STARS, _AROUND_STARS.filter(bool), _AROUND_STARS)
def test_two_stars_are_read_as_the_parser_reads_them(before: str, inside: str, after: str) -> None:
    """A title whose only inline syntax is two single stars (``{/*id*/}``) is not parsed: emphasis or two
    literal stars, as markdown-it decides."""
    content = f"{before}*{inside}*{after}"
    inline = Token("inline", "", 0, content=content)
    known = _inline_text(inline)
    assert known is not None
    assert known == _plain(inline, _inline(inline, {}))


def test_a_react_heading_id_is_emphasis_and_a_spaced_star_is_not() -> None:
    title = Token("inline", "", 0, content="次のステップ {/*whats-next*/}")
    assert _inline_text(title) == "次のステップ {/whats-next/}"
    spaced = Token("inline", "", 0, content="2 * 3 * 4 の計算")
    assert _inline_text(spaced) == "2 * 3 * 4 の計算"
    assert _inline_text(Token("inline", "", 0, content="**太字**")) is None  # a run of two: the parser


def _tokens(md: MarkdownIt, text: str) -> list[tuple[object, ...]]:
    return [
        (t.type, t.tag, t.nesting, t.level, t.map, t.info, t.markup, t.content, t.block, t.hidden)
        for t in md.parse(text, {})
    ]


_UNGUARDED = MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])


@settings(max_examples=3000, deadline=None)
@given(_texts())
def test_guarded_block_rules_give_the_same_tokens(text: str) -> None:
    """The first-character and indentation guards in front of markdown-it-py's block rules change no
    token: the parse is the plain parser's, nested lists, quotes and fences included."""
    assert _tokens(_parser(), text) == _tokens(_UNGUARDED, text)


@pytest.mark.parametrize(
    "text",
    [
        GUIDE,
        "> - a\n>   > ```\n>   > x\n> 1. b\n\n    code\n\t\tmore\n<div>\n\n</div>\n[r]: /u 't'\n\n***\n- - -\n",
        "| a | b |\n|---|:-:|\n| 1 | 2 |\n> | c |\n> |---|\n\n1) x\n2) y\n   ~~~\n   z\n   ~~~\n#\n",
    ],
)
def test_guarded_block_rules_on_nested_blocks(text: str) -> None:
    assert _tokens(_parser(), text) == _tokens(_UNGUARDED, text)


# Blocks for the scanned outline: what `_scanned_outline` reads itself (headings, fences, comments, HTML
# blocks, paragraphs), what it leaves to the parser (lists, quotes, tables, indented code, definitions)
# and lines made to mislead it (fences and comments left open, closers inside lists, lazy lines).
_BLOCK_LINES = [
    *("# 概要", "## `Rc<T>` の[使い方](a.md)", "### 手順 ###", "#タグ", "####### 七つ", "# [参照][r]"),
    *("```", "```rust", "````", "~~~", "~~~ text", "``` `x`", "  ```", "    ```", "- ```", "> ```"),
    *(
        "<!--",
        "-->",
        "<!-- 一行 -->",
        "原文 -->",
        "<div>",
        "</div>",
        '<img src="a.svg" />',
        "<span>注</span>",
    ),
    *(
        "<script>",
        "</script>",
        "<?php",
        "?>",
        "<![CDATA[",
        "]]>",
        "<!DOCTYPE html>",
        "| 列 | 値 |",
        "|---|---|",
    ),
    *(
        "- 項目",
        "* 項目",
        "+ 項目",
        "1. 手順",
        "2) 手順",
        "  - 入れ子",
        "    字下げ",
        "> 引用",
        "> # 引用見出し",
    ),
    *("---", "***", "===", "- - -", ":::note", "[r]: /url", "[r]: /url 'タイトル'", "[リンク](u)", "[a]"),
    # container directives and lines that start with a colon: paragraph text unless a delimiter row follows
    *(":::", "::: tip 注意", ": 定義 | 値", ":--|:--", ":---"),
    *("本文です。", "`code` で始まる行", "*強調* の行", "2024年の記録", "続きの行", "\t字下げ", "a | b"),
    *("``二重`` の行", "~~取り消し~~ の行", "~ 一つ", "```x`y` の行"),
]


@st.composite
def _documents(draw: st.DrawFn) -> str:
    lines = draw(
        st.lists(st.one_of(st.sampled_from(_BLOCK_LINES), st.sampled_from(["", "", " "])), max_size=24)
    )
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    text = newline.join(lines)
    return text + newline if draw(st.booleans()) else text


@settings(max_examples=4000, deadline=None)
@given(_documents())
def test_scanned_outline_is_the_parsers(text: str) -> None:
    """The outline read block by block, with the parser only on regions, is the whole parse's."""
    fm_end, fm_title = front_matter(text)
    scanned = _scanned_outline(text, fm_end, fm_title)
    assert scanned is not None
    assert scanned == _parsed_outline(text, fm_end, fm_title)


@settings(max_examples=3000, deadline=None)
@given(
    st.text(alphabet=" \t\r\n<>/:-!_.aZ9名x", max_size=40),
    st.integers(min_value=0, max_value=45),
    st.integers(min_value=0, max_value=45),
)
@example("a\n-->\rb\n</x>\r", 0, 13)  # a "\r" ends a closing line only before "\n"
@example("a\n:::\r", 0, 6)
@example("a\n</div>\n", 0, 7)  # the search ends inside the tag
def test_line_marks_in_c_are_the_patterns(text: str, lo: int, hi: int) -> None:
    """The C pass over the line feeds (`kireme._speedups.line_marks`) finds what `_CLOSER_LINE` and
    `_OPENER_HINT` find searched from ``lo`` to ``hi``: the same closing-tag lines, the same line starts."""
    import kireme.text.markdown as markdown

    if markdown._NATIVE_LINE_MARKS is None:
        pytest.skip("kireme's C extension is not built")
    hi = min(hi, len(text))
    for closers in (True, False):
        assert markdown._NATIVE_LINE_MARKS(text, lo, hi, closers) == markdown._line_marks_python(
            text, lo, hi, closers
        )


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet=" \t\r\n<>/:-!_.aZ9名x", max_size=40))
@example("x\n  <Tabs>\n")
@example("x\n:::")
@example("<!--")
def test_opening_lines_told_as_the_pattern_tells_them(text: str) -> None:
    """`has_opening_lines`, answered from the C pass over the line feeds, is the pattern's answer; `holds`
    is ``in``, and `has_content` a stripped slice's truth."""
    import kireme.text.markdown as markdown

    expected = markdown._OPENER_RUN.match(text) is not None or markdown._OPENER_HINT.search(text) is not None
    assert markdown.has_opening_lines(text) == expected
    for needle, gate in (("<!--", ""), ("-->", ">"), ("</", ""), ("```", "`")):
        assert holds(text, needle, gate) == (needle in text)
    for a in range(len(text) + 1):
        assert has_content(text, a, len(text)) == bool(text[a:].strip())
        assert has_content(text, 0, a) == bool(text[:a].strip())


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="#- |\t\r\n\x00aZ名`>", max_size=60))
@example("# 見出し\r\n\r\n本文\x00です\r\n")
@example("a\rb\n===\r")
def test_newlines_and_nul_read_as_markdown_it_reads_them(text: str) -> None:
    """kireme's parser skips markdown-it's ``normalize`` rule only where it would change nothing: a text
    with ``\r`` or NUL parses to the tokens of the parser as shipped."""
    from kireme.text.markdown import _parser

    shipped = MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])
    ours = [(t.type, t.map, t.content, t.markup) for t in _parser().parse(text, {})]
    assert ours == [(t.type, t.map, t.content, t.markup) for t in shipped.parse(text, {})]


# lines made to test the C scan's edges: runs of marks just short of or past what opens a block, a closing
# fence indented three or four columns, marks after spaces, a heading closed by its own marks
_EDGE_LINES = [
    *("##", "######", "####### x", "#\tタブ", "# 閉じ #", "# 閉じ#", "## #", "#"),
    *("``", "~~", "```", "````", "~~~~", "   ```", "    ```", "  ~~~ ", "```~~~", "``` ", "~~~ `a`"),
    *("<!---->", "<!-- -->", "<!--", "-->", " <!-- 字下げ -->", "<p>", "<", "<x"),
    *(
        "-",
        "- ",
        "+x",
        "*",
        "1.",
        "1)x",
        "12345.",
        "9)",
        "---",
        "- -",
        "===",
        "=",
        "__",
        "***x",
        ":",
        "::",
        "-:|",
    ),
    *(
        "   # 三つ",
        "    # 四つ",
        "  > 引用",
        "   |",
        "[a]: /u",
        "[a]",
        "[x]:",
        "本文。",
        "続き",
        "a | b",
        "|",
    ),
]


@settings(max_examples=3000, deadline=None)
@given(
    st.one_of(
        _documents(),
        _texts(),
        st.lists(st.sampled_from([*_EDGE_LINES, "", " ", "\t"]), max_size=16).map("\n".join),
        st.lists(st.sampled_from([*_EDGE_LINES, ""]), max_size=16).map("\r\n".join),
    )
)
def test_scanned_outline_in_c_is_the_python_scan(text: str) -> None:
    """The simple blocks read in C (`kireme._speedups.scan_blocks`) give the outline `_scanned_block`
    gives reading every block in Python, on any lines; and the parser's, where the scan reads the text."""
    import kireme.text.markdown as markdown

    if markdown._NATIVE_SCAN_BLOCKS is None:
        pytest.skip("kireme's C extension is not built")
    fm_end, fm_title = front_matter(text)
    in_c = _scanned_outline(text, fm_end, fm_title)
    scan = markdown._NATIVE_SCAN_BLOCKS
    markdown._NATIVE_SCAN_BLOCKS = None
    try:
        in_python = _scanned_outline(text, fm_end, fm_title)
    finally:
        markdown._NATIVE_SCAN_BLOCKS = scan
    assert in_c == in_python
    if in_c is not None:
        assert in_c == _parsed_outline(text, fm_end, fm_title)


@settings(max_examples=2000, deadline=None)
@given(_texts())
# a line a block could start with, holding a "|", above a delimiter row: markdown-it reads a table first
@example("# | c |\n-|--|\n")
@example("```| a\n-|-\n")
@example("<!-- | -->\n-|-\n")
def test_scanned_outline_of_any_lines_is_the_parsers(text: str) -> None:
    fm_end, fm_title = front_matter(text)
    scanned = _scanned_outline(text, fm_end, fm_title)
    if scanned is not None:
        assert scanned == _parsed_outline(text, fm_end, fm_title)


@pytest.mark.parametrize(
    "text",
    [
        GUIDE,
        # a list item's fence ends with the item; the column-0 fence after it stays open over the blank line
        "- a\n  ```\n  x\n```\ny\n\nz\n```\n\n# 見出し\n",
        # a comment runs over blank lines and hides a heading; an unclosed one runs to the end
        "<!--\n# Original\n\nmore\n-->\n\n# 訳\n\n<!--\n本文\n\n# 見えない\n",
        # an HTML block of type 6 runs to the blank line, a heading line inside it included
        "<div>\n# 中\n</div>\n\n# 外\n",
        # a definition after the heading that reads it, in a region
        "# [見出し][r]\n\n- 項目\n\n[r]: /url\n\n本文\n",
        # a paragraph that turns into a setext heading or a table on a later line
        "一行目\n二行目\n===\n\n名前 | 値\n--- | ---\na | 1\n\n本文\n",
        # a region ended by a paragraph that starts with inline code, and a fence closed by a longer run
        "> 引用\n\n`x` の説明\n\n````\n```\n````\n",
        "---\ntitle: 表題\n---\n\n# 見出し\n\n本文\n",
    ],
)
def test_scanned_outline_on_tricky_documents(text: str) -> None:
    fm_end, fm_title = front_matter(text)
    assert _scanned_outline(text, fm_end, fm_title) == _parsed_outline(text, fm_end, fm_title)


@pytest.mark.parametrize(
    ("text", "scanned"),
    [
        ("`kireme chunk` で文書を切ります。\n続きの行\n\n次\n", True),
        ("``a`b`` の行\n", True),
        ("~~古い手順~~ は使いません。\n", True),
        ("~ 一つだけ\n", True),
        ("```x`y` は柵ではない\n", False),  # a run of three: left to the parser, like a fence
        ("`x` の説明\n===\n", False),  # turns into a setext heading on its second line
    ],
)
def test_paragraphs_opening_with_code_spans_are_read_without_the_parser(text: str, scanned: bool) -> None:
    """A paragraph whose first line opens with a code span or a strikethrough (no fence) is read as a
    paragraph, not handed to the parser; the outline is the parser's either way."""
    assert (_scanned_block(_Found(text), 0, {}) is not None) is scanned
    assert _scanned_outline(text, 0, "") == _parsed_outline(text, 0, "")


# Lists for the list reader: markers of every kind at indentations 0–7, one to five spaces after the
# marker, item texts that are plain or that open something else (a nested marker, a break, a heading, a
# fence, a table, a definition), plain lines (lazy ones too) and blank lines.
_LIST_MARKERS = ["-", "*", "+", "1.", "2.", "1)", "10.", "0."]
_ITEM_TEXTS = [
    *(
        "項目",
        "**太字** の説明",
        "[リンク](a.md) を見る",
        "`code` の例",
        "_強調_",
        "2024年",
        "\\# 見出しでない",
        "型は `a | b` です",
    ),
    *("[ ] 未完了", "`x` の値", "~ 約", "=等号", "+1 件", "- 入れ子", "1. 入れ子", "***", "---", "# 見出し"),
    *("```", "~~~", "``", "<div>"),
    *("| a |", "[r]: /u", "> 引用", "", ":::", "1.5倍"),
]
_LIST_LINES = [
    *(
        "続きの行",
        "2. 段落の中の番号",
        "1. 段落の中の一番",
        "**続き**",
        "---",
        "===",
        "    字下げ",
        "\t字下げ",
    ),
    *("text", "`x`", "# 見出し", "<p>", "[a]", "3) 手順"),
    *("a | b", "--|--", "| --- |", ":-:|---"),  # a table in an item needs a delimiter row
]


@st.composite
def _lists(draw: st.DrawFn) -> str:
    plain = draw(st.booleans())  # only what the reader takes, so that half the lists exercise it
    texts = _ITEM_TEXTS[:11] if plain else _ITEM_TEXTS
    others = _LIST_LINES[:5] if plain else _LIST_LINES
    first = draw(st.sampled_from(_LIST_MARKERS[:4])) + " " + draw(st.sampled_from(_ITEM_TEXTS[:8]))
    lines = [first]
    for _ in range(draw(st.integers(0, 10))):
        kind = draw(st.sampled_from(["item", "item", "item", "line", "blank"]))
        indent = " " * draw(st.integers(0, 7))
        if kind == "item":
            spaces = " " * draw(st.sampled_from([1, 1, 1, 2, 3, 4] if plain else [1, 2, 3, 4, 5]))
            marker = draw(st.sampled_from(_LIST_MARKERS))
            lines.append(indent + marker + spaces + draw(st.sampled_from(texts)))
        elif kind == "line":
            lines.append(indent + draw(st.sampled_from(others)))
        else:
            lines.append(draw(st.sampled_from(["", " ", "   "])))
    after = draw(st.sampled_from(["", "\n\n本文。", "\n\n# 次の節", "\n本文。"]))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    return newline.join(lines) + after.replace("\n", newline)


@settings(max_examples=4000, deadline=None)
@given(_lists())
def test_lists_read_without_the_parser_are_the_parsers(text: str) -> None:
    """A list region read from its indentation alone (`_scanned_list`) has the whole parse's outline:
    the same list starts, the same item starts at every depth."""
    fm_end, fm_title = front_matter(text)
    assert _scanned_outline(text, fm_end, fm_title) == _parsed_outline(text, fm_end, fm_title)


@pytest.mark.parametrize(
    "text",
    [
        "- 一つ目\n- 二つ目\n  - 入れ子\n    続き\n\n  段落\n- 三つ目\n",
        "1. 手順\n2. 手順\n   - 補足\n10. 手順\n",
        "- 箇条\n+ 別のリスト\n* また別\n1) 番号\n",
        "* **太字** の説明\n  怠惰な行\nも続き\n* [リンク](a.md)\n\n\n* 空行二つの後\n",
        "- 段落\n  2. 番号は割り込めない\n  1. 一番なら入れ子\n",
        " - 字下げ一\n   - 入れ子\n  - 兄弟\n",
    ],
)
def test_plain_lists_are_read_without_the_parser(text: str) -> None:
    """These lists take the reader's path (it must not be vacuous) and agree with the parse."""
    assert _scanned_list(_Found(text), 0, len(text))
    assert _scanned_outline(text, 0, "") == _parsed_outline(text, 0, "")


@pytest.mark.parametrize(
    "text",
    [
        "- 項目\n      - 四桁下げ\n",  # four columns into the item: the parser decides
        "- 項目\n\n      コード\n",  # indented code in the item
        "- 項目\n  | a | b |\n  |---|---|\n",  # a table
        "- 項目\n  ```\n  x\n  ```\n",  # a fence
        "- \n  空の項目\n",
        "-     五つの空白\n",
        "- 項目\n\n本文の段落\n- 次\n",  # a paragraph back at the top level
        "- [r]: /url\n",
        "-\t項目\n",
    ],
)
def test_lists_with_more_than_plain_items_are_left_to_the_parser(text: str) -> None:
    assert not _scanned_list(_Found(text), 0, len(text))
    assert _scanned_outline(text, 0, "") == _parsed_outline(text, 0, "")


@settings(max_examples=500, deadline=None)
@given(_documents(), st.data())
def test_span_titles_are_the_spans_titles(text: str, data: st.DataObject) -> None:
    """`HeadingPaths.titles` (a chunk's headings and subheadings) says what `span` says, for any span."""
    paths = HeadingPaths(markdown_headings(text))
    for _ in range(10):
        start = data.draw(st.integers(0, len(text)))
        end = data.draw(st.integers(start, len(text)))
        span = paths.span(start, end)
        assert paths.titles(start, end) == (
            tuple(h.title for h in span.path),
            [h.title for h in span.inside],
        )


def test_a_heading_anchor_is_not_part_of_its_title() -> None:
    """Translated docs keep the original anchor after the heading (VitePress and Pandoc ``{#id}``, the
    React docs' MDX ``{/*id*/}``): the renderer hides it, and so do the heading path and the citation."""
    text = (
        "# フックの使い方 {/*using-hooks*/}\n\n本文です。\n\n"
        "## 環境変数 {#env-variables .note}\n\n`VITE_` で始まる変数だけが公開される。"
        "それ以外の変数はサーバーの中にだけ残る。\n\n"
        "## 集合 {a, b} の書き方\n\n波かっこは見出しの一部。\n\n## {#only-an-anchor}\n\n見出しが錨だけ。\n"
    )
    titles = [h.title for h in markdown_outline(text).headings]
    assert titles == ["フックの使い方", "環境変数", "集合 {a, b} の書き方", "{#only-an-anchor}"]
    doc = Document(text, metadata={"format": "markdown"})
    chunks = make_chunker("markdown", max_size=60).chunk(doc)
    env = next(c for c in chunks if "それ以外" in c.text)  # under the heading, its path in front
    assert env.headings == ("フックの使い方", "環境変数")
    assert env.embed_text.split("\n\n")[0] == "フックの使い方\n環境変数"
    assert all("{/" not in c.embed_text.removesuffix(c.text) for c in chunks)


def test_a_plain_texts_outline_made_fast_is_the_dataclasss() -> None:
    """`paragraphs_outline` sets the fields itself: it equals (and hashes as) ``Outline(block_starts=…)``,
    and every field of `Outline` has a plain default it can copy (a field added with a default factory would
    be shared between outlines: this test then fails)."""
    from dataclasses import MISSING, fields

    from kireme.text.markdown import paragraphs_outline

    assert all(f.default is not MISSING for f in fields(Outline))
    made = paragraphs_outline((0, 12, 40))
    assert made == Outline(block_starts=(0, 12, 40)) and hash(made) == hash(Outline(block_starts=(0, 12, 40)))
    assert markdown_outline("一つ目の段落。\n\n二つ目の段落。") == Outline(block_starts=(0, 9))
