"""The index path under odd names and full disks: names that are not UTF-8 are indexed and kept
losslessly, a full disk is one line (the optional embedding cache only turns itself off), and a run
completes once space is freed."""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kireme.embed.cache import CachedEmbedder, EmbeddingCache
from kireme.embed.hashed import HashedNgramEmbedder
from kireme.errors import storage_failure
from kireme.index.manifest import DocumentEntry, Manifest
from kireme.index.names import MARK, from_stored, json_text, to_stored

ODD = os.fsdecode(b"\xff\xfe-\xe5\x87\xba\xe5\xbc\xb5.txt")  # two bytes that are not UTF-8, then "出張"


# ------------------------------------------------------------------------------------------ names


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_every_name_round_trips_through_its_stored_form(name: str) -> None:
    stored = to_stored(name)
    stored.encode("utf-8")  # valid UTF-8: what SQLite, Arrow and Chroma accept
    assert from_stored(stored) == name


@pytest.mark.parametrize("name", ["規程.md", "docs/a b%20c.txt", "100%.md", "\\xff.txt", ""])
def test_a_valid_name_is_stored_as_it_is(name: str) -> None:
    assert to_stored(name) == name


def test_an_escaped_looking_name_is_not_mistaken_for_an_escape() -> None:
    assert to_stored(MARK + "x") != MARK + "x"
    assert from_stored(to_stored(MARK + "%FF")) == MARK + "%FF"
    assert from_stored(to_stored(ODD)) == ODD
    assert json_text({"source": ODD}).encode("utf-8")


def test_the_manifest_keeps_an_odd_name(tmp_path: Path) -> None:
    manifest = Manifest(tmp_path / "manifest.sqlite")
    try:
        manifest.put(DocumentEntry(ODD, "h", "c", 2, ODD))
        assert manifest.documents()[ODD] == DocumentEntry(ODD, "h", "c", 2, ODD)
        manifest.remove([ODD])
        assert manifest.documents() == {}
    finally:
        manifest.close()


def kireme(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    environment = {**os.environ, "PYTHONIOENCODING": "utf-8:strict", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "kireme.cli", *args], capture_output=True, env=environment, timeout=120
    )


@pytest.fixture()
def odd_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    try:
        (folder / ODD).write_text("出張の日当は三千円とする。宿泊費は一万円を上限とする。", encoding="utf-8")
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system refuses names that are not UTF-8")
    (folder / "休暇.txt").write_text("年次有給休暇は十日とする。", encoding="utf-8")
    return folder


@pytest.mark.parametrize("store", ["lancedb", "chroma"])
def test_each_store_keeps_an_odd_name_losslessly(odd_folder: Path, tmp_path: Path, store: str) -> None:
    if store == "chroma":
        pytest.importorskip("chromadb")
    from kireme.index.ingest import Ingestor, ingest_paths
    from kireme.index.search import Searcher
    from kireme.load.registry import iter_paths
    from kireme.strategies import make_chunker

    db = tmp_path / "db"
    paths = list(iter_paths(odd_folder))
    with Ingestor(
        db, make_chunker("sentence", max_size=20), HashedNgramEmbedder(64), store=store
    ) as ingestor:
        assert ingest_paths(ingestor, paths).added == 2
    searcher = Searcher(db)
    try:
        source = (odd_folder / ODD).as_posix()
        for mode in ("dense", "bm25"):
            hits = searcher.search("日当", 3, mode, where={"source": source})
            assert hits and {h.chunk.source for h in hits} == {source}, mode
            assert hits[0].chunk.doc_id == source
    finally:
        searcher.close()
    (odd_folder / ODD).unlink()
    with Ingestor(
        db, make_chunker("sentence", max_size=20), HashedNgramEmbedder(64), store=store
    ) as ingestor:
        ingest_paths(ingestor, list(iter_paths(odd_folder)))
        assert ingestor.prune([odd_folder]) == [source]


@pytest.mark.slow
def test_the_cli_indexes_searches_and_prunes_a_file_named_in_no_encoding(
    odd_folder: Path, tmp_path: Path
) -> None:
    db = str(tmp_path / "db")
    env = {"KIREME_CACHE_DIR": str(tmp_path / "cache")}
    common = ["--db", db, "--embedder", "hash:64"]
    done = kireme("index", str(odd_folder), *common, env=env)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    assert b"2 added" in done.stderr

    done = kireme("search", "日当", "--db", db, "-k", "1", "--format", "jsonl", env=env)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    row = __import__("json").loads(done.stdout.decode("utf-8"))  # strict: valid UTF-8
    assert row["source"].endswith(ODD) and "日当" in row["text"]
    done = kireme("search", "日当", "--db", db, "-k", "1", "--format", "table", env=env)
    assert done.returncode == 0 and b"\\udcff\\udcfe" in done.stdout  # shown, never a traceback
    shown = kireme("search", "日当", "--db", db, "--filter", f"source={row['source']}", "--format", "jsonl")
    assert shown.returncode == 0 and shown.stdout.count(b"\n") == 1

    assert kireme("index", str(odd_folder), *common, env=env).stderr.count(b"2 unchanged") == 1
    (odd_folder / ODD).unlink()
    done = kireme("index", str(odd_folder), *common, "--prune", env=env)
    assert b"1 removed" in done.stderr, done.stderr.decode("utf-8", "replace")


# -------------------------------------------------------------------------------------- full disk


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (sqlite3.OperationalError("database or disk is full"), "no space left on the device"),
        (
            RuntimeError("lance error: LanceError(IO): No space left on device (os error 28), commit.rs"),
            "no space left on the device",
        ),
        (OSError(28, "No space left on device"), "no space left on the device"),
        (OSError(30, "Read-only file system"), "the file system is read-only"),
        (ValueError("dimension 3 is not 4"), None),
    ],
)
def test_storage_failures_are_recognised_in_every_store_s_words(error: BaseException, reason: str) -> None:
    assert storage_failure(error) == reason
    try:
        raise KeyError("wrapped") from error
    except KeyError as wrapped:
        assert storage_failure(wrapped) == reason


class FullDisk:
    """A SQLite connection whose writes fail as on a full disk (reads still work)."""

    def __init__(self, real: sqlite3.Connection) -> None:
        self.real = real

    def execute(self, sql: str, *args: object) -> object:
        return self.real.execute(sql, *args)

    def executemany(self, sql: str, *args: object) -> object:
        raise sqlite3.OperationalError("database or disk is full")

    def rollback(self) -> None:
        self.real.rollback()

    def close(self) -> None:
        self.real.close()


def test_a_cache_that_cannot_write_turns_itself_off_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = EmbeddingCache(tmp_path)
    assert cache._db is not None
    cache._db = FullDisk(cache._db)  # type: ignore[assignment]
    embedder = CachedEmbedder(HashedNgramEmbedder(32), cache)
    texts = ["出張の日当", "宿泊費の上限", "交通費の精算"]
    with caplog.at_level(logging.WARNING):
        first = embedder.embed(texts)
        again = embedder.embed([*texts, "年次有給休暇"])
    assert np.allclose(first, again[:3])
    assert embedder.stats.embedded == 4  # the in-memory memo still saves work
    warnings = [r for r in caplog.records if "embedding cache" in r.getMessage()]
    assert len(warnings) == 1 and "disk is full" in warnings[0].getMessage()
    assert cache._db is None


@pytest.fixture()
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1.5 MB tmpfs (needs root and a kernel that lets this process mount; skipped elsewhere)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        pytest.skip("mounting a small disk needs root on Linux")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1500k", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


@pytest.mark.slow
def test_a_full_disk_is_one_line_and_the_next_run_finishes(small_disk: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(60):
        text = "".join(
            f"第{i}章の{j}番目の規定として、旅費の精算は翌月{j % 28 + 1}日までに行う。" for j in range(300)
        )
        (docs / f"規程{i:03}.txt").write_text(text, encoding="utf-8")
    db = small_disk / "db"
    args = ("index", str(docs), "--db", str(db), "--embedder", "hash:256")
    env = {"KIREME_CACHE_DIR": str(small_disk / "cache")}

    done = kireme(*args, env=env)
    stderr = done.stderr.decode("utf-8")
    assert done.returncode == 4, stderr  # a full or read-only disk: nothing is damaged
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("kireme: error:")]
    (error,) = errors
    assert error.startswith(f"kireme: error: {db}: no space left on the device ("), error
    assert "is as it was before this run" in error or "committed by this run are kept" in error, error
    assert error.endswith("then run the same command again") and "damaged" not in error, error
    assert "embedding cache" in stderr  # the cache gave up first, with a warning, and the run went on
    search = kireme("search", "精算", "--db", str(db), "--format", "jsonl", env=env)
    assert search.returncode == 0 and b"Traceback" not in search.stderr

    grown = subprocess.run(["mount", "-o", "remount,size=40m", str(small_disk)], capture_output=True)
    if grown.returncode != 0:
        pytest.skip("cannot grow the tmpfs here")
    done = kireme(*args, env=env)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    assert b"60 document(s)" in done.stderr and b"0 failed" in done.stderr
    done = kireme(*args, env=env)
    assert b"60 unchanged" in done.stderr
    hits = kireme("search", "第7章の12番目の規定", "--db", str(db), "-k", "1", "--format", "jsonl", env=env)
    assert "第7章の12番目" in hits.stdout.decode("utf-8")


# ---------------------------------------------------------------------------------------- chroma HNSW


def _rows(n: int, dim: int = 64) -> tuple[list[Any], np.ndarray, HashedNgramEmbedder]:
    from kireme.index.store import StoredChunk

    rng = np.random.default_rng(5)
    words = [
        "出張",
        "旅費",
        "宿泊",
        "日当",
        "精算",
        "領収書",
        "申請",
        "承認",
        "交通費",
        "上限",
        "規程",
        "部長",
    ]
    texts = ["".join(rng.choice(words, size=8)) + f"第{i}号" for i in range(n)]
    embedder = HashedNgramEmbedder(dim)
    chunks = [StoredChunk(f"c{i:05d}", f"d{i // 10}", i % 10, 0, len(t), t, t) for i, t in enumerate(texts)]
    return chunks, embedder.embed(texts), embedder


@pytest.mark.slow
def test_chroma_builds_answer_like_exact_search_and_like_each_other(tmp_path: Path) -> None:
    pytest.importorskip("chromadb")
    from kireme.index.chroma_store import HNSW, ChromaStore

    chunks, vectors, embedder = _rows(3000)
    queries = embedder.embed(
        [f"{w}の{v}" for w in ("出張", "宿泊", "精算", "承認") for v in ("上限", "申請", "部長")]
    )
    exact = np.argsort(-(queries @ vectors.T), axis=1, kind="stable")[:, :10]
    answers = []
    for build in range(2):
        store = ChromaStore(tmp_path / f"build{build}")
        try:
            assert {k: store._collection.configuration["hnsw"][k] for k in HNSW} == HNSW
            for i in range(0, len(chunks), 500):
                store.add(chunks[i : i + 500], vectors[i : i + 500])
            answers.append([store.search(q, 10) for q in queries])
        finally:
            store.close()
    scores = queries @ vectors.T
    found = 0
    for q, hits in enumerate(answers[0]):  # a hit tied with the exact 10th best counts (hash vectors tie)
        tenth = scores[q, exact[q, -1]]
        found += sum(scores[q, int(h.chunk.id[1:])] >= tenth - 1e-6 for h in hits)
    assert found / (10 * len(queries)) >= 0.95
    for first, second in zip(answers[0], answers[1], strict=True):  # identical builds: the same answers,
        assert np.allclose([h.score for h in first], [h.score for h in second], atol=1e-6)  # up to ties
        same = [a.chunk.id == b.chunk.id for a, b in zip(first, second, strict=True)]
        assert all(
            same[k]
            or abs(first[k].score - first[k - 1].score) < 1e-6
            or abs(first[k].score - first[min(k + 1, 9)].score) < 1e-6
            for k in range(10)
        )


def test_an_older_chroma_collection_gets_the_search_effort_from_a_writer_only(tmp_path: Path) -> None:
    pytest.importorskip("chromadb")
    import chromadb
    from chromadb.config import Settings

    from kireme.index.chroma_store import HNSW, ChromaStore

    client = chromadb.PersistentClient(
        path=str(tmp_path / "chroma"), settings=Settings(anonymized_telemetry=False)
    )
    client.get_or_create_collection(
        "kireme_chunks", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
    )
    client.close()  # as the older kireme that made it would have
    reader = ChromaStore(tmp_path / "chroma", create=False)
    assert (
        reader._collection.configuration["hnsw"]["ef_search"] < HNSW["ef_search"]
    )  # a reader changes nothing
    reader.close()
    writer = ChromaStore(tmp_path / "chroma")
    assert writer._collection.configuration["hnsw"]["ef_search"] == HNSW["ef_search"]
    writer.close()


class _BusyCollection:
    """A Chroma collection made before kireme raised the search effort, whose database is locked for the
    first ``busy`` changes (Chroma's own background work, or another process reading it)."""

    def __init__(self, busy: int) -> None:
        self.busy = busy
        self.configuration: dict[str, dict[str, int]] = {"hnsw": {"ef_search": 10}}

    def modify(self, configuration: dict[str, dict[str, int]]) -> None:
        if self.busy > 0:
            self.busy -= 1
            raise RuntimeError("Database error: error returned from database: (code: 5) database is locked")
        self.configuration["hnsw"].update(configuration["hnsw"])


def test_a_busy_chroma_database_is_tried_again_before_the_search_effort_is_given_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("chromadb")
    from kireme.index.chroma_store import _LOCKED_TRIES, HNSW, ChromaStore

    store = ChromaStore.__new__(ChromaStore)
    store.path = tmp_path / "chroma"
    store._collection = _BusyCollection(busy=2)  # busy for a moment: the change is made
    store._raise_search_effort()
    assert store._collection.configuration["hnsw"]["ef_search"] == HNSW["ef_search"]
    assert not caplog.records

    store._collection = _BusyCollection(busy=_LOCKED_TRIES)  # busy throughout: a warning, no error
    with caplog.at_level("WARNING", logger="kireme.index.chroma_store"):
        store._raise_search_effort()
    assert store._collection.configuration["hnsw"]["ef_search"] == 10
    assert "could not raise the collection's search effort" in caplog.text
    assert "searches use 10" in caplog.text

    class _Broken(_BusyCollection):
        def modify(self, configuration: dict[str, dict[str, int]]) -> None:
            raise RuntimeError("no such collection")

    store._collection = _Broken(busy=0)  # not a busy database: raised, as before
    with pytest.raises(RuntimeError, match="no such collection"):
        store._raise_search_effort()


# ------------------------------------------------------------------------------------ damaged pieces


@pytest.mark.parametrize("damage", ["garbage", "truncated", "pages"])
def test_a_damaged_manifest_is_one_error_naming_it_and_what_to_run(tmp_path: Path, damage: str) -> None:
    """``pages``: the header intact, pages after it overwritten: the snapshot's COMMIT raised over the read's
    own error, and every search printed a traceback."""
    from kireme.errors import IndexDamagedError
    from kireme.index.search import Searcher

    db = tmp_path / "db"
    db.mkdir()
    manifest = Manifest(db / "manifest.sqlite")
    for i in range(200):
        manifest.put(DocumentEntry(f"規程{i}.md", "h" * 64, "c" * 16, 3, f"規程{i}.md"))
    manifest.close()
    path = db / "manifest.sqlite"
    data = path.read_bytes()
    if damage == "pages":
        path.write_bytes(data[:4096] + os.urandom(4096) + data[8192:])
    else:
        path.write_bytes(os.urandom(4096) if damage == "garbage" else data[: len(data) // 2])
    for leftover in db.glob("manifest.sqlite-*"):
        leftover.unlink()
    with pytest.raises(
        IndexDamagedError, match=r"manifest\.sqlite is damaged .*kireme index --rebuild PATH\.\.\. --db"
    ):
        Searcher(db)


def test_a_lock_that_is_a_directory_is_one_error(tmp_path: Path) -> None:
    from kireme.errors import IndexDamagedError
    from kireme.index.ingest import IndexLock

    (tmp_path / "kireme.lock").mkdir()
    with pytest.raises(IndexDamagedError, match=r"kireme\.lock is not a lock file"):
        IndexLock(tmp_path)


@pytest.mark.parametrize("store", ["lancedb", "chroma"])
def test_check_and_repair_on_each_store(odd_folder: Path, tmp_path: Path, store: str) -> None:
    if store == "chroma":
        pytest.importorskip("chromadb")
    import sqlite3

    from kireme.index.check import check_index
    from kireme.index.ingest import Ingestor, ingest_paths
    from kireme.load.registry import iter_paths
    from kireme.strategies import make_chunker

    db = tmp_path / "db"
    with Ingestor(
        db, make_chunker("sentence", max_size=20), HashedNgramEmbedder(64), store=store
    ) as ingestor:
        ingest_paths(ingestor, list(iter_paths(odd_folder)))
    assert check_index(db).healthy
    con = sqlite3.connect(db / "manifest.sqlite")
    con.execute("DELETE FROM documents")  # every entry lost: the rows are orphans
    con.commit()
    con.close()
    report = check_index(db)
    assert not report.healthy and not report.needs_rebuild
    assert check_index(db, repair=True).healthy
    assert check_index(db).healthy
    entries = Manifest(db / "manifest.sqlite")
    try:
        assert set(entries.documents()) == {p.as_posix() for p in iter_paths(odd_folder)}  # odd name too
    finally:
        entries.close()


def test_a_cache_folder_that_cannot_be_used_is_said_when_the_user_named_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``KIREME_CACHE_DIR`` naming a file (or ``--cache-dir`` somewhere unwritable) was ignored silently:
    every run embedded everything again."""
    taken = tmp_path / "a-file"
    taken.write_text("not a folder", encoding="utf-8")
    with caplog.at_level(logging.DEBUG, logger="kireme.embed.cache"):
        named = EmbeddingCache(taken)
    assert named.path is None
    assert [r.levelno for r in caplog.records if "cannot be used" in r.getMessage()] == [logging.WARNING]
    caplog.clear()
    monkeypatch.delenv("KIREME_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(taken))  # the default place, unusable: said only in debug
    with caplog.at_level(logging.DEBUG, logger="kireme.embed.cache"):
        EmbeddingCache()
    assert [r.levelno for r in caplog.records if "cannot be used" in r.getMessage()] == [logging.DEBUG]
