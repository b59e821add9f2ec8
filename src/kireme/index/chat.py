"""Answers from any OpenAI-compatible ``/chat/completions`` endpoint, with the standard library only.

OpenAI, vLLM, llama.cpp's server, LM Studio and Ollama's OpenAI API all take POST ``{"model",
"messages", "temperature"}`` and answer ``{"choices": [{"message": {"content": ...}}]}``.

Settings come from the arguments first, then the environment, first set (non-empty) name wins:

* base URL: ``KIREME_CHAT_BASE_URL``, then ``OPENAI_BASE_URL``; without either, OpenAI's
  ``https://api.openai.com/v1`` — but only when an API key is set (a key alone means "use OpenAI");
* API key: ``KIREME_CHAT_API_KEY``, then ``OPENAI_API_KEY`` (none: no ``Authorization`` header);
* model: ``KIREME_CHAT_MODEL``, then ``OPENAI_MODEL``, then ``gpt-4o-mini``.

`ChatClient.stream` asks for the same answer with ``"stream": true`` and yields its text as the server
generates it (server-sent events of ``choices[0].delta.content``), so that a server of ours can pass it
on at once; a server that ignores ``stream`` and answers in one piece still works.

Every failure becomes one `ChatError` line that says what to fix; the API key never appears in a
message, nor the values of the base URL's query string (a gateway's ``?api-key=...`` is sent, and shown
as ``***``). HTTP 429 and 5xx (and dropped connections) are retried with exponential backoff — when
streaming, only until the first piece of text has been yielded; that transport is `kireme.httpjson`'s,
shared with the embeddings client. An answer (a stream: all of it) larger than ``max_response_bytes``
or not complete ``deadline`` seconds after the question was sent is an error (defaults:
``KIREME_HTTP_MAX_RESPONSE_BYTES``, ``KIREME_HTTP_DEADLINE``, else 64 MiB and 120 s).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from kireme.errors import ChatError, ConfigError
from kireme.httpjson import Hints, JsonEndpoint, deadline_seconds, env, env_name, parse_base_url

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
_KEY_HINT = "set KIREME_CHAT_API_KEY or OPENAI_API_KEY"


Messages = str | Sequence[Mapping[str, Any]]


class ChatClient:
    """A client for one chat model behind an OpenAI-compatible API.

    ``max_retries`` is how many times a 429/5xx answer is retried (waits ``backoff * 2**n`` seconds, or
    the server's ``Retry-After``, at most 10 s each); ``sleep`` is injectable for tests. ``timeout`` is
    the longest wait for one read (by default the deadline: a local model may send nothing until it has
    read the whole prompt), ``deadline`` for all of an answer, retries included, and
    ``max_response_bytes`` its size (see `kireme.httpjson.JsonEndpoint`). ``url`` is the endpoint as
    messages show it (`kireme.httpjson.redact_url`).
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        timeout: float | None = None,
        *,
        max_retries: int = 3,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        max_response_bytes: int | None = None,
        deadline: float | None = None,
    ) -> None:
        if max_retries < 0:
            raise ConfigError(f"max_retries must not be negative, got {max_retries}")
        key_variables = ("KIREME_CHAT_API_KEY", "OPENAI_API_KEY")
        self._api_key = api_key or env(*key_variables)
        explicit_url = base_url or env("KIREME_CHAT_BASE_URL", "OPENAI_BASE_URL")
        self._has_url = bool(explicit_url)
        self.base_url = (explicit_url or DEFAULT_BASE_URL).rstrip("/")
        self.model = model or env("KIREME_CHAT_MODEL", "OPENAI_MODEL") or DEFAULT_MODEL
        # a model's first byte may come only after it read the whole prompt (minutes for a local model on a
        # CPU): one read may take as long as the answer's deadline, unless told otherwise
        timeout = deadline_seconds(deadline) if timeout is None else timeout
        self.timeout = timeout
        # why the last answer ended, as the server said (``"stop"``, ``"length"``: cut at the token limit)
        self.finish_reason: str | None = None
        self.max_retries = max_retries
        self.backoff = backoff
        parts = parse_base_url(
            self.base_url, what="chat", setting="KIREME_CHAT_BASE_URL", error_class=ChatError
        )
        path = parts.path.rstrip("/")
        if not path.endswith("/chat/completions"):
            path += "/chat/completions"
        self._endpoint = JsonEndpoint(
            parts.join(path, parts.query),
            self._api_key,
            timeout,
            error_class=ChatError,
            hints=Hints(
                unreachable="is the server running? set KIREME_CHAT_BASE_URL (e.g. http://localhost:8000/v1)",
                key=_KEY_HINT,
                timeout="give it more time (--http-deadline, KIREME_HTTP_DEADLINE) or use a faster model",
                not_found=f"has no chat completions endpoint or no model {self.model!r}",
                not_found_hint="check the URL (it usually ends in /v1) and KIREME_CHAT_MODEL",
                api="a chat completions API",
                rejected_key="rejected the API key as wrong or not allowed",
            ),
            max_retries=max_retries,
            backoff=backoff,
            sleep=sleep,
            log=logger,
            max_response_bytes=max_response_bytes,
            deadline=deadline,
            key_source="the api_key argument (--api-key)" if api_key else env_name(*key_variables),
        )
        self.url = self._endpoint.url  # the query's values as *** (they may be keys)

    def __repr__(self) -> str:  # never show the key
        return f"ChatClient(model={self.model!r}, url={self.url!r})"

    def configured(self) -> bool:
        """Whether there is somewhere to send a question: a base URL or an API key was given."""
        return self._has_url or bool(self._api_key)

    def complete(self, messages: Messages, temperature: float = 0, max_tokens: int | None = None) -> str:
        """The model's answer. ``messages`` is a list of ``{"role", "content"}`` or one user prompt string."""
        return self._answer(self._endpoint.post(self._payload(messages, temperature, max_tokens)))

    def stream(
        self, messages: Messages, temperature: float = 0, max_tokens: int | None = None
    ) -> Iterator[str]:
        """The model's answer in pieces, each yielded as soon as the server has sent it.

        Takes what `complete` takes; the pieces join to the answer. The request is `complete`'s with
        ``"stream": true``; a server that answers in one piece anyway yields it as one piece. Failures
        are `complete`'s `ChatError` lines; a missing configuration is raised at once, by this call.
        429/5xx answers and dropped connections are retried only until the first piece has been
        yielded (a retry would start the answer over): a connection dropped after that is an error
        that says after how many characters the answer was cut off. Closing the iterator early closes
        the connection.
        """
        payload = self._payload(messages, temperature, max_tokens)
        payload["stream"] = True
        self.finish_reason = None
        return self._stream(payload)

    def _payload(self, messages: Messages, temperature: float, max_tokens: int | None) -> dict[str, Any]:
        """The chat completions request for ``messages``; `ChatError` when there is nowhere to send it."""
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
        return payload

    def _stream(self, payload: dict[str, Any]) -> Iterator[str]:
        """The text deltas of the streamed answer to ``payload`` (see `stream`).

        The answer ends at ``[DONE]`` or at the first choice's ``finish_reason`` (what may follow, such
        as usage totals, is not needed, and a connection that drops after it loses nothing); a stream
        that ends before either lost the end of the answer.
        """
        sent = 0  # characters yielded so far: once there are any, nothing may be retried

        def cut_off() -> str | None:
            return f"the answer was cut off after {sent} characters" if sent else None

        chunks = False  # an event with a choice arrived: this is a chat completions stream
        events = self._endpoint.post_stream(payload, cut_off=cut_off)
        with contextlib.closing(events):
            for event in events:
                if event.whole_body:  # the server ignored "stream": a plain chat completion
                    answer = self._answer(self._endpoint.decode(event.data))
                    if answer:
                        yield answer
                    return
                if event.data.strip() == b"[DONE]":
                    if not chunks:
                        break
                    return
                data = self._endpoint.decode(event.data, failure="sent an event that is not JSON")
                if isinstance(data, dict) and "error" in data:
                    said = self._endpoint.server_message(data)
                    cut = f"; {cut_off()}" if sent else ""
                    raise ChatError(f"{self.url} reported an error while answering: {said}{cut}")
                choice = _first_choice(data, self.url)
                if choice is None:  # e.g. the usage totals some servers send last
                    continue
                chunks = True
                text = _delta_text(choice)
                if text:
                    sent += len(text)
                    yield text
                if choice.get("finish_reason") is not None:
                    self.finish_reason = str(choice["finish_reason"])
                    if choice["finish_reason"] == "length":
                        logger.warning("the answer from %s was cut at the token limit", self.url)
                    return
        if not chunks:
            raise ChatError(f"{self.url} answered without 'choices'; is it an OpenAI-compatible API?")
        cut = f"; {cut_off()}" if sent else " (no text had arrived)"
        raise ChatError(f"{self.url} closed the stream before the answer was finished{cut}")

    def _answer(self, data: Any) -> str:
        """The text of the first choice of a decoded chat completions response."""
        choices = data.get("choices") if isinstance(data, dict) else None
        if isinstance(data, dict) and "error" in data and not choices:  # a gateway's error with status 200
            said = self._endpoint.server_message(data)
            raise ChatError(f"{self.url} answered with an error: {said}")
        if not isinstance(choices, list) or not choices:
            raise ChatError(f"{self.url} answered without 'choices'; is it an OpenAI-compatible API?")
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
            content = _parts_text(content)
        if not isinstance(content, str):
            raise ChatError(f"{self.url} answered with a choice that has no message content")
        reason = choice.get("finish_reason") if isinstance(choice, dict) else None
        self.finish_reason = None if reason is None else str(reason)
        if reason == "length":
            logger.warning("the answer from %s was cut at the token limit", self.url)
        return content


def _first_choice(data: Any, url: str) -> dict[str, Any] | None:
    """The first choice (index 0) in a decoded stream chunk; None for a chunk without it (usage totals)."""
    if not isinstance(data, dict):
        raise ChatError(f"{url} sent an event that is not a JSON object; is it a chat completions API?")
    choices = data.get("choices")
    for choice in choices if isinstance(choices, list) else ():
        if isinstance(choice, dict) and choice.get("index", 0) == 0:
            found: dict[str, Any] = choice
            return found
    return None


def _delta_text(choice: Mapping[str, Any]) -> str:
    """The text a stream chunk's choice adds: ``delta.content`` as a string or as content parts.

    A delta with only a role, a null content or something else entirely adds nothing.
    """
    delta = choice.get("delta")
    content = delta.get("content") if isinstance(delta, dict) else None
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
        content = _parts_text(content)
    return content if isinstance(content, str) else ""


def _parts_text(parts: list[Any]) -> str:
    """The text of content parts ``[{"type": "text", "text": ...}, ...]``; other parts are skipped."""
    return "".join(
        part["text"]
        for part in parts
        if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
    )
