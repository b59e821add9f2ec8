"""``kireme index --store milvus`` and ``--store qdrant``: the vector databases users run, through the
command line, with their local engines (milvus-lite, qdrant-client's local mode) in the index directory.

Each store goes through what LanceDB and Chroma go through: index a few Japanese and English files,
search them (dense, BM25, hybrid), filter (a source name with an apostrophe included), re-run (nothing
written), edit one file (only it is redone), remove one (``--prune``), ``kireme check``, and the server's
`IndexService`. Milvus also through the network, against the gRPC server milvus-lite ships; no Qdrant
server can be started here: a server URI is checked to fail quickly, in one line, without credentials. The store contract itself (every method) is in tests/test_stores.py.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from kireme.cli import cli
from kireme.index.manifest import Manifest
from kireme.index.search import Searcher
from kireme.index.store import StoredChunk

EXTRAS = {"milvus": ("pymilvus", "milvus_lite"), "qdrant": ("qdrant_client",)}
DOCS = {
    "travel.md": "# 出張旅費規程\n\n## 第3条 宿泊費\n\n宿泊費の上限は一泊12,000円とする。\n\n"
    "## 第4条 日当\n\n日当は一日2,000円とする。\n",
    "O'Reilly.md": "# O'Reilly style guide\n\n## Commas\n\nUse the serial comma in every list of three or "
    "more items.\n\n## Quotes\n\nPut a period inside the closing quotation mark.\n",
    "leave.txt": "Leave policy. Staff earn 20 days of paid leave a year, and carry five of them over.\n",
}


@pytest.fixture(params=list(EXTRAS))
def store(request: pytest.FixtureRequest) -> str:
    for module in EXTRAS[request.param]:
        pytest.importorskip(module, reason=f"the {request.param} extra is not installed")
    return str(request.param)


def write_docs(root: Path) -> Path:
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def index(docs: Path, db: Path, *more: str) -> dict[str, int]:
    small = ("--unit", "chars", "--max-size", "60")  # a few chunks per file (the same in every run)
    code, out = run("index", str(docs), "--db", str(db), "--format", "json", "--quiet", *small, *more)
    assert code == 0, out
    return json.loads(next(line for line in out.splitlines() if line.startswith("{")))


def every_chunk(db: Path) -> list[StoredChunk]:
    searcher = Searcher(db)
    try:
        return sorted(searcher.store.chunks(), key=lambda c: (c.doc_id, c.index))
    finally:
        searcher.close()


def test_index_search_filter_update_prune_check_and_serve(tmp_path: Path, store: str) -> None:
    exercise(tmp_path, store)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def listening(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.slow
def test_a_real_milvus_server(tmp_path: Path) -> None:
    """The same life of an index against a Milvus server over the network: the gRPC server milvus-lite
    ships (``python -m milvus_lite server``), reached through ``--store-uri http://127.0.0.1:PORT``."""
    for module in EXTRAS["milvus"]:
        pytest.importorskip(module, reason="the milvus extra is not installed")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "milvus_lite", "server", "--data-dir", str(tmp_path / "milvus-server"),
         "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not listening(port):
            assert server.poll() is None and time.monotonic() < deadline, (
                "the milvus-lite server did not start"
            )
            time.sleep(0.2)
        uri = f"http://127.0.0.1:{port}"
        exercise(tmp_path, "milvus", uri)
        from pymilvus import MilvusClient

        client = MilvusClient(uri=uri)
        try:  # the re-embed dropped the collection it replaced: one kireme collection is left
            assert len([c for c in client.list_collections() if c.startswith("kireme_")]) == 1
        finally:
            client.close()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


def exercise(tmp_path: Path, store: str, uri: str | None = None) -> None:
    """Index, search, filter, re-run, edit, prune, check, re-embed and serve one index of ``store``
    (its local engine inside --db, or the server at ``uri``)."""
    docs, db = write_docs(tmp_path / "docs"), tmp_path / "db"
    where_to = ("--store-uri", uri) if uri else ()
    summary = index(docs, db, "--store", store, *where_to, "--embedder", "hash")
    assert summary["added"] == 3 and summary["chunks_written"] > 3
    if uri:
        assert not (db / store).exists()  # nothing of the store inside --db: it is on the server
    elif store == "milvus":
        assert (db / "milvus" / "milvus.db").exists()  # milvus-lite's files, inside --db
    else:
        assert (db / "qdrant" / "collection").is_dir()  # qdrant's local mode, inside --db
    rows = every_chunk(db)
    assert {c.doc_id for c in rows} == {(docs / name).as_posix() for name in DOCS}

    searcher = Searcher(db)
    try:
        for mode in ("dense", "bm25", "hybrid"):
            best = searcher.search("宿泊費の上限", k=2, mode=mode)[0].chunk
            assert "12,000円" in best.text and best.doc_id.endswith("travel.md"), mode
            best = searcher.search("serial comma", k=2, mode=mode)[0].chunk
            assert "serial comma" in best.text, mode
        # every filter field, the apostrophe included: exactly that document's chunks, whatever the mode
        oreilly = next(c for c in rows if c.doc_id.endswith("O'Reilly.md"))
        for where in (
            {"source": oreilly.source},
            {"doc_id": oreilly.doc_id},
            {"title": oreilly.title},
            {"format": "text"},
        ):
            expected = {c.id for c in rows if all(getattr(c, k) == v for k, v in where.items())}
            assert expected, where
            assert {c.id for c in searcher.store.chunks(where)} == expected, where
            hits = searcher.search("comma period leave policy 宿泊費", k=50, mode="dense", where=where)
            assert {h.chunk.id for h in hits} == expected, where
            for mode in ("bm25", "hybrid"):
                hits = searcher.search("comma period leave 宿泊費", k=50, mode=mode, where=where)
                assert hits and {h.chunk.id for h in hits} <= expected, (where, mode)
    finally:
        searcher.close()
    code, out = run("search", "serial comma", "--db", str(db), "--filter", f"source={oreilly.source}")
    assert code == 0 and "serial comma" in out and "宿泊費" not in out, out
    code, out = run("search", "comma", "--db", str(db), "--filter", "source=O'Brien.md")
    assert code == 0 and "serial" not in out

    # a re-run writes nothing; an edited file is the only one redone; a removed one is pruned
    again = index(docs, db)
    assert again["unchanged"] == 3 and again["chunks_written"] == 0 and again["texts_embedded"] == 0
    before = {c.id: c for c in every_chunk(db)}
    travel = docs / "travel.md"
    travel.write_text(DOCS["travel.md"] + "\n## 第5条 交通費\n\n交通費は実費を支給する。\n", encoding="utf-8")
    edited = index(docs, db)
    assert (edited["updated"], edited["unchanged"], edited["added"]) == (1, 2, 0)
    after = {c.id: c for c in every_chunk(db)}
    assert {c.doc_id for c in after.values() if c.id not in before} == {travel.as_posix()}
    assert {c.doc_id for c in before.values() if c.id not in after} <= {travel.as_posix()}
    assert any("交通費" in c.text for c in after.values())
    (docs / "leave.txt").unlink()
    pruned = index(docs, db, "--prune")
    assert pruned["removed"] == 1
    assert all(not c.doc_id.endswith("leave.txt") for c in every_chunk(db))

    code, out = run("check", "--db", str(db))
    assert code == 0 and "healthy" in out and "every document complete" in out, out
    # another embedder: built beside the old store (its own folder and collection) and swapped in
    reembedded = index(docs, db, "--embedder", "hash:64", "--reembed")
    assert reembedded["added"] == 2 and not (db / store).exists()
    if not uri:
        assert [p.name for p in db.iterdir() if p.name.startswith(f"{store}-")]
    code, out = run("search", "宿泊費の上限", "--db", str(db), "-k", "1")
    assert code == 0 and "12,000円" in out, out

    from kireme.serve.service import IndexService

    service = IndexService(db)
    try:
        hits = service.search("宿泊費の上限", k=3, mode="hybrid")
        assert "12,000円" in hits[0].chunk.text
        hits = service.search("comma", k=5, mode="dense", where={"source": oreilly.source})
        assert hits and all(h.chunk.source == oreilly.source for h in hits)
    finally:
        if service._searcher is not None:
            service._searcher.close()


def test_rows_without_an_entry_are_never_returned_and_check_repairs_them(tmp_path: Path, store: str) -> None:
    from kireme.index.store import open_store

    docs, db = write_docs(tmp_path / "docs"), tmp_path / "db"
    index(docs, db, "--store", store, "--embedder", "hash")
    info = Manifest(db / "manifest.sqlite").get_meta("embedder")
    stray = StoredChunk(
        "stray-0",
        "docs/ghost.md",
        0,
        0,
        9,
        "宿泊費の上限は幽霊",
        "宿泊費の上限は幽霊",
        source="docs/ghost.md",
    )
    opened = open_store(store, db, info)  # as a killed run would leave them: rows, no manifest entry
    try:
        reader = Searcher(db)
        query = reader.embedder.embed(["宿泊費の上限は幽霊"], "query")
        reader.close()
        opened.add([stray], query)
    finally:
        opened.close()
    manifest = Manifest(db / "manifest.sqlite")
    manifest.set_meta("clean", False)  # a run in progress (or killed): its rows may be ahead of the manifest
    manifest.close()
    searcher = Searcher(db)
    try:
        for mode in ("dense", "bm25", "hybrid"):
            hits = searcher.search("宿泊費の上限は幽霊", k=20, mode=mode)
            assert hits and all(h.chunk.doc_id != "docs/ghost.md" for h in hits), mode
    finally:
        searcher.close()
    code, out = run("check", "--db", str(db))
    assert code == 1 and "no manifest entry" in out, out
    code, out = run("check", "--db", str(db), "--repair")
    assert code == 0, out
    code, out = run("check", "--db", str(db))
    assert code == 0 and "healthy" in out, out


def test_the_store_needs_neither_lancedb_nor_the_index_extra(
    tmp_path: Path, store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "lancedb", None)  # `import lancedb` raises ImportError
    docs, db = write_docs(tmp_path / "docs"), tmp_path / "db"
    assert index(docs, db, "--store", store, "--embedder", "hash")["added"] == 3
    code, out = run("search", "宿泊費の上限", "--db", str(db), "-k", "1")
    assert code == 0 and "12,000円" in out, out


def test_a_second_store_kind_or_a_uri_for_a_local_index_is_refused(tmp_path: Path, store: str) -> None:
    docs, db = write_docs(tmp_path / "docs"), tmp_path / "db"
    index(docs, db, "--store", store, "--embedder", "hash")
    other = "qdrant" if store == "milvus" else "milvus"
    code, out = run("index", str(docs), "--db", str(db), "--store", other, "--quiet")
    assert code == 2 and f"uses the {store} store" in out
    code, out = run("index", str(docs), "--db", str(db), "--store-uri", "http://127.0.0.1:9", "--quiet")
    assert code == 2 and "in the index directory" in out


def test_odd_names_round_trip_and_filter_exactly(tmp_path: Path, store: str) -> None:
    """Names a filter language could misread: quotes, a backslash, a line break, an injection attempt."""
    from kireme.index.store import open_store

    names = ["O'Reilly.md", 'say "hi".md', "a\\b.txt", "two\nlines.txt", 'x" or doc_id != "', "", "規程.md"]
    rows = [
        StoredChunk(f"id-{i}", f"doc-{i}", 0, 0, 2, "本文", "本文", source=name, title=name)
        for i, name in enumerate(names)
    ]
    vectors = np.eye(len(rows), 8, dtype=np.float32)
    info = {"embedder": "hash:8", "dimension": 8, "normalized": True}
    opened = open_store(store, tmp_path, info)
    try:
        opened.add(rows, vectors)
        for row in rows:
            for where in ({"source": row.source}, {"title": row.title}, {"doc_id": row.doc_id}):
                assert [c.id for c in opened.chunks(where)] == [row.id], where
                assert [h.chunk.id for h in opened.search(vectors[0], 10, where)] == [row.id], where
        opened.delete_documents(["doc-0", "doc-4"])
        assert opened.count() == len(rows) - 2
        assert {c.source for c in opened.chunks()} == set(names) - {names[0], names[4]}
    finally:
        opened.close()


# -- servers: none is reachable here, so what is checked is how a failure reads -------------------------


@pytest.mark.parametrize("command", ["index", "search", "check"])
def test_an_unreachable_server_is_one_line_naming_the_uri(tmp_path: Path, store: str, command: str) -> None:
    docs, db = write_docs(tmp_path / "docs"), tmp_path / "db"
    uri = "http://127.0.0.1:9"  # nothing listens there: refused at once
    started = time.monotonic()
    if command == "index":
        code, out = run("index", str(docs), "--db", str(db), "--store", store, "--store-uri", uri, "--quiet")
        assert code == 1
        # nothing was recorded: the same command with the right URI later starts afresh
        assert Manifest(db / "manifest.sqlite").get_meta("store_uri") is None
    else:
        index(docs, db, "--store", store, "--embedder", "hash")
        manifest = Manifest(db / "manifest.sqlite")  # as if the index had been made on that server
        manifest.set_meta("store_uri", uri)
        manifest.set_meta("store_dir", f"{store}-0123abcd")
        manifest.close()
        if command == "search":
            code, out = run("search", "宿泊費", "--db", str(db))
            assert code == 1
        else:
            code, out = run("check", "--db", str(db))
            assert code == 1 and "--rebuild" not in out  # the server is down, the index is not damaged
    assert time.monotonic() - started < 30
    errors = [line for line in out.splitlines() if uri in line]
    assert len(errors) == 1 and errors[0].startswith(f"kireme: error: {uri} (collection kireme_{store}_"), out
    assert "cannot be reached" in errors[0] and "check the URI" in errors[0], out
    assert "Traceback" not in out


def test_a_server_uri_with_credentials_or_of_another_kind_is_a_usage_error(
    tmp_path: Path, store: str
) -> None:
    docs = write_docs(tmp_path / "docs")
    base = ["index", str(docs), "--db", str(tmp_path / "db"), "--store", store, "--quiet"]
    code, out = run(*base, "--store-uri", "http://admin:s3cret@127.0.0.1:9")
    assert code == 2 and "s3cret" not in out and ("MILVUS_TOKEN" in out or "QDRANT_API_KEY" in out)
    code, out = run(*base, "--store-uri", "s3://bucket/prefix")
    assert code == 2 and "http(s) URL" in out
    code, out = run(
        "index", str(docs), "--db", str(tmp_path / "c"), "--store", "chroma", "--store-uri", "http://x"
    )
    assert code == 2 and "needs the lancedb store" in out


def test_a_missing_extra_is_one_line_naming_it(
    tmp_path: Path, store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = write_docs(tmp_path / "docs")
    package = EXTRAS[store][0]
    monkeypatch.setitem(sys.modules, package, None)  # makes ``import package`` raise ImportError
    code, out = run("index", str(docs), "--db", str(tmp_path / "db"), "--store", store, "--embedder", "hash")
    assert code == 1
    assert out.strip().splitlines()[-1].startswith("kireme: error: ")
    assert f"pip install 'kireme[{store}]'" in out and "Traceback" not in out


@pytest.mark.slow
def test_a_local_engine_held_by_another_process_is_one_line(tmp_path: Path, store: str) -> None:
    docs, db = write_docs(tmp_path / "docs"), tmp_path / "db"
    index(docs, db, "--store", store, "--embedder", "hash")
    holder = (
        "import sys, time\n"
        "from kireme.index.search import Searcher\n"
        "searcher = Searcher(sys.argv[1])\n"  # as `kireme serve` keeps it open
        "print('open', flush=True)\n"
        "time.sleep(60)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", holder, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "open"
        code, out = run("index", str(docs), "--db", str(db), "--quiet")
    finally:
        process.kill()
        process.wait()
    lines = [line for line in out.splitlines() if line.strip()]
    assert code == 1 and len(lines) == 1 and lines[0].startswith("kireme: error: "), out
    assert "one process at a time" in lines[0] and "--store-uri http://host:" in lines[0], out
    assert index(docs, db)["unchanged"] == 3  # once it is gone, the index is as it was


# -- crash safety ---------------------------------------------------------------------------------------


def _entries(db: Path) -> int:
    try:
        with sqlite3.connect(db / "manifest.sqlite", timeout=1) as connection:
            return int(connection.execute("SELECT count(*) FROM documents").fetchone()[0])
    except sqlite3.Error:
        return 0


FILES = 200


@pytest.mark.slow
def test_a_killed_run_shows_only_whole_documents_and_the_next_run_finishes(
    tmp_path: Path, store: str
) -> None:
    docs, db = tmp_path / "docs", tmp_path / "db"
    docs.mkdir()
    for i in range(FILES):  # several batches of documents: the kill lands between two commits
        (docs / f"memo-{i:03d}.txt").write_text(
            f"第{i}回の議事録。予算は{i}百万円で承認された。\n" * 60, "utf-8"
        )
    command = [sys.executable, "-m", "kireme.cli", "index", str(docs), "--db", str(db), "--store", store]
    command += ["--embedder", "hash", "--quiet", "--format", "json"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KIREME_", "OPENAI_"))}
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 120
        while _entries(db) == 0 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    written = _entries(db)
    if written == FILES:
        pytest.skip("the run finished before it could be killed")
    searcher = Searcher(db)  # rows the manifest does not name are leftovers: never returned
    try:
        hits = searcher.search("予算は承認された", k=500, mode="dense")
        assert hits and {h.chunk.doc_id for h in hits} <= searcher.documents
        assert len(searcher.documents) == written
    finally:
        searcher.close()
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["added"] == FILES - written and summary["unchanged"] == written
    code, out = run("check", "--db", str(db))
    assert code == 0 and "healthy" in out, out
    rows = every_chunk(db)
    assert len({c.doc_id for c in rows}) == FILES and len(rows) == len({c.id for c in rows})


def test_a_local_qdrant_store_that_cannot_be_read_names_the_rebuild(tmp_path: Path) -> None:
    """Truncated Qdrant files gave only "…/qdrant cannot be opened (JSONDecodeError…)" in search, check
    and index alike, though ``kireme index --rebuild`` heals it."""
    pytest.importorskip("qdrant_client", reason="the qdrant extra is not installed")
    docs, db = write_docs(tmp_path / "docs"), tmp_path / "db"
    index(docs, db, "--store", "qdrant", "--embedder", "hash:64")
    meta = db / "qdrant" / "meta.json"
    meta.write_bytes(meta.read_bytes()[:20])
    code, out = run("search", "paid leave", "--db", str(db))
    assert code != 0 and "cannot be opened" in out and "kireme index --rebuild PATH..." in out, out
    assert "Traceback" not in out
