"""Word .docx files to Markdown: styles become structure, tables become regions, bad files fail in one line."""

from __future__ import annotations

import importlib
import io
import random
import sys

import pytest
from markdown_it import MarkdownIt

from kireme import LoadError
from kireme.load.docx import load_docx

docx = pytest.importorskip("docx")


def _build(title: str = "") -> bytes:
    d = docx.Document()
    d.core_properties.title = title
    d.add_heading("就業規則", level=0)
    d.add_heading("第1章 総則", level=1)
    d.add_paragraph("この規則は、全社員に適用する。")
    d.add_paragraph("# これは見出しではない")
    d.add_paragraph("")
    d.add_heading("第2条 休暇", level=2)
    d.add_paragraph("年次有給休暇", style="List Bullet")
    d.add_paragraph("入社6か月後に付与", style="List Bullet 2")
    d.add_paragraph("特別休暇", style="List Bullet")
    d.add_paragraph("申請書を出す", style="List Number")
    d.add_paragraph("上長が承認する", style="List Number")
    table = d.add_table(rows=3, cols=3)
    cells = [["区分", "日数", "備考"], ["慶弔", "5", "A|B"], ["Sick leave", "3", ""]]
    for i, row in enumerate(cells):
        for j, value in enumerate(row):
            table.cell(i, j).text = value
    d.add_paragraph("Tables end here.")
    second = d.add_table(rows=1, cols=1)
    second.cell(0, 0).text = "only header"
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


EXPECTED = """# 就業規則

# 第1章 総則

この規則は、全社員に適用する。

\\# これは見出しではない

## 第2条 休暇

- 年次有給休暇
  - 入社6か月後に付与
- 特別休暇

1. 申請書を出す
2. 上長が承認する

| 区分 | 日数 | 備考 |
| --- | --- | --- |
| 慶弔 | 5 | A\\|B |
| Sick leave | 3 |  |

Tables end here.

| only header |
| --- |
"""


def test_docx_renders_to_exact_markdown() -> None:
    data = _build()
    doc = load_docx(data, "rules.docx")
    assert doc.text == EXPECTED
    assert doc.format == "docx"
    assert doc.metadata["source"] == "rules.docx" and doc.metadata["bytes"] == len(data)
    assert doc.title == "就業規則"  # no core title: the Title paragraph


def test_core_properties_title_wins() -> None:
    doc = load_docx(_build(title="Work Rules 2025"), "rules.docx")
    assert doc.title == "Work Rules 2025"


def test_tables_are_regions_in_document_order() -> None:
    doc = load_docx(_build(), "rules.docx")
    assert [dict(r.metadata) for r in doc.regions] == [{"table": "table 1"}, {"table": "table 2"}]
    first, second = (doc.text[r.start : r.end] for r in doc.regions)
    assert first.startswith("| 区分 | 日数 | 備考 |") and first.endswith("| Sick leave | 3 |  |")
    assert second == "| only header |\n| --- |"
    assert all(r.kind == "table" for r in doc.regions)


def test_markdown_parser_reads_the_structure_back() -> None:
    tokens = MarkdownIt("commonmark").enable("table").parse(load_docx(_build(), "rules.docx").text)
    headings = [(t.tag, tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings == [("h1", "就業規則"), ("h1", "第1章 総則"), ("h2", "第2条 休暇")]
    top = [t.type for t in tokens if t.level == 0 and t.type.endswith("_open")]
    assert top.count("table_open") == 2
    assert "bullet_list_open" in top and "ordered_list_open" in top


def test_merged_cells_repeat_their_text() -> None:
    d = docx.Document()
    table = d.add_table(rows=2, cols=3)
    for j, value in enumerate(["期間", "金額", "注記"]):
        table.cell(0, j).text = value
    table.cell(1, 0).text = "通年"
    merged = table.cell(1, 1).merge(table.cell(1, 2))
    merged.text = "応相談"
    buf = io.BytesIO()
    d.save(buf)
    doc = load_docx(buf.getvalue(), "merged.docx")
    assert doc.text == "| 期間 | 金額 | 注記 |\n| --- | --- | --- |\n| 通年 | 応相談 | 応相談 |\n"


def test_empty_document_gives_empty_text() -> None:
    buf = io.BytesIO()
    docx.Document().save(buf)
    doc = load_docx(buf.getvalue(), "blank.docx")
    assert doc.text == "" and doc.regions == ()


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(_build()[:200], id="truncated"),
        pytest.param(random.Random(7).randbytes(4096), id="random"),
        pytest.param(b"", id="empty"),
    ],
)
def test_unreadable_files_raise_one_line(data: bytes) -> None:
    with pytest.raises(LoadError) as info:
        load_docx(data, "bad.docx")
    message = str(info.value)
    assert message.startswith("bad.docx: not a readable .docx file (")
    assert "\n" not in message


def test_missing_python_docx_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "docx", None)
    with pytest.raises(LoadError, match=r"kireme\[docx\]") as info:
        load_docx(b"PK\x03\x04", "x.docx")
    assert "\n" not in str(info.value)


def _bomb(paragraphs: int) -> bytes:
    """A valid .docx whose body is ``paragraphs`` empty paragraphs: kilobytes that inflate a lot."""
    import zipfile

    source = zipfile.ZipFile(io.BytesIO(_build()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "word/document.xml":
                head, _, rest = data.partition(b"<w:body>")
                _, _, tail = rest.partition(b"</w:body>")
                data = head + b"<w:body>" + b"<w:p/>" * paragraphs + b"</w:body>" + tail
            target.writestr(info, data)
    return out.getvalue()


def test_a_paragraph_bomb_is_refused_before_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Expectation: too many elements fail the file with one line, fast (it took minutes and GBs)."""
    loader = importlib.import_module("kireme.load.docx")

    monkeypatch.setattr(loader, "MAX_ELEMENTS", 50_000)
    data = _bomb(200_000)
    assert len(data) < 60_000  # small on disk
    with pytest.raises(LoadError, match="XML elements"):
        load_docx(data, "bomb.docx")
    assert load_docx(_bomb(1_000), "fine.docx").text == ""  # under the cap: read as usual


def test_a_part_that_inflates_too_far_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    loader = importlib.import_module("kireme.load.docx")

    monkeypatch.setattr(loader, "MAX_UNCOMPRESSED_BYTES", 1 << 20)
    with pytest.raises(LoadError, match="inflates to more than 1 MiB"):
        load_docx(_bomb(400_000), "big.docx")
