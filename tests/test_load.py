"""Decoding files: every Japanese encoding we meet, exact line endings, clear refusals."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from kireme import LoadError, chunk, load
from kireme.load import load_bytes

TEXT = "経費精算の締め切りは毎月２５日です。\r\n遅れた場合は翌月に回ります。\r\n"


@pytest.mark.parametrize(
    "encoding, expected",
    [
        ("utf-8", "utf-8"),
        ("cp932", "cp932"),
        ("euc_jp", "euc_jp"),
        ("iso2022_jp", "iso2022_jp"),
        ("utf-16-le", "utf-16-le"),
        ("utf-16-be", "utf-16-be"),
    ],
)
def test_detects_japanese_encodings(tmp_path: Path, encoding: str, expected: str) -> None:
    path = tmp_path / f"{encoding}.txt"
    path.write_bytes(TEXT.encode(encoding))
    doc = load(path)
    assert doc.text == TEXT  # CRLF kept: offsets match the file's text
    assert doc.metadata["encoding"] == expected
    assert doc.id == path.as_posix()


@pytest.mark.parametrize("bom, encoding", [(codecs.BOM_UTF8, "utf-8"), (b"", "utf-16")])
def test_byte_order_marks(tmp_path: Path, bom: bytes, encoding: str) -> None:
    path = tmp_path / "bom.txt"
    path.write_bytes(bom + TEXT.encode(encoding))
    doc = load(path)
    assert doc.text == TEXT and doc.metadata["bom"] is True


def test_a_close_guess_between_western_code_pages_is_said(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A French memo in cp1252 was read as cp1257 (``trčs`` for ``très``) without a word: when another
    code page the detector rates nearly as well reads the bytes differently, the loader says so."""
    import logging

    memo = tmp_path / "memo.txt"
    memo.write_bytes(
        "Le café est très bon. Il faut déjà réserver à l'avance. Ça coûte cher. Où est la clé ?\n".encode(
            "cp1252"
        )
    )
    with caplog.at_level(logging.WARNING):
        doc = load(memo)
    if doc.metadata["encoding"] != "cp1252":
        assert (
            "memo.txt: decoded as" in caplog.text and "cp1252" in caplog.text and "--encoding" in caplog.text
        )
    assert load(memo, encoding="cp1252").text.startswith("Le café est très bon.")
    caplog.clear()
    plain = tmp_path / "plain.txt"
    plain.write_bytes("出張の旅費は月末に精算する。\n".encode("cp932"))
    with caplog.at_level(logging.WARNING):
        assert load(plain).text == "出張の旅費は月末に精算する。\n"
    assert "a guess" not in caplog.text


def test_short_euc_jp_is_read_as_euc_jp_when_it_can_be_told_and_warned_about_when_not(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Short EUC-JP files were read as CP932 mojibake without a word (both decode them; ties went to CP932).
    Prose has hiragana, which EUC-JP read as CP932 never has: that tells them apart. Where nothing does
    (a name, half-width katakana alone), the guess is said with what the other encoding reads."""
    import logging

    prose = tmp_path / "prose.txt"
    prose.write_bytes("ｶﾀｶﾅ表記のｼｽﾃﾑ名。\n".encode("euc_jp"))
    assert load(prose).text == "ｶﾀｶﾅ表記のｼｽﾃﾑ名。\n"
    name = tmp_path / "name.txt"
    name.write_bytes("山田太郎\n".encode("euc_jp"))
    with caplog.at_level(logging.WARNING):
        doc = load(name)
    assert doc.metadata["encoding"] == "cp932"  # CP932 is the commoner: kept on a tie
    assert "name.txt: decoded as cp932" in caplog.text and "as euc_jp it reads '山田太郎'" in caplog.text
    assert "--encoding euc_jp" in caplog.text
    assert load(name, encoding="euc_jp").text == "山田太郎\n"
    caplog.clear()
    kana = tmp_path / "kana.txt"
    kana.write_bytes("ﾃｽﾄﾃﾞｰﾀ\n".encode("cp932"))  # not valid EUC-JP: no guess to warn about
    with caplog.at_level(logging.WARNING):
        assert load(kana).text == "ﾃｽﾄﾃﾞｰﾀ\n"
    assert "a guess" not in caplog.text


def test_explicit_encoding_overrides_and_fails_clearly(tmp_path: Path) -> None:
    path = tmp_path / "sjis.txt"
    path.write_bytes(TEXT.encode("cp932"))
    assert load(path, encoding="cp932").text == TEXT
    with pytest.raises(LoadError, match=r"sjis.txt: not valid utf-8 at byte 0"):
        load(path, encoding="utf-8")
    with pytest.raises(LoadError, match="unknown encoding 'klingon'"):
        load(path, encoding="klingon")


def test_a_codec_that_is_no_text_encoding_is_a_load_error(tmp_path: Path) -> None:
    """``encoding="rot13"`` raised a bare LookupError (a traceback from the command line)."""
    path = tmp_path / "rules.txt"
    path.write_bytes(TEXT.encode("utf-8"))
    for codec in ("rot13", "base64", "hex"):
        with pytest.raises(LoadError, match=rf"rules.txt: '{codec}' is not a text encoding"):
            load(path, encoding=codec)


@pytest.mark.parametrize(
    ("bom", "encoding", "given"),
    [
        (codecs.BOM_UTF8, "utf-8", "utf-8"),
        (codecs.BOM_UTF8, "utf-8", "UTF8"),
        (codecs.BOM_UTF16_LE, "utf-16-le", "utf-16le"),
        (codecs.BOM_UTF16_BE, "utf-16-be", "utf_16_be"),
    ],
)
def test_a_byte_order_mark_is_no_text_under_the_encoding_given(
    tmp_path: Path, bom: bytes, encoding: str, given: str
) -> None:
    """``--encoding utf-8`` on a file Notepad saved with a BOM kept U+FEFF in front of ``# 経費精算``: the
    heading was no heading, the title the file name."""
    path = tmp_path / "manual.md"
    path.write_bytes(bom + "# 経費精算マニュアル\n\n本文です。\n".encode(encoding))
    doc = load(path, encoding=given)
    assert doc.text == "# 経費精算マニュアル\n\n本文です。\n"
    assert doc.title == "経費精算マニュアル"
    # without a BOM nothing is taken away; a BOM of another encoding is not this one's to drop
    path.write_bytes("本文です。\n".encode())
    assert load(path, encoding="utf-8").text == "本文です。\n"
    path.write_bytes(codecs.BOM_UTF8 + b"x\n")
    assert load(path, encoding="latin-1").text == "\u00ef\u00bb\u00bfx\n"


def test_a_dos_end_of_file_mark_is_no_text(tmp_path: Path) -> None:
    """A trailing Ctrl-Z (``\\x1a``, written by DOS-era editors and old Excel) stayed in the last chunk and
    made a CSV record of its own."""
    rules = tmp_path / "rules.txt"
    rules.write_bytes(TEXT.encode("cp932") + b"\x1a")
    assert load(rules).text == TEXT
    prices = tmp_path / "prices.csv"
    prices.write_bytes("商品コード,単価\r\nA-001,1200\r\n".encode("cp932") + b"\x1a\x1a")
    doc = load(prices)
    assert doc.text == "商品コード,単価\r\nA-001,1200\r\n"
    assert [c.text for c in chunk(doc, strategy="markdown", max_size=200) if "\x1a" in c.text] == []
    inside = tmp_path / "inside.txt"  # only at the end: one inside the text is the text's own
    inside.write_bytes(b"a\x1ab\n")
    assert load(inside).text == "a\x1ab\n"


def test_an_empty_file_is_said(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with caplog.at_level("WARNING"):
        assert load(empty).text == ""
    assert "empty.txt: empty file (0 bytes): nothing to chunk" in caplog.text


def test_binary_and_missing_files_are_refused_with_the_path(tmp_path: Path) -> None:
    png = tmp_path / "image.md"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10" + bytes(range(256)))
    with pytest.raises(LoadError, match=r"image.md: binary file"):
        load(png)
    with pytest.raises(LoadError, match=r"nothing.txt: no such file"):
        load(tmp_path / "nothing.txt")
    with pytest.raises(LoadError, match="is a directory"):
        load(tmp_path)


# ------------------------------------------------------------------------------------------- titles


def test_a_plain_text_file_is_titled_by_its_name(tmp_path: Path) -> None:
    folder = tmp_path / "総務"
    folder.mkdir()
    rules = folder / "出張旅費規程.txt"
    rules.write_bytes(TEXT.encode("cp932"))
    doc = load(rules)
    assert doc.title == "出張旅費規程" and doc.metadata["title"] == "出張旅費規程"
    assert doc.text == TEXT  # the title is metadata only
    notes = tmp_path / "meeting notes 2025-04.txt"
    notes.write_text("The budget review moved to Friday.\n", encoding="utf-8")
    assert load(notes).title == "meeting notes 2025-04"
    # standard input has no name: a text gets no title, Markdown still its own
    assert load_bytes(TEXT.encode("utf-8"), "<stdin>").title == ""
    assert (
        load_bytes("# 在宅勤務規程\n\n本文。\n".encode(), "<stdin>", format="markdown").title
        == "在宅勤務規程"
    )
    # bytes given without a name (an upload, a framework's byte stream): no title, not their content hash,
    # which was put in front of every chunk's embed_text as if it named the document
    for fmt in ("text", "markdown"):
        nameless = load_bytes("## 第1章\n\n本文です。\n".encode(), "", format=fmt)
        assert nameless.title == "" and nameless.id.startswith("sha256:")


REMOTE_WORK = """\
```sh
# 設定を確認する（コードの中のコメントは見出しではない）
kireme --version
```

## 改定履歴

2025年4月改定。

# 在宅勤務規程

## 第1条 目的

在宅勤務の手続きを定める。
"""


def test_markdown_title_is_front_matter_then_first_h1_then_file_name(tmp_path: Path) -> None:
    front = tmp_path / "remote.md"
    front.write_text(
        '---\ntitle: "Remote Work Policy"\nauthor: 総務部\n---\n\n# 在宅勤務規程\n', encoding="utf-8"
    )
    assert load(front).title == "Remote Work Policy"
    h1 = tmp_path / "rules.md"
    h1.write_text(REMOTE_WORK, encoding="utf-8")
    doc = load(h1)
    assert doc.title == "在宅勤務規程"  # the first level-1 heading, not the "#" line in the code block
    assert doc.text == REMOTE_WORK
    no_h1 = tmp_path / "連絡事項.md"
    no_h1.write_text("## 今週の連絡\n\n金曜日の定例会議は中止です。\n", encoding="utf-8")
    assert load(no_h1).title == "連絡事項"


def test_html_without_a_title_falls_back_to_the_file_name(tmp_path: Path) -> None:
    page = tmp_path / "expense-faq.html"
    page.write_text(
        "<html><body><p>Receipts are required above 3,000 yen.</p></body></html>", encoding="utf-8"
    )
    assert load(page).title == "expense-faq"
    named = tmp_path / "named.html"
    named.write_text("<title>経費精算 FAQ</title><p>領収書は必須です。</p>", encoding="utf-8")
    assert load(named).title == "経費精算 FAQ"


def test_a_given_title_replaces_the_found_one(tmp_path: Path) -> None:
    rules = tmp_path / "rules.md"
    rules.write_text(REMOTE_WORK, encoding="utf-8")
    doc = load(rules, title="  Remote   work\tpolicy ")
    assert doc.title == "Remote work policy"  # whitespace runs become one space
    assert doc.text == REMOTE_WORK and doc.id == rules.as_posix()
    assert load_bytes(TEXT.encode("utf-8"), "<stdin>", title="経費精算").title == "経費精算"


def test_a_folder_that_cannot_be_listed_is_said_not_skipped_silently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import os

    from kireme.load.registry import iter_paths

    (tmp_path / "open").mkdir()
    (tmp_path / "open" / "a.txt").write_text("本文です。", encoding="utf-8")
    closed = tmp_path / "closed"
    closed.mkdir()
    (closed / "b.txt").write_text("見えない本文です。", encoding="utf-8")
    real_scandir = os.scandir

    def scandir(path: object = ".") -> object:
        if os.fspath(path) == str(closed):  # type: ignore[arg-type]
            raise PermissionError(13, "Permission denied", str(closed))
        return real_scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    with caplog.at_level("WARNING"):
        found = list(iter_paths(tmp_path))
    assert [p.name for p in found] == ["a.txt"]
    assert any("closed: cannot be read (Permission denied)" in r.getMessage() for r in caplog.records)


def test_classic_mac_line_ends_are_read_as_line_ends(tmp_path: Path) -> None:
    """A file with lone ``\\r`` line ends (classic Mac OS) had no line, paragraph or heading kireme could
    see: 第2条 was cut mid-article and its title parted from its body. A lone ``\\r`` reads as ``\\n`` (one
    character for one: offsets stay), ``\\r\\n`` as it is."""
    rules = "第1条（目的）\r　この規則は、就業に関する事項を定める。\r\r第2条（適用範囲）\r　この規則は、正社員に適用する。\r"
    path = tmp_path / "rules.txt"
    path.write_bytes(rules.encode("cp932"))
    doc = load(path)
    assert doc.text == rules.replace("\r", "\n") and len(doc.text) == len(rules)
    pieces = [c.text for c in chunk(doc, max_size=40)]
    assert pieces == [
        "第1条（目的）\n　この規則は、就業に関する事項を定める。",
        "第2条（適用範囲）\n　この規則は、正社員に適用する。",
    ]
    mixed = tmp_path / "mixed.txt"
    mixed.write_bytes(b"a\r\nb\rc\n")
    assert load(mixed).text == "a\r\nb\nc\n"


def test_korean_and_chinese_bytes_are_not_read_as_japanese_without_a_word(caplog) -> None:
    """EUC-KR, GBK and Big5 bytes are valid CP932 or EUC-JP too: a Korean file was loaded as strings of
    kanji (``神潅精 劾松亜…``) without a warning. Korean is now read as Korean when the bytes say so
    plainly; a short or Chinese text keeps the Japanese reading with a warning that shows the others."""
    korean = "오늘은 날씨가 좋습니다. 우리는 공원에 갔습니다! 가격은 12,500원입니다.\n"
    doc = load_bytes(korean.encode("euc-kr"), "ko.txt")
    assert doc.text == korean and doc.metadata["encoding"] == "euc_kr"
    for text, codec, reading in (
        ("今天天气很好。", "gbk", "as gb18030 it reads '今天天气很好。'"),
        ("今天天氣很好。", "big5", "as big5 it reads '今天天氣很好。'"),
    ):
        caplog.clear()
        with caplog.at_level("WARNING"):
            load_bytes(text.encode(codec), f"{codec}.txt")
        assert any(reading in r.getMessage() for r in caplog.records), caplog.text
    caplog.clear()
    with caplog.at_level("WARNING"):
        assert load_bytes("今日は晴れです。".encode("euc_jp"), "ja.txt").text == "今日は晴れです。"
    assert not caplog.records  # Japanese with kana: no doubt
