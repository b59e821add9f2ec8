"""``kireme chunk --engine ray --output DIR``: files chunked by Ray tasks into numbered shards.

Each task loads and chunks one group of consecutive files and writes their chunks to one shard,
``part-NNNNNN.jsonl`` (the rows of ``kireme chunk``) or ``part-NNNNNN.parquet`` (the same fields,
`kireme.shards.chunk_schema`), numbered in input order: the shards read in name order are the rows
a local ``kireme chunk`` prints. A shard appears whole or not at all (written beside, then renamed), so a
task that Ray retries after its worker died writes the same shard again. Workers write into ``DIR``
directly: on a cluster it must be a folder every node sees (a shared file system). The driver receives a
few numbers per file (and its error, and its log records) to report in order.
"""

from __future__ import annotations

import logging
import os
import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kireme.chunkers import Chunker
from kireme.document import Chunk
from kireme.errors import KiremeError
from kireme.parallel import replay
from kireme.ray.session import cluster_cpus, connect, in_input_order
from kireme.ray.tasks import Rows, captured_logs, make_groups, map_groups
from kireme.shards import SHARD_PATTERN, ShardFormat, clear_shards, shard_name, write_shard
from kireme.stream import ReadOptions, Task, run_task

__all__ = [
    "SHARD_PATTERN",
    "FileReport",
    "ShardFormat",
    "chunk_to_shards",
    "shard_groups",
    "shard_name",
    "write_shard",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FileReport:
    """One file's outcome as the driver sees it: chunks written, their total and largest size, or why it
    failed (``loaded``: whether the file was read; a chunking error is reported with the file's id)."""

    source: str
    chunks: int = 0
    total: int = 0
    largest: int = 0
    error: KiremeError | None = None
    loaded: bool = True


def shard_groups(
    batch: dict[str, Any], chunker: Chunker, read: ReadOptions, level: int, out: str, fmt: ShardFormat
) -> Rows:
    """Ray Data batch function: each group's files chunked into its shard; one small row per file."""
    rows: Rows = {"report": [], "logs": []}
    for group, blob in zip(batch["group"], batch["tasks"], strict=True):
        chunks: list[Chunk] = []
        for _position, task in pickle.loads(blob):
            with captured_logs(level) as records:
                outcome = run_task(task, chunker, read)
            made = outcome.chunks if outcome.error is None else None
            report = FileReport(
                outcome.source,
                len(made or ()),
                sum(c.size for c in made or ()),
                max((c.size for c in made or ()), default=0),
                outcome.error,
                outcome.document is not None,
            )
            chunks.extend(made or ())
            rows["report"].append(pickle.dumps(report))
            rows["logs"].append(pickle.dumps(records))
        write_shard(chunks, Path(out) / shard_name(int(group), fmt), fmt)
    return rows


def chunk_to_shards(
    files: list[Path],
    chunker: Chunker,
    out: Path,
    *,
    fmt: ShardFormat = "jsonl",
    read: ReadOptions | None = None,
    address: str | None = None,
    actors: int | None = None,
) -> Iterator[FileReport]:
    """Chunk ``files`` on Ray into shards in ``out`` (see the module docstring); each file's report, in
    input order, as the tasks finish. Shards an earlier run left in ``out`` are removed first."""
    connect(address)
    clear_shards(out)
    cpus = cluster_cpus()
    groups = make_groups([(i, Task(path)) for i, path in enumerate(files)], at_least=cpus)
    items = [{"group": i, "tasks": pickle.dumps(group)} for i, group in enumerate(groups)]
    if not items:
        return
    level = logging.getLogger("kireme").getEffectiveLevel()
    arguments = (chunker, read or ReadOptions(), level, os.fspath(out.resolve()), fmt)
    with in_input_order():
        pool = (actors or cpus) if chunker.embeds else None  # a chunker that embeds: a model per actor
        for row in map_groups(items, shard_groups, arguments, pool).iter_rows():
            replay(pickle.loads(row["logs"]))
            yield pickle.loads(row["report"])
