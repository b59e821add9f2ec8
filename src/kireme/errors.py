"""Every error kireme raises on purpose, in one tree under `KiremeError`.

Catch `KiremeError` to handle anything kireme reports; catch a subclass for one kind of failure::

    KiremeError
    ├── ConfigError (also ValueError)      an option or setting is invalid: fix the call or the flag
    │   └── PatternTimeoutError            a user's separator regex ran past its time limit
    ├── LoadError                          a file could not be read; ``path`` and ``reason`` say which/why
    ├── DecodeError (also ValueError)      bytes are binary or valid in no candidate encoding
    ├── MissingExtraError (also ImportError)  an optional package is not installed; names the extra
    ├── EmbeddingError                     an embedder failed or returned something unusable
    ├── ChatError                          the reader model could not be asked, or answered unusably
    ├── DatasetError                       an evaluation dataset file is malformed (``path:line: reason``)
    ├── IndexNotFoundError                 no index at the given path
    ├── IndexBusyError                     another process is writing the index
    ├── IndexMismatchError                 the index was built with another embedder or store
    ├── IndexDamagedError                  part of an index is missing or unreadable; says what to run
    ├── StoreError                         a vector database (Milvus, Qdrant) cannot be reached or refused
    ├── DiskFullError                      the disk is full: nothing is damaged, says what was kept
    └── ReadOnlyError                      the index is on a read-only file system: searching works, writing not

`ConfigError` and `DecodeError` are also ``ValueError`` so code written against plain ``ValueError``
keeps working. A loader whose optional package is missing raises `LoadError` (one bad file must not stop
a run over many); its ``reason`` is the `MissingExtraError` message and its ``__cause__`` that error.

`storage_failure` reads a store's own words for a full disk or a read-only file system, and
`storage_error` turns them into `DiskFullError` or `ReadOnlyError` (never `IndexDamagedError`: a full or
read-only disk damages nothing).

This module imports nothing from kireme: every other module may import it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = [
    "BudgetTooSmallError",
    "ChatError",
    "ConfigError",
    "DatasetError",
    "DecodeError",
    "DiskFullError",
    "EmbeddingError",
    "IndexBusyError",
    "IndexDamagedError",
    "IndexMismatchError",
    "IndexNotFoundError",
    "KiremeError",
    "LoadError",
    "MissingExtraError",
    "PatternTimeoutError",
    "ReadOnlyError",
    "StoreError",
]


class KiremeError(Exception):
    """Base class of every error kireme raises on purpose.

    Every error pickles to an equal one (type, message and attributes such as ``path``), whatever its
    constructor takes, so a worker process can send it back (``--jobs``).
    """

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuilt, (type(self), self.args, dict(self.__dict__)))


def _rebuilt(cls: type[KiremeError], args: tuple[object, ...], state: dict[str, object]) -> KiremeError:
    """A pickled `KiremeError` back, without calling its constructor (``LoadError(path, reason)`` takes
    other arguments than the message ``args`` holds)."""
    error = Exception.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class ConfigError(KiremeError, ValueError):
    """An option is invalid (the message says which and why)."""


class BudgetTooSmallError(ConfigError):
    """A context budget smaller than any sentence of the best hit that can be passed; ``needs`` is the
    smallest budget that passes one (in the budget's unit, what goes with the sentence included)."""

    def __init__(self, message: str, needs: int) -> None:
        super().__init__(message)
        self.needs = needs


class PatternTimeoutError(ConfigError):
    """A separator regex took longer than its time limit: catastrophic backtracking, as in ``(a|aa)+$``.

    ``pattern`` is the regex; the fix is a simpler pattern (no nested or overlapping repeats).
    """

    def __init__(self, pattern: str, seconds: float, chars: int) -> None:
        super().__init__(
            f"separator regex {pattern!r} ran longer than {seconds:.1f} s on {chars:,} characters "
            "(catastrophic backtracking: nested or overlapping repeats such as (a|aa)+); simplify it"
        )
        self.pattern = pattern


class LoadError(KiremeError):
    """A file could not be read or decoded; ``path`` names it."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class DecodeError(KiremeError, ValueError):
    """The bytes are binary or not valid in any candidate encoding."""


class MissingExtraError(KiremeError, ImportError):
    """An optional backend needs a package that is not installed.

    The message names what to install: ``pip install 'kireme[EXTRA]'``, or the package itself when
    ``extra`` is ``None`` (a dependency that should have come with kireme).

    Examples:
        >>> str(MissingExtraError("reading PDF", "pdf", "pypdf"))
        "reading PDF needs pypdf: pip install 'kireme[pdf]'"
    """

    def __init__(self, backend: str, extra: str | None, package: str) -> None:
        target = f"'kireme[{extra}]'" if extra else package
        super().__init__(f"{backend} needs {package}: pip install {target}")
        self.backend = backend
        self.extra = extra
        self.package = package


class EmbeddingError(KiremeError):
    """An embedder failed or returned something unusable (the message says what)."""


class ChatError(KiremeError):
    """The reader model could not be asked or answered with something unusable (the message says what)."""


class DatasetError(KiremeError):
    """An evaluation dataset file is malformed; the message is ``path:line: reason`` (line when known)."""

    def __init__(self, path: str | os.PathLike[str], reason: str, line: int | None = None) -> None:
        shown = Path(path).as_posix()
        super().__init__(f"{shown}:{line}: {reason}" if line is not None else f"{shown}: {reason}")
        self.path = shown
        self.line = line
        self.reason = reason


class IndexNotFoundError(KiremeError):
    """No index at the given path."""


class IndexBusyError(KiremeError):
    """Another process is writing the index."""


class IndexMismatchError(KiremeError):
    """The index was built with another embedder or store."""


class IndexDamagedError(KiremeError):
    """Part of an index is missing or unreadable; the message names it and what to run."""


class StoreError(KiremeError):
    """A vector database server cannot be reached, refused a request, or its local files are in use by
    another process; the message names its URI or folder (never credentials) and what to check."""


class DiskFullError(KiremeError):
    """The disk (or the quota) is full: nothing is damaged; the message says where, the space left and
    what to do (free some, run again). ``path`` is where the write failed."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class ReadOnlyError(KiremeError):
    """The index is on a read-only file system (a read-only mount, a container volume): reading it works,
    writing it does not. ``path`` is where the write failed."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


FULL = "no space left on the device"
READ_ONLY = "the file system is read-only"

_STORAGE_REASONS = (
    ((28, "no space left on device", "disk is full", "os error 28"), FULL),
    ((122, "disk quota exceeded", "os error 122"), FULL),
    ((30, "read-only file system", "os error 30", "attempt to write a readonly database"), READ_ONLY),
    ((13, "permission denied", "os error 13"), "permission denied"),
)


def storage_failure(exc: BaseException) -> str | None:
    """What went wrong when writing to disk (``"no space left on the device"``...), or ``None``.

    Stores report a full disk in their own words (SQLite: "database or disk is full"; LanceDB: a
    ``RuntimeError`` quoting "os error 28"); this reads them all, through the exception's causes.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        code = getattr(current, "errno", None)
        text = str(current).lower()
        for (number, *phrases), reason in _STORAGE_REASONS:
            if code == number or any(p in text for p in phrases):
                return reason
        current = current.__cause__ or current.__context__
    return None


LOW_SPACE = 1 << 20  # bytes: below this, a write that failed without saying why failed for want of space


def _existing(path: str | os.PathLike[str]) -> str:
    """``path``, or its nearest parent that exists (what `os.statvfs` can be asked about)."""
    current = os.path.abspath(os.fspath(path))
    while not os.path.exists(current) and os.path.dirname(current) != current:
        current = os.path.dirname(current)
    return current


def free_space(path: str | os.PathLike[str]) -> int | None:
    """Bytes this user may still write on the file system holding ``path`` (``None`` when unknown: a URI,
    a platform without ``statvfs``). No inodes left counts as no space."""
    if "://" in os.fspath(path) or not hasattr(os, "statvfs"):
        return None
    try:
        stat = os.statvfs(_existing(path))
    except OSError:
        return None
    return 0 if stat.f_files and not stat.f_favail else stat.f_bavail * stat.f_frsize


def read_only_media(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` (or its nearest existing parent) is on a file system mounted read-only, or a folder
    this process cannot write in (`os.access` says so on a read-only file system even for root)."""
    if "://" in os.fspath(path):
        return False
    if mounted_read_only(path):
        return True
    folder = _existing(path)
    if not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    return not os.access(folder, os.W_OK)


def mounted_read_only(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` (or its nearest existing parent) is on a file system mounted read-only (not merely a
    folder this user may not write in)."""
    if "://" in os.fspath(path) or not (hasattr(os, "statvfs") and hasattr(os, "ST_RDONLY")):
        return False
    try:
        return bool(os.statvfs(_existing(path)).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def shown_size(count: int) -> str:
    """``1.5 MB``, ``312 kB``, ``0 bytes``: a size as the message shows it."""
    if count < 1000:
        return f"{count} bytes"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}" if count < 10 * scale else f"{count / scale:.0f} {unit}"
    return f"{count} bytes"  # pragma: no cover


def full_disk_error(where: str | os.PathLike[str], then: str = "") -> DiskFullError:
    """One line: no space left where ``where`` is (and how much is free), then ``then`` (what was kept and
    what to run; by default that nothing is damaged)."""
    shown = _shown(where)
    free = free_space(where)
    room = f" ({shown_size(free)} free)" if free is not None else ""
    then = then or "nothing is damaged: free some space, then run the same command again"
    return DiskFullError(f"{shown}: no space left on the device{room}; {then}", shown)


def read_only_error(where: str | os.PathLike[str]) -> ReadOnlyError:
    """One line: ``where`` cannot be written (a read-only file system, or files this user may not write);
    reading the index works, writing it needs a writable ``--db``."""
    shown = _shown(where)
    why = (
        "is on a read-only file system"
        if mounted_read_only(where)
        else "cannot be written (permission denied: check the owner and permissions of it and its folder)"
    )
    return ReadOnlyError(f"{shown} {why}; searching it works, indexing needs a writable --db", shown)


def storage_error(
    exc: BaseException, where: str | os.PathLike[str], then: str = ""
) -> DiskFullError | ReadOnlyError | None:
    """``exc`` as a `DiskFullError` or `ReadOnlyError` about ``where`` when it says the disk is full or
    read-only (`storage_failure`), else ``None``; ``then`` ends a full disk's message (`full_disk_error`)."""
    if isinstance(exc, DiskFullError | ReadOnlyError):
        return exc
    reason = storage_failure(exc)
    if reason == FULL:
        return full_disk_error(where, then)
    if reason == READ_ONLY:
        return read_only_error(where)
    return None


def rebuild_hint(db: str | os.PathLike[str]) -> str:
    """What to run when part of an index cannot be used: the one wording every damage message ends with."""
    return f"run 'kireme index --rebuild PATH... --db {Path(db).as_posix()}' to rebuild the index from its sources"


def _shown(where: str | os.PathLike[str]) -> str:
    """A path with forward slashes, or a URI as it is (``Path`` would fold ``s3://`` into ``s3:/``)."""
    text = os.fspath(where)
    return text if "://" in text else Path(text).as_posix()


def unreadable(exc: Exception, what: str | os.PathLike[str], db: str | os.PathLike[str]) -> Exception:
    """``exc`` as one line saying ``what`` cannot be read and what to run; kireme's own errors are left as
    they are, a full or read-only disk (nothing is damaged) is a `DiskFullError` or `ReadOnlyError`."""
    if isinstance(exc, KiremeError):
        return exc
    storage = storage_error(exc, what if "://" not in _shown(what) else db)
    if storage is not None:
        return storage
    if storage_failure(exc) is not None:  # permission denied: said as it is
        return exc
    shown = _shown(what)
    if "://" in shown:  # object storage: unreachable or refused far more often than damaged
        reason = " ".join(str(exc).split())
        if shown.startswith(("http://", "https://")):  # a vector database server (Milvus, Qdrant)
            return StoreError(
                f"{shown} cannot be reached or read ({type(exc).__name__}: {reason[:300]}); check the URI, "
                "that the server is running, and its credentials (MILVUS_TOKEN, QDRANT_API_KEY)"
            )
        return IndexDamagedError(
            f"{shown} cannot be reached or read ({type(exc).__name__}: {reason[:300]}); check the URI, the "
            "network and the credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL...)"
        )
    reason = _RUST_SOURCE.sub("", str(exc))  # where in LanceDB's Rust sources it failed: nothing to a user
    return IndexDamagedError(f"{shown} cannot be read ({type(exc).__name__}: {reason}); {rebuild_hint(db)}")


# ", /root/.cargo/registry/src/…/lance-io-13.0.0/src/local.rs:273:40" at the end of a LanceDB error
_RUST_SOURCE = re.compile(r",?\s*\S*/(?:\.cargo/registry|rustc/[0-9a-f]+)/\S+\.rs:\d+(?::\d+)?")
