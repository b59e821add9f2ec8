"""``kireme index``, ``kireme search`` and ``kireme ask`` as real subprocesses.

Servers are local (stdlib ``http.server`` on 127.0.0.1, started here): an OpenAI-compatible embeddings
endpoint that answers with the hash embedder's vectors, slowly enough that ``kill -9`` can land in the
middle of a run, and a chat completions endpoint that records what it was asked.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.local_server import LocalJsonServer, Reply
from tests.test_index import DOCS

from kireme.embed.hashed import HashedNgramEmbedder
from kireme.index.ingest import IndexLock, entry_config_hash
from kireme.index.manifest import Manifest
from kireme.index.search import Searcher
from kireme.index.store import open_store
from kireme.length import Tokens
from kireme.load.registry import iter_paths, load
from kireme.strategies import make_chunker

# every test runs `kireme index/search/ask` as subprocesses (kill -9 at any moment, a second writer...)
pytestmark = pytest.mark.slow

ENV_PREFIXES = ("KIREME_", "OPENAI_")
PROXIES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment without chat/embedding settings or proxies (a proxy would swallow 127.0.0.1)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES) and k.lower() not in PROXIES}
    env["KIREME_CACHE_DIR"] = str(tmp_path / "user-cache")
    env.update(extra)
    return env


def kireme(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kireme.cli", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=timeout,
    )


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("kireme: error:")]


# ------------------------------------------------------------------------------------------ servers


class EmbedServer(LocalJsonServer):
    """``/v1/embeddings`` with `HashedNgramEmbedder` (dimension 64) vectors, ``delay`` seconds a request."""

    def __init__(self, delay: float) -> None:
        self.embedder = HashedNgramEmbedder(64)
        self.delay = delay
        self.requests = 0
        self.answered = 0
        self.texts = 0
        self._lock = threading.Lock()
        super().__init__(self._handle)

    def _handle(self, path: str, headers: dict[str, str], body: Any) -> Reply:
        if path != "/v1/embeddings":
            return 404, {"error": {"message": f"no route {path}"}}, None
        with self._lock:
            self.requests += 1
            self.texts += len(body["input"])
        time.sleep(self.delay)
        vectors = self.embedder.embed(body["input"])
        with self._lock:
            self.answered += 1
        data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
        return 200, {"object": "list", "data": data, "model": body["model"]}, None


ANSWER = "日帰り出張の日当は1,000円です [1]。"


class ChatServer(LocalJsonServer):
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        super().__init__(self._handle)

    def _handle(self, path: str, headers: dict[str, str], body: Any) -> Reply:
        self.bodies.append(body)
        if path != "/v1/chat/completions":
            return 404, {"error": {"message": f"no route {path}"}}, None
        message = {"role": "assistant", "content": ANSWER}
        return 200, {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}, None


@pytest.fixture()
def embed_server() -> Iterator[EmbedServer]:
    server = EmbedServer(delay=0.1)
    yield server
    server.close()


@pytest.fixture()
def chat_server() -> Iterator[ChatServer]:
    server = ChatServer()
    yield server
    server.close()


# ------------------------------------------------------------------------------------- index checks


def manifest_count(db: Path) -> int:
    path = db / "manifest.sqlite"
    if not path.exists():
        return 0
    try:
        con = sqlite3.connect(path, timeout=5)
        try:
            return con.execute("SELECT count(*) FROM documents").fetchone()[0]
        finally:
            con.close()
    except sqlite3.OperationalError:  # the table is not created yet
        return 0


def check_index(db: Path, query_embedder: HashedNgramEmbedder | None = None) -> dict[str, Any]:
    """Open the index like a reader and check it is consistent; returns what it holds.

    Every manifest document must have exactly its recorded number of rows and no chunk id may appear
    twice. Rows of documents without an entry (leftovers of a killed run) are allowed and counted:
    the next run deletes them.
    """
    manifest = Manifest(db / "manifest.sqlite")
    try:
        entries = manifest.documents()
        kind = manifest.get_meta("store")
        info = manifest.get_meta("embedder")
    finally:
        manifest.close()
    if kind is None:
        assert not entries
        return {"entries": entries, "rows": [], "leftovers": set()}
    store = open_store(kind, db, info)
    try:
        rows = list(store.chunks())
        assert store.count() == len(rows)
    finally:
        store.close()
    duplicates = [i for i, n in Counter(c.id for c in rows).items() if n > 1]
    assert duplicates == []
    per_doc = Counter(c.doc_id for c in rows)
    for doc_id, entry in entries.items():
        assert per_doc.get(doc_id, 0) == entry.chunks, doc_id
    leftovers = set(per_doc) - set(entries)
    searcher = Searcher(db, embedder=query_embedder or HashedNgramEmbedder(64))
    try:  # a reader sees the committed documents only, never the leftovers
        for mode in ("dense", "bm25", "hybrid"):
            hits = searcher.search("規程の出張と休暇", 20, mode)
            assert all(h.chunk.doc_id in entries for h in hits), mode
            assert bool(hits) == bool(entries) or mode == "bm25", mode
    finally:
        searcher.close()
    return {"entries": entries, "rows": rows, "leftovers": leftovers}


# --------------------------------------------------------------------------------------- kill -9


SECTION = "第{n}条 {topic}について、担当部署は申請書を受理した日から{days}日以内に回答する。{extra}\n"
TOPICS = ["出張", "経費", "休暇", "在宅勤務", "備品", "研修", "採用", "福利厚生"]


def make_corpus(folder: Path, n: int = 150) -> list[Path]:
    """``n`` small Markdown files, every tenth long enough to make several chunks."""
    folder.mkdir()
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        sections = 12 if i % 10 == 0 else 1
        body = "".join(
            f"## 第{s + 1}条\n\n"
            + SECTION.format(n=s + 1, topic=topic, days=(i + s) % 30 + 1, extra="規程番号" + str(i) * 3)
            for s in range(sections)
        )
        (folder / f"規程{i:03d}.md").write_text(f"# 社内規程 {i:03d}（{topic}）\n\n{body}", encoding="utf-8")
    return list(iter_paths(folder))


def test_kill_9_at_any_moment_then_finish(tmp_path: Path, embed_server: EmbedServer) -> None:
    files = make_corpus(tmp_path / "corpus")
    chunker = make_chunker("markdown", max_size=320, unit="tokens")  # the CLI's defaults

    def chunk_counts() -> dict[str, tuple[str, int]]:
        docs = [load(p) for p in files]
        return {d.id: (d.sha256, len(chunker.chunk(d))) for d in docs}

    versions = chunk_counts()  # every version a file had: (doc_id, content hash) -> chunks
    counts = {(d, h): n for d, (h, n) in versions.items()}
    assert sum(n for _, n in versions.values()) > len(files)  # some documents have several chunks
    db = tmp_path / "db"
    env = clean_env(tmp_path, KIREME_EMBED_BASE_URL=embed_server.base_url)
    command = [sys.executable, "-m", "kireme.cli", "index", str(tmp_path / "corpus"), "--db", str(db)]
    command += ["--embedder", "http:test", "--format", "json"]

    def kill_when(condition: Callable[[], bool], after: float = 0.0) -> None:
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        try:
            while not condition():
                assert process.poll() is None, process.communicate()[1].decode()
                assert time.monotonic() < deadline, "the kill moment never came"
                time.sleep(0.002)
            time.sleep(after)
            process.send_signal(signal.SIGKILL)
            process.communicate(timeout=10)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert process.returncode == -signal.SIGKILL  # killed, not finished

    moments: list[tuple[str, Callable[[], bool], float]] = [
        # very early: the dimension probe is in flight, nothing is written yet
        ("probe in flight", lambda: embed_server.requests >= 1, 0.0),
        # the first rows are being committed (the manifest is written document by document after them)
        ("first entries", lambda: manifest_count(db) > 0, 0.0),
        # right after an answer: the batch may be embedding, deleting, adding or recording
        ("after an answer", lambda: embed_server.answered >= answered + 2, 0.03),
        ("later entries", lambda: manifest_count(db) > indexed + 10, 0.005),
    ]
    seen: list[tuple[str, int, int]] = []
    for name, condition, after in moments:
        answered, indexed = embed_server.answered, manifest_count(db)
        kill_when(condition, after)
        found = check_index(db)
        seen.append((name, len(found["entries"]), len(found["leftovers"])))
        for doc_id, entry in found["entries"].items():
            assert entry.chunks == counts[doc_id, entry.content_hash]
        if name == "first entries":  # edit indexed files: the next runs replace their rows
            for doc_id in sorted(found["entries"])[:2]:
                path = Path(doc_id)
                path.write_text(
                    path.read_text(encoding="utf-8") * 2 + "追記：改定しました。\n", encoding="utf-8"
                )
            versions = chunk_counts()
            counts.update({(d, h): n for d, (h, n) in versions.items()})
    expected = {d: n for d, (_, n) in versions.items()}
    assert seen[-1][1] < len(files), seen  # every kill interrupted a run that had work left

    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["documents"] == len(files) and summary["failed"] == 0
    assert summary["added"] + summary["updated"] + summary["unchanged"] == len(files)
    found = check_index(db)
    assert found["leftovers"] == set()
    # each file once, complete, in its last version
    assert {d: (e.content_hash, e.chunks) for d, e in found["entries"].items()} == versions
    assert len(found["rows"]) == sum(expected.values())
    options = {"encoding": None, "format": None, "outputs": "none"}  # the CLI's defaults
    assert {e.config_hash for e in found["entries"].values()} == {
        entry_config_hash(chunker.config_hash, options)
    }

    requests = embed_server.requests
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    assert summary["unchanged"] == len(files)
    assert summary["texts_embedded"] == summary["chunks_written"] == summary["added"] == 0
    assert embed_server.requests == requests  # not one request: even the probe came from the cache
    print("kill moments (name, complete documents, leftover documents):", seen)


# ------------------------------------------------------------------------------- Ctrl-C and SIGTERM

HIDE_CURSOR, SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def run_on_a_terminal(
    command: list[str], env: dict[str, str], signum: int, when: Callable[[], bool]
) -> tuple[int, float, str, str]:
    """Run ``command`` with stderr on a pseudo-terminal (so the progress display draws), send ``signum``
    once ``when()`` holds; returns the exit code, the seconds from the signal to the exit, the raw
    terminal output and stdout."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL
    )
    os.close(slave)
    seen = bytearray()

    def read() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: the child closed the terminal
                return
            if not data:
                return
            seen.extend(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while not when():
            assert process.poll() is None, seen.decode("utf-8", "replace")[-1500:]
            assert time.monotonic() < deadline, "the moment to send the signal never came"
            time.sleep(0.01)
        sent = time.monotonic()
        process.send_signal(signum)
        stdout, _ = process.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        reader.join(timeout=5)
        os.close(master)
    return process.returncode, took, seen.decode("utf-8", "replace"), stdout.decode("utf-8")


def test_ctrl_c_and_sigterm_stop_promptly_say_what_was_kept_and_restore_the_cursor(tmp_path: Path) -> None:
    """SIGINT (exit 130) and SIGTERM (exit 143) stop a run within seconds, between or inside batches: one
    line says how many documents this run committed, the cursor the progress display hid is shown again,
    and the next run continues from there."""
    files = make_corpus(tmp_path / "corpus")
    server = EmbedServer(delay=1.0)  # every request in flight for a second: the signal lands mid-run
    try:
        db = tmp_path / "db"
        env = clean_env(tmp_path, KIREME_EMBED_BASE_URL=server.base_url, TERM="xterm-256color")
        env.pop("TTY_COMPATIBLE", None)
        command = [sys.executable, "-m", "kireme.cli", "index", str(tmp_path / "corpus"), "--db", str(db)]
        command += ["--embedder", "http:test", "--format", "json"]
        committed = 0
        for signum, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
            before = manifest_count(db)
            rc, took, screen, stdout = run_on_a_terminal(
                command, env, signum, lambda before=before: manifest_count(db) > before
            )
            text = ANSI.sub("", screen).replace("\r", "")
            lines = [line.strip() for line in text.splitlines() if line.startswith("kireme:")]
            tail = text[-1500:]  # what the terminal shows at the end, without the bars' escapes
            assert rc == code, tail
            assert took < 10, f"{took:.1f} s from the signal to the exit"
            kept = manifest_count(db)
            assert before < kept < len(files)  # it stopped in the middle
            assert lines == [
                f"kireme: interrupted: {kept - before} document(s) committed to {db} by this run are kept; "
                "run the same command again to continue from there"
            ], tail
            assert "Aborted" not in text and "Traceback" not in text, tail
            assert stdout == ""
            assert HIDE_CURSOR in screen, "the progress display did not draw: the cursor check checks nothing"
            assert screen.rfind(SHOW_CURSOR) > screen.rfind(HIDE_CURSOR), f"the cursor is left hidden: {tail}"
            committed = kept
            assert len(check_index(db)["entries"]) == kept  # consistent: what the manifest names is whole

        done = kireme(*command[3:], env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        assert summary["unchanged"] == committed
        assert summary["added"] == len(files) - committed and summary["failed"] == 0
        found = check_index(db)
        assert len(found["entries"]) == len(files) and found["leftovers"] == set()
    finally:
        server.close()


# ---------------------------------------------------------------------------------- partial failure


def test_files_with_no_text_are_counted_apart_from_the_documents_that_can_be_found(tmp_path: Path) -> None:
    """An empty and a whitespace-only file were counted among the documents added, with nothing of them
    in the index: the summary says how many of those it added have no text (JSON ``empty``)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "旅費規程.md").write_text(DOCS["旅費規程.md"], encoding="utf-8")
    (folder / "空.md").write_text("", encoding="utf-8")
    (folder / "空白.txt").write_text("  \n\n　\n", encoding="utf-8")
    env = clean_env(tmp_path)
    db = tmp_path / "db"
    result = kireme("index", str(folder), "--db", str(db), "--embedder", "hash", "--format", "json", env=env)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["added"], summary["empty"]) == (3, 2)
    assert "3 added, 0 updated (2 with no text to index)" in result.stderr
    again = kireme("index", str(folder), "--db", str(db), "--embedder", "hash", "--format", "json", env=env)
    assert (json.loads(again.stdout)["unchanged"], json.loads(again.stdout)["empty"]) == (3, 0)
    assert "with no text" not in again.stderr


def write_mixed(folder: Path) -> None:
    folder.mkdir()
    (folder / "a_旅費規程.md").write_text(DOCS["旅費規程.md"], encoding="utf-8")
    (folder / "b_壊れた.ipynb").write_text('{"cells": [', encoding="utf-8")
    (folder / "c_就業規則.md").write_text(DOCS["就業規則.md"], encoding="utf-8")
    (folder / "d_バイナリ.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01")
    (folder / "e_よくある質問.md").write_text(DOCS["よくある質問.md"], encoding="utf-8")


def test_broken_files_are_reported_and_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    write_mixed(folder)
    env = clean_env(tmp_path)
    db = tmp_path / "db"
    result = kireme("index", str(folder), "--db", str(db), "--embedder", "hash", "--format", "json", env=env)
    assert result.returncode == 3, result.stderr
    errors = error_lines(result.stderr)
    assert len(errors) == 2 and "Traceback" not in result.stderr
    assert "b_壊れた.ipynb" in errors[0] and "d_バイナリ.md" in errors[1]
    summary = json.loads(result.stdout)
    assert set(summary) == {
        "documents", "added", "updated", "removed", "unchanged", "failed", "chunks_written", "texts_embedded",
        "empty", "paths_not_read",
    }  # fmt: skip
    assert (summary["added"], summary["failed"], summary["empty"]) == (3, 2, 0)
    assert summary["documents"] == summary["added"] + summary["failed"]
    hits = kireme("search", "在宅勤務は週何日まで？", "--db", str(db), "-k", "1", env=env)
    assert hits.returncode == 0 and "週3日" in json.loads(hits.stdout)["text"]

    # --fail-fast stops at the first broken file, and a prune after an early stop forgets nothing
    fast = kireme(
        "index", str(folder), "--db", str(db), "--embedder", "hash", "--format", "json", "--fail-fast", "--prune",
        env=env,
    )  # fmt: skip
    assert fast.returncode == 3
    assert len(error_lines(fast.stderr)) == 1
    summary = json.loads(fast.stdout)
    assert (summary["unchanged"], summary["failed"], summary["removed"]) == (1, 1, 0)
    assert len(check_index(db, HashedNgramEmbedder(512))["entries"]) == 3

    fresh = tmp_path / "fresh"
    fast = kireme("index", str(folder), "--db", str(fresh), "--embedder", "hash", "--fail-fast", env=env)
    assert fast.returncode == 3 and len(error_lines(fast.stderr)) == 1
    assert [Path(d).name for d in check_index(fresh, HashedNgramEmbedder(512))["entries"]] == [
        "a_旅費規程.md"
    ]


# -------------------------------------------------------------------------------------------- lock


def test_second_writer_fails_cleanly_or_waits(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "就業規則.md").write_text(DOCS["就業規則.md"], encoding="utf-8")
    db = tmp_path / "db"
    db.mkdir()
    env = clean_env(tmp_path)
    args = ("index", str(folder), "--db", str(db), "--embedder", "hash", "--format", "json")
    with IndexLock(db):
        busy = kireme(*args, env=env)
    assert busy.returncode == 2
    assert "another kireme process" in busy.stderr and "--wait" in busy.stderr
    assert "Traceback" not in busy.stderr and busy.stdout == ""
    assert not (db / "manifest.sqlite").exists()

    # the lock is taken and released by one thread (file locks are per thread)
    held, hold_for = threading.Event(), 2.5
    released_at: list[float] = []

    def hold() -> None:
        with IndexLock(db):
            held.set()
            time.sleep(hold_for)
            released_at.append(time.monotonic())

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    try:
        waited = kireme(*args, "--wait", "10", env=env)
        finished = time.monotonic()
    finally:
        holder.join()
    assert waited.returncode == 0, waited.stderr
    assert finished >= released_at[0]
    assert json.loads(waited.stdout)["added"] == 1


# ------------------------------------------------------------------------------------ search and ask


@pytest.fixture(scope="module")
def company(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """The company documents in a hash-embedder index built by the CLI (chunks of at most 80 tokens)."""
    root = tmp_path_factory.mktemp("company")
    folder = root / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    db = root / "db"
    env = clean_env(root)
    result = kireme("index", str(folder), "--db", str(db), "--embedder", "hash", "--max-size", "80", env=env)
    assert result.returncode == 0, result.stderr
    return folder, db, env


SEARCH_FIELDS = {"score", "id", "doc_id", "start", "end", "headings", "text", "source", "title", "metadata"}


def test_search_jsonl_and_filters(company: tuple[Path, Path, dict[str, str]]) -> None:
    folder, db, env = company
    result = kireme("search", "日帰り出張の日当はいくら？", "--db", str(db), "-k", "3", env=env)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) == 3
    for row in rows:
        assert set(row) == SEARCH_FIELDS
        text = (folder / Path(row["source"]).name).read_text(encoding="utf-8")
        if row["source"].endswith(".md"):
            assert text[row["start"] : row["end"]] == row["text"]
    assert "1,000円" in rows[0]["text"] and rows[0]["headings"][-1] == "第2条 日当"
    assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)

    source = (folder / "就業規則.md").as_posix()
    for mode in ("hybrid", "bm25", "dense"):
        only = kireme(
            "search", "日帰り出張の日当", "--db", str(db), "-k", "5", "--mode", mode, "--filter", f"source={source}",
            env=env,
        )  # fmt: skip
        assert only.returncode == 0, only.stderr
        sources = {json.loads(line)["source"] for line in only.stdout.splitlines()}
        assert sources <= {source}, mode

    bad = kireme("search", "日当", "--db", str(db), "--filter", "bad=1", env=env)
    assert bad.returncode == 2 and "KEY=VALUE" in bad.stderr and "Traceback" not in bad.stderr

    missing = kireme("search", "日当", "--db", str(db.parent / "nowhere"), env=env)
    assert missing.returncode == 2
    assert missing.stderr.strip().count("\n") == 0 and missing.stderr.startswith("kireme: error:")
    assert "kireme index" in missing.stderr and "Traceback" not in missing.stderr
    assert not (db.parent / "nowhere").exists()  # searching does not create an index


def _context_of(prompt: str) -> str:
    return prompt.split("# 資料\n", 1)[1].split("\n\n# 質問\n", 1)[0]


def _budget_line(stderr: str) -> tuple[int, int]:
    line = next(x for x in stderr.splitlines() if x.startswith("kireme: context "))
    used, budget = line.split()[2].split("/")
    return int(used), int(budget)


@pytest.mark.parametrize("budget", [None, 200])
def test_ask_show_prompt_without_a_model(
    company: tuple[Path, Path, dict[str, str]], budget: int | None
) -> None:
    _, db, env = company
    question = "日帰り出張の日当はいくら？"
    extra = ["--budget", str(budget)] if budget else []
    result = kireme("ask", question, "--db", str(db), "--show-prompt", *extra, env=env)
    assert result.returncode == 0, result.stderr
    assert "no chat model configured" in result.stderr and "KIREME_CHAT_BASE_URL" in result.stderr
    prompt, _, _ = result.stdout.partition("\n" + "─" * 40)
    tokens = Tokens()
    context = _context_of(prompt)
    used, shown_budget = _budget_line(result.stderr)
    assert tokens(context) == used <= shown_budget
    if budget:
        assert shown_budget == budget
    assert tokens(prompt) + 512 <= 4096
    assert question in prompt and "1,000円" in context
    assert "[1] " in context


def test_ask_a_local_chat_server(company: tuple[Path, Path, dict[str, str]], chat_server: ChatServer) -> None:
    _, db, env = company
    env = {**env, "KIREME_CHAT_BASE_URL": chat_server.base_url, "KIREME_CHAT_MODEL": "local-test"}
    question = "日帰り出張の日当はいくら？"
    result = kireme("ask", question, "--db", str(db), "-k", "3", env=env)
    assert result.returncode == 0, result.stderr
    [body] = chat_server.bodies
    assert body["model"] == "local-test" and body["max_tokens"] == 512
    [message] = body["messages"]
    assert message["role"] == "user"
    assert question in message["content"] and "| 日帰り出張 | 1,000円 |" in message["content"]
    answer, _, sources = result.stdout.partition("\n\n")
    assert answer == ANSWER
    lines = sources.splitlines()
    assert lines and all(line.startswith(f"[{i}] ") for i, line in enumerate(lines, start=1))
    source, where = lines[0].split(" — ")  # the file, then where in it its passages lie
    assert source.endswith("旅費規程.md") and where == "旅費規程"
    # a filter no document matches: nothing to pass, so nothing is asked (it sent an empty context)
    missed = kireme("ask", question, "--db", str(db), "--filter", "source=旅費.md", env=env)
    assert missed.returncode == 1 and "nothing was asked" in missed.stderr
    assert "no document has source=旅費.md" in missed.stderr  # the hint search gives
    assert len(chat_server.bodies) == 1


def test_search_refuses_a_query_embedder_other_than_the_index_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An http index searched with KIREME_EMBED_BASE_URL pointing elsewhere (in-process, fast)."""
    from kireme.embed.http import OpenAIEmbedder
    from kireme.errors import IndexMismatchError
    from kireme.index.embedders import cached
    from kireme.index.ingest import Ingestor, ingest_paths

    for name in (*PROXIES, *(p.upper() for p in PROXIES)):
        monkeypatch.delenv(name, raising=False)
    server = EmbedServer(delay=0)
    try:
        folder = tmp_path / "docs"
        folder.mkdir()
        (folder / "旅費規程.md").write_text(DOCS["旅費規程.md"], encoding="utf-8")
        db = tmp_path / "db"
        embedder = cached(OpenAIEmbedder(model="test", base_url=server.base_url), db)
        with Ingestor(db, make_chunker("markdown", max_size=60, unit="tokens"), embedder) as ingestor:
            ingest_paths(ingestor, list(iter_paths(folder)))
        monkeypatch.setenv("KIREME_EMBED_BASE_URL", server.base_url)
        searcher = Searcher(db)
        assert any("1,000円" in h.chunk.text for h in searcher.search("日帰り出張の日当", 3, "dense"))
        searcher.close()
        requests = server.requests
        monkeypatch.setenv("KIREME_EMBED_BASE_URL", "http://127.0.0.1:9/v1")  # another server
        searcher = Searcher(db)
        with pytest.raises(IndexMismatchError, match="KIREME_EMBED_BASE_URL"):
            searcher.search("日帰り出張の日当", 3, "hybrid")
        assert searcher.search("日帰り出張の日当", 3, "bm25")  # keywords need no embedder
        searcher.close()
        assert server.requests == requests
    finally:
        server.close()


# ------------------------------------------------------------------------------------------- titles


def test_every_file_reaches_the_index_with_a_title_and_title_is_configuration(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "出張旅費規程.txt").write_text(
        "第1条（目的）\nこの規程は、社員が出張する場合の旅費について定める。\n\n"
        "第2条（日当）\n日当は、１日につき２，０００円とする。日帰り出張の場合は、１，０００円とする。\n",
        encoding="utf-8",
    )
    (folder / "remote.md").write_text(
        "---\ntitle: 在宅勤務規程\n---\n\n## 第1条 対象\n\n入社6か月以上の社員は、週3日まで在宅勤務できる。\n",
        encoding="utf-8",
    )
    db = tmp_path / "db"
    env = clean_env(tmp_path)

    def index(*extra: str) -> dict[str, Any]:
        result = kireme("index", str(folder), "--db", str(db), "--embedder", "hash", "--max-size", "80",
                        "--format", "json", *extra, env=env)  # fmt: skip
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def titles() -> dict[str, set[str]]:
        found = check_index(db, HashedNgramEmbedder(512))  # the CLI's hash embedder
        out: dict[str, set[str]] = {}
        for row in found["rows"]:
            out.setdefault(Path(row.doc_id).name, set()).add(row.title)
        return out

    first = index()
    assert first["added"] == 2 and first["failed"] == 0
    assert titles() == {"出張旅費規程.txt": {"出張旅費規程"}, "remote.md": {"在宅勤務規程"}}
    hits = kireme("search", "日帰り出張の日当", "--db", str(db), "-k", "1", "--mode", "bm25", env=env)
    assert hits.returncode == 0, hits.stderr
    assert json.loads(hits.stdout.splitlines()[0])["title"] == "出張旅費規程"

    given = index("--title", "総務部 規程集")  # part of the configuration: both files again
    assert (given["updated"], given["unchanged"]) == (2, 0) and given["texts_embedded"] > 0
    assert titles() == {"出張旅費規程.txt": {"総務部 規程集"}, "remote.md": {"総務部 規程集"}}
    again = index("--title", "総務部 規程集")
    assert (again["unchanged"], again["texts_embedded"]) == (2, 0)
    back = index()  # without --title: each file's own title again (its vectors from the cache)
    assert back["updated"] == 2 and back["texts_embedded"] == 0
    assert titles() == {"出張旅費規程.txt": {"出張旅費規程"}, "remote.md": {"在宅勤務規程"}}
    bad = kireme("index", str(folder), "--db", str(db), "--title", "", env=env)
    assert bad.returncode == 2 and "--context none" in bad.stderr and "Traceback" not in bad.stderr


# ------------------------------------------------------------------------------------ --keywords


def test_keywords_option_is_recorded_and_a_missing_analyser_names_the_extra(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    env = clean_env(tmp_path)
    # where the analyser is not installed (simulated: an importable sudachipy that fails as a missing one)
    fake = tmp_path / "no-sudachi" / "sudachipy"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('simulated: not installed')\n", encoding="utf-8")
    without = {**env, "PYTHONPATH": os.pathsep.join([str(fake.parent), env.get("PYTHONPATH", "")])}
    db = tmp_path / "db"
    index = ("index", str(folder), "--db", str(db), "--embedder", "hash", "--max-size", "80")
    refused = kireme(*index, "--keywords", "sudachi", env=without)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "keywords 'sudachi' needs sudachipy: pip install 'kireme[ja]'" in refused.stderr
    assert not (db / "manifest.sqlite").exists()  # refused before the index was created
    assert "--keywords [bigrams|sudachi|sudachi+bigrams]" in kireme("index", "--help", env=env).stdout

    pytest.importorskip("sudachipy")
    pytest.importorskip("sudachidict_core")
    built = kireme(*index, "--keywords", "sudachi", env=env)
    assert built.returncode == 0, built.stderr
    meta = sqlite3.connect(db / "manifest.sqlite").execute("SELECT value FROM meta WHERE key='keywords'")
    assert json.loads(meta.fetchone()[0]) == "sudachi"
    stamp = (db / "bm25" / "generation").read_text(encoding="utf-8")
    found = kireme("search", "宿泊費の上限", "--db", str(db), "--mode", "bm25", "-k", "1", env=env)
    assert found.returncode == 0 and "11,000円" in json.loads(found.stdout)["text"]
    failed = kireme("search", "宿泊費の上限", "--db", str(db), "--mode", "bm25", env=without)
    assert failed.returncode != 0 and "pip install 'kireme[ja]'" in failed.stderr
    assert "Traceback" not in failed.stderr
    # another setting on unchanged files: recorded, and the keyword index rebuilt by the same run
    again = kireme(*index, "--keywords", "bigrams", env=env)
    assert again.returncode == 0 and "0 added, 0 updated, 5 unchanged" in again.stderr
    assert (db / "bm25" / "generation").read_text(encoding="utf-8") != stamp
    found = kireme("search", "宿泊費の上限", "--db", str(db), "--mode", "bm25", "-k", "1", env=without)
    assert found.returncode == 0 and "11,000円" in json.loads(found.stdout)["text"]  # bigrams: no analyser


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_output_that_cannot_be_written_is_one_line(company: tuple[Path, Path, dict[str, str]]) -> None:
    """``> /dev/full`` (a full disk) and a reader that closed its end: one line, never a traceback."""
    _, db, env = company
    for args in (("search", "日当", "--db", str(db)), ("check", "--db", str(db), "--format", "json")):
        with open("/dev/full", "w", encoding="utf-8") as full:
            result = subprocess.run(
                [sys.executable, "-m", "kireme.cli", *args],
                stdout=full,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                timeout=60,
            )
        assert result.returncode == 4, result.stderr  # as kireme index on a full disk
        assert "No space left on device" in result.stderr and "Traceback" not in result.stderr
    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kireme.cli",
            "search",
            "日当",
            "--db",
            str(db),
            "-k",
            "1000",
            "--format",
            "jsonl",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    ) as reader:
        assert reader.stdout is not None and reader.stderr is not None
        reader.stdout.read(10)
        reader.stdout.close()  # `| head -c 10`
        stderr = reader.stderr.read().decode()
    assert reader.returncode == 0 and "Traceback" not in stderr, stderr


def test_an_output_file_in_a_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    text = tmp_path / "a.txt"
    text.write_text("一文目です。二文目です。三文目です。", encoding="utf-8")
    missing = tmp_path / "nowhere" / "page.html"
    result = kireme(
        "inspect", str(text), "--similarity", "bigram", "--html", str(missing), env=clean_env(tmp_path)
    )
    assert result.returncode == 2 and "no such folder" in result.stderr and "Traceback" not in result.stderr


def test_a_file_indexed_under_another_spelling_of_its_path_is_warned_about(tmp_path: Path) -> None:
    """``kireme index docs`` then ``kireme index $PWD/docs``: every chunk twice in the index, silently."""
    folder = tmp_path / "docs"
    folder.mkdir()
    text = "出張の日当は2,000円とする。宿泊費は1泊10,000円を上限とする。"
    (folder / "旅費.txt").write_text(text, encoding="utf-8")
    (folder / "写し.txt").write_text(text, encoding="utf-8")  # the same text in another file: no warning
    env, db = clean_env(tmp_path), tmp_path / "db"
    first = subprocess.run(
        [sys.executable, "-m", "kireme.cli", "index", "docs", "--db", str(db), "--embedder", "hash"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert first.returncode == 0 and "warning" not in first.stderr, first.stderr
    second = subprocess.run(  # from the same folder, with the absolute path
        [sys.executable, "-m", "kireme.cli", "index", str(folder), "--db", str(db)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert second.returncode == 0, second.stderr
    warnings = [line for line in second.stderr.splitlines() if "already indexed as" in line]
    assert len(warnings) == 2 and all("index twice" in w for w in warnings), second.stderr
    assert any(w.endswith("--prune, it removes what the other spelling added)") for w in warnings)


def test_re_chunking_unchanged_files_under_other_settings_is_said(tmp_path: Path) -> None:
    """``kireme index docs --max-size 40`` then ``kireme index docs``: every document was re-chunked (and,
    with the model, re-embedded) at the default size without a word; the index does not remember them."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(3):
        (folder / f"規程{i}.txt").write_text(
            f"第{i}条 宿泊費は一泊一万円とする。日当は二千円とする。", encoding="utf-8"
        )
    env, db = clean_env(tmp_path), tmp_path / "db"
    assert (
        kireme(
            "index", str(folder), "--db", str(db), "--embedder", "hash", "--max-size", "40", env=env
        ).returncode
        == 0
    )
    again = kireme("index", str(folder), "--db", str(db), env=env)
    assert again.returncode == 0 and "3 document(s) re-chunked although unchanged" in again.stderr
    same = kireme("index", str(folder), "--db", str(db), env=env)
    assert "re-chunked" not in same.stderr and "3 unchanged" in same.stderr


def test_indexed_files_that_are_gone_are_said_until_pruned(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(2):
        (folder / f"規程{i}.txt").write_text(f"第{i}条 宿泊費は一泊一万円とする。", encoding="utf-8")
    env, db = clean_env(tmp_path), tmp_path / "db"
    assert kireme("index", str(folder), "--db", str(db), "--embedder", "hash", env=env).returncode == 0
    (folder / "規程1.txt").unlink()
    kept = kireme("index", str(folder), "--db", str(db), env=env)
    assert "1 indexed file(s) under the given folders no longer exist" in kept.stderr
    assert "規程1.txt" in kept.stderr and "--prune" in kept.stderr
    pruned = kireme("index", str(folder), "--db", str(db), "--prune", env=env)
    assert "no longer exist" not in pruned.stderr and "1 removed" in pruned.stderr


def test_an_interrupted_rebuild_says_the_index_is_as_it_was(capsys: pytest.CaptureFixture[str]) -> None:
    """A rebuild is built beside the index and swapped in whole: interrupted, nothing of it is kept, yet
    the line said "N document(s) committed ... run the same command again to continue from there"."""
    from kireme.cli.index import _interrupted
    from kireme.cli.interrupt import Interrupted
    from kireme.index.ingest import IngestSummary

    summary = IngestSummary(added=261)
    with pytest.raises(SystemExit) as stopped:
        _interrupted(Interrupted(signal.SIGINT), summary, Path("db"), staged=True)
    assert stopped.value.code == 130
    said = capsys.readouterr().err
    assert "being built beside db, which is as it was" in said and "starts the build over" in said
    assert "continue from there" not in said


def test_prune_empties_the_index_of_a_folder_left_empty_and_of_a_path_gone(tmp_path: Path) -> None:
    """A folder whose files were all deleted was "no files to read" (exit 2) and nothing was pruned: the
    deleted documents stayed searchable, and no command could remove the last documents of an index."""
    env = clean_env(tmp_path)
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a.txt").write_text("ツチブタの記録は三月に始まった。\n", encoding="utf-8")
    (folder / "b.txt").write_text("経費の締め日は毎月二十日とする。\n", encoding="utf-8")
    db = str(tmp_path / "db")
    assert kireme("index", str(folder), "--db", db, "--embedder", "hash", env=env).returncode == 0
    (folder / "sub" / "a.txt").unlink()
    (folder / "sub").rmdir()
    (folder / "b.txt").unlink()
    pruned = kireme(
        "index", str(folder), "--db", db, "--embedder", "hash", "--prune", "--format", "json", env=env
    )
    assert pruned.returncode == 0, pruned.stderr
    assert json.loads(pruned.stdout)["removed"] == 2
    assert "no files to read; what was indexed from it is pruned" in pruned.stderr
    found = kireme("search", "締め日", "--db", db, "--mode", "bm25", "--format", "jsonl", env=env)
    assert found.stdout == ""
    gone = kireme("index", str(tmp_path / "nowhere"), "--db", db, "--embedder", "hash", "--prune", env=env)
    assert gone.returncode == 0 and "nowhere: no such file or directory; what was indexed" in gone.stderr
    typo = kireme("index", str(tmp_path / "nowhere"), "--db", db, "--embedder", "hash", env=env)
    assert typo.returncode == 2  # without --prune a missing path is still a usage error


def one_rule_folder(tmp_path: Path) -> tuple[dict[str, str], Path, str]:
    """A clean environment, a folder ``docs`` of one short rule (``a.txt``) and an index path ``db``."""
    env = clean_env(tmp_path)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("出張の日当は三千円とする。\n", encoding="utf-8")
    return env, folder, str(tmp_path / "db")


def test_a_path_given_that_is_not_found_is_counted_in_the_summary(tmp_path: Path) -> None:
    env, folder, db = one_rule_folder(tmp_path)
    run = kireme(
        "index", str(folder), str(tmp_path / "nowhere.md"), "--db", db, "--embedder", "hash",
        "--format", "json", env=env,
    )  # fmt: skip
    assert run.returncode == 3  # the rest is indexed; the summary no longer says all went well
    assert "nowhere.md: no such file or directory" in run.stderr
    assert "0 failed, 1 path(s) given not read (above);" in run.stderr
    summary = json.loads(run.stdout)
    assert summary["added"] == 1 and summary["failed"] == 0 and summary["paths_not_read"] == 1
    again = kireme("index", str(folder), "--db", db, "--embedder", "hash", "--format", "json", env=env)
    assert again.returncode == 0 and json.loads(again.stdout)["paths_not_read"] == 0
    assert "not read" not in again.stderr


def test_a_file_that_no_longer_reads_says_its_old_chunks_stay_searchable(tmp_path: Path) -> None:
    env, folder, db = one_rule_folder(tmp_path)
    assert kireme("index", str(folder), "--db", db, "--embedder", "hash", env=env).returncode == 0
    (folder / "a.txt").write_bytes(b"\x00\x01binary\x00" * 50)
    again = kireme("index", str(folder), "--db", db, "--embedder", "hash", "--prune", env=env)
    assert again.returncode == 3, again.stderr
    assert "binary file" in again.stderr and "stays searchable until it reads again" in again.stderr


@pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32", reason="symlinks")
def test_a_link_beside_its_file_is_warned_about_once_with_advice_that_helps(tmp_path: Path) -> None:
    """A symlinked file next to its target gave two warnings, each saying the other was "already indexed"
    (neither was) and advising --prune, which removes nothing: both paths exist under the folder."""
    env = clean_env(tmp_path)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# 規程\n\n日当は三千円とする。\n", encoding="utf-8")
    (folder / "link.md").symlink_to("a.md")
    run = kireme("index", str(folder), "--db", str(tmp_path / "db"), "--embedder", "hash", env=env)
    assert run.returncode == 0, run.stderr
    warnings = [line for line in run.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "are one file on disk" in warnings[0] and "--prune" not in warnings[0]


@pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32", reason="symlinks")
def test_a_link_added_after_its_file_was_indexed_gets_advice_that_helps(tmp_path: Path) -> None:
    """A link added later to a file already indexed: the warning advised --prune, which removed nothing
    (both paths exist). It says to delete the link first; then --prune removes its chunks."""
    env = clean_env(tmp_path)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "vpn.md").write_text("# VPN\n\n接続には社内証明書を使う。\n", encoding="utf-8")
    db = str(tmp_path / "db")
    assert kireme("index", str(folder), "--db", db, "--embedder", "hash", env=env).returncode == 0
    (folder / "vpn-latest.md").symlink_to("vpn.md")
    again = kireme("index", str(folder), "--db", db, env=env)
    warnings = [line for line in again.stderr.splitlines() if "warning" in line]
    assert again.returncode == 0 and len(warnings) == 1, again.stderr
    assert "vpn-latest.md is a link to" in warnings[0] and "delete the link" in warnings[0]
    (folder / "vpn-latest.md").unlink()
    pruned = kireme("index", str(folder), "--db", db, "--prune", env=env)
    assert pruned.returncode == 0 and "1 removed" in pruned.stderr, pruned.stderr


def test_a_moved_folder_indexed_again_says_the_old_entries_stay_and_how_to_remove_them(
    tmp_path: Path,
) -> None:
    """``mv docs manuals; kireme index manuals``: every document was added again (nothing re-embedded: the
    content is the same) and the old ones stayed searchable, without a word. It is said, with the command
    that removes them."""
    env = clean_env(tmp_path)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "vpn.md").write_text("# VPN\n\n接続には社内証明書を使う。\n", encoding="utf-8")
    db = str(tmp_path / "db")
    first = subprocess.run(
        [sys.executable, "-m", "kireme.cli", "index", "docs", "--db", db, "--embedder", "hash"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    folder.rename(tmp_path / "manuals")

    def index(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "kireme.cli", "index", *args, "--db", db]
        return subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)

    moved = index("manuals")
    assert moved.returncode == 0, moved.stderr
    assert "docs/vpn.md is now manuals/vpn.md" in moved.stderr
    assert "run 'kireme index docs --prune' to remove the old ones" in moved.stderr
    pruned = index("docs", "--prune")
    assert pruned.returncode == 0 and "1 removed" in pruned.stderr, pruned.stderr
    again = index("manuals")
    assert again.returncode == 0 and "warning" not in again.stderr, again.stderr


def test_prune_keeps_the_files_another_strategys_run_indexed(tmp_path: Path) -> None:
    """A folder indexed in two runs (its JSON with ``--strategy json``, its documents by the default): a
    ``--prune`` on either run removed the other run's files, which were still there and unchanged."""
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "README.md").write_text("# 在庫API\n\n在庫数は毎朝六時に更新されます。\n", encoding="utf-8")
    (folder / "stock.json").write_text('{"item": "ボルト", "count": 120}\n', encoding="utf-8")
    env, db = clean_env(tmp_path), str(tmp_path / "db")
    base = ("index", str(folder), "--db", db, "--embedder", "hash", "--format", "json")
    assert kireme(*base, "--strategy", "json", env=env).returncode == 0
    assert kireme(*base, env=env).returncode == 0
    for strategy in ((), ("--strategy", "json")):
        pruned = kireme(*base, *strategy, "--prune", env=env)
        assert pruned.returncode == 0, pruned.stderr
        assert json.loads(pruned.stdout)["removed"] == 0, pruned.stdout
    found = kireme("search", "ボルト", "--db", db, "--mode", "bm25", "--format", "jsonl", env=env)
    assert any(json.loads(line)["doc_id"].endswith("stock.json") for line in found.stdout.splitlines())
    (folder / "stock.json").unlink()  # gone: pruned, by either run
    pruned = kireme(*base, "--prune", env=env)
    assert json.loads(pruned.stdout)["removed"] == 1


def test_prune_forgets_a_file_a_folder_replaced_and_keeps_what_lies_outside_the_paths_given(
    tmp_path: Path,
) -> None:
    """A file replaced by a folder of its name kept its chunks for ever (``exists()`` is true of a folder):
    no warning, ``--prune`` removed nothing. And ``kireme index sub/ --prune`` removed a document whose file
    was gone from another folder of the index — a folder not there this once (a drive not mounted) is not
    that run's to forget."""
    env = clean_env(tmp_path)
    notes = tmp_path / "notes"
    (notes / "sub").mkdir(parents=True)
    (notes / "rules.md").write_text("# 規程\n\n宿泊費の上限は一万二千円とする。\n", encoding="utf-8")
    (notes / "sub" / "a.txt").write_text("ツチブタの記録は三月に始まった。\n", encoding="utf-8")
    (notes / "other.txt").write_text("会議室の予約は前日までに行う。\n", encoding="utf-8")
    db = str(tmp_path / "db")
    assert kireme("index", str(notes), "--db", db, "--embedder", "hash", env=env).returncode == 0
    (notes / "rules.md").unlink()
    (notes / "rules.md").mkdir()
    (notes / "rules.md" / "inner.md").write_text("# 内側\n\n本文。\n", encoding="utf-8")
    warned = kireme("index", str(notes), "--db", db, "--embedder", "hash", env=env)
    assert "rules.md" in warned.stderr and "--prune" in warned.stderr, warned.stderr
    (notes / "other.txt").unlink()  # gone from notes/, which the next run does not name
    pruned = kireme(
        "index",
        str(notes / "sub"),
        str(notes / "rules.md"),
        "--db",
        db,
        "--embedder",
        "hash",
        "--prune",
        "--format",
        "json",
        env=env,
    )
    assert pruned.returncode == 0, pruned.stderr
    assert json.loads(pruned.stdout)["removed"] == 1  # the file the folder replaced, not other.txt
    found = kireme("search", "宿泊費の上限", "--db", db, "--mode", "bm25", "--format", "jsonl", env=env)
    assert "一万二千円" not in found.stdout
    kept = kireme("search", "会議室の予約", "--db", db, "--mode", "bm25", "--format", "jsonl", env=env)
    assert "前日まで" in kept.stdout


def test_an_empty_keyword_cache_file_is_damage_check_reports_and_repairs(tmp_path: Path) -> None:
    """An empty ``.npy`` file of the BM25 cache made ``kireme check`` print only ``Aborted!`` (numpy's
    EOFError, which click reads as an abort), and search blamed the vector store."""
    env = clean_env(tmp_path)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("出張の日当は三千円とする。\n", encoding="utf-8")
    db = tmp_path / "db"
    assert kireme("index", str(folder), "--db", str(db), "--embedder", "hash", env=env).returncode == 0
    assert kireme("search", "日当", "--db", str(db), "--mode", "bm25", env=env).returncode == 0
    (db / "bm25" / "data.csc.index.npy").write_bytes(b"")
    checked = kireme("check", "--db", str(db), env=env)
    assert "Aborted" not in checked.stderr and "bm25" in checked.stdout + checked.stderr
    assert "damaged" in checked.stdout + checked.stderr
    repaired = kireme("check", "--db", str(db), "--repair", env=env)
    assert repaired.returncode == 0, repaired.stderr
    found = kireme("search", "日当", "--db", str(db), "--mode", "bm25", "--format", "jsonl", env=env)
    assert found.returncode == 0 and "三千円" in found.stdout
