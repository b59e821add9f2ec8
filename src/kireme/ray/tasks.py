"""What runs on the Ray cluster: files loaded and chunked in tasks, their chunks embedded in actors.

Between the steps a row is one file: ``position`` (its place among the files of the run), ``outcome`` (its
`kireme.stream.Chunked`, pickled) and ``logs`` (the log records the work emitted, pickled, replayed by the
driver in order). Pickle rather than Arrow columns: the driver's `Ingestor` takes the `Document` and its
`Chunk` objects, and pickle keeps every field exact (metadata of any shape, errors with their class).
A group row (``tasks``: pickled ``(position, Task)`` pairs) is what one task loads and chunks.
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from kireme.chunkers import Chunker
from kireme.embed.base import Embedder
from kireme.embed.cache import CachedEmbedder, EmbeddingCache
from kireme.embed.specs import EmbedderSpec, make_embedder
from kireme.errors import KiremeError
from kireme.parallel import make_batches, picklable, replay
from kireme.ray.session import actor_pool, require_ray
from kireme.stream import Chunked, ReadOptions, Task, run_task, task_weight

GROUP_BYTES = 256 << 10
"""A group of files (one Ray task) closes once its files weigh this much: a Ray task costs a few
milliseconds of scheduling, more than a small file takes to chunk."""

GROUP_FILES = 64
"""The most files in one group."""

Rows = dict[str, list[Any]]


def make_groups(
    tasks: Sequence[tuple[int, Task]],
    *,
    weight: int = GROUP_BYTES,
    files: int = GROUP_FILES,
    at_least: int = 1,
) -> list[list[tuple[int, Task]]]:
    """``tasks`` cut into consecutive groups of about ``weight`` bytes and at most ``files`` files, into at
    least ``at_least`` groups when there are that many files (every worker gets some)."""
    total = sum(task_weight(task) for _, task in tasks)
    weight = max(1, min(weight, total // max(1, at_least)))
    return list(make_batches(tasks, lambda item: task_weight(item[1]), weight, files))


@contextmanager
def captured_logs(level: int) -> Iterator[list[logging.LogRecord]]:
    """The records kireme's loggers emit meanwhile, made picklable (a Ray worker has no console of ours)."""
    records: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(picklable(record))

    logger = logging.getLogger("kireme")
    handler, old_level, old_propagate = Collect(level), logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    try:
        yield records
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        logger.propagate = old_propagate


def chunk_groups(batch: dict[str, Any], chunker: Chunker, read: ReadOptions, level: int) -> Rows:
    """Ray Data batch function: each group's files loaded and chunked, one row per file."""
    rows: Rows = {"position": [], "outcome": [], "logs": []}
    for blob in batch["tasks"]:
        for position, task in pickle.loads(blob):
            with captured_logs(level) as records:
                outcome = run_task(task, chunker, read)
            rows["position"].append(position)
            rows["outcome"].append(pickle.dumps(outcome))
            rows["logs"].append(pickle.dumps(records))
    return rows


class _InActor:
    """A group function in an actor: what it is given (a chunker that embeds: semantic chunking) is
    unpickled, and its model loaded, once per actor instead of once per group."""

    def __init__(self, function: Callable[..., Rows], *arguments: Any) -> None:
        self.function, self.arguments = function, arguments

    def __call__(self, batch: dict[str, Any]) -> Rows:
        return self.function(batch, *self.arguments)


def map_groups(
    groups: list[dict[str, Any]],
    function: Callable[..., Rows],
    arguments: tuple[Any, ...],
    actors: int | None,
) -> Any:
    """A dataset of ``groups`` (one row each, one block each), ``function(batch, *arguments)`` applied to
    every group: in Ray tasks, or in a pool of up to ``actors`` actors when given."""
    ray = require_ray()
    ds = ray.data.from_items(groups, override_num_blocks=len(groups))
    if actors is None:
        return ds.map_batches(function, batch_size=1, batch_format="numpy", fn_args=arguments)
    return ds.map_batches(
        _InActor,
        batch_size=1,
        batch_format="numpy",
        fn_constructor_args=(function, *arguments),
        compute=actor_pool(actors),
    )


def cached_embedder(
    embedder: EmbedderSpec | Embedder, cache_dir: str | None, batch_size: int = 32
) -> CachedEmbedder:
    """The embedder an actor uses: the index's content cache when this machine can see its folder (a local
    Ray, a shared file system), else a memory-only cache (a remote node never creates the folder)."""
    inner = make_embedder(embedder, "index") if isinstance(embedder, EmbedderSpec) else embedder
    visible = cache_dir is not None and Path(cache_dir).is_dir()
    return CachedEmbedder(inner, EmbeddingCache(cache_dir if visible else False), batch_size=batch_size)


class EmbedDocuments:
    """Ray Data callable class (an actor pool): each file's chunks embedded, the model loaded once per actor.

    Adds ``vectors`` (the pickled float32 matrix, one row per chunk; empty when the file has no chunks) and
    ``embedded`` (texts embedded, not found in the cache: the batch's count on its first file with chunks), and ``embed_error`` (a pickled `KiremeError` from the embedder, raised by the driver in its turn,
    as the local path raises it).
    """

    def __init__(
        self, embedder: EmbedderSpec | Embedder, cache_dir: str | None, batch_size: int = 32
    ) -> None:
        self.embedder = cached_embedder(embedder, cache_dir, batch_size)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        outcomes: list[Chunked] = [pickle.loads(blob) for blob in batch["outcome"]]
        texts = [[c.embed_text for c in o.chunks] if o.chunks is not None else [] for o in outcomes]
        flat = [t for doc in texts for t in doc]
        before = self.embedder.stats.embedded
        error: bytes = b""
        try:
            vectors = self.embedder.embed(flat, "passage") if flat else np.zeros((0, 0), np.float32)
        except KiremeError as exc:
            error, vectors = pickle.dumps(exc), np.zeros((0, 0), np.float32)
        out = dict(batch)
        blobs, counts, at = [], [0] * len(outcomes), 0
        for doc in texts:
            part = vectors[at : at + len(doc)] if not error and doc else None
            blobs.append(pickle.dumps(part))
            at += len(doc)
        if flat and not error:  # the batch's count goes on its first file with chunks: the sum is right
            counts[next(i for i, doc in enumerate(texts) if doc)] = self.embedder.stats.embedded - before
        out["vectors"] = blobs
        out["embedded"] = counts
        out["embed_error"] = [error] * len(outcomes)
        return out


def outcome_of(row: dict[str, Any]) -> Chunked:
    """A file's `Chunked` from its row, with the vectors an actor made (raises the embedder's error)."""
    replay(pickle.loads(row["logs"]))
    error = row.get("embed_error")
    if error:
        raise pickle.loads(error)
    outcome: Chunked = pickle.loads(row["outcome"])
    if row.get("vectors") is not None:
        vectors = pickle.loads(row["vectors"])
        if vectors is not None:
            outcome = replace(outcome, vectors=vectors, embedded=int(row["embedded"]))
    return outcome
