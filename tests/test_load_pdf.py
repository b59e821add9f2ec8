"""PDF pages to text with page regions (`kireme.load.pdf`), on PDFs generated here with reportlab."""

from __future__ import annotations

import io
import logging
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kireme import chunk
from kireme.errors import LoadError
from kireme.load.pdf import is_page_number, load_pdf, running_lines
from kireme.text.paragraphs import pdf_paragraph_starts

JA_FONT = "HeiseiKakuGo-W5"


def _pdf(pages: list[list[str]], *, title: str = "", font: str = "Helvetica") -> bytes:
    """A PDF with one page per list of lines, drawn top-down in ``font``."""
    pytest.importorskip("pypdf")
    pytest.importorskip("reportlab")
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf)
    if title:
        c.setTitle(title)
    for lines in pages:
        c.setFont(font, 11)
        y = 760
        for line in lines:
            if line:
                c.drawString(72, y, line)
            y -= 16
        c.showPage()
    c.save()
    return buf.getvalue()


def _register_japanese_font() -> None:
    """The CID font reportlab draws Japanese with (built in: nothing to download)."""
    pytest.importorskip("reportlab")
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.cidfonts import UnicodeCIDFont

    pdfmetrics.registerFont(UnicodeCIDFont(JA_FONT))


EN_PAGES = [
    ["Chunking guide", "Split documents at paragraph ends.", "Keep offsets exact."],
    ["Second page starts here.", "It has two lines."],
    ["Last page."],
]


def test_english_pages_become_page_regions() -> None:
    data = _pdf(EN_PAGES, title="Chunking Guide")
    doc = load_pdf(data, "docs/guide.pdf")
    expected = ["\n".join(lines) for lines in EN_PAGES]
    assert doc.text == "\n\n".join(expected) + "\n"
    assert [r.kind for r in doc.regions] == ["page", "page", "page"]
    assert [dict(r.metadata) for r in doc.regions] == [{"page": 1}, {"page": 2}, {"page": 3}]
    assert [doc.text[r.start : r.end] for r in doc.regions] == expected
    assert doc.title == "Chunking Guide"
    assert dict(doc.metadata) == {
        "source": "docs/guide.pdf",
        "format": "pdf",
        "bytes": len(data),
        "title": "Chunking Guide",
        "pages": 3,
    }


def test_title_is_empty_when_not_set() -> None:
    # reportlab writes the placeholder "untitled" into the info dictionary; that is no title.
    assert load_pdf(_pdf([["Only text."]]), "a.pdf").title == ""


def test_japanese_text_from_a_cid_font() -> None:
    _register_japanese_font()
    pages = [
        [
            "第1章　概要",
            "本書は文書を検索用の断片に分ける方法を説明する。",
            "段落の終わりで切ることが大切だ。",
        ],
        ["第2章　設定", "・文字数の上限", "・重なりの長さ（トークン）"],
    ]
    data = _pdf(pages, title="分割の手引き", font=JA_FONT)
    doc = load_pdf(data, "手引き.pdf")
    expected = ["\n".join(lines) for lines in pages]
    if doc.text != "\n\n".join(expected) + "\n":  # pragma: no cover - depends on the pypdf version
        pytest.skip(f"this pypdf does not extract reportlab CID text exactly: {doc.text!r}")
    assert [doc.text[r.start : r.end] for r in doc.regions] == expected
    assert [r.metadata["page"] for r in doc.regions] == [1, 2]
    assert doc.title == "分割の手引き"
    assert doc.metadata["pages"] == 2


def test_blank_pages_count_but_get_no_region() -> None:
    data = _pdf([["First."], [], ["Third."]])
    doc = load_pdf(data, "gap.pdf")
    assert doc.text == "First.\n\nThird.\n"
    assert [dict(r.metadata) for r in doc.regions] == [{"page": 1}, {"page": 3}]
    assert doc.metadata["pages"] == 3


def test_no_text_at_all_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    data = _pdf([[], []])
    with caplog.at_level(logging.WARNING):
        doc = load_pdf(data, "scan.pdf")
    assert doc.text == ""
    assert doc.regions == ()
    assert doc.metadata["pages"] == 2
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert messages == ["scan.pdf: no extractable text (scanned?)"]


def test_truncated_pdf_is_a_one_line_load_error(caplog: pytest.LogCaptureFixture) -> None:
    # pypdf 7 cannot recover a file cut in half (no xref, no trailer): it raises, and so do we.
    data = _pdf(EN_PAGES)
    with caplog.at_level(logging.WARNING), pytest.raises(LoadError) as info:
        load_pdf(data[: len(data) // 2], "cut.pdf")
    assert info.value.path == "cut.pdf"
    assert info.value.reason.startswith("not a readable PDF (")
    assert "\n" not in str(info.value)
    assert not [r for r in caplog.records if r.name.startswith("pypdf")]  # pypdf's chatter is silenced


@pytest.mark.parametrize("data", [b"this is not a pdf at all\n" * 20, b"", b"%PDF-1.4\n%garbage"])
def test_garbage_is_a_one_line_load_error(data: bytes) -> None:
    pytest.importorskip("pypdf")
    with pytest.raises(LoadError) as info:
        load_pdf(data, "junk.pdf")
    assert info.value.reason.startswith("not a readable PDF (")
    assert "\n" not in str(info.value)


def test_encrypted_with_empty_password_is_read_and_with_a_password_refused() -> None:
    pypdf = pytest.importorskip("pypdf")

    def encrypt(user_password: str) -> bytes:
        reader = pypdf.PdfReader(io.BytesIO(_pdf([["Secret page."]])))
        writer = pypdf.PdfWriter(clone_from=reader)
        writer.encrypt(user_password, "owner", algorithm="RC4-128")
        out = io.BytesIO()
        writer.write(out)
        return out.getvalue()

    assert load_pdf(encrypt(""), "open.pdf").text == "Secret page.\n"
    with pytest.raises(LoadError, match="encrypted PDF"):
        load_pdf(encrypt("pw"), "locked.pdf")


def test_a_failing_page_is_skipped_with_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    pypdf = pytest.importorskip("pypdf")

    original = pypdf.PageObject.extract_text

    def flaky(self: pypdf.PageObject, *args: object, **kwargs: object) -> str:
        text = original(self, *args, **kwargs)
        if text.startswith("Second"):
            raise KeyError("/Contents")
        return text

    monkeypatch.setattr(pypdf.PageObject, "extract_text", flaky)
    with caplog.at_level(logging.WARNING):
        doc = load_pdf(_pdf(EN_PAGES), "flaky.pdf")
    assert [r.metadata["page"] for r in doc.regions] == [1, 3]
    assert "Second" not in doc.text
    # kireme's own records: another library's background thread may log meanwhile
    warnings = [
        r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("kireme")
    ]
    assert len(warnings) == 1
    assert "flaky.pdf" in warnings[0]
    assert "page 2" in warnings[0]


def test_every_page_failing_is_a_load_error(monkeypatch: pytest.MonkeyPatch) -> None:
    pypdf = pytest.importorskip("pypdf")

    def broken(self: pypdf.PageObject, *args: object, **kwargs: object) -> str:
        raise ValueError("bad stream")

    monkeypatch.setattr(pypdf.PageObject, "extract_text", broken)
    with pytest.raises(LoadError, match=r"not a readable PDF \(ValueError: bad stream\)"):
        load_pdf(_pdf(EN_PAGES), "broken.pdf")


def test_missing_pypdf_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pypdf", None)  # makes `import pypdf` raise ImportError
    with pytest.raises(LoadError) as info:
        load_pdf(b"%PDF-1.4", "x.pdf")
    assert info.value.reason == "reading PDF needs pypdf: pip install 'kireme[pdf]'"


# Hard-wrapped Japanese as a PDF extracts it: lines of about 30 characters, paragraphs end on a short line.
WRAPPED = (
    "文書を検索用に分割するときは、段落の途中で切らないことが大切である。途中\n"  # 0
    "で切ると、前後の文脈が失われて検索の精度が下がるからだ。そのため、行末\n"
    "の改行だけで段落を判断してはいけない。\n"  # a short line that ends with 。
    "PDFから取り出した文字列では、見た目の行ごとに改行が入っている。これは\n"  # new paragraph
    "段落の終わりを意味しない。短い行が句点で終わるときだけ、段落の終わりと\n"
    "みなすのがよい（例外もある）。\n"  # short, ends with ）after 。
    "・箇条書きの行\n"  # list marker
    "・次の項目\n"
    "\n"
    "第3条　見出しの行は新しい段落として扱い、その後に続く本文も同じ規則で\n"
    "判断する。\n"
)


def _line_start(text: str, line: str) -> int:
    index = text.index(line)
    assert index == 0 or text[index - 1] == "\n"
    return index


def test_paragraph_starts_in_hard_wrapped_japanese() -> None:
    starts = pdf_paragraph_starts(WRAPPED)
    assert starts == [
        _line_start(WRAPPED, "PDFから"),
        _line_start(WRAPPED, "・箇条書き"),
        _line_start(WRAPPED, "・次の項目"),
        _line_start(WRAPPED, "第3条"),
    ]


def test_a_full_line_ending_in_a_period_is_not_a_paragraph_end() -> None:
    text = (
        "これは長い一行で、たまたま行末が句点になっている文章の例です。\n"
        "続きの行もほぼ同じ長さで、ここで段落が切れるわけではありません。\n"
        "最後の行は短く終わる。\n"
        "次の段落はここから始まり、その長さも普通の行と同じくらいになる。\n"
    )
    assert pdf_paragraph_starts(text) == [_line_start(text, "次の段落")]


def test_paragraph_starts_in_english_and_edge_cases() -> None:
    text = (
        "Chunkers should not split a paragraph just because a PDF\n"
        "line ends; the visual line break carries no meaning at all\n"
        "for the reader.\n"
        "A new paragraph begins on this line and wraps around again\n"
        "1. First item\n"
        "- second item\n"
    )
    assert pdf_paragraph_starts(text) == [
        _line_start(text, "A new"),
        _line_start(text, "1. First"),
        _line_start(text, "- second"),
    ]
    assert pdf_paragraph_starts("") == []
    assert pdf_paragraph_starts("・one\n・two\n") == [5]  # never 0, even for a marker on the first line
    assert pdf_paragraph_starts("\n\n・only\n") == [2]
    assert pdf_paragraph_starts("end.\n\n") == []  # never len(text)


# ------------------------------------------------------------------------ running heads and feet

RULES = [  # a short rule book over four pages; the second article runs on to page 2
    ["Article 1 (Purpose)", "These rules set the travel expenses of staff."],
    ["Article 2 (Approval)", "A trip needs the written approval of the", "department head before it starts."],
    ["Article 3 (Daily allowance)", "The daily allowance is 3,000 yen."],
    ["Article 4 (Hotels)", "Hotels are paid at cost, up to 12,000 yen a night."],
]


def _with_running_lines(pages: list[list[str]]) -> list[list[str]]:
    """The pages of a rule book as printed: its name at the top, ``- n -`` at the bottom of each page."""
    return [["Sample Corp. Travel Rules", "", *body, "", f"- {n} -"] for n, body in enumerate(pages, 1)]


def test_running_heads_and_page_numbers_are_left_out() -> None:
    # Two pages joined: body, a blank line, the next page. Before, "- 1 -" and the company line stood
    # between "written approval of the" and "department head", and started the next articles' chunks.
    pages = [RULES[0] + RULES[1][:2], RULES[1][2:] + RULES[2], RULES[3]]
    doc = load_pdf(_pdf(_with_running_lines(pages)), "rules.pdf")
    assert doc.text == (
        "Sample Corp. Travel Rules\n"  # kept once, where it stands first: the document says its name
        "Article 1 (Purpose)\nThese rules set the travel expenses of staff.\n"
        "Article 2 (Approval)\nA trip needs the written approval of the\n"
        "department head before it starts.\n"  # one line break: the sentence runs on
        "Article 3 (Daily allowance)\nThe daily allowance is 3,000 yen.\n\n"
        "Article 4 (Hotels)\nHotels are paid at cost, up to 12,000 yen a night.\n"
    )
    assert doc.metadata["running_lines"] == ["- 1 -", "Sample Corp. Travel Rules"]
    assert [r.metadata["page"] for r in doc.regions] == [1, 2, 3]
    assert doc.text[doc.regions[2].start : doc.regions[2].end] == "\n".join(RULES[3])
    texts = [c.text for c in chunk(doc, max_size=120)]
    assert not any("- 1 -" in t or "- 2 -" in t for t in texts)
    assert any("written approval of the\ndepartment head before it starts." in t for t in texts)


def test_a_page_number_under_a_running_head_is_left_out_on_the_first_page_too() -> None:
    """A rule book printing its name and then ``- n -`` at the top of each page: the name is kept where it
    stands first, and the scan stopped there, so page 1's number stayed in the text (and made the first
    chunk of ``markdown`` the name and ``- 1 -`` alone)."""
    pages = [RULES[0] + RULES[1][:2], RULES[1][2:] + RULES[2], RULES[3]]
    printed = [["Sample Corp. Travel Rules", f"- {n} -", "", *body] for n, body in enumerate(pages, 1)]
    doc = load_pdf(_pdf(printed), "rules.pdf")
    assert doc.text.startswith("Sample Corp. Travel Rules\nArticle 1 (Purpose)\n")
    assert not any(f"- {n} -" in doc.text for n in (1, 2, 3))
    assert doc.text.count("Sample Corp. Travel Rules") == 1


def test_japanese_running_head_is_left_out() -> None:
    _register_japanese_font()
    bodies = [
        [
            "第1条（目的）",
            "この規程は、出張の旅費について定める。",
            "第2条（承認）",
            "出張する社員は、事前に所属長の",
        ],
        ["承認を得なければならない。", "第3条（日当）", "日当は、一日につき3,000円とする。"],
        ["第4条（宿泊料）", "宿泊料は、一泊12,000円を上限とする。"],
    ]
    pages = [["株式会社サンプル　出張旅費規程", *body, f"－{n}－"] for n, body in enumerate(bodies, 1)]
    doc = load_pdf(_pdf(pages, font=JA_FONT), "規程.pdf")
    if "第4条" not in doc.text:  # pragma: no cover - depends on the pypdf version
        pytest.skip(f"this pypdf does not extract reportlab CID text: {doc.text!r}")
    assert doc.text.count("株式会社サンプル") == 1
    assert "－" not in doc.text
    assert "所属長の\n承認を得なければならない。" in doc.text
    pieces = chunk(doc, max_size=40)
    assert [c.text for c in pieces if c.text.startswith("第4条")] == [
        "第4条（宿泊料）\n宿泊料は、一泊12,000円を上限とする。"
    ]
    assert [c.metadata["page"] for c in pieces if c.text.startswith("第4条")] == [3]


@pytest.mark.parametrize(
    "line",
    ["7", "- 7 -", "－７－", "7 / 40", "Page 7 of 40", "p. 7", "7ページ", "(7)", "— 7 —", "[7]", "第7頁"],
)
def test_page_number_lines(line: str) -> None:
    assert is_page_number(line)


@pytest.mark.parametrize(
    "line", ["第7条", "7.5%", "2025年4月1日", "Section 7", "7 items", "Chapter 7: Budgets", "", "- -"]
)
def test_not_page_number_lines(line: str) -> None:
    assert not is_page_number(line)


def test_running_lines_rules() -> None:
    def pages(*bodies: str) -> list[str]:
        return list(bodies)

    # alternating heads (odd pages the book, even pages the chapter): each on half the pages, each kept
    # where it stands first
    words = ["Taxis", "Trains", "Hotels", "Meals", "Gifts", "Phones"]
    alternating = [
        f"{'Travel Rules' if n % 2 else 'Chapter 2'}\n{w} are paid.\n" for n, w in enumerate(words)
    ]
    assert running_lines(alternating) == [(0, 0), (0, 0), (1, 0), (1, 0), (1, 0), (1, 0)]
    # fewer than three pages with text: a repeated line is no evidence
    assert running_lines(pages("Head\nOne.\n1", "Head\nTwo.\n2", "")) == [(0, 0), (0, 0), (0, 0)]
    # on 2 of 6 pages only (under 40%): body text that happens to repeat
    six = [
        f"{w} are paid.\nNote: see the appendix." if n < 2 else f"{w} are paid." for n, w in enumerate(words)
    ]
    assert running_lines(six) == [(0, 0)] * 6
    # lines that differ in a number that is no page number are body text: one question a page
    questions = [f"Q{q}.\n{w} are paid." for q, w in zip((1, 5, 6, 9), words, strict=False)]
    assert running_lines(questions) == [(0, 0)] * 4
    # a line over 80 characters is body text, however often it repeats
    long = "x" * 81
    assert running_lines([f"{long}\n{w} are paid." for w in words]) == [(0, 0)] * 6
    # a page number goes on every page; a body line between two running lines stops the cut there
    numbered = ["Head\nTaxis.\n3", "Head\nTrains.\nFootnote.\n4", "Head\nHotels.\n5", "Head\nMeals.\n6"]
    assert running_lines(numbered) == [(0, 1), (1, 1), (1, 1), (1, 1)]
    # a head with the page number in it: "Rules 3/12" on page 3
    with_number = [f"Travel Rules {n + 3}/12\n{w} are paid." for n, w in enumerate(words)]
    assert running_lines(with_number) == [(1, 0)] * 6
    # a book: a cover, then pages numbered from 1; a chapter's first page shows its number alone, the
    # next ones a head that changes with the chapter; "1 Introduction" under "1" is a heading, kept
    book = [
        "Travel Guide\nFor staff.",
        "1\n1 Introduction\nTrips need approval.",
        "Chapter 1: Introduction 2\nApproval comes first.",
        "3\n2 Costs\nTaxis are paid.",
        "Chapter 2: Costs 4\nHotels are paid.",
        "Chapter 2: Costs 5\nMeals are paid up to 2",
    ]
    assert running_lines(book) == [(0, 0), (1, 0), (1, 0), (1, 0), (1, 0), (1, 0)]
    # numbers that do not go up with the pages: nothing is left out
    unnumbered = [
        book[0],
        "12\n1 Introduction\nTrips need approval.",
        "Chapter 1: Introduction 30\nApproval comes first.",
        "5\n2 Costs\nTaxis are paid.",
        "Chapter 2: Costs 9\nHotels are paid.",
        "Chapter 2: Costs 40\nMeals are paid up to 2",
    ]
    assert running_lines(unnumbered) == [(0, 0)] * 6
    # a table header a long table repeats at the top of each page is kept once, where the table starts
    table = ["Intro.\nItem Amount Note", *(f"Item Amount Note\n{w} 500 yen" for w in words[:4])]
    assert running_lines(table) == [(0, 0), (1, 0), (1, 0), (1, 0), (1, 0)]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(
            st.sampled_from(
                ["", " ", "Head", "- 3 -", "7", "本文です。", "1" * 5000, "Ch 2 9", "社外秘", "x\u3000y"]
            ),
            max_size=7,
        ).map("\n".join),
        max_size=8,
    )
)
def test_running_lines_never_fail_and_stay_at_the_edges(pages: list[str]) -> None:
    cuts = running_lines(pages)
    assert len(cuts) == len(pages)
    for page, (head, foot) in zip(pages, cuts, strict=True):
        lines = page.split("\n") if page else []
        assert 0 <= head <= 3 and 0 <= foot <= 3 and head + foot <= len(lines)
