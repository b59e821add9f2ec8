"""`ChatClient.stream`: an answer yielded piece by piece as the server generates it (server-sent events).

The client is tested against a real HTTP/1.1 server on 127.0.0.1 (stdlib ``http.server``, no mocks)
whose responses are written by hand, chunk by chunk with a flush after each, so that the tests see what
a client of a real streaming server sees: events that arrive one at a time, a character split across
two network writes, a connection that drops halfway through an answer.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from tests.local_server import CHAT_ENV, unset_proxies

from kireme.errors import ChatError
from kireme.index.chat import ChatClient

KEY = "sk-test-key-0123456789abcdef"
ANSWER = "宿泊費の上限は1泊12,000円です [1]。"
PIECES = ["宿泊費", "の上限は", "1泊12,000円", "です [1]。"]


# ------------------------------------------------------------------------------------------- the server


class Wire:
    """One response, written by hand: a status and headers, then the body in chunks, each flushed."""

    def __init__(self, handler: BaseHTTPRequestHandler) -> None:
        self.handler = handler

    def start(self, status: int = 200, content_type: str = "text/event-stream") -> None:
        """The status line and headers of a chunked (streamed) response."""
        self.handler.send_response(status)
        self.handler.send_header("Content-Type", content_type)
        self.handler.send_header("Transfer-Encoding", "chunked")
        self.handler.end_headers()

    def write(self, data: bytes) -> None:
        """``data`` as one HTTP chunk, sent at once."""
        self.handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.handler.wfile.flush()

    def event(self, data: Any) -> None:
        """One server-sent event whose data is ``data`` as JSON (or the bytes as they are)."""
        raw = data if isinstance(data, bytes) else json.dumps(data, ensure_ascii=False).encode()
        self.write(b"data: " + raw + b"\n\n")

    def end(self) -> None:
        """The last chunk: the response is complete."""
        self.handler.wfile.write(b"0\r\n\r\n")
        self.handler.wfile.flush()

    def drop(self) -> None:
        """Close the connection in the middle of the response."""
        self.handler.wfile.flush()
        self.handler.connection.shutdown(socket.SHUT_RDWR)

    def whole(
        self,
        status: int,
        body: Any,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """A complete, non-streamed response (``body`` as JSON unless it is bytes)."""
        raw = body if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False).encode()
        self.handler.send_response(status)
        self.handler.send_header("Content-Type", content_type)
        self.handler.send_header("Content-Length", str(len(raw)))
        for name, value in (headers or {}).items():
            self.handler.send_header(name, value)
        self.handler.end_headers()
        self.handler.wfile.write(raw)


Script = Callable[[Wire], None]


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def chunk(content: Any = None, *, role: str | None = None, finish: str | None = None) -> dict[str, Any]:
    """A ``chat.completion.chunk`` with one choice whose delta has ``content`` (and ``role``)."""
    delta: dict[str, Any] = {}
    if role is not None:
        delta["role"] = role
    if content is not None:
        delta["content"] = content
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def answer_in(pieces: list[str]) -> Script:
    """A script that streams ``pieces`` as OpenAI does: a role-only delta, the pieces, a finish, [DONE]."""

    def script(wire: Wire) -> None:
        wire.start()
        wire.event(chunk("", role="assistant"))
        for piece in pieces:
            wire.event(chunk(piece))
        wire.event(chunk(finish="stop"))
        wire.event(b"[DONE]")
        wire.end()

    return script


@dataclass
class StreamServer:
    """A ThreadingHTTPServer on 127.0.0.1 that answers each POST with the next script of ``scripts``."""

    scripts: list[Script] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)

    def __post_init__(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # chunked responses

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                outer.requests.append(Recorded(self.path, dict(self.headers.items()), body))
                script = outer.scripts.pop(0) if outer.scripts else answer_in(PIECES)
                self.close_connection = True
                with contextlib.suppress(OSError):  # the client hung up (it had read enough, or gave up)
                    script(Wire(self))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.base_url = self.base + "/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in CHAT_ENV:
        monkeypatch.delenv(name, raising=False)
    unset_proxies(monkeypatch)
    return monkeypatch


@pytest.fixture
def server(clean_env: pytest.MonkeyPatch) -> Iterator[StreamServer]:
    srv = StreamServer()
    try:
        yield srv
    finally:
        srv.close()


def client(server: StreamServer, **kwargs: Any) -> ChatClient:
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("backoff", 0)
    return ChatClient(base_url=server.base_url, model="test-chat", **kwargs)


def collect(pieces: Iterator[str]) -> tuple[list[str], ChatError | None]:
    """The pieces received, and the error that ended the stream (None when it ended normally)."""
    received: list[str] = []
    try:
        for piece in pieces:
            received.append(piece)
    except ChatError as exc:
        return received, exc
    return received, None


def one_line_without_key(error: BaseException | None) -> str:
    assert isinstance(error, ChatError)
    message = str(error)
    assert KEY not in message and "\n" not in message
    return message


# ------------------------------------------------------------------------------------------- streaming


def test_deltas_arrive_in_order_and_the_request_asks_for_a_stream(server: StreamServer) -> None:
    pieces = list(client(server).stream([{"role": "user", "content": "宿泊費の上限は？"}], max_tokens=50))
    assert pieces == PIECES  # the role-only delta and the empty finishing delta yield nothing
    assert "".join(pieces) == ANSWER
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body == {
        "model": "test-chat",
        "messages": [{"role": "user", "content": "宿泊費の上限は？"}],
        "temperature": 0,
        "max_tokens": 50,
        "stream": True,
    }
    assert request.headers["Accept"] == "text/event-stream"
    assert request.headers["Authorization"] == f"Bearer {KEY}"


def test_a_character_split_across_two_writes_and_the_sse_wire_format(server: StreamServer) -> None:
    first = "data: " + json.dumps(chunk("宿泊費"), ensure_ascii=False) + "\r\n\r\n"
    raw = first.encode()
    split = raw.index("泊".encode()) + 1  # inside the three bytes of 泊

    def script(wire: Wire) -> None:
        wire.start()
        wire.write(b": keep-alive comment\n\n")
        wire.write(raw[:split])
        time.sleep(0.05)  # the client has the first piece of the character on its own
        wire.write(raw[split:])
        wire.write(b"event: message\nid: 7\nretry: 1000\n")  # fields other than data are skipped
        wire.write(
            b"data:" + json.dumps(chunk([{"type": "text", "text": "の上限"}]), ensure_ascii=False).encode()
        )
        wire.write(b"\n\n")
        wire.write(b"data: " + json.dumps(chunk(None, role="assistant")).encode() + b"\n\n")
        wire.event(chunk("は？", finish="stop"))
        wire.end()

    server.scripts = [script]
    assert list(client(server).stream("q")) == ["宿泊費", "の上限", "は？"]


def test_a_delta_is_yielded_before_the_server_has_finished(server: StreamServer) -> None:
    gate = threading.Event()
    released: list[bool] = []

    def script(wire: Wire) -> None:
        wire.start()
        wire.event(chunk(PIECES[0], role="assistant"))
        released.append(gate.wait(timeout=5))  # the rest only once the test holds the first piece
        for piece in PIECES[1:]:
            wire.event(chunk(piece))
        wire.event(b"[DONE]")
        wire.end()

    server.scripts = [script]
    pieces = client(server).stream("q")
    assert next(pieces) == PIECES[0]
    gate.set()
    assert list(pieces) == PIECES[1:]
    assert released == [True]


def test_done_ends_the_answer(server: StreamServer) -> None:
    def script(wire: Wire) -> None:
        wire.start()
        wire.event(chunk("宿泊費"))
        wire.event(b"[DONE]")
        wire.event(b"not read: the answer has ended")
        wire.end()

    server.scripts = [script]
    assert list(client(server).stream("q")) == ["宿泊費"]


def test_a_plain_json_answer_is_yielded_whole(server: StreamServer) -> None:
    completion = {
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}
        ],
    }
    server.scripts = [lambda wire: wire.whole(200, completion)]
    assert list(client(server).stream("q")) == [ANSWER]


def test_a_token_limit_is_logged(server: StreamServer, caplog: pytest.LogCaptureFixture) -> None:
    def script(wire: Wire) -> None:
        wire.start()
        wire.event(chunk("宿泊費の", finish="length"))
        wire.end()

    server.scripts = [script]
    with caplog.at_level(logging.WARNING, logger="kireme.index.chat"):
        assert list(client(server).stream("q")) == ["宿泊費の"]
    assert "token limit" in caplog.text


# ------------------------------------------------------------------------------------------- retries


def test_500_then_success_is_retried(server: StreamServer) -> None:
    sleeps: list[float] = []
    server.scripts = [
        lambda wire: wire.whole(500, {"error": "boom"}),
        lambda wire: wire.whole(503, b"busy", "text/plain", {"Retry-After": "2"}),
    ]
    assert "".join(client(server, sleep=sleeps.append, backoff=0.01).stream("q")) == ANSWER
    assert len(server.requests) == 3
    assert sleeps == [0.01, 2.0]


def test_a_drop_before_the_first_delta_is_retried(server: StreamServer) -> None:
    def script(wire: Wire) -> None:
        wire.start()
        wire.event(chunk("", role="assistant"))  # no text yet: starting over repeats nothing
        wire.drop()

    sleeps: list[float] = []
    server.scripts = [script]
    assert list(client(server, sleep=sleeps.append).stream("q")) == PIECES
    assert len(server.requests) == 2 and sleeps == [0.0]


def test_a_drop_after_a_delta_says_the_answer_was_cut_off(server: StreamServer) -> None:
    def script(wire: Wire) -> None:
        wire.start()
        wire.event(chunk("宿泊費", role="assistant"))
        wire.drop()

    server.scripts = [script]
    received, error = collect(client(server).stream("q"))
    assert received == ["宿泊費"]
    message = one_line_without_key(error)
    assert "dropped the connection" in message and "cut off after 3 characters" in message
    assert len(server.requests) == 1  # not retried: the answer would start over


def test_a_timeout_after_a_delta_says_the_answer_was_cut_off(server: StreamServer) -> None:
    gate = threading.Event()

    def script(wire: Wire) -> None:
        wire.start()
        wire.event(chunk("宿泊費"))
        gate.wait(timeout=5)

    server.scripts = [script]
    try:
        received, error = collect(client(server, timeout=0.3).stream("q"))
    finally:
        gate.set()
    assert received == ["宿泊費"]
    message = one_line_without_key(error)
    assert "did not answer within 0.3s" in message and "cut off after 3 characters" in message


def test_a_stream_that_ends_before_the_answer_does(server: StreamServer) -> None:
    def script(wire: Wire) -> None:
        wire.start()
        wire.event(chunk("宿泊費"))
        wire.end()  # neither a finish_reason nor [DONE]

    server.scripts = [script]
    received, error = collect(client(server).stream("q"))
    assert received == ["宿泊費"]
    assert "before the answer was finished; the answer was cut off after 3" in one_line_without_key(error)


# ------------------------------------------------------------------------------------------- errors


def test_a_malformed_data_line_is_quoted_without_the_key(server: StreamServer) -> None:
    def script(wire: Wire) -> None:
        wire.start()
        wire.event(chunk("宿泊費"))
        wire.event(f"{{oops {KEY}".encode())
        wire.end()

    server.scripts = [script]
    received, error = collect(client(server).stream("q"))
    assert received == ["宿泊費"]
    message = one_line_without_key(error)
    assert "sent an event that is not JSON (it began '{oops ***')" in message


def test_an_error_object_in_the_stream(server: StreamServer) -> None:
    def script(wire: Wire) -> None:
        wire.start()
        wire.event(chunk("宿泊費"))
        wire.event({"error": {"message": f"model overloaded (key {KEY})", "type": "server_error"}})
        wire.end()

    server.scripts = [script]
    received, error = collect(client(server).stream("q"))
    assert received == ["宿泊費"]
    message = one_line_without_key(error)
    assert "reported an error while answering: model overloaded (key ***)" in message
    assert "cut off after 3 characters" in message


@pytest.mark.parametrize(
    ("status", "match"),
    [
        (401, "rejected the API key as wrong or not allowed .*KIREME_CHAT_API_KEY"),
        (403, "rejected the API key"),
        (404, "no model 'test-chat'.*check the URL"),
        (400, r"refused the request \(HTTP 400: bad"),
    ],
)
def test_refusals_are_one_line_without_the_key(server: StreamServer, status: int, match: str) -> None:
    server.scripts = [lambda wire: wire.whole(status, {"error": {"message": f"bad {KEY}"}})]
    with pytest.raises(ChatError, match=match) as info:
        list(client(server).stream("q"))
    one_line_without_key(info.value)
    assert len(server.requests) == 1


def test_not_configured_is_raised_by_the_call(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(ChatError, match="no chat model configured"):
        ChatClient().stream("q")


def test_unreachable_and_non_json_answers(server: StreamServer, clean_env: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago and has nobody listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ChatError, match="connection refused"):
        list(ChatClient(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, backoff=0).stream("q"))
    server.scripts = [lambda wire: wire.whole(200, b"<html>oops</html>", "text/html")]
    with pytest.raises(ChatError, match="did not answer with JSON"):
        list(client(server).stream("q"))


def test_a_cross_origin_redirect_is_not_followed(server: StreamServer) -> None:
    other = StreamServer()
    try:
        location = other.base + "/v1/chat/completions"
        server.scripts = [lambda wire: wire.whole(302, b"", headers={"Location": location})]
        with pytest.raises(ChatError, match="another origin") as info:
            list(client(server, max_retries=0).stream("q"))
        one_line_without_key(info.value)
        assert other.requests == []
    finally:
        other.close()
