"""Decoding files: every Japanese encoding we meet, exact line endings, clear refusals."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from kireme import LoadError, load

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


def test_explicit_encoding_overrides_and_fails_clearly(tmp_path: Path) -> None:
    path = tmp_path / "sjis.txt"
    path.write_bytes(TEXT.encode("cp932"))
    assert load(path, encoding="cp932").text == TEXT
    with pytest.raises(LoadError, match=r"sjis.txt: not valid utf-8 at byte 0"):
        load(path, encoding="utf-8")
    with pytest.raises(LoadError, match="unknown encoding 'klingon'"):
        load(path, encoding="klingon")


def test_binary_and_missing_files_are_refused_with_the_path(tmp_path: Path) -> None:
    png = tmp_path / "image.md"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10" + bytes(range(256)))
    with pytest.raises(LoadError, match=r"image.md: binary file"):
        load(png)
    with pytest.raises(LoadError, match=r"nothing.txt: no such file"):
        load(tmp_path / "nothing.txt")
    with pytest.raises(LoadError, match="is a directory"):
        load(tmp_path)
