"""The index manifest: which documents are completely indexed, and with which embedder.

A SQLite file beside the store. A document's entry is written only *after* its rows are committed to the
store and removed *before* its rows are touched, so after a crash (even ``kill -9``) every entry names a
document whose rows are complete, and rows without an entry are leftovers that the next run deletes.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kireme.document import content_hash
from kireme.errors import IndexDamagedError, rebuild_hint, storage_failure
from kireme.index.names import from_stored, to_stored


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
        self._db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(SCHEMA)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(documents)")}
            for column in ("size", "mtime_ns"):  # manifests written before these columns existed
                if column not in columns:
                    self._db.execute(f"ALTER TABLE documents ADD COLUMN {column} INTEGER NOT NULL DEFAULT -1")
            self._db.execute("SELECT doc_id FROM documents LIMIT 1").fetchall()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise self._damaged(exc) from None

    def _damaged(self, exc: sqlite3.DatabaseError) -> Exception:
        """One line naming the file and what to run (a full disk is left as it is: nothing is damaged)."""
        if storage_failure(exc) is not None:
            return exc
        return IndexDamagedError(f"{self.path} is damaged ({exc}); {rebuild_hint(self.path.parent)}")

    def meta(self) -> dict[str, Any]:
        try:
            return {k: self._json(k, v) for k, v in self._db.execute("SELECT key, value FROM meta")}
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from None

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
        self._db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value, ensure_ascii=False, sort_keys=True)),
        )

    def documents(self) -> dict[str, DocumentEntry]:
        try:
            rows = self._db.execute(
                "SELECT doc_id, content_hash, config_hash, chunks, source, size, mtime_ns FROM documents"
            ).fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from None
        return {
            from_stored(r[0]): DocumentEntry(
                from_stored(r[0]), r[1], r[2], r[3], from_stored(r[4]), r[5], r[6]
            )
            for r in rows
        }

    def put(self, entry: DocumentEntry) -> None:
        self._db.execute(
            "INSERT INTO documents (doc_id, content_hash, config_hash, chunks, source, updated, size, mtime_ns) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(doc_id) DO UPDATE SET "
            "content_hash = excluded.content_hash, config_hash = excluded.config_hash, "
            "chunks = excluded.chunks, source = excluded.source, updated = excluded.updated, "
            "size = excluded.size, mtime_ns = excluded.mtime_ns",
            (
                to_stored(entry.doc_id),
                entry.content_hash,
                entry.config_hash,
                entry.chunks,
                to_stored(entry.source),
                time.time(),
                entry.size,
                entry.mtime_ns,
            ),
        )

    def remove(self, doc_ids: list[str]) -> None:
        rows = [(to_stored(d),) for d in doc_ids]
        self._db.executemany("DELETE FROM documents WHERE doc_id = ?", rows)
        self._db.executemany("DELETE FROM texts WHERE doc_id = ?", rows)

    def put_text(self, doc_id: str, content_hash: str, text: str) -> None:
        """Keep a document's text (what its chunks' offsets refer to), for context assembled from exact
        offsets at search time. Written after its entry; a reader trusts it only while ``content_hash``
        matches the entry and the text itself."""
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

    def snapshot(self) -> tuple[dict[str, Any], dict[str, DocumentEntry]]:
        """Every meta value and every entry, read in one transaction (a consistent view while a writer
        swaps a re-embedded index in)."""
        self._db.execute("BEGIN")
        try:
            return self.meta(), self.documents()
        finally:
            self._db.execute("COMMIT")

    def replace_all(self, entries: Iterable[DocumentEntry], meta: dict[str, Any]) -> None:
        """Replace every entry and set ``meta``, in one transaction: readers see the old or the new."""
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
        self._db.close()
