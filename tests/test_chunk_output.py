"""``kireme chunk --output DIR`` without Ray: shard files whose rows, read in name order, are the JSONL
``kireme chunk`` prints (the Ray engine writes the same files: tests/test_ray.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kireme.cli import cli

DOCS = {
    "travel.md": "# 出張旅費規程\n\n## 第3条 宿泊費\n\n宿泊費の上限は一泊12,000円とする。\n\n## 第4条 日当\n\n日当は2,000円。\n",
    "O'Reilly.md": "# Style\n\nUse the serial comma. Put a period inside the quotation mark.\n",
    "leave.txt": "Leave policy. Staff earn 20 days of paid leave a year.\n",
    "memo.txt": "会議は毎週月曜日の十時から。議事録は翌日までに共有する。\n",
}
OPTIONS = ["--max-size", "30", "--strategy", "recursive"]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_jsonl_shards_concatenated_are_the_rows_printed(
    docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, printed, _ = run("chunk", str(docs), *OPTIONS, "--format", "jsonl")
    assert code == 0 and printed.count("\n") > len(DOCS)
    out = tmp_path / "out"
    out.mkdir()
    (out / "part-000042.jsonl").write_text("stale\n")  # a shard an earlier, bigger run left
    (out / "part-000007.parquet").write_bytes(b"stale")
    (out / "notes.txt").write_text("kept")
    monkeypatch.setattr("kireme.shards.SHARD_ROWS", 3)  # several shards, each closed after a whole document
    code, stdout, stderr = run("chunk", str(docs), *OPTIONS, "--output", str(out))
    assert code == 0 and stdout == ""
    shards = sorted(out.glob("part-*.jsonl"))
    assert len(shards) > 1 and shards[0].name == "part-000000.jsonl"
    assert not (out / "part-000042.jsonl").exists() and not (out / "part-000007.parquet").exists()
    assert (out / "notes.txt").read_text() == "kept"
    assert "".join(s.read_text(encoding="utf-8") for s in shards) == printed
    for shard in shards:  # a document is never split across two shards
        ids = {json.loads(line)["doc_id"] for line in shard.read_text(encoding="utf-8").splitlines()}
        others = {
            json.loads(line)["doc_id"]
            for s in shards
            if s != shard
            for line in s.read_text(encoding="utf-8").splitlines()
        }
        assert not ids & others
    assert f"→ {out} ({len(shards)} jsonl shard(s))" in stderr
    assert not list(out.glob(".*.tmp"))


def test_parquet_shards_hold_the_same_rows(docs: Path, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    code, printed, _ = run("chunk", str(docs), *OPTIONS, "--format", "jsonl")
    out = tmp_path / "out"
    code, _, stderr = run("chunk", str(docs), *OPTIONS, "--output", str(out), "--format", "parquet")
    assert code == 0, stderr
    rows = [r for s in sorted(out.glob("part-*.parquet")) for r in pq.read_table(s).to_pylist()]
    expected = [json.loads(line) for line in printed.splitlines()]
    assert [{**r, "metadata": json.loads(r["metadata"])} for r in rows] == expected


def test_an_unreadable_file_fails_alone_and_nothing_chunked_is_an_empty_shard(
    docs: Path, tmp_path: Path
) -> None:
    (docs / "broken.txt").write_bytes(b"\x00\x01\x02binary\xff\xfe" * 50)
    code, printed, _ = run("chunk", str(docs), *OPTIONS, "--format", "jsonl")
    out = tmp_path / "out"
    code_out, _, stderr = run("chunk", str(docs), *OPTIONS, "--output", str(out))
    assert code_out == code == 1 and "broken.txt" in stderr
    assert "".join(s.read_text(encoding="utf-8") for s in sorted(out.glob("part-*.jsonl"))) == printed
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "blank.txt").write_text("  \n\n", encoding="utf-8")
    code, _, _ = run("chunk", str(empty), "--output", str(tmp_path / "none"))
    assert code == 0 and [p.name for p in (tmp_path / "none").iterdir()] == ["part-000000.jsonl"]
    assert (tmp_path / "none" / "part-000000.jsonl").read_text() == ""


def test_usage_errors_and_the_missing_extra_are_one_line(
    docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, stderr = run("chunk", str(docs), "--format", "parquet")
    assert code == 2 and "give --output DIR" in stderr
    code, _, stderr = run("chunk", str(docs), "--output", str(tmp_path / "o"), "--format", "text")
    assert code == 2 and "not --format text" in stderr
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # as if pyarrow were not installed
    code, stdout, stderr = run("chunk", str(docs), "--output", str(tmp_path / "o"), "--format", "parquet")
    assert code == 2 and stdout == ""
    assert stderr.strip().splitlines() == [
        "kireme: error: --format parquet needs pyarrow: pip install 'kireme[index]'"
    ]
    assert not (tmp_path / "o").exists()  # refused before anything was chunked or written
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.undo()
    code, _, stderr = run("chunk", str(docs), "--output", str(blocked))
    assert code != 0 and str(blocked) in stderr and "Traceback" not in stderr
