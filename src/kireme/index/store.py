"""The `VectorStore` protocol: where chunk rows and their vectors live, behind one small interface.

A store only keeps rows. Which documents are complete is recorded separately, after their rows are
committed (`kireme.index.manifest`), which is what makes ingestion crash-safe: rows of a document
without a manifest entry are leftovers of an interrupted run and are deleted before the next one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from kireme.document import Chunk, Document
from kireme.errors import ConfigError


@dataclass(frozen=True)
class StoredChunk:
    """One indexed chunk: what search returns and what the reader is given (``text``, offsets, source)."""

    id: str
    doc_id: str
    index: int
    start: int
    end: int
    text: str
    embed_text: str
    headings: tuple[str, ...] = ()
    title: str = ""
    source: str = ""
    format: str = "text"
    metadata: Mapping[str, Any] = field(default_factory=dict)  # JSON-able: page, cell, table...

    @classmethod
    def from_chunk(cls, chunk: Chunk, doc: Document) -> StoredChunk:
        """The row for a chunk of ``doc`` (its source path and format come from the document)."""
        return cls(
            id=chunk.id,
            doc_id=chunk.doc_id,
            index=chunk.index,
            start=chunk.start,
            end=chunk.end,
            text=chunk.text,
            embed_text=chunk.embed_text,
            headings=chunk.headings,
            title=chunk.title,
            source=str(doc.metadata.get("source", doc.id)),
            format=doc.format,
            metadata=dict(chunk.metadata),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "doc_id": self.doc_id,
            "index": self.index,
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "embed_text": self.embed_text,
            "headings": list(self.headings),
            "title": self.title,
            "source": self.source,
            "format": self.format,
            "metadata": dict(self.metadata),
        }


@dataclass(frozen=True)
class Hit:
    """A search result: the chunk and its score (higher is better; cosine similarity for dense)."""

    chunk: StoredChunk
    score: float

    def to_dict(self) -> dict[str, Any]:
        """The JSON row of ``kireme search --format jsonl`` (and of ``kireme serve``'s ``/search`` hits):
        score, id, doc_id, start, end, headings, text, source, title, metadata."""
        c = self.chunk
        return {
            "score": round(self.score, 6),
            "id": c.id,
            "doc_id": c.doc_id,
            "start": c.start,
            "end": c.end,
            "headings": list(c.headings),
            "text": c.text,
            "source": c.source,
            "title": c.title,
            "metadata": dict(c.metadata),
        }


class VectorStore(Protocol):
    """Rows of chunks with their vectors. Every method commits before it returns."""

    @property
    def name(self) -> str: ...

    def add(self, chunks: Sequence[StoredChunk], vectors: np.ndarray) -> None:
        """Append rows (vectors are L2-normalised float32, one row per chunk)."""
        ...

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        """Remove every row of these documents (no error for unknown ids)."""
        ...

    def doc_ids(self) -> set[str]:
        """The documents that have at least one row."""
        ...

    def doc_counts(self) -> dict[str, int]:
        """Rows per document (a full scan: used only when the manifest and the store may disagree)."""
        ...

    def count(self) -> int:
        """Number of rows."""
        ...

    def search(
        self, vector: np.ndarray, k: int, where: Mapping[str, str] | None = None, *, exact: bool = False
    ) -> list[Hit]:
        """The ``k`` rows nearest to ``vector`` by cosine similarity, best first.

        ``where`` filters on exact values of ``doc_id``, ``source``, ``format`` or ``title``. A store with
        an approximate index (LanceDB past `kireme.index.ann.ANN_MIN_ROWS` rows) uses it unless
        ``exact``; one that cannot search exactly raises a `ConfigError` for ``exact``.
        """
        ...

    def chunks(self, where: Mapping[str, str] | None = None) -> Iterator[StoredChunk]:
        """Every row (without its vector), for keyword search and exports; order not guaranteed."""
        ...

    def get(self, ids: Sequence[str]) -> list[StoredChunk]:
        """The rows with these chunk ids, in the order asked (unknown ids are left out)."""
        ...

    def close(self) -> None: ...


FILTER_FIELDS = ("doc_id", "source", "format", "title")  # what every store filters on itself
# Filters applied after the store's search: ``heading=第3条 宿泊費`` keeps chunks under that heading (any level)
# and chunks that hold that section (a heading among their ``subheadings``).
POST_FILTER_FIELDS = ("heading",)


def matches(chunk: StoredChunk, where: Mapping[str, str] | None) -> bool:
    """Whether a chunk passes an exact-match filter (the reference semantics every store follows)."""
    if not where:
        return True
    for key, value in where.items():
        if key == "heading":
            if value not in held_headings(chunk):
                return False
        elif str(getattr(chunk, key)) != value:
            return False
    return True


def held_headings(chunk: StoredChunk) -> tuple[str, ...]:
    """The headings ``heading=`` finds a chunk by: those of its path (it lies under them) and those of the
    sections it holds (its ``subheadings``)."""
    return (*chunk.headings, *(chunk.metadata.get("subheadings") or ()))


def check_rows(chunks: Sequence[StoredChunk], vectors: np.ndarray) -> np.ndarray:
    """``vectors`` as float32, one per chunk (a `ValueError` otherwise): what every store's ``add`` checks."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if len(chunks) != len(vectors):
        raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
    return vectors


def check_filter(where: Mapping[str, str] | None) -> None:
    """A `ConfigError` (a ``ValueError``) for a filter key the stores cannot filter on themselves."""
    for key in where or ():
        if key not in FILTER_FIELDS:
            raise ConfigError(f"cannot filter on {key!r}; filterable fields are {', '.join(FILTER_FIELDS)}")


def split_filter(where: Mapping[str, str] | None) -> tuple[dict[str, str] | None, dict[str, str]]:
    """The part of a filter the store applies, and the part applied to its results afterwards."""
    if not where:
        return None, {}
    store = {k: v for k, v in where.items() if k in FILTER_FIELDS}
    post = {k: v for k, v in where.items() if k in POST_FILTER_FIELDS}
    return store or None, post


def rows_digest(rows: Iterable[StoredChunk]) -> str:
    """One document's rows as one SHA-256: ids, positions, offsets, ``text`` and ``embed_text``, in index
    order. Recorded in the manifest when the rows are written, so that ``kireme check --deep`` can tell rows
    changed inside the store since (text rewritten, offsets moved, rows swapped) from rows as written.

    >>> row = StoredChunk("c0", "d", 0, 0, 4, "text", "passage: text")
    >>> rows_digest([row]) == rows_digest([row]) != rows_digest([StoredChunk("c0", "d", 0, 0, 4, "texT", "passage: text")])
    True
    """
    digest = hashlib.sha256()
    for row in sorted(rows, key=lambda r: (r.index, r.id)):
        fields = [row.id, row.index, row.start, row.end, row.text, row.embed_text]
        digest.update(json.dumps(fields).encode("ascii") + b"\n")  # ASCII escapes: any text, one encoding
    return digest.hexdigest()


def store_state(store: VectorStore) -> dict[str, int | str]:
    """What the manifest records about the store after each commit: its row count and, where the store
    has versions (LanceDB), its version and its data files (`LanceDBStore.data_files`). A store found in
    another state was changed behind the index's back (rolled back, files removed) and is checked document
    by document."""
    state: dict[str, int | str] = {"rows": store.count()}
    version = getattr(store, "version", None)
    if callable(version):
        state["version"] = int(version())
    files = getattr(store, "data_files", None)
    if callable(files) and (fingerprint := files()):
        state["files"] = fingerprint
    return state


def same_state(recorded: Mapping[str, Any] | None, current: Mapping[str, Any]) -> bool:
    """Whether the store is in the state the manifest recorded: every part it recorded the same (a state
    recorded before a part was added to `store_state` says nothing of that part)."""
    return isinstance(recorded, Mapping) and all(current.get(key) == value for key, value in recorded.items())


STORES = ("lancedb", "chroma", "milvus", "qdrant")  # what `open_store` opens ("memory" is for tests)
# stores kept on a vector database server with --store-uri (else its local engine in the index directory)
SERVER_STORES = ("milvus", "qdrant")
URI_STORES = ("lancedb", *SERVER_STORES)  # the stores --store-uri applies to


def open_store(
    kind: str,
    db: Path,
    info: dict[str, Any],
    *,
    directory: str | None = None,
    create: bool = True,
    base: str | None = None,
) -> VectorStore:
    """The store of an index directory (``lancedb`` in ``db/lancedb``, ``chroma`` in ``db/chroma``, ``milvus``
    in ``db/milvus/milvus.db`` (milvus-lite), ``qdrant`` in ``db/qdrant`` (qdrant-client's local mode)).

    ``directory`` names another folder under ``db`` (a re-embedded index lives in ``lancedb-<hex>``);
    ``create=False`` opens for reading only: nothing on disk is created or changed, and a store that
    does not exist yet reads as empty (Chroma, milvus-lite and Qdrant's local mode, whose engines write when
    they open, are read from a private copy on a read-only or full disk: `kireme.index.media.open_reading`).
    ``base``: where the store is instead of ``db`` (``--store-uri``): for LanceDB the folder or URI
    (``s3://bucket/prefix``) that holds its folder, for Milvus and Qdrant the server's URL
    (``http://host:19530``), the collection named after ``directory`` (`kireme.index.servers.collection_name`).
    """
    if kind not in (*STORES, "memory"):
        raise ConfigError(f"unknown store {kind!r}: choose one of {', '.join(STORES)}")
    if base and kind not in URI_STORES:
        raise ConfigError(
            f"--store-uri needs the {', '.join(URI_STORES)} store; the {kind} store lives in the index directory"
        )
    path: Path | str = f"{base.rstrip('/')}/{directory or kind}" if base else db / (directory or kind)
    if not create and not base and kind in ("chroma", "milvus", "qdrant"):
        from kireme.index.media import open_reading  # a private copy on a read-only or full disk

        return open_reading(kind, Path(path), info)
    if kind == "lancedb":
        from kireme.index.lancedb_store import LanceDBStore

        return LanceDBStore(path, info=info, create=create)
    if kind == "chroma":
        from kireme.index.chroma_store import ChromaStore

        return ChromaStore(path, info=info, create=create)
    if kind in SERVER_STORES:
        from kireme.index.servers import server_uri

        uri = server_uri(kind, base) if base else None
        if kind == "milvus":
            from kireme.index.milvus_store import MilvusStore

            return MilvusStore(path, uri=uri, info=info, create=create)
        from kireme.index.qdrant_store import QdrantStore

        return QdrantStore(path, uri=uri, info=info, create=create)
    from kireme.index.memory import MemoryStore

    return MemoryStore()
