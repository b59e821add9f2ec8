"""``kireme serve``: the HTTP API answers what the commands answer, refuses bad requests in one line, and
follows the index another process writes.

Most tests call the app in process (Starlette's test client: real ASGI requests, no socket); the last
ones start the real server process on a free local port, load it from several threads while ``kireme
index`` commits into the same index, and stop it with SIGTERM and SIGINT.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("fastapi_offline")
pytest.importorskip("lancedb")

from click.testing import CliRunner
from fastapi.testclient import TestClient
from tests.local_server import CHAT_ENV, unset_proxies
from tests.test_chat_stream import PIECES, StreamServer, Wire
from tests.test_index import DOCS

from kireme.cli import cli
from kireme.index.passages import budgeted_context
from kireme.index.search import Searcher
from kireme.load.registry import load_bytes
from kireme.serve import ChatSettings, create_app
from kireme.strategies import chunker_from_options

NOTICE = """\
# 社内システム移行のお知らせ

## 停止期間

2025年3月8日（土）9時から3月9日（日）18時まで、勤怠システムを停止します。

## 影響

停止中は打刻ができません。出勤した時刻は、再開後3営業日以内に申請してください。
申請の締切を過ぎると、その日は欠勤として扱われます。

## Contact

Questions go to the IT help desk, extension 4321. 😀 The desk answers within one business day.
"""


def index_folder(folder: Path, db: Path, *extra: str) -> None:
    """``kireme index FOLDER`` with the hash embedder (no model), chunks of at most 80 tokens."""
    result = CliRunner().invoke(
        cli, ["index", str(folder), "--db", str(db), "--embedder", "hash", "--max-size", "80", "-q", *extra]
    )
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def company(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("serve")
    folder = root / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    db = root / "db"
    index_folder(folder, db)
    return folder, db


@pytest.fixture()
def client(company: tuple[Path, Path]) -> Iterator[TestClient]:
    with TestClient(create_app(company[1])) as c:
        yield c


def error_of(response: Any) -> str:
    """The one-line error of a 4xx/5xx JSON answer."""
    assert 400 <= response.status_code < 600, response.text
    body = response.json()
    assert set(body) == {"error"}, body
    message = body["error"]
    assert isinstance(message, str) and message and "\n" not in message
    assert "Traceback" not in message
    return str(message)


# ---------------------------------------------------------------------------------------------- chunk


def test_chunk_rows_equal_the_library_and_the_command(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = {"strategy": "markdown", "max_size": 60, "overlap": 0, "context": "headings"}
    answer = client.post("/chunk", json={"text": NOTICE, "filename": "notice.md", **options})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    doc = load_bytes(NOTICE.encode(), "notice.md", "utf-8", "markdown")
    expected = [
        c.to_dict() for c in chunker_from_options("markdown", max_size=60, context="headings").chunk(doc)
    ]
    assert body["chunks"] == expected and body["count"] == len(expected) > 3
    assert body["text"] == doc.text and body["doc_id"] == "notice.md" and body["title"] == doc.title
    for row in body["chunks"]:
        assert body["text"][row["start"] : row["end"]] == row["text"]
    assert any(row["headings"][-1:] == ["影響"] for row in body["chunks"])

    # `kireme chunk FILE --format jsonl` on the same file writes the same rows, ids included
    (tmp_path / "notice.md").write_text(NOTICE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        cli, ["chunk", "notice.md", "--strategy", "markdown", "--max-size", "60", "--context", "headings", "--format", "jsonl"]
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert [json.loads(line) for line in result.stdout.splitlines()] == body["chunks"]


def test_chunk_an_upload_reads_it_like_a_file(client: TestClient) -> None:
    html = (
        "<html><head><title>移行のお知らせ</title></head><body><h1>停止期間</h1>"
        "<p>3月8日から3月9日まで停止します。</p><h2>申請</h2><p>再開後3営業日以内に申請してください。</p>"
        "</body></html>"
    ).encode()
    options = {"strategy": "markdown", "max_size": 40}
    answer = client.post(
        "/chunk",
        files={"file": ("notice.html", html, "text/html")},
        data={"options": json.dumps(options)},
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["doc_id"] == "notice.html" and body["title"] == "移行のお知らせ"
    assert "<p>" not in body["text"] and "3営業日以内" in body["text"]  # offsets index the extracted text
    for row in body["chunks"]:
        assert body["text"][row["start"] : row["end"]] == row["text"]
    assert any("申請" in row["headings"] for row in body["chunks"])
    # without options: the defaults, the format from the file name
    plain = client.post("/chunk", files={"file": ("memo.txt", "一行目。\n二行目。".encode("cp932"))})
    assert plain.status_code == 200 and plain.json()["text"] == "一行目。\n二行目。"


def test_chunk_semantic_returns_the_distance_curve(client: TestClient) -> None:
    options = {"strategy": "semantic", "similarity": "bigram", "max_size": 200, "filename": "notice.md"}
    body = client.post("/chunk", json={"text": NOTICE, **options}).json()
    analysis = body["analysis"]
    assert len(analysis["distances"]) == len(analysis["units"]) - 1 >= 4
    assert analysis["similarity"].startswith("bigram") and analysis["threshold"].startswith("auto")
    assert all(0 <= g < len(analysis["distances"]) for g in analysis["cut_gaps"])
    starts = {row["start"] for row in body["chunks"]}  # the gaps the chunks are cut at, as inspect marks
    assert all(analysis["units"][g + 1][0] in starts for g in analysis["cut_gaps"])
    # a threshold just below the largest distance cuts exactly where the distance is above it
    finite = [d for d in analysis["distances"] if d is not None]
    level = sorted(finite)[-2] + 1e-9
    moved = client.post("/chunk", json={"text": NOTICE, **options, "threshold": f"absolute:{level}"}).json()
    assert moved["analysis"]["cut_gaps"] == [
        i for i, d in enumerate(analysis["distances"]) if d is not None and d > level
    ]
    # a cut right after a heading line is made before the heading: the analysis says where the chunks are cut
    memo = "# 規程\n\n## 第1条\n\n猫は魚が大好きです。猫は一日中よく寝ます。\n\n## 第2条\n\n電車は朝に混雑します。\n"
    headed = client.post(
        "/chunk", json={"text": memo, **options, "threshold": "absolute:0.9", "filename": "memo.md"}
    ).json()
    starts = [row["start"] for row in headed["chunks"]]
    assert [headed["analysis"]["units"][g + 1][0] for g in headed["analysis"]["cut_gaps"]] == starts[1:]
    # other strategies carry no analysis
    assert client.post("/chunk", json={"text": NOTICE}).json()["analysis"] is None


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"text": "本文", "max_sise": 10}, 400, "max_sise"),
        ({"text": "本文", "max_size": "big"}, 400, "max_size"),
        ({"text": "本文", "max_size": 0}, 400, "max_size"),
        ({"text": "本文", "strategy": "magic"}, 400, "magic"),
        ({"text": "本文", "max_size": 10, "overlap": 10}, 400, "overlap"),
        ({"text": "本文", "cache_dir": "/tmp/x"}, 400, "cannot be set in a request"),
        ({"text": "本文", "embed_url": "http://169.254.169.254/"}, 400, "embed_url"),
        ({"text": "本文", "unit": "tokens", "tokenizer": "hf:/etc/passwd"}, 400, "hf:"),
        ({"text": "本文", "strategy": "semantic", "similarity": "st:/home/model"}, 400, "similarity"),
        ({"text": "本文", "format": "exe"}, 400, "format"),
        ({"text": "本文", "language": "python"}, 400, 'language applies to strategy "code"'),  # no "--"
        ({"text": "本文", "unit": "chars", "tokenizer": "cl100k_base"}, 400, 'use unit "tokens"'),
        ({"text": "本文", "separators": "(a|aa)+$", "max_size": 5}, None, None),
        ({"max_size": 10}, 400, "text"),
        (["not", "an", "object"], 400, "JSON object"),
    ],
)
def test_bad_chunk_requests_are_one_line_4xx(
    client: TestClient, body: Any, status: int | None, says: str | None
) -> None:
    answer = client.post("/chunk", json=body)
    if status is None:  # a catastrophic pattern on a short text: answered (the time limit guards long ones)
        assert answer.status_code in (200, 400), answer.text
        return
    assert answer.status_code == status, answer.text
    assert says in error_of(answer)


def test_bad_bodies_and_content_types(client: TestClient) -> None:
    raw = client.post("/chunk", content=b"{not json", headers={"content-type": "application/json"})
    assert raw.status_code == 400 and "JSON" in error_of(raw)
    assert "JSON" in error_of(
        client.post("/search", content=b"{", headers={"content-type": "application/json"})
    )
    assert client.post("/chunk", content=b"x", headers={"content-type": "text/csv"}).status_code == 415
    missing = client.post("/search", json={"k": 3})
    assert missing.status_code == 422 and "query" in error_of(missing)
    assert "k" in error_of(client.post("/search", json={"query": "日当", "k": 0}))
    assert "mode" in error_of(client.post("/search", json={"query": "日当", "mode": "magic"}))
    assert "empty" in error_of(client.post("/search", json={"query": "   "}))
    assert "filter" in error_of(client.post("/search", json={"query": "日当", "filters": {"colour": "red"}}))
    assert "budget" in error_of(client.post("/search", json={"query": "日当", "budget": 0}))
    upload = client.post("/chunk", files={"file": ("a.txt", b"abc")}, data={"options": "{oops"})
    assert upload.status_code == 400 and "options" in error_of(upload)
    assert client.get("/nowhere").status_code == 404 and error_of(client.get("/nowhere"))


def test_a_lone_surrogate_is_a_400_naming_the_field(client: TestClient) -> None:
    """``"\\ud800"`` is valid JSON (a browser's JSON.stringify sends it for half an emoji) but no text: a
    search failed in the store as a 503 that told the operator to rebuild a sound index, BM25 as a 500,
    ``/chunk`` with such a title as a 500."""

    def post(route: str, body: str) -> Any:
        return client.post(route, content=body.encode(), headers={"content-type": "application/json"})

    for route, body, field in (
        ("/search", '{"query": "宿泊費\\ud800", "mode": "hybrid"}', "query"),
        ("/search", '{"query": "宿泊費\\ud800", "mode": "bm25"}', "query"),
        ("/search", '{"query": "宿泊費", "filters": {"title": "\\udc00"}}', "filters"),
        ("/ask", '{"question": "宿泊費\\ud800"}', "question"),
        ("/chunk", '{"text": "abc", "title": "\\ud800"}', "title"),
        ("/chunk", '{"text": "a\\ud800b"}', "text"),
    ):
        answer = post(route, body)
        assert answer.status_code == 400, (route, body, answer.text)
        assert error_of(answer).startswith(f"{field}: holds a lone surrogate"), answer.text
        assert "rebuild" not in error_of(answer)
    # a whole pair, escaped, is one character: answered
    assert post("/search", '{"query": "宿泊費\\ud83d\\ude00"}').status_code == 200
    assert client.get("/health").json()["status"] == "ok"


def test_a_filter_that_matches_nothing_is_hinted_as_on_the_command_line(client: TestClient) -> None:
    """``/search`` answered a mistyped filter with empty hits and nothing more, where ``kireme search`` and
    ``/ask`` say which value no document has and what the names look like."""
    body = client.post("/search", json={"query": "日当", "filters": {"doc_id": "nope.md"}}).json()
    assert body["hits"] == [] and body["context"] is None
    assert body["hint"].startswith("no document has doc_id=nope.md")
    found = client.post("/search", json={"query": "日当", "filters": {"format": "text"}}).json()
    assert found["hits"] and "hint" not in found  # a filter that holds: nothing to hint
    assert "hint" not in client.post("/search", json={"query": "日当"}).json()


def test_a_budget_of_zero_is_a_400_on_search_and_ask(client: TestClient) -> None:
    for route, body in (("/search", {"query": "日当"}), ("/ask", {"question": "日当は？"})):
        for budget in (0, -1):
            answer = client.post(route, json={**body, "budget": budget})
            assert answer.status_code == 400 and error_of(answer) == f"budget must be > 0, got {budget}"
        # JSON true is no number (it was read as a budget of 1, "smaller than one sentence")
        answer = client.post(route, json={**body, "budget": True})
        assert (
            answer.status_code == 422
            and error_of(answer) == "budget: a number is expected, not true or false"
        )
    assert error_of(client.post("/chunk", json={"text": "本文。", "max_size": True})).startswith(
        "max_size: a number"
    )
    assert client.post("/search", json={"query": "日当", "exact": True}).status_code == 200  # a real flag


def test_ask_says_when_the_budget_is_more_than_the_reader_leaves(client: TestClient) -> None:
    """``kireme ask`` warned that ``--budget 1000`` is more than a 512-token reader leaves; ``/ask`` took it
    without a word, and the prompt ran past the reader's window."""
    over = client.post(
        "/ask", json={"question": "日当は？", "budget": 1000, "reader_tokens": 512, "answer_reserve": 200}
    ).json()
    assert over["over_room"] is True and over["room"] < 1000
    assert over["warning"].startswith(
        f"budget 1000 is more than the {over['room']} tokens a 512-token reader"
    )
    fine = client.post("/ask", json={"question": "日当は？", "budget": 100}).json()
    assert fine["over_room"] is False and fine["room"] >= 100 and "warning" not in fine


def test_what_clients_get_wrong_most_is_answered_in_one_line(
    client: TestClient, chat: StreamServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`curl -d` without a content type (a form), JSON nested past the parser's depth (a body, an
    upload's options, a notebook), sizes past what the packing counts in, a threshold that is not a
    number, and a budget that holds no sentence of the best hit: each a 4xx line, no traceback."""
    for route, body in (("/search", '{"query": "日当"}'), ("/ask", '{"question": "日当は？"}')):
        form = client.post(
            route, content=body.encode(), headers={"content-type": "application/x-www-form-urlencoded"}
        )
        assert form.status_code == 415 and "content-type: application/json" in error_of(form)
    chunk_form = client.post("/chunk", content=b"text=x", headers={"content-type": "text/plain"})
    assert chunk_form.status_code == 415 and "multipart/form-data" in error_of(chunk_form)

    deep = "[" * 100_000 + "]" * 100_000
    nested = client.post(
        "/chunk", content=f'{{"text": {deep}}}'.encode(), headers={"content-type": "application/json"}
    )
    assert nested.status_code == 400 and "nested too deeply" in error_of(nested)
    assert (
        client.post(
            "/search", content=deep.encode(), headers={"content-type": "application/json"}
        ).status_code
        == 400
    )
    notebook = client.post("/chunk", files={"file": ("deep.ipynb", deep.encode())})
    assert notebook.status_code == 400 and "nested too deeply" in error_of(notebook)
    options = client.post("/chunk", files={"file": ("a.txt", b"abc")}, data={"options": deep})
    assert options.status_code == 400 and "options" in error_of(options)

    huge = client.post(
        "/chunk", json={"text": "a. b.", "strategy": "semantic", "similarity": "bigram", "max_size": 2**63}
    )
    assert huge.status_code == 400 and "max_size" in error_of(huge)
    nan = client.post(
        "/chunk",
        json={"text": "a. b.", "strategy": "semantic", "similarity": "bigram", "threshold": "absolute:nan"},
    )
    assert nan.status_code == 400 and "finite" in error_of(nan)
    tiny = client.post("/ask", json={"question": "日帰り出張の日当はいくら？", "budget": 1})
    assert tiny.status_code == 400 and "budget" in error_of(tiny)
    assert not chat.requests  # no question went to a chat model without its context


def test_similarity_http_is_served_only_with_the_servers_own_endpoint(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without KIREME_EMBED_BASE_URL the http embedder's default endpoint is OpenAI's: a request must not
    send its text there with whatever key the server holds."""
    unset_proxies(monkeypatch)
    monkeypatch.delenv("KIREME_EMBED_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-the-servers-own")
    body = {"text": "一文目です。二文目です。", "strategy": "semantic", "similarity": "http"}
    refused = client.post("/chunk", json=body)
    assert refused.status_code == 400 and "KIREME_EMBED_BASE_URL" in error_of(refused)
    monkeypatch.setenv("KIREME_EMBED_BASE_URL", "http://127.0.0.1:9/v1")  # the server's own (down)
    assert client.post("/chunk", json=body).status_code == 502


def test_a_server_bug_is_one_500_line_and_the_connection_goes_on(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from kireme.serve.service import ChunkService

    def broken(self: ChunkService, data: Any, options: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(ChunkService, "chunk", broken)
    with caplog.at_level("ERROR"):
        failed = client.post("/chunk", json={"text": "本文"})
    assert failed.status_code == 500 and "RuntimeError" in error_of(failed)
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == ["POST /chunk failed"]
    assert client.get("/health").status_code == 200  # the same client goes on
    assert client.head("/health").status_code == 200 and client.head("/").status_code == 200


def test_documents_before_any_index_is_409_and_makes_none(tmp_path: Path) -> None:
    db = tmp_path / "db"
    db.mkdir()
    with TestClient(create_app(db)) as early:
        answer = early.get("/documents")
        assert answer.status_code == 409 and "kireme index" in error_of(answer)
    assert not (db / "manifest.sqlite").exists()


def test_request_size_limit(company: tuple[Path, Path]) -> None:
    with TestClient(create_app(None, max_request_size=1000)) as small:
        declared = small.post("/chunk", json={"text": "あ" * 600})  # 1,800 bytes of UTF-8
        assert declared.status_code == 413 and "--max-request-size" in error_of(declared)

        def pieces() -> Iterator[bytes]:  # no Content-Length: the body is counted as it arrives
            yield b'{"text": "'
            for _ in range(30):
                yield b"x" * 100
            yield b'"}'

        streamed = small.post("/chunk", content=pieces(), headers={"content-type": "application/json"})
        assert streamed.status_code == 413 and "limit" in error_of(streamed)
        assert small.post("/chunk", json={"text": "あ" * 100}).status_code == 200


def test_token_on_every_route(company: tuple[Path, Path]) -> None:
    with TestClient(create_app(company[1], token="s3cret-token")) as gated:
        form = gated.get("/", headers={"accept": "text/html"})  # a browser is asked for the token
        assert form.status_code == 401 and 'name="token"' in form.text and "<form" in form.text
        for method, path in (
            ("GET", "/health"),
            ("GET", "/"),
            ("GET", "/docs"),
            ("GET", "/openapi.json"),
            ("POST", "/search"),
        ):
            refused = gated.request(method, path, json={"query": "日当"})
            assert refused.status_code == 401, path
            assert refused.headers["www-authenticate"] == "Bearer" and "token" in error_of(refused)
        wrong = gated.get("/health", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        right = gated.post(
            "/search", json={"query": "日当"}, headers={"Authorization": "Bearer s3cret-token"}
        )
        assert right.status_code == 200 and right.json()["hits"]
        # a browser opens /?token=… once: a cookie, and the token leaves the address bar
        opened = gated.get("/?token=s3cret-token", follow_redirects=False)
        assert opened.status_code == 303 and opened.headers["location"] == "/"
        assert (
            "HttpOnly" in opened.headers["set-cookie"] and "SameSite=Strict" in opened.headers["set-cookie"]
        )
        assert gated.get("/health").status_code == 200  # the client keeps the cookie
        assert gated.get("/?token=wrong", follow_redirects=False).status_code in (200, 303, 401)


# ------------------------------------------------------------------------------------- search and ask


def test_search_rows_and_budgeted_context_equal_the_library(
    client: TestClient, company: tuple[Path, Path]
) -> None:
    folder, db = company
    query = "日帰り出張の日当はいくら？"
    body = client.post("/search", json={"query": query, "k": 3, "around": 30}).json()
    searcher = Searcher(db)
    try:
        hits = searcher.search(query, 3, "hybrid")
        made = budgeted_context(searcher, query, 300, k=3)
    finally:
        searcher.close()
    assert [h["id"] for h in body["hits"]] == [h.chunk.id for h in hits]
    assert [h["rank"] for h in body["hits"]] == [1, 2, 3] and body["context"] is None
    first = body["hits"][0]
    assert "1,000円" in first["text"] and first["headings"][-1] == "第2条 日当"
    text = (folder / Path(first["source"]).name).read_text(encoding="utf-8")
    assert text[first["start"] : first["end"]] == first["text"]
    assert first["before"] == text[max(0, first["start"] - 30) : first["start"]]
    assert first["after"] == text[first["end"] : first["end"] + 30]

    budgeted = client.post("/search", json={"query": query, "k": 3, "budget": 300}).json()
    assert budgeted["context"] == {**made.to_dict(), "text": made.text}
    assert budgeted["context"]["size"] <= 300 and budgeted["context"]["passages"]
    assert len(budgeted["hits"]) == 3

    searcher = Searcher(db)
    try:
        with_comments = budgeted_context(searcher, query, 300, k=3, comments=True)
    finally:
        searcher.close()
    asked = client.post("/search", json={"query": query, "k": 3, "budget": 300, "comments": True}).json()
    assert asked["context"] == {**with_comments.to_dict(), "text": with_comments.text}

    source = (folder / "就業規則.md").as_posix()
    only = client.post(
        "/search", json={"query": "日帰り出張の日当", "k": 5, "filters": {"source": source}}
    ).json()
    assert only["hits"] and {h["source"] for h in only["hits"]} == {source}
    assert (
        client.post("/search", json={"query": query, "mode": "bm25"}).json()["hits"][0]["id"] == first["id"]
    )


def test_documents_health_and_offline_docs(client: TestClient, company: tuple[Path, Path]) -> None:
    documents = client.get("/documents").json()
    assert documents["count"] == len(DOCS) == len(documents["documents"])
    assert {Path(d["source"]).name for d in documents["documents"]} == set(DOCS)
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["index"]["documents"] == len(DOCS)
    assert health["index"]["rows"] == sum(d["chunks"] for d in documents["documents"])
    assert health["index"]["embedder"].startswith("hash")
    assert health["index"]["dim"] == 512  # the index's "dimension" (it was always null)
    docs = client.get("/docs")
    assert docs.status_code == 200 and "cdn" not in docs.text.lower()
    script = re.search(r'src="([^"]+swagger-ui-bundle\.js)"', docs.text)
    assert script and client.get(script.group(1)).status_code == 200  # served by this process: offline
    schema = client.get("/openapi.json").json()
    assert {"/chunk", "/search", "/ask", "/documents", "/health"} <= set(schema["paths"])
    assert "multipart/form-data" in schema["paths"]["/chunk"]["post"]["requestBody"]["content"]


def test_an_index_made_or_changed_later_is_picked_up(tmp_path: Path) -> None:
    folder, db = tmp_path / "docs", tmp_path / "db"
    folder.mkdir()
    with TestClient(create_app(db)) as later:
        absent = later.post("/search", json={"query": "勤怠システム"})
        assert absent.status_code == 409 and "kireme index" in error_of(absent)
        health = later.get("/health").json()
        assert health["status"] == "ok" and health["index"] is None and "no index" in health["error"]

        (folder / "notice.md").write_text(NOTICE, encoding="utf-8")
        index_folder(folder, db)
        hits = later.post("/search", json={"query": "勤怠システムの停止期間"}).json()["hits"]
        assert hits and hits[0]["source"].endswith("notice.md")

        (folder / "旅費規程.md").write_text(DOCS["旅費規程.md"], encoding="utf-8")
        index_folder(folder, db)  # another commit: the next request sees it
        assert later.get("/documents").json()["count"] == 2
        hits = later.post("/search", json={"query": "日帰り出張の日当", "mode": "bm25"}).json()["hits"]
        assert hits[0]["source"].endswith("旅費規程.md")
        assert later.get("/health").json()["index"]["reopened"] >= 1
    with TestClient(create_app(None)) as bare:
        assert "--db" in error_of(bare.post("/search", json={"query": "x"}))


def test_readers_alone_never_make_the_server_reopen_the_index(company: tuple[Path, Path]) -> None:
    """Only another process's commit counts as a change: concurrent searches and reads of kept texts
    (which open and close the manifest themselves) do not."""
    from concurrent.futures import ThreadPoolExecutor

    from kireme.serve.service import IndexService

    service = IndexService(company[1])
    questions = ["日帰り出張の日当", "宿泊費の上限", "パスワードの長さ", "精算の期限", "有給休暇の申請"] * 8

    def ask(i: int) -> int:
        hits = service.search(questions[i], 3, "bm25" if i % 2 else "hybrid")
        service.texts()(hits[0].chunk.doc_id)
        return len(hits)

    with ThreadPoolExecutor(8) as pool:
        assert all(n > 0 for n in pool.map(ask, range(len(questions))))
    assert service.reopened == 0


@pytest.fixture()
def chat(monkeypatch: pytest.MonkeyPatch) -> Iterator[StreamServer]:
    unset_proxies(monkeypatch)
    for name in CHAT_ENV:
        monkeypatch.delenv(name, raising=False)
    server = StreamServer()
    yield server
    server.close()


def test_ask_answers_and_streams(
    company: tuple[Path, Path], chat: StreamServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    question = "日帰り出張の日当はいくら？"
    with TestClient(create_app(company[1])) as unconfigured:
        plain = unconfigured.post("/ask", json={"question": question, "budget": 300}).json()
    assert plain["answer"] is None and plain["configured"] is False
    assert plain["hint"].startswith("no chat model configured: start kireme serve with --chat-base-url")
    assert "1,000円" in plain["context"] and plain["tokens"] <= 300 == plain["budget"]
    assert plain["best_left_out"] is False and plain["best_needs"] == 0 and "cut" in plain
    assert plain["sources"] and plain["sources"][0]["label"].startswith("[1] ")

    whole = "日帰り出張の日当は1,000円です [1]。"
    chat.scripts.append(lambda wire: Wire.whole(wire, 200, {"choices": [{"message": {"content": whole}}]}))
    app = create_app(company[1], chat=ChatSettings(base_url=chat.base_url, model="local-test"))
    with TestClient(app) as configured:
        answered = configured.post("/ask", json={"question": question, "budget": 300}).json()
        assert answered["answer"] == whole and answered["model"] == "local-test"
        assert chat.requests[-1].body.get("stream") is not True
        assert plain["context"] in chat.requests[-1].body["messages"][0]["content"]

        with configured.stream(
            "POST", "/ask", json={"question": question, "budget": 300, "stream": True}
        ) as events:
            assert events.headers["content-type"].startswith("text/event-stream")
            raw = "".join(events.iter_text())
    parsed = [
        (
            block.split("\n")[0].removeprefix("event: "),
            json.loads(block.split("\n")[1].removeprefix("data: ")),
        )
        for block in raw.strip().split("\n\n")
    ]
    kinds = [kind for kind, _ in parsed]
    assert kinds[0] == "context" and kinds[-1] == "done" and kinds[1:-1] == ["delta"] * len(PIECES)
    assert parsed[0][1]["context"] == plain["context"]
    assert "".join(data["text"] for kind, data in parsed if kind == "delta") == "".join(PIECES)
    assert parsed[-1][1]["answer"] == "".join(PIECES)
    assert chat.requests[-1].body["stream"] is True


def test_a_question_with_no_context_is_not_sent_to_the_chat_model(
    company: tuple[Path, Path], chat: StreamServer
) -> None:
    app = create_app(company[1], chat=ChatSettings(base_url=chat.base_url, model="local-test"))
    body = {"question": "日当は？", "filters": {"source": "nowhere.md"}}
    with TestClient(app) as configured:
        answered = configured.post("/ask", json=body).json()
        assert answered["configured"] is True and answered["answer"] is None and answered["context"] == ""
        assert "nowhere.md" in answered["hint"]  # why nothing was asked, as kireme ask says
        with configured.stream("POST", "/ask", json={**body, "stream": True}) as events:
            raw = "".join(events.iter_text())
    assert raw.startswith("event: context\n") and 'event: done\ndata: {"answer": null}' in raw
    assert not chat.requests


def test_a_chat_failure_is_a_502_or_an_error_event(company: tuple[Path, Path], chat: StreamServer) -> None:
    chat.scripts.extend([lambda wire: Wire.whole(wire, 404, {"error": {"message": "no such model"}})] * 2)
    app = create_app(company[1], chat=ChatSettings(base_url=chat.base_url, model="missing"))
    with TestClient(app) as configured:
        failed = configured.post("/ask", json={"question": "日当は？"})
        assert failed.status_code == 502 and "missing" in error_of(failed)
        with configured.stream(
            "POST", "/ask", json={"question": "日当は？"}, headers={"accept": "text/event-stream"}
        ) as events:
            raw = "".join(events.iter_text())
    assert raw.startswith("event: context\n") and "event: error\n" in raw and "event: done" not in raw


def test_a_chat_answer_past_the_servers_limit_is_a_502_naming_it(
    company: tuple[Path, Path], chat: StreamServer
) -> None:
    """``kireme serve --http-max-response-bytes`` bounds what /ask reads from the chat model."""
    huge = {"choices": [{"message": {"content": "日当" * 20_000}}]}  # about 120 KB of JSON
    chat.scripts.append(lambda wire: Wire.whole(wire, 200, huge))
    settings = ChatSettings(
        base_url=chat.base_url, model="local-test", max_response_bytes=16_000, deadline=30
    )
    with TestClient(create_app(company[1], chat=settings)) as configured:
        failed = configured.post("/ask", json={"question": "日当は？"})
    assert failed.status_code == 502
    message = error_of(failed)
    assert "16,000-byte limit" in message and "\n" not in message and "日当日当日当" not in message


# -------------------------------------------------------------------------------- the real process


def start_server(
    db: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """``kireme serve --port 0`` as a process; its base URL once it answers /health."""
    process = subprocess.Popen(
        [sys.executable, "-m", "kireme.cli", "serve", "--db", str(db), "--port", "0", *extra],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert process.stderr is not None
    line = process.stderr.readline()
    match = re.search(r"serving on (http://127\.0\.0\.1:\d+)", line)
    assert match, line + (process.stderr.read() if process.poll() is not None else "")
    threading.Thread(target=process.stderr.read, daemon=True).start()  # keep the pipe drained
    return process, match.group(1)


def call(base: str, path: str, body: Any = None, timeout: float = 30) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body, ensure_ascii=False).encode()
    request = urllib.request.Request(base + path, data=data, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())


def no_proxy_env() -> dict[str, str]:
    return {
        k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")
    }


@pytest.mark.slow
def test_real_server_under_load_while_the_index_grows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unset_proxies(monkeypatch)
    folder, db = tmp_path / "docs", tmp_path / "db"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    index_folder(folder, db)
    process, base = start_server(db, env=no_proxy_env())
    try:
        assert call(base, "/health")[1]["index"]["documents"] == len(DOCS)
        more = tmp_path / "more"
        more.mkdir()
        for i in range(40):
            (more / f"お知らせ{i:02d}.md").write_text(NOTICE.replace("4321", f"{4000 + i}"), encoding="utf-8")
        failures: list[str] = []
        statuses: list[int] = []
        lock = threading.Lock()

        def client(n: int) -> None:
            for i in range(25):
                if i % 3 == 2:
                    status, body = call(base, "/chunk", {"text": NOTICE, "max_size": 40 + i})
                    ok = status == 200 and all(
                        body["text"][c["start"] : c["end"]] == c["text"] for c in body["chunks"]
                    )
                else:
                    mode = "bm25" if i % 2 else "hybrid"
                    status, body = call(base, "/search", {"query": "日帰り出張の日当", "mode": mode, "k": 3})
                    ok = status == 200 and bool(body["hits"])
                with lock:
                    statuses.append(status)
                    if not ok:
                        failures.append(f"{status} {body}")

        threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        writer = subprocess.run(
            [sys.executable, "-m", "kireme.cli", "index", str(more), "--db", str(db), "--embedder", "hash", "--max-size", "80", "-q"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        for t in threads:
            t.join(timeout=300)
        assert writer.returncode == 0, writer.stderr
        assert not failures and len(statuses) == 200, failures[:3]
        health = call(base, "/health")[1]
        assert health["index"]["documents"] == len(DOCS) + 40
        assert call(base, "/search", {"query": "内線4007", "mode": "bm25", "k": 1})[1]["hits"][0][
            "source"
        ].endswith("07.md")
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=20)
    assert code == 0


@pytest.mark.slow
def test_real_server_stops_on_ctrl_c_and_refuses_unsafe_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unset_proxies(monkeypatch)
    env = {k: v for k, v in no_proxy_env().items() if k != "KIREME_SERVE_TOKEN"}
    process, base = start_server(tmp_path / "none", "--no-index", env=env)
    try:
        status, body = call(
            base, "/chunk", {"text": "停止期間は3月8日から。申請は3営業日以内。", "max_size": 12}
        )
        assert status == 200 and body["count"] == 2
        port = base.rsplit(":", 1)[1]
        busy = subprocess.run(
            [sys.executable, "-m", "kireme.cli", "serve", "--no-index", "--port", port],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert busy.returncode == 2 and "in use" in busy.stderr and "Traceback" not in busy.stderr
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=20)
    assert code == 0

    public = subprocess.run(
        [sys.executable, "-m", "kireme.cli", "serve", "--no-index", "--host", "0.0.0.0", "--port", "0"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert public.returncode == 2 and "Traceback" not in public.stderr
    assert public.stderr.strip().count("\n") == 0 and "KIREME_SERVE_TOKEN" in public.stderr
    started = time.monotonic()
    token_env = {**env, "KIREME_SERVE_TOKEN": "t0ken"}
    gated, base = start_server(tmp_path / "none", "--no-index", "--host", "127.0.0.1", env=token_env)
    try:
        assert call(base, "/health")[0] == 401
        request = urllib.request.Request(base + "/health", headers={"Authorization": "Bearer t0ken"})
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200
    finally:
        gated.send_signal(signal.SIGTERM)
        assert gated.wait(timeout=20) == 0
    assert time.monotonic() - started < 120


def test_the_schema_describes_the_errors_the_server_sends(client: TestClient) -> None:
    """``/openapi.json`` declared a 422 as FastAPI's ``{"detail": [{loc, msg, type}]}`` and no other error,
    while every error is ``{"error": "one line"}``: a generated client misread them all."""
    spec = client.get("/openapi.json").json()
    assert spec["components"]["schemas"]["ErrorBody"]["properties"] == {
        "error": {"type": "string", "title": "Error", "description": "One line, never a traceback."}
    }
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    for route in ("/chunk", "/search", "/ask"):
        responses = spec["paths"][route]["post"]["responses"]
        for status in ("400", "401", "409", "413", "415", "422", "500", "502", "503"):
            schema = responses[status]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (route, status)
    sent = client.post("/search", json={"k": 3})  # what a 422 really is
    assert sent.status_code == 422 and set(sent.json()) == {"error"}


def test_ask_says_an_answer_was_cut_at_the_token_limit_and_where_its_passages_lie(
    company: tuple[Path, Path], chat: StreamServer
) -> None:
    """A model that stopped at the token limit (``finish_reason: "length"``) gave a client no sign of it
    (only the server's log did), and the sources had no offsets to show their passages in place."""
    question = "日帰り出張の日当はいくら？"
    cut = {"choices": [{"message": {"content": "日帰り出張の日当は"}, "finish_reason": "length"}]}
    chat.scripts.append(lambda wire: Wire.whole(wire, 200, cut))
    app = create_app(company[1], chat=ChatSettings(base_url=chat.base_url, model="local-test"))
    with TestClient(app) as configured:
        answered = configured.post("/ask", json={"question": question, "budget": 300}).json()
        assert answered["answer"] == "日帰り出張の日当は" and answered["finish_reason"] == "length"
        for source in answered["sources"]:
            assert source["spans"], source
            text = Path(source["doc_id"]).read_text(encoding="utf-8")
            for span in source["spans"]:  # exact: each passage is in the context the model read
                assert text[span["start"] : span["end"]].strip() in answered["context"]
        with configured.stream(
            "POST", "/ask", json={"question": question, "budget": 300, "stream": True}
        ) as events:
            raw = "".join(events.iter_text())
    done = json.loads(raw.strip().split("\n\n")[-1].split("\n")[1].removeprefix("data: "))
    assert set(done) == {"answer", "finish_reason"}
