"""What the stores on vector databases users run (Milvus, Qdrant) share: their URIs, collection names,
one-line errors, and one client per local folder in a process.

A server store lives at ``--store-uri`` (``http://host:19530``, ``https://...``): the URI is recorded in
the index's manifest, so it never carries credentials (they come from ``MILVUS_TOKEN`` or
``QDRANT_API_KEY``). Without a URI the store runs the database's local engine in a folder of the index
directory (milvus-lite, qdrant-client's local mode), which one process at a time may open.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from kireme.errors import ConfigError, KiremeError, StoreError

DEFAULT_PORTS = {"milvus": 19530, "qdrant": 6333}
CREDENTIALS = {"milvus": "MILVUS_TOKEN", "qdrant": "QDRANT_API_KEY"}
TIMEOUT_S = 10.0  # a server that does not answer a request within this is said to be unreachable


def server_uri(kind: str, uri: str) -> str:
    """``uri`` checked as the server URL of a ``kind`` store (a `ConfigError` otherwise), without a
    trailing slash.

    Examples:
        >>> server_uri("milvus", "http://localhost:19530/")
        'http://localhost:19530'
        >>> server_uri("qdrant", "http://user:secret@localhost:6333")
        Traceback (most recent call last):
        ...
        kireme.errors.ConfigError: --store-uri must not carry credentials (the URI is recorded in the index's manifest): put them in QDRANT_API_KEY
    """
    parts = urllib.parse.urlsplit(uri)
    example = f"http://localhost:{DEFAULT_PORTS.get(kind, 80)}"
    if parts.username is not None or parts.password is not None:
        raise ConfigError(
            "--store-uri must not carry credentials (the URI is recorded in the index's manifest): put them "
            f"in {CREDENTIALS.get(kind, 'the environment')}"
        )
    try:
        port_ok = parts.port is None or parts.port > 0
    except ValueError:  # a port that is not a number
        port_ok = False
    if (
        not port_ok
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.query
        or parts.fragment
    ):
        raise ConfigError(
            f"--store-uri {shown_uri(uri)!r}: the {kind} store takes its server's http(s) URL, e.g. {example}"
        )
    return uri.rstrip("/")


def shown_uri(uri: str) -> str:
    """``uri`` as messages show it: without ``user:password@`` and without a query (which may hold a key).

    Examples:
        >>> shown_uri("https://me:pw@db.example.com:6333/x?api_key=k")
        'https://db.example.com:6333/x'
    """
    parts = urllib.parse.urlsplit(uri)
    if not parts.scheme or not parts.netloc:
        return uri
    host = parts.hostname or ""
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return urllib.parse.urlunsplit((parts.scheme, host + port, parts.path, "", ""))


def collection_name(directory: str) -> str:
    """The collection of the store kept under ``directory`` (``milvus``, ``qdrant-1a2b3c4d``...).

    Examples:
        >>> collection_name("milvus-1a2b3c4d")
        'kireme_milvus_1a2b3c4d'
    """
    return "kireme_" + "".join(c if c.isascii() and c.isalnum() else "_" for c in directory)


def credential(kind: str) -> str | None:
    """The token or API key for a ``kind`` server, from its environment variable (``None``: none)."""
    return os.environ.get(CREDENTIALS[kind]) or None


def _driver_error(exc: BaseException, modules: tuple[str, ...]) -> bool:
    """Whether ``exc`` comes from the database's client (or the transport under it), not from kireme."""
    if isinstance(exc, KiremeError):
        return False
    module = type(exc).__module__ or ""
    return module.startswith(modules) or isinstance(exc, (ConnectionError, TimeoutError))


@contextmanager
def guarded(where: str, what: str, modules: tuple[str, ...], hint: str) -> Iterator[None]:
    """Driver errors of ``modules`` raised meanwhile as one `StoreError` line: ``where`` (a URI shown
    without credentials, or a folder), ``what`` was being done, the driver's own words, then ``hint``."""
    try:
        yield
    except Exception as exc:
        if not _driver_error(exc, modules):
            raise
        reason = " ".join(str(exc).split())[:300] or type(exc).__name__
        if _unreachable(exc, reason):
            raise StoreError(f"{where} cannot be reached ({type(exc).__name__}: {reason}); {hint}") from None
        raise StoreError(f"{where}: {what} failed ({type(exc).__name__}: {reason}); {hint}") from None


_UNREACHABLE = (
    "connection refused",
    "fail connecting",
    "failed to connect",
    "unavailable",
    "timed out",
    "timeout",
    "name or service not known",
    "no route to host",
    "connecterror",
    "name resolution",
)


def _unreachable(exc: BaseException, reason: str) -> bool:
    """Whether ``exc`` says the server could not be reached at all (rather than that it refused a request)."""
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    text = f"{type(exc).__name__} {reason}".lower()
    return any(words in text for words in _UNREACHABLE)


class SharedClients:
    """One client per local folder in this process, shared by every store object on it (a local engine
    locks its folder: a second client on it, even in the same process, is refused). The last `release`
    closes it, so another process may open the folder afterwards; those left open close at exit."""

    def __init__(self, close: Callable[[str, Any], None]) -> None:
        self._lock = threading.Lock()
        self._clients: dict[str, list[Any]] = {}  # path -> [client, references]
        self._close = close
        atexit.register(self.close_all)

    def acquire(self, path: str, make: Callable[[], Any]) -> Any:
        key = os.path.abspath(path)
        with self._lock:
            entry = self._clients.get(key)
            if entry is None:
                entry = self._clients[key] = [make(), 0]
            entry[1] += 1
            return entry[0]

    def release(self, path: str) -> None:
        key = os.path.abspath(path)
        with self._lock:
            entry = self._clients.get(key)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] > 0:
                return
            del self._clients[key]
        self._close(key, entry[0])

    def close_all(self) -> None:
        with self._lock:
            entries, self._clients = list(self._clients.items()), {}
        for key, (client, _) in entries:
            with contextlib.suppress(Exception):  # at exit: nothing left to report to
                self._close(key, client)
