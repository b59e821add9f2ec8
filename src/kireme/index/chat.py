"""Answers from any OpenAI-compatible ``/chat/completions`` endpoint, with the standard library only.

OpenAI, vLLM, llama.cpp's server, LM Studio and Ollama's OpenAI API all take POST ``{"model",
"messages", "temperature"}`` and answer ``{"choices": [{"message": {"content": ...}}]}``.

Settings come from the arguments first, then the environment, first set (non-empty) name wins:

* base URL: ``KIREME_CHAT_BASE_URL``, then ``OPENAI_BASE_URL``; without either, OpenAI's
  ``https://api.openai.com/v1`` — but only when an API key is set (a key alone means "use OpenAI");
* API key: ``KIREME_CHAT_API_KEY``, then ``OPENAI_API_KEY`` (none: no ``Authorization`` header);
* model: ``KIREME_CHAT_MODEL``, then ``OPENAI_MODEL``, then ``gpt-4o-mini``.

Every failure becomes one `ChatError` line that says what to fix; the API key never appears in a
message. HTTP 429 and 5xx (and dropped connections) are retried with exponential backoff.
"""

from __future__ import annotations

import http.client
import json
import logging
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kireme.document import KiremeError
from kireme.embed.http import _describe, _env, _retry_after

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
_URL_HINT = "is the server running? set KIREME_CHAT_BASE_URL (e.g. http://localhost:8000/v1)"
_KEY_HINT = "set KIREME_CHAT_API_KEY or OPENAI_API_KEY"
_MAX_SLEEP = 10.0  # one wait, in seconds, even when Retry-After asks for more
_DETAIL_CHARS = 200


class ChatError(KiremeError):
    """The reader model could not be asked or answered with something unusable (the message says what)."""


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


Messages = str | Sequence[Mapping[str, Any]]


class ChatClient:
    """A client for one chat model behind an OpenAI-compatible API.

    ``max_retries`` is how many times a 429/5xx answer is retried (waits ``backoff * 2**n`` seconds, or
    the server's ``Retry-After``, at most 10 s each); ``sleep`` is injectable for tests.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        timeout: float = 60,
        *,
        max_retries: int = 3,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must not be negative, got {max_retries}")
        self._api_key = api_key or _env("KIREME_CHAT_API_KEY", "OPENAI_API_KEY")
        explicit_url = base_url or _env("KIREME_CHAT_BASE_URL", "OPENAI_BASE_URL")
        self._has_url = bool(explicit_url)
        self.base_url = (explicit_url or DEFAULT_BASE_URL).rstrip("/")
        self.model = model or _env("KIREME_CHAT_MODEL", "OPENAI_MODEL") or DEFAULT_MODEL
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self._sleep = sleep
        parts = urllib.parse.urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ChatError(
                f"chat URL {self.base_url!r} is not an http(s) URL; "
                "set KIREME_CHAT_BASE_URL to e.g. http://localhost:8000/v1"
            )
        host = parts.hostname + (f":{parts.port}" if parts.port else "")  # drop any user:password@
        path = parts.path.rstrip("/")
        if not path.endswith("/chat/completions"):
            path += "/chat/completions"
        self.url = urllib.parse.urlunsplit((parts.scheme, host, path, parts.query, ""))

    def __repr__(self) -> str:  # never show the key
        return f"ChatClient(model={self.model!r}, url={self.url!r})"

    def configured(self) -> bool:
        """Whether there is somewhere to send a question: a base URL or an API key was given."""
        return self._has_url or bool(self._api_key)

    def complete(self, messages: Messages, temperature: float = 0, max_tokens: int | None = None) -> str:
        """The model's answer. ``messages`` is a list of ``{"role", "content"}`` or one user prompt string."""
        if not self.configured():
            raise ChatError(
                "no chat model configured: set KIREME_CHAT_BASE_URL (a local OpenAI-compatible server) "
                f"or {_KEY_HINT.removeprefix('set ')}"
            )
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": temperature,
        }
        if max_tokens is not None:
            payload["max_tokens"] = max_tokens
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8", "surrogatepass")
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            try:
                return self._parse(self._post(body))
            except _Retryable as exc:
                if attempt == attempts - 1:
                    raise ChatError(
                        f"{exc.message} (gave up after {attempts} attempt{'s' if attempts > 1 else ''})"
                    ) from None
                wait = exc.retry_after if exc.retry_after is not None else self.backoff * 2**attempt
                wait = min(max(wait, 0.0), _MAX_SLEEP)
                logger.info(
                    "%s; retrying in %.1fs (attempt %d of %d)", exc.message, wait, attempt + 2, attempts
                )
                self._sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    # -- one request ---------------------------------------------------------------------------------

    def _post(self, body: bytes) -> bytes:
        headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "kireme"}
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
                raise ChatError(f"TLS error talking to {self.url}: {reason}") from None
            raise ChatError(f"cannot reach {self.url}: {_describe(reason)} — {_URL_HINT}") from None
        except TimeoutError:
            raise self._timeout() from None
        except (http.client.RemoteDisconnected, ConnectionResetError, http.client.IncompleteRead) as exc:
            raise _Retryable(f"{self.url} dropped the connection: {_describe(exc)}") from None
        except OSError as exc:
            raise ChatError(f"cannot reach {self.url}: {_describe(exc)} — {_URL_HINT}") from None

    def _timeout(self) -> ChatError:
        return ChatError(
            f"{self.url} did not answer within {self.timeout:g}s; raise the timeout or use a faster model"
        )

    def _http_error(self, exc: urllib.error.HTTPError) -> Exception:
        status = exc.code
        detail = self._detail(exc)
        said = f"HTTP {status}" + (f": {detail}" if detail else "")
        if status in (401, 403):
            if not self._api_key:
                return ChatError(f"{self.url} needs an API key ({said}); {_KEY_HINT}")
            return ChatError(f"{self.url} rejected the API key as wrong or not allowed ({said}); {_KEY_HINT}")
        if status == 404:
            return ChatError(
                f"{self.url} has no chat completions endpoint or no model {self.model!r} ({said}); "
                "check the URL (it usually ends in /v1) and KIREME_CHAT_MODEL"
            )
        if status == 429 or status >= 500:
            return _Retryable(f"{self.url} answered {said}", _retry_after(exc.headers.get("Retry-After")))
        return ChatError(f"{self.url} refused the request ({said})")

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

    def _parse(self, raw: bytes) -> str:
        try:
            data = json.loads(raw)
        except ValueError:
            snippet = self._redact(" ".join(raw[:80].decode("utf-8", "replace").split()))
            raise ChatError(
                f"{self.url} did not answer with JSON (it began {snippet!r}); is it a chat completions API?"
            ) from None
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list) or not choices:
            raise ChatError(f"{self.url} answered without 'choices'; is it an OpenAI-compatible API?")
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
            content = "".join(
                part.get("text", "")
                for part in content
                if isinstance(part, dict) and part.get("type") == "text"
            )
        if not isinstance(content, str):
            raise ChatError(f"{self.url} answered with a choice that has no message content")
        if isinstance(choice, dict) and choice.get("finish_reason") == "length":
            logger.warning("the answer from %s was cut at the token limit", self.url)
        return content
