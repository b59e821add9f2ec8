"""A `VectorStore` on Qdrant: a Qdrant server (``--store-uri http://host:6333``), or qdrant-client's local
mode in a folder of the index directory (``DB/qdrant/``) when no URI is given.

Rows: one collection, ``kireme_<folder>`` (`kireme.index.servers.collection_name`), cosine distance. A
Qdrant point id must be an integer or a UUID, so each row's id is `point_id`: a UUID derived from
kireme's chunk id (UUID version 5, never random), the chunk id itself kept in the payload with every
other field (``headings`` as a list, ``metadata`` as JSON text). The embedder's description is the
collection's metadata under ``kireme_info``, written when the collection is created (where the client
keeps collection metadata: recent versions; with an older one `QdrantStore.stored_info` reads ``None``).

Filters are Qdrant ``FieldCondition``/``MatchValue`` objects: values are passed as data, never written
into a query string, so any name (``O'Reilly.md``) matches exactly. A server indexes those payload
fields (keyword indexes) and searches its HNSW graph, approximate once a segment is large (Qdrant's
``indexing_threshold``); ``search(..., exact=True)`` asks it for an exact scan. The local mode always
scans every row exactly, keeps the collection in memory, and locks its folder: one process at a time
(a running ``kireme serve`` on the index keeps ``kireme index`` out; a server has no such limit). Every
write waits until the server has applied it (``wait=True``).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from kireme.errors import MissingExtraError, StoreError, rebuild_hint
from kireme.index.ann import AnnMode
from kireme.index.names import from_stored, json_text, stored_filter, to_stored
from kireme.index.servers import (
    TIMEOUT_S,
    SharedClients,
    collection_name,
    credential,
    guarded,
    shown_uri,
)
from kireme.index.store import FILTER_FIELDS, Hit, StoredChunk, check_filter, check_rows

INFO_KEY = "kireme_info"
PAGE = 1000  # points per scroll page, per delete filter, per retrieve
UPSERT_POINTS = 256  # points per upsert request
UPSERT_BYTES = 8 << 20  # text per upsert request (a server refuses bodies past 32 MB)
POINT_NAMESPACE = uuid.UUID("5b0a4f0e-6a3c-5d1f-9c1e-6b6972656d65")  # fixed: ids must never change
_DRIVER = ("qdrant_client", "httpx", "httpcore", "grpc", "portalocker")


def point_id(chunk_id: str) -> str:
    """The Qdrant point id of a chunk: a UUID derived from its id, the same in every run and process.

    Examples:
        >>> point_id("3f2a") == point_id("3f2a") != point_id("3f2b")
        True
        >>> len(point_id("3f2a"))
        36
    """
    return str(uuid.uuid5(POINT_NAMESPACE, chunk_id))


def qdrant_filter(where: Mapping[str, str] | None) -> Any:
    """An exact-match filter as a Qdrant ``Filter`` (``None``: every row); values are passed as data."""
    if not where:
        return None
    check_filter(where)
    from qdrant_client import models

    stored = stored_filter(where) or {}
    return models.Filter(
        must=[
            models.FieldCondition(key=key, match=models.MatchValue(value=value))
            for key, value in stored.items()
        ]
    )


def _close_local(_path: str, client: Any) -> None:
    client.close()


_LOCAL = SharedClients(_close_local)


class QdrantStore:
    """Chunks and vectors in a Qdrant collection: on ``uri`` (a server), else in ``path`` (local mode)."""

    name = "qdrant"

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        uri: str | None = None,
        collection: str | None = None,
        info: Mapping[str, Any] | None = None,
        create: bool = True,
    ) -> None:
        try:
            import qdrant_client
            from qdrant_client import models
        except ImportError:
            raise MissingExtraError("Qdrant store", "qdrant", "qdrant-client") from None
        self._qdrant = qdrant_client
        self._models = models
        self.path = os.fspath(path)  # a folder, or <uri>/<folder> for a server
        self.uri = uri
        self.collection = collection or collection_name(os.path.basename(self.path.rstrip("/")))
        self.writable = create
        self._info = dict(info) if info else None
        self.dimension: int | None = None
        self._client: Any = None
        self._local: str | None = None
        self._exists = False
        self.where = self.path if uri is None else f"{shown_uri(uri)} (collection {self.collection})"
        if uri is None:
            if not create and not os.path.isdir(self.path):
                return  # a reader never creates anything: no folder yet reads as an empty store
            os.makedirs(self.path, exist_ok=True)
            self._local = self.path
            self._client = _LOCAL.acquire(self.path, self._open_local)
        else:
            options: dict[str, Any] = {"url": uri, "api_key": credential("qdrant"), "timeout": int(TIMEOUT_S)}
            if _accepts(qdrant_client.QdrantClient, "check_compatibility"):  # qdrant-client >= 1.11
                options["check_compatibility"] = False  # it would warn on stderr when the server is down
            with self._guard("connecting"):
                self._client = qdrant_client.QdrantClient(**options)
        with self._guard("opening the collection"):
            self._opened()
            dimension = (self._info or {}).get("dimension")
            if create and not self._exists and type(dimension) is int:
                self._create(dimension)

    # -- connection ----------------------------------------------------------------------------------

    def _open_local(self) -> Any:
        """A local-mode client on this folder (one per process, shared: the folder is locked)."""
        try:
            # searches may come from a server's threads: the client's SQLite file is written by one writer
            return self._qdrant.QdrantClient(path=self.path, force_disable_check_same_thread=True)
        except Exception as exc:
            why = " ".join(str(exc).split())
            locked = "already accessed" in why
            raise StoreError(
                f"{self.path} cannot be opened"
                + (
                    ": another process has it open (qdrant's local mode lets one process at a time open it); "
                    "stop the other kireme process (serve, index, search) or use a Qdrant server "
                    "(--store-uri http://host:6333)"
                    if locked
                    else f" ({type(exc).__name__}: {why[:300]}); if its files are damaged, "
                    + rebuild_hint(os.path.dirname(self.path))
                )
            ) from None

    def _guard(self, what: str) -> Any:
        hint = (
            "check the URI, that the server is running, and QDRANT_API_KEY"
            if self.uri is not None
            else "is the folder readable, and not in use by another process?"
        )
        return guarded(self.where, what, _DRIVER, hint)

    def _opened(self) -> bool:
        """Whether the collection exists (looked up until it does: another object may create it)."""
        if self._exists or self._client is None:
            return self._exists
        if not self._client.collection_exists(self.collection):
            return False
        vectors = self._client.get_collection(self.collection).config.params.vectors
        self.dimension = int(vectors.size)
        self._exists = True
        return True

    def _create(self, dimension: int) -> None:
        self._check_writable()
        models = self._models
        if not self._client.collection_exists(self.collection):  # another object may have made it meanwhile
            options: dict[str, Any] = {}
            if self._info and _accepts(self._client.create_collection, "metadata"):  # collection metadata
                options["metadata"] = {INFO_KEY: json.dumps(self._info, ensure_ascii=False)}
            self._client.create_collection(
                self.collection,
                vectors_config=models.VectorParams(size=dimension, distance=models.Distance.COSINE),
                **options,
            )
            if self.uri is not None:  # the local mode has no payload indexes (it scans)
                for field in ("chunk_id", *FILTER_FIELDS):
                    self._client.create_payload_index(
                        self.collection, field, field_schema=models.PayloadSchemaType.KEYWORD, wait=True
                    )
        if not self._opened():
            raise StoreError(f"{self.where}: the collection was created but cannot be found")

    # -- VectorStore ------------------------------------------------------------------------------------

    def add(self, chunks: Sequence[StoredChunk], vectors: np.ndarray) -> None:
        vectors = check_rows(chunks, vectors)
        self._check_writable()
        if not chunks:
            return
        if vectors.ndim != 2:
            raise ValueError(f"vectors must be a matrix (n, dim), got shape {vectors.shape}")
        models = self._models
        with self._guard("writing rows"):
            if not self._opened():
                self._create(int(vectors.shape[1]))
            if vectors.shape[1] != self.dimension:
                raise ValueError(
                    f"vectors have dimension {vectors.shape[1]} but {self.where} stores {self.dimension}"
                )
            batch: list[Any] = []
            size = 0
            for chunk, vector in zip(chunks, vectors, strict=True):
                payload = _payload(chunk)
                batch.append(
                    models.PointStruct(id=point_id(chunk.id), vector=vector.tolist(), payload=payload)
                )
                size += len(chunk.text) + len(chunk.embed_text) + 4 * len(vector)
                if size >= UPSERT_BYTES or len(batch) >= UPSERT_POINTS:
                    self._client.upsert(self.collection, batch, wait=True)
                    batch, size = [], 0
            if batch:
                self._client.upsert(self.collection, batch, wait=True)

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        self._check_writable()
        ids = sorted(set(doc_ids))
        models = self._models
        with self._guard("deleting rows"):
            if not ids or not self._opened():
                return
            for i in range(0, len(ids), PAGE):
                values = [to_stored(d) for d in ids[i : i + PAGE]]
                selector = models.FilterSelector(
                    filter=models.Filter(
                        must=[models.FieldCondition(key="doc_id", match=models.MatchAny(any=values))]
                    )
                )
                self._client.delete(self.collection, points_selector=selector, wait=True)

    def doc_counts(self) -> dict[str, int]:
        """Rows per document, from the ``doc_id`` payload field alone."""
        return dict(Counter(from_stored(p["doc_id"]) for p in self._payloads(None, ["doc_id"])))

    def doc_ids(self) -> set[str]:
        return set(self.doc_counts())

    def count(self) -> int:
        with self._guard("counting rows"):
            if not self._opened():
                return 0
            return int(self._client.count(self.collection, exact=True).count)

    def search(
        self, vector: np.ndarray, k: int, where: Mapping[str, str] | None = None, *, exact: bool = False
    ) -> list[Hit]:
        """The ``k`` nearest rows: through a server's HNSW graph unless ``exact``; local mode: always exact."""
        filter_ = qdrant_filter(where)
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self._guard("searching"):
            if k <= 0 or not self._opened():
                return []
            if not np.any(query):
                # Cosine similarity to a zero vector is undefined: every row scores 0 (like MemoryStore).
                return [Hit(chunk, 0.0) for _, chunk in zip(range(k), self.chunks(where), strict=False)]
            params = self._models.SearchParams(exact=True) if exact and self.uri is not None else None
            result = self._client.query_points(
                self.collection,
                query=query.tolist(),
                limit=k,
                query_filter=filter_,
                with_payload=True,
                search_params=params,
            )
        hits = [Hit(_chunk(point.payload), float(point.score)) for point in result.points]
        hits.sort(key=lambda hit: -hit.score)
        return hits

    def chunks(self, where: Mapping[str, str] | None = None) -> Iterator[StoredChunk]:
        filter_ = qdrant_filter(where)
        return (_chunk(payload) for payload in self._payloads(filter_, True))

    def get(self, ids: Sequence[str]) -> list[StoredChunk]:
        if not ids:
            return []
        found: dict[str, StoredChunk] = {}
        unique = sorted(set(ids))
        with self._guard("reading rows"):
            if not self._opened():
                return []
            for i in range(0, len(unique), PAGE):
                points = self._client.retrieve(
                    self.collection, ids=[point_id(x) for x in unique[i : i + PAGE]], with_payload=True
                )
                for point in points:
                    chunk = _chunk(point.payload)
                    found[chunk.id] = chunk
        return [found[i] for i in ids if i in found]

    def close(self) -> None:
        """Release this object's client (local mode: the last one on a folder unlocks it)."""
        client, self._client = self._client, None
        if client is None:
            return
        if self._local is not None:
            _LOCAL.release(self._local)
        else:
            with contextlib.suppress(Exception):  # closing a connection that already failed
                client.close()

    # -- extras ---------------------------------------------------------------------------------------

    def stored_info(self) -> dict[str, Any] | None:
        """The info written when the collection was created (``None`` if none); before then, the pending one."""
        with self._guard("reading the collection"):
            if not self._opened():
                return dict(self._info) if self._info else None
            metadata = getattr(self._client.get_collection(self.collection).config, "metadata", None) or {}
        raw = metadata.get(INFO_KEY)
        return json.loads(raw) if raw else None

    def optimize(self, *, ann: AnnMode = "auto") -> None:
        """Nothing to do: Qdrant maintains its own index (``ann`` is ignored)."""

    def drop(self) -> None:
        """Delete the collection (a store replaced by a re-embed)."""
        self._check_writable()
        with self._guard("dropping the collection"):
            if self._client is not None and self._client.collection_exists(self.collection):
                self._client.delete_collection(self.collection)
        self._exists = False

    def _check_writable(self) -> None:
        if not self.writable:
            raise PermissionError(f"{self.path}: this store was opened for reading only")

    def _payloads(self, filter_: Any, fields: bool | list[str]) -> Iterator[dict[str, Any]]:
        """The payload of every point matching ``filter_``, a page at a time."""
        offset: Any = None
        while True:
            with self._guard("reading rows"):
                if not self._opened():
                    return
                points, offset = self._client.scroll(
                    self.collection,
                    scroll_filter=filter_,
                    limit=PAGE,
                    offset=offset,
                    with_payload=fields,
                    with_vectors=False,
                )
            for point in points:
                yield point.payload or {}
            if offset is None:
                return


def _accepts(function: Any, name: str) -> bool:
    """Whether ``function`` takes a keyword ``name`` (what an older qdrant-client lacks)."""
    try:
        return name in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def _payload(chunk: StoredChunk) -> dict[str, Any]:
    return {
        "chunk_id": chunk.id,
        "doc_id": to_stored(chunk.doc_id),
        "idx": int(chunk.index),
        "start": int(chunk.start),
        "end": int(chunk.end),
        "text": chunk.text,
        "embed_text": chunk.embed_text,
        "headings": [to_stored(h) for h in chunk.headings],
        "title": to_stored(chunk.title),
        "source": to_stored(chunk.source),
        "format": chunk.format,
        "metadata": json_text(dict(chunk.metadata)),
    }


def _chunk(payload: Mapping[str, Any] | None) -> StoredChunk:
    payload = payload or {}
    return StoredChunk(
        id=str(payload["chunk_id"]),
        doc_id=from_stored(payload["doc_id"]),
        index=int(payload["idx"]),
        start=int(payload["start"]),
        end=int(payload["end"]),
        text=payload.get("text") or "",
        embed_text=payload.get("embed_text") or "",
        headings=tuple(from_stored(h) for h in payload.get("headings") or ()),
        title=from_stored(payload.get("title") or ""),
        source=from_stored(payload.get("source") or ""),
        format=payload.get("format") or "text",
        metadata=json.loads(payload.get("metadata") or "{}"),
    )
