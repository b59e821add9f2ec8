"""A `VectorStore` on Chroma: a persistent local collection with cosine distance.

Layout: ``chromadb.PersistentClient(path)`` owns the directory: ``chroma.sqlite3`` (rows, metadata,
documents) plus one folder per collection segment holding the HNSW files. Telemetry is always off and
no embedding function is ever attached, so Chroma never downloads a model: vectors come from kireme.

Rows: the chunk ``text`` is the Chroma *document*; everything else is scalar metadata (``idx``,
``start``, ``end`` as ints; ``headings`` and ``metadata`` as JSON strings). The embedder's description
is kept in the collection metadata as JSON under ``kireme_info``, written when the collection is
created.

Caveats: Chroma searches an HNSW graph, so results are approximate: with `HNSW` (32 neighbours,
``ef_construction`` and ``ef_search`` 200) recall@10 against exact search measured 0.990 at 66k rows
(Chroma's defaults: 0.942). Chroma inserts each batch into the graph in parallel, in no fixed order, so two
identical builds can answer a query differently where scores are nearly tied (top 10 identical for 98.8%
of queries at 66k, all at a few thousand rows); nothing in Chroma's configuration makes builds
deterministic. LanceDB (the default store) searches exactly.

``add`` commits in batches of at most ``client.get_max_batch_size()`` rows, so a very large ``add`` is not
atomic as a whole; adding an id that already exists is silently ignored by
Chroma (chunk ids are meant to be unique).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from kireme.errors import ConfigError, MissingExtraError
from kireme.index.ann import AnnMode
from kireme.index.names import from_stored, json_text, stored_filter, to_stored
from kireme.index.store import Hit, StoredChunk, check_filter, check_rows

log = logging.getLogger(__name__)
# A busy (locked) Chroma database is tried this many times, waiting 0.05, 0.1, 0.2... s between
_LOCKED_TRIES = 6

if TYPE_CHECKING:
    from chromadb.api.types import Include

INFO_KEY = "kireme_info"
PAGE = 1000  # rows per ``collection.get`` page
DELETE_BATCH = 1000  # doc ids per ``$in`` filter
# The collection's HNSW graph: measured with benchmarks/chroma_recall.py (hash embedder, 66k rows, 400
# queries), recall@10 against exact search 0.990 (Chroma's defaults: 0.942) for the same build time.
HNSW: dict[str, Any] = {"space": "cosine", "max_neighbors": 32, "ef_construction": 200, "ef_search": 200}


def chroma_where(where: Mapping[str, str] | None) -> dict[str, Any] | None:
    """An exact-match filter in Chroma's ``where`` syntax.

    >>> chroma_where({"doc_id": "a"})
    {'doc_id': 'a'}
    >>> chroma_where({"doc_id": "a", "format": "markdown"})
    {'$and': [{'doc_id': 'a'}, {'format': 'markdown'}]}
    """
    if not where:
        return None
    check_filter(where)
    clauses = [{key: str(value)} for key, value in (stored_filter(where) or {}).items()]
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


class ChromaStore:
    """Chunks and vectors in a persistent Chroma collection under ``path``."""

    name = "chroma"

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        collection: str = "kireme_chunks",
        info: Mapping[str, Any] | None = None,
        create: bool = True,
    ) -> None:
        try:
            import chromadb
            from chromadb.config import Settings
        except ImportError:
            raise MissingExtraError("Chroma store", "chroma", "chromadb") from None
        self.path = os.fspath(path)
        self.collection_name = collection
        self.writable = create
        self._client: Any = None
        self._collection: Any = None
        self._max_batch = 1
        if not create and not os.path.isdir(self.path):
            return  # a reader never creates anything: no directory yet reads as an empty store
        # Every client on one path in one process must use identical settings (Chroma shares them).
        self._client = chromadb.PersistentClient(
            path=self.path, settings=Settings(anonymized_telemetry=False)
        )
        metadata = {INFO_KEY: json.dumps(dict(info), ensure_ascii=False)} if info else None
        if create:
            # An existing collection keeps its metadata and configuration (they are not overwritten).
            self._collection = self._client.get_or_create_collection(
                collection,
                embedding_function=None,
                metadata=metadata,
                configuration={"hnsw": HNSW},
            )
            self._raise_search_effort()
        elif collection in {c.name for c in self._client.list_collections()}:
            self._collection = self._client.get_collection(collection, embedding_function=None)
        self._max_batch = max(1, int(self._client.get_max_batch_size()))

    # -- VectorStore ------------------------------------------------------------------------------------

    def add(self, chunks: Sequence[StoredChunk], vectors: np.ndarray) -> None:
        vectors = check_rows(chunks, vectors)
        self._check_writable()
        if not chunks:
            return
        for i in range(0, len(chunks), self._max_batch):
            batch = chunks[i : i + self._max_batch]
            self._collection.add(
                ids=[c.id for c in batch],
                embeddings=vectors[i : i + self._max_batch],
                documents=[c.text for c in batch],
                metadatas=[_metadata(c) for c in batch],
            )

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        self._check_writable()
        ids = sorted(set(doc_ids))
        for i in range(0, len(ids), DELETE_BATCH):
            in_batch: dict[Literal["$in", "$nin"], list[str | int | float | bool]] = {
                "$in": [to_stored(d) for d in ids[i : i + DELETE_BATCH]]
            }
            self._collection.delete(where={"doc_id": in_batch})

    def doc_counts(self) -> dict[str, int]:
        """Rows per document, from the rows' metadata."""
        pages = self._pages(None, include=["metadatas"])
        return dict(Counter(from_stored(meta["doc_id"]) for _, _, meta in pages))

    def doc_ids(self) -> set[str]:
        return set(self.doc_counts())

    def count(self) -> int:
        return 0 if self._collection is None else int(self._collection.count())

    def search(
        self, vector: np.ndarray, k: int, where: Mapping[str, str] | None = None, *, exact: bool = False
    ) -> list[Hit]:
        """Through Chroma's HNSW graph (which it always keeps); ``exact`` is a `ConfigError`."""
        if exact:
            raise ConfigError(
                "the chroma store always searches its HNSW graph; exact search needs the lancedb store "
                "(kireme index PATH... --store lancedb --db ANOTHER_DIR)"
            )
        filter_ = chroma_where(where)
        n = min(k, self.count())
        if n <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if not np.any(query):
            # Cosine distance to a zero vector is undefined: every row scores 0 (like MemoryStore).
            return [Hit(chunk, 0.0) for _, chunk in zip(range(n), self.chunks(where), strict=False)]
        result = self._collection.query(
            query_embeddings=query.reshape(1, -1),
            n_results=n,
            where=filter_,
            include=["documents", "metadatas", "distances"],
        )
        ids, documents = result["ids"][0], (result["documents"] or [[]])[0]
        metadatas, distances = (result["metadatas"] or [[]])[0], (result["distances"] or [[]])[0]
        hits = [
            Hit(_chunk(id_, doc, meta), 1.0 - float(dist))
            for id_, doc, meta, dist in zip(ids, documents, metadatas, distances, strict=True)
        ]
        hits.sort(key=lambda hit: -hit.score)  # already sorted by Chroma; keep the contract explicit
        return hits

    def chunks(self, where: Mapping[str, str] | None = None) -> Iterator[StoredChunk]:
        filter_ = chroma_where(where)
        return (
            _chunk(id_, doc, meta)
            for id_, doc, meta in self._pages(filter_, include=["documents", "metadatas"])
        )

    def get(self, ids: Sequence[str]) -> list[StoredChunk]:
        if not ids or self._collection is None:
            return []
        found: dict[str, StoredChunk] = {}
        unique = sorted(set(ids))
        for i in range(0, len(unique), DELETE_BATCH):
            page = self._collection.get(ids=unique[i : i + DELETE_BATCH], include=["documents", "metadatas"])
            for id_, doc, meta in _rows(page):
                found[id_] = _chunk(id_, doc, meta)
        return [found[i] for i in ids if i in found]

    def close(self) -> None:
        """Release this store's reference to the shared Chroma system (idempotent)."""
        close = getattr(self._client, "close", None)
        if close is not None:
            close()

    # -- extras ---------------------------------------------------------------------------------------

    def stored_info(self) -> dict[str, Any] | None:
        """The info written when the collection was created, or ``None``."""
        if self._collection is None:
            return None
        raw = (self._collection.metadata or {}).get(INFO_KEY)
        return json.loads(raw) if raw else None

    def optimize(self, *, ann: AnnMode = "auto") -> None:
        """Nothing to do: Chroma compacts on its own and always keeps its HNSW graph (``ann`` is ignored)."""

    def _raise_search_effort(self) -> None:
        """A collection made before `HNSW` was set keeps its graph (``max_neighbors`` and
        ``ef_construction`` are fixed at creation) but gets the search effort, which Chroma can change.

        Best effort: Chroma's SQLite can be busy for a moment (its own background work, another process
        reading), so a locked database is tried again a few times; if it stays locked, searches keep the
        old effort and the index is written as usual, with a warning. Any other failure is raised."""
        current = ((self._collection.configuration or {}).get("hnsw") or {}).get("ef_search")
        if not (isinstance(current, int) and current < HNSW["ef_search"]):
            return
        for attempt in range(_LOCKED_TRIES):
            try:
                self._collection.modify(configuration={"hnsw": {"ef_search": HNSW["ef_search"]}})
                return
            except Exception as exc:  # chromadb.errors.InternalError: "... database is locked"
                if "locked" not in str(exc):
                    raise  # not a busy database: a real failure, as before
                if attempt + 1 < _LOCKED_TRIES:
                    time.sleep(0.05 * 2**attempt)
                    continue
                log.warning(
                    "%s: could not raise the collection's search effort to ef_search %d (%s); searches use %d",
                    self.path,
                    HNSW["ef_search"],
                    exc,
                    current,
                )
                return

    def _check_writable(self) -> None:
        if not self.writable:
            raise PermissionError(f"{self.path}: this store was opened for reading only")

    def _pages(self, where: dict[str, Any] | None, include: Include) -> Iterator[tuple[str, Any, Any]]:
        """Every matching row, a page at a time (ids, documents, metadatas)."""
        if self._collection is None:
            return
        offset = 0
        while True:
            page = self._collection.get(where=where, include=include, limit=PAGE, offset=offset)
            ids = page["ids"]
            if not ids:
                return
            yield from _rows(page)
            if len(ids) < PAGE:
                return
            offset += len(ids)


def _rows(page: Any) -> Iterator[tuple[str, Any, Any]]:
    """(id, document, metadata) of each row of a ``get`` result (``None`` for a column not included)."""
    ids = page["ids"]
    documents = page.get("documents") or [None] * len(ids)
    metadatas = page.get("metadatas") or [None] * len(ids)
    return zip(ids, documents, metadatas, strict=True)


def _metadata(chunk: StoredChunk) -> dict[str, Any]:
    return {
        "doc_id": to_stored(chunk.doc_id),
        "idx": int(chunk.index),
        "start": int(chunk.start),
        "end": int(chunk.end),
        "embed_text": chunk.embed_text,
        "headings": json_text([to_stored(h) for h in chunk.headings]),  # JSON would join a surrogate pair
        "title": to_stored(chunk.title),
        "source": to_stored(chunk.source),
        "format": chunk.format,
        "metadata": json_text(dict(chunk.metadata)),
    }


def _chunk(id_: str, document: str | None, meta: Mapping[str, Any]) -> StoredChunk:
    return StoredChunk(
        id=id_,
        doc_id=from_stored(meta["doc_id"]),
        index=int(meta["idx"]),
        start=int(meta["start"]),
        end=int(meta["end"]),
        text=document or "",
        embed_text=meta.get("embed_text", ""),
        headings=tuple(from_stored(h) for h in json.loads(meta.get("headings") or "[]")),
        title=from_stored(meta.get("title", "")),
        source=from_stored(meta.get("source", "")),
        format=meta.get("format", "text"),
        metadata=json.loads(meta.get("metadata") or "{}"),
    )
