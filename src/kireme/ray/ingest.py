"""``kireme index --engine ray``: files loaded and chunked by Ray tasks, chunks embedded by an actor pool.

The driver (the process that runs ``kireme index``) keeps what must happen once and in order: it lists the
files, asks the manifest which changed (unchanged files are never scheduled), and receives each file's
outcome in input order to write rows and then manifest entries through the same `Ingestor` as the local
path. So the crash-safety rule holds unchanged (an entry is written only after its rows are committed),
and the index, the summary and the messages are those of a local run. Ray retries a task whose worker
died and restarts a dead actor; a killed driver leaves what a killed local run leaves, which the next run
completes.

Embedding runs on the cluster unless the vectors can only be made on the driver: with a contextualizer
(the contexts are asked for in order, within one budget) or late chunking (one pass over each document).
"""

from __future__ import annotations

import logging
import os
import pickle
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

from kireme.embed.base import Embedder
from kireme.embed.specs import EmbedderSpec, parse_spec, spec_for_name
from kireme.errors import ConfigError
from kireme.index.ingest import Ingestor, Prepare
from kireme.ray.session import actor_pool, cluster_cpus, cluster_resources, connect, in_input_order
from kireme.ray.tasks import EmbedDocuments, chunk_groups, make_groups, map_groups, outcome_of
from kireme.stream import Chunked, ReadOptions, Task

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RayEngine:
    """How to run ingestion on Ray.

    ``address``: the cluster (``auto``, ``ray://HOST:PORT``; ``None``: ``RAY_ADDRESS``, else a local Ray).
    ``embedder``: what the actors embed with (``None``: the spec the ingestor's embedder was made from;
    an ``http`` endpoint given by ``base_url`` must be reachable from the workers). ``actors``: embedding
    actors (``None``: as many as the cluster has CPUs, or GPUs with ``num_gpus``). ``num_gpus``: GPUs each
    embedding actor takes (``0``: CPU). ``documents_per_batch``: files an actor embeds at once.
    """

    address: str | None = None
    embedder: EmbedderSpec | Embedder | None = None
    actors: int | None = None
    num_gpus: float = 0
    documents_per_batch: int = 16

    def prepare(self) -> Prepare:
        """The ``prepare`` argument of `kireme.index.ingest.ingest_paths`.

        With ``num_gpus``, connects now and raises a `ConfigError` when the cluster has fewer GPUs than
        one actor asks for (Ray would wait for them forever)."""
        if self.num_gpus:
            connect(self.address)
            have = float(cluster_resources().get("GPU", 0))
            if have < self.num_gpus:
                raise ConfigError(
                    f"each embedding actor asks for {self.num_gpus:g} GPU(s) but the Ray cluster has {have:g}; "
                    "drop --ray-gpus to embed on CPUs, or add a node with GPUs"
                )
        return self._run

    def _run(
        self, ingestor: Ingestor, files: list[Path], read: ReadOptions
    ) -> Generator[Chunked, None, None]:
        if not files:
            return
        where = connect(self.address)
        log.info("indexing %d file(s) on %s", len(files), where)
        cpus = cluster_cpus()
        tasks = [
            (i, Task(path, chunk=True, known_sha256=ingestor.indexed_content(path.as_posix()), stat=True))
            for i, path in enumerate(files)
        ]
        groups = [{"tasks": pickle.dumps(group)} for group in make_groups(tasks, at_least=cpus)]
        level = logging.getLogger("kireme").getEffectiveLevel()
        chunker = ingestor.chunker
        with in_input_order():  # rows come back in input order
            # a chunker that embeds gets a model per actor, not per task
            pool = (self.actors or cpus) if chunker.embeds else None
            ds = map_groups(groups, chunk_groups, (chunker, read, level), pool)
            if ingestor.contextualizer is None and ingestor.late is None:
                ds = self._embedded(ds, ingestor, cpus)
            for row in ds.iter_rows():
                yield outcome_of(row)

    def _embedded(self, ds: object, ingestor: Ingestor, cpus: int) -> object:
        embedder = self.embedder or _spec_of(ingestor.embedder)
        gpus = int(cluster_resources().get("GPU", 0)) if self.num_gpus else 0
        actors = self.actors or (max(1, int(gpus / self.num_gpus)) if self.num_gpus else cpus)
        cache = ingestor.db / "cache"
        options: dict[str, object] = {"num_gpus": self.num_gpus} if self.num_gpus else {}
        return ds.map_batches(  # type: ignore[attr-defined]
            EmbedDocuments,
            batch_size=self.documents_per_batch,
            batch_format="numpy",
            fn_constructor_args=(embedder, os.fspath(cache), getattr(ingestor.embedder, "batch_size", 32)),
            compute=actor_pool(actors),
            **options,
        )


def _spec_of(embedder: Embedder) -> EmbedderSpec:
    """The spec that makes ``embedder`` again on a worker (an index records its embedder's name)."""
    inner = getattr(embedder, "inner", embedder)
    base_url = getattr(inner, "base_url", None)
    return parse_spec(
        spec_for_name(inner.name), "index", base_url=base_url if isinstance(base_url, str) else None
    )
