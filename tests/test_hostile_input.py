"""Hostile input: every file gives exact offsets or one line naming what is wrong; nothing hangs or
vanishes silently. Each fixture is generated here, small enough for CI, with the expectation beside it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.invariants import check_invariants

from kireme import chunk, load
from kireme.errors import PatternTimeoutError
from kireme.load.html import load_html


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kireme.cli", *args], capture_output=True, text=True, timeout=timeout
    )


def deep_html(levels: int, tag: str = "div") -> str:
    return (
        "<html><head><title>入れ子の試験</title></head><body>"
        + f"<{tag}>" * levels
        + "<h2>宿泊費</h2><p>宿泊費の上限は一泊一万二千円とする。</p>"
        + f"</{tag}>" * levels
        + "<p>以上。</p></body></html>"
    )


# ------------------------------------------------------------------------------------------ deep HTML


@pytest.mark.parametrize("levels", [10, 300, 3_000, 20_000])
def test_deeply_nested_html_keeps_its_text_and_structure(levels: int) -> None:
    """Expectation: the text inside 20,000 nested <div>s is there, heading and paragraph included
    (the parser's depth limit used to drop it: an empty document with exit 0)."""
    doc = load_html(deep_html(levels).encode("utf-8"), f"deep-{levels}.html")
    assert doc.text == "## 宿泊費\n\n宿泊費の上限は一泊一万二千円とする。\n\n以上。\n"
    chunks = chunk(doc, "markdown", max_size=40)
    check_invariants(doc, chunks, max_size=40, unit="chars")
    assert chunks[0].headings == ("宿泊費",)


def test_deeply_nested_lists_keep_every_item() -> None:
    """Expectation: 2,000 nested list items (not generic wrappers) all keep their text."""
    html = "<html><body>" + "<ul><li>項目" * 2_000 + "</li></ul>" * 2_000 + "</body></html>"
    doc = load_html(html.encode("utf-8"), "lists.html")
    assert doc.text.count("項目") == 2_000


def test_cli_reads_a_deep_page_and_says_it_was_flattened(tmp_path: Path) -> None:
    page = tmp_path / "deep.html"
    page.write_text(deep_html(20_000), encoding="utf-8")
    done = run("chunk", str(page), "--format", "jsonl", "--max-size", "200")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert "宿泊費の上限は一泊一万二千円とする。" in "".join(r["text"] for r in rows)
    assert "deep.html" in done.stderr and "flattened" in done.stderr


def test_a_page_whose_text_is_all_dropped_is_not_silent(tmp_path: Path) -> None:
    """Expectation: non-empty input that yields (almost) no text warns, naming the file."""
    page = tmp_path / "menu.html"
    page.write_text("<html><body><nav>" + "<a href='#'>メニュー項目</a>" * 50 + "</nav></body></html>")
    done = run("load", str(page))
    assert done.returncode == 0
    assert "menu.html" in done.stderr and "gave no text" in done.stderr


def test_a_page_that_keeps_a_tiny_share_of_its_text_warns(caplog: pytest.LogCaptureFixture) -> None:
    html = "<html><body><aside>" + "関連記事の一覧。" * 100 + "</aside><p>本文。</p></body></html>"
    load_html(html.encode("utf-8"), "aside.html")
    assert any(
        "aside.html" in r.getMessage() and "visible characters" in r.getMessage() for r in caplog.records
    )


# ------------------------------------------------------------------------------- separator patterns


def test_a_backtracking_separator_is_refused_with_exit_2(tmp_path: Path) -> None:
    """Expectation: `(a|aa)+$` on "a"*40 + "b" (catastrophic backtracking) stops within seconds,
    exit 2, one line naming the pattern, nothing on stdout. It used to run until killed."""
    f = tmp_path / "a.txt"
    f.write_text("a" * 40 + "b")
    done = run(
        "chunk", str(f), "--separators", "(a|aa)+$", "--max-size", "10", "--format", "jsonl", timeout=60
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "(a|aa)+$" in done.stderr and "backtracking" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_library_raises_a_config_error_for_a_backtracking_separator() -> None:
    with pytest.raises(PatternTimeoutError) as err:
        chunk("a" * 40 + "b", "recursive", separators=["(a|aa)+$"], max_size=10)
    assert isinstance(err.value, ValueError)  # a ConfigError: also a ValueError
    assert err.value.pattern == "(a|aa)+$"


def test_ordinary_separators_on_a_long_text_stay_within_their_limit() -> None:
    text = ("第1条 旅費は実費とする。\n" * 40_000).strip()
    chunks = chunk(text, "recursive", separators=[r"\n(?=第)", "。"], max_size=300)
    check_invariants(text, chunks, max_size=300, unit="chars")


# ---------------------------------------------------------------------------- other hostile files


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_invalid_utf8_is_one_line_or_a_legacy_decode(tmp_path: Path) -> None:
    """Expectation: bytes valid in no candidate encoding fail that file with one line (exit 1)."""
    bad = _write(tmp_path / "bad.txt", b"\xff\xfe\xfa\x80\x81" * 50 + b"\x00\x9f" * 50)
    done = run("chunk", str(bad), "--format", "jsonl")
    assert done.returncode in (0, 1)
    assert "Traceback" not in done.stderr
    if done.returncode == 1:
        assert "bad.txt" in done.stderr and len(done.stderr.strip().splitlines()) <= 2


def test_nul_bytes_and_lone_surrogates(tmp_path: Path) -> None:
    """Expectation: a file with NUL bytes is refused as binary with one line (exit 1); text with NULs
    or a lone surrogate passed from Python chunks with exact offsets."""
    f = _write(tmp_path / "nul.txt", "旅費\x00規程。宿泊費は実費。\x00\n".encode() * 30)
    done = run("chunk", str(f), "--format", "jsonl")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[0].endswith("nul.txt: binary file (contains NUL bytes)")
    for text in ("旅費\x00規程。宿泊費は実費。\x00\n" * 30, "前\ud800後。" * 30):
        chunks = chunk(text, "sentence", max_size=20)
        check_invariants(text, chunks, max_size=20, unit="chars")


@pytest.mark.parametrize(
    "data",
    [b"%PDF-1.7\n" + b"\x00garbage" * 100, b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog", b"%PDF"],
    ids=["garbage", "truncated", "header-only"],
)
def test_broken_pdfs_fail_with_one_line(tmp_path: Path, data: bytes) -> None:
    pytest.importorskip("pypdf")
    f = _write(tmp_path / "broken.pdf", data)
    done = run("chunk", str(f), "--format", "jsonl")
    assert done.returncode == 1
    assert "broken.pdf" in done.stderr and "Traceback" not in done.stderr


def test_markdown_nested_5000_levels(tmp_path: Path) -> None:
    """Expectation: block quotes 5,000 deep and lists 2,000 deep chunk with exact offsets."""
    quotes = "".join("> " * i + f"引用{i}。\n" for i in range(1, 5_001, 250)) + "> " * 5_000 + "最深部。\n"
    items = "".join("  " * i + f"- 項目{i}\n" for i in range(2_000))
    f = tmp_path / "deep.md"
    f.write_text(quotes + "\n" + items, encoding="utf-8")
    doc = load(f)
    for strategy in ("markdown", "recursive"):
        chunks = chunk(doc, strategy, max_size=400)
        check_invariants(doc, chunks, max_size=400, unit="chars")


def test_a_file_of_200000_lines(tmp_path: Path) -> None:
    """Expectation: many short lines chunk in linear time (see test_linear_work) with exact offsets."""
    f = tmp_path / "lines.txt"
    f.write_text("".join(f"{i}行目の記録\n" for i in range(200_000)), encoding="utf-8")
    doc = load(f)
    chunks = chunk(doc, "recursive", max_size=1_000)
    check_invariants(doc, chunks, max_size=1_000, unit="chars")


def test_a_notebook_with_a_huge_output(tmp_path: Path) -> None:
    """Expectation: a 2 MB cell output is chunked (with --outputs text) or left out (default)."""
    nb = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# 集計\n", "売上を集計する。"]},
            {
                "cell_type": "code",
                "metadata": {},
                "execution_count": 1,
                "source": ["print('x' * 2_000_000)"],
                "outputs": [{"output_type": "stream", "name": "stdout", "text": ["x" * 2_000_000]}],
            },
        ],
    }
    f = tmp_path / "big.ipynb"
    f.write_text(json.dumps(nb), encoding="utf-8")
    for outputs in ("none", "text"):
        doc = load(f, outputs=outputs)
        chunks = chunk(doc, "markdown", max_size=2_000)
        check_invariants(doc, chunks, max_size=2_000, unit="chars")
    assert len(load(f, outputs="text").text) > 2_000_000 > len(load(f).text)


# ------------------------------------------------------------------------------------------ odd files


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_and_a_device_link_never_hang_a_run(tmp_path: Path) -> None:
    """Expectation: a FIFO named *.txt and a *.txt link to /dev/zero are skipped with a warning inside a
    folder, and refused with one line when named; the other files are chunked (it used to hang)."""
    import os

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "規程.txt").write_text("宿泊費は実費とする。", encoding="utf-8")
    os.mkfifo(folder / "pipe.txt")
    if Path("/dev/zero").exists():
        (folder / "zero.txt").symlink_to("/dev/zero")
    done = run("chunk", str(folder), "--format", "jsonl", timeout=60)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["text"] for line in done.stdout.splitlines()] == ["宿泊費は実費とする。"]
    assert "pipe.txt: not a regular file" in done.stderr
    named = run("chunk", str(folder / "pipe.txt"), "--format", "jsonl", timeout=60)
    assert named.returncode == 1 and "not a regular file (a FIFO)" in named.stderr


def test_a_file_name_that_is_not_utf8_is_kept_in_valid_json(tmp_path: Path) -> None:
    """Expectation: the row is valid UTF-8 JSON (the odd byte as an escaped surrogate), also under a
    strict UTF-8 stdout; the text is chunked as usual."""
    import os

    name = os.fsdecode(b"caf\xe9-\xe8\xa6\x8f\xe7\xa8\x8b.txt")  # Latin-1 "é", then UTF-8 "規程"
    path = Path(os.fsdecode(bytes(tmp_path))) / name
    try:
        path.write_text("旅費は実費とする。", encoding="utf-8")
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system refuses names that are not UTF-8")
    done = subprocess.run(
        [sys.executable, "-m", "kireme.cli", "chunk", str(tmp_path), "--format", "jsonl"],
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"},
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    line = done.stdout.decode("utf-8")  # strict: valid UTF-8
    row = json.loads(line)
    assert row["doc_id"].endswith(name) and row["text"] == "旅費は実費とする。"


def test_max_file_size_refuses_a_large_file_with_one_line(tmp_path: Path) -> None:
    """Expectation: a file over --max-file-size fails alone (exit 1 for chunk, 3 for index: partial);
    the limit is not part of an index entry's configuration, so changing it re-reads nothing."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "small.txt").write_text("宿泊費は実費とする。", encoding="utf-8")
    (folder / "large.txt").write_text("旅費規程。" * 100, encoding="utf-8")
    done = run("chunk", str(folder), "--max-file-size", "200", "--format", "jsonl")
    assert done.returncode == 1
    assert [json.loads(line)["text"] for line in done.stdout.splitlines()] == ["宿泊費は実費とする。"]
    assert "large.txt: 1,500 bytes is over the limit of 200 bytes" in done.stderr
    assert run("chunk", str(folder), "--max-file-size", "lots").returncode == 2
    db = str(tmp_path / "index")
    first = run("index", str(folder), "--db", db, "--embedder", "hash", "--max-file-size", "200")
    assert first.returncode == 3 and "1 added" in first.stderr and "1 failed" in first.stderr
    second = run("index", str(folder), "--db", db, "--embedder", "hash", "--max-file-size", "1M")
    assert second.returncode == 0 and "1 added" in second.stderr and "1 unchanged" in second.stderr
