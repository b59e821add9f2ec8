"""Word .docx files to Markdown: styles become structure, tables become regions, bad files fail in one line."""

from __future__ import annotations

import importlib
import io
import random
import sys
import zipfile

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


_NS = (
    'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" '
    'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"'
)


def _with_hidden_parts() -> bytes:
    """A contract memo with what ``paragraph.text`` and ``iter_inner_content`` do not see."""
    from docx.oxml import parse_xml

    d = docx.Document()
    d.add_heading("支払条件の確認", level=1)
    p = d.add_paragraph("支払期限は")
    p._p.append(parse_xml(f'<w:ins {_NS} w:id="1" w:author="a"><w:r><w:t>三十日以内</w:t></w:r></w:ins>'))
    p._p.append(
        parse_xml(f'<w:del {_NS} w:id="2" w:author="a"><w:r><w:delText>六十日以内</w:delText></w:r></w:del>')
    )
    p._p.append(
        parse_xml(f'<w:moveFrom {_NS} w:id="3" w:author="a"><w:r><w:t>旧い位置</w:t></w:r></w:moveFrom>')
    )
    p.add_run("とする。")
    p._p.append(parse_xml(f'<w:r {_NS}><w:footnoteReference w:id="2"/></w:r>'))
    box = (
        f'<w:r {_NS}><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><w:txbxContent>'
        "<w:p><w:r><w:t>枠の中の注意書きです。</w:t></w:r></w:p></w:txbxContent></w:drawing></mc:Choice>"
        "<mc:Fallback><w:pict><w:txbxContent><w:p><w:r><w:t>枠の中の注意書きです。</w:t></w:r></w:p>"
        "</w:txbxContent></w:pict></mc:Fallback></mc:AlternateContent></w:r>"
    )
    d.add_paragraph("図：")._p.append(parse_xml(box))
    body = d.element.body
    control = f"<w:sdt {_NS}><w:sdtContent><w:p><w:r><w:t>申請者欄の説明です。</w:t></w:r></w:p></w:sdtContent></w:sdt>"
    body.insert(len(body) - 1, parse_xml(control))
    table = d.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text, table.cell(1, 0).text = "項目", "内容", "地域別"
    inner = table.cell(1, 1).add_table(rows=1, cols=2)
    inner.cell(0, 0).text, inner.cell(0, 1).text = "東京", "一万円"
    raw = io.BytesIO()
    d.save(raw)
    notes = (
        f'<w:footnotes {_NS}><w:footnote w:type="separator" w:id="0"><w:p><w:r><w:t>区切り線</w:t></w:r></w:p>'
        '</w:footnote><w:footnote w:id="2"><w:p><w:r><w:t>祝日の場合は翌営業日とする。</w:t></w:r></w:p>'
        "</w:footnote></w:footnotes>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw.getvalue())) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            dst.writestr(item, src.read(item.filename))
        dst.writestr("word/footnotes.xml", notes)
    return out.getvalue()


def test_text_word_shows_is_read_inserted_boxed_controlled_nested_and_footnoted() -> None:
    """Tracked insertions, text boxes, content controls, nested tables and footnotes were dropped
    silently (``支払期限は三十日以内とする。`` read as ``支払期限はとする。``)."""
    text = load_docx(_with_hidden_parts(), "memo.docx").text
    assert "支払期限は三十日以内とする。[^2]" in text
    assert "六十日以内" not in text and "旧い位置" not in text  # deleted and moved away
    assert text.count("枠の中の注意書きです。") == 1  # the drawing's copy, not its fallback too
    assert text.index("図：") < text.index("枠の中の注意書きです。")
    assert "申請者欄の説明です。" in text
    assert "| 地域別 | 東京 一万円 |" in text
    assert text.rstrip().endswith("[^2] 祝日の場合は翌営業日とする。") and "区切り線" not in text


W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def _numbered() -> bytes:
    """Numbers as Word makes them: a ``List Paragraph`` with its own ``numPr`` pointing at a numbering
    definition (``（%1）`` over ``①``), a second instance of it restarting at 5, a ``List Number`` list
    interrupted by a paragraph, and a heading style numbered ``第%1条``."""
    from docx.oxml import parse_xml

    d = docx.Document()
    numbering = d.part.numbering_part.element
    numbering.insert(
        0,
        parse_xml(
            f'<w:abstractNum {W} w:abstractNumId="90">'
            '<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="（%1）"/></w:lvl>'
            '<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="decimalEnclosedCircle"/>'
            '<w:lvlText w:val="%2"/></w:lvl></w:abstractNum>'
        ),
    )
    numbering.insert(
        0,
        parse_xml(
            f'<w:abstractNum {W} w:abstractNumId="91"><w:lvl w:ilvl="0"><w:start w:val="1"/>'
            '<w:numFmt w:val="decimal"/><w:lvlText w:val="第%1条"/></w:lvl></w:abstractNum>'
        ),
    )
    numbering.append(parse_xml(f'<w:num {W} w:numId="90"><w:abstractNumId w:val="90"/></w:num>'))
    numbering.append(
        parse_xml(
            f'<w:num {W} w:numId="91"><w:abstractNumId w:val="90"/>'
            '<w:lvlOverride w:ilvl="0"><w:startOverride w:val="5"/></w:lvlOverride></w:num>'
        )
    )
    numbering.append(parse_xml(f'<w:num {W} w:numId="92"><w:abstractNumId w:val="91"/></w:num>'))

    def numbered(paragraph, num: int, level: int = 0) -> None:
        paragraph._p.get_or_add_pPr().insert(
            0, parse_xml(f'<w:numPr {W}><w:ilvl w:val="{level}"/><w:numId w:val="{num}"/></w:numPr>')
        )

    numbered(d.add_heading("懲戒の事由", level=2), 92)
    d.add_paragraph("従業員が次の各号のいずれかに該当するときは、懲戒処分とする。")
    for text, num, level in (
        ("正当な理由なく無断欠勤が続いたとき", 90, 0),
        ("業務上の指示に従わなかったとき", 90, 0),
        ("口頭での指示", 90, 1),
        ("書面での指示", 90, 1),
        ("会社の信用を傷つけたとき", 90, 0),
    ):
        numbered(d.add_paragraph(text, style="List Paragraph"), num, level)
    numbered(d.add_heading("指示の範囲", level=2), 92)
    d.add_paragraph("前条第2号の指示には次を含む。")
    for text in ("安全に関する指示", "衛生に関する指示"):
        numbered(d.add_paragraph(text, style="List Paragraph"), 91)
    d.add_paragraph("申請書を書く。", style="List Number")
    d.add_paragraph("上長に出す。", style="List Number")
    d.add_paragraph("承認された後は次のとおり。")
    d.add_paragraph("チケットを買う。", style="List Number")
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def test_word_numbering_is_the_number_word_shows() -> None:
    """A ``List Paragraph`` numbered by numbering.xml became a ``-`` bullet (its ``（1）``, ``①`` lost, and
    a text citing 前条第2号 pointed at nothing); a second list restarting at 5 and a ``List Number`` list
    interrupted by a paragraph restarted at 1; a heading numbered ``第%1条`` lost its article number."""
    text = load_docx(_numbered(), "rules.docx").text
    assert "## 第1条 懲戒の事由" in text and "## 第2条 指示の範囲" in text
    assert "- （1）正当な理由なく無断欠勤が続いたとき\n- （2）業務上の指示に従わなかったとき" in text
    assert "  - ①口頭での指示\n  - ②書面での指示\n- （3）会社の信用を傷つけたとき" in text
    assert "- （5）安全に関する指示\n- （6）衛生に関する指示" in text
    assert "1. 申請書を書く。\n2. 上長に出す。" in text
    assert "承認された後は次のとおり。\n\n3. チケットを買う。" in text  # Word goes on at 3


@pytest.mark.parametrize(
    ("n", "fmt", "shown"),
    [
        (3, "decimalFullWidth", "３"),
        (12, "japaneseCounting", "十二"),
        (20, "japaneseCounting", "二十"),
        (2, "aiueoFullWidth", "イ"),
        (3, "iroha", "ハ"),
        (28, "lowerLetter", "ab"),
        (14, "upperRoman", "XIV"),
        (4, "decimalEnclosedParen", "⑷"),
        (7, "somethingNew", "7"),
    ],
)
def test_number_formats(n: int, fmt: str, shown: str) -> None:
    from kireme.load.numbering import format_number

    assert format_number(n, fmt) == shown


def test_a_two_row_header_word_repeats_on_each_page_is_one_header() -> None:
    """Both rows marked as repeating header rows (``w:tblHeader``): the second was read as a data row,
    so every later piece of the table had ``| 役職 | 日当 | 日当 |`` over its numbers, the two columns
    told apart by nothing. As in an HTML table, the header rows become one."""
    from docx.oxml import parse_xml

    d = docx.Document()
    table = d.add_table(rows=4, cols=3)
    top = table.rows[0].cells
    top[0].text = "役職"
    top[1].merge(top[2]).text = "日当"
    table.rows[1].cells[1].text = "日帰り"
    table.rows[1].cells[2].text = "宿泊"
    table.cell(0, 0).merge(table.cell(1, 0))
    for i, row in enumerate(table.rows[2:], start=1):
        row.cells[0].text, row.cells[1].text, row.cells[2].text = f"等級{i}", f"{i}100円", f"{i}300円"
    for row in table.rows[:2]:
        row._tr.get_or_add_trPr().append(parse_xml(f"<w:tblHeader {W}/>"))
    buf = io.BytesIO()
    d.save(buf)
    text = load_docx(buf.getvalue(), "nitto.docx").text
    assert "| 役職 | 日当 日帰り | 日当 宿泊 |\n| --- | --- | --- |\n| 等級1 | 1100円 | 1300円 |" in text
