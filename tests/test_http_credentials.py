"""API keys never reach another origin or the terminal (the embeddings and chat clients share one
transport, `kireme.httpjson`). Real servers on 127.0.0.1: two ports are two origins."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from tests.local_server import unset_proxies

from kireme.embed.http import OpenAIEmbedder
from kireme.errors import ChatError, EmbeddingError
from kireme.index.chat import ChatClient

KEY = "sk-kireme-secret-9d7e1234"


class Recorder:
    """A server that answers by ``route(method, path)`` and records every request's headers."""

    def __init__(self, route: Any) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                if length:
                    self.rfile.read(length)
                recorder.requests.append((self.command, self.path, dict(self.headers.items())))
                status, body, headers = route(self.command, self.path)
                raw = json.dumps(body).encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = _answer

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


EMBEDDINGS = {"data": [{"index": 0, "embedding": [1.0, 0.0]}], "model": "m"}
CHAT = {"choices": [{"message": {"role": "assistant", "content": "上限は一万二千円です。"}}]}


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Recorder, Recorder]]:
    unset_proxies(monkeypatch)
    for name in ("KIREME_EMBED_API_KEY", "KIREME_CHAT_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    other = Recorder(lambda method, path: (200, CHAT if "chat" in path else EMBEDDINGS, {}))
    first = Recorder(
        lambda method, path: (
            (302, {}, {"Location": other.base + path})
            if path.startswith("/v1")
            else (200, CHAT if "chat" in path else EMBEDDINGS, {})
        )
    )
    yield first, other
    first.close()
    other.close()


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_origin_is_not_followed(servers, code: int) -> None:
    _, other = servers
    redirecting = Recorder(lambda method, path: (code, {}, {"Location": other.base + path}))
    try:
        embedder = OpenAIEmbedder(base_url=redirecting.base + "/v1", api_key=KEY, model="m", max_retries=0)
        with pytest.raises(EmbeddingError) as err:
            embedder.embed(["宿泊費"])
        message = str(err.value)
        assert KEY not in message
        if code in (301, 302, 303):
            assert "another origin" in message and other.base in message
        assert other.requests == []  # nothing, let alone the key, reached the other origin
    finally:
        redirecting.close()


def test_the_chat_client_does_not_follow_a_cross_origin_redirect(servers) -> None:
    first, other = servers
    client = ChatClient(base_url=first.base + "/v1", api_key=KEY, model="m", max_retries=0)
    with pytest.raises(ChatError, match="another origin"):
        client.complete([{"role": "user", "content": "宿泊費の上限は？"}])
    assert other.requests == []
    assert all(KEY in headers.get("Authorization", "") for _, _, headers in first.requests)


def test_a_same_origin_redirect_is_followed_with_the_key(servers) -> None:
    moved = Recorder(
        lambda method, path: (
            (302, {}, {"Location": "/v2" + path[3:]}) if path.startswith("/v1") else (200, EMBEDDINGS, {})
        )
    )
    try:
        embedder = OpenAIEmbedder(base_url=moved.base + "/v1", api_key=KEY, model="m", max_retries=0)
        vectors = embedder.embed(["宿泊費"])
        assert vectors.shape == (1, 2)
        assert [r[1] for r in moved.requests] == ["/v1/embeddings", "/v2/embeddings"]
        assert moved.requests[1][2]["Authorization"] == f"Bearer {KEY}"
    finally:
        moved.close()


def test_a_key_read_with_its_line_break_is_stripped(servers) -> None:
    _, other = servers
    embedder = OpenAIEmbedder(base_url=other.base + "/v1", api_key=KEY + "\r\n", model="m")
    embedder.embed(["宿泊費"])
    assert other.requests[-1][2]["Authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("bad", [KEY[:8] + "\r\n" + KEY[8:], KEY[:5] + "\x00" + KEY[5:], KEY + "\x7f"])
def test_a_key_with_a_control_character_is_one_line_without_the_key(bad: str) -> None:
    for make, error in (
        (lambda: OpenAIEmbedder(base_url="http://127.0.0.1:9/v1", api_key=bad, model="m"), EmbeddingError),
        (lambda: ChatClient(base_url="http://127.0.0.1:9/v1", api_key=bad, model="m"), ChatError),
    ):
        with pytest.raises(error) as err:
            make()
        message = str(err.value)
        assert "control character" in message and "\n" not in message
        assert KEY[:8] not in message  # at most the last 4 characters are shown
