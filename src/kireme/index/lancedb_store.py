"""A `VectorStore` on LanceDB: one directory, one table, exact (brute-force) cosine search.

Layout: ``lancedb.connect(path)`` owns the directory; the table lives in ``<path>/<table>.lance/``
(Lance data files, deletion files and one manifest per version). Every ``add`` and every ``delete`` is
one atomic Lance commit (a new table version), so a crash never leaves half a batch behind; only
`LanceDBStore.delete_documents` with more than `DELETE_BATCH` ids commits in several steps.

Search is exact (a flat scan) until the table is large: from `ANN_MIN_ROWS` rows on, `LanceDBStore.optimize`
builds an approximate-nearest-neighbour index on the vectors (LanceDB's IVF_SQ, cosine: vectors cut into
partitions by k-means, 8-bit scalar-quantised; candidates re-scored on the full vectors) and searches use
it. A flat scan costs ~65 ms per query at 100k rows of dim 384 on 2 cores but 1.1-1.3 s at 1M; the index
answers at 1M in tens of milliseconds with recall@10 ≥ 0.95 against the exact scan (`benchmarks/ann.py`).
Rows added after the index was built are indexed by the next `optimize` (or scanned exactly until then,
so they are always found); the partitions are trained again when the table has grown `ANN_RETRAIN_GROWTH`
times since. ``search(..., exact=True)`` bypasses the index. A BTree index on ``id`` and ``doc_id`` makes
lookups by chunk id (keyword search) and deletions by document cheap at any size.

The embedder's description (name, dimension, normalised...) is kept as JSON in the Arrow schema
metadata under ``kireme.info``, written once when the table is created; `LanceDBStore.stored_info`
reads it back so ingestion can refuse to mix vectors of two models.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np

from kireme.errors import MissingExtraError
from kireme.index.ann import (
    ANN_MIN_ROWS,
    ANN_MIN_TRAIN_ROWS,
    ANN_MODES,
    ANN_REFINE_FACTOR,
    ANN_RETRAIN_GROWTH,
    AnnMode,
    ann_partitions,
    ann_probes,
)
from kireme.index.lancedb_import import import_lancedb
from kireme.index.names import from_stored, json_text, stored_filter, to_stored
from kireme.index.store import Hit, StoredChunk, check_filter, check_rows

log = logging.getLogger(__name__)

INFO_KEY = b"kireme.info"
DELETE_BATCH = 1000  # ids per ``DELETE ... IN (...)`` statement

# kireme's vector index carries what it was trained on in its name (no file beside the table, so nothing
# can disagree with the index, and object storage needs nothing more): vector_ivfsq_p<partitions>_n<rows>
VECTOR_INDEX = re.compile(r"vector_ivfsq_p(\d+)_n(\d+)")
_ROW_COLUMNS = [
    "id",
    "doc_id",
    "idx",
    "start",
    "end",
    "text",
    "embed_text",
    "headings",
    "title",
    "source",
    "format",
    "metadata",
]


@dataclass(frozen=True)
class VectorIndex:
    """The approximate-nearest-neighbour index of a store (what `kireme check` reports)."""

    kind: str  # LanceDB's index type, e.g. IVF_SQ
    ours: bool  # built by kireme (named by VECTOR_INDEX); searches bypass an index made by other means
    partitions: int
    trained_rows: int  # rows when the partitions were trained (re-trained at ANN_RETRAIN_GROWTH times this)
    indexed_rows: int
    unindexed_rows: int  # added since the last optimize: still found, by an exact scan of those rows

    @property
    def probes(self) -> int:
        """Partitions a query reads."""
        return ann_probes(self.partitions)


def sql_string(value: str) -> str:
    """A SQL string literal for a Lance filter (single quotes doubled; nothing else is special).

    >>> sql_string("O'Reilly.md")
    "'O''Reilly.md'"
    """
    return "'" + str(value).replace("'", "''") + "'"


def where_sql(where: Mapping[str, str] | None) -> str | None:
    """An exact-match filter as a Lance SQL predicate (column names quoted with backticks).

    >>> where_sql({"format": "markdown", "source": "規程.md"})
    "`format` = 'markdown' AND `source` = '規程.md'"
    """
    if not where:
        return None
    check_filter(where)
    stored = stored_filter(where) or {}
    return " AND ".join(f"`{key}` = {sql_string(value)}" for key, value in stored.items())


class LanceDBStore:
    """Chunks and vectors in a LanceDB table under ``path`` (created on first use)."""

    name = "lancedb"

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        table: str = "chunks",
        dimension: int | None = None,
        info: Mapping[str, Any] | None = None,
        create: bool = True,
    ) -> None:
        try:
            lancedb = import_lancedb()
        except ImportError:
            raise MissingExtraError("LanceDB store", "index", "lancedb") from None
        import pyarrow as pa

        self._pa = pa
        self.path = os.fspath(path)
        self.table_name = table
        self._info = dict(info) if info else None
        if dimension is None and self._info and type(self._info.get("dimension")) is int:
            dimension = self._info["dimension"]
        self.writable = create
        self._table: Any = None
        self.dimension: int | None = dimension
        self._db: Any = None
        if not create and "://" not in self.path and not os.path.isdir(self.path):
            return  # a reader never creates anything: no directory yet reads as an empty store
        # Interval 0: every read checks for a newer version, so two store objects on the same directory
        # (a writer and a reader, or two processes) always see each other's commits.
        self._db = lancedb.connect(self.path, read_consistency_interval=timedelta(0))
        if create and self._opened() is None and dimension is not None:
            self._create(None)

    # -- schema and table -------------------------------------------------------------------------------

    def _schema(self, dimension: int) -> Any:
        pa = self._pa
        metadata = {INFO_KEY: json.dumps(self._info, ensure_ascii=False).encode()} if self._info else None
        return pa.schema(
            [
                pa.field("id", pa.string(), nullable=False),
                pa.field("doc_id", pa.string(), nullable=False),
                pa.field("idx", pa.int64()),
                pa.field("start", pa.int64()),
                pa.field("end", pa.int64()),
                pa.field("text", pa.string()),
                pa.field("embed_text", pa.string()),
                pa.field("headings", pa.list_(pa.string())),
                pa.field("title", pa.string()),
                pa.field("source", pa.string()),
                pa.field("format", pa.string()),
                pa.field("metadata", pa.string()),  # JSON object
                pa.field("vector", pa.list_(pa.float32(), dimension)),
            ],
            metadata=metadata,
        )

    def _opened(self) -> Any:
        """The table, opened if it exists by now (another object may have created it), else ``None``."""
        if self._table is None and self._db is not None and self.table_name in self._db.list_tables().tables:
            self._table = self._db.open_table(self.table_name)
            self.dimension = self._table.schema.field("vector").type.list_size
        return self._table

    def _create(self, data: Any) -> None:
        """Create the table, with its first rows when given (one commit either way)."""
        assert self.dimension is not None
        self._check_writable()
        try:
            self._table = self._db.create_table(
                self.table_name, data=data, schema=self._schema(self.dimension)
            )
        except ValueError:
            # Another store object (or process) created it meanwhile: use theirs, keep its info.
            if self.table_name not in self._db.list_tables().tables:
                raise
            self._table = self._db.open_table(self.table_name)
            stored = self._table.schema.field("vector").type.list_size
            if stored != self.dimension:
                raise ValueError(
                    f"table {self.table_name!r} stores dimension {stored}, not {self.dimension}"
                ) from None
            if data is not None:
                self._table.add(data)

    def _arrow(self, chunks: Sequence[StoredChunk], vectors: np.ndarray) -> Any:
        pa = self._pa
        assert self.dimension is not None
        flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
        columns = {
            "id": [c.id for c in chunks],
            "doc_id": [to_stored(c.doc_id) for c in chunks],
            "idx": [c.index for c in chunks],
            "start": [c.start for c in chunks],
            "end": [c.end for c in chunks],
            "text": [c.text for c in chunks],
            "embed_text": [c.embed_text for c in chunks],
            "headings": [[to_stored(h) for h in c.headings] for c in chunks],
            "title": [to_stored(c.title) for c in chunks],
            "source": [to_stored(c.source) for c in chunks],
            "format": [c.format for c in chunks],
            "metadata": [json_text(dict(c.metadata)) for c in chunks],
        }
        # Rows for an existing table carry its own schema, so they never touch its stored info.
        schema = self._schema(self.dimension) if self._table is None else self._table.schema
        arrays = [pa.array(columns[name], type=schema.field(name).type) for name in _ROW_COLUMNS]
        arrays.append(pa.FixedSizeListArray.from_arrays(flat, self.dimension))
        return pa.Table.from_arrays(arrays, schema=schema)

    # -- VectorStore ------------------------------------------------------------------------------------

    def add(self, chunks: Sequence[StoredChunk], vectors: np.ndarray) -> None:
        vectors = check_rows(chunks, vectors)
        self._check_writable()
        if not chunks:
            return
        if vectors.ndim != 2:
            raise ValueError(f"vectors must be a matrix (n, dim), got shape {vectors.shape}")
        table = self._opened()
        if self.dimension is None:
            self.dimension = int(vectors.shape[1])
        elif vectors.shape[1] != self.dimension:
            raise ValueError(
                f"vectors have dimension {vectors.shape[1]} but table {self.table_name!r} stores {self.dimension}"
            )
        data = self._arrow(chunks, vectors)
        if table is None:
            self._create(data)  # the table and its first rows in one commit
        else:
            table.add(data)

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        self._check_writable()
        if self._opened() is None:
            return
        ids = sorted(set(doc_ids))
        for i in range(0, len(ids), DELETE_BATCH):
            batch = ids[i : i + DELETE_BATCH]
            self._table.delete(f"doc_id IN ({', '.join(sql_string(to_stored(d)) for d in batch)})")

    def doc_counts(self) -> dict[str, int]:
        """Rows per document, from the ``doc_id`` column alone."""
        counts: Counter[str] = Counter()
        if self._opened() is not None:
            for batch in self._scan(["doc_id"], None):
                counts.update(from_stored(d) for d in batch.column(0).to_pylist())
        return dict(counts)

    def doc_ids(self) -> set[str]:
        return set(self.doc_counts())

    def count(self) -> int:
        return 0 if self._opened() is None else int(self._table.count_rows())

    def version(self) -> int:
        """The table's version (every commit makes a new one; 0 before the table exists)."""
        return 0 if self._opened() is None else int(self._table.version)

    def data_files(self) -> str:
        """A fingerprint of the table's data files on a local disk (their names; "" elsewhere): the state
        the index records after each commit (`kireme.index.store.store_state`). Data files removed behind
        the index's back leave the version and the row count as they were, and a run said "unchanged"
        over a store no search could read; a changed fingerprint makes the next run check the rows."""
        folder = os.path.join(self.path, f"{self.table_name}.lance", "data")
        if "://" in self.path or not os.path.isdir(folder):
            return ""
        names = sorted(os.listdir(folder))
        return hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]

    def search(
        self, vector: np.ndarray, k: int, where: Mapping[str, str] | None = None, *, exact: bool = False
    ) -> list[Hit]:
        """The ``k`` nearest rows; through the vector index when there is one, unless ``exact``."""
        predicate = where_sql(where)
        if self._opened() is None or k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if not np.any(query):
            # Lance drops rows whose cosine distance is NaN (a zero query): every row scores 0.
            return [Hit(chunk, 0.0) for _, chunk in zip(range(k), self.chunks(where), strict=False)]
        partitions = None if exact else self._indexed_partitions()
        hits = self._nearest(query, k, predicate, partitions)
        if partitions is not None and predicate and len(hits) < k:
            # a filter can leave fewer than k matches in the partitions read: the exact scan finds them all
            hits = self._nearest(query, k, predicate, None)
        return hits

    def _nearest(self, query: np.ndarray, k: int, predicate: str | None, partitions: int | None) -> list[Hit]:
        builder = self._table.search(query, vector_column_name="vector").distance_type("cosine")
        if partitions is None:
            builder = builder.bypass_vector_index()
        else:
            builder = builder.nprobes(ann_probes(partitions)).refine_factor(ANN_REFINE_FACTOR)
        if predicate:
            builder = builder.where(predicate, prefilter=True)
        table = builder.select([*_ROW_COLUMNS, "_distance"]).limit(k).to_arrow()
        distances = table.column("_distance").to_pylist()
        return [Hit(chunk, 1.0 - float(d)) for chunk, d in zip(_rows(table), distances, strict=True)]

    def _indexed_partitions(self) -> int | None:
        """The partition count of kireme's vector index (``None``: none, search exactly)."""
        for index in self._vector_indexes():
            match = VECTOR_INDEX.fullmatch(str(getattr(index, "name", "")))
            if match:
                return int(match.group(1))
        return None

    def _vector_indexes(self) -> list[Any]:
        return [
            ix for ix in self._table.list_indices() if list(getattr(ix, "columns", ()) or ()) == ["vector"]
        ]

    def chunks(self, where: Mapping[str, str] | None = None) -> Iterator[StoredChunk]:
        predicate = where_sql(where)
        if self._opened() is None:
            return iter(())
        return (chunk for batch in self._scan(_ROW_COLUMNS, predicate) for chunk in _rows(batch))

    def get(self, ids: Sequence[str]) -> list[StoredChunk]:
        if self._opened() is None or not ids:
            return []
        found: dict[str, StoredChunk] = {}
        unique = sorted(set(ids))
        for i in range(0, len(unique), DELETE_BATCH):
            predicate = f"id IN ({', '.join(sql_string(x) for x in unique[i : i + DELETE_BATCH])})"
            for batch in self._scan(_ROW_COLUMNS, predicate):
                found.update((c.id, c) for c in _rows(batch))
        return [found[i] for i in ids if i in found]

    def close(self) -> None:
        """Nothing to release (LanceDB keeps no open handles between calls); the store stays usable."""

    # -- extras ---------------------------------------------------------------------------------------

    def stored_info(self) -> dict[str, Any] | None:
        """The info written when the table was created (``None`` if none); before then, the pending one."""
        if self._opened() is None:
            return dict(self._info) if self._info else None
        raw = (self._table.schema.metadata or {}).get(INFO_KEY)
        return json.loads(raw) if raw else None

    def optimize(self, cleanup_older_than: timedelta | None = None, *, ann: AnnMode = "auto") -> None:
        """Index ``id`` and ``doc_id`` (BTree), compact small files, drop old versions (LanceDB keeps 7
        days of them), bring the vector index up to date, and build it (or train it again) when due.

        ``ann``: ``"auto"`` builds the vector index from `ANN_MIN_ROWS` rows on, ``"always"`` builds it
        now (from `ANN_MIN_TRAIN_ROWS` rows), ``"never"`` builds none and drops one that exists (every
        search is exact again). Never raises: a failure here costs speed or disk space, not rows, so it is
        logged as a warning.
        """
        if ann not in ANN_MODES:
            raise ValueError(f"ann must be one of {', '.join(ANN_MODES)}, not {ann!r}")
        if self._opened() is None or not self.writable:
            return
        try:
            from lancedb.index import BTree

            indexed = {tuple(getattr(ix, "columns", ()) or ()) for ix in self._table.list_indices()}
            # the column comes first: rows fetched by chunk id (keyword search) and deleted by document
            for column in ("id", "doc_id"):
                if (column,) not in indexed:
                    self._table.create_index(column, config=BTree())
            # compaction, and the rows added since the last run put into the existing indexes
            self._table.optimize(cleanup_older_than=cleanup_older_than)
            self._update_vector_index(ann)
        except Exception as exc:
            log.warning("LanceDB optimize of %s failed: %s", self.path, exc)

    def _update_vector_index(self, ann: AnnMode) -> None:
        current = self.vector_index()
        rows = self.count()
        if ann == "never":
            if current is not None:
                log.info("dropping the vector index of %s: every search scans all rows", self.path)
            self._drop_vector_indexes()
            return
        # up to date (optimize indexed the new rows with the trained partitions); one made outside kireme
        # is trained again, as searches do not read it
        if current is not None and current.ours and rows < current.trained_rows * ANN_RETRAIN_GROWTH:
            return
        if current is None and ann == "auto" and rows < ANN_MIN_ROWS:
            return
        if rows < ANN_MIN_TRAIN_ROWS:
            log.info("%s: %d row(s) are too few for a vector index; searches stay exact", self.path, rows)
            return
        from lancedb.index import IvfSq

        partitions = ann_partitions(rows)
        log.info(
            "%s vector index of %s: %d rows, %d partitions (about half a minute per million rows)",
            "re-training the" if current is not None else "building a",
            self.path,
            rows,
            partitions,
        )
        # the old one goes first (two indexes on a column would leave which one a search reads to LanceDB);
        # meanwhile, and if this run is killed before the new one is committed, searches are exact
        self._drop_vector_indexes()
        self._table.create_index(
            "vector",  # the column first, as with the BTree indexes
            config=IvfSq(distance_type="cosine", num_partitions=partitions),
            name=f"vector_ivfsq_p{partitions}_n{rows}",
        )

    def _drop_vector_indexes(self) -> None:
        for index in self._vector_indexes():
            self._table.drop_index(index.name)

    def vector_index(self) -> VectorIndex | None:
        """The vector index, or ``None`` when there is none (searches scan every row)."""
        if self._opened() is None:
            return None
        indexes = self._vector_indexes()
        if not indexes:
            return None
        name = str(indexes[0].name)
        match = VECTOR_INDEX.fullmatch(name)
        stats = self._table.index_stats(name)
        return VectorIndex(
            kind=str(stats.index_type),
            ours=match is not None,
            partitions=int(match.group(1)) if match else 1,
            trained_rows=int(match.group(2)) if match else int(stats.num_indexed_rows),
            indexed_rows=int(stats.num_indexed_rows),
            unindexed_rows=int(stats.num_unindexed_rows),
        )

    def drop(self) -> None:
        """Delete the table and its files (a store replaced by a re-embed; on object storage, where
        there is no folder to remove)."""
        self._check_writable()
        self._db.drop_table(self.table_name, ignore_missing=True)
        self._table = None

    def _check_writable(self) -> None:
        if not self.writable:
            raise PermissionError(f"{self.path}: this store was opened for reading only")

    def _scan(self, columns: list[str], predicate: str | None) -> Iterator[Any]:
        builder = self._table.search().select(columns)
        if predicate:
            builder = builder.where(predicate)
        yield from builder.limit(None).to_batches()


def _rows(table: Any) -> Iterator[StoredChunk]:
    """`StoredChunk` objects from an Arrow table or record batch with the row columns."""
    data = table.select(_ROW_COLUMNS).to_pydict()
    for i in range(table.num_rows):
        yield StoredChunk(
            id=data["id"][i],
            doc_id=from_stored(data["doc_id"][i]),
            index=data["idx"][i],
            start=data["start"][i],
            end=data["end"][i],
            text=data["text"][i],
            embed_text=data["embed_text"][i],
            headings=tuple(from_stored(h) for h in data["headings"][i] or ()),
            title=from_stored(data["title"][i] or ""),
            source=from_stored(data["source"][i] or ""),
            format=data["format"][i],
            metadata=json.loads(data["metadata"][i] or "{}"),
        )
