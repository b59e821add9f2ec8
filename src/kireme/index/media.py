"""Reading an index from a read-only or full disk, which must work as it does anywhere else.

A reader (``kireme search``, ``ask``, ``check``, ``serve``) never needs to write, but the files it reads
were made by engines that like to:

* SQLite in write-ahead-log mode (the manifest, the embedding cache) needs a shared-memory file beside
  the database (``-shm``), which a read-only file system cannot take and a full one cannot grow.
  `connect_reader` opens such a file as before where its folder is writable and has room, else with
  ``mode=ro``, then ``immutable=1`` (SQLite takes no locks and reads no log: right only where nothing
  can change the file, which is why it is used only there), or a private copy of the file and its log
  when the log still holds commits (a copy recovers them; ``immutable`` would not see them).
* Chroma, milvus-lite and Qdrant's local mode write to their own files when they open (migrations, lock
  files; Chroma also when it reads: it compacts its log). On a read-only or nearly full disk
  `open_reading` opens them from a private copy of their folder in the temporary directory (``TMPDIR``),
  removed when the store is closed. LanceDB reads in place.

What cannot be done says so in one line (`kireme.errors.DiskFullError`, `kireme.errors.ReadOnlyError`),
never that the index is damaged.
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
import tempfile
import weakref
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kireme.errors import (
    LOW_SPACE,
    DiskFullError,
    ReadOnlyError,
    free_space,
    full_disk_error,
    read_only_error,
    read_only_media,
    shown_size,
    storage_error,
)
from kireme.index.store import Hit, StoredChunk, VectorStore

log = logging.getLogger(__name__)

_SQLITE_IO = ("SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_FULL", "SQLITE_READONLY")


def sqlite_storage_error(exc: sqlite3.Error, path: Path) -> DiskFullError | ReadOnlyError | None:
    """A SQLite failure on the file ``path`` as a full or read-only disk, else ``None``: SQLite's own
    words ("database or disk is full", "attempt to write a readonly database"), or a failure to open or do
    I/O ("unable to open database file", "disk I/O error": its shared-memory file could not be made)
    where the file system is read-only or nearly full."""
    found = storage_error(exc, path)
    if found is not None:
        return found
    if not str(getattr(exc, "sqlite_errorname", "")).startswith(_SQLITE_IO):
        return None
    return media_failure(path.parent, path)


def media_failure(folder: Path, where: Path | None = None) -> DiskFullError | ReadOnlyError | None:
    """`ReadOnlyError` when ``folder`` cannot be written, `DiskFullError` when its disk is nearly full
    (``where`` is what the message names, by default ``folder``), else ``None``."""
    if read_only_media(folder):
        return read_only_error(where or folder)
    free = free_space(folder)
    if free is not None and free < LOW_SPACE:
        return full_disk_error(where or folder)
    return None


SHORT_SPACE = 64 << 20  # bytes: a store that fails without a reason with less left most likely ran out


def probable_full_disk(exc: BaseException, folder: Path) -> DiskFullError | None:
    """A store's write that failed in words that name no cause (Chroma: "Error in compaction: Failed to
    apply logs to the metadata segment") while the disk holding ``folder`` has less than `SHORT_SPACE`
    left (the engine may have freed its journal since): most likely a full disk, said with its words."""
    free = free_space(folder)
    if free is None or free >= SHORT_SPACE:
        return None
    words = " ".join(str(exc).split())[:300]
    return DiskFullError(
        f"{folder}: a write failed with only {shown_size(free)} left on the device ({type(exc).__name__}: "
        f"{words}), most likely for want of space",
        str(folder),
    )


def disk_failure(exc: BaseException, folder: Path) -> DiskFullError | ReadOnlyError | None:
    """What a write under ``folder`` that raised ``exc`` ran into when it is a full or read-only disk
    (`kireme.errors.storage_error`, or a SQLite I/O failure anywhere in its causes where the disk is
    read-only or nearly full), else ``None``."""
    found = storage_error(exc, folder)
    if found is not None:
        return found
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, sqlite3.Error) and str(getattr(current, "sqlite_errorname", "")).startswith(
            _SQLITE_IO
        ):
            return media_failure(folder)
        current = current.__cause__ or current.__context__
    return None


class ReadConnection:
    """A connection that only reads a SQLite file (`connect_reader`): ``db``; ``immutable`` when SQLite was
    told the file cannot change; ``copy``, the private folder it was copied to (removed by `close`)."""

    def __init__(self, db: sqlite3.Connection, immutable: bool = False, copy: Path | None = None) -> None:
        self.db = db
        self.immutable = immutable
        self.copy = copy
        if copy is not None:  # removed at exit even if never closed
            weakref.finalize(self, shutil.rmtree, copy, True)

    def close(self) -> None:
        try:
            self.db.close()
        finally:
            if self.copy is not None:
                shutil.rmtree(self.copy, ignore_errors=True)
                self.copy = None


def _connect(target: str, *, timeout: float, check_same_thread: bool) -> sqlite3.Connection:
    return sqlite3.connect(
        target, uri=True, isolation_level=None, timeout=timeout, check_same_thread=check_same_thread
    )


def connect_reader(path: Path, *, timeout: float = 30, check_same_thread: bool = True) -> ReadConnection:
    """A connection that reads the SQLite file ``path`` and never creates or writes it.

    Where its folder is writable and has room it is opened as any other connection (``mode=rw``: the last
    connection to close folds the write-ahead log back into the file, as before); a reader there never
    writes anyway. On a read-only file system or a full disk it is opened ``mode=ro``; if SQLite cannot
    make its shared-memory file there, ``immutable=1`` when no log is pending, else from a private copy of
    the file and its log. Raises `sqlite3.Error` for a file that is not a database (the caller says it is
    damaged), `DiskFullError` or `ReadOnlyError` when none of these can read it.
    """
    uri = path.absolute().as_uri()
    free = free_space(path.parent)
    constrained = read_only_media(path.parent) or (free is not None and free < LOW_SPACE)
    db = _connect(
        f"{uri}?mode={'ro' if constrained else 'rw'}", timeout=timeout, check_same_thread=check_same_thread
    )
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return ReadConnection(db)
    except sqlite3.Error as exc:
        db.close()
        failure = sqlite_storage_error(exc, path)
        if failure is None:
            raise
    log_file = path.with_name(path.name + "-wal")
    try:
        pending = log_file.stat().st_size > 0
    except OSError:
        pending = False
    if not pending:  # the file alone is the whole state, and nothing can write it here now
        log.debug("%s: read as immutable (%s)", path, failure)
        db = _connect(f"{uri}?immutable=1", timeout=timeout, check_same_thread=check_same_thread)
        return ReadConnection(db, immutable=True)
    folder = Path(tempfile.gettempdir()) / "kireme-read-?"
    try:
        folder = Path(tempfile.mkdtemp(prefix="kireme-read-"))
        for name in (path.name, log_file.name):
            shutil.copyfile(path.with_name(name), folder / name)
        db = _connect(
            (folder / path.name).as_uri() + "?mode=ro", timeout=timeout, check_same_thread=check_same_thread
        )
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except (OSError, sqlite3.Error) as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise type(failure)(
            f"{failure} (its write-ahead log {log_file.name} holds commits, and a private copy to read them "
            f"in {folder.parent} failed: {exc}; free some space there or point TMPDIR at a disk with room)",
            failure.path,
        ) from None
    log.debug("%s: read from a private copy in %s (%s)", path, folder, failure)
    return ReadConnection(db, copy=folder)


# ------------------------------------------------------------------------------------------ stores


def open_reading(kind: str, path: Path, info: Mapping[str, Any]) -> VectorStore:
    """The local ``kind`` store (chroma, milvus, qdrant) in ``path``, opened for reading: in place, or
    from a private copy when the folder is on a read-only file system or the disk is full (their engines
    write when they open)."""
    constrained = media_failure(path) if path.is_dir() else None
    if constrained is not None:  # Chroma writes when it reads too (it compacts its log)
        return _from_copy(kind, path, info, constrained)
    try:
        return _local_store(kind, path, info)
    except Exception as exc:
        failure = storage_error(exc, path)
        if failure is None or not path.is_dir():
            raise
        return _from_copy(kind, path, info, failure)


def _local_store(kind: str, path: Path, info: Mapping[str, Any]) -> VectorStore:
    if kind == "chroma":
        from kireme.index.chroma_store import ChromaStore

        return ChromaStore(path, info=info, create=False)
    if kind == "milvus":
        from kireme.index.milvus_store import MilvusStore

        return MilvusStore(path, info=info, create=False)
    from kireme.index.qdrant_store import QdrantStore

    return QdrantStore(path, info=info, create=False)


def _from_copy(
    kind: str, path: Path, info: Mapping[str, Any], why: DiskFullError | ReadOnlyError
) -> VectorStore:
    root = Path(tempfile.gettempdir()) / "kireme-read-?"
    try:
        root = Path(tempfile.mkdtemp(prefix="kireme-read-"))
        copy = root / path.name  # the folder's name is the collection's (Milvus, Qdrant)
        shutil.copytree(path, copy, symlinks=True)
        store = _local_store(kind, copy, info)
    except Exception as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise type(why)(
            f"{why} (the {kind} engine writes to its files when it opens, and a private copy to read in "
            f"{root.parent} failed: {exc}; free some space there or point TMPDIR at a disk with room)",
            why.path,
        ) from None
    log.debug("%s: the %s store is read from a private copy in %s (%s)", path, kind, copy, why)
    return CopiedStore(store, path, root)


class CopiedStore:
    """A store read from a private copy of its folder: ``path`` is the original's, ``private_copy`` the
    copy, removed when the store is closed; everything else is the store's own."""

    def __init__(self, inner: VectorStore, path: Path, root: Path) -> None:
        self._inner = inner
        self.path = str(path)
        self.private_copy = str(root / path.name)
        self._root = root
        weakref.finalize(self, shutil.rmtree, root, True)  # removed at exit even if never closed

    @property
    def name(self) -> str:
        return self._inner.name

    def add(self, chunks: Sequence[StoredChunk], vectors: np.ndarray) -> None:
        raise PermissionError(f"{self.path}: this store was opened for reading only")

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        raise PermissionError(f"{self.path}: this store was opened for reading only")

    def doc_ids(self) -> set[str]:
        return self._inner.doc_ids()

    def doc_counts(self) -> dict[str, int]:
        return self._inner.doc_counts()

    def count(self) -> int:
        return self._inner.count()

    def search(
        self, vector: np.ndarray, k: int, where: Mapping[str, str] | None = None, *, exact: bool = False
    ) -> list[Hit]:
        return self._inner.search(vector, k, where, exact=exact)

    def chunks(self, where: Mapping[str, str] | None = None) -> Iterator[StoredChunk]:
        return self._inner.chunks(where)

    def get(self, ids: Sequence[str]) -> list[StoredChunk]:
        return self._inner.get(ids)

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            shutil.rmtree(self._root, ignore_errors=True)

    def __getattr__(self, name: str) -> Any:  # dimension, version, stored_info...
        return getattr(self._inner, name)
