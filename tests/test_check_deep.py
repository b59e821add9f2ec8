"""Rows changed inside the store, and a BM25 cache out of step with the rows, after the index wrote them.

`kireme check` (without ``--deep``) trusts what the store says about itself; these are the changes it
cannot see: a row's ``text`` or ``embed_text`` rewritten in the table (by another tool, a bad restore),
a BM25 id list reordered with its checksum written to match. A search must never answer from them with
exit 0: a rewritten ``text`` is refused (it is checked against the document text kept when it was
indexed), a BM25 cache that credits rows with words they do not hold is rebuilt from the rows.
``kireme check --deep`` reports both, and ``--deep --repair`` followed by ``kireme index`` heals them.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kireme.cli import cli

# Chroma (the chroma extra) is left out of a test run on a small disk (scripts/install-dev.sh)
STORES = [
    "lancedb",
    pytest.param(
        "chroma",
        marks=pytest.mark.skipif(find_spec("chromadb") is None, reason="the chroma extra is not installed"),
    ),
]
DOCS = {
    "出張.md": "# 出張規程\n\n## 日当\n\n日帰り出張の日当は千二百円とする。\n\n## 宿泊\n\n宿泊費は一泊一万円を上限とする。\n",
    "休暇.md": "# 休暇規程\n\n## 年次休暇\n\n入社六か月で十日の年次休暇を付与する。\n\n## 特別休暇\n\n忌引は五日とする。\n",
    "backup.txt": "Backups run every night at two.\n\nRestores are tested once a quarter by the operations team.\n",
}
NO_CHAT = {
    f"{side}_{key}": None for side in ("KIREME_CHAT", "OPENAI") for key in ("BASE_URL", "MODEL", "API_KEY")
}


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # documents are named docs/<file>, as a user indexing ./docs sees them


def _index(tmp_path: Path, store: str) -> tuple[Path, Path, CliRunner]:
    docs = Path("docs")
    docs.mkdir(exist_ok=True)
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    db = tmp_path / f"db-{store}"
    runner = CliRunner()
    result = runner.invoke(cli, ["index", "docs", "--db", str(db), "--store", store, "--embedder", "hash:64"])
    assert result.exit_code == 0, result.output
    return docs, db, runner


def _search(runner: CliRunner, db: Path, query: str, mode: str) -> Any:
    return runner.invoke(
        cli, ["search", query, "--db", str(db), "--mode", mode, "--format", "jsonl"], env=NO_CHAT
    )


def _rows(result: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def _check(runner: CliRunner, db: Path, *flags: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(cli, ["check", "--db", str(db), "--format", "json", *flags])
    return result.exit_code, json.loads(result.stdout)


def _rewrite(db: Path, store: str, doc_id: str, **values: str) -> None:
    """Change one row of ``doc_id`` behind kireme's back, with the store's own client."""
    if store == "lancedb":
        import lancedb

        table = lancedb.connect(str(db / "lancedb")).open_table("chunks")
        table.update(where=f"doc_id = '{doc_id}' AND idx = 0", values=values)
        return
    # in a process of its own: Chroma keeps one client per folder per process, with the settings it
    # was first opened with (kireme's, read-only), and refuses a second with others
    subprocess.run(
        [sys.executable, "-c", _CHROMA_REWRITE, str(db / "chroma"), doc_id, json.dumps(values)], check=True
    )


_CHROMA_REWRITE = """
import json, sys
import chromadb
path, doc_id, values = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
client = chromadb.PersistentClient(path=path)
collection = client.get_collection(client.list_collections()[0].name)
got = collection.get(where={"doc_id": doc_id}, include=["documents", "metadatas", "embeddings"])
first = min(range(len(got["ids"])), key=lambda i: got["metadatas"][i]["idx"])
vector = [list(got["embeddings"][first])]  # given, so that Chroma does not reach for its own model
if "text" in values:
    collection.update(ids=[got["ids"][first]], documents=[values["text"]], embeddings=vector)
else:
    metadata = {**got["metadatas"][first], "embed_text": values["embed_text"]}
    collection.update(ids=[got["ids"][first]], metadatas=[metadata], embeddings=vector)
"""


@pytest.mark.parametrize("store", STORES)
def test_a_rewritten_text_is_refused_found_by_deep_check_and_healed(tmp_path: Path, store: str) -> None:
    docs, db, runner = _index(tmp_path, store)
    clean = {
        mode: _rows(_search(runner, db, "日帰り出張の日当", mode)) for mode in ("bm25", "dense", "hybrid")
    }
    assert clean["bm25"][0]["doc_id"] == "docs/出張.md"
    assert _check(runner, db, "--deep")[0] == 0

    _rewrite(db, store, "docs/出張.md", text="# 出張規程\n\n## 日当\n\n日帰り出張の日当は九千円とする。")
    for mode in ("bm25", "dense", "hybrid"):
        result = _search(runner, db, "日帰り出張の日当", mode)
        assert result.exit_code == 1, (mode, result.output)
        assert "九千円" not in result.output
        assert len(result.stderr.strip().splitlines()) == 1
        assert "check --deep --repair" in result.stderr
    code, report = _check(runner, db, "--deep")
    assert code == 1
    (rows,) = [f for f in report["findings"] if f["part"] == "rows"]
    assert rows["level"] == "fixable" and "docs/出張.md" in rows["detail"]

    code, report = _check(runner, db, "--deep", "--repair")
    assert code == 0, report
    code, report = _check(runner, db, "--deep")
    assert code == 0 and report["documents"] == len(DOCS) - 1  # dropped, to be indexed again
    result = runner.invoke(cli, ["index", str(docs), "--db", str(db), "--embedder", "hash:64"])
    assert result.exit_code == 0 and "1 added" in result.output, result.output
    assert _check(runner, db, "--deep")[0] == 0
    assert {mode: _rows(_search(runner, db, "日帰り出張の日当", mode)) for mode in clean} == clean


@pytest.mark.parametrize("store", STORES)
def test_a_rewritten_embed_text_is_found_only_by_the_deep_check(tmp_path: Path, store: str) -> None:
    _, db, runner = _index(tmp_path, store)
    _rewrite(db, store, "docs/backup.txt", embed_text="passage: something else entirely")
    assert _check(runner, db)[0] == 0 or store == "lancedb"  # LanceDB's version moved: "state changed"
    code, report = _check(runner, db, "--deep")
    assert code == 1
    assert any(f["part"] == "rows" and "docs/backup.txt" in f["detail"] for f in report["findings"])


def test_a_reordered_bm25_id_list_with_its_checksum_is_rebuilt_by_a_search_and_found_by_deep(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _, db, runner = _index(tmp_path, "lancedb")
    queries = ["日帰り出張の日当", "年次休暇", "restores tested quarter"]
    clean = [_rows(_search(runner, db, q, "bm25")) for q in queries]
    path = db / "bm25" / "ids.json"
    raw = json.dumps(list(reversed(json.loads(path.read_text())))).encode()
    path.write_bytes(raw)
    stamp = (db / "bm25" / "generation").read_text().split("\n")
    (db / "bm25" / "generation").write_text("\n".join([*stamp[:2], hashlib.sha256(raw).hexdigest()]))

    assert _check(runner, db)[0] == 0  # the checksum matches: only the rows can tell
    code, report = _check(runner, db, "--deep")
    assert code == 1
    (bm25,) = [f for f in report["findings"] if f["part"] == "bm25"]
    assert bm25["level"] == "fixable" and "id list" in bm25["detail"]

    first = _search(runner, db, queries[0], "bm25")
    assert first.exit_code == 0 and "the BM25 cache does not match the stored rows" in caplog.text
    assert [_rows(_search(runner, db, q, "bm25")) for q in queries] == clean
    assert _check(runner, db, "--deep")[0] == 0  # the search wrote the rebuilt cache


def test_an_index_written_before_digests_is_checked_against_its_text(tmp_path: Path) -> None:
    _, db, runner = _index(tmp_path, "lancedb")
    con = sqlite3.connect(db / "manifest.sqlite")
    con.execute("UPDATE documents SET rows_digest = ''")
    con.commit()
    con.close()
    code, report = _check(runner, db, "--deep")
    assert code == 0
    (rows,) = [f for f in report["findings"] if f["part"] == "rows"]
    assert "3 document(s) written before digests" in rows["detail"]
    _rewrite(
        db,
        "lancedb",
        "docs/休暇.md",
        text="# 休暇規程\n\n## 年次休暇\n\n入社初日に二十日の年次休暇を付与する。",
    )
    code, report = _check(runner, db, "--deep")
    assert code == 1 and any("docs/休暇.md" in f["detail"] for f in report["findings"] if f["part"] == "rows")


def test_deep_check_is_in_the_help(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["check", "--help"])
    assert "--deep" in result.output and "digest" in result.output


def test_an_index_of_no_chunks_is_healthy(tmp_path: Path) -> None:
    """Empty files (or PDFs without a text layer) give an index of no chunks: its keyword index is built
    over one placeholder document, which check read as damaged, and repair could not heal."""
    docs = Path("docs")
    docs.mkdir()
    (docs / "empty.txt").write_text("", encoding="utf-8")
    db = tmp_path / "db"
    runner = CliRunner()
    assert runner.invoke(cli, ["index", "docs", "--db", str(db), "--embedder", "hash:64"]).exit_code == 0
    for flags in ((), ("--deep",)):
        code, report = _check(runner, db, *flags)
        assert code == 0, report
    assert _search(runner, db, "宿泊費", "bm25").exit_code == 0
    assert _check(runner, db)[0] == 0  # a search did not find the cache damaged and rebuild it


def test_a_search_racing_an_index_commit_is_not_told_the_index_is_damaged(tmp_path: Path) -> None:
    """A searcher reads the manifest when it opens and the store when it searches; a writer that commits
    new versions in between (the manifest's entry and kept text first) made its hits, rows of the old
    versions, look "changed inside the store": a healthy index was called damaged (1 search in 40 while
    ``kireme index`` ran). The hits are checked against the texts of the searcher's own versions."""
    import dataclasses

    from kireme.index.manifest import Manifest
    from kireme.index.search import Searcher

    _, db, _ = _index(tmp_path, "lancedb")
    searcher = Searcher(db)
    try:
        hits = searcher.search("宿泊費の上限", 5, "bm25")
        assert hits
        manifest = Manifest(db / "manifest.sqlite")  # the writer's commit, as far as the manifest goes
        try:
            for doc_id, entry in manifest.documents().items():
                newer = dataclasses.replace(entry, content_hash="0" * 64)
                manifest.put(newer)
                manifest.put_text(doc_id, newer.content_hash, "追記の段落です。\n\n" + "本文" * 500)
        finally:
            manifest.close()
        for mode in ("bm25", "dense", "hybrid"):
            assert searcher.search("宿泊費の上限", 5, mode)  # its own snapshot's rows: not refused
    finally:
        searcher.close()
