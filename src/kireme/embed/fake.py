"""Deterministic in-memory embedders for tests and examples (no model, no randomness)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kireme.embed.base import Kind


@dataclass
class KeywordEmbedder:
    """One dimension per topic: a text's vector counts the topic's keywords it contains.

    ``KeywordEmbedder({"food": ["ラーメン", "味噌"], "rail": ["電車", "駅"]})`` makes sentences about the
    same topic similar and different topics orthogonal, which is exactly what a test needs. Texts with
    no keyword get a small hashed component so that they are not all identical. ``calls`` counts the
    texts embedded, to prove caching works.
    """

    topics: Mapping[str, Sequence[str]]
    name: str = "fake/keywords"
    calls: int = 0
    batches: list[int] = field(default_factory=list)

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> np.ndarray:
        self.calls += len(texts)
        self.batches.append(len(texts))
        dims = len(self.topics) + 8
        out = np.zeros((len(texts), dims), dtype=np.float32)
        for i, text in enumerate(texts):
            for j, words in enumerate(self.topics.values()):
                out[i, j] = sum(text.count(w) for w in words)
            digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
            out[i, len(self.topics) :] = np.frombuffer(digest[:8], dtype=np.uint8) / 2550.0
        return out


@dataclass
class BrokenEmbedder:
    """Returns the wrong number of vectors, or zeros — to test that errors are clear."""

    mode: str = "short"
    name: str = "fake/broken"

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> np.ndarray:
        if self.mode == "short":
            return np.ones((max(0, len(texts) - 1), 4), dtype=np.float32)
        return np.zeros((len(texts), 4), dtype=np.float32)
