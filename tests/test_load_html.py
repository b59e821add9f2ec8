"""HTML pages to Markdown: exact output, furniture dropped, tables as regions, lenient but loud parsing."""

from __future__ import annotations

import logging

import pytest
from markdown_it import MarkdownIt

from kireme import LoadError, make_chunker
from kireme.load.html import escape_line, load_html

PAGE = """<!DOCTYPE html>
<html lang="ja">
<head><meta charset="utf-8"><title> 旅費規程 </title>
<script>var tracker = "<table>";</script><style>p { color: red; }</style></head>
<body>
<nav><a href="/">ホーム</a> &gt; <a href="/rules">社内規程</a></nav>
<h1>旅費規程</h1>
<!-- 改訂履歴は別ページ -->
<p>この規程は<b>東京</b>都
  本社に勤務する社員の出張に適用する。</p>
<h2>第3条 宿泊費</h2>
<p>宿泊費は実費を支給する。<br>ただし上限を超える分は自己負担とする。</p>
<ul>
  <li>領収書を提出すること</li>
  <li>例外:
    <ul><li>会社が手配した宿泊</li><li>研修施設</li></ul>
  </li>
</ul>
<ol><li>申請する</li><li>承認を受ける</li></ol>
<pre><code class="language-python"># 上限の計算
def limit(grade):
    return {"部長": 15000}.get(grade, 11000)
</code></pre>
<p>Use <code>limit()</code> for checks. 1. This is not a list.</p>
<p># not a heading either</p>
<table>
  <caption>宿泊費の上限</caption>
  <thead><tr><th>役職</th><th>上限（円）</th><th>備考</th></tr></thead>
  <tbody>
    <tr><td>部長</td><td>15,000</td><td>東京 | 大阪</td></tr>
    <tr><td>一般</td><td>11,000</td></tr>
  </tbody>
</table>
<blockquote><p>規程は予告なく改定される。</p></blockquote>
<footer>© Example Co.</footer>
<script>console.log("dropped")</script>
</body>
</html>
"""

EXPECTED = """# 旅費規程

この規程は東京都本社に勤務する社員の出張に適用する。

## 第3条 宿泊費

宿泊費は実費を支給する。
ただし上限を超える分は自己負担とする。

- 領収書を提出すること
- 例外:
  - 会社が手配した宿泊
  - 研修施設

1. 申請する
2. 承認を受ける

```python
# 上限の計算
def limit(grade):
    return {"部長": 15000}.get(grade, 11000)
```

Use `limit()` for checks. 1. This is not a list.

\\# not a heading either

宿泊費の上限

| 役職 | 上限（円） | 備考 |
| --- | --- | --- |
| 部長 | 15,000 | 東京 \\| 大阪 |
| 一般 | 11,000 |  |

> 規程は予告なく改定される。
"""


def _md() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


def test_page_renders_to_exact_markdown() -> None:
    doc = load_html(PAGE.encode("utf-8"), "rules.html")
    assert doc.text == EXPECTED
    assert doc.title == "旅費規程"
    assert doc.format == "html"
    assert doc.metadata["source"] == "rules.html"
    assert doc.metadata["encoding"] == "utf-8" and doc.metadata["bom"] is False
    assert doc.metadata["bytes"] == len(PAGE.encode("utf-8"))
    assert "ホーム" not in doc.text and "dropped" not in doc.text and "Example Co." not in doc.text


def test_table_region_covers_the_table_lines() -> None:
    doc = load_html(PAGE.encode("utf-8"), "rules.html")
    (region,) = doc.regions
    assert region.kind == "table" and dict(region.metadata) == {"table": "宿泊費の上限"}
    table = doc.text[region.start : region.end]
    assert table.startswith("| 役職 | 上限（円） | 備考 |")
    assert table.endswith("| 一般 | 11,000 |  |")
    assert doc.text[region.end] == "\n"


def test_markdown_parser_reads_the_structure_back() -> None:
    doc = load_html(PAGE.encode("utf-8"), "rules.html")
    tokens = _md().parse(doc.text)
    headings = [(t.tag, tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings == [("h1", "旅費規程"), ("h2", "第3条 宿泊費")]
    kinds = [t.type for t in tokens if t.level == 0 and not t.type.endswith("_close")]
    assert "table_open" in kinds and "fence" in kinds
    assert "bullet_list_open" in kinds and "ordered_list_open" in kinds
    fence = next(t for t in tokens if t.type == "fence")
    assert fence.info == "python" and fence.content.startswith("# 上限の計算\n")
    header = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "th_open"]
    assert header == ["役職", "上限（円）", "備考"]


def test_main_is_preferred_and_tables_without_caption_are_numbered() -> None:
    html = """<html><body><header>サイト名</header>
    <main><h1>Q&amp;A</h1><table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>
    <table><tr><th>x</th></tr></table></main><div>sidebar text</div></body></html>"""
    doc = load_html(html.encode(), "qa.html")
    assert doc.text == "# Q&A\n\n| a | b |\n| --- | --- |\n| c |  |\n\n| x |\n| --- |\n"
    assert doc.title == "Q&A"  # no <title>: the first <h1>
    assert [dict(r.metadata) for r in doc.regions] == [{"table": "table 1"}, {"table": "table 2"}]
    assert [doc.text[r.start : r.end].split("\n")[0] for r in doc.regions] == ["| a | b |", "| x |"]


def test_japanese_split_across_inline_elements_stays_joined() -> None:
    doc = load_html("<p><b>東京</b>都の<a href='#'>支社</a>\n  へ出張</p>".encode(), "a.html")
    assert doc.text == "東京都の支社へ出張\n"
    english = load_html(b"<p>Tokyo\n  branch <i>office</i></p>", "b.html")
    assert english.text == "Tokyo branch office\n"


def test_unclosed_table_loads_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    truncated = (
        "<html><body><h1>経費</h1><table><tr><th>項目</th><th>金額</th></tr><tr><td>交通費</td><td>1,2"
    )
    with caplog.at_level(logging.WARNING, logger="kireme.load.html"):
        doc = load_html(truncated.encode(), "cut.html")
    assert doc.text == "# 経費\n\n| 項目 | 金額 |\n| --- | --- |\n| 交通費 | 1,2 |\n"
    assert len(doc.regions) == 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert (
        warnings[0].getMessage() == "cut.html: HTML is not well-formed (unclosed <table>); parsed leniently"
    )


def test_well_formed_page_does_not_warn(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="kireme.load.html"):
        load_html(PAGE.encode(), "rules.html")
    assert not caplog.records


def test_shift_jis_page_decodes() -> None:
    html = '<html><head><meta charset="shift_jis"><title>経費精算</title></head><body><p>①締め切りは２５日</p></body></html>'
    doc = load_html(html.encode("cp932"), "sjis.html")
    assert doc.text == "①締め切りは２５日\n"
    assert doc.title == "経費精算"
    assert doc.metadata["encoding"] == "cp932"
    explicit = load_html(html.encode("cp932"), "sjis.html", encoding="cp932")
    assert explicit.text == doc.text
    with pytest.raises(LoadError, match=r"sjis.html: not valid utf-8"):
        load_html(html.encode("cp932"), "sjis.html", encoding="utf-8")


def test_empty_and_non_html_input() -> None:
    empty = load_html(b"<html></html>", "empty.html")
    assert empty.text == "" and empty.regions == () and empty.title == ""
    for data in (b"", b"   \n", b"just some words"):
        with pytest.raises(LoadError) as info:
            load_html(data, "x.html")
        assert "\n" not in str(info.value) and str(info.value).startswith("x.html: ")


def test_lines_that_look_like_markdown_are_escaped() -> None:
    html = "<p>- 箇条書きではない<br>===<br>2) 番号でもない<br>&gt; 引用でもない</p><p>| 表でもない</p>"
    doc = load_html(html.encode(), "esc.html")
    assert doc.text == "\\- 箇条書きではない\n\\===\n2\\) 番号でもない\n\\> 引用でもない\n\n\\| 表でもない\n"
    tokens = _md().parse(doc.text)
    assert [t.type for t in tokens if t.level == 0] == ["paragraph_open", "paragraph_close"] * 2
    assert escape_line("10. x") == "10\\. x" and escape_line("10.5 kg") == "10.5 kg"


def test_pre_with_backticks_gets_a_longer_fence_and_nested_lists_indent() -> None:
    html = (
        "<pre>```\nraw  \n```</pre>"
        "<ol start='9'><li>九</li><li>十<ul><li>下位</li></ul></li></ol>"
        "<dl><dt>用語</dt><dd>説明文</dd></dl>"
    )
    doc = load_html(html.encode(), "misc.html")
    assert doc.text == "````\n```\nraw\n```\n````\n\n9. 九\n10. 十\n    - 下位\n\n- **用語**: 説明文\n"
    tokens = _md().parse(doc.text)
    assert next(t.type for t in tokens if t.level == 0) == "fence"
    assert sum(t.type == "bullet_list_open" for t in tokens) == 2  # the nested one and the definitions


def test_a_definition_list_keeps_each_term_with_its_definition() -> None:
    """``<dt>`` became a bold paragraph and ``<dd>`` the next one: a term ended chunks while its
    definition began the next (``**Retry-After**`` | ``How many seconds to wait…``), and the lead-in
    above the list did not reach it. Each term and its definition are one list item now."""
    html = (
        "<main><h2>Rate limits</h2><p>The API answers 429 and includes the following headers:</p><dl>"
        "<dt>X-RateLimit-Limit</dt><dd>The number of requests allowed per second for this workspace.</dd>"
        "<dt>X-RateLimit-Remaining</dt><dd>The number of requests left in the current window.</dd>"
        "<div><dt>Retry-After</dt><dt>Retry-In</dt><dd>How many seconds to wait before retrying.</dd></div>"
        "<dt>Example</dt><dd><p>A client waits:</p><pre><code>sleep(retry_after)</code></pre></dd>"
        "<dt>Notes</dt></dl></main>"
    )
    doc = load_html(html.encode(), "api.html")
    assert doc.text == (
        "## Rate limits\n\nThe API answers 429 and includes the following headers:\n\n"
        "- **X-RateLimit-Limit**: The number of requests allowed per second for this workspace.\n"
        "- **X-RateLimit-Remaining**: The number of requests left in the current window.\n"
        "- **Retry-After** / **Retry-In**: How many seconds to wait before retrying.\n"
        "- **Example**: A client waits:\n\n  ```\n  sleep(retry_after)\n  ```\n"
        "- **Notes**\n"
    )
    for size in (60, 90, 120, 200):
        for c in make_chunker("markdown", max_size=size).chunk(doc):
            end = c.text.rstrip()
            assert not end.endswith("**") or end.endswith("**Notes**"), (size, c.text)  # a term goes on


def test_every_line_is_clean() -> None:
    doc = load_html(PAGE.encode(), "rules.html")
    assert doc.text.endswith("\n") and not doc.text.endswith("\n\n")
    assert "\n\n\n" not in doc.text
    assert all(line == line.rstrip() for line in doc.text.split("\n"))


BLOG = """<!doctype html><html><head><title>社内ブログ</title></head><body>
<header class="site"><a href="/">社内ブログ</a> <a href="/about">このブログについて</a></header>
<article><header><h1>春の研修の報告</h1><p>人事部より</p></header>
<p>新入社員の研修を三週間行いました。</p><footer>タグ：研修</footer></article>
<article><header><h1>夏季休暇の取り方</h1></header>
<p>休暇は七月から九月の間に五日取れます。</p><aside>注意：申請は二週間前までに。</aside></article>
<footer class="site">© 総務部</footer></body></html>"""


def test_every_article_of_a_page_and_its_own_header_are_kept() -> None:
    """Only the first ``<article>`` was kept, and the ``<header>`` holding its title was dropped as page
    furniture: the second article, both titles and its note were lost without a word."""
    text = load_html(BLOG.encode("utf-8"), "blog.html").text
    for kept in (
        "# 春の研修の報告",
        "人事部より",
        "# 夏季休暇の取り方",
        "五日取れます",
        "注意：申請は二週間前までに",
    ):
        assert kept in text, text
    assert "このブログについて" not in text and "© 総務部" not in text  # the page's own header and footer


def test_comments_in_articles_do_not_replace_the_page() -> None:
    page = """<html><body><div id="content"><h1>パスワードの変更</h1>
<p>パスワードは九十日ごとに変更してください。十二文字以上にします。</p>
<p>変更は社内ポータルの設定画面から行います。</p></div>
<section class="comments"><article><p>分かりやすいです。</p></article></section></body></html>"""
    text = load_html(page.encode("utf-8"), "p.html").text
    assert "# パスワードの変更" in text and "九十日ごと" in text and "分かりやすいです" in text


def test_blocks_inside_a_table_cell_are_not_glued() -> None:
    page = """<html><body><table><tr><th>プラン</th><th>内容</th></tr>
<tr><td>基本</td><td><ul><li>apple</li><li>pear</li></ul></td></tr>
<tr><td>上位</td><td><p>first para.</p><p>Second para.</p></td></tr>
<tr><td>入れ子</td><td><table><tr><td>内側A</td><td>内側B</td></tr></table></td></tr></table></body></html>"""
    text = load_html(page.encode("utf-8"), "t.html").text
    assert "| 基本 | apple pear |" in text and "| 上位 | first para. Second para. |" in text
    assert "内側A 内側B" in text


def test_an_images_alt_text_is_not_glued_to_the_words_around_it() -> None:
    page = """<html><body><main><p>Click <img src="g.png" alt="the gear icon">to open the settings.</p>
<p><img src="s.png" alt="設定画面">設定を開きます。</p><p>Logo:<img src="l.png" alt="">done.</p></main></body></html>"""
    text = load_html(page.encode("utf-8"), "i.html").text
    assert text.splitlines() == [
        "Click the gear icon to open the settings.",
        "",
        "設定画面 設定を開きます。",
        "",
        "Logo:done.",
    ]


def test_header_rows_of_a_table_become_one_header_that_names_every_column() -> None:
    """A second header row (``通常``/``延長`` under a ``期間`` spanning both) was passed as a data row, and
    only the first (``期間 | 期間``) went with the rows: their pieces could not tell the two apart."""
    page = """<html><body><table><thead>
<tr><th rowspan="2">区分</th><th colspan="2">期間</th><th rowspan="2">備考</th></tr>
<tr><th>通常</th><th>延長</th></tr></thead>
<tbody><tr><td>営業部</td><td>3日</td><td>5日</td><td>繁忙期を除く</td></tr></tbody></table></body></html>"""
    text = load_html(page.encode("utf-8"), "t.html").text
    assert text.splitlines()[:3] == [
        "| 区分 | 期間 通常 | 期間 延長 | 備考 |",
        "| --- | --- | --- | --- |",
        "| 営業部 | 3日 | 5日 | 繁忙期を除く |",
    ]


def test_text_after_the_end_of_the_page_is_kept_as_a_browser_shows_it() -> None:
    """libxml2 dropped everything after ``</html>`` (a notice pasted below a saved page, two pages in one
    file) without a word; a browser shows it at the end of the body."""
    page = """<html><head><title>経費精算</title></head><body><h1>経費精算</h1>
<p>領収書は月末までに提出します。</p></body></html>
<p>追記：十二月は二十日締めです。</p>
Plain words after the page.
<!-- a comment only -->"""
    document = load_html(page.encode("utf-8"), "after.html")
    assert document.text.splitlines() == [
        "# 経費精算",
        "",
        "領収書は月末までに提出します。",
        "",
        "追記：十二月は二十日締めです。",
        "",
        "Plain words after the page.",
    ]
    assert document.metadata["title"] == "経費精算"
    two = """<html><head><title>一月</title></head><body><h1>一月の予定</h1><p>棚卸し。</p></body></html>
<html><head><title>二月</title></head><body><h1>二月の予定</h1><p>監査。</p></body></html>"""
    text = load_html(two.encode("utf-8"), "two.html").text
    assert "# 一月の予定" in text and "# 二月の予定" in text and "監査。" in text
    assert "二月\n" not in text  # the second page's <title> is not shown, as in a browser


def test_a_page_with_only_blanks_and_comments_after_its_end_is_read_as_before() -> None:
    page = "<html><body><p>本文。</p></body></html>\n<!-- saved 2026-12-01 -->\n\n"
    assert load_html(page.encode("utf-8"), "p.html").text == "本文。\n"


def test_divs_with_the_roles_of_page_furniture_are_dropped() -> None:
    """Many sites build the menu, the banner and the footer from ``<div>``s with ARIA roles, not ``<nav>`` or
    ``<footer>``: the address and copyright were read as the last question's answer. A ``complementary``
    note inside a section is content, as an ``<aside>`` there is."""
    page = (
        '<html><body><div id="header" role="banner"><ul><li>ホーム</li><li>会社案内</li></ul></div>'
        '<div role="navigation">トップ | FAQ</div>'
        "<h1>よくある質問</h1><h2>Q. 送料はいくらですか</h2><p>全国一律880円です。</p>"
        '<section><h2>返品</h2><div role="complementary"><p>関連: 交換について</p></div>'
        "<p>未開封なら30日以内に返品できます。</p></section>"
        '<div role="search"><p>サイト内検索</p></div>'
        '<div role="contentinfo"><p>〒100-0000 東京都千代田区</p><p>Copyright 2026</p></div></body></html>'
    )
    text = load_html(page.encode("utf-8"), "faq.html").text
    assert text == (
        "# よくある質問\n\n## Q. 送料はいくらですか\n\n全国一律880円です。\n\n## 返品\n\n"
        "関連: 交換について\n\n未開封なら30日以内に返品できます。\n"
    )
