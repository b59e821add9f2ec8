"""The `Embedder` protocol every similarity backend implements (its errors are in `kireme.errors`).

An embedder turns texts into L2-normalised float32 vectors. ``kind`` says which side of an asymmetric
model to use (e5's ``query:`` / ``passage:`` prefixes); symmetric models ignore it. ``name`` identifies
the model *and* its settings: it is part of every cache key, so two different models never share
vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from kireme.errors import EmbeddingError

Kind = Literal["query", "passage"]


@runtime_checkable
class Embedder(Protocol):
    """Texts in, one normalised vector per text out (shape ``(len(texts), dim)``, float32)."""

    @property
    def name(self) -> str: ...

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> np.ndarray: ...


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """L2-normalise each row; an all-zero row stays zero (its similarity to anything is 0)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    normalized: np.ndarray = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return normalized


def check_vectors(name: str, texts: Sequence[str], vectors: object) -> np.ndarray:
    """Validate what an embedder returned; raise `EmbeddingError` with a clear reason otherwise."""
    try:
        array = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"embedder {name!r} returned something that is not a matrix: {exc}") from None
    if array.ndim != 2:
        raise EmbeddingError(f"embedder {name!r} returned an array of shape {array.shape}, expected (n, dim)")
    if array.shape[0] != len(texts):
        raise EmbeddingError(f"embedder {name!r} returned {array.shape[0]} vectors for {len(texts)} texts")
    if not np.all(np.isfinite(array)):
        raise EmbeddingError(f"embedder {name!r} returned NaN or infinite values")
    return normalize_rows(array)
