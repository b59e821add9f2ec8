"""A `VectorStore` on Milvus: a Milvus server (``--store-uri http://host:19530``), or milvus-lite's local
engine in a folder of the index directory (``DB/milvus/milvus.db``) when no URI is given.

Rows: one collection, ``kireme_<folder>`` (`kireme.index.servers.collection_name`): the chunk id is the
primary key (VARCHAR), every other field a scalar column (``headings`` and ``metadata`` as JSON text), the
vector a FLOAT_VECTOR under a FLAT index with the COSINE metric, so every search is exact. The collection
is created with ``Strong`` consistency: a search sees every row inserted before it. The embedder's
description is kept as JSON in the collection's properties under ``kireme.info``, written when the
collection is created.

Filters are Milvus boolean expressions: each value is written as a double-quoted string literal with
Milvus's escapes (`milvus_string`), so a name such as ``O'Reilly.md`` or ``a"b\\c`` matches exactly.

Caveats: a VARCHAR holds at most 65,535 bytes, so a chunk whose text (or embed_text, headings, metadata)
is longer is refused with a `StoreError` naming it (index with a smaller ``--max-size``). milvus-lite
locks its folder: one process at a time (a running ``kireme serve`` on the index keeps ``kireme index``
out; a server has no such limit). An ``insert`` of many rows is sent in several requests, so it is not
atomic as a whole (the manifest makes that safe: rows count only once their document's entry is written).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
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
from kireme.index.store import Hit, StoredChunk, check_filter, check_rows

INFO_KEY = "kireme.info"
LOCAL_FILE = "milvus.db"  # pymilvus runs milvus-lite for a URI ending in .db
PAGE = 1000  # rows per query-iterator page, ids per ``id in [...]`` expression
MAX_VARCHAR = 65_535  # bytes: the longest VARCHAR Milvus keeps
MAX_ID = 512  # bytes of a chunk id (the primary key)
REQUEST_BYTES = 16 << 20  # text per insert request (a server refuses gRPC messages past 64 MB)
MAX_TOPK = 16_384  # the most rows one Milvus search or query returns
_TEXT_FIELDS = ("doc_id", "text", "embed_text", "headings", "title", "source", "format", "metadata")
_OUTPUT = ["id", "doc_id", "idx", "start", "end", *_TEXT_FIELDS[1:]]
_DRIVER = ("pymilvus", "grpc", "milvus_lite")


def milvus_string(value: str) -> str:
    """A Milvus expression string literal (double quotes; backslash, quote and line breaks escaped).

    Examples:
        >>> print(milvus_string("O'Reilly.md"))
        "O'Reilly.md"
        >>> print(milvus_string('a"b\\\\c'))
        "a\\"b\\\\c"
    """
    escaped = (
        value.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return f'"{escaped}"'


def milvus_filter(where: Mapping[str, str] | None) -> str:
    """An exact-match filter as a Milvus boolean expression (``""``: every row).

    Examples:
        >>> milvus_filter({"format": "markdown", "source": "規程.md"})
        'format == "markdown" and source == "規程.md"'
    """
    if not where:
        return ""
    check_filter(where)
    stored = stored_filter(where) or {}
    return " and ".join(f"{key} == {milvus_string(value)}" for key, value in stored.items())


def _quiet_driver() -> None:
    """pymilvus logs every failed call with its traceback on its own handler, milvus-lite a failed start,
    and gRPC's server (milvus-lite's, in this process) a call it does not implement, which the client
    then does without: kireme reports real failures itself, as one line."""
    for name in ("pymilvus", "pymilvus.milvus_client", "milvus_lite", "grpc._server"):
        logger = logging.getLogger(name)
        if logger.level < logging.CRITICAL:
            logger.setLevel(logging.CRITICAL)


def _close_local(path: str, client: Any) -> None:
    client.close()
    try:
        from milvus_lite.server_manager import server_manager_instance
    except ImportError:
        return
    server_manager_instance.release_server(path)  # stops its engine and unlocks the folder


_LOCAL = SharedClients(_close_local)


class MilvusStore:
    """Chunks and vectors in a Milvus collection: on ``uri`` (a server), else in ``path`` (milvus-lite)."""

    name = "milvus"

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
            import pymilvus
        except ImportError:
            raise MissingExtraError("Milvus store", "milvus", "pymilvus") from None
        self._pymilvus = pymilvus
        _quiet_driver()
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
            self._local = os.path.join(self.path, LOCAL_FILE)
            self._client = _LOCAL.acquire(self._local, self._open_local)
        else:
            with self._guard("connecting"):
                self._client = pymilvus.MilvusClient(
                    uri=uri, token=credential("milvus") or "", timeout=TIMEOUT_S
                )
        with self._guard("opening the collection"):
            self._opened()
            dimension = (self._info or {}).get("dimension")
            if create and not self._exists and type(dimension) is int:
                self._create(dimension)

    # -- connection ----------------------------------------------------------------------------------

    def _open_local(self) -> Any:
        """A client on milvus-lite's engine for this folder (one per process, shared)."""
        assert self._local is not None
        failures: list[str] = []

        class Keep(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                cause = record.exc_info[1] if record.exc_info else None
                failures.append(str(cause) if cause else record.getMessage())

        logger = logging.getLogger("milvus_lite.server_manager")
        keep = Keep(logging.ERROR)
        level, propagate = logger.level, logger.propagate
        logger.addHandler(keep)
        logger.setLevel(logging.ERROR)  # its failure to start, kept here (and not printed)
        logger.propagate = False
        try:
            return self._pymilvus.MilvusClient(uri=self._local)
        except Exception as exc:
            why = failures[-1] if failures else " ".join(str(exc).split())
            locked = "lock" in why.lower()
            raise StoreError(
                f"{self._local} cannot be opened ({why[:300]})"
                + (
                    "; milvus-lite lets one process at a time open it: stop the other kireme process "
                    "(serve, index, search) or use a Milvus server (--store-uri http://host:19530)"
                    if locked
                    else "; if its files are damaged, " + rebuild_hint(os.path.dirname(self.path))
                )
            ) from None
        finally:
            logger.removeHandler(keep)
            logger.setLevel(level)
            logger.propagate = propagate

    def _guard(self, what: str) -> Any:
        hint = (
            "check the URI, that the server is running, and MILVUS_TOKEN"
            if self.uri is not None
            else "is the folder readable, and not in use by another process?"
        )
        return guarded(self.where, what, _DRIVER, hint)

    def _opened(self) -> bool:
        """Whether the collection exists (looked up until it does: another object may create it)."""
        if self._exists or self._client is None:
            return self._exists
        if not self._client.has_collection(self.collection):
            return False
        described = self._client.describe_collection(self.collection)
        for field in described.get("fields", []):
            if field.get("name") == "vector":
                self.dimension = int(field.get("params", {}).get("dim"))
        self._client.load_collection(self.collection)  # a server may have released it
        self._exists = True
        return True

    def _create(self, dimension: int) -> None:
        self._check_writable()
        from pymilvus import DataType, MilvusClient

        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=MAX_ID)
        for name in ("idx", "start", "end"):
            schema.add_field(name, DataType.INT64)
        for name in _TEXT_FIELDS:
            schema.add_field(name, DataType.VARCHAR, max_length=MAX_VARCHAR)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dimension)
        index = self._client.prepare_index_params()
        index.add_index("vector", index_type="FLAT", metric_type="COSINE")
        properties = {INFO_KEY: json.dumps(self._info, ensure_ascii=False)} if self._info else {}
        if not self._client.has_collection(self.collection):  # another object may have made it meanwhile
            self._client.create_collection(
                self.collection,
                schema=schema,
                index_params=index,
                consistency_level="Strong",
                properties=properties,
            )
        self._exists = False
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
        rows = [_row(c) for c in chunks]
        for row in rows:
            _check_sizes(row)
        with self._guard("inserting rows"):
            if not self._opened():
                self._create(int(vectors.shape[1]))
            if vectors.shape[1] != self.dimension:
                raise ValueError(
                    f"vectors have dimension {vectors.shape[1]} but {self.where} stores {self.dimension}"
                )
            batch: list[dict[str, Any]] = []
            size = 0
            for row, vector in zip(rows, vectors, strict=True):
                row["vector"] = vector.tolist()
                batch.append(row)
                size += sum(len(row[name]) for name in _TEXT_FIELDS) * 4 + 4 * len(vector)
                if size >= REQUEST_BYTES or len(batch) >= PAGE:
                    self._client.insert(self.collection, batch)
                    batch, size = [], 0
            if batch:
                self._client.insert(self.collection, batch)

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        self._check_writable()
        ids = sorted(set(doc_ids))
        with self._guard("deleting rows"):
            if not ids or not self._opened():
                return
            for i in range(0, len(ids), PAGE):
                values = ", ".join(milvus_string(to_stored(d)) for d in ids[i : i + PAGE])
                self._client.delete(self.collection, filter=f"doc_id in [{values}]")

    def doc_counts(self) -> dict[str, int]:
        """Rows per document, from the ``doc_id`` column alone."""
        return dict(Counter(from_stored(row["doc_id"]) for row in self._rows("", ["doc_id"])))

    def doc_ids(self) -> set[str]:
        return set(self.doc_counts())

    def count(self) -> int:
        with self._guard("counting rows"):
            if not self._opened():
                return 0
            rows = self._client.query(self.collection, filter="", output_fields=["count(*)"])
        return int(rows[0]["count(*)"]) if rows else 0

    def search(
        self, vector: np.ndarray, k: int, where: Mapping[str, str] | None = None, *, exact: bool = False
    ) -> list[Hit]:
        """The ``k`` nearest rows (at most 16,384, Milvus's limit); always exact (a FLAT index)."""
        expression = milvus_filter(where)
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self._guard("searching"):
            if k <= 0 or not self._opened():
                return []
            if not np.any(query):
                # Cosine similarity to a zero vector is undefined: every row scores 0 (like MemoryStore).
                return [Hit(chunk, 0.0) for _, chunk in zip(range(k), self.chunks(where), strict=False)]
            result = self._client.search(
                self.collection,
                data=[query.tolist()],
                anns_field="vector",
                limit=min(k, MAX_TOPK),
                filter=expression,
                output_fields=_OUTPUT,
                search_params={"metric_type": "COSINE"},
            )
        hits = [Hit(_chunk(hit["entity"] | {"id": hit["id"]}), float(hit["distance"])) for hit in result[0]]
        hits.sort(key=lambda hit: -hit.score)
        return hits

    def chunks(self, where: Mapping[str, str] | None = None) -> Iterator[StoredChunk]:
        expression = milvus_filter(where)
        return (_chunk(row) for row in self._rows(expression, _OUTPUT))

    def get(self, ids: Sequence[str]) -> list[StoredChunk]:
        if not ids:
            return []
        found: dict[str, StoredChunk] = {}
        unique = sorted(set(ids))
        with self._guard("reading rows"):
            if not self._opened():
                return []
            for i in range(0, len(unique), PAGE):
                values = ", ".join(milvus_string(x) for x in unique[i : i + PAGE])
                rows = self._client.query(self.collection, filter=f"id in [{values}]", output_fields=_OUTPUT)
                found.update((row["id"], _chunk(row)) for row in rows)
        return [found[i] for i in ids if i in found]

    def close(self) -> None:
        """Release this object's client (milvus-lite: the last one on a folder stops its engine)."""
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
            properties = self._client.describe_collection(self.collection).get("properties") or {}
        raw = properties.get(INFO_KEY)
        return json.loads(raw) if raw else None

    def optimize(self, *, ann: AnnMode = "auto") -> None:
        """Nothing to do: the FLAT index needs no training (``ann`` is ignored; searches are exact)."""

    def drop(self) -> None:
        """Delete the collection (a store replaced by a re-embed)."""
        self._check_writable()
        with self._guard("dropping the collection"):
            if self._client is not None and self._client.has_collection(self.collection):
                self._client.drop_collection(self.collection)
        self._exists = False

    def _check_writable(self) -> None:
        if not self.writable:
            raise PermissionError(f"{self.path}: this store was opened for reading only")

    def _rows(self, expression: str, fields: list[str]) -> Iterator[dict[str, Any]]:
        """Every row matching ``expression``, a page at a time."""
        with self._guard("reading rows"):
            if not self._opened():
                return
            pages = self._client.query_iterator(
                self.collection, batch_size=PAGE, filter=expression, output_fields=fields
            )
        try:
            while True:
                with self._guard("reading rows"):
                    page = pages.next()
                if not page:
                    return
                yield from page
        finally:
            pages.close()


def _row(chunk: StoredChunk) -> dict[str, Any]:
    return {
        "id": chunk.id,
        "doc_id": to_stored(chunk.doc_id),
        "idx": int(chunk.index),
        "start": int(chunk.start),
        "end": int(chunk.end),
        "text": chunk.text,
        "embed_text": chunk.embed_text,
        "headings": json_text([to_stored(h) for h in chunk.headings]),  # JSON would join a surrogate pair
        "title": to_stored(chunk.title),
        "source": to_stored(chunk.source),
        "format": chunk.format,
        "metadata": json_text(dict(chunk.metadata)),
    }


def _check_sizes(row: dict[str, Any]) -> None:
    """A `StoreError` for a value longer than Milvus keeps (it would refuse the whole request)."""
    if len(row["id"].encode("utf-8", "surrogatepass")) > MAX_ID:
        raise StoreError(f"chunk id {row['id'][:80]!r} is longer than Milvus's {MAX_ID}-byte primary key")
    for name in _TEXT_FIELDS:
        size = len(row[name].encode("utf-8", "surrogatepass"))
        if size > MAX_VARCHAR:
            raise StoreError(
                f"{from_stored(row['doc_id'])}: chunk {row['idx']} has {size:,} bytes of {name}; the milvus "
                f"store keeps at most {MAX_VARCHAR:,} per field: index with a smaller --max-size"
            )


def _chunk(row: Mapping[str, Any]) -> StoredChunk:
    return StoredChunk(
        id=str(row["id"]),
        doc_id=from_stored(row["doc_id"]),
        index=int(row["idx"]),
        start=int(row["start"]),
        end=int(row["end"]),
        text=row.get("text") or "",
        embed_text=row.get("embed_text") or "",
        headings=tuple(from_stored(h) for h in json.loads(row.get("headings") or "[]")),
        title=from_stored(row.get("title") or ""),
        source=from_stored(row.get("source") or ""),
        format=row.get("format") or "text",
        metadata=json.loads(row.get("metadata") or "{}"),
    )
