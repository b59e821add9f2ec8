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

A server cannot make a client hang or fill its memory: one answer (a stream: all of it) may be at most
`DEFAULT_MAX_RESPONSE_BYTES` long and must be complete `DEFAULT_DEADLINE` seconds after the request was
first sent, retries included (``KIREME_HTTP_MAX_RESPONSE_BYTES`` and ``KIREME_HTTP_DEADLINE``, or the
clients' arguments, change both). The deadline holds however slowly the bytes come: every send and read
on the connection waits at most until it, from connecting to the last byte. JSON nested more than
`MAX_JSON_DEPTH` deep is refused before it is parsed. Secrets stay out of every message: a URL is shown
without ``user:password@`` and with its query values as ``***`` (`redact_url`), and what a server echoes
has the API key and those query values blanked out.
"""

from __future__ import annotations

import contextlib
import contextvars
import http.client
import io
import json
import logging
import math
import os
import re
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from kireme.errors import ConfigError

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer, WriteableBuffer

logger = logging.getLogger(__name__)

MAX_SLEEP = 10.0  # one wait, in seconds, even when Retry-After asks for more: a CLI must not hang
DETAIL_CHARS = 200  # how much of the server's own error message a message quotes
_READ_SIZE = 65536  # the most bytes one read of an answer asks for

# One answer, or all of a stream: 64 MiB is 15 times the JSON of 64 vectors of 3,072 dimensions (the
# embedder's batch), and far more than any chat answer; a server that sends more is broken or hostile.
DEFAULT_MAX_RESPONSE_BYTES = 64 << 20
# Seconds from sending a request to the last byte of its answer, retries and their waits included.
DEFAULT_DEADLINE = 120.0
SIZE_VARIABLE = "KIREME_HTTP_MAX_RESPONSE_BYTES"
DEADLINE_VARIABLE = "KIREME_HTTP_DEADLINE"
# what the messages tell users to raise (kireme ask and kireme index have these options)
_SIZE_SETTING = f"--http-max-response-bytes or {SIZE_VARIABLE}"
_DEADLINE_SETTING = f"--http-deadline or {DEADLINE_VARIABLE}"
# No OpenAI-compatible answer nests more than a handful of levels (embeddings: 4). Refusing deeper JSON
# before parsing it keeps far below Python's recursion limit: neither json.loads nor the code that reads
# the value (json.dumps of an error, numpy) can fail on it with a RecursionError.
MAX_JSON_DEPTH = 128


def env(*names: str) -> str | None:
    """The first of ``names`` set to a non-empty value (an empty variable counts as unset)."""
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def env_name(*names: str) -> str | None:
    """Which of ``names`` `env` takes its value from (None: none is set), to say where a bad value is."""
    return next((name for name in names if os.environ.get(name)), None)


_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int | None:
    """Bytes from ``500000``, ``64K``, ``200M`` or ``1G`` (powers of 1024, as ``--max-file-size``
    reads them), or None when ``text`` is not a size of at least one byte.

    >>> parse_size("64M"), parse_size("1.5k"), parse_size("0"), parse_size("lots")
    (67108864, 1536, None, None)
    """
    body = text.strip().upper().removesuffix("B").removesuffix("I")
    number = body.rstrip("KMG")
    try:
        size = int(float(number) * _SIZE_UNITS[body[len(number) :]])
    except (ValueError, KeyError, OverflowError):  # not a number, an unknown unit, inf
        return None
    return size if size >= 1 else None


def response_limit(given: int | None = None) -> int:
    """The size limit on one answer: ``given``, else `SIZE_VARIABLE`, else `DEFAULT_MAX_RESPONSE_BYTES`;
    `ConfigError` for a limit that is not a size of at least one byte."""
    if given is not None:
        if given < 1:
            raise ConfigError(f"the response size limit must be at least 1 byte, got {given}")
        return given
    text = env(SIZE_VARIABLE)
    if text is None:
        return DEFAULT_MAX_RESPONSE_BYTES
    size = parse_size(text)
    if size is None:
        raise ConfigError(f"{SIZE_VARIABLE}={text!r} is not a size such as 500000, 64K, 200M or 1G")
    return size


def deadline_seconds(given: float | None = None) -> float:
    """The deadline of one answer in seconds: ``given``, else `DEADLINE_VARIABLE`, else
    `DEFAULT_DEADLINE`; `ConfigError` for one that is not a positive number."""
    if given is not None:
        if not 0 < given < math.inf:
            raise ConfigError(f"the deadline must be a positive number of seconds, got {given!r}")
        return float(given)
    text = env(DEADLINE_VARIABLE)
    if text is None:
        return DEFAULT_DEADLINE
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds < math.inf:
        raise ConfigError(f"{DEADLINE_VARIABLE}={text!r} is not a positive number of seconds")
    return seconds


def redact_url(url: str) -> str:
    """``url`` fit to print, log or store: without ``user:password@``, each query value as ``***`` (a
    gateway may take its key there: ``?api-key=...``), without a fragment.

    >>> redact_url("https://me:pw@host:8443/v1/chat?api-key=sk-1&api-version=2024-06-01&token")
    'https://host:8443/v1/chat?api-key=***&api-version=***&***'
    """
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # a broken IPv6 address: keep what is before the query, less any user:password@
        return re.sub(r"//[^/?#]*@", "//", url.partition("?")[0].partition("#")[0])
    netloc = parts.netloc.rpartition("@")[2]
    query = "&".join(_redacted_field(field) for field in parts.query.split("&")) if parts.query else ""
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def _redacted_field(field: str) -> str:
    """``name=value`` as ``name=***``; a bare field (which may be the key itself) as ``***``."""
    name, equals, _ = field.partition("=")
    return f"{name}=***" if equals else "***"


def _url_secrets(url: str) -> set[str]:
    """The values in ``url``'s query string and its password, as written and decoded, that are long
    enough to be keys (blanking out a short value such as ``1`` would garble a message, not protect it)."""
    try:
        parts = urllib.parse.urlsplit(url)
        password = parts.password
    except ValueError:
        return set()
    values = [password or ""]
    for field in parts.query.split("&"):
        name, equals, value = field.partition("=")
        values.append(value if equals else name)
    found = {form for value in values for form in (value, urllib.parse.unquote_plus(value))}
    return {value for value in found if len(value) >= 8}


@dataclass(frozen=True)
class BaseURL:
    """An http(s) base URL, split: ``host`` is ``hostname[:port]``, never with ``user:password@``."""

    scheme: str
    host: str
    path: str
    query: str

    def join(self, path: str, query: str = "") -> str:
        """The URL of ``path`` on this server (``scheme://host/path?query``); credentials are dropped.

        This is the URL requested, query values and all; print `redact_url` of it.
        """
        return urllib.parse.urlunsplit((self.scheme, self.host, path, query, ""))


# what stays as it is in a path or query: visible ASCII (the rest is percent-encoded, as HTTP needs)
_VISIBLE_ASCII = "".join(map(chr, range(0x21, 0x7F)))


def parse_base_url(url: str, *, what: str, setting: str, error_class: type[Exception]) -> BaseURL:
    """``url`` split into a `BaseURL`, or ``error_class`` saying it is not an http(s) URL.

    ``what`` names the URL in the message (``"embedding"``), ``setting`` where to set it
    (``"KIREME_EMBED_BASE_URL"``). The message shows the URL redacted (`redact_url`). A space or a
    control character is refused (no request could carry it); other characters beyond ASCII in the
    path or query are percent-encoded.

    >>> parse_base_url("http://user:pw@localhost:8000/v1", what="test", setting="X", error_class=ValueError)
    BaseURL(scheme='http', host='localhost:8000', path='/v1', query='')
    """
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        raise error_class(
            f"{what} URL {redact_url(url)!r} contains a space or a control character; set {setting} to "
            "the URL alone"
        )
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:  # a port that is not a number, a broken IPv6 address
        parts, port = urllib.parse.urlsplit(""), -1
    if parts.scheme not in ("http", "https") or not parts.hostname or port == -1:
        raise error_class(
            f"{what} URL {redact_url(url)!r} is not an http(s) URL; set {setting} to e.g. "
            "http://localhost:8000/v1"
        )
    name = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname  # an IPv6 address
    host = name + (f":{port}" if port else "")
    path, query = (urllib.parse.quote(part, safe=_VISIBLE_ASCII) for part in (parts.path, parts.query))
    return BaseURL(parts.scheme, host, path, query)


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
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None:  # urllib would read the redirect's body whole, however large: it is not needed
            fp.close()
        return new


# -- every send and read by a deadline --------------------------------------------------------------------

# (deadline on time.monotonic(), the most one socket operation may wait) of the request being opened in
# this thread: the connection `_OPENER` makes for it reads them when it connects
_LIMITS: contextvars.ContextVar[tuple[float, float] | None] = contextvars.ContextVar(
    "kireme_http_deadline", default=None
)


class _DeadlinePassed(TimeoutError):
    """The deadline of a request passed while it was being sent or answered."""


def _wait(deadline: float, timeout: float) -> tuple[float, bool]:
    """How long the next socket operation may wait — what is left until ``deadline``, at most
    ``timeout`` — and whether that is the deadline's doing; `_DeadlinePassed` when nothing is left."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise _DeadlinePassed
    return (left, True) if left < timeout else (timeout, False)


@contextlib.contextmanager
def _by_deadline(sock: socket.socket, deadline: float, timeout: float) -> Iterator[None]:
    """One operation on ``sock`` within `_wait`'s time; its timeout is `_DeadlinePassed` when the
    deadline was what ran out."""
    wait, at_deadline = _wait(deadline, timeout)
    sock.settimeout(wait)
    try:
        yield
    except TimeoutError:
        if at_deadline:
            raise _DeadlinePassed from None
        raise


class _DeadlineReader(io.RawIOBase):
    """The reading side of a connection whose every read ends by a deadline (and within a timeout)."""

    def __init__(self, sock: socket.socket, deadline: float, timeout: float) -> None:
        super().__init__()
        self._sock, self._deadline, self._timeout = sock, deadline, timeout
        # a file of the socket's own: the connection closes when the last of its files does
        self._raw = sock.makefile("rb", buffering=0)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int | None:
        with _by_deadline(self._sock, self._deadline, self._timeout):
            return self._raw.readinto(buffer)

    def fileno(self) -> int:
        return self._raw.fileno()

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


class _DeadlineSocket:
    """A connected socket whose sends and reads all end by ``deadline``, each within ``timeout``.

    http.client calls ``sendall``, ``makefile`` and ``close`` on its connection's socket (and urllib
    ``close``); anything else is passed on to the socket.
    """

    def __init__(self, sock: socket.socket, deadline: float, timeout: float) -> None:
        self._sock, self._deadline, self._timeout = sock, deadline, timeout

    def sendall(self, data: ReadableBuffer) -> None:
        with _by_deadline(self._sock, self._deadline, self._timeout):
            self._sock.sendall(data)

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline, self._timeout))

    def close(self) -> None:
        self._sock.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def _connect_by_deadline(connection: http.client.HTTPConnection, connect: Callable[[], None]) -> None:
    """``connect()`` (TCP, and TLS for https) within what is left until the deadline of the request
    being opened, then every send and read on ``connection`` by that deadline too."""
    limits = _LIMITS.get()
    if limits is None:  # not a request of JsonEndpoint's
        connect()
        return
    deadline, timeout = limits
    wait, at_deadline = _wait(deadline, timeout)
    connection.timeout = wait
    try:
        connect()
    except TimeoutError:
        if at_deadline:
            raise _DeadlinePassed from None
        raise
    # duck-typed: http.client uses only what _DeadlineSocket has
    connection.sock = cast(socket.socket, _DeadlineSocket(connection.sock, deadline, timeout))


class _HTTPConnection(http.client.HTTPConnection):
    def connect(self) -> None:
        _connect_by_deadline(self, super().connect)


class _HTTPSConnection(http.client.HTTPSConnection):
    def connect(self) -> None:
        _connect_by_deadline(self, super().connect)


class _HTTPHandler(urllib.request.HTTPHandler):
    """urllib's handler, with connections whose every operation ends by the request's deadline."""

    def do_open(self, http_class: Any, req: urllib.request.Request, **args: Any) -> http.client.HTTPResponse:
        return super().do_open(_HTTPConnection, req, **args)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    """urllib's handler (its TLS settings as they are), with connections bound by the deadline."""

    def do_open(self, http_class: Any, req: urllib.request.Request, **args: Any) -> http.client.HTTPResponse:
        return super().do_open(_HTTPSConnection, req, **args)


_OPENER = urllib.request.build_opener(_SameOriginRedirects, _HTTPHandler, _HTTPSHandler)


def check_api_key(
    key: str | None, *, error_class: type[Exception], hint: str, source: str | None = None
) -> str | None:
    """``key`` without surrounding whitespace (a key file's line break), or ``error_class`` when a
    character an HTTP header cannot carry is left inside it: a control character, or anything beyond
    ASCII (a typographic quote, a letter pasted with the key). The message never shows the key, not even
    a part of it; it names ``source``, where the key came from (``"KIREME_CHAT_API_KEY"``), when given.

    >>> check_api_key(" sk-test-1234\\r\\n", error_class=ValueError, hint="set X")
    'sk-test-1234'
    """
    if key is None:
        return None
    key = key.strip()
    where = f" from {source}" if source else ""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in key):
        found = "a control character"
    elif not key.isascii():
        found = "a character beyond ASCII"
    else:
        return key or None
    raise error_class(
        f"the API key{where} contains {found}, which an HTTP header cannot carry (the key is not shown); "
        f"{hint} to the key alone"
    )


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

    ``timeout`` is the longest wait for any one send or read; ``deadline`` (`deadline_seconds`) bounds a
    whole call — every attempt, every wait between them, every byte of the answer — and
    ``max_response_bytes`` (`response_limit`) the answer's size; both default to the environment,
    then `DEFAULT_DEADLINE` and `DEFAULT_MAX_RESPONSE_BYTES` (a bad setting is a `ConfigError`). ``url``
    is requested as given, query string and all; the ``url`` attribute, which every message shows, is
    `redact_url` of it. ``key_source`` names where the key came from, for the message that refuses it.
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
        max_response_bytes: int | None = None,
        deadline: float | None = None,
        key_source: str | None = None,
    ) -> None:
        self._target = url  # what is requested: a gateway may need the query's values (its key)
        self.url = redact_url(url)
        self._api_key = check_api_key(api_key, error_class=error_class, hint=hints.key, source=key_source)
        # longest first, so that a secret inside another is blanked out with it
        secrets = _url_secrets(url) | ({self._api_key} if self._api_key else set())
        self._secrets = sorted(secrets, key=len, reverse=True)
        self.timeout = timeout
        self.max_response_bytes = response_limit(max_response_bytes)
        self.deadline = deadline_seconds(deadline)
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
        deadline = time.monotonic() + self.deadline
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            try:
                return self._post_once(body, deadline)
            except _Retryable as exc:
                self._wait_or_give_up(exc, attempt, deadline)
        raise AssertionError("unreachable")  # pragma: no cover

    def post_stream(
        self, payload: Any, *, cut_off: Callable[[], str | None] = _no_cut_off
    ) -> Generator[Event, None, None]:
        """The answer to ``payload`` as server-sent events, each yielded as soon as it has arrived.

        The request asks for ``text/event-stream``; the answer is read line by line (each line is
        decoded whole, so a character split across network packets arrives intact), comment lines and
        the ``event:``/``id:``/``retry:`` fields are skipped, and an event is yielded at the blank line
        that ends it (or at the end of the answer). An answer that is not an event stream is yielded
        once, whole (`Event.whole_body`). The size limit is on all of the stream, the deadline on its
        last byte (time the caller takes between events counts). Errors are those of `post`, and so are
        the retries — as long as ``cut_off()`` returns None, which the caller makes it do until it has
        passed something on: a retry starts the answer over. After that, a dropped connection, a
        timeout or a limit is an error that ends with the text ``cut_off()`` returns (say, how much of
        the answer got through). Closing the generator closes the connection.
        """
        body = _encode(payload)
        deadline = time.monotonic() + self.deadline  # for all of the answer, from now
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            try:
                yield from self._stream_once(body, deadline)
                return
            except _Retryable as exc:
                reason = cut_off()
                if reason is not None:
                    raise self.error_class(f"{exc.message}; {reason}") from None
                self._wait_or_give_up(exc, attempt, deadline)
            except self.error_class as exc:  # a timeout or a limit mid-answer: say how much got through
                reason = cut_off()
                if reason is None:
                    raise
                raise self.error_class(f"{exc}; {reason}") from None
        raise AssertionError("unreachable")  # pragma: no cover

    def decode(self, raw: bytes, *, failure: str = "did not answer with JSON") -> Any:
        """``raw`` as JSON, or an error that quotes its start (redacted) and asks whether this is the API.

        ``failure`` is what the message says went wrong, after the URL. JSON nested more than
        `MAX_JSON_DEPTH` deep is an error of its own.
        """
        try:
            return load_json(raw)
        except _TooDeep:
            raise self.error_class(
                f"{self.url} answered JSON nested more than {MAX_JSON_DEPTH} levels deep; is it "
                f"{self.hints.api}?"
            ) from None
        except ValueError:  # the start quoted, cut after blanking out secrets (a cut one would not be)
            snippet = self.redact(" ".join(raw[:1000].decode("utf-8", "replace").split()))[:80]
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
        """``text`` with the API key and the URL's secrets (its query values, a password) as ``***``."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    # -- one attempt ---------------------------------------------------------------------------------

    def _wait_or_give_up(self, exc: _Retryable, attempt: int, deadline: float) -> None:
        """After the failed ``attempt`` (0 first): wait before the next one, or raise if it was the last
        or the wait would end past ``deadline``."""
        attempts = self.max_retries + 1
        if attempt >= attempts - 1:
            raise self.error_class(
                f"{exc.message} (gave up after {attempts} attempt{'s' if attempts > 1 else ''})"
            ) from None
        wait = exc.retry_after if exc.retry_after is not None else self.backoff * 2**attempt
        wait = min(max(wait, 0.0), MAX_SLEEP)
        if time.monotonic() + wait >= deadline:
            tried = f"{attempt + 1} attempt{'s' if attempt else ''}"
            raise self.error_class(
                f"{exc.message} (gave up after {tried}: no time left for another before the "
                f"{self.deadline:g}s deadline, which {_DEADLINE_SETTING} raises)"
            ) from None
        self._log.info("%s; retrying in %.1fs (attempt %d of %d)", exc.message, wait, attempt + 2, attempts)
        self._sleep(wait)

    def _post_once(self, body: bytes, deadline: float) -> bytes:
        with self._failures(), self._open(body, accept="application/json", deadline=deadline) as response:
            return self._read_all(response)

    def _read_all(self, response: http.client.HTTPResponse) -> bytes:
        """The whole body of ``response``, or the too-large error as soon as it is longer than the limit:
        refused at once when its Content-Length says so, else read a block at a time, never more than
        one byte past the limit. Call it inside `_failures`.
        """
        limit = self.max_response_bytes
        self._refuse_announced(response)
        body = bytearray()
        while block := response.read1(min(_READ_SIZE, limit + 1 - len(body))):
            body += block
            if len(body) > limit:
                raise self._too_large()
        if response.length:  # the connection closed before the announced Content-Length arrived
            raise http.client.IncompleteRead(bytes(body), response.length)
        return bytes(body)

    def _refuse_announced(self, response: http.client.HTTPResponse) -> None:
        """The too-large error when ``response`` announces a body longer than the limit."""
        announced = (response.headers.get("Content-Length") or "").strip()
        if announced.isdigit() and int(announced) > self.max_response_bytes:
            raise self._too_large(int(announced))

    def _stream_once(self, body: bytes, deadline: float) -> Iterator[Event]:
        """One attempt of `post_stream`: its events, parsed by the rules of server-sent events."""
        with self._failures():
            response = self._open(body, accept="text/event-stream", deadline=deadline)
        with response:
            if response.headers.get_content_type() != "text/event-stream":
                with self._failures():
                    whole = self._read_all(response)
                yield Event(whole, whole_body=True)
                return
            self._refuse_announced(response)
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
        The stream may be `max_response_bytes` long in all (a line, too, cannot grow past that).
        """
        pending = bytearray()
        received = 0
        while True:
            with self._failures():
                block: bytes = response.read1(_READ_SIZE)
            if not block:
                break
            received += len(block)
            if received > self.max_response_bytes:
                raise self._too_large()
            start = 0
            while (end := block.find(b"\n", start)) >= 0:
                pending += block[start : end + 1]
                yield bytes(pending)
                pending.clear()
                start = end + 1
            pending += block[start:]
        if pending:  # the last line, without its line break
            yield bytes(pending)

    def _open(self, body: bytes, *, accept: str, deadline: float) -> http.client.HTTPResponse:
        """The response to POSTing ``body``, its headers read; failures are left to `_failures`.

        Connecting, sending and every read of the answer, here and later, end by ``deadline``.
        """
        headers = {"Content-Type": "application/json", "Accept": accept, "User-Agent": "kireme"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self._target, data=body, headers=headers, method="POST")
        wait, _ = _wait(deadline, self.timeout)
        token = _LIMITS.set((deadline, self.timeout))  # for the connection(s), redirects' included
        try:
            response: http.client.HTTPResponse = _OPENER.open(request, timeout=wait)  # typeshed: Any
        finally:
            _LIMITS.reset(token)
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
            if isinstance(reason, _DeadlinePassed):
                raise self._deadline_passed() from None
            if isinstance(reason, TimeoutError):
                raise self._timeout() from None
            if isinstance(reason, ssl.SSLError):
                raise self.error_class(f"TLS error talking to {self.url}: {reason}") from None
            raise self._unreachable(reason) from None
        except _DeadlinePassed:
            raise self._deadline_passed() from None
        except TimeoutError:  # the read timed out after the connection was made
            raise self._timeout() from None
        except (http.client.RemoteDisconnected, ConnectionResetError, http.client.IncompleteRead) as exc:
            raise _Retryable(f"{self.url} dropped the connection: {describe(exc)}") from None
        except http.client.HTTPException as exc:  # a status line or headers that are not HTTP's
            said = self.redact(" ".join(describe(exc).split()))[:DETAIL_CHARS]
            raise self.error_class(
                f"{self.url} did not answer in HTTP ({said}); is it {self.hints.api}?"
            ) from None
        except OSError as exc:
            raise self._unreachable(exc) from None

    def _unreachable(self, reason: object) -> Exception:
        return self.error_class(f"cannot reach {self.url}: {describe(reason)} — {self.hints.unreachable}")

    def _timeout(self) -> Exception:
        return self.error_class(f"{self.url} did not answer within {self.timeout:g}s; {self.hints.timeout}")

    def _deadline_passed(self) -> Exception:
        return self.error_class(
            f"{self.url} had not finished answering after {self.deadline:g}s, the deadline for one answer "
            f"(retries included); raise it with {_DEADLINE_SETTING} if the answer is slow but coming"
        )

    def _too_large(self, announced: int | None = None) -> Exception:
        """The error for an answer over the size limit (``announced``: the length the server said)."""
        sent = f"announced {announced:,} bytes" if announced is not None else "sent more"
        return self.error_class(
            f"{self.url} {sent}, over the {self.max_response_bytes:,}-byte limit on one answer; raise it "
            f"with {_SIZE_SETTING} if the answer is right"
        )

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
            raw = exc.read(4096)  # never more: the error's body is only quoted
        except (OSError, http.client.HTTPException):
            return ""
        try:
            data: Any = load_json(raw)
        except ValueError:  # not JSON (or nested too deep): quoted as text
            data = raw.decode("utf-8", "replace")
        return self.server_message(data)


class _TooDeep(ValueError):
    """JSON nested deeper than `MAX_JSON_DEPTH`."""


def load_json(raw: bytes) -> Any:
    """``raw`` parsed as JSON, or `ValueError` (`_TooDeep` for JSON nested more than `MAX_JSON_DEPTH`
    levels deep: refused before parsing, so no RecursionError can come of it, here or later)."""
    if _nested_deeper(raw, MAX_JSON_DEPTH):
        raise _TooDeep(f"JSON nested more than {MAX_JSON_DEPTH} levels deep")
    try:
        return json.loads(raw)
    except RecursionError:  # what the scan cannot see (JSON that is not UTF-8): the same refusal
        raise _TooDeep(f"JSON nested more than {MAX_JSON_DEPTH} levels deep") from None


_SCAN_BLOCK = 1 << 20  # bytes `_nested_deeper` looks at in one go (a few MB of numpy arrays)
_QUOTE, _BACKSLASH = ord('"'), ord("\\")


def _nested_deeper(raw: bytes, limit: int) -> bool:
    """Whether the arrays and objects of JSON text ``raw`` nest more than ``limit`` deep.

    Brackets inside strings do not count (a quote preceded by an odd run of backslashes does not end a
    string). Vectorised block by block, so that it takes linear time and little memory on any input,
    megabytes of brackets or of escapes included; text with too few brackets is not even scanned.

    >>> _nested_deeper(b'[[1], "[[[[", {"a": "]"}]', 2), _nested_deeper(b'[[[1]], "]"]', 2)
    (False, True)
    """
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    data = np.frombuffer(raw, dtype=np.uint8)
    depth, in_string, run = 0, False, 0  # carried from block to block; run: backslashes just before
    for start in range(0, len(data), _SCAN_BLOCK):
        block = data[start : start + _SCAN_BLOCK]
        plain = np.flatnonzero(block != _BACKSLASH)  # where each backslash run ends
        quotes = np.flatnonzero(block == _QUOTE)
        before = np.searchsorted(plain, quotes) - 1  # the last plain byte before each quote
        backslashes = quotes - np.where(before >= 0, plain[np.maximum(before, 0)], -1 - run) - 1
        real = quotes[backslashes % 2 == 0]  # the quotes that start or end a string
        brackets = np.flatnonzero(
            (block == ord("[")) | (block == ord("{")) | (block == ord("]")) | (block == ord("}"))
        )
        outside = (np.searchsorted(real, brackets) + in_string) % 2 == 0
        kinds = block[brackets[outside]]
        steps = np.where((kinds == ord("[")) | (kinds == ord("{")), 1, -1)
        levels = depth + np.cumsum(steps)
        if levels.size and levels.max() > limit:
            return True
        depth = int(levels[-1]) if levels.size else depth
        in_string ^= bool(real.size % 2)
        run = len(block) - 1 - int(plain[-1]) if plain.size else run + len(block)
    return False


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
