"""Broken or hostile model servers are bounded, and secrets never leave the request.

Every server here is real, on 127.0.0.1 (stdlib ``http.server`` in a thread), and writes its answers
by hand: too long (with or without a Content-Length, chunked, as an event stream), one byte at a time,
nested a hundred thousand levels deep, with vectors that change size, echoing the key. Each client
(chat, streamed chat, embeddings, contextualize) must end in one line that says what happened and
what to raise, within its deadline, without buffering more than its limit, and without showing a key
— the API key or a key in the base URL's query string or ``user:password@``. The last test runs
index, search, ask and check with such keys and looks for them in everything the run printed,
logged or stored.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result
from tests.local_server import CHAT_ENV, unset_proxies

from kireme.cli import cli
from kireme.embed.cache import CachedEmbedder
from kireme.embed.http import OpenAIEmbedder
from kireme.errors import ChatError, EmbeddingError
from kireme.httpjson import MAX_JSON_DEPTH, load_json, parse_base_url, redact_url
from kireme.index.chat import ChatClient

KEY = "sk-KIREMEPROBE-7f3a9c2e51d4b6a8"  # the API key, from the environment
QUERY_KEY = "sk-KIREMEPROBE-query-88e1d0c4"  # a gateway's key, in the base URL: ?api-key=...
USER_SECRET = "KIREMEPROBE-password-5c2d"  # in user:password@
SECRETS = (KEY, QUERY_KEY, USER_SECRET)
MiB = 1 << 20
HUGE = 5 * MiB  # what a hostile server sends; the tests' limit is 1 MiB
ENV = (*CHAT_ENV, "KIREME_EMBED_BASE_URL", "KIREME_EMBED_API_KEY", "KIREME_EMBED_MODEL")
LIMIT_ENV = ("KIREME_HTTP_MAX_RESPONSE_BYTES", "KIREME_HTTP_DEADLINE")

DOCS = {
    "travel.md": "# 出張旅費規程\n\n## 宿泊費\n\n宿泊費は1泊12,000円を上限とする。\n",
    "allowance.md": "# 日当\n\n日帰り出張の日当は2,000円とする。\n",
    "lodging.md": "# 宿泊\n\n東京23区内は1泊14,000円を上限とする。\n",
}


# ------------------------------------------------------------------------------------------- the server

Route = Callable[["Handler", str, Any], None]


class Handler(BaseHTTPRequestHandler):
    """Reads a POST and leaves the answer to the server's ``route``, which writes it by hand."""

    protocol_version = "HTTP/1.1"
    server: Server  # type: ignore[assignment]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.close_connection = True
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.record(self.path, dict(self.headers.items()), raw)
        with contextlib.suppress(OSError):  # the client stopped reading (what the limits are for)
            self.server.route(self, self.path, json.loads(raw) if raw else None)

    do_GET = do_POST

    # -- ways to answer -----------------------------------------------------------------------------

    def head(self, status: int = 200, content_type: str = "application/json", **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()

    def reply(self, payload: Any, status: int = 200, **headers: str) -> None:
        raw = payload if isinstance(payload, bytes) else json.dumps(payload, ensure_ascii=False).encode()
        self.head(status, Content_Length=str(len(raw)), Connection="close", **headers)
        self.wfile.write(raw)

    def blocks(
        self, blocks: Iterable[bytes], *, framing: str, content_type: str = "application/json"
    ) -> None:
        """``blocks`` one after another, flushed: ``length`` announces their total (``total`` must be
        known: a list), ``chunked`` sends HTTP chunks, ``close`` ends the body by closing."""
        if framing == "length":
            blocks = list(blocks)
            self.head(
                content_type=content_type, Content_Length=str(sum(map(len, blocks))), Connection="close"
            )
        elif framing == "chunked":
            self.head(content_type=content_type, Transfer_Encoding="chunked", Connection="close")
        else:
            self.head(content_type=content_type, Connection="close")
        for block in blocks:
            if self.server.stopping.is_set():
                return
            self.wfile.write(
                f"{len(block):x}\r\n".encode() + block + b"\r\n" if framing == "chunked" else block
            )
            self.wfile.flush()
        if framing == "chunked":
            self.wfile.write(b"0\r\n\r\n")

    def drip(self, data: bytes, every: float = 0.3) -> None:
        """``data`` one byte at a time, ``every`` seconds apart (headers included: write them in it)."""
        for byte in data:
            if self.server.stopping.wait(every):
                return
            self.wfile.write(bytes([byte]))
            self.wfile.flush()


class Server(ThreadingHTTPServer):
    """A threaded server on 127.0.0.1 whose answers ``route`` writes; it records every request."""

    daemon_threads = True

    def __init__(self, route: Route) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.route = route
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.stopping = threading.Event()
        self.port = self.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        threading.Thread(target=self.serve_forever, args=(0.02,), daemon=True).start()

    def record(self, path: str, headers: dict[str, str], body: bytes) -> None:
        self.requests.append((path, headers, body))

    def close(self) -> None:
        self.stopping.set()
        self.shutdown()
        self.server_close()


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Route], Server]]:
    """Start servers with a route each (closed after the test), with no model variable or proxy set."""
    unset_proxies(monkeypatch)
    for name in (*ENV, *LIMIT_ENV):
        monkeypatch.delenv(name, raising=False)
    started: list[Server] = []

    def start(route: Route) -> Server:
        server = Server(route)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


# ---------------------------------------------------------------------------------- answers and helpers


def vector(text: str, dim: int) -> list[float]:
    """A vector for ``text`` that depends on it (so dense search finds something), never zero."""
    seed = zlib.crc32(text.encode())
    return [float((seed >> (i % 24)) % 7 + 1) for i in range(dim)]


def embeddings(body: Any, dim: int) -> dict[str, Any]:
    texts = body["input"]
    data = [{"object": "embedding", "index": i, "embedding": vector(t, dim)} for i, t in enumerate(texts)]
    return {"object": "list", "data": data, "model": body["model"]}


def completion(text: str, finish: str = "stop") -> dict[str, Any]:
    message = {"role": "assistant", "content": text}
    return {"choices": [{"index": 0, "message": message, "finish_reason": finish}]}


def huge_json(prefix: bytes, fill: bytes, suffix: bytes, size: int = HUGE) -> list[bytes]:
    """A JSON answer of about ``size`` bytes, in 64 KiB blocks: ``prefix``, ``fill`` repeated, ``suffix``."""
    block = fill * (65536 // len(fill))
    return [prefix, *([block] * (size // len(block))), suffix]


HUGE_CHAT = huge_json(b'{"choices": [{"index": 0, "message": {"content": "', b"x", b'"}}]}')
HUGE_EMBEDDINGS = huge_json(b'{"data": [{"index": 0, "embedding": [0.5', b", 0.25", b"]}]}")


def sse(data: Any) -> bytes:
    return b"data: " + json.dumps(data, ensure_ascii=False).encode() + b"\n\n"


def delta(text: str) -> bytes:
    return sse({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})


def one_line(message: str) -> str:
    assert "\n" not in message and "Traceback" not in message, message
    return message


def no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, text
        assert secret[-12:] not in text, text  # not even its end


def invoke(*args: str) -> Result:
    """``kireme ARGS`` in this process; an exception escaping the command fails the test."""
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def error_line(result: Result) -> str:
    """The one ``kireme: error:`` line of a failed command (and nothing like a traceback)."""
    assert "Traceback" not in result.output, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("kireme: error:")]
    assert len(errors) == 1, result.stderr
    return errors[0]


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def hash_index(docs: Path, tmp_path: Path) -> Path:
    """An index of `DOCS` with the model-free hash embedder, for ``kireme ask`` to read."""
    db = tmp_path / "db"
    result = invoke("index", str(docs), "--db", str(db), "--embedder", "hash", "-q")
    assert result.exit_code == 0, result.output
    return db


def chat(server: Server, **kwargs: Any) -> ChatClient:
    kwargs.setdefault("api_key", KEY)
    return ChatClient(base_url=server.base_url, model="m", max_retries=0, **kwargs)


def embedder(server: Server, **kwargs: Any) -> OpenAIEmbedder:
    kwargs.setdefault("api_key", KEY)
    return OpenAIEmbedder(model="m", base_url=server.base_url, max_retries=0, **kwargs)


# ------------------------------------------------------------------------------------ answers too large


@pytest.mark.parametrize("framing", ["length", "chunked", "close"])
def test_a_huge_chat_answer_is_one_line_naming_url_limit_and_setting(serve, framing: str) -> None:
    server = serve(lambda h, path, body: h.blocks(HUGE_CHAT, framing=framing))
    with pytest.raises(ChatError) as err:
        chat(server, max_response_bytes=MiB).complete("宿泊費は？")
    message = one_line(str(err.value))
    assert f"{server.base_url}/chat/completions" in message
    assert "1,048,576-byte limit" in message
    assert "--http-max-response-bytes or KIREME_HTTP_MAX_RESPONSE_BYTES" in message
    if framing == "length":  # refused at the headers, before reading the body
        assert f"announced {sum(map(len, HUGE_CHAT)):,} bytes" in message


@pytest.mark.parametrize("framing", ["length", "chunked", "close"])
def test_a_huge_embeddings_answer_is_one_line(serve, framing: str, monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve(lambda h, path, body: h.blocks(HUGE_EMBEDDINGS, framing=framing))
    monkeypatch.setenv("KIREME_HTTP_MAX_RESPONSE_BYTES", "1M")  # the variable, this time
    with pytest.raises(EmbeddingError) as err:
        embedder(server).embed(["宿泊費"])
    message = one_line(str(err.value))
    assert f"{server.base_url}/embeddings" in message and "1,048,576-byte limit" in message


def test_a_huge_stream_is_bounded_in_all_and_says_how_much_got_through(serve) -> None:
    piece = "あ" * 1000  # 3,000 bytes of text per event
    server = serve(
        lambda h, path, body: h.blocks(
            [delta(piece)] * 2000, framing="chunked", content_type="text/event-stream"
        )
    )
    received = []
    with pytest.raises(ChatError) as err:
        for text in chat(server, max_response_bytes=MiB).stream("宿泊費は？"):
            received.append(text)
    message = one_line(str(err.value))
    assert "1,048,576-byte limit" in message and "cut off after" in message
    assert 0 < len("".join(received)) * 3 <= MiB


def test_an_endless_line_of_a_stream_is_bounded_too(serve) -> None:
    server = serve(
        lambda h, path, body: h.blocks(
            [b"data: " + b"x" * 65536] * 80, framing="close", content_type="text/event-stream"
        )
    )
    with pytest.raises(ChatError, match="byte limit") as err:
        list(chat(server, max_response_bytes=MiB).stream("宿泊費は？"))
    one_line(str(err.value))


def test_a_huge_answer_is_never_buffered_beyond_the_limit(serve) -> None:
    """200 MB offered without a Content-Length: the client stops after the limit, quickly, with memory to
    match (tracemalloc sees every Python allocation, the server thread's included)."""
    block = b"x" * 65536
    server = serve(
        lambda h, path, body: h.blocks(iter([b'{"choices": "', *([block] * 3200)]), framing="close")
    )
    client = chat(server, max_response_bytes=MiB)
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(ChatError, match="byte limit"):
            client.complete("宿泊費は？")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 5
    assert peak < 8 * MiB


def test_kireme_ask_refuses_a_huge_answer_without_printing_it(serve, hash_index: Path, monkeypatch) -> None:
    server = serve(lambda h, path, body: h.blocks(HUGE_CHAT, framing="chunked"))
    monkeypatch.setenv("KIREME_CHAT_BASE_URL", server.base_url)
    result = invoke("ask", "宿泊費の上限は？", "--db", str(hash_index), "--http-max-response-bytes", "1M")
    assert result.exit_code == 1
    line = error_line(result)
    assert f"{server.base_url}/chat/completions" in line and "--http-max-response-bytes" in line
    assert len(result.stdout) < 10_000


def test_kireme_index_with_the_http_embedder_refuses_a_huge_answer(
    serve, docs: Path, tmp_path, monkeypatch
) -> None:
    server = serve(lambda h, path, body: h.blocks(HUGE_EMBEDDINGS, framing="length"))
    monkeypatch.setenv("KIREME_EMBED_BASE_URL", server.base_url)
    db = tmp_path / "db"
    result = invoke(
        "index", str(docs), "--db", str(db), "--embedder", "http:m", "--http-max-response-bytes", "1M", "-q"
    )
    assert result.exit_code == 1
    assert "1,048,576-byte limit" in error_line(result)


def test_kireme_index_contextualize_refuses_a_huge_answer(serve, docs: Path, tmp_path, monkeypatch) -> None:
    server = serve(lambda h, path, body: h.blocks(HUGE_CHAT, framing="close"))
    monkeypatch.setenv("KIREME_CHAT_BASE_URL", server.base_url)
    argv = ["index", str(docs), "--db", str(tmp_path / "db"), "--embedder", "hash", "--contextualize"]
    result = invoke(*argv, "--http-max-response-bytes", "1M", "--contextualize-concurrency", "1", "-q")
    assert result.exit_code == 3  # each document fails, none takes the run down
    errors = [line for line in result.stderr.splitlines() if line.startswith("kireme: error:")]
    assert errors and all("1,048,576-byte limit" in line for line in errors), result.stderr
    assert "Traceback" not in result.output


def test_bad_limits_are_one_line(serve, monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve(lambda h, path, body: h.reply(completion("ok")))
    monkeypatch.setenv("KIREME_HTTP_MAX_RESPONSE_BYTES", "lots")
    with pytest.raises(ValueError, match="KIREME_HTTP_MAX_RESPONSE_BYTES='lots' is not a size"):
        chat(server)
    monkeypatch.delenv("KIREME_HTTP_MAX_RESPONSE_BYTES")
    monkeypatch.setenv("KIREME_HTTP_DEADLINE", "-1")
    with pytest.raises(ValueError, match="KIREME_HTTP_DEADLINE='-1' is not a positive number"):
        embedder(server)
    result = invoke("ask", "q", "--http-deadline", "0")
    assert result.exit_code == 2 and "Traceback" not in result.output


@pytest.mark.parametrize(
    "answer",
    [
        f"SSH-2.0-OpenSSH {KEY}\r\n\r\n".encode(),  # not HTTP at all
        b"HTTP/1.1 200 OK\r\n" + b"X-Many: 1\r\n" * 101 + b"\r\n",  # more headers than http.client takes
        b"HTTP/1.1 200 OK\r\nX-Long: " + b"x" * 70_000 + b"\r\n\r\n",  # a header line too long
    ],
)
def test_an_answer_that_is_not_http_is_one_line(serve, answer: bytes) -> None:
    server = serve(lambda h, path, body: h.wfile.write(answer))
    with pytest.raises(ChatError, match="did not answer in HTTP") as err:
        chat(server).complete("宿泊費は？")
    no_secret(one_line(str(err.value)))


# ---------------------------------------------------------------------------------------- the deadline

DEADLINE = 2.0
SLACK = 1.5


def drip_body(h: Handler, path: str, body: Any) -> None:
    answer = json.dumps(completion("宿泊費は12,000円です。")).encode()
    h.head(Content_Length=str(len(answer)), Connection="close")
    h.wfile.flush()
    h.drip(answer)


def drip_headers(h: Handler, path: str, body: Any) -> None:
    h.drip(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")


def drip_events(h: Handler, path: str, body: Any) -> None:
    h.head(content_type="text/event-stream", Connection="close")
    for _ in range(100):
        h.wfile.write(delta("宿"))
        h.wfile.flush()
        if h.server.stopping.wait(0.3):
            return


@pytest.mark.parametrize("drip", [drip_body, drip_headers])
def test_a_dripping_chat_server_ends_at_the_deadline(serve, drip: Route) -> None:
    server = serve(drip)
    started = time.monotonic()
    with pytest.raises(ChatError) as err:
        chat(server, deadline=DEADLINE).complete("宿泊費は？")  # the 60 s timeout is per read: never reached
    took = time.monotonic() - started
    message = one_line(str(err.value))
    assert DEADLINE - 0.1 <= took < DEADLINE + SLACK
    assert f"{server.base_url}/chat/completions" in message and "after 2s" in message
    assert "--http-deadline or KIREME_HTTP_DEADLINE" in message


def test_a_dripping_embeddings_server_ends_at_the_deadline(serve, monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve(drip_body)
    monkeypatch.setenv("KIREME_HTTP_DEADLINE", str(DEADLINE))
    started = time.monotonic()
    with pytest.raises(EmbeddingError, match="the deadline for one answer"):
        embedder(server).embed(["宿泊費"])
    assert time.monotonic() - started < DEADLINE + SLACK


def test_a_stream_that_never_ends_ends_at_the_deadline(serve) -> None:
    server = serve(drip_events)
    started = time.monotonic()
    with pytest.raises(ChatError) as err:
        list(chat(server, deadline=DEADLINE).stream("宿泊費は？"))
    assert time.monotonic() - started < DEADLINE + SLACK
    message = one_line(str(err.value))
    assert "after 2s" in message and "cut off after" in message


def test_retries_do_not_wait_past_the_deadline(serve) -> None:
    server = serve(lambda h, path, body: h.reply({"error": "busy"}, 503, Retry_After="5"))
    slept: list[float] = []
    client = ChatClient(base_url=server.base_url, model="m", deadline=DEADLINE, sleep=slept.append)
    with pytest.raises(ChatError) as err:
        client.complete("宿泊費は？")
    assert slept == [] and len(server.requests) == 1
    assert "no time left for another before the 2s deadline" in one_line(str(err.value))


def test_kireme_ask_ends_at_the_deadline(serve, hash_index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve(drip_body)
    monkeypatch.setenv("KIREME_CHAT_BASE_URL", server.base_url)
    started = time.monotonic()
    result = invoke("ask", "宿泊費の上限は？", "--db", str(hash_index), "--http-deadline", str(DEADLINE))
    assert time.monotonic() - started < DEADLINE + SLACK + 1  # + retrieval
    assert result.exit_code == 1 and "--http-deadline" in error_line(result)


# -------------------------------------------------------------------------------------- deeply nested JSON

DEEP = b"[" * 100_000


def test_json_nested_too_deep_is_refused_before_parsing() -> None:
    strings = b'{"a": "[[[[[[[[", "b": [[1], {"c": "]\\"]", "d": "\\\\"}]}'  # an escaped quote, a backslash
    assert load_json(strings) == {"a": "[[[[[[[[", "b": [[1], {"c": ']"]', "d": "\\"}]}
    fine = b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH
    assert load_json(fine) is not None
    in_a_string = b'[["' + b"[" * 10 * MAX_JSON_DEPTH + b'\\"' + b"[" * MAX_JSON_DEPTH + b'"]]'
    assert load_json(in_a_string)[0][0].endswith("[")
    too_deep = [
        DEEP,
        b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1),
        b'{"a":' * 5000 + b"1" + b"}" * 5000,
        b'["\\\\"' + b"," + b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH + b"]",  # "\\" ends its string
    ]
    for deep in too_deep:
        with pytest.raises(ValueError, match="nested more than"):
            load_json(deep)


@pytest.mark.parametrize("answer", [DEEP, b'{"choices": ' + DEEP, b'{"error": ' + DEEP])
def test_kireme_ask_with_a_deeply_nested_answer_is_one_line(
    serve, hash_index: Path, monkeypatch, answer: bytes
) -> None:
    status = 400 if answer.startswith(b'{"error"') else 200  # an error's body: quoted as text
    server = serve(lambda h, path, body: h.reply(answer, status))
    monkeypatch.setenv("KIREME_CHAT_BASE_URL", server.base_url)
    result = invoke("ask", "宿泊費の上限は？", "--db", str(hash_index))
    assert result.exit_code == 1
    line = error_line(result)
    assert f"{server.base_url}/chat/completions" in line
    if status == 200:
        assert f"nested more than {MAX_JSON_DEPTH} levels deep" in line


def test_a_deeply_nested_stream_event_is_one_line(serve) -> None:
    server = serve(
        lambda h, path, body: h.blocks(
            [delta("宿泊費"), b"data: " + DEEP + b"\n\n"], framing="close", content_type="text/event-stream"
        )
    )
    with pytest.raises(ChatError, match="nested more than") as err:
        list(chat(server).stream("宿泊費は？"))
    one_line(str(err.value))


def test_kireme_index_with_deeply_nested_embeddings_is_one_line(
    serve, docs: Path, tmp_path, monkeypatch
) -> None:
    server = serve(lambda h, path, body: h.reply(b'{"data": [{"index": 0, "embedding": ' + DEEP))
    monkeypatch.setenv("KIREME_EMBED_BASE_URL", server.base_url)
    result = invoke("index", str(docs), "--db", str(tmp_path / "db"), "--embedder", "http:m", "-q")
    assert result.exit_code == 1
    assert f"{server.base_url}/embeddings answered JSON nested more than" in error_line(result)


def test_kireme_index_contextualize_with_deeply_nested_answers_is_one_line(
    serve, docs: Path, tmp_path, monkeypatch
) -> None:
    server = serve(lambda h, path, body: h.reply(DEEP))
    monkeypatch.setenv("KIREME_CHAT_BASE_URL", server.base_url)
    argv = ["index", str(docs), "--db", str(tmp_path / "db"), "--embedder", "hash", "--contextualize"]
    result = invoke(*argv, "--contextualize-concurrency", "1", "-q")
    assert result.exit_code == 3
    errors = [line for line in result.stderr.splitlines() if line.startswith("kireme: error:")]
    assert errors and all("nested more than" in line for line in errors), result.stderr
    assert "Traceback" not in result.output


# ------------------------------------------------------------------------------------------- redirects


def test_a_redirect_body_is_not_read(serve) -> None:
    """urllib reads a redirect's body whole before following it; a hostile one can be endless."""

    def route(h: Handler, path: str, body: Any) -> None:
        if path.startswith("/v1/"):
            h.head(302, Location="/v2/chat/completions", Connection="close")
            for _ in range(3200):  # 200 MB, never read
                h.wfile.write(b"x" * 65536)
        else:
            h.reply(completion("宿泊費は12,000円です。"))

    server = serve(route)
    started = time.monotonic()
    assert chat(server, max_response_bytes=MiB).complete("宿泊費は？") == "宿泊費は12,000円です。"
    assert time.monotonic() - started < 5


def test_a_cross_origin_redirect_shows_neither_the_key_nor_the_query(serve) -> None:
    other = serve(lambda h, path, body: h.reply(completion("stolen")))
    server = serve(
        lambda h, path, body: h.reply(
            {}, 307, Location=f"{other.base_url}/chat/completions?api-key={QUERY_KEY}"
        )
    )
    client = ChatClient(
        base_url=f"{server.base_url}?api-key={QUERY_KEY}", api_key=KEY, model="m", max_retries=0
    )
    with pytest.raises(ChatError) as err:
        client.complete("宿泊費は？")
    message = one_line(str(err.value))
    assert "another origin" in message and "api-key=***" in message
    no_secret(message)
    assert other.requests == []


# ------------------------------------------------------------------------------ vectors that change size


def test_an_embedder_whose_dimension_changes_is_one_line_naming_both(serve) -> None:
    calls = []

    def route(h: Handler, path: str, body: Any) -> None:
        calls.append(1)
        h.reply(embeddings(body, 8 if len(calls) == 1 else 4))

    server = serve(route)
    client = embedder(server, batch_size=1)
    with pytest.raises(EmbeddingError) as err:
        client.embed(["宿泊費", "日当"])  # the second batch changes size
    message = one_line(str(err.value))
    assert f"{server.base_url}/embeddings returned vectors of dimension 4 after 8" in message
    with pytest.raises(EmbeddingError, match="dimension 4 after 8"):
        client.embed(["交通費"])  # in a later call too


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ([{"index": 0, "embedding": ["0.1", "0.2"]}], "not a list of numbers"),
        ([{"index": 0, "embedding": [[0.1], [0.2]]}], "not a list of numbers"),
        ([{"index": 0, "embedding": [True, False]}], "not a list of numbers"),
        ([{"index": 0, "embedding": []}], "not a list of numbers"),
        ([{"index": 0, "embedding": None}], "not a list of numbers"),
        ([{"index": 0, "embedding": [0.1, 0.2]}, {"index": 1, "embedding": [0.1]}], "dimensions 1 to 2"),
        ([{"index": 0, "embedding": [0.1, float("nan")]}, {"index": 1, "embedding": [0.1, 0.2]}], "NaN"),
        ([{"index": 0, "embedding": [0.1, 0.2]}], "1 vectors for 2 texts"),
        ([{"index": "0", "embedding": [0.1]}, {"index": 1, "embedding": [0.1]}], "not an integer"),
    ],
)
def test_embeddings_answers_are_checked(serve, data: list[Any], match: str) -> None:
    server = serve(lambda h, path, body: h.reply({"data": data}))
    with pytest.raises(EmbeddingError, match=match) as err:
        embedder(server).embed(["宿泊費", "日当"])
    one_line(str(err.value))


class Switching:
    """An embedder whose vectors have ``dims[0]`` dimensions for the first ``after`` calls, then ``dims[1]``."""

    name = "fake/switching"

    def __init__(self, after: int, dims: tuple[int, int] = (8, 4)) -> None:
        self.after, self.dims, self.calls = after, dims, 0

    def embed(self, texts: Any, kind: str = "passage") -> np.ndarray:
        self.calls += 1
        dim = self.dims[0] if self.calls <= self.after else self.dims[1]
        return np.ones((len(texts), dim), dtype=np.float32)


def test_the_embedding_cache_refuses_and_never_keeps_vectors_of_another_size(tmp_path: Path) -> None:
    from kireme.embed.cache import EmbeddingCache

    cached = CachedEmbedder(Switching(after=1), EmbeddingCache(tmp_path), batch_size=1)  # type: ignore[arg-type]
    with pytest.raises(EmbeddingError, match="dimension 4 from the model, after 8"):
        cached.embed(["宿泊費", "日当"])
    fresh = CachedEmbedder(Switching(after=0, dims=(4, 4)), EmbeddingCache(tmp_path))  # type: ignore[arg-type]
    with pytest.raises(EmbeddingError, match="dimension 4 from the model, after 8"):
        fresh.embed(["宿泊費", "日当"])  # 日当 is cached with 8; 宿泊費 was never kept, and now comes with 4
    assert fresh.stats.embedded == 0
    other = CachedEmbedder(Switching(after=0, dims=(4, 4)), EmbeddingCache(tmp_path))  # type: ignore[arg-type]
    other.embed(["交通費"])
    with pytest.raises(EmbeddingError, match=r"dimension 8 in the embedding cache .*, after 4"):
        other.embed(["日当"])


def test_ingest_writes_nothing_of_a_batch_of_another_size(docs: Path, tmp_path: Path, monkeypatch) -> None:
    from kireme import make_chunker
    from kireme.index import ingest
    from kireme.index.ingest import Ingestor, ingest_paths

    monkeypatch.setattr(ingest, "BATCH_DOCUMENTS", 1)
    db = tmp_path / "db"
    files = sorted(docs.iterdir())
    chunker = make_chunker("markdown", max_size=200)
    with (
        pytest.raises(EmbeddingError, match="nothing of this batch was written"),
        Ingestor(db, chunker, Switching(after=2)) as ingestor,  # type: ignore[arg-type]
    ):
        ingest_paths(ingestor, files)  # the dimension probe, the first document, then 4 dimensions
    result = invoke("check", "--db", str(db))
    assert result.exit_code == 0, result.output
    result = invoke("search", "宿泊費", "--db", str(db), "--mode", "bm25", "--format", "jsonl")
    assert {json.loads(line)["doc_id"] for line in result.stdout.splitlines()} <= {files[0].as_posix()}


def test_kireme_index_stops_at_a_dimension_change_and_keeps_what_it_committed(
    serve, docs: Path, tmp_path, monkeypatch
) -> None:
    from kireme.index import ingest

    state = {"calls": 0, "switch_after": 2}  # the dimension probe and the first document: 8, then 4

    def route(h: Handler, path: str, body: Any) -> None:
        state["calls"] += 1
        h.reply(embeddings(body, 4 if state["calls"] > state["switch_after"] else 8))

    server = serve(route)
    monkeypatch.setenv("KIREME_EMBED_BASE_URL", server.base_url)
    monkeypatch.setattr(ingest, "BATCH_DOCUMENTS", 1)  # one commit per document
    db = tmp_path / "db"
    argv = ["index", str(docs), "--db", str(db), "--embedder", "http:m", "-q", "--format", "json"]
    result = invoke(*argv)
    assert result.exit_code == 1
    line = error_line(result)
    assert f"{server.base_url}/embeddings returned vectors of dimension 4 after 8" in line

    state["switch_after"] = 10**9  # the server is fixed: what the run committed is whole and searchable
    assert invoke("check", "--db", str(db)).exit_code == 0
    result = invoke("search", "宿泊費", "--db", str(db), "--mode", "dense", "--format", "jsonl")
    assert result.exit_code == 0, result.output
    first = sorted(docs.iterdir())[0].as_posix()
    assert {json.loads(hit)["doc_id"] for hit in result.stdout.splitlines()} == {first}
    result = invoke(*argv)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert (summary["added"], summary["unchanged"]) == (len(DOCS) - 1, 1)


# ----------------------------------------------------------------------------------------------- secrets


@pytest.mark.parametrize(
    "key", ["sk-KIREMEPROBE-ключ-7f3a9c2e", "sk-KIREMEPROBE-é-7f3a9c2e", "“sk-KIREMEPROBE-7f3a9c2e”"]
)
def test_a_key_a_header_cannot_carry_is_one_line_without_the_key(key: str, monkeypatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    for make, error in (
        (lambda: ChatClient(base_url="http://127.0.0.1:9/v1", api_key=key, model="m"), ChatError),
        (lambda: OpenAIEmbedder(base_url="http://127.0.0.1:9/v1", api_key=key, model="m"), EmbeddingError),
    ):
        with pytest.raises(error) as err:
            make()
        message = one_line(str(err.value))
        assert "beyond ASCII" in message and "not shown" in message
        assert "KIREMEPROBE" not in message and "7f3a" not in message
    monkeypatch.setenv("KIREME_CHAT_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("KIREME_CHAT_API_KEY", key)
    result = invoke("ask", "宿泊費は？", "--db", "nowhere")
    assert result.exit_code == 2
    line = error_line(result)
    assert "KIREME_CHAT_API_KEY" in line and "KIREMEPROBE" not in result.output


def test_what_a_server_echoes_is_blanked_out(serve) -> None:
    echo = f"your key {KEY} and api-key={QUERY_KEY} are wrong"
    answers = {
        "status": lambda h: h.reply({"error": {"message": echo}}, 500, X_Echo=KEY),
        "unauthorized": lambda h: h.reply({"error": echo}, 401),
        "not json": lambda h: h.reply(echo.encode()),
        "event": lambda h: h.blocks(
            [delta("宿"), sse({"error": {"message": echo}})],
            framing="close",
            content_type="text/event-stream",
        ),
    }
    for name, answer in answers.items():
        server = serve(lambda h, path, body, answer=answer: answer(h))
        client = ChatClient(
            base_url=f"{server.base_url}?api-key={QUERY_KEY}", api_key=KEY, model="m", max_retries=0
        )
        with pytest.raises(ChatError) as err:
            list(client.stream("宿泊費は？")) if name == "event" else client.complete("宿泊費は？")
        message = one_line(str(err.value))
        no_secret(message)
        assert "your key *** and api-key=***" in message, (name, message)


def test_keys_in_the_base_url_are_sent_but_never_shown(serve) -> None:
    state = {"status": 401}
    server = serve(
        lambda h, path, body: (
            h.reply({"error": "no"}, state["status"]) if state["status"] != 200 else h.reply(completion("ok"))
        )
    )
    base = f"http://user:{USER_SECRET}@127.0.0.1:{server.port}/v1?api-key={QUERY_KEY}&api-version=2024-06-01"
    client = ChatClient(base_url=base, model="m", max_retries=0)
    assert client.url == f"{server.base_url}/chat/completions?api-key=***&api-version=***"
    no_secret(repr(client))
    with pytest.raises(ChatError) as err:
        client.complete("宿泊費は？")
    message = one_line(str(err.value))
    assert "needs an API key" in message and "api-key=***" in message
    no_secret(message)
    state["status"] = 200
    assert client.complete("宿泊費は？") == "ok"
    path, headers, _ = server.requests[-1]
    assert path == f"/v1/chat/completions?api-key={QUERY_KEY}&api-version=2024-06-01"  # sent as given
    assert "Authorization" not in headers  # user:password@ is never sent either

    emb = OpenAIEmbedder(base_url=base, model="m", max_retries=0)
    assert (
        emb.url.endswith("/v1/embeddings?api-key=***&api-version=***")
        and emb.name == f"http/127.0.0.1:{server.port}/m"
    )
    with pytest.raises(EmbeddingError) as err:
        emb.embed(["宿泊費"])
    no_secret(one_line(str(err.value)))
    assert server.requests[-1][0] == f"/v1/embeddings?api-key={QUERY_KEY}&api-version=2024-06-01"


def test_unreachable_and_malformed_urls_never_show_their_secrets(monkeypatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ChatError, match="cannot reach") as err:
        ChatClient(
            base_url=f"http://u:{USER_SECRET}@127.0.0.1:9/v1?api-key={QUERY_KEY}", model="m", max_retries=0
        ).complete("q")
    no_secret(one_line(str(err.value)))
    for url in (
        f"ftp://u:{USER_SECRET}@h/v1?api-key={QUERY_KEY}",
        f"http://h/v1?api-key={QUERY_KEY} x",
        f"http://[::1/v1?k={QUERY_KEY}",
    ):
        with pytest.raises(ValueError) as err:
            parse_base_url(url, what="chat", setting="KIREME_CHAT_BASE_URL", error_class=ValueError)
        no_secret(one_line(str(err.value)))
    assert redact_url(f"https://u:{USER_SECRET}@h:1/v1?{QUERY_KEY}") == "https://h:1/v1?***"


def test_a_whole_run_never_shows_or_stores_a_key(
    serve, docs: Path, tmp_path: Path, monkeypatch, caplog
) -> None:
    """index (http embedder, a retry, --contextualize), search, ask (a warning), check: every line
    printed, every log record and every byte stored under the index directory, searched for the keys."""
    failed = {"embeddings": False}

    def route(h: Handler, path: str, body: Any) -> None:
        if "/embeddings" in path:
            if not failed["embeddings"]:  # once: a 500 that echoes the keys, retried at once
                failed["embeddings"] = True
                h.reply({"error": {"message": f"bad {KEY} {QUERY_KEY}"}}, 500, Retry_After="0")
                return
            h.reply(embeddings(body, 16))
        elif "/chat/completions" in path:
            question = body["messages"][-1]["content"]
            finish = "length" if "<chunk>" not in question else "stop"  # ask: a warning naming the URL
            h.reply(completion(f"宿泊費の規程です ({KEY[:4]})", finish))
        else:
            h.reply({"error": "no route"}, 404)

    server = serve(route)
    base = f"http://user:{USER_SECRET}@127.0.0.1:{server.port}/v1?api-key={QUERY_KEY}"
    monkeypatch.setenv("KIREME_EMBED_BASE_URL", base)
    monkeypatch.setenv("KIREME_EMBED_API_KEY", KEY)
    monkeypatch.setenv("KIREME_CHAT_BASE_URL", base)
    monkeypatch.setenv("KIREME_CHAT_API_KEY", KEY)
    caplog.set_level(logging.DEBUG)
    db = tmp_path / "db"
    runs = [
        invoke("-vv", "index", str(docs), "--db", str(db), "--embedder", "http:m", "--contextualize"),
        invoke("-vv", "search", "宿泊費", "--db", str(db)),
        invoke("-vv", "ask", "宿泊費の上限は？", "--db", str(db)),
        invoke("-vv", "check", "--db", str(db)),
    ]
    assert [r.exit_code for r in runs] == [0, 0, 0, 0], [r.output for r in runs]
    assert all(f"api-key={QUERY_KEY}" in path for path, _, _ in server.requests)
    assert all(headers.get("Authorization") == f"Bearer {KEY}" for _, headers, _ in server.requests)
    assert any("retrying" in r.getMessage() for r in caplog.records)
    assert any("cut at the token limit" in r.getMessage() for r in caplog.records)
    printed = "\n".join(r.stdout + r.stderr for r in runs)
    logged = "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records)
    no_secret(printed)
    no_secret(logged)
    stored = [path for path in db.rglob("*") if path.is_file()]
    assert stored
    for path in stored:
        data = path.read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in data, path


def silent_then_answer(h: Handler, path: str, body: Any) -> None:
    """A local model on a CPU: nothing at all until it has read the prompt, then the whole answer."""
    if not h.server.stopping.wait(1.2):
        h.reply(completion("宿泊費は12,000円です。"))


def test_a_chat_model_silent_until_it_has_read_the_prompt_is_waited_for_up_to_the_deadline(serve) -> None:
    """Each read of a chat answer was bounded by 60 s whatever `--http-deadline` said, and the message
    said to "raise the timeout", which no option sets: a local model reading a long prompt for more than
    a minute could never answer. One read may now take the whole deadline."""
    server = serve(silent_then_answer)
    assert chat(server, deadline=300).timeout == 300  # no longer 60
    assert chat(server).timeout == 120  # the default deadline
    assert chat(server, deadline=3).complete("宿泊費は？").strip() == "宿泊費は12,000円です。"
    with pytest.raises(ChatError) as err:
        chat(server, deadline=3, timeout=0.3).complete("宿泊費は？")  # a read limit asked for is kept
    message = one_line(str(err.value))
    assert "did not answer within 0.3s" in message and "--http-deadline" in message


def test_kireme_ask_prints_no_terminal_escape_the_model_sent(serve, hash_index: Path, monkeypatch) -> None:
    """A model's answer went to the terminal as it came: a document that asked it for escape sequences
    could set the terminal's title or write to its clipboard (OSC 52) through `kireme ask`."""
    said = "上限は\x1b[31m12,000円\x1b[0mです。\x1b]0;pwned\x07\x1b]52;c;aGk=\x1b\\\r\n以上\x00"
    server = serve(lambda h, path, body: h.reply(completion(said)))
    monkeypatch.setenv("KIREME_CHAT_BASE_URL", server.base_url)
    result = invoke("ask", "宿泊費の上限は？", "--db", str(hash_index))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[:2] == ["上限は12,000円です。", "以上"]
    assert "\x1b" not in result.stdout and "\x00" not in result.stdout and "\r" not in result.stdout


def test_kireme_ask_says_when_the_model_answered_with_no_text(serve, hash_index: Path, monkeypatch) -> None:
    """An empty answer printed a blank line and the sources, exit 0, without a word."""
    server = serve(lambda h, path, body: h.reply(completion("")))
    monkeypatch.setenv("KIREME_CHAT_BASE_URL", server.base_url)
    result = invoke("ask", "宿泊費の上限は？", "--db", str(hash_index))
    assert result.exit_code == 0
    assert f"kireme: warning: {server.base_url}/chat/completions answered with no text" in result.stderr


def test_kireme_ask_help_describes_every_option_and_the_exit_codes() -> None:
    result = invoke("ask", "--help")
    text = " ".join(result.output.split())
    for described in (
        "--reader-tokens INTEGER RANGE The chat model's context window",
        "--answer-reserve INTEGER RANGE Tokens kept for the answer",
        "--template FILE A UTF-8 prompt file",
        "--language [ja|en] The language of the built-in prompt",
        "130 interrupted",
        "--http-deadline 600",
    ):
        assert described in text, described


def test_kireme_ask_cites_where_in_each_document_its_passages_lie(
    serve, hash_index: Path, monkeypatch
) -> None:
    """The sources under an answer were bare file names (``[1] docs/規程.md``): the heading paths of the
    passages passed from each now follow it."""
    server = serve(lambda h, path, body: h.reply(completion("上限は一泊一万円です [1]。")))
    monkeypatch.setenv("KIREME_CHAT_BASE_URL", server.base_url)
    result = invoke("ask", "宿泊費の上限は？", "--db", str(hash_index))
    assert result.exit_code == 0, result.output
    cited = [line for line in result.stdout.splitlines() if line.startswith("[")]
    assert cited and any(" — " in line for line in cited), result.stdout
