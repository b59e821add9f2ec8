"""Question answering pieces: context assembly within a token budget, prompt templates, the chat client.

The chat client is tested against a real HTTP server on 127.0.0.1 (stdlib ``http.server``, no mocks)
that records each request and answers from a queue of canned responses.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.local_server import CHAT_ENV, LocalJsonServer, Reply, unset_proxies

from kireme.errors import ChatError, ConfigError, KiremeError
from kireme.index.chat import DEFAULT_BASE_URL, ChatClient
from kireme.index.context import AssembledContext, Source, assemble_context, default_budget
from kireme.index.prompt import (
    DEFAULT_TEMPLATE_EN,
    DEFAULT_TEMPLATE_JA,
    NOT_FOUND_JA,
    build_prompt,
    context_budget,
    load_template,
)
from kireme.index.store import Hit, StoredChunk
from kireme.length import Tokens

TOKENS = Tokens()
KEY = "sk-test-key-0123456789abcdef"

# ------------------------------------------------------------------------------------------- fixtures


def chunk(
    doc_id: str,
    source: str,
    index: int,
    start: int,
    text: str,
    headings: tuple[str, ...] = (),
    **metadata: Any,
) -> StoredChunk:
    return StoredChunk(
        id=f"{doc_id}-{index}",
        doc_id=doc_id,
        index=index,
        start=start,
        end=start + len(text),
        text=text,
        embed_text=text,
        headings=headings,
        title=source.rsplit("/", 1)[-1],
        source=source,
        format="markdown",
        metadata=metadata,
    )


RYOHI = "規程/旅費.md"
SHINSEI = "規程/出張申請.md"
KAIGAI = "規程/海外出張.md"

PURPOSE = chunk(
    "ryohi", RYOHI, 0, 0,
    "この規程は、役員及び従業員が業務のため出張する場合の旅費について定める。",
    ("第1章 総則", "第1条 目的"),
)  # fmt: skip
LODGING = chunk(
    "ryohi", RYOHI, 4, 120,
    "宿泊費は1泊につき12,000円を上限とする。ただし、東京23区内は14,000円とする。",
    ("第3章 宿泊", "第3条 宿泊費"),
    page=3,
)  # fmt: skip
PER_DIEM = chunk(
    "ryohi", RYOHI, 5, 200,
    "日当は1日につき2,000円とする。",
    ("第3章 宿泊", "第4条 日当"),
    page=3,
)  # fmt: skip
APPLY = chunk(
    "shinsei", SHINSEI, 0, 0,
    "出張の3日前までに出張申請書を提出し、所属長の承認を得ること。",
    ("出張申請の手順",),
)  # fmt: skip
OVERSEAS = chunk(
    "kaigai", KAIGAI, 0, 0,
    "海外出張の場合は、航空運賃、査証取得費用、海外旅行保険料を実費で支給する。" * 20,
    ("第2条 支給範囲",),
    page=1,
    pages=[1, 2],
)  # fmt: skip


def hits(*chunks: StoredChunk) -> list[Hit]:
    """Hits in rank order with falling scores."""
    return [Hit(c, 1.0 - i / 10) for i, c in enumerate(chunks)]


def ids(hit_list: list[Hit]) -> list[str]:
    return [h.chunk.id for h in hit_list]


# ------------------------------------------------------------------------------------------- context


def test_rendering_exact_grouped_numbered_in_document_order() -> None:
    result = assemble_context(hits(PER_DIEM, APPLY, PURPOSE), budget=10_000)
    assert result.text == (
        "[1] 規程/旅費.md — 第1章 総則 > 第1条 目的\n"
        "この規程は、役員及び従業員が業務のため出張する場合の旅費について定める。\n"
        "\n"
        "[1] 規程/旅費.md — 第3章 宿泊 > 第4条 日当 (p.3)\n"
        "日当は1日につき2,000円とする。\n"
        "\n"
        "[2] 規程/出張申請.md — 出張申請の手順\n"
        "出張の3日前までに出張申請書を提出し、所属長の承認を得ること。"
    )
    assert ids(result.used) == ["ryohi-0", "ryohi-5", "shinsei-0"]  # rendered order
    assert result.skipped == []
    assert result.tokens == TOKENS(result.text)
    assert result.sources == [
        Source(
            1,
            RYOHI,
            "ryohi",
            "旅費.md",
            headings=(("第1章 総則", "第1条 目的"), ("第3章 宿泊", "第4条 日当")),
            pages=(3,),
        ),
        Source(2, SHINSEI, "shinsei", "出張申請.md", headings=(("出張申請の手順",),), pages=()),
    ]
    assert [s.label for s in result.sources] == ["[1] 規程/旅費.md (p.3)", "[2] 規程/出張申請.md"]


def test_citation_header_exact_and_sources_by_best_rank() -> None:
    result = assemble_context(hits(APPLY, LODGING, OVERSEAS), budget=10_000)
    lines = [line for line in result.text.split("\n") if line.startswith("[")]
    assert lines == [
        "[1] 規程/出張申請.md — 出張申請の手順",
        "[2] 規程/旅費.md — 第3章 宿泊 > 第3条 宿泊費 (p.3)",
        "[3] 規程/海外出張.md — 第2条 支給範囲 (p.1–2)",
    ]
    assert [(s.number, s.source) for s in result.sources] == [(1, SHINSEI), (2, RYOHI), (3, KAIGAI)]
    assert result.sources[2].pages == (1, 2)


def test_within_a_source_document_order_not_rank_order() -> None:
    result = assemble_context(hits(PER_DIEM, LODGING, PURPOSE), budget=10_000)
    assert ids(result.used) == ["ryohi-0", "ryohi-4", "ryohi-5"]
    positions = [result.text.index(c.text) for c in (PURPOSE, LODGING, PER_DIEM)]
    assert positions == sorted(positions)
    assert {s.number for s in result.sources} == {1}


def test_over_budget_chunk_skipped_not_cut_and_next_smaller_included() -> None:
    small = assemble_context(hits(LODGING, APPLY), budget=10_000)
    budget = small.tokens  # exactly room for these two, far too little for OVERSEAS
    assert TOKENS(OVERSEAS.text) > budget
    result = assemble_context(hits(LODGING, OVERSEAS, APPLY), budget=budget)
    assert ids(result.skipped) == ["kaigai-0"]
    assert ids(result.used) == ["ryohi-4", "shinsei-0"]
    assert result.text == small.text
    assert result.tokens == TOKENS(result.text) == budget
    assert "海外" not in result.text  # no piece of the skipped chunk
    # the best hit itself too big: skipped, the rest still used
    first = assemble_context(hits(OVERSEAS, LODGING, APPLY), budget=budget)
    assert ids(first.skipped) == ["kaigai-0"] and len(first.used) == 2


def test_budget_never_exceeded_and_chunks_whole() -> None:
    ranked = hits(OVERSEAS, LODGING, APPLY, PER_DIEM, PURPOSE)
    full = assemble_context(ranked, budget=100_000)
    assert len(full.used) == 5
    for budget in [0, 1, 5, *range(10, full.tokens + 10, 7)]:
        result = assemble_context(ranked, budget=budget)
        assert isinstance(result, AssembledContext)
        assert TOKENS(result.text) == result.tokens <= budget
        assert len(result.used) + len(result.skipped) == len(ranked)
        for hit in result.used:
            assert hit.chunk.text in result.text
        for hit in result.skipped:
            assert hit.chunk.text not in result.text
    assert assemble_context(ranked, budget=0).text == ""


def test_custom_measure_and_separator_and_duplicates() -> None:
    result = assemble_context(hits(APPLY, APPLY, PURPOSE), budget=1000, measure=len, separator="\n---\n")
    assert ids(result.used) == ["shinsei-0", "ryohi-0"]  # the repeated hit is used once
    assert "\n---\n[2] 規程/旅費.md" in result.text
    assert result.tokens == len(result.text)
    with pytest.raises(ConfigError, match="budget"):
        assemble_context(hits(APPLY), budget=-1)


def test_default_budget_arithmetic_and_error() -> None:
    assert default_budget() == 4096 - 512
    assert default_budget(4096, question_tokens=100, answer_reserve=512, template_tokens=200) == 3284
    assert (
        default_budget(reader_tokens=8192, question_tokens=50, template_tokens=150) == 8192 - 50 - 512 - 150
    )
    with pytest.raises(ConfigError, match="no room for context"):
        default_budget(4096, question_tokens=3500, answer_reserve=512, template_tokens=84)  # exactly 0
    with pytest.raises(ConfigError, match="no room for context"):
        default_budget(1024, question_tokens=900, answer_reserve=512)
    with pytest.raises(ConfigError, match="answer_reserve"):
        default_budget(4096, answer_reserve=-1)


# -------------------------------------------------------------------------------------------- prompt


def test_default_templates() -> None:
    for template in (DEFAULT_TEMPLATE_JA, DEFAULT_TEMPLATE_EN):
        assert template.count("{context}") == 1 and template.count("{question}") == 1
    assert NOT_FOUND_JA == "資料からは分かりません" and NOT_FOUND_JA in DEFAULT_TEMPLATE_JA
    assert "[1]" in DEFAULT_TEMPLATE_JA and "[1]" in DEFAULT_TEMPLATE_EN
    prompt = build_prompt("宿泊費の上限は？", "[1] 規程/旅費.md\n宿泊費は12,000円")
    assert prompt == DEFAULT_TEMPLATE_JA.replace("{context}", "[1] 規程/旅費.md\n宿泊費は12,000円").replace(
        "{question}", "宿泊費の上限は？"
    )
    english = build_prompt("What is the cap?", "ctx", language="en")
    assert english.startswith("You answer questions") and "What is the cap?" in english
    with pytest.raises(ConfigError, match="'fr'"):
        build_prompt("q", "c", language="fr")


def test_braces_in_documents_and_questions_survive() -> None:
    context = '設定例: {"上限": 12000} と {0} と {question} と {context}'
    question = "{context} の意味は？ {x}"
    prompt = build_prompt(question, context, template="Q: {question}\nC: {context}\n")
    assert prompt == f"Q: {question}\nC: {context}\n"


def test_load_template(tmp_path: Path) -> None:
    good = tmp_path / "good.txt"
    good.write_text("\ufeff資料:\n{context}\n質問: {question}\n", encoding="utf-8")
    template = load_template(good)
    assert template == "資料:\n{context}\n質問: {question}\n"
    assert build_prompt("Q", "C", template) == "資料:\nC\n質問: Q\n"

    missing = tmp_path / "missing.txt"
    missing.write_text("資料:\n{context}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"no \{question\} placeholder") as info:
        load_template(missing)
    assert "{context} or" not in str(info.value)
    with pytest.raises(ConfigError, match=r"\{context\} or \{question\}"):
        build_prompt("q", "c", template="nothing here")
    with pytest.raises(ConfigError, match="does not exist"):
        load_template(tmp_path / "nope.txt")
    latin = tmp_path / "latin.txt"
    latin.write_bytes("{context} {question} é".encode("latin-1"))
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_template(latin)
    # the context twice was sent twice while its budget counted it once: the prompt outgrew the reader
    twice = tmp_path / "twice.txt"
    twice.write_text("{context}\n質問: {question}\n念のため再掲: {context}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"holds \{context\} 2 times; put it once"):
        load_template(twice)
    assert (
        build_prompt("Q", "C", "{question}? {context} ({question})") == "Q? C (Q)"
    )  # a question twice is counted


def test_context_budget_leaves_room_for_the_answer() -> None:
    question = "東京23区内の宿泊費の上限はいくらですか？"
    budget = context_budget(question, reader_tokens=2048, answer_reserve=256)
    fixed = TOKENS(build_prompt(question, ""))
    assert budget == 2048 - 256 - fixed
    result = assemble_context(hits(LODGING, OVERSEAS, APPLY, PURPOSE), budget)
    prompt = build_prompt(question, result.text)
    assert TOKENS(prompt) <= 2048 - 256 + 2  # BPE seams may differ by a token or two
    with pytest.raises(ConfigError, match="no room"):
        context_budget(question, reader_tokens=300, answer_reserve=256)


# ---------------------------------------------------------------------------------------------- chat

ANSWER = "宿泊費の上限は1泊12,000円です [1]。"


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class Behaviour:
    queue: list[tuple[int, bytes]] = field(default_factory=list)  # answered first, in order
    requests: list[Recorded] = field(default_factory=list)


def completion(content: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
        },
        ensure_ascii=False,
    ).encode()


class Server(LocalJsonServer):
    def __init__(self) -> None:
        self.behaviour = Behaviour()
        super().__init__(self._handle)

    def _handle(self, path: str, headers: dict[str, str], body: Any) -> Reply:
        self.behaviour.requests.append(Recorded(path, headers, body))
        status, raw = self.behaviour.queue.pop(0) if self.behaviour.queue else (200, completion(ANSWER))
        return status, raw, None

    @property
    def requests(self) -> list[Recorded]:
        return self.behaviour.requests


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in CHAT_ENV:
        monkeypatch.delenv(name, raising=False)
    unset_proxies(monkeypatch)
    return monkeypatch


@pytest.fixture
def server(clean_env: pytest.MonkeyPatch) -> Iterator[Server]:
    srv = Server()
    try:
        yield srv
    finally:
        srv.close()


def client(server: Server, **kwargs: Any) -> ChatClient:
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("backoff", 0)
    return ChatClient(base_url=server.base_url, model="test-chat", **kwargs)


def test_request_shape_and_answer(server: Server) -> None:
    prompt = build_prompt("宿泊費の上限は？", assemble_context(hits(LODGING), 1000).text)
    chat = client(server)
    assert chat.configured()
    assert chat.complete([{"role": "user", "content": prompt}]) == ANSWER
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body == {
        "model": "test-chat",
        "messages": [{"role": "user", "content": prompt}],
        "temperature": 0,
    }
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert request.headers["Content-Type"] == "application/json"
    assert KEY not in repr(chat)


def test_string_prompt_and_no_key_means_no_authorization(server: Server) -> None:
    chat = ChatClient(base_url=server.base_url + "/", model="local")
    assert chat.configured()
    assert chat.complete("こんにちは", temperature=0.2) == ANSWER
    [request] = server.requests
    assert request.body == {
        "model": "local",
        "messages": [{"role": "user", "content": "こんにちは"}],
        "temperature": 0.2,
    }
    assert "Authorization" not in request.headers


def test_401_names_the_key_but_never_shows_it(server: Server) -> None:
    error = json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}"}}).encode()
    server.behaviour.queue = [(401, error)]
    with pytest.raises(ChatError) as info:
        client(server).complete("q")
    message = str(info.value)
    assert "API key" in message and "KIREME_CHAT_API_KEY" in message
    assert KEY not in message and "\n" not in message
    assert len(server.requests) == 1  # not retried
    assert isinstance(info.value, KiremeError)


def test_404_says_model_or_path(server: Server) -> None:
    server.behaviour.queue = [(404, b'{"error": {"message": "model not found"}}')]
    with pytest.raises(ChatError, match=r"no model 'test-chat'.*check the URL"):
        client(server).complete("q")


def test_500_then_200_is_retried(server: Server) -> None:
    sleeps: list[float] = []
    server.behaviour.queue = [(500, b'{"error": "boom"}'), (503, b"busy")]
    chat = client(server, sleep=sleeps.append, backoff=0.01)
    assert chat.complete("q") == ANSWER
    assert len(server.requests) == 3
    assert sleeps == [0.01, 0.02]


def test_429_gives_up_after_three_retries(server: Server) -> None:
    server.behaviour.queue = [(429, b'{"error": {"message": "slow down"}}')] * 5
    with pytest.raises(ChatError, match=r"HTTP 429: slow down \(gave up after 4 attempts\)"):
        client(server).complete("q")
    assert len(server.requests) == 4


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        (b"<html>oops</html>", "did not answer with JSON"),
        (b'{"object": "chat.completion"}', "without 'choices'"),
        (b'{"choices": []}', "without 'choices'"),
        (b'{"choices": [{"message": {"role": "assistant"}}]}', "no message content"),
        # a gateway's error sent with status 200: its own words, not "is it an OpenAI-compatible API?"
        (b'{"error": {"message": "upstream failed"}}', "answered with an error: upstream failed"),
    ],
)
def test_unusable_answers(server: Server, raw: bytes, match: str) -> None:
    server.behaviour.queue = [(200, raw)]
    with pytest.raises(ChatError, match=match):
        client(server).complete("q")


def test_connection_refused_names_the_url(clean_env: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago and has nobody listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(ChatError, match="connection refused") as info:
        ChatClient(base_url=url, api_key=KEY, backoff=0).complete("q")
    assert f"{url}/chat/completions" in str(info.value) and KEY not in str(info.value)


def test_env_precedence(clean_env: pytest.MonkeyPatch) -> None:
    chat = ChatClient()
    assert not chat.configured()
    with pytest.raises(ChatError, match="no chat model configured"):
        chat.complete("q")

    clean_env.setenv("OPENAI_API_KEY", "sk-openai")
    clean_env.setenv("OPENAI_MODEL", "gpt-openai")
    chat = ChatClient()
    assert chat.configured()
    assert chat.base_url == DEFAULT_BASE_URL  # a key alone means OpenAI
    assert chat.url == DEFAULT_BASE_URL + "/chat/completions"
    assert chat.model == "gpt-openai" and chat._api_key == "sk-openai"

    clean_env.setenv("OPENAI_BASE_URL", "http://openai-proxy:1/v1")
    clean_env.setenv("KIREME_CHAT_BASE_URL", "http://kireme-chat:2/v1")
    clean_env.setenv("KIREME_CHAT_API_KEY", "sk-kireme")
    clean_env.setenv("KIREME_CHAT_MODEL", "kireme-model")
    chat = ChatClient()
    assert (chat.base_url, chat._api_key, chat.model) == (
        "http://kireme-chat:2/v1",
        "sk-kireme",
        "kireme-model",
    )
    chat = ChatClient(base_url="http://arg:3/v1", api_key="sk-arg", model="arg-model")
    assert (chat.base_url, chat._api_key, chat.model) == ("http://arg:3/v1", "sk-arg", "arg-model")

    clean_env.setenv("KIREME_CHAT_BASE_URL", "")  # empty counts as unset
    assert ChatClient().base_url == "http://openai-proxy:1/v1"
    for name in CHAT_ENV:
        clean_env.delenv(name)
    clean_env.setenv("OPENAI_BASE_URL", "http://localhost:8080/v1")
    local = ChatClient()
    assert local.configured() and local._api_key is None  # a URL alone is enough (local servers)
    with pytest.raises(ChatError, match="not an http"):
        ChatClient(base_url="localhost:8080")


def test_env_key_is_sent(server: Server, clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("OPENAI_API_KEY", "sk-openai")
    clean_env.setenv("KIREME_CHAT_API_KEY", KEY)
    clean_env.setenv("KIREME_CHAT_BASE_URL", server.base_url)
    clean_env.setenv("KIREME_CHAT_MODEL", "env-model")
    assert ChatClient(backoff=0).complete("q") == ANSWER
    [request] = server.requests
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert request.body["model"] == "env-model"
