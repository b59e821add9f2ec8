"""OpenAIEmbedder against a real HTTP server on 127.0.0.1 (stdlib ``http.server``, no mocks).

The server answers like an OpenAI-compatible ``/v1/embeddings`` endpoint with 3-dim vectors derived
from each text, records every request, and can be told to misbehave: fail N times with a status,
shuffle the order of ``data``, or drop a vector.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from tests.local_server import LocalJsonServer, Reply, unset_proxies

from kireme.embed.base import Embedder, normalize_rows
from kireme.embed.http import OpenAIEmbedder
from kireme.errors import EmbeddingError

KEY = "sk-test-0123456789abcdef"


def vector_for(text: str) -> list[float]:
    """What the server returns for ``text``: deterministic, never zero, different for different texts."""
    return [float(len(text) + 1), float(sum(map(ord, text)) % 97), float(text.count("a") + 1)]


def expected(texts: list[str]) -> np.ndarray:
    return normalize_rows(np.array([vector_for(t) for t in texts], dtype=np.float32))


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class Behaviour:
    """How the server answers; tests change it before calling the embedder."""

    fail_status: int = 0  # answer this status ...
    fail_times: int = 0  # ... this many times, then succeed
    retry_after: str | None = None
    error_body: dict[str, Any] | None = None
    reverse: bool = False  # return data in reverse index order
    drop_last: bool = False  # return one vector fewer than asked for
    no_data: bool = False  # answer {"object": "list"} without data
    requests: list[Recorded] = field(default_factory=list)


class Server(LocalJsonServer):
    def __init__(self) -> None:
        self.behaviour = Behaviour()
        super().__init__(self._handle)

    def _handle(self, path: str, headers: dict[str, str], body: Any) -> Reply:
        behaviour = self.behaviour
        behaviour.requests.append(Recorded(path, headers, body))
        if behaviour.fail_times > 0:
            behaviour.fail_times -= 1
            extra = {"Retry-After": behaviour.retry_after} if behaviour.retry_after else {}
            error = behaviour.error_body or {"error": {"message": "busy"}}
            return behaviour.fail_status, error, extra
        if path != "/v1/embeddings":
            return 404, {"error": {"message": f"no route {path}"}}, None
        if behaviour.no_data:
            return 200, {"object": "list"}, None
        texts = body["input"]
        data = [{"object": "embedding", "index": i, "embedding": vector_for(t)} for i, t in enumerate(texts)]
        if behaviour.drop_last:
            data = data[:-1]
        if behaviour.reverse:
            data = data[::-1]
        return 200, {"object": "list", "data": data, "model": body["model"]}, None

    @property
    def requests(self) -> list[Recorded]:
        return self.behaviour.requests


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    unset_proxies(monkeypatch)
    srv = Server()
    try:
        yield srv
    finally:
        srv.close()


def make(server: Server, **kwargs: Any) -> OpenAIEmbedder:
    sleeps: list[float] = []
    kwargs.setdefault("sleep", sleeps.append)
    embedder = OpenAIEmbedder(model="test-embed", base_url=server.base_url, api_key=KEY, **kwargs)
    embedder.sleeps = sleeps  # type: ignore[attr-defined]
    return embedder


def test_request_shape_and_result(server: Server) -> None:
    texts = ["alpha", "banana bread", "日本語の文"]
    embedder = make(server)
    vectors = embedder.embed(texts)
    assert isinstance(embedder, Embedder)
    assert vectors.dtype == np.float32 and vectors.shape == (3, 3)
    np.testing.assert_allclose(vectors, expected(texts), rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    [request] = server.requests
    assert request.path == "/v1/embeddings"
    assert request.body == {"model": "test-embed", "input": texts, "encoding_format": "float"}
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert request.headers["Content-Type"] == "application/json"


def test_name_identifies_endpoint_and_model(server: Server) -> None:
    assert make(server).name == f"http/127.0.0.1:{server.port}/test-embed"
    embedder = make(server, dimensions=3)
    assert embedder.name == f"http/127.0.0.1:{server.port}/test-embed/d3"
    embedder.embed(["x"])
    assert server.requests[0].body["dimensions"] == 3
    assert KEY not in repr(embedder)


def test_batches(server: Server) -> None:
    texts = [f"text {i}" for i in range(5)]
    vectors = make(server, batch_size=2).embed(texts)
    assert [r.body["input"] for r in server.requests] == [texts[0:2], texts[2:4], texts[4:5]]
    np.testing.assert_allclose(vectors, expected(texts), rtol=1e-6)


def test_out_of_order_data_is_reordered(server: Server) -> None:
    server.behaviour.reverse = True
    texts = ["a", "bb", "ccc", "dddd"]
    np.testing.assert_allclose(make(server).embed(texts), expected(texts), rtol=1e-6)


def test_retries_503_then_succeeds(server: Server) -> None:
    server.behaviour.fail_status, server.behaviour.fail_times = 503, 2
    embedder = make(server)
    vectors = embedder.embed(["retry me"])
    np.testing.assert_allclose(vectors, expected(["retry me"]), rtol=1e-6)
    assert len(server.requests) == 3
    assert embedder.sleeps == [0.5, 1.0]  # exponential backoff, slept through the injected function


def test_retry_after_is_honoured(server: Server) -> None:
    server.behaviour.fail_status, server.behaviour.fail_times = 429, 1
    server.behaviour.retry_after = "2"
    embedder = make(server)
    embedder.embed(["x"])
    assert embedder.sleeps == [2.0]


def test_gives_up_after_max_retries(server: Server) -> None:
    server.behaviour.fail_status, server.behaviour.fail_times = 500, 10
    embedder = make(server, max_retries=2)
    with pytest.raises(EmbeddingError, match=r"HTTP 500.*3 attempts"):
        embedder.embed(["x"])
    assert len(server.requests) == 3


def test_401_names_the_key_settings_but_not_the_key(server: Server) -> None:
    server.behaviour.fail_status, server.behaviour.fail_times = 401, 1
    server.behaviour.error_body = {"error": {"message": f"Incorrect API key provided: {KEY}"}}
    embedder = make(server)
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(["x"])
    message = str(info.value)
    assert "API key" in message and "KIREME_EMBED_API_KEY" in message
    assert KEY not in message
    assert "\n" not in message
    assert len(server.requests) == 1  # a 4xx is not retried
    assert embedder.sleeps == []


def test_404_names_the_model(server: Server) -> None:
    embedder = OpenAIEmbedder(
        model="m", base_url=f"http://127.0.0.1:{server.port}/wrong", sleep=lambda s: None
    )
    with pytest.raises(EmbeddingError, match=r"no /embeddings endpoint or no model 'm'"):
        embedder.embed(["x"])


def test_fewer_vectors_than_texts(server: Server) -> None:
    server.behaviour.drop_last = True
    with pytest.raises(EmbeddingError, match="2 vectors for 3 texts"):
        make(server).embed(["a", "b", "c"])


def test_response_without_data(server: Server) -> None:
    server.behaviour.no_data = True
    with pytest.raises(EmbeddingError, match="'data'"):
        make(server).embed(["a"])


def test_closed_port() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago and has nobody listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    embedder = OpenAIEmbedder(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, sleep=lambda s: None)
    with pytest.raises(EmbeddingError, match="cannot reach") as info:
        embedder.embed(["x"])
    assert "check --embed-url (base_url= in Python)" in str(info.value)
    assert KEY not in str(info.value)


def test_closed_port_from_the_variable_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """`kireme index`, `search`, `ask` and `serve` read the URL from KIREME_EMBED_BASE_URL and have no
    --embed-url: the error told them to set an option they do not have."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("KIREME_EMBED_BASE_URL", f"http://127.0.0.1:{port}/v1")
    with pytest.raises(EmbeddingError, match="cannot reach") as info:
        OpenAIEmbedder(api_key=KEY, sleep=lambda s: None).embed(["x"])
    assert "set KIREME_EMBED_BASE_URL" in str(info.value) and "--embed-url" not in str(info.value)


def test_defaults_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KIREME_EMBED_BASE_URL", "OPENAI_BASE_URL", "KIREME_EMBED_MODEL"):
        monkeypatch.delenv(name, raising=False)
    assert OpenAIEmbedder().name == "http/api.openai.com/text-embedding-3-small"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://other:9/v1")
    monkeypatch.setenv("KIREME_EMBED_BASE_URL", "http://localhost:8000/v1/")
    monkeypatch.setenv("KIREME_EMBED_MODEL", "e5-small")
    embedder = OpenAIEmbedder()
    assert embedder.url == "http://localhost:8000/v1/embeddings"
    assert embedder.name == "http/localhost:8000/e5-small"


def test_empty_input_makes_no_request(server: Server) -> None:
    assert make(server).embed([]).shape[0] == 0
    assert server.requests == []
