"""Embedders and similarity backends behind one small protocol, with a content-hash cache."""

from kireme.embed.base import Embedder
from kireme.embed.cache import CachedEmbedder, EmbeddingCache
from kireme.embed.fake import KeywordEmbedder

__all__ = [
    "CachedEmbedder",
    "Embedder",
    "EmbeddingCache",
    "KeywordEmbedder",
]
