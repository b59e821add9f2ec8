"""kireme on Ray (the ``ray`` extra): the same pipeline on a cluster, and kireme inside your Ray pipelines.

- `chunk_dataset` / `embed_dataset`: take and return a ``ray.data.Dataset`` (`kireme.ray.datasets`).
- `RayEngine`: ``kireme index --engine ray`` from Python, the ``prepare`` of
  `kireme.index.ingest.ingest_paths` (`kireme.ray.ingest`).
- `chunk_to_shards`: ``kireme chunk --engine ray --output DIR`` (`kireme.ray.shards`).
- `connect`: join a cluster (``auto``, ``ray://HOST:PORT``, ``RAY_ADDRESS``) or start a local Ray.

Importing this package does not import Ray; using a name without the extra raises a `MissingExtraError`
that says ``pip install 'kireme[ray]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kireme.lazy import lazy_exports

if TYPE_CHECKING:
    from kireme.ray.datasets import CHUNK_FIELDS, chunk_dataset, chunk_schema, embed_dataset
    from kireme.ray.ingest import RayEngine
    from kireme.ray.session import connect
    from kireme.ray.shards import chunk_to_shards

__all__ = [
    "CHUNK_FIELDS",
    "RayEngine",
    "chunk_dataset",
    "chunk_schema",
    "chunk_to_shards",
    "connect",
    "embed_dataset",
]

_EXPORTS = {
    "CHUNK_FIELDS": "kireme.ray.datasets",
    "chunk_dataset": "kireme.ray.datasets",
    "chunk_schema": "kireme.ray.datasets",
    "embed_dataset": "kireme.ray.datasets",
    "RayEngine": "kireme.ray.ingest",
    "chunk_to_shards": "kireme.ray.shards",
    "connect": "kireme.ray.session",
}

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
