"""Model-free similarity: overlap of adjacent-character pairs (bigrams).

``sim(A, B) = |A ∩ B| / max(|A|, |B|)`` over the sets of adjacent character pairs of two texts. Topics in
Japanese share few kanji/kana pairs, so this separates them surprisingly well, at tens of thousands of
sentences per second and with no model at all.

``normalize`` chooses what counts as a character:

* ``"letters"`` (default): NFKC, lower case, letters and digits only — whitespace and punctuation are
  dropped, so ``。`` or ``、`` pairs do not make unrelated sentences look alike;
* ``"nospace"``: NFKC and lower case, whitespace dropped, punctuation kept;
* ``"raw"``: the text as it is.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import regex

NORMALIZATIONS = ("letters", "nospace", "raw")
_NOT_LETTER = regex.compile(r"[^\p{L}\p{N}]+")
_SPACE = regex.compile(r"\s+")


def _normalize(text: str, mode: str) -> str:
    if mode == "raw":
        return text
    text = unicodedata.normalize("NFKC", text).lower()
    if mode == "letters":
        return str(_NOT_LETTER.sub("", text))
    return str(_SPACE.sub("", text))


def bigrams(text: str, normalize: str = "letters") -> frozenset[str]:
    """The set of adjacent-character pairs of ``text`` after normalisation (one char: itself)."""
    t = _normalize(text, normalize)
    if len(t) < 2:
        return frozenset([t]) if t else frozenset()
    return frozenset(t[i : i + 2] for i in range(len(t) - 1))


def bigram_similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """``|a ∩ b| / max(|a|, |b|)``; 0 when either side is empty."""
    if not a or not b:
        return 0.0
    return len(a & b) / max(len(a), len(b))


class BigramSimilarity:
    """Similarity between texts by bigram overlap (see module docstring)."""

    def __init__(self, normalize: str = "letters") -> None:
        if normalize not in NORMALIZATIONS:
            from kireme.errors import ConfigError

            raise ConfigError(f"unknown bigram normalisation {normalize!r}: use {', '.join(NORMALIZATIONS)}")
        self.normalize = normalize
        self.name = f"bigram/{normalize}"

    def pairwise(self, left: Sequence[str], right: Sequence[str]) -> list[float]:
        """Similarity of ``left[i]`` and ``right[i]`` for every i."""
        return [
            bigram_similarity(bigrams(x, self.normalize), bigrams(y, self.normalize))
            for x, y in zip(left, right, strict=True)
        ]
