"""POST JSON to an OpenAI-compatible endpoint and get JSON back, with retries and one-line errors.

The embeddings client (`kireme.embed.http`) and the chat client (`kireme.index.chat`) speak to the
same kind of server over the same transport: ``urllib`` only (no HTTP client dependency), a bearer
key only when one is set, HTTP 429/5xx and dropped connections retried with exponential backoff (or
the server's ``Retry-After``), and every other failure turned into one line that says what to fix,
with the API key blanked out of anything the server echoes. `JsonEndpoint` is that transport, once;
each client keeps its payload, its response parsing, its settings and its own wording, passed in as
`Hints` together with the error class to raise. `parse_base_url` checks and splits the base URL both
clients are given, once.

`JsonEndpoint.post_stream` is the same transport for an answer sent as it is generated (server-sent
events, ``text/event-stream``): it yields each event's data as it arrives, with the same errors and the
same retries — but only while the caller has passed nothing on, since a retry starts the answer over.
"""

from __future__ import annotations

import contextlib
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
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

MAX_SLEEP = 10.0  # one wait, in seconds, even when Retry-After asks for more: a CLI must not hang
DETAIL_CHARS = 200  # how much of the server's own error message a message quotes
_READ_SIZE = 65536  # the most bytes one read of a streamed answer asks for


def env(*names: str) -> str | None:
    """The first of ``names`` set to a non-empty value (an empty variable counts as unset)."""
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


@dataclass(frozen=True)
class BaseURL:
    """An http(s) base URL, split: ``host`` is ``hostname[:port]``, never with ``user:password@``."""

    scheme: str
    host: str
    path: str
    query: str

    def join(self, path: str, query: str = "") -> str:
        """The URL of ``path`` on this server (``scheme://host/path?query``); credentials are dropped."""
        return urllib.parse.urlunsplit((self.scheme, self.host, path, query, ""))


def parse_base_url(url: str, *, what: str, setting: str, error_class: type[Exception]) -> BaseURL:
    """``url`` split into a `BaseURL`, or ``error_class`` saying it is not an http(s) URL.

    ``what`` names the URL in the message (``"embedding"``), ``setting`` where to set it
    (``"KIREME_EMBED_BASE_URL"``).

    >>> parse_base_url("http://user:pw@localhost:8000/v1", what="test", setting="X", error_class=ValueError)
    BaseURL(scheme='http', host='localhost:8000', path='/v1', query='')
    """
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # a port that is not a number
        port = -1
    if parts.scheme not in ("http", "https") or not parts.hostname or port == -1:
        raise error_class(
            f"{what} URL {url!r} is not an http(s) URL; set {setting} to e.g. http://localhost:8000/v1"
        )
    host = parts.hostname + (f":{port}" if port else "")
    return BaseURL(parts.scheme, host, parts.path, parts.query)


@dataclass(frozen=True)
class Hints:
    """What one client's error messages say beyond the shared wording (each is the tail of a sentence).

    ``unreachable`` follows "cannot reach URL: why — "; ``key`` follows the 401/403 message;
    ``rejected_key`` is what a 401/403 with a key set says the server did; ``timeout`` follows "did
    not answer within Ns; "; ``not_found`` follows the URL on a 404 ("has no ... endpoint or no model
    ..."), ``not_found_hint`` ends that message; ``too_large``, when set, ends a 413 message (else a
    413 is a plain refusal); ``api`` names what a non-JSON answer was expected to come from.
    """

    unreachable: str
    key: str
    timeout: str
    not_found: str
    not_found_hint: str
    api: str
    rejected_key: str = "rejected the API key"
    too_large: str | None = None


class _CrossOriginRedirect(Exception):
    """The server redirected to another origin (scheme, host or port): not followed, so no key goes there."""

    def __init__(self, target: str) -> None:
        super().__init__(target)
        parts = urllib.parse.urlsplit(target)
        host = parts.hostname or "?"
        port = f":{parts.port}" if parts.port else ""
        self.target = f"{parts.scheme}://{host}{port}{parts.path}"  # no user:password, no query


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only within the origin of the request: credentials never cross origins."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        if _origin(newurl) != _origin(req.full_url):
            raise _CrossOriginRedirect(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_SameOriginRedirects)


def check_api_key(key: str | None, *, error_class: type[Exception], hint: str) -> str | None:
    """``key`` without surrounding whitespace (a key file's line break), or ``error_class`` when a control
    character is left inside it. The message shows at most the key's last 4 characters.

    >>> check_api_key(" sk-test-1234\\r\\n", error_class=ValueError, hint="set X")
    'sk-test-1234'
    """
    if key is None:
        return None
    key = key.strip()
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in key):
        tail = "".join(ch if ch.isprintable() else "?" for ch in key[-4:])
        raise error_class(
            f"the API key (ending …{tail}) contains a control character; {hint} to a key without one"
        )
    return key or None


class _Retryable(Exception):
    """A failure worth another try (HTTP 429/5xx, a dropped connection); ``message`` is the final error."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


@dataclass(frozen=True)
class Event:
    """What `JsonEndpoint.post_stream` yields: one server-sent event's data, or a whole non-stream answer.

    ``data`` is the event's ``data:`` lines joined by line breaks (the SSE rule), as bytes; when
    ``whole_body`` is true the server did not answer with an event stream (it ignored the request to
    stream, or sent an error page) and ``data`` is its entire body, to be decoded as a plain answer.
    """

    data: bytes
    whole_body: bool = False


def _no_cut_off() -> str | None:
    return None


class JsonEndpoint:
    """One URL that takes a JSON body by POST and answers JSON, failing as ``error_class`` only.

    ``max_retries`` is how many times a 429/5xx answer or a dropped connection is retried; the n-th
    retry waits ``backoff * 2**n`` seconds, or the server's numeric ``Retry-After``, at most
    `MAX_SLEEP`, through ``sleep`` (injectable so tests need not wait). Retries are logged to ``log``.
    """

    def __init__(
        self,
        url: str,
        api_key: str | None,
        timeout: float,
        *,
        error_class: type[Exception],
        hints: Hints,
        max_retries: int = 3,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        log: logging.Logger = logger,
    ) -> None:
        self.url = url
        self._api_key = check_api_key(api_key, error_class=error_class, hint=hints.key)
        self.timeout = timeout
        self.error_class = error_class
        self.hints = hints
        self.max_retries = max_retries
        self.backoff = backoff
        self._sleep = sleep
        self._log = log

    def __repr__(self) -> str:  # never show the key
        return f"JsonEndpoint(url={self.url!r})"

    def post(self, payload: Any) -> Any:
        """The decoded JSON answer to ``payload``, retried as the class says; any failure is one error."""
        return self.decode(self.post_bytes(_encode(payload)))

    def post_bytes(self, body: bytes) -> bytes:
        """The raw answer to an already encoded ``body``, with the retries of `post`."""
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            try:
                return self._post_once(body)
            except _Retryable as exc:
                self._wait_or_give_up(exc, attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def post_stream(
        self, payload: Any, *, cut_off: Callable[[], str | None] = _no_cut_off
    ) -> Generator[Event, None, None]:
        """The answer to ``payload`` as server-sent events, each yielded as soon as it has arrived.

        The request asks for ``text/event-stream``; the answer is read line by line (each line is
        decoded whole, so a character split across network packets arrives intact), comment lines and
        the ``event:``/``id:``/``retry:`` fields are skipped, and an event is yielded at the blank line
        that ends it (or at the end of the answer). An answer that is not an event stream is yielded
        once, whole (`Event.whole_body`). Errors are those of `post`, and so are the retries — as long
        as ``cut_off()`` returns None, which the caller makes it do until it has passed something on:
        a retry starts the answer over. After that, a dropped connection or a timeout is an error that
        ends with the text ``cut_off()`` returns (say, how much of the answer got through). Closing
        the generator closes the connection.
        """
        body = _encode(payload)
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            try:
                yield from self._stream_once(body)
                return
            except _Retryable as exc:
                reason = cut_off()
                if reason is not None:
                    raise self.error_class(f"{exc.message}; {reason}") from None
                self._wait_or_give_up(exc, attempt)
            except self.error_class as exc:  # a timeout mid-answer: say how much got through
                reason = cut_off()
                if reason is None:
                    raise
                raise self.error_class(f"{exc}; {reason}") from None
        raise AssertionError("unreachable")  # pragma: no cover

    def decode(self, raw: bytes, *, failure: str = "did not answer with JSON") -> Any:
        """``raw`` as JSON, or an error that quotes its start (redacted) and asks whether this is the API.

        ``failure`` is what the message says went wrong, after the URL.
        """
        try:
            return json.loads(raw)
        except ValueError:
            snippet = self.redact(" ".join(raw[:80].decode("utf-8", "replace").split()))
            raise self.error_class(
                f"{self.url} {failure} (it began {snippet!r}); is it {self.hints.api}?"
            ) from None

    def server_message(self, data: Any) -> str:
        """The server's own error message in ``data`` (decoded JSON, or text that was not JSON).

        ``{"error": {"message": ...}}``, ``{"error": "..."}``, ``{"detail": ...}`` or plain text, on
        one short line with the API key blanked out, so that it can be quoted in an error.
        """
        error = data.get("error", data) if isinstance(data, dict) else data
        if isinstance(error, dict):
            error = error.get("message") or error.get("detail") or error
        text = error if isinstance(error, str) else json.dumps(error, ensure_ascii=False)
        return self.redact(" ".join(text.split()))[:DETAIL_CHARS]

    def redact(self, text: str) -> str:
        """``text`` with the API key, if any, replaced by ``***``."""
        return text.replace(self._api_key, "***") if self._api_key else text

    # -- one attempt ---------------------------------------------------------------------------------

    def _wait_or_give_up(self, exc: _Retryable, attempt: int) -> None:
        """After the failed ``attempt`` (0 first): wait before the next one, or raise if it was the last."""
        attempts = self.max_retries + 1
        if attempt >= attempts - 1:
            raise self.error_class(
                f"{exc.message} (gave up after {attempts} attempt{'s' if attempts > 1 else ''})"
            ) from None
        wait = exc.retry_after if exc.retry_after is not None else self.backoff * 2**attempt
        wait = min(max(wait, 0.0), MAX_SLEEP)
        self._log.info("%s; retrying in %.1fs (attempt %d of %d)", exc.message, wait, attempt + 2, attempts)
        self._sleep(wait)

    def _post_once(self, body: bytes) -> bytes:
        with self._failures(), self._open(body, accept="application/json") as response:
            payload: bytes = response.read()
            return payload

    def _stream_once(self, body: bytes) -> Iterator[Event]:
        """One attempt of `post_stream`: its events, parsed by the rules of server-sent events."""
        with self._failures():
            response = self._open(body, accept="text/event-stream")
        with response:
            if response.headers.get_content_type() != "text/event-stream":
                with self._failures():
                    whole: bytes = response.read()
                yield Event(whole, whole_body=True)
                return
            data: list[bytes] = []
            for number, raw_line in enumerate(self._lines(response)):
                line = raw_line.removeprefix(b"\xef\xbb\xbf") if number == 0 else raw_line  # a BOM
                line = line.rstrip(b"\r\n")
                if not line:  # the blank line that ends an event
                    if data:
                        yield Event(b"\n".join(data))
                        data = []
                    continue
                field, _, value = line.partition(b":")
                if field == b"data":  # a comment (":...") has an empty field; other fields don't matter
                    data.append(value.removeprefix(b" "))
            if data:  # the last event, without its blank line
                yield Event(b"\n".join(data))

    def _lines(self, response: http.client.HTTPResponse) -> Iterator[bytes]:
        """The lines of ``response`` (each whole, with its line break), each as soon as it has arrived.

        A line is only split at ``\\n``, so a UTF-8 character sent in two pieces comes out whole. Read
        with ``read1`` (what has arrived, at most one wait) rather than ``readline``, whose look-ahead
        takes a chunked answer that was cut off for one that ended: ``read1`` raises `IncompleteRead`.
        """
        pending = bytearray()
        while True:
            with self._failures():
                block: bytes = response.read1(_READ_SIZE)
            if not block:
                break
            start = 0
            while (end := block.find(b"\n", start)) >= 0:
                pending += block[start : end + 1]
                yield bytes(pending)
                pending.clear()
                start = end + 1
            pending += block[start:]
        if pending:  # the last line, without its line break
            yield bytes(pending)

    def _open(self, body: bytes, *, accept: str) -> http.client.HTTPResponse:
        """The response to POSTing ``body``, its headers read; failures are left to `_failures`."""
        headers = {"Content-Type": "application/json", "Accept": accept, "User-Agent": "kireme"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        response: http.client.HTTPResponse = _OPENER.open(request, timeout=self.timeout)  # typeshed: Any
        return response

    @contextlib.contextmanager
    def _failures(self) -> Iterator[None]:
        """Turns what sending a request or reading its answer raises into one ``error_class`` line, or
        `_Retryable` for what is worth another try: one mapping for plain and streamed answers."""
        try:
            yield
        except _CrossOriginRedirect as exc:
            raise self.error_class(
                f"{self.url} redirected to another origin ({exc.target}); not followed, so the API key "
                "is not sent there: use the final URL as the base URL if you trust it"
            ) from None
        except urllib.error.HTTPError as exc:
            with exc:
                raise self._http_error(exc) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError):
                raise self._timeout() from None
            if isinstance(reason, ssl.SSLError):
                raise self.error_class(f"TLS error talking to {self.url}: {reason}") from None
            raise self._unreachable(reason) from None
        except TimeoutError:  # the read timed out after the connection was made
            raise self._timeout() from None
        except (http.client.RemoteDisconnected, ConnectionResetError, http.client.IncompleteRead) as exc:
            raise _Retryable(f"{self.url} dropped the connection: {describe(exc)}") from None
        except OSError as exc:
            raise self._unreachable(exc) from None

    def _unreachable(self, reason: object) -> Exception:
        return self.error_class(f"cannot reach {self.url}: {describe(reason)} — {self.hints.unreachable}")

    def _timeout(self) -> Exception:
        return self.error_class(f"{self.url} did not answer within {self.timeout:g}s; {self.hints.timeout}")

    def _http_error(self, exc: urllib.error.HTTPError) -> Exception:
        status = exc.code
        detail = self._detail(exc)
        said = f"HTTP {status}" + (f": {detail}" if detail else "")
        hints = self.hints
        if status in (401, 403):
            if not self._api_key:
                return self.error_class(f"{self.url} needs an API key ({said}); {hints.key}")
            return self.error_class(f"{self.url} {hints.rejected_key} ({said}); {hints.key}")
        if status == 404:
            return self.error_class(f"{self.url} {hints.not_found} ({said}); {hints.not_found_hint}")
        if status == 413 and hints.too_large is not None:
            return self.error_class(f"{self.url} refused a request as too large ({said}); {hints.too_large}")
        if status == 429 or status >= 500:
            return _Retryable(f"{self.url} answered {said}", retry_after(exc.headers.get("Retry-After")))
        return self.error_class(f"{self.url} refused the request ({said})")

    def _detail(self, exc: urllib.error.HTTPError) -> str:
        """The server's own error message, on one short line, with the API key blanked out."""
        try:
            raw = exc.read(4096).decode("utf-8", "replace")
        except (OSError, http.client.HTTPException):
            return ""
        try:
            data: Any = json.loads(raw)
        except ValueError:
            data = raw
        return self.server_message(data)


def _encode(payload: Any) -> bytes:
    """``payload`` as a UTF-8 JSON body."""
    text = json.dumps(payload, ensure_ascii=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (a file name that is not UTF-8): JSON escapes keep it
        return json.dumps(payload).encode("ascii")


def retry_after(value: str | None) -> float | None:
    """Seconds from a numeric ``Retry-After``; an HTTP date or garbage means "use the backoff"."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 and seconds == seconds else None


def describe(error: object) -> str:
    """A connection failure in words (``[Errno 111] Connection refused`` becomes ``connection refused``)."""
    if isinstance(error, socket.gaierror):
        return f"unknown host ({error.strerror or error})"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__
