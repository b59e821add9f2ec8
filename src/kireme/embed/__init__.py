"""Embedders and similarity backends behind one small protocol, with a content-hash cache."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kireme.embed' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
