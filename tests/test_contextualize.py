"""Contextual retrieval: ``kireme index --contextualize`` asks a chat model for a context of each chunk.

The chat model is a local OpenAI-compatible server (stdlib ``http.server`` on 127.0.0.1, in a thread) that
checks every request (path, model, API key, the instruction, the document first and the chunk last) and
answers a deterministic context; it counts the requests it is sent at once. The command runs in-process
through click's ``CliRunner`` with the model-free hash embedder.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from tests.local_server import CHAT_ENV, LocalJsonServer, Reply, unset_proxies
from tests.test_index import DOCS, state

from kireme.cli import cli
from kireme.document import Chunk, Document
from kireme.errors import ChatError, ConfigError
from kireme.index.contextualize import (
    CUT,
    INSTRUCTION_EN,
    INSTRUCTION_JA,
    STOP_AFTER_FAILED_DOCUMENTS,
    ContextCache,
    Contextualizer,
    build_messages,
    clean_context,
    document_window,
    is_japanese,
    with_context,
)
from kireme.index.search import Searcher
from kireme.index.store import StoredChunk
from kireme.load.registry import load
from kireme.strategies import make_chunker

KEY = "sk-context-test-0123456789"
MODEL = "ctx-model"
ENGLISH = """\
# Expense guide

## Meals

Meals during a business trip are reimbursed up to 3,000 yen per day with a receipt.

## Taxis

Taxis may be used after 10 pm or when carrying heavy equipment; write the reason on the claim form.
"""
FILES = {"旅費規程.md": DOCS["旅費規程.md"], "就業規則.md": DOCS["就業規則.md"], "guide.md": ENGLISH}


def chunk_of(user: str) -> str:
    """The chunk's text in a user message (between ``<chunk>`` and ``</chunk>``, the message's end)."""
    head, _, tail = user.rpartition("<chunk>\n")
    assert head and tail.endswith("\n</chunk>"), user[-200:]
    return tail[: -len("\n</chunk>")]


def token(text: str) -> str:
    """A made-up word that only the context of ``text`` holds (so BM25 can find the chunk by it)."""
    return "ctx" + hashlib.sha256(text.encode()).hexdigest()[:10]


def answer_for(text: str) -> str:
    """What the server answers for a chunk: two sentences, with whitespace the client must collapse."""
    return f"  この断片は {token(text)} について述べる。\n\n 二文目。  "


def context_for(text: str) -> str:
    return f"この断片は {token(text)} について述べる。 二文目。"


@dataclass
class ChatServer:
    """Checks and records chat requests; ``fail_on`` (a phrase of a chunk) gets HTTP 500 every time."""

    model: str = MODEL
    delay: float = 0.0
    fail_on: str | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    active: int = 0
    max_active: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: LocalJsonServer | None = None

    def handle(self, path: str, headers: dict[str, str], body: Any) -> Reply:
        with self.lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            self.requests.append(body)
        try:
            if self.delay:
                time.sleep(self.delay)
            problem = self.check(path, headers, body)
            if problem:
                with self.lock:
                    self.problems.append(problem)
                return 400, {"error": {"message": problem}}, None
            text = chunk_of(body["messages"][-1]["content"])
            if self.fail_on is not None and self.fail_on in text:
                return 500, {"error": {"message": "the model crashed"}}, {"Retry-After": "0"}
            message = {"role": "assistant", "content": answer_for(text)}
            return 200, {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}, None
        finally:
            with self.lock:
                self.active -= 1

    def check(self, path: str, headers: dict[str, str], body: Any) -> str | None:
        lowered = {k.lower(): v for k, v in headers.items()}
        if path != "/v1/chat/completions":
            return f"wrong path {path}"
        if lowered.get("authorization") != f"Bearer {KEY}":
            return "wrong or missing API key"
        if body.get("model") != self.model:
            return f"wrong model {body.get('model')!r}"
        messages = body.get("messages")
        if [m.get("role") for m in messages] != ["system", "user"]:
            return "expected a system and a user message"
        if messages[0]["content"] not in (INSTRUCTION_JA, INSTRUCTION_EN):
            return "unexpected instruction"
        user = messages[1]["content"]
        if not user.startswith("<document>\n") or user.index("</document>") > user.index("<chunk>"):
            return "the document must come first, the chunk last"
        if body.get("temperature") != 0 or not body.get("max_tokens"):
            return "temperature 0 and max_tokens expected"
        return None

    def chunks_asked(self) -> list[str]:
        return [chunk_of(r["messages"][-1]["content"]) for r in self.requests]


@pytest.fixture
def chat(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    for name in CHAT_ENV:
        monkeypatch.delenv(name, raising=False)
    unset_proxies(monkeypatch)
    recorder = ChatServer()
    recorder.server = LocalJsonServer(recorder.handle)
    monkeypatch.setenv("KIREME_CHAT_BASE_URL", recorder.server.base_url)
    monkeypatch.setenv("KIREME_CHAT_API_KEY", KEY)
    monkeypatch.setenv("KIREME_CHAT_MODEL", MODEL)
    try:
        yield recorder
    finally:
        recorder.server.close()
    assert recorder.problems == []


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def index(db: Path, *paths: Path, args: Sequence[str] = ()) -> tuple[Result, dict[str, Any]]:
    """``kireme index`` in-process (hash embedder, small chunks, JSON summary); the summary parsed."""
    argv = ["index", *map(str, paths), "--db", str(db), "--embedder", "hash", "--max-size", "60"]
    result = CliRunner().invoke(cli, [*argv, "--format", "json", *args], catch_exceptions=False)
    assert "Traceback" not in result.stderr
    lines = result.stdout.strip().splitlines()
    return result, json.loads(lines[-1]) if lines else {}


def rows_by_id(db: Path) -> dict[str, StoredChunk]:
    return {c.id: c for c in state(db)[1]}


def check_exact(rows: dict[str, StoredChunk]) -> None:
    texts: dict[str, str] = {}
    for c in rows.values():
        text = texts.setdefault(c.source, load(Path(c.source)).text)
        assert text[c.start : c.end] == c.text


# ------------------------------------------------------------------------------------------ the command


def test_contexts_go_in_front_of_embed_text_and_a_rerun_asks_nothing(
    chat: ChatServer, docs: Path, tmp_path: Path
) -> None:
    plain_db, db = tmp_path / "plain", tmp_path / "db"
    result, summary = index(plain_db, docs)  # the model is configured, but not asked without the flag
    assert result.exit_code == 0, result.output
    assert chat.requests == [] and "contextualize" not in summary
    plain = rows_by_id(plain_db)

    result, summary = index(db, docs, args=["--contextualize"])
    assert result.exit_code == 0, result.output
    rows = rows_by_id(db)
    assert rows.keys() == plain.keys()  # the same chunks (ids, text, offsets), only embed_text differs
    check_exact(rows)
    for chunk_id, c in rows.items():
        before = plain[chunk_id]
        assert (c.text, c.start, c.end, c.headings) == (
            before.text,
            before.start,
            before.end,
            before.headings,
        )
        assert c.embed_text == context_for(c.text) + "\n\n" + before.embed_text
    stats = summary["contextualize"]
    assert stats["requests"] == len(chat.requests) == len(rows)
    assert (stats["cached"], stats["chunks"], stats["stopped"]) == (0, len(rows), None)
    assert sorted(chat.chunks_asked()) == sorted(c.text for c in rows.values())
    assert stats["chars_sent"] == sum(len(m["content"]) for r in chat.requests for m in r["messages"])
    assert f"contextualize: {len(rows)} request(s) to {MODEL}" in result.stderr

    # the document comes whole (it is short), first; the chunk last; the instruction in its language
    for request in chat.requests:
        system, user = (m["content"] for m in request["messages"])
        text = chunk_of(user)
        source = next(c.source for c in rows.values() if c.text == text)
        document = load(Path(source)).text
        assert user == f"<document>\n{document}\n</document>\n\n<chunk>\n{text}\n</chunk>"
        assert system == (INSTRUCTION_EN if source.endswith("guide.md") else INSTRUCTION_JA)

    # BM25 (and the lexical hash vectors) see the context: a word only the context holds finds the chunk
    target = next(c for c in rows.values() if "11,000円" in c.text)
    searcher = Searcher(db)
    try:
        for mode in ("bm25", "dense"):
            assert searcher.search(token(target.text), 1, mode)[0].chunk.id == target.id
    finally:
        searcher.close()

    asked = len(chat.requests)
    result, summary = index(db, docs, args=["--contextualize"])
    assert result.exit_code == 0, result.output
    assert len(chat.requests) == asked  # nothing asked again
    assert (summary["unchanged"], summary["texts_embedded"]) == (len(FILES), 0)
    assert summary["contextualize"]["requests"] == 0


def test_turning_it_on_or_off_or_another_model_reindexes(
    chat: ChatServer, docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "db"
    assert index(db, docs)[1]["added"] == len(FILES)
    plain = {i: c.embed_text for i, c in rows_by_id(db).items()}

    _, summary = index(db, docs, args=["--contextualize"])
    assert summary["updated"] == len(FILES) and len(chat.requests) == len(plain)
    contextualized = {i: c.embed_text for i, c in rows_by_id(db).items()}

    _, summary = index(db, docs)  # off again: back to the plain embed_text, nothing asked
    assert summary["updated"] == len(FILES) and len(chat.requests) == len(plain)
    assert {i: c.embed_text for i, c in rows_by_id(db).items()} == plain

    _, summary = index(db, docs, args=["--contextualize"])  # on again: every context from the cache
    assert summary["updated"] == len(FILES) and len(chat.requests) == len(plain)
    assert summary["contextualize"]["cached"] == len(plain)
    assert {i: c.embed_text for i, c in rows_by_id(db).items()} == contextualized

    chat.model = "other-model"
    _, summary = index(db, docs, args=["--contextualize", "--chat-model", "other-model"])
    assert summary["updated"] == len(FILES) and len(chat.requests) == 2 * len(plain)
    assert {r["model"] for r in chat.requests[len(plain) :]} == {"other-model"}


@pytest.mark.parametrize("concurrency", [1, 3])
def test_concurrency_is_the_most_requests_in_flight(
    chat: ChatServer, docs: Path, tmp_path: Path, concurrency: int
) -> None:
    chat.delay = 0.15
    travel = docs / "旅費規程.md"
    args = ["--contextualize", "--contextualize-concurrency", str(concurrency)]
    result, summary = index(tmp_path / "db", travel, args=args)
    assert result.exit_code == 0, result.output
    assert summary["contextualize"]["requests"] >= 4  # enough chunks to fill every slot
    assert chat.max_active == concurrency


def test_the_budget_stops_asking_and_the_next_run_asks_for_the_rest(
    chat: ChatServer, docs: Path, tmp_path: Path
) -> None:
    db = tmp_path / "db"
    result, summary = index(db, docs, args=["--contextualize", "--contextualize-budget", "3"])
    assert result.exit_code == 0, result.output  # a budget is not a failure
    assert len(chat.requests) == 3
    stats = summary["contextualize"]
    assert stats["requests"] == 3 and "budget of 3" in stats["stopped"]
    warnings = [line for line in result.stderr.splitlines() if "stopped asking for contexts" in line]
    assert len(warnings) == 1 and f"{stats['documents_without_context']} document(s)" in warnings[0]
    rows = rows_by_id(db)
    assert summary["added"] == len(FILES)  # every document is indexed, with or without its contexts
    by_source: dict[str, set[bool]] = {}
    for c in rows.values():
        by_source.setdefault(c.source, set()).add(c.embed_text.startswith(context_for(c.text)))
    assert all(len(kinds) == 1 for kinds in by_source.values())  # never half a document
    without = [s for s, kinds in by_source.items() if kinds == {False}]
    assert len(without) == stats["documents_without_context"] >= 1

    result, summary = index(db, docs, args=["--contextualize"])  # no budget: the rest is asked
    assert result.exit_code == 0, result.output
    assert len(chat.requests) == len(rows)  # the 3 answered before are not asked again
    assert summary["updated"] == len(without) and summary["unchanged"] == len(FILES) - len(without)
    assert all(c.embed_text.startswith(context_for(c.text)) for c in rows_by_id(db).values())


def test_budget_zero_uses_the_cache_only(chat: ChatServer, docs: Path, tmp_path: Path) -> None:
    result, summary = index(tmp_path / "db", docs, args=["--contextualize", "--contextualize-budget", "0"])
    assert result.exit_code == 0 and chat.requests == []
    assert summary["contextualize"]["documents_without_context"] == len(FILES)


def test_a_chunk_the_model_fails_for_fails_its_document_only(
    chat: ChatServer, docs: Path, tmp_path: Path
) -> None:
    chat.fail_on = "11,000円"  # one chunk of 旅費規程.md: HTTP 500 at every try
    db = tmp_path / "db"
    result, summary = index(db, docs, args=["--contextualize", "--contextualize-concurrency", "1"])
    assert result.exit_code == 3, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("kireme: error:")]
    assert len(errors) == 1, result.stderr
    assert "旅費規程.md" in errors[0] and "no context for chunk" in errors[0] and "HTTP 500" in errors[0]
    assert KEY not in result.output
    assert (summary["failed"], summary["added"]) == (1, len(FILES) - 1)
    rows = rows_by_id(db)
    assert not any(c.source.endswith("旅費規程.md") for c in rows.values())
    assert all(c.embed_text.startswith(context_for(c.text)) for c in rows.values())
    failed = [r for r in chat.chunks_asked() if "11,000円" in r]
    assert len(failed) == 4  # the client retried the 500 three times

    chat.fail_on = None  # the model is back: the document is indexed, answers before the failure cached
    asked = set(chat.chunks_asked())
    result, summary = index(db, docs, args=["--contextualize"])
    assert result.exit_code == 0 and summary["added"] == 1
    travel = [c for c in rows_by_id(db).values() if c.source.endswith("旅費規程.md")]
    again = chat.chunks_asked()[len(chat.requests) - summary["contextualize"]["requests"] :]
    assert "11,000円" in " ".join(again)
    assert not set(again) & (asked - {t for t in asked if "11,000円" in t})  # answered ones not asked again
    assert summary["contextualize"]["requests"] + summary["contextualize"]["cached"] == len(travel)


def test_usage_errors(chat: ChatServer, docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result, _ = index(tmp_path / "db", docs, args=["--contextualize-budget", "3"])
    assert result.exit_code == 2 and "only apply with --contextualize" in result.stderr
    monkeypatch.delenv("KIREME_CHAT_BASE_URL")
    monkeypatch.delenv("KIREME_CHAT_API_KEY")
    result, _ = index(tmp_path / "db", docs, args=["--contextualize"])
    assert result.exit_code == 2 and "--contextualize needs a chat model" in result.stderr
    assert chat.requests == []


def test_help_teaches_cost_and_exactness() -> None:
    result = CliRunner().invoke(cli, ["index", "--help"])
    text = " ".join(result.output.split())
    for phrase in (
        "--contextualize-concurrency",
        "--contextualize-budget",
        "one request per new or changed chunk",
        "text and offsets stay exact",
        "indexed without context",
    ):
        assert phrase in text, phrase


# ------------------------------------------------------------------------------------------ the library


def test_document_window_rule() -> None:
    assert document_window(500, 100, 200, 1000) == (0, 500)  # fits: the whole document
    length, window = 100_000, 8000
    starts = set()
    for start in range(0, length - 800, 800):  # consecutive chunks of 800 characters
        lo, hi = document_window(length, start, start + 800, window)
        assert hi - lo == window and lo >= 0 and hi <= length
        assert lo <= start and start + 800 <= hi  # the chunk lies inside its window
        assert lo % (window // 4) == 0 or hi == length
        starts.add(lo)
    assert len(starts) < 100_000 // 800 // 2  # neighbours share windows (one cached prefix each)
    assert document_window(length, length - 10, length, window) == (length - window, length)
    with pytest.raises(ConfigError):
        document_window(10, 0, 1, 0)


def test_messages_mark_cuts_and_keep_the_chunk_last() -> None:
    text = "あ" * 5000 + "目的の文。" + "い" * 5000
    doc = Document(text, id="long")
    start = text.index("目的")
    c = Chunk(text[start : start + 5], start, start + 5, "long", 0, "c0", 5, "chars")
    system, user = (m["content"] for m in build_messages(doc, c, window=2000))
    assert system == INSTRUCTION_JA
    assert user.startswith(f"<document>\n{CUT}\n") and f"\n{CUT}\n</document>" in user
    assert user.endswith("<chunk>\n目的の文。\n</chunk>")
    assert len(user) < 2000 + 100
    english = Document("Plain English text about expenses and taxis.", id="en")
    e = Chunk("Plain", 0, 5, "en", 0, "e0", 5, "chars")
    assert build_messages(english, e)[0]["content"] == INSTRUCTION_EN


def test_small_helpers() -> None:
    assert (
        is_japanese("これは日本語の文書です。")
        and not is_japanese("这是中文文件。")
        and not is_japanese("abc")
    )
    assert (
        clean_context("<think>hmm\nlet me see</think>\n  Context: 第3条の\n宿泊費。 ") == "第3条の 宿泊費。"
    )
    assert clean_context("「旅費規程の一部。」") == "旅費規程の一部。"
    assert with_context("", "本文") == "本文" and with_context("文脈。", "本文") == "文脈。\n\n本文"


@dataclass
class FakeModel:
    """A chat model in-process: answers ``context`` (or raises for chunks containing ``fail_on``)."""

    model: str = "fake"
    context: Callable[[str], str] = lambda text: f"文脈 {len(text)}"
    fail_on: str | None = None
    calls: int = 0

    def complete(self, messages: Any, temperature: float = 0, max_tokens: int | None = None) -> str:
        self.calls += 1
        text = chunk_of(messages[-1]["content"])
        if self.fail_on is not None and self.fail_on in text:
            raise ChatError("boom")
        return self.context(text)


def chunks_of(doc: Document) -> list[Chunk]:
    return make_chunker("markdown", max_size=40, unit="tokens").chunk(doc)


def test_cache_survives_a_new_process_and_the_embedder_limit_shortens_the_context(tmp_path: Path) -> None:
    doc = Document(DOCS["旅費規程.md"], id="travel.md")
    chunks = chunks_of(doc)
    model = FakeModel(context=lambda text: "長い説明。" * 200)
    first = Contextualizer(model, ContextCache(tmp_path))
    try:
        out, ok = first.apply(doc, chunks, limit=(300, len))
    finally:
        first.close()
    assert ok and model.calls == len(chunks)
    for before, after in zip(chunks, out, strict=True):
        assert (after.text, after.start, after.end, after.id) == (
            before.text,
            before.start,
            before.end,
            before.id,
        )
        assert len(after.embed_text) <= 300 and after.embed_text.endswith("\n\n" + before.embed_text)
        assert after.embed_text.split("\n\n", 1)[0].endswith("…")
    again = Contextualizer(model, ContextCache(tmp_path))  # a new cache object: read from the file
    try:
        assert again.contexts(doc, chunks) == ["長い説明。" * 200] * len(chunks)
    finally:
        again.close()
    assert model.calls == len(chunks) and again.stats.cached == len(chunks)


def test_the_model_failing_for_documents_in_a_row_stops_asking() -> None:
    model = FakeModel(fail_on="")  # fails for every chunk
    contextualizer = Contextualizer(model, concurrency=1)
    doc = Document(DOCS["就業規則.md"], id="rules.md")
    chunks = chunks_of(doc)
    try:
        for _ in range(STOP_AFTER_FAILED_DOCUMENTS):
            with pytest.raises(ChatError, match=r"no context for chunk \d+ \[\d+:\d+\]: boom"):
                contextualizer.contexts(doc, chunks)
        assert "failed for" in (contextualizer.stats.stopped or "")
        calls = model.calls
        assert contextualizer.contexts(doc, chunks) is None  # no more requests: without context
        assert model.calls == calls and contextualizer.stats.documents_without_context == 1
    finally:
        contextualizer.close()


def test_bad_settings_are_config_errors() -> None:
    for kwargs in ({"concurrency": 0}, {"budget": -1}, {"window": 10}):
        with pytest.raises(ConfigError):
            Contextualizer(FakeModel(), **kwargs)  # type: ignore[arg-type]


def test_index_puts_the_title_in_front_for_strategies_without_headings(tmp_path: Path) -> None:
    """`kireme index -s recursive` (no --context): the document title goes in front of embed_text."""
    page = tmp_path / "guide.html"
    page.write_text(
        "<html><head><title>経費精算ガイド</title></head><body><p>領収書は月末までに提出する。"
        "宿泊費の上限は一泊一万円とする。</p></body></html>",
        encoding="utf-8",
    )
    plain_db, titled_db = tmp_path / "plain", tmp_path / "titled"
    index(titled_db, page, args=["-s", "recursive"])
    index(plain_db, page, args=["-s", "recursive", "--context", "none"])
    titled, plain = list(rows_by_id(titled_db).values()), list(rows_by_id(plain_db).values())
    assert titled and plain
    assert all(c.embed_text.startswith("経費精算ガイド") and c.text in c.embed_text for c in titled)
    assert all(c.embed_text == c.text for c in plain)
    assert "title otherwise" in " ".join(CliRunner().invoke(cli, ["index", "--help"]).output.split())
