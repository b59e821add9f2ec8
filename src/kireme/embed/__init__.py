"""Embedders and similarity backends behind one small protocol, with a content-hash cache."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kireme.lazy import lazy_exports

if TYPE_CHECKING:
    from kireme.embed.base import Embedder
    from kireme.embed.cache import CachedEmbedder, EmbeddingCache
    from kireme.embed.fake import KeywordEmbedder

__all__ = [
    "CachedEmbedder",
    "Embedder",
    "EmbeddingCache",
    "KeywordEmbedder",
]

# Imported on first use: the cache (sqlite3) is not needed to name an embedder or to chunk.
_EXPORTS = {
    "Embedder": "kireme.embed.base",
    "CachedEmbedder": "kireme.embed.cache",
    "EmbeddingCache": "kireme.embed.cache",
    "KeywordEmbedder": "kireme.embed.fake",
}


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
