"""The markdown/structure strategy: sections, tables, code blocks, context, on documents written for kireme."""

from __future__ import annotations

import logging
import unicodedata
from bisect import bisect_left, bisect_right

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.invariants import check_invariants
from tests.strategies import law_texts

from kireme import Document, make_chunker
from kireme.boundaries.levels import LINE, SENTENCE_LINE
from kireme.context import ContextBuilder
from kireme.document import Region
from kireme.errors import ConfigError
from kireme.length import Tokens
from kireme.structure.layout import _closer_spans, _opener_spans, code_line_cuts
from kireme.structure.tables import TableMode, fill_down_columns
from kireme.text.csvtable import csv_outline, record_spans
from kireme.text.leads import lead_ins
from kireme.text.markdown import (
    HeadingPaths,
    Outline,
    closer_runs,
    line_starts,
    markdown_outline,
    opener_runs,
)

RULES = """\
---
title: 出張旅費規程
---

# 出張旅費規程

この規程は、社員が業務のために出張する場合の旅費について定める。

## 第1章 総則

### 第1条 目的

出張の手続きと費用の精算を公正に行うことを目的とする。

### 第2条 適用範囲

正社員、契約社員およびパートタイム社員に適用する。

## 第2章 宿泊

宿泊費の上限は次の表のとおりとする。

| 区分 | 地域 | 上限額 | 備考 |
| --- | --- | --- | --- |
| 役員 | 東京 | 18,000円 | 朝食込み |
|  | 大阪 | 15,000円 |  |
|  | 福岡 | 13,000円 |  |
| 管理職 | 東京 | 14,000円 | 朝食込み |
|  | 大阪 | 12,000円 |  |
|  | 福岡 | 11,000円 |  |
| 一般社員 | 東京 | 11,000円 |  |
|  | 大阪 | 10,000円 |  |
|  | 福岡 | 9,000円 |  |

## 第3章 精算

精算は帰着後10日以内に行う。計算は次のスクリプトで確認できる。

```python
# 日当の計算（# で始まる行は見出しではない）
def daily_allowance(days: int, same_day: bool) -> int:
    if same_day:
        return 1_000

    return 2_000 * days
```

領収書のない支出は原則として認めない。
"""


def doc(text: str, fmt: str = "markdown", **metadata) -> Document:
    return Document(text, id="rules.md", metadata={"format": fmt, **metadata})


def chunk(text: str, fmt: str = "markdown", **options):
    return make_chunker("markdown", **options).chunk(doc(text, fmt))


def cuts(chunks) -> set[int]:
    return {c.start for c in chunks} | {c.end for c in chunks}


def test_outline_sees_front_matter_tables_fences_and_no_fake_headings() -> None:
    outline = markdown_outline(RULES)
    assert outline.title == "出張旅費規程"
    assert [h.title for h in outline.headings] == [
        "出張旅費規程",
        "第1章 総則",
        "第1条 目的",
        "第2条 適用範囲",
        "第2章 宿泊",
        "第3章 精算",
    ]
    (table,) = outline.tables
    assert table.columns == ("区分", "地域", "上限額", "備考")
    assert len(table.rows) == 9
    assert RULES[table.rows[1].start : table.rows[1].end] == "|  | 大阪 | 15,000円 |  |"
    (code,) = outline.code_blocks
    assert code.info == "python" and code.closed
    assert RULES[code.body[0] : code.body[1]].startswith("# 日当の計算")


def test_heading_paths_title_and_exact_offsets() -> None:
    chunks = chunk(RULES, max_size=160)
    check_invariants(RULES, chunks, max_size=160, unit="chars")
    assert all(c.title == "出張旅費規程" for c in chunks)
    by_text = {c.text.splitlines()[0]: c for c in chunks}
    assert by_text["## 第2章 宿泊"].headings == ("出張旅費規程", "第2章 宿泊")
    first_article = next(c for c in chunks if "出張の手続き" in c.text)
    assert first_article.headings[:2] == ("出張旅費規程", "第1章 総則")


def test_a_section_with_its_subsections_stays_whole_when_it_fits() -> None:
    chunks = chunk(RULES, max_size=160)
    chapter = next(c for c in chunks if c.text.startswith("## 第1章 総則"))
    assert "### 第1条 目的" in chapter.text and "### 第2条 適用範囲" in chapter.text
    # sibling chapters are never merged into one chunk
    assert not any("第1章" in c.text and "第2章" in c.text for c in chunks)


def test_no_cut_inside_a_table_row_and_every_piece_repeats_the_header() -> None:
    chunks = chunk(RULES, max_size=120)
    (table,) = markdown_outline(RULES).tables
    header = RULES[table.header[0] : table.header[1]]
    inside_rows = {p for r in table.rows for p in range(r.start + 1, r.end)}
    assert not cuts(chunks) & inside_rows
    pieces = [c for c in chunks if table.start <= c.start < table.end or c.start < table.start < c.end]
    assert len(pieces) > 1
    for c in pieces:
        assert header in c.embed_text
        assert c.size <= 120
    lead = next(c for c in chunks if "宿泊費の上限は" in c.text)
    assert lead.text.startswith("## 第2章 宿泊")  # the heading stays with its body


def test_a_code_block_that_fits_is_never_cut_and_a_large_one_is_reopened() -> None:
    (code,) = markdown_outline(RULES).code_blocks
    fits = chunk(RULES, max_size=260)
    assert any(c.start <= code.start and code.end <= c.end for c in fits)
    small = chunk(RULES, max_size=70, context_in_budget=False)  # 70 for the code lines alone
    pieces = [c for c in small if code.start <= c.start < code.end]
    assert len(pieces) >= 2
    lines = set()
    pos = 0
    for line in RULES.splitlines(keepends=True):
        lines.add(pos)
        pos += len(line)
    for c in pieces:
        line_start = max(p for p in lines if p <= c.start)
        assert not RULES[line_start : c.start].strip()  # between code lines, never inside one
        assert c.embed_text.count("```") == 2, c.embed_text  # every piece is a complete fence
        assert "```python" in c.embed_text
    assert "# 日当の計算" not in {h for c in small for h in c.headings}


def test_unclosed_fence_is_reported_and_does_not_swallow_the_rest(caplog) -> None:
    text = "# 手順\n\n```sh\nmake build\n\n## 次の節\n\n本文です。" + "説明が続く。" * 30
    with caplog.at_level(logging.WARNING):
        chunks = chunk(text, max_size=60)
    assert any("never closed" in r.getMessage() and "rules.md" in r.getMessage() for r in caplog.records)
    assert len(chunks) > 2 and all(c.size <= 60 for c in chunks)


def test_fill_down_completes_rows_without_touching_text() -> None:
    rows = chunk(RULES, max_size=120, table="rows")
    filled = chunk(RULES, max_size=120, table="fill-down")
    assert [(c.start, c.end, c.text) for c in rows] == [(c.start, c.end, c.text) for c in filled]
    joined = "\n".join(c.embed_text for c in filled)
    assert "| 管理職 | 大阪 | 12,000円 |  |" in joined
    assert "| 一般社員 | 福岡 | 9,000円 |  |" in joined
    assert "|  | 大阪 |" not in joined
    # the 備考 column has blanks too, but it is not a "same as above" column
    (table,) = markdown_outline(RULES).tables
    assert fill_down_columns(table) == {0}


def test_a_blank_under_a_new_group_is_not_filled_from_the_last_group() -> None:
    """The "same as above" columns are a hierarchy: a blank 中分類 in a row that starts a new 大分類 is
    blank, not the last 中分類 above it — the housing allowance was filed as a private-car item, in the
    filled rows, the records and the groups alike."""
    table = (
        "| 大分類 | 中分類 | 手当名 | 金額 |\n|---|---|---|---|\n"
        "| 通勤 | 電車 | 定期代 | 実費 |\n|  | 自家用車 | ガソリン代 | 1kmあたり15円 |\n"
        "| 住宅 |  | 家賃補助 | 20,000円 |\n|  |  | 単身赴任手当 | 30,000円 |\n"
        "| 資格 | IT | 基本情報技術者 | 5,000円 |\n|  |  | 応用情報技術者 | 10,000円 |\n"
    )
    filled = "\n".join(c.embed_text for c in chunk(table, max_size=400, table="fill-down", context="none"))
    assert "| 住宅 |  | 家賃補助 | 20,000円 |" in filled
    assert "| 住宅 |  | 単身赴任手当 | 30,000円 |" in filled
    assert "| 資格 | IT | 応用情報技術者 | 10,000円 |" in filled
    assert "| 通勤 | 自家用車 | ガソリン代 | 1kmあたり15円 |" in filled
    records = [c.embed_text for c in chunk(table, max_size=60, table="records", context="none")]
    housing = [r for r in records if "家賃補助" in r]
    assert housing and all("自家用車" not in r and "大分類: 住宅" in r for r in housing)
    groups = chunk(table, max_size=400, table="group-by:中分類", context="none")
    by_car = [c.embed_text for c in groups if c.embed_text.startswith("中分類: 自家用車")]
    assert by_car and all("家賃補助" not in text for text in by_car)


def test_group_by_gives_one_table_per_value_with_its_header() -> None:
    chunks = chunk(RULES, max_size=400, table="group-by:区分", context="none")
    groups = [c for c in chunks if "区分: " in c.embed_text]
    assert [c.embed_text.split("\n", 1)[0] for c in groups] == [
        "区分: 役員",
        "区分: 管理職",
        "区分: 一般社員",
    ]
    for c in groups:
        assert "| 区分 | 地域 | 上限額 | 備考 |" in c.embed_text
        value = c.embed_text.split("\n", 1)[0].removeprefix("区分: ")
        body_rows = [ln for ln in c.embed_text.splitlines() if ln.startswith("| ") and "---" not in ln][1:]
        assert body_rows and all(row.startswith(f"| {value} |") for row in body_rows)


def test_records_give_one_row_per_chunk_as_column_value_lines() -> None:
    chunks = chunk(RULES, max_size=400, table="records", context="none")
    records = [c for c in chunks if "上限額: " in c.embed_text]
    assert len(records) == 9
    osaka = records[4]
    assert "区分: 管理職\n地域: 大阪\n上限額: 12,000円" in osaka.embed_text
    assert osaka.text == "|  | 大阪 | 12,000円 |  |"  # text is still the exact row


RATES = "| Grade | City | Limit |\n| --- | --- | --- |\n| Exec | Tokyo | 18,000 |\n|  | Osaka | 15,000 |\n"


@pytest.mark.parametrize("context", ["none", "headings"])
def test_a_first_row_that_fits_is_not_cut_when_the_header_and_it_do_not_fit_together(context: str) -> None:
    """The header never went without its first row, so when the two were over the limit the first row was
    cut (``| Exec | Tokyo`` with the header, ``| 18,000 |`` alone): the header goes alone instead."""
    chunks = chunk(RATES, max_size=60, context=context)
    (table,) = markdown_outline(RATES).tables
    inside_rows = {p for r in table.rows for p in range(r.start + 1, r.end)}
    assert not cuts(chunks) & inside_rows
    assert chunks[0].text == "| Grade | City | Limit |\n| --- | --- | --- |"
    assert all(c.size <= 60 and len(c.embed_text) <= 60 for c in chunks)


def test_a_row_larger_than_a_chunk_is_cut_between_its_cells() -> None:
    """A row one character over the limit left its closing ``|`` as a chunk of its own."""
    text = "| id | description | amount |\n| --- | --- | --- |\n| 1 | short | 1 |\n"
    long_row = "| 2 | alpha beta gamma delta alpha beta gamma delta item | 2,222 |"
    chunks = chunk(text + long_row + "\n", max_size=65, context="none")
    assert [c.text for c in chunks][-2:] == [
        "| 2 | alpha beta gamma delta alpha beta gamma delta item |",
        "2,222 |",
    ]
    assert chunks[-1].embed_text == "| id | description | amount |\n| --- | --- | --- |\n2,222 |"
    csv = 'id,memo,amount\n1,"one, two three four five six","1,111"\n'
    doc = Document(csv, id="m.csv", metadata={"format": "csv", "title": "m"})
    pieces = [c.text for c in make_chunker("markdown", max_size=36, context="none").chunk(doc)]
    assert pieces == ["id,memo,amount", '1,"one, two three four five six",', '"1,111"']  # not inside quotes


@pytest.mark.parametrize("table", ["records", "fill-down"])
def test_with_no_context_the_repeated_header_and_rewritten_rows_stay_within_the_limit(table: str) -> None:
    """``--context none`` measured nothing: a repeated header or a row rewritten as a record took
    ``embed_text`` over ``max_size`` (78 characters at 60)."""
    text = "Region|Item|Price\n---|---|--:\nR1|short|1.00\nR3|item number 38 xxxxxxxxxxxxxxxxxxxxxxxxxxxx|8,592.56\n"
    for context in ("none", "headings"):
        chunks = chunk(text, max_size=60, context=context, table=table)
        assert all(len(c.embed_text) <= 60 for c in chunks), [c.embed_text for c in chunks]
        long_row = text.splitlines()[3]
        assert long_row in [c.text for c in chunks]  # a row that fits is never cut, even to be a record
    loose = chunk(text, max_size=60, context="none", table=table, context_in_budget=False)
    assert any(len(c.embed_text) > 60 for c in loose)  # told not to count: the header or record on top


def test_group_by_unknown_column_warns_and_keeps_rows(caplog) -> None:
    with caplog.at_level(logging.WARNING):
        chunks = chunk(RULES, max_size=120, table="group-by:部署")
    assert any("no column '部署'" in r.getMessage() for r in caplog.records)
    assert all(c.size <= 120 for c in chunks)


def test_an_unknown_group_by_column_is_said_once_per_table_with_a_lead_in(caplog) -> None:
    """A table with a lead-in above it is carved twice (without and with the lead-in): the warning came
    twice for one table."""
    text = (
        "# 宿泊費\n\n宿泊費の上限は次のとおりです：\n\n| 区分 | 地域 | 上限額 |\n|---|---|---|\n"
        + "".join(f"| 社員 | 地域{i} | {i},000円 |\n" for i in range(12))
    )
    with caplog.at_level(logging.WARNING):
        chunk(text, max_size=120, table="group-by:部署")
    said = [r for r in caplog.records if "no column '部署'" in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in said]


def test_table_mode_spec_parsing_and_errors() -> None:
    assert TableMode.parse("group-by 区分") == TableMode("group-by", "区分")
    assert TableMode.parse("group-by:区分").spec() == "group-by:区分"
    with pytest.raises(ConfigError, match="group-by:COLUMN"):
        make_chunker("markdown", table="group-by")
    with pytest.raises(ConfigError, match="unknown table mode"):
        make_chunker("markdown", table="columns")
    with pytest.raises(ConfigError, match="unknown context"):
        make_chunker("markdown", context="path")


def test_context_prefix_drops_headings_the_chunk_already_holds() -> None:
    chunks = chunk(RULES, max_size=160)
    chapter = next(c for c in chunks if c.text.startswith("## 第2章 宿泊"))
    assert chapter.embed_text.startswith("出張旅費規程\n\n## 第2章 宿泊")  # no "第2章" twice, title once
    small = chunk(RULES, max_size=70, context_in_budget=False)  # 70 for the code lines alone
    code_piece = next(c for c in small if c.text.startswith("if same_day"))
    assert code_piece.embed_text.startswith("出張旅費規程\n第3章 精算\n\n```python\n")
    none = chunk(RULES, max_size=160, context="none")
    assert all(c.embed_text == c.text for c in none if "|" not in c.text)
    title_only = chunk(RULES, max_size=160, context="title", context_in_budget=False)
    assert all(c.embed_text.startswith("出張旅費規程\n\n") for c in title_only)
    # counted (the default): a block that fits 160 only without the title keeps its text whole instead
    counted = chunk(RULES, max_size=160, context="title")
    assert all(len(c.embed_text) <= 160 for c in counted)
    for c in counted:
        if not c.embed_text.startswith("出張旅費規程\n\n"):
            assert c.embed_text.endswith(c.text) and len("出張旅費規程\n\n" + c.embed_text) > 160


@pytest.mark.parametrize("table", ["rows", "fill-down", "group-by:区分"])
def test_embed_text_fits_a_token_limit_when_context_is_in_budget(table: str) -> None:
    tokens = Tokens()
    for max_size in (96, 128, 200):
        chunks = chunk(RULES, max_size=max_size, unit="tokens", table=table)
        for c in chunks:
            assert tokens(c.embed_text) <= max_size, (max_size, c.embed_text)
    without = chunk(RULES, max_size=64, unit="tokens", context_in_budget=False)
    assert any(c.size > 40 for c in without)
    assert any(tokens(c.embed_text) > 64 for c in without) or all(c.embed_text == c.text for c in without)


def test_context_in_budget_for_other_strategies_too() -> None:
    tokens = Tokens()
    chunks = make_chunker("recursive", max_size=48, unit="tokens", context="headings").chunk(doc(RULES))
    assert all(tokens(c.embed_text) <= 48 for c in chunks)
    assert any(c.embed_text != c.text for c in chunks)


CSV = (
    "区分,品目,単価,備考\n"
    "文具,ボールペン,120,\n"
    ',ノート,"1,200","まとめ買い\n割引あり"\n'
    ",付箋,300,\n"
    "備品,椅子,15000,\n"
    ",机,32000,組立式\n"
)


def test_csv_records_keep_quoted_line_breaks_inside_the_row() -> None:
    spans = record_spans(CSV)
    assert len(spans) == 6
    assert CSV[spans[2][0] : spans[2][1]] == ',ノート,"1,200","まとめ買い\n割引あり"'
    (table,) = csv_outline(CSV).tables
    assert table.rows[1].cells == ("", "ノート", "1,200", "まとめ買い\n割引あり")


@pytest.mark.parametrize("strategy", ["recursive", "sentence", "fixed", "paragraph"])
def test_a_csv_overlap_starts_at_a_record_or_not_at_all(strategy: str) -> None:
    """With ``--overlap`` the default strategy began chunks inside a record (``"15,000円",実費精算可``): half
    a row without its key column; and a record that fit max_size but not the room the overlap left was cut
    (``役員,`` | ``東京都区内,…``). An overlap starts at a record now, else there is none, and such a record
    is a chunk of its own."""
    text = (
        "区分,地域,日当,宿泊料\n役員,東京都区内,5000円,15000円\n役員,その他,5000円,13000円\n"
        "部長,東京都区内,3500円,12000円\n部長,その他,3000円,10500円\n一般社員,東京都区内,2500円,10000円\n"
    )
    doc = Document(text, id="料金表.csv", metadata={"format": "csv"})
    records = {start for start, _ in record_spans(text)}
    for size, overlap in [(60, 20), (80, 30), (45, 25)]:
        chunker = make_chunker(strategy, max_size=size, overlap=overlap)
        chunks = chunker.chunk(doc)
        assert all(c.start in records for c in chunks), [c.text for c in chunks]
        check_invariants(doc, chunks, max_size=size, chunker=chunker, overlap=overlap)


def test_csv_split_between_records_with_header_repeated_and_filled() -> None:
    d = Document(CSV, id="price.csv", metadata={"format": "csv", "title": "price"})
    chunks = make_chunker("markdown", max_size=45, table="fill-down", context="none").chunk(d)
    inside = {p for s, e in record_spans(CSV) for p in range(s + 1, e)}
    assert not cuts(chunks) & inside
    assert len(chunks) > 2
    for c in chunks[1:]:
        assert c.embed_text.startswith("区分,品目,単価,備考\n")
    assert any("文具,付箋,300," in c.embed_text for c in chunks)
    assert any("備品,机,32000,組立式" in c.embed_text for c in chunks)


def test_pdf_lines_are_not_boundaries_but_paragraphs_and_pages_are_metadata() -> None:
    page1 = (
        "出張の申請は、出発の三日前までに所属長の承認を得て\n"
        "行わなければならない。ただし、緊急の場合はこの限り\n"
        "でない。\n"
        "宿泊を伴う出張では、会社が指定する予約サイトを用い\n"
        "て手配することを原則とする。\n"
    )
    page2 = "精算は帰着後十日以内に行い、領収書を添付して経理部\nへ提出する。\n"
    text = page1 + "\n" + page2
    regions = (
        Region(0, len(page1) - 1, "page", {"page": 1}),
        Region(len(page1) + 1, len(text) - 1, "page", {"page": 2}),
    )
    d = Document(text, id="a.pdf", metadata={"format": "pdf"}, regions=regions)
    chunks = make_chunker("structure", max_size=60).chunk(d)
    assert [c.text.splitlines()[0][:6] for c in chunks] == ["出張の申請は", "宿泊を伴う出", "精算は帰着後"]
    assert [c.metadata.get("page") for c in chunks] == [1, 1, 2]
    whole = make_chunker("structure", max_size=400).chunk(d)
    assert whole[0].metadata["pages"] == [1, 2]


def test_plain_text_uses_paragraph_rules() -> None:
    """Nothing of a plain text is Markdown; its articles are headings (`kireme.text.articles`)."""
    text = "第1条 目的\nこの規程は旅費を定める。\n\n第2条 範囲\n全社員に適用する。\n\n## 見出しではない\n- 項目でもない"
    chunks = make_chunker("markdown", max_size=20).chunk(Document(text, metadata={"format": "text"}))
    assert [c.text for c in chunks] == [
        "第1条 目的\nこの規程は旅費を定める。",
        "第2条 範囲\n全社員に適用する。",
        "## 見出しではない\n- 項目でもない",
    ]
    assert [c.headings for c in chunks] == [("第1条 目的",), ("第2条 範囲",), ("第2条 範囲",)]
    assert all(c.embed_text == c.text for c in chunks[:2])  # each holds its heading line


def test_fences_inside_block_quotes_and_list_items_are_closed_and_kept_whole(caplog) -> None:
    text = (
        "# エラーの読み方\n\n"
        "> ```text\n> error[E0106]: missing lifetime specifier\n>\n>  --> src/main.rs:9:33\n> ```\n\n"
        "1. 手順\n\n   ```sh\n   cargo build\n\n   cargo test\n   ```\n"
    )
    with caplog.at_level(logging.WARNING):
        outline = markdown_outline(text, "quote.md")
    assert [c.closed for c in outline.code_blocks] == [True, True]
    assert not [r for r in caplog.records if "never closed" in r.getMessage()]
    for c in chunk(text, max_size=100):
        for block in outline.code_blocks:
            assert not (block.start < c.start < block.end or block.start < c.end < block.end)


def test_a_short_lead_in_goes_with_the_table_header_and_first_rows() -> None:
    chunks = chunk(RULES, max_size=200)
    lead = next(c for c in chunks if "宿泊費の上限は" in c.text)
    assert lead.text.startswith("## 第2章 宿泊")
    assert (
        "| 区分 | 地域 | 上限額 | 備考 |" in lead.text
        and "| 役員 | 東京 | 18,000円 | 朝食込み |" in lead.text
    )


# ------------------------------------------------------------------------------ sibling sections

LAW = """## 旅費法

### 第三条 支給

#### 1

職員が出張した場合には、旅費を支給する。

#### 2

前項の旅費は、鉄道賃とする。

#### 3

日当は一日につき二千円とする。

### 第四条 精算

精算は帰着後十日以内に行う。

#### 1

領収書を添付する。

### 第五条 雑則

この法律に定めるもののほか、必要な事項は省令で定める。
"""


def test_sibling_sections_are_packed_together_under_their_parent_path() -> None:
    chunks = chunk(LAW, max_size=64)
    by_start = {c.text.split("\n", 1)[0]: c for c in chunks}
    siblings = by_start["#### 2"]
    assert "#### 3" in siblings.text  # 2 and 3 share one chunk
    assert siblings.headings == ("旅費法", "第三条 支給")  # the common parent path, not "2"
    assert siblings.metadata["subheadings"] == ["2", "3"]
    assert siblings.embed_text.startswith("旅費法 > 第三条 支給\n\n#### 2")
    # the last item of one article never joins the next article: it would lose "第三条" in its path
    assert not any("#### 3" in c.text and "第四条" in c.text for c in chunks)
    # whole sections are chunks of their own when nothing else fits: nothing is cut
    assert by_start["### 第五条 雑則"].text.endswith("省令で定める。")
    for c in chunks:
        assert len(c.embed_text) <= 64  # the context counts toward max_size by default


SMALL_LAST = (
    "## 旅費法\n\n### 第三条 支給\n\n#### 1\n\n職員が出張した場合には旅費を支給する。\n\n#### 2\n\n"
    "前項の旅費は鉄道賃、船賃、航空賃及び日当とする。\n\n#### 3\n\n日当。\n\n### 第四条 精算\n\n精算は帰着後十日以内に行う。\n"
)


def test_a_chunk_takes_siblings_only_while_small_and_min_size_joins_a_small_last_one() -> None:
    alone = chunk(LAW, max_size=30)
    assert not any("#### 2" in c.text and "#### 3" in c.text for c in alone)
    # "2" is already half of the limit: it takes no sibling, and "3" is left small
    tight = chunk(SMALL_LAST, max_size=64)
    small = next(c for c in tight if "#### 3" in c.text)
    assert small.text.startswith("#### 3") and small.size < 20
    joined = chunk(SMALL_LAST, max_size=64, min_size=20)
    holder = next(c for c in joined if "#### 3" in c.text)
    assert holder.size >= 20 and holder.text.startswith("#### 2")  # joined to its sibling before it
    assert holder.headings == ("旅費法", "第三条 支給")
    assert holder.metadata["subheadings"] == ["2", "3"]
    assert not any("第四条" in c.text and "#### 3" in c.text for c in joined)  # never into the next article
    check_invariants(doc(SMALL_LAST, "markdown"), joined, max_size=64, unit="chars")


@given(text=law_texts, max_size=st.integers(20, 200), data=st.data())
@settings(max_examples=150, deadline=None)
def test_packed_sections_keep_every_heading_they_sit_under(text: str, max_size: int, data) -> None:
    min_size = data.draw(st.sampled_from([0, max_size // 3]))
    document = doc(text, "markdown")
    chunker = make_chunker("markdown", max_size=max_size, min_size=min_size)
    chunks = chunker.chunk(document)
    check_invariants(document, chunks, max_size=max_size, chunker=chunker)
    outline = markdown_outline(text)
    paths = HeadingPaths(outline.headings)
    for c, nxt in zip(chunks, [*chunks[1:], None], strict=True):
        span = paths.span(c.start, c.end)
        # (a run of headings too long for max_size is cut where it must: inside a line)
        assert span.keeps_context or text[c.start - 1] != "\n", (c.text, c.headings)
        assert c.headings == tuple(h.title for h in span.path)
        assert len(c.embed_text) <= max_size
        # no lonely heading: a chunk ends with headings while their body opens the next chunk only when
        # the headings and the body's first sentence could not have shared a chunk with that context
        trailing = [h for h in outline.headings if c.start <= h.start and h.end == c.end]
        if trailing and nxt is not None and not text[nxt.start :].startswith("#"):
            run = trailing[0].start
            while True:
                before = [h for h in outline.headings if c.start <= h.start and h.end + 2 >= run > h.start]
                if not before or before[0].start >= run:
                    break
                run = before[0].start
            ends = [e for e in (text.find("。", nxt.start) + 1, text.find("\n", nxt.start)) if e > 0]
            first = min(ends, default=len(text))  # the body's first sentence
            # what the packer reserves for the context of a chunk starting there (never less than the
            # prefix embed_text gets: a heading the chunk holds is left out of that one)
            context = len(chunker.context_builder(document).prefix(run))
            assert first - run + context > max_size, (c.text, text[nxt.start : first])


# ------------------------------------------------------------------------- nothing said twice in front

TRAVEL_DEEP = """\
# 出張旅費規程

## 第2章 旅費

### 第1節 宿泊

#### 第3条 宿泊費

宿泊費は、１泊につき１０，０００円を上限として実費を支給する。ただし、東京都および大阪市内に宿泊する場合は、１泊につき１２，０００円を上限とする。

#### 第4条 日当

日当は、１日につき２，０００円とする。日帰り出張の場合は、１，０００円とする。

   #### 第5条 交通費

交通費は、最も経済的な経路による実費を支給する。
"""


def front_of(c) -> str:
    """The context lines in front of a chunk's text, up to the blank line that ends them (a table or
    code piece may add a repeated header or fence after them; its text itself is never changed)."""
    if c.embed_text.startswith(c.text):
        return ""
    front = c.embed_text[: c.embed_text.index("\n\n") + 2]
    assert c.text[:20] in c.embed_text[len(front) :], c.embed_text
    return front


def named_in_front(c) -> list[str]:
    """The names the context line(s) in front of a chunk say: the title and the heading path."""
    lines = front_of(c).rstrip("\n").split("\n") if front_of(c) else []
    return [name for line in lines for name in line.split(" > ")]


def held_headings(text: str, c) -> list[str]:
    """The headings whose line (or part of it) is inside the chunk's text."""
    return [h.title for h in markdown_outline(text).headings if h.start < c.end and h.end > c.start]


@pytest.mark.parametrize("strategy", ["markdown", "recursive"])
@pytest.mark.parametrize("overlap", [0, 20])
def test_a_heading_line_in_the_chunk_is_not_repeated_in_front(strategy: str, overlap: int) -> None:
    document = doc(TRAVEL_DEEP, title="出張旅費規程")
    chunker = make_chunker(strategy, max_size=100, overlap=overlap, context="headings")
    chunks = chunker.chunk(document)
    check_invariants(document, chunks, max_size=100, overlap=overlap, chunker=chunker)
    for c in chunks:
        assert TRAVEL_DEEP[c.start : c.end] == c.text
        said = named_in_front(c)
        assert not set(said) & set(held_headings(TRAVEL_DEEP, c)), (c.text, front_of(c))
        assert said.count("出張旅費規程") <= 1
    if overlap == 0:
        # an indented heading: the chunk starts after the indentation, inside the heading's line
        transport = next(c for c in chunks if "交通費は" in c.text)
        assert transport.text.startswith("#### 第5条 交通費")
        assert transport.start == TRAVEL_DEEP.index("#### 第5条") > TRAVEL_DEEP.index("   #### 第5条")
        assert transport.embed_text == "出張旅費規程\n第2章 旅費 > 第1節 宿泊\n\n" + transport.text
        assert transport.headings[-1] == "第5条 交通費"  # the chunk's path still names its own heading
        allowance = next(c for c in chunks if c.text.startswith("#### 第4条 日当"))
        assert allowance.embed_text == "出張旅費規程\n第2章 旅費 > 第1節 宿泊\n\n" + allowance.text


def test_the_title_is_not_said_again_by_a_chunk_that_holds_its_heading() -> None:
    chunks = chunk(RULES, max_size=120)
    first = chunks[0]
    assert first.text.startswith("---\ntitle: 出張旅費規程\n---\n\n# 出張旅費規程\n")
    assert first.embed_text == first.text  # front matter and "# 出張旅費規程": no title in front
    for c in chunks[1:]:
        assert front_of(c).startswith("出張旅費規程\n") and named_in_front(c).count("出張旅費規程") == 1

    # compared after case folding and NFKC: "REMOTE WORK POLICY" is the title "Remote Work Policy"
    policy = (
        "# REMOTE WORK POLICY\n\nStaff may work from home up to three days a week.\n\n"
        "## Equipment\n\nThe company lends a laptop and a headset; broken equipment is replaced in five days.\n"
    )
    english = make_chunker("markdown", max_size=100).chunk(doc(policy, title="Remote Work Policy"))
    assert english[0].embed_text == english[0].text
    equipment = next(c for c in english if c.text.startswith("## Equipment"))
    assert equipment.embed_text == "Remote Work Policy\n\n" + equipment.text
    assert equipment.headings == ("REMOTE WORK POLICY", "Equipment")
    faq = "# FAQ\n\n経費精算の締め切りは毎月２５日です。\n\n## 領収書\n\n領収書は原本を提出してください。\n"
    wide = make_chunker("markdown", max_size=40).chunk(doc(faq, title="ＦＡＱ"))  # a full-width file name
    receipts = next(c for c in wide if c.text.startswith("## 領収書"))
    assert receipts.embed_text == "ＦＡＱ\n\n" + receipts.text and wide[0].embed_text == wide[0].text


def test_plain_text_that_opens_with_its_title_does_not_get_it_twice() -> None:
    text = (
        "出張旅費規程\n\n第1条（目的）\nこの規程は、出張の旅費について定める。\n\n"
        "第2条（日当）\n日当は、１日につき２，０００円とする。\n"
    )
    document = Document(
        text, id="規程/出張旅費規程.txt", metadata={"format": "text", "title": "出張旅費規程"}
    )
    for strategy in ("paragraph", "recursive", "sentence"):
        chunks = make_chunker(strategy, max_size=40, context="title").chunk(document)
        assert chunks[0].text.startswith("出張旅費規程\n") and chunks[0].embed_text == chunks[0].text
        assert all(c.embed_text == "出張旅費規程\n\n" + c.text for c in chunks[1:])
        assert all(text[c.start : c.end] == c.text and len(c.embed_text) <= 40 for c in chunks)


_ARTICLES = ["目的", "適用範囲", "宿泊費", "日当", "交通費", "Remote work", "精算"]


@st.composite
def titled_markdown(draw) -> tuple[str, str]:
    """Markdown with headings at levels 1-4, some indented by up to three spaces (still headings), and a
    title that is one of its headings, or not."""
    items = draw(
        st.lists(
            st.tuples(st.integers(1, 4), st.integers(0, 3), st.sampled_from(_BODIES_FOR_TITLES)),
            min_size=1,
            max_size=12,
        )
    )
    parts = []
    names = []
    for i, (level, indent, body) in enumerate(items):
        name = f"第{i + 1}条 {_ARTICLES[i % len(_ARTICLES)]}"
        names.append(name)
        parts.append(f"{' ' * indent}{'#' * level} {name}\n\n" + (f"{body}\n\n" if body else ""))
    title = draw(st.sampled_from([*names, "出張旅費規程"]))
    return "".join(parts), title


_BODIES_FOR_TITLES = [
    "",
    "本文。",
    "職員が出張した場合には旅費を支給する。",
    "Staff may work from home up to three days a week.",
    "前項の規定にかかわらず、日当は一日につき二千円とする。" * 3,
]


@given(
    case=titled_markdown(), strategy=st.sampled_from(["markdown", "recursive"]), max_size=st.integers(40, 160)
)
@settings(max_examples=80, deadline=None)
def test_embed_text_never_names_a_heading_or_the_title_twice(
    case: tuple[str, str], strategy: str, max_size: int
) -> None:
    text, title = case
    document = doc(text, title=title)
    chunker = make_chunker(strategy, max_size=max_size, context="headings")
    chunks = chunker.chunk(document)
    check_invariants(document, chunks, max_size=max_size, chunker=chunker)
    for c in chunks:
        assert text[c.start : c.end] == c.text and c.title == title
        said = named_in_front(c)
        held = held_headings(text, c)
        assert not set(said) & set(held), (c.text, front_of(c))
        assert said.count(title) <= 1
        if title in held:
            assert title not in said


# A short document with no structure takes a shortcut (`StructureChunker._whole_plan`): the same chunks,
# ids and embed_text as the sections give it.
_PLAIN_LINES = [
    "",
    "",
    "本文です。",
    "次の行、続き",
    "- 項目",
    "1. 手順",
    "  字下げ",
    "English words here.",
    "・点",
]


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.sampled_from(_PLAIN_LINES), min_size=1, max_size=8),
    fmt=st.sampled_from(["markdown", "text", "html"]),
    max_size=st.integers(8, 120),
    overlap=st.sampled_from([0, 3]),
    min_size=st.sampled_from([0, 4]),
    unit=st.sampled_from(["chars", "tokens"]),
)
def test_a_short_plain_document_gets_the_sections_chunks(
    lines: list[str], fmt: str, max_size: int, overlap: int, min_size: int, unit: str
) -> None:
    from kireme.structure.chunker import StructureChunker

    text = "\n".join(lines)
    chunker = make_chunker("markdown", max_size=max_size, overlap=overlap, min_size=min_size, unit=unit)
    fast = chunker.chunk(doc(text, fmt))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(StructureChunker, "_whole_plan", lambda *args: None)
        slow = chunker.chunk(doc(text, fmt))
    assert [c.to_dict() for c in fast] == [c.to_dict() for c in slow]


def test_a_short_plain_document_takes_the_shortcut(monkeypatch: pytest.MonkeyPatch) -> None:
    from kireme.structure.chunker import StructureChunker

    chunker = make_chunker("markdown", max_size=200)
    taken: list[bool] = []
    whole = StructureChunker._whole_plan

    def spy(self: StructureChunker, *args: object) -> object:
        plan = whole(self, *args)  # type: ignore[arg-type]
        taken.append(plan is not None)
        return plan

    monkeypatch.setattr(StructureChunker, "_whole_plan", spy)
    chunker.chunk(doc("出張の申請は前日までに行います。", "markdown"))
    chunker.chunk(doc("# 出張\n\n申請は前日までに行います。", "markdown"))  # a heading: the sections
    chunker.chunk(doc("申請は前日までに行います。" * 30, "markdown"))  # too long for one chunk
    assert taken == [True, False, False]


# A piece's embed_text is its context prefix and its text: in characters and cl100k tokens the two sizes
# add up (`StructureChunker._sizes_add_up`), so the whole is not measured again.
_PREFIX_NAMES = st.lists(
    st.text(st.sampled_from([*"見出し手順 abC1.)）」/-#>*'s"]), min_size=1, max_size=8), max_size=3
)
_BODY = st.text(
    st.sampled_from([*"本文です。、「」（）ab AB'sd12/\n\t -–*#>\u3099\u0301😀"]), min_size=1, max_size=40
)


@settings(max_examples=1500, deadline=None)
@given(names=_PREFIX_NAMES, body=_BODY)
def test_cl100k_sizes_of_a_prefix_and_the_text_after_it_add_up(names: list[str], body: str) -> None:
    from kireme.context import ContextBuilder

    tokens = Tokens()
    body = body.strip()
    prefix = ContextBuilder("headings", "", None, tokens, 10_000)._render(
        [n.strip() or "x" for n in names], False
    )
    if not body:
        return
    assert prefix.endswith("\n\n") or prefix == ""
    assert tokens(prefix + body) == tokens(prefix) + tokens(body)


@settings(max_examples=200, deadline=None)
@given(
    sections=st.lists(
        st.tuples(
            st.sampled_from(["#", "##", "###"]),
            st.sampled_from(["手順", "費用/交通", "A's note", "第1条（目的）"]),
            st.lists(st.sampled_from(_PLAIN_LINES[2:]), min_size=1, max_size=6),
        ),
        min_size=1,
        max_size=5,
    ),
    unit=st.sampled_from(["chars", "tokens"]),
    max_size=st.integers(24, 160),
)
def test_embed_text_sizes_added_are_the_measured_ones(
    sections: list[tuple[str, str, list[str]]], unit: str, max_size: int
) -> None:
    from kireme.structure.chunker import StructureChunker

    text = "\n\n".join(f"{marks} {title}\n\n" + "\n".join(lines) for marks, title, lines in sections)
    chunker = make_chunker("markdown", max_size=max_size, unit=unit)
    added = chunker.chunk(doc(text, "markdown", title="出張規程"))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(StructureChunker, "_sizes_add_up", lambda self: False)
        measured = chunker.chunk(doc(text, "markdown", title="出張規程"))
    assert [c.to_dict() for c in added] == [c.to_dict() for c in measured]


def _code_line_cuts_by_line(text: str, outline: Outline) -> tuple[list[int], list[int]]:
    """`code_line_cuts` one line at a time: the reference for the bisecting one."""
    lines = line_starts(text)
    blank: list[int] = []
    every: list[int] = []
    for block in outline.code_blocks:
        if block.closed:
            a, b = block.body
            for k in range(bisect_right(lines, a), bisect_left(lines, b)):
                every.append(lines[k])
                if k > 0 and not text[lines[k - 1] : lines[k]].strip():
                    blank.append(lines[k])
    return blank, every


_CODE_LINES = ["```\n", "```py\n", "~~~\n", "x = 1\n", "\n", "  \n", "\u3000\n", "\t\r\n", "\r\n"]
_CODE_LINES += ["# コメント\n", "本文\n", "    y\n", "- a\n", "> ```\n"]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_CODE_LINES), max_size=20), st.booleans())
def test_code_line_cuts_are_every_code_line_and_those_after_a_blank_one(lines: list[str], cut: bool) -> None:
    text = "".join(lines)
    text = text.rstrip("\n") if cut else text
    outline = markdown_outline(text, warn=False)
    assert code_line_cuts(text, outline) == _code_line_cuts_by_line(text, outline)


@settings(max_examples=60, deadline=None)
@given(
    text=st.one_of(
        law_texts,
        st.lists(st.sampled_from([*"規程の本文です。\n ab.", "```", "# ", "\n\n"]), max_size=120).map(
            "".join
        ),
    ),
    size=st.sampled_from([40, 120]),
    context=st.sampled_from(["headings", "none"]),
)
def test_a_bare_document_packs_as_its_pieces_context_says(text: str, size: int, context: str) -> None:
    """A document with no heading, title or table skips asking each piece for its (empty) context; the chunks
    are the ones the full path gives (forced by a measure whose sizes are not known to add up)."""
    from kireme.structure.chunker import StructureChunker

    chunker = make_chunker("markdown", max_size=size, context=context)
    document = Document(text)
    quick = chunker.chunk(document)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(StructureChunker, "_sizes_add_up", lambda self: False)
        assert chunker.chunk(document) == quick


def test_a_document_with_no_heading_title_or_table_gets_its_text_as_embed_text_without_context_work() -> None:
    """A bare Markdown document's plan says its chunks embed their own text (`TextItself`): no heading
    path or context is looked up per chunk, and the chunks are what they were (text, no path)."""
    from kireme.chunkers import TextItself

    body = "社内規程の本文です。出張の前には申請書を出してください。" * 30
    chunker = make_chunker("markdown", max_size=100)
    bare = Document(body, metadata={"format": "markdown"})
    assert isinstance(chunker.for_document(bare).plan(bare).embed_text, TextItself)
    chunks = chunker.chunk(bare)
    assert len(chunks) > 5
    assert all(c.embed_text == c.text and c.headings == () and not c.metadata for c in chunks)
    titled = Document("# 出張規程\n\n" + body, metadata={"format": "markdown"})
    assert not isinstance(chunker.for_document(titled).plan(titled).embed_text, TextItself)
    later = chunker.chunk(titled)[1]
    assert later.headings == ("出張規程",) and later.embed_text.startswith("出張規程\n\n")


# A manual wrapped at a fixed width, as many Markdown sources are: the line breaks fall inside sentences.
WRAPPED_MANUAL = (
    "## 経費の精算\n\n"
    "出張から戻った社員は、帰着した日の翌日から数えて十四日以内に、所定の\n"
    "精算書を経理課へ提出しなければならない。領収書を紛失した場合は、\n"
    "所属長が事情を確認したうえで、支払証明書をもって領収書に代えることが\n"
    "できる。期限を過ぎて提出された精算書は、翌月の支払いに回される。\n"
)
WRAPPED_ENGLISH = (
    "## Expense claims\n\n"
    "Staff who return from a trip must hand the claim form to the accounts\n"
    "office within fourteen days of their return. A lost receipt may be replaced\n"
    "by a payment certificate once the manager has checked what happened. Claims\n"
    "that arrive after the deadline are paid with the following month's salary.\n"
)


@pytest.mark.parametrize(
    ("text", "sizes"), [(WRAPPED_MANUAL, (90, 110, 130)), (WRAPPED_ENGLISH, (150, 200, 260))]
)
def test_a_wrapped_paragraph_is_cut_between_sentences_not_at_its_line_breaks(
    text: str, sizes: tuple[int, ...]
) -> None:
    """A line break inside a sentence is a soft break: the cut goes after a sentence (every size here
    holds the longest one), and no rule is parted from its condition at the wrap."""
    doc = Document(text, metadata={"format": "markdown"})
    for size in sizes:
        chunker = make_chunker("markdown", max_size=size, context="none")
        chunks = chunker.chunk(doc)
        assert len(chunks) > 1
        check_invariants(doc, chunks, max_size=size, chunker=chunker)
        for chunk in chunks:
            assert chunk.text.rstrip()[-1] in "。.", (size, chunk.text)


def test_lines_that_end_their_sentences_are_cut_before_a_sentence_inside_a_line() -> None:
    """One topic a line with no blank line between them (meeting notes): a chunk ends at the end of a
    line before it ends at a sentence in the middle of the next one."""
    text = (
        "来月の移転について確認した。新しい執務室は八階になる。机は運ばない。\n"
        "経理課から精算システムの更新について説明があった。領収書は撮影して申請する。\n"
        "夏のバーベキュー大会の準備状況を共有した。雨の場合は社員食堂で行う。\n"
    )
    doc = Document(text, metadata={"format": "markdown"})
    chunks = make_chunker("markdown", max_size=60, context="none").chunk(doc)
    assert [c.text for c in chunks] == [line for line in text.split("\n") if line]


def test_sentences_lines_mode_still_cuts_at_every_line_first() -> None:
    """``sentences="lines"`` (one sentence a line): line breaks before sentences, as before."""
    doc = Document(WRAPPED_MANUAL, metadata={"format": "markdown"})
    chunks = make_chunker("markdown", max_size=90, context="none", sentences="lines").chunk(doc)
    assert any(not c.text.rstrip().endswith("。") for c in chunks)  # a cut at a wrap


def test_the_sentence_line_level_cuts_only_line_breaks_that_end_a_sentence() -> None:
    """Where `LINE` cuts (before the break), but only after a line that ends its sentence: a terminator
    (tokenised text too: ``was released .``), a full stop, an item or label line before the next; never
    at a wrap inside a sentence. On text whose every line ends a sentence it is `LINE` itself."""
    text = (
        "The game was released in 2011 .\n = = Gameplay = = \n"
        "Players move units across a map that is\nshown from above.\n"
        "・操作方法\n移動は矢印キーで行う。\n次の章へ進む。\n"
    )
    cuts = SENTENCE_LINE.cuts(text, 0, len(text))
    assert [text[c - 4 : c] for c in cuts] == ["11 .", "ove.", "操作方法", "で行う。", "へ進む。"]
    assert all(text[c] == "\n" for c in cuts)
    assert text.index("that is\n") + len("that is") not in cuts  # the wrap
    assert text.index(" = = \n") + len(" = = ") not in cuts  # a title line without a mark: a wrap here
    every = "一行目です。\n二行目です。\n三行目です。\n"
    assert SENTENCE_LINE.cuts(every, 0, len(every)) == LINE.cuts(every, 0, len(every))


# A page of component docs (MDX): an opening tag alone on its line, its content, the closing tag.
COMPONENT_DOC = """\
## ボタンにイベントを追加する

ボタンを押したときに何かを起こすには、まず関数を定義し、それを props として渡します。次の例では、押すたびに確認のメッセージを表示します。

<Sandpack>

```js
export default function Button() {
  function handleClick() {
    alert('押されました');
  }
  return <button onClick={handleClick}>押してください</button>;
}
```

</Sandpack>

::: tip 覚えておくこと
イベントハンドラは渡すものであり、その場で呼び出すものではありません。括弧を付けると描画のたびに実行されます。
:::
"""


def _code_span(text: str) -> tuple[int, int]:
    (code,) = markdown_outline(text).code_blocks
    return code.start, code.end


def test_an_opening_tag_goes_with_what_it_opens_not_at_the_end_of_the_chunk_before() -> None:
    """`<Sandpack>` and `::: tip` open what follows: a chunk never ends with them while the tag and its
    content fit one chunk (the cut goes before the tag, as before a heading)."""
    start, end = _code_span(COMPONENT_DOC)
    tag = COMPONENT_DOC.index("<Sandpack>")
    size = end - tag + 5  # the tag and the code fit; the paragraph before them does not fit as well
    chunks = chunk(COMPONENT_DOC, max_size=size, context="none")
    check_invariants(doc(COMPONENT_DOC, "markdown"), chunks, max_size=size, unit="chars")
    assert not [c.text for c in chunks if c.text.rstrip().endswith(("<Sandpack>", "覚えておくこと"))]
    (holder,) = [c for c in chunks if c.start <= start < c.end]
    assert holder.start == tag and end <= holder.end  # the tag, then the whole code block
    (tip,) = [c for c in chunks if "::: tip" in c.text]
    assert "括弧を付けると" in tip.text


def test_a_code_block_that_fits_alone_is_not_cut_to_keep_its_tag_with_it() -> None:
    start, end = _code_span(COMPONENT_DOC)
    chunks = chunk(COMPONENT_DOC, max_size=end - start, context="none")
    assert any(c.start <= start and end <= c.end for c in chunks)  # whole; the tag goes where it may


@pytest.mark.parametrize("context", ["none", "headings"])
@pytest.mark.parametrize("extra", [0, 5])
def test_a_code_block_that_fits_alone_is_not_cut_to_keep_the_heading_above_it(
    context: str, extra: int
) -> None:
    """A section that is a heading and a code block that fits a chunk alone but not with the heading: the
    packer would not end a chunk with the heading, so it cut the block one line before its end."""
    block = "```python\n" + "".join(f"合計{i} = 集計({i})\n" for i in range(8)) + "```"
    text = "## 使い方\n\n" + block + "\n\n本文に戻ります。\n"
    start, end = _code_span(text)
    chunks = chunk(text, max_size=end - start + extra, context=context)
    assert any(c.start <= start and end <= c.end for c in chunks), [c.text for c in chunks]
    assert all(c.headings == ("使い方",) for c in chunks)


def test_a_code_block_too_large_for_a_chunk_takes_its_tag_into_its_first_piece() -> None:
    start, end = _code_span(COMPONENT_DOC)
    chunks = chunk(COMPONENT_DOC, max_size=90, context="none")
    pieces = [c for c in chunks if c.start < end and start < c.end]
    assert len(pieces) >= 2  # the block is cut
    assert pieces[0].text.startswith("<Sandpack>") and "```js" in pieces[0].text
    assert not [c for c in chunks if c.text.strip() == "<Sandpack>"]  # never a chunk of the tag alone


@pytest.mark.parametrize(
    ("line", "opens"),
    [
        ("<Sandpack>", True),
        ('<Note type="warning">', True),
        ("  <Tab label='npm'>", True),
        ("::: tip 注意", True),
        (":::details 詳しく", True),
        ("<details>", True),
        ("<Img src='a.png' />", False),  # self-closing
        ("</Sandpack>", False),  # closing
        ("<summary>詳しく</summary>", False),  # text after the tag
        ("<br>", False),  # a void element
        (":::", False),  # a bare fence closes
        ("<!-- メモ -->", False),
        ("<!--", True),  # a comment opened on a line of its own
        ("a < b > c", False),
    ],
)
def test_what_counts_as_an_opening_tag_line(line: str, opens: bool) -> None:
    text = f"前の文です。\n{line}\n\n中身です。\n"
    runs = opener_runs(text)
    assert bool(runs) is opens
    if opens:
        (run,) = runs
        assert text[run[0] : run[1]] == f"{line}\n\n"  # the line and the blank lines after it


def test_tag_lines_inside_a_code_block_open_nothing() -> None:
    text = "説明です。\n\n```jsx\n<div>\n  <Button>\n    押す\n  </Button>\n</div>\n```\n\n<Note>\n\n注意です。\n"
    outline = markdown_outline(text)
    kept, _ = _opener_spans(outline)
    assert [text[a:b] for a, b in kept] == ["<Note>\n\n"]


WRAPPED_SECTION = """\
### 状態を持つコンポーネント

状態は、描画のあいだに値を覚えておくための仕組みです。画面に表示する値が変わるときに使います。

<DeepDive>

#### なぜ普通の変数では足りないのか

普通の変数は描画のたびに初期化されます。また、変数を書き換えても画面は描き直されません。

</DeepDive>
"""


def test_an_opening_tag_above_a_heading_starts_that_section() -> None:
    """`<DeepDive>` wraps the `####` section under it: the section, its chunk and its heading path start
    at the tag, never at the end of the section before (the heading line keeps its own end and title)."""
    outline = markdown_outline(WRAPPED_SECTION)
    deep = outline.headings[1]
    assert deep.start == WRAPPED_SECTION.index("<DeepDive>")
    assert WRAPPED_SECTION[: deep.end].endswith("#### なぜ普通の変数では足りないのか")
    assert deep.title == "なぜ普通の変数では足りないのか"
    chunks = chunk(WRAPPED_SECTION, max_size=110)
    assert not [c.text for c in chunks if c.text.rstrip().endswith("<DeepDive>")]
    (holder,) = [c for c in chunks if "#### なぜ" in c.text]
    assert holder.text.startswith("<DeepDive>")
    assert holder.headings == ("状態を持つコンポーネント", "なぜ普通の変数では足りないのか")
    assert holder.embed_text.startswith("状態を持つコンポーネント\n\n<DeepDive>")  # the path above, once


LONG_EXAMPLE = """\
## 精算額を計算する

次の関数は、日数と宿泊の有無から出張の精算額を求めます。

```python
def settlement(days, nights, region):
    if region == "国内":
        allowance, lodging = 2000, 9000
    else:
        allowance, lodging = 3500, 14000
    total = allowance * days
    total += lodging * nights
    if days >= 5:
        total += 1000
    if nights == 0:
        total -= 500
    return max(total, 0)
```

月末に申請をまとめると、その月の精算額がわかります。
"""


def test_a_code_block_too_large_for_a_chunk_is_cut_into_even_pieces_not_a_full_one_and_a_fragment() -> None:
    """Filled in turn, the first piece took all but the last lines of the function and the last piece
    was ``return max(total, 0)`` and the fence alone; the block's cuts are now chosen together: as many
    pieces, none a fragment."""
    start, end = _code_span(LONG_EXAMPLE)
    size = 300
    chunks = chunk(LONG_EXAMPLE, max_size=size, context="none")
    check_invariants(doc(LONG_EXAMPLE, "markdown"), chunks, max_size=size, unit="chars")
    pieces = [c for c in chunks if c.start < end and start < c.end]
    assert len(pieces) == 2
    assert min(c.size for c in pieces) * 4 >= size  # no piece under a quarter of the limit
    assert all(c.embed_text.count("```") == 2 for c in pieces)  # each piece a complete fence
    # the packing asked for decides the rest: "optimal" chooses every cut together anyway
    optimal = chunk(LONG_EXAMPLE, max_size=size, context="none", packing="optimal")
    assert [c.text for c in optimal if c.start < end and start < c.end] == [c.text for c in pieces]


def _starts_with_closing_tag(text: str) -> bool:
    first = text.lstrip().split("\n", 1)[0].strip()
    return first.startswith("</") or first == ":::"


def test_a_closing_tag_goes_with_what_it_closes_not_at_the_start_of_the_next_chunk() -> None:
    """`</Sandpack>` and a bare `:::` close what comes before them: a chunk never starts with them while
    they fit with the end of what they close (the cut goes after them, or before the block)."""
    start, _ = _code_span(COMPONENT_DOC)
    tag = COMPONENT_DOC.index("<Sandpack>")
    closing = COMPONENT_DOC.index("</Sandpack>") + len("</Sandpack>")
    for size in range(closing - tag, closing - tag + 60, 7):  # the block and its tags fit, not more
        chunks = chunk(COMPONENT_DOC, max_size=size, context="none")
        check_invariants(doc(COMPONENT_DOC, "markdown"), chunks, max_size=size, unit="chars")
        assert not [c.text for c in chunks if _starts_with_closing_tag(c.text)], size
        (holder,) = [c for c in chunks if c.start <= start < c.end]
        assert holder.start == tag and holder.text.rstrip().endswith("</Sandpack>")  # whole, tags and all
    tip = COMPONENT_DOC[COMPONENT_DOC.index("イベントハンドラは") :]
    chunks = chunk("## 注意\n\n::: tip 覚えておくこと\n" + tip, max_size=40, context="none")
    assert not [c.text for c in chunks if _starts_with_closing_tag(c.text)]
    assert chunks[-1].text.endswith("括弧を付けると描画のたびに実行されます。\n:::")


def test_a_code_block_too_large_for_a_chunk_gives_its_closing_tag_to_its_last_piece() -> None:
    start, end = _code_span(COMPONENT_DOC)
    chunks = chunk(COMPONENT_DOC, max_size=90, context="none")
    pieces = [c for c in chunks if c.start < end and start < c.end]
    assert len(pieces) >= 2  # the block is cut
    assert pieces[-1].text.rstrip().endswith("```\n\n</Sandpack>")
    assert not [c for c in chunks if _starts_with_closing_tag(c.text)]


def test_a_code_block_that_fits_alone_is_not_cut_to_keep_its_closing_tag_with_it() -> None:
    start, end = _code_span(COMPONENT_DOC)
    chunks = chunk(COMPONENT_DOC, max_size=end - start, context="none")
    assert any(c.start <= start and end <= c.end for c in chunks)  # whole; the tag goes where it may


@pytest.mark.parametrize(
    ("line", "closes"),
    [
        ("</Sandpack>", True),
        ("  </Note>", True),
        ("</details>", True),
        (":::", True),
        ("::::", True),
        ("-->", True),  # a comment closed on a line of its own
        ("::: tip", False),  # opens
        ("<Sandpack>", False),
        ("</summary>と続く", False),  # text after the tag
        ("<Img src='a.png' />", False),
        ("a </b> c", False),
    ],
)
def test_what_counts_as_a_closing_tag_line(line: str, closes: bool) -> None:
    text = f"中身です。\n\n{line}\n\n次の段落です。\n"
    runs = closer_runs(text)
    assert bool(runs) is closes
    if closes:
        (run,) = runs
        assert text[run[0] : run[1]] == f"\n\n{line}"  # from the end of the text it closes


def test_closing_tag_lines_in_a_row_are_one_run_and_those_in_code_close_nothing() -> None:
    text = "答えです。\n\n```jsx\n<div>\n</div>\n```\n\n</Sandpack>\n\n</Solution>\n\n次の問題です。\n"
    outline = markdown_outline(text)
    (run,) = outline.closers
    assert text[run[0] : run[1]] == "\n\n</Sandpack>\n\n</Solution>"
    (code,) = outline.code_blocks
    assert run[0] == code.end and outline.closed_to(code.end) == run[1]
    kept, early = _closer_spans(outline, lambda a, b: True)
    assert kept == early == [run]  # the block fits with them: their cuts come before its lines
    kept, early = _closer_spans(outline, lambda a, b: b <= run[0])
    assert kept == early == []  # it fits alone, not with them: not cut for them


TRANSLATED_DOC = """\
# 所有権

<!--
Ownership is a set of rules that govern how a program manages memory.
-->

所有権は、プログラムがメモリをどう管理するかを決める規則の集まりです。

<!--
Some languages have garbage collection that regularly looks for unused memory.
-->

ガベージコレクションで使われなくなったメモリを定期的に探す言語もあります。

<!--
## The Stack and the Heap
-->

## スタックとヒープ

<!--
Both the stack and the heap are parts of memory available to your code.
-->

スタックもヒープも、コードが実行時に使えるメモリの一部です。
"""


def test_a_comment_goes_with_the_block_after_it_the_original_with_its_translation() -> None:
    """Translated documentation keeps each paragraph's original in a comment right above it: a chunk never
    ends with the original while its translation, which fits with it, is in the next chunk."""
    body = TRANSLATED_DOC[TRANSLATED_DOC.index("<!--") : TRANSLATED_DOC.index("<!--\n## The Stack")]
    text = body + body.replace("Ownership", "Borrowing").replace("所有権", "借用")
    outline = markdown_outline(text)
    assert len(outline.comments) == 4
    pairs = []
    for start, after in outline.comments:
        end = text.find("\n\n", after)
        pairs.append((start, len(text.rstrip()) if end < 0 else end))
    for size in range(90, 260, 9):
        chunks = chunk(text, max_size=size, context="none")
        check_invariants(doc(text, "markdown"), chunks, max_size=size, unit="chars")
        for start, end in pairs:
            if end - start <= size:  # they fit together: together
                assert any(c.start <= start and end <= c.end for c in chunks), (size, start)


def test_a_comment_above_a_heading_starts_that_section() -> None:
    outline = markdown_outline(TRANSLATED_DOC)
    stack = outline.headings[1]
    assert stack.start == TRANSLATED_DOC.index("<!--\n## The Stack")
    assert stack.title == "スタックとヒープ" and TRANSLATED_DOC[: stack.end].endswith("## スタックとヒープ")
    chunks = chunk(TRANSLATED_DOC, max_size=150)
    (holder,) = [c for c in chunks if "## スタックとヒープ" in c.text]
    assert holder.text.startswith("<!--\n## The Stack and the Heap\n-->")
    assert holder.headings == ("所有権", "スタックとヒープ")


def test_an_original_and_its_translation_too_large_together_are_cut_between_them() -> None:
    """When the two do not fit one chunk, the cut falls between them (the blank line), not inside the
    translation."""
    a = TRANSLATED_DOC.index("<!--\nSome languages")
    translation = TRANSLATED_DOC.index("ガベージコレクション")
    end = TRANSLATED_DOC.index("\n\n", translation)
    size = max(translation - a, end - translation) + 10  # each fits alone, not both
    chunks = chunk(TRANSLATED_DOC, max_size=size, context="none")
    assert any(c.start == translation and c.end >= end for c in chunks)  # the translation whole


def test_only_top_level_comments_followed_by_a_block_lead() -> None:
    text = "本文です。\n\n```html\n<!-- コードの中 -->\n<p>x</p>\n```\n\n<!-- 後ろに何もない -->\n"
    assert markdown_outline(text).comments == ()
    text = "<!-- prettier-ignore -->\n| 列 | 値 |\n|---|---|\n| a | 1 |\n"
    ((start, end),) = markdown_outline(text).comments
    assert (start, text[end:].startswith("| 列")) == (0, True)


# decomposed marks, Hangul jamo and a four-code-point Greek letter compose into one character each
_TITLE_CHARS = st.sampled_from(
    [
        *("出", "張", "Ｆ", "A", "q", " ", "\u3000", "\t", "e\u0301"),
        *("\u1100\u1161\u11a8", "\u03b1\u0313\u0300\u0345", "\u00a8", "ß", "ﬁ", "㍻", "\u2003"),
    ]
)


@settings(max_examples=500, deadline=None)
@given(
    title=st.lists(_TITLE_CHARS, min_size=1, max_size=8).map("".join),
    pad=st.sampled_from([0, 1, 6, 40, 300]),
    wide=st.sampled_from([1, 3, 50, 400]),
)
def test_the_length_test_never_rejects_a_line_that_says_the_title(title: str, pad: int, wide: int) -> None:
    """`_may_say_title` spares normalising long first lines; a line `_key`-equal to the title always passes,
    however it is written (decomposed marks, jamo, full-width letters, runs of spaces — long runs too, past
    the part of the line it reads first)."""
    builder = ContextBuilder("title", title, None, len, 100)
    written = (
        " " * pad + unicodedata.normalize("NFD", title).upper().replace(" ", " " * wide) + "\u3000" * pad
    )
    for line in (written, title, unicodedata.normalize("NFKC", title)):
        assert builder._may_say_title(line) or not builder._is_title(line)


def test_a_printable_ascii_character_splits_the_title_key() -> None:
    """What `ContextBuilder._key_may_start` stands on: NFKC of any character followed by a printable ASCII
    one is NFKC of the character, then that one (no composition takes ASCII as its second part), for every
    code point; so the key of a line's first characters, cut before one, starts the line's key."""
    import sys

    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code < 0xE000:
            continue
        char = chr(code)
        alone = unicodedata.normalize("NFKC", char)
        for ascii in "a~":
            assert unicodedata.normalize("NFKC", char + ascii) == alone + ascii, hex(code)


@settings(max_examples=300, deadline=None)
@given(
    title=st.lists(_TITLE_CHARS | st.sampled_from(["Wnt", "β", "-", "Cell 7."]), min_size=1, max_size=12).map(
        "".join
    ),
    tail=st.text(alphabet="aβ é.\u0301", max_size=30),
)
def test_a_line_opening_otherwise_is_turned_down_early(title: str, tail: str) -> None:
    """A line whose first words are not the title's is turned down on them (`_key` of the whole line
    never taken), and a line that is the title, written another way, still passes."""
    import kireme.context as context

    builder = ContextBuilder("title", title, None, len, 100)
    other = "Curve " + "x" * 20 + " " + title + tail  # opens with other words, long enough to be cut early
    keyed: list[str] = []
    real = context._key
    try:
        context._key = lambda name: keyed.append(name) or real(name)  # type: ignore[func-returns-value]
        assert not builder._may_say_title(other)
        assert all(len(name) < len(other) for name in keyed)
    finally:
        context._key = real
    written = unicodedata.normalize("NFD", title).upper()
    assert builder._may_say_title(written) or not builder._is_title(written)


LEAD_IN_DOC = """# 申請の手順

出張の申請は、出発の五営業日前までに行います。申請書は総務課の共有フォルダにあります。

申請書には次の項目を記入します：

- 出張の目的と行き先
- 出発日と帰着日
- 交通手段と概算の費用

設定ファイルの例は次のとおりです：

<Sandpack>

```yaml
申請者: 山田
行き先: 大阪
日数: 2
```

</Sandpack>

精算は帰着後一週間以内に行います。
"""


def _lead_in_pairs(text: str) -> list[tuple[int, int]]:
    """(start of each lead-in line's paragraph, end of what it introduces) in LEAD_IN_DOC."""
    items = (
        text.index("申請書には次の項目"),
        text.index("- 交通手段と概算の費用") + len("- 交通手段と概算の費用"),
    )
    code = text.index("設定ファイルの例"), text.index("</Sandpack>") + len("</Sandpack>")
    return [items, code]


def test_a_lead_in_goes_with_the_list_or_code_it_introduces() -> None:
    """A paragraph ending with a colon introduces the block after it: a chunk never ends with it while
    what it introduces, which fits with it, begins the next chunk."""
    outline = markdown_outline(LEAD_IN_DOC)
    assert [LEAD_IN_DOC[a:b].split("\n")[0] for a, b in lead_ins(LEAD_IN_DOC, outline)] == [
        "申請書には次の項目を記入します：",
        "設定ファイルの例は次のとおりです：",
    ]
    pairs = _lead_in_pairs(LEAD_IN_DOC)
    for size in range(60, 200, 7):
        chunks = chunk(LEAD_IN_DOC, max_size=size, context="none")
        check_invariants(doc(LEAD_IN_DOC, "markdown"), chunks, max_size=size, unit="chars")
        for start, end in pairs:
            if end - start <= size:  # they fit together: together
                assert any(c.start <= start and end <= c.end for c in chunks), (size, LEAD_IN_DOC[start:end])


def test_a_lead_in_before_a_code_block_too_large_for_a_chunk_starts_its_first_piece() -> None:
    code = "\n".join(f"項目{i}: 値{i}" for i in range(40))
    text = f"# 例\n\n前置きの説明です。{'長い段落です。' * 12}\n\n出力は次のようになります：\n\n```text\n{code}\n```\n"
    chunks = chunk(text, max_size=120, context="none")
    first = next(c for c in chunks if "```text" in c.text)
    assert first.text.startswith("出力は次のようになります：\n\n```text")
    assert not any(c.text.rstrip().endswith("：") for c in chunks)


def test_a_block_that_fits_alone_is_not_cut_for_its_lead_in() -> None:
    code = "\n".join(f"value_{i} = {i}" for i in range(8))  # 8 lines of 11-12 characters
    block = f"```python\n{code}\n```"
    text = f"次のように書きます：\n\n{block}\n"
    size = len(block) + 2  # the block fits, the lead-in and the block do not
    chunks = chunk(text, max_size=size, context="none")
    assert [c.text for c in chunks] == ["次のように書きます：", block]


LIST_RIGHT_AFTER = """# 出張旅費

出張旅費は、事前に所属長の承認を得た出張について、帰着後三十日以内に領収書を提出した場合に支給する。支給額は役職と地域により異なる。

日当の上限は次のとおりです：
- 食事は一日あたり五千円まで
- 近距離の交通費は一日あたり三千円まで
- 宿泊費は一泊あたり一万二千円まで

上限を超える請求には経理部長の書面による承認が必要です。
"""


def test_a_lead_in_right_above_its_list_with_no_blank_line_goes_with_it() -> None:
    """A list may interrupt a paragraph (``次のとおりです：`` then ``- …`` on the next line, the commonest way
    Japanese Markdown writes it): that is a lead-in too, and no chunk ends with it while the list fits with
    it; where the list does not fit a chunk even alone, the lead-in starts the chunk of its first items (a
    list that fits alone but not with it is not cut for it)."""
    text = LIST_RIGHT_AFTER
    ((start, after),) = lead_ins(text, markdown_outline(text))
    assert text[start:after].rstrip() == "日当の上限は次のとおりです：" and text.startswith("- 食事", after)
    lead, last = text.index("日当の上限"), text.index("一万二千円まで") + len("一万二千円まで")
    for size in range(40, 200, 3):
        for strategy in ("markdown", "recursive"):
            chunks = make_chunker(strategy, max_size=size, context="none").chunk(doc(text))
            check_invariants(doc(text), chunks, max_size=size, unit="chars")
            if not last - after <= size < last - lead:
                assert not any(c.text.endswith("次のとおりです：") for c in chunks), (strategy, size)
            if strategy == "markdown" and last - lead <= size:
                assert any(c.start <= lead and last <= c.end for c in chunks), size


def test_what_is_not_a_lead_in() -> None:
    text = "## 手順：\n\n本文です。\n\n次のとおり：\n\n## 次の節\n\n本文。\n\n| 列 | 値： |\n|---|---|\n| a | 1 |\n\n後ろの段落。\n"
    # a heading ending with a colon, a lead-in above a heading, a table row: none
    assert lead_ins(text, markdown_outline(text)) == []
    english = "The settings are as follows:\n\n- name\n- size\n"
    ((start, after),) = lead_ins(english, markdown_outline(english))
    assert (start, english[after:].startswith("- name")) == (0, True)


def test_a_label_line_over_a_code_block_goes_with_it() -> None:
    """mdBook names a listing's file on a line of its own above the code: the label stays with the code."""
    code = "\n".join(f"    let value_{i} = {i};" for i in range(6))
    block = f"```rust\nfn main() {{\n{code}\n}}\n```"
    label = '<span class="filename">ファイル名: src/main.rs</span>'
    text = f"# 変数\n\n値を束縛する例を示します。{'束縛は既定で不変です。' * 6}\n\n{label}\n\n{block}\n\n次に可変の変数を見ます。\n"
    outline = markdown_outline(text)
    ((start, after),) = lead_ins(text, outline)
    assert text[start:after].rstrip() == label and text.startswith("```rust", after)
    for size in range(len(block) + len(label) + 4, 400, 13):
        chunks = chunk(text, max_size=size)
        holder = next(c for c in chunks if "```rust" in c.text)
        assert f"{label}\n\n```rust" in holder.text, (size, holder.text[:40])
        check_invariants(doc(text, "markdown"), chunks, max_size=size, unit="chars")


def test_a_code_block_that_fits_with_its_lead_in_is_one_piece_though_the_context_does_not_fit() -> None:
    """A code block that fits max_size is never cut for the context (the context gives way in its
    embed_text); with its lead-in it is one piece as long as the two fit max_size."""
    code = "\n".join(f"item_{i:02d} = compute({i})" for i in range(9))  # 9 lines of 24 characters
    block = f"```python\n{code}\n```"
    lead = "出力は次のようになります："
    text = f"# 計算の手順\n\n## 実行例\n\n{'説明の文です。' * 20}\n\n{lead}\n\n{block}\n"
    size = len(lead) + 2 + len(block) + 3  # the two fit; with the heading path in front they do not
    chunks = chunk(text, max_size=size)
    piece = next(c for c in chunks if "```python" in c.text)
    assert piece.text == f"{lead}\n\n{block}"
    assert len(piece.embed_text) <= size
    check_invariants(doc(text, "markdown"), chunks, max_size=size, unit="chars")


def test_a_sentence_above_a_code_block_is_not_a_label() -> None:
    text = "次の例を見てください。\n\n```python\nprint(1)\n```\n\n本文。\n\n| 列 |\n|---|\n| 1 |\n"
    assert lead_ins(text, markdown_outline(text)) == []


def test_a_notebook_output_stays_with_the_code_that_printed_it() -> None:
    """``kireme chunk NOTEBOOK --outputs text``: a result (``66``) opened a chunk of its own, away from the
    cell that printed it, when the text before the cell filled the chunk; the two now go together while
    they fit."""
    import json

    from kireme.load.notebook import load_notebook

    def cell(kind: str, source: str, outputs: list[dict[str, object]] | None = None) -> dict[str, object]:
        made: dict[str, object] = {"cell_type": kind, "metadata": {}, "source": source}
        if kind == "code":
            made.update(execution_count=1, outputs=outputs or [])
        return made

    notebook = {
        "cells": [
            cell(
                "markdown",
                "## 分割\n\n" + "読み込んだ文書を小さな断片に分けてから、それぞれを検索の単位にします。" * 2,
            ),
            cell(
                "code",
                "splits = splitter.split_documents(docs)\nlen(splits)",
                [{"output_type": "execute_result", "data": {"text/plain": ["66"]}, "metadata": {}}],
            ),
            cell("markdown", "断片の数は文書の長さと区切りの大きさで決まります。"),
        ],
        "metadata": {"kernelspec": {"language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    doc = load_notebook(json.dumps(notebook, ensure_ascii=False).encode(), "split.ipynb", outputs="text")
    chunker = make_chunker("markdown", max_size=155)  # the explanation and the code fit, the output not
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=155, chunker=chunker)
    assert not any(c.text.startswith("```output") for c in chunks)
    [holder] = [c for c in chunks if "```output" in c.text]
    assert "len(splits)" in holder.text and "66" in holder.text, [c.text for c in chunks]


def test_the_first_piece_of_a_section_takes_the_room_its_heading_line_leaves() -> None:
    """A section's pieces were packed with the budget the deepest context left (``Handbook > 4. Security >
    4.3 Reporting incidents`` in front of every piece after the first), the first one too, which holds the
    heading line and so is not prefixed with it: a sentence that fit its chunk was cut before "it."."""
    text = (
        "# Handbook\n\n## 4. Security\n\nIntro text here.\n\n### 4.3 Reporting incidents\n\n"
        "Report a security incident to security@northwind.example within one hour of noticing it. "
        "Include what happened, when it happened (date and time, e.g. 2025-03-14 16:20 UTC), and which "
        "systems are affected.\n"
    )
    first = "Report a security incident to security@northwind.example within one hour of noticing it."
    for max_size in (145, 150, 155, 160):
        chunks = make_chunker("markdown", max_size=max_size).chunk(doc(text, "markdown"))
        check_invariants(text, chunks, max_size=max_size, unit="chars")
        assert all(len(c.embed_text) <= max_size for c in chunks)
        assert any(c.text.endswith(first) for c in chunks), [c.text for c in chunks]
        assert not any(c.text == "it." or c.text.startswith("of noticing") for c in chunks)


def test_front_matter_that_does_not_fit_with_the_first_section_is_its_own() -> None:
    """Front matter went with the first section always; the section then started above the title's
    heading line, was packed with room for the title in front, and its one paragraph was cut in two
    though the chunk holding the heading line is not prefixed with the title."""
    text = (
        "---\ntitle: Employee Handbook\n---\n\n# Employee Handbook\n\n"
        "Version 4.2, effective Jan. 5, 2025. This handbook applies to all employees working in the U.S. "
        "and Canada.\n\n## 1. Hours\n\nCore hours are 10 a.m. to 3 p.m.\n"
    )
    for max_size in (130, 140):
        chunks = make_chunker("markdown", max_size=max_size).chunk(doc(text, "markdown"))
        check_invariants(text, chunks, max_size=max_size, unit="chars")
        assert [c.text for c in chunks if "Version" in c.text] == [
            "# Employee Handbook\n\nVersion 4.2, effective Jan. 5, 2025. This handbook applies to all "
            "employees working in the U.S. and Canada."
        ]
    # front matter that fits with the first section still goes with it
    small = make_chunker("markdown", max_size=400).chunk(doc(text, "markdown"))
    assert small[0].text.startswith("---\ntitle: Employee Handbook\n---\n\n# Employee Handbook")


def test_an_excel_title_row_above_the_header_is_not_the_header() -> None:
    """An Excel sheet saved as CSV with its title in A1 and a blank row under it: the title row was the
    header, so every record read ``価格表（４月改定）: A-001 / 列2: …`` and the real column names appeared
    nowhere; blank rows (``,,,``) were records of their own with nothing to embed."""
    text = (
        "価格表（４月改定）,,,\r\n,,,\r\n商品コード,商品名,単価,備考\r\n"
        'A-001,クリーナー,"￥1,280",詰め替え用あり\r\n,,,\r\nB-101,スポンジ,￥350,\r\n'
    )
    doc = Document(text, id="prices.csv", metadata={"format": "csv"})
    chunks = make_chunker("markdown", max_size=80, table="records").chunk(doc)
    check_invariants(doc, chunks, max_size=80, unit="chars")
    records = [c.embed_text for c in chunks if "コード" in c.embed_text]
    assert any("商品コード: A-001\n商品名: クリーナー\n単価: ￥1,280" in e for e in records), records
    assert any("商品コード: B-101\n商品名: スポンジ\n単価: ￥350" in e for e in records), records
    assert not any("価格表（４月改定）: A-001" in c.embed_text for c in chunks)
    assert not any(c.text.strip(",\r\n") == "" for c in chunks)  # no chunk of blank rows alone
    # a header in the first row is the header, as before
    plain = Document(text[text.index("商品コード") :], id="p.csv", metadata={"format": "csv"})
    first = make_chunker("markdown", max_size=80, table="records").chunk(plain)
    assert "商品コード: A-001" in first[0].embed_text


def test_a_string_given_to_the_markdown_strategy_is_read_as_markdown() -> None:
    """``chunk("# …", strategy="markdown")`` read the string as plain text: no heading path, no context,
    the cuts by the plain-text rules — though the strategy named says what the string is."""
    from kireme import chunk as chunk_it

    text = "# 就業規則\n\n## 第1章 総則\n\n本文です。これは規則の本文です。\n\n## 第2章 賃金\n\n賃金は月末に支払う。\n"
    chunks = chunk_it(text, strategy="markdown", max_size=40)
    assert [c.headings for c in chunks] == [
        c.headings for c in chunk(text, max_size=40)
    ]  # as a Markdown document's
    assert ("就業規則", "第2章 賃金") in [c.headings for c in chunks]
    assert all("就業規則" in c.embed_text for c in chunks)  # the heading path as context
    assert chunk_it(text, strategy="recursive", max_size=40)[0].headings == ()  # other strategies: text


ALLOWANCE_TABLE = (
    "## 国内出張の宿泊費と日当\n\n"
    "| 区分 | 宿泊費（東京・大阪） | 宿泊費（その他の地域） | 日当 | 備考 |\n"
    "|---|---|---|---|---|\n"
    "| 役員 | 15,000円 | 12,000円 | 3,000円 | 実費精算可 |\n"
    "| 一般社員 | 9,800円 | 8,500円 | 2,500円 | 上限内で精算 |\n"
    "| 嘱託 | 9,000円 | 8,000円 | 2,000円 | 上限内で精算 |\n"
)


@pytest.mark.parametrize("max_size", [100, 110, 120, 130, 200])
def test_a_table_row_is_not_cut_to_keep_the_heading_with_the_table(max_size: int) -> None:
    """Heading, header and first row just over the limit: the heading kept "the start of its body" by cutting
    the first row between its cells (``| 役員 | 15,000円 | 12,000円 |`` | ``3,000円 | 実費精算可 |``): the
    役員's 日当 then stood in a chunk without its row. The heading goes alone instead."""
    chunks = make_chunker("markdown", max_size=max_size).chunk(
        Document(ALLOWANCE_TABLE, metadata={"format": "markdown"})
    )
    for c in chunks:
        for line in c.text.splitlines():
            if line.startswith("|") or line.endswith("|"):
                assert line.startswith("|") and line.endswith("|") and line.count("|") == 6, (line, max_size)
    assert any("| 役員 | 15,000円 | 12,000円 | 3,000円 | 実費精算可 |" in c.embed_text for c in chunks)


def test_the_first_piece_of_a_section_is_not_cut_for_context_it_never_gets() -> None:
    """The second item's heading path (42 characters) never fits with it, so every piece of the section was
    packed tighter, and the first — which holds the heading lines and so gets no path — was cut inside its
    sentence (``must be at`` | ``least 14 characters long.``)."""
    text = (
        "# Information Security Policy\n\n## 2. Passwords\n\n"
        "1. Passwords must be at least 14 characters long.\n"
        "2. Passwords must not be reused within the last 24 changes.\n"
    )
    chunks = make_chunker("markdown", max_size=100).chunk(Document(text, metadata={"format": "markdown"}))
    assert [c.text for c in chunks] == [
        "# Information Security Policy\n\n## 2. Passwords\n\n1. Passwords must be at least 14 characters long.",
        "2. Passwords must not be reused within the last 24 changes.",
    ]
    assert all(len(c.embed_text) <= 100 for c in chunks)


def test_no_sentence_is_cut_to_make_room_for_a_context_that_cannot_fit() -> None:
    """The same with text under the top heading (the section no longer starts there): packing the list
    tighter to make room for the 42-character path cut the second item inside its sentence (``…within the
    last 24`` | ``changes.``); the packing before stays, and that item's context gives way."""
    text = (
        "# Information Security Policy\n\nRules for every account.\n\n## 2. Passwords\n\n"
        "1. Passwords must be at least 14 characters long.\n"
        "2. Passwords must not be reused within the last 24 changes.\n"
    )
    chunks = make_chunker("markdown", max_size=100).chunk(Document(text, metadata={"format": "markdown"}))
    assert chunks[-1].text == "2. Passwords must not be reused within the last 24 changes."
    # the context gives way as far as it must: the title goes, the nearest heading stays
    assert chunks[-1].embed_text == "2. Passwords\n\n" + chunks[-1].text
    assert all(len(c.embed_text) <= 100 for c in chunks)


@pytest.mark.parametrize(
    ("text", "max_size", "first"),
    [
        (
            "# Expense Handbook\n\nHow staff claim travel costs.\n\n## Lodging and hotels\n\n"
            "Hotels are paid at cost up to 9,800 yen a night. In central Tokyo the limit is 13,200 yen a night.\n",
            96,
            "## Lodging and hotels\n\nHotels are paid at cost up to 9,800 yen a night.",
        ),
        (
            "# 経費ハンドブック\n\n出張費の精算方法をまとめる。\n\n## 宿泊費の上限\n\n"
            "ホテル代は１泊９，８００円を上限として実費で支払う。東京都心部では１泊１３，２００円を上限とする。\n",
            56,
            "## 宿泊費の上限\n\nホテル代は１泊９，８００円を上限として実費で支払う。",
        ),
    ],
)
def test_a_sentence_just_over_the_room_its_context_leaves_stays_whole(
    text: str, max_size: int, first: str
) -> None:
    """A heading and its first sentence a few characters over what the context leaves them were cut inside
    that sentence (``…9,800 yen a`` | ``night. In central…``, ``…実費で`` | ``支払う。東京…``): now they
    stay whole within ``max_size`` and the context gives way (the title goes, the path above stays)."""
    doc = Document(text, metadata={"format": "markdown", "title": "Staff wiki"})
    chunks = make_chunker("markdown", max_size=max_size).chunk(doc)
    assert [c.text for c in chunks][1] == first
    assert chunks[1].embed_text == chunks[1].headings[0] + "\n\n" + first
    assert chunks[2].text == text.rstrip("\n")[text.index(first) + len(first) :].strip()
    assert all(len(c.embed_text) <= max_size for c in chunks)


def test_a_sentence_far_over_the_room_its_context_leaves_is_still_cut() -> None:
    """Beyond a twentieth of ``max_size`` the context is worth more than the sentence: the heading path
    stays in front and the sentence is cut (law QA lost questions when sentences took the room of long
    paths)."""
    text = (
        "# Expense Handbook\n\nHow staff claim travel costs.\n\n## Lodging and hotels\n\n"
        "Hotels are paid at cost up to 9,800 yen a night with breakfast. In central Tokyo the limit is higher.\n"
    )
    doc = Document(text, metadata={"format": "markdown", "title": "Staff wiki"})
    chunks = make_chunker("markdown", max_size=96).chunk(doc)
    assert chunks[1].embed_text.startswith("Staff wiki\nExpense Handbook\n\n## Lodging and hotels")
    assert not chunks[1].text.endswith("breakfast.")  # 86 characters: 19 over the 67 the context leaves
    assert all(len(c.embed_text) <= 96 for c in chunks)


def test_a_context_too_long_for_a_piece_keeps_what_fits() -> None:
    """`ContextBuilder.prefix_within`: the fullest prefix within the room a piece leaves — the outer
    headings first out, then the title, the nearest heading last — not all of it or nothing."""
    from kireme.context import ContextBuilder
    from kireme.text.markdown import HeadingPaths, markdown_headings

    text = "# 規程\n\n## 第2章 国内出張\n\n### 第2条 宿泊費\n\n宿泊費は実費とする。"
    paths = HeadingPaths(markdown_headings(text))
    builder = ContextBuilder("headings", "旅費規程", paths, len, 100, text)
    start = text.index("宿泊費は")
    end = len(text)
    assert builder.prefix(start, end) == "旅費規程\n規程 > 第2章 国内出張 > 第2条 宿泊費\n\n"
    assert builder.prefix_within(start, end, 100) == builder.prefix(start, end)
    assert builder.prefix_within(start, end, 25) == "旅費規程\n第2章 国内出張 > 第2条 宿泊費\n\n"
    assert builder.prefix_within(start, end, 20) == "旅費規程\n第2条 宿泊費\n\n"
    assert builder.prefix_within(start, end, 12) == "第2条 宿泊費\n\n"
    assert builder.prefix_within(start, end, 5) == ""
    assert ContextBuilder("none", "旅費規程", paths, len, 100, text).prefix_within(start, end, 100) == ""


def test_a_code_blocks_closing_fence_is_no_chunk_of_its_own() -> None:
    text = (
        "## API\n\n```bash\n"
        'curl -H "Authorization: Bearer $TOKEN" \\\n'
        '  "https://api.example.co.jp/v2/records?from=2024-10-01&to=2024-10-31"\n'
        "```\n"
    )
    for max_size in (80, 90, 100):  # (at 70 the URL's line, 69 characters, leaves the fence no room)
        chunks = make_chunker("markdown", max_size=max_size).chunk(
            Document(text, metadata={"format": "markdown"})
        )
        assert all(c.text.strip() != "```" for c in chunks), (max_size, [c.text for c in chunks])
        assert chunks[-1].text.endswith("\n```")
        assert all(len(c.embed_text) <= max_size for c in chunks)


@pytest.mark.parametrize(
    ("text", "max_size", "groups"),
    [
        (
            "- 年次有給休暇\n  - 全日：前日までに申請\n  - 半日：当日朝までに申請\n"
            "- 特別休暇\n  - 慶弔休暇：事由発生後7日以内に申請\n  - 子の看護休暇：1時間単位で取得可能\n",
            70,
            ["年次有給休暇", "特別休暇"],
        ),
        (
            "- Annual leave\n  - Full day: apply the day before\n  - Half day: apply by 9:00 that morning\n"
            "- Special leave\n  - Bereavement: apply within 7 days of the event\n"
            "  - Child care: can be taken by the hour\n",
            160,
            ["Annual leave", "Special leave"],
        ),
    ],
)
def test_a_list_item_stays_with_the_items_nested_under_it(
    text: str, max_size: int, groups: list[str]
) -> None:
    """``- 特別休暇`` ended a chunk, its items in the next, which never named it; and with room for one group
    and a half, the second group was cut between its own items rather than before it."""
    chunks = make_chunker("markdown", max_size=max_size).chunk(
        Document(text, metadata={"format": "markdown"})
    )
    assert len(chunks) == 2, [c.text for c in chunks]
    for chunk, name in zip(chunks, groups, strict=True):
        assert chunk.text.startswith(f"- {name}\n  - "), [c.text for c in chunks]


def test_a_small_tables_first_row_stays_whole_under_its_heading() -> None:
    text = "## 料金\n\n| 区分 | 宿泊費 | 日当 |\n|---|---|---|\n| 役員 | 15,000円 | 3,000円 |\n| 一般社員 | 9,800円 | 2,500円 |\n"
    chunks = make_chunker("markdown", max_size=60).chunk(Document(text, metadata={"format": "markdown"}))
    assert [c.text for c in chunks] == [
        "## 料金",
        "| 区分 | 宿泊費 | 日当 |\n|---|---|---|\n| 役員 | 15,000円 | 3,000円 |",
        "| 一般社員 | 9,800円 | 2,500円 |",
    ]


REQUEST_TABLE = """## Request body

| Field | Type | Required | Description |
|---|---|---|---|
| `grant_type` | string | yes | Must be `client_credentials` for server-to-server tokens. |
| `client_id` | string | yes | The identifier issued when the application was registered. |
| `client_secret` | string | yes | The secret issued with the client id; keep it out of logs. |
"""

INSTALL_STEPS = """1. パッケージを更新します。

   ```bash
   sudo apt-get update
   ```

2. 必要なツールを入れます。

   ```bash
   sudo apt-get install -y curl ca-certificates
   ```

3. 署名鍵を追加します。

   ```bash
   curl -fsSL https://example.com/key.gpg | sudo gpg --dearmor -o /usr/share/keyrings/kumo.gpg
   ```
"""


@pytest.mark.parametrize(("max_size", "overlap"), [(150, 20), (200, 40), (300, 40), (120, 30)])
def test_an_overlap_never_cuts_a_table_row_or_a_code_line(max_size: int, overlap: int) -> None:
    """With ``--overlap`` the room kept for it cut rows that fit between their cells (``| `grant_type` |
    string | yes |`` | ``string | yes | Must be…``), an overlap began inside a row (``|\\n| `client_id` …``)
    or a command (``-y curl ca-certificates\\n   ```\\``, a stray closing fence that turned the prose after it
    into code), and a code block that fit a chunk was cut for the room."""
    for text in (REQUEST_TABLE, INSTALL_STEPS):
        doc = Document(text, metadata={"format": "markdown"})
        chunker = make_chunker("markdown", max_size=max_size, overlap=overlap)
        chunks = chunker.chunk(doc)
        check_invariants(doc, chunks, max_size=max_size, chunker=chunker, overlap=overlap)
        for c in chunks:
            for line in c.text.splitlines():
                if line.startswith("|"):
                    assert line.endswith("|"), (max_size, overlap, [c.text for c in chunks])
            first = c.text.splitlines()[0].strip()
            assert not first.startswith(("```", "-y", "|\n")) and first != "|", [c.text for c in chunks]
        if text is INSTALL_STEPS:
            for command in ("sudo apt-get install -y curl ca-certificates", "sudo gpg --dearmor -o /usr/"):
                assert any(command in c.text for c in chunks), (max_size, overlap, [c.text for c in chunks])


def test_a_section_that_fits_a_chunk_is_not_cut_to_keep_room_for_an_overlap() -> None:
    """A chunk alone gets no overlap (nothing before it to repeat), yet a section of 152 characters at
    ``max_size=180, overlap=30`` was packed to 150 and its JSON example cut."""
    text = (
        "## Address object\n\n```json\n{\n"
        '  "name": "Sakura Logistics",\n  "city": "Osaka",\n  "phone": "+81-3-0000-0000",\n'
        '  "zip": "530-0001",\n  "note": "After 18:00 by appointment"\n}\n```\n'
    )
    doc = Document(text, metadata={"format": "markdown"})
    assert 150 < len(text.strip()) <= 180
    for strategy in ("markdown", "recursive"):
        chunks = make_chunker(strategy, max_size=180, overlap=30).chunk(doc)
        assert [c.text for c in chunks] == [text.strip()], strategy


@pytest.mark.parametrize(
    ("text", "max_size"),
    [("~~~\n```\n\n\n   👍🏽 \n~~~", 8), ("```\ncode\n```\n第3条。", 4), ("```\nx = 1\ny = 2\n```\n", 5)],
)
def test_a_closing_fence_joined_to_the_piece_before_it_is_measured_exactly(text: str, max_size: int) -> None:
    """In tokens, the closing fence joined to the last piece of a code block took its size from the
    document's token stream: a chunk said size 8 and held 9 tokens (over max_size), or said 4 and held 3."""
    measure = Tokens()
    chunks = make_chunker("markdown", max_size=max_size, unit="tokens").chunk(text)
    for c in chunks:
        assert c.size == measure(c.text), c
        assert c.size <= max_size, c
    check_invariants(
        Document(text, metadata={"format": "markdown"}), chunks, max_size=max_size, measure=measure
    )


def test_lead_in_lines_are_found_only_for_a_document_that_is_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """The heading and lead-in line ends (`kept_line_ends`) are looked for when the packer first asks: a
    Markdown text that fits one chunk whole is never cut and never asks; a longer one does, and its lead-in
    stays with the list it introduces."""
    from kireme.text import leads

    calls: list[int] = []
    found = leads.kept_line_ends

    def counted(text: str, outline: object) -> frozenset[int]:
        calls.append(len(text))
        return found(text, outline)  # type: ignore[arg-type]

    monkeypatch.setattr(leads, "kept_line_ends", counted)
    chunker = make_chunker("markdown", max_size=60)
    short = "日当は一日あたり二千円とする。"
    assert [c.text for c in chunker.chunk(short)] == [short]
    assert calls == []
    long = (
        "出張の申請は、出発の五営業日前までに総務課へ提出する。" * 3
        + "\n\n必要な書類は次のとおりです：\n\n- 申請書\n- 旅程表\n- 見積書\n"
    )
    chunks = chunker.chunk(long)
    assert calls == [len(long)]
    assert any(c.text.startswith("必要な書類は次のとおりです：") and "- 見積書" in c.text for c in chunks)
