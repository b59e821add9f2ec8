"""Fusing a lexical and a dense ranking into one: the rule of hybrid search, in one place.

`kireme search --mode hybrid` (`kireme.index.search.Searcher`) and the ``hybrid`` evaluation retriever
(`kireme.evaluate.retrievers.FusionRetriever`) both call `fuse_scores`, so an evaluation measures what
the index answers. Each side hands over its best candidates, best first, with their scores (BM25 for the
lexical side, cosine for the dense one); a `Fusion` turns them into one score per candidate:

* ``rrf`` — reciprocal rank fusion: ``weight / (k + rank)`` per list (rank from 1); scores are ignored.
  ``Fusion("rrf", (1, 1), k=60)`` is the equal-weight fusion of kireme 0.2 and earlier (`RRF`).
* ``minmax`` — each list's scores scaled to [0, 1] over its own candidates (best 1, last 0), then
  ``weight × scaled`` summed; a candidate absent from a list gets 0 from it.
* ``zscore`` — each list's scores standardised over its own candidates (mean 0, deviation 1), then
  summed with the weights; a candidate absent from a list gets that list's lowest standardised score
  (a list whose candidates all score the same, or that has one, gives them +1 and the others -1: a
  query's only keyword match counted for nothing, and the dense side's first hit won).
  ``Fusion("zscore", (0.5, 0.5))`` is the z-score average, kireme's default (`ZSCORE`).
* ``owa`` — the same standardised scores (an absent candidate given the list's lowest), combined by an
  *ordered* weighted average: a candidate's scores are sorted, best first, and ``weights`` apply to that
  order, not to the lists (divided by their sum, so ``(2, 1)`` is ``2/3 × the better + 1/3 × the worse``).
  A side that is sure of a chunk lifts it even where the other side is lukewarm, and a chunk high on both
  still beats one high on one; with one list empty, the other's candidates keep their order.

The default, `DEFAULT_FUSION`, is the z-score average (`ZSCORE`): of the rank and score fusions measured
on JSQuAD valid, JaQuAD dev and lawqa-jp (``benchmarks/fusion.py``, docs/benchmarks.md "Search modes") it
is at least as good as the better single side at hit@1 and hit@5 on all three at 320 and 400-character
chunks and one question behind three times at 200; equal weights leave nothing to tune; the old RRF lost
up to 5 points of hit@1 to BM25 alone. `OWA`, ``Fusion("owa", (2, 1))`` (the better z-score counting
twice), has no cell behind at any of the three sizes, but it is within noise of the average everywhere
(held-out split included), and it lets one side's first hit win where the average keeps the chunk the
other side ranks first and this one third (tests/test_fusion.py: a weak embedder's preference beat BM25's
right answer); it stays an option.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["DEFAULT_FUSION", "FUSION_METHODS", "OWA", "RRF", "ZSCORE", "Fusion", "fuse_scores"]

K = TypeVar("K", bound=Hashable)

FUSION_METHODS = ("rrf", "minmax", "zscore", "owa")
DEPTH = 50  # each side's candidates: its best max(DEPTH, 3k)


@dataclass(frozen=True)
class Fusion:
    """How two or more rankings become one (see the module's docstring).

    ``weights``: one per list, in the order the lists are given (hybrid search: lexical, then dense);
    for ``owa``, one per place in each candidate's own scores sorted best first;
    ``k``: the constant of ``rrf`` (unused by the others); ``depth``: how many candidates each side hands
    over at least (``max(depth, 3 × wanted)``).
    """

    method: str = "rrf"
    weights: tuple[float, ...] = (1.0, 1.0)
    k: int = 60
    depth: int = DEPTH

    def __post_init__(self) -> None:
        from kireme.errors import ConfigError

        if self.method not in FUSION_METHODS:
            raise ConfigError(f"unknown fusion {self.method!r}: choose one of {', '.join(FUSION_METHODS)}")
        if not self.weights or any(not math.isfinite(w) or w < 0 for w in self.weights):
            raise ConfigError(f"fusion weights must be finite and not negative, not {self.weights!r}")
        if self.k < 0 or self.depth < 1:
            raise ConfigError("fusion needs k >= 0 and depth >= 1")

    def wide(self, k: int) -> int:
        """How many candidates each side hands over when ``k`` results are wanted."""
        return max(self.depth, 3 * k)

    @property
    def label(self) -> str:
        """``rrf k=60 1:1``, ``minmax 0.6:0.4``: the setting in one short line (tables, logs)."""
        weights = ":".join(f"{w:g}" for w in self.weights)
        return f"rrf k={self.k} {weights}" if self.method == "rrf" else f"{self.method} {weights}"


RRF = Fusion("rrf", (1.0, 1.0), k=60)  # kireme's hybrid search before the measured score fusions
ZSCORE = Fusion("zscore", (0.5, 0.5))  # the z-score average: the default
OWA = Fusion("owa", (2.0, 1.0))  # better z-score 2/3, worse 1/3: measured, not the default (module docstring)
DEFAULT_FUSION = ZSCORE


def fuse_scores(
    lists: Sequence[Sequence[tuple[K, float]]], fusion: Fusion = DEFAULT_FUSION
) -> dict[K, float]:
    """One fused score per candidate of ``lists`` (each ``[(key, score), ...]``, best first).

    A list with more entries than there are weights is an error; missing weights are not guessed.
    The caller sorts (and breaks ties: kireme puts the earlier chunk first).

    Examples:
        >>> fuse_scores([[("a", 9.0), ("b", 5.0)], [("b", 0.8), ("c", 0.7)]], Fusion("rrf", (1, 1), k=60))
        {'a': 0.01639344262295082, 'b': 0.03252247488101534, 'c': 0.016129032258064516}
        >>> fuse_scores([[("a", 9.0), ("b", 5.0)], [("b", 0.8), ("c", 0.7)]], Fusion("minmax", (0.5, 0.5)))
        {'a': 0.5, 'b': 0.5, 'c': 0.0}
        >>> fuse_scores([[("a", 9.0), ("b", 5.0)], [("b", 0.8), ("c", 0.7)]], Fusion("owa", (2, 1)))
        {'a': 0.3333333333333333, 'b': 0.3333333333333333, 'c': -1.0}
    """
    from kireme.errors import ConfigError

    if len(lists) > len(fusion.weights):
        raise ConfigError(f"{len(lists)} rankings to fuse but {len(fusion.weights)} weight(s)")
    if fusion.method == "zscore":
        return _zscore_totals(lists, fusion)
    if fusion.method == "owa":
        return _owa_totals(lists, fusion)
    out: dict[K, float] = {}
    for ranking, weight in zip(lists, fusion.weights, strict=False):
        for key, value in _contributions(ranking, fusion).items():
            out[key] = out.get(key, 0.0) + weight * value
    return out


def _contributions(ranking: Sequence[tuple[K, float]], fusion: Fusion) -> Mapping[K, float]:
    """rrf or minmax: what one list adds to each of its candidates (before its weight)."""
    if fusion.method == "rrf":
        out: dict[K, float] = {}
        for rank, (key, _) in enumerate(ranking, start=1):
            out.setdefault(key, 1.0 / (fusion.k + rank))
        return out
    return dict(zip((key for key, _ in ranking), _scaled([s for _, s in ranking]), strict=True))


def _zscore_totals(lists: Sequence[Sequence[tuple[K, float]]], fusion: Fusion) -> dict[K, float]:
    """zscore: a candidate absent from a list gets that list's lowest standardised score."""
    keys: dict[K, None] = {}
    for ranking in lists:
        keys.update(dict.fromkeys(key for key, _ in ranking))
    out = dict.fromkeys(keys, 0.0)
    for ranking, weight in zip(lists, fusion.weights, strict=False):
        if not ranking:
            continue
        values, floor = _standardised_side(ranking)
        for key in out:
            out[key] += weight * values.get(key, floor)
    return out


# A list whose candidates all score the same (one keyword match, say) has no deviation to standardise by:
# its candidates get +1 and an absent one -1, the gap between a usual list's good hits and its floor.
_EVEN_LIST = (1.0, -1.0)


def _standardised_side(ranking: Sequence[tuple[K, float]]) -> tuple[dict[K, float], float]:
    """One non-empty list's standardised scores by key, and its lowest (what an absent candidate gets);
    a list whose scores are all equal gives `_EVEN_LIST`: its candidates are above those it lacks."""
    scores = [s for _, s in ranking]
    if max(scores) == min(scores):
        present, absent = _EVEN_LIST
        return dict.fromkeys((key for key, _ in ranking), present), absent
    values = dict(zip((key for key, _ in ranking), _standardised(scores), strict=True))
    return values, min(values.values())


def _owa_totals(lists: Sequence[Sequence[tuple[K, float]]], fusion: Fusion) -> dict[K, float]:
    """owa: each candidate's standardised scores (absent: the list's lowest), sorted best first, weighted
    by place; the weights of the places used are divided by their sum."""
    sides = [_standardised_side(ranking) for ranking in lists if ranking]
    weights = fusion.weights[: len(sides)]
    total = sum(weights) or 1.0
    out: dict[K, float] = {}
    for values, _ in sides:
        for key in values:
            if key not in out:
                ordered = sorted((other.get(key, floor) for other, floor in sides), reverse=True)
                out[key] = sum(w * v for w, v in zip(weights, ordered, strict=True)) / total
    return out


def _scaled(scores: Sequence[float]) -> list[float]:
    """Min-max to [0, 1]; all equal: all 1 (each is the list's best)."""
    if not scores:
        return []
    lo, hi = min(scores), max(scores)
    return [1.0 if hi == lo else (s - lo) / (hi - lo) for s in scores]


def _standardised(scores: Sequence[float]) -> list[float]:
    """(s - mean) / deviation; all equal (or one): all 0."""
    if not scores:
        return []
    mean = sum(scores) / len(scores)
    sd = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    return [0.0 if sd == 0 else (s - mean) / sd for s in scores]
