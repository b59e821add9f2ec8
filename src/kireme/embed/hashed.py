"""A model-free embedder: character n-grams hashed into a fixed number of dimensions.

It knows nothing about meaning, only about shared character pairs and triples, which for Japanese is
already a useful lexical signal (no word segmentation needed). It is instant and deterministic: for
tests, demos and machines where even the bundled model is too slow. ``kind`` is ignored (symmetric).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from kireme.embed.base import Kind, normalize_rows
from kireme.errors import ConfigError


class HashedNgramEmbedder:
    """Counts of character 2- and 3-grams (letters and digits only, case-folded), hashed to ``dim``."""

    def __init__(self, dim: int = 512) -> None:
        if dim < 8:
            raise ConfigError("dim must be at least 8")
        self.dim = dim
        self.name = f"hash/char-ngrams-{dim}"

    def _vector(self, text: str) -> np.ndarray:
        letters = "".join(ch for ch in text.casefold() if ch.isalnum())
        out = np.zeros(self.dim, dtype=np.float32)
        for n in (2, 3):
            for i in range(len(letters) - n + 1):
                digest = hashlib.blake2b(letters[i : i + n].encode("utf-8"), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[value % self.dim] += 1.0 if (value >> 63) & 1 else -1.0
        if len(letters) == 1:
            out[int.from_bytes(letters.encode("utf-8")[:4].ljust(4, b"\0"), "little") % self.dim] = 1.0
        return out

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalize_rows(np.stack([self._vector(t) for t in texts]))
