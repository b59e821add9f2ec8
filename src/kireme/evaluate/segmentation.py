"""Boundary metrics for segmentations of a sequence of ``n`` units (sentences).

A segmentation is the set of *gap indices* where it places a boundary: gap ``i`` lies between unit
``i`` and unit ``i + 1`` (``0 <= i < n - 1``).

* **Pk** (Beeferman, Berger & Lafferty 1999, "Statistical models for text segmentation"): slide a
  window of width ``k`` over the units and count how often reference and hypothesis disagree on
  whether the window's two ends lie in the same segment. ``k`` defaults to half the mean reference
  segment length (rounded, at least 1). Lower is better; 0 is perfect.
* **WindowDiff** (Pevzner & Hearst 2002, "A critique and improvement of an evaluation metric for text
  segmentation"): the same windows, counting those where the *number* of boundaries inside differs.
* **Boundary precision / recall / F1** with a tolerance of ``tolerance`` units: a hypothesis boundary
  matches a reference boundary at most that far away, each reference boundary at most once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass


def _k(reference: set[int], n: int) -> int:
    segments = len(reference) + 1
    return max(1, round(n / segments / 2))


def _check(boundaries: Iterable[int], n: int) -> set[int]:
    out = set(boundaries)
    bad = [b for b in out if not 0 <= b < n - 1]
    if bad:
        raise ValueError(f"boundary gap indices must be in [0, {n - 2}], got {sorted(bad)[:5]}")
    return out


def _window_errors(
    reference: Iterable[int], hypothesis: Iterable[int], n: int, k: int | None, differ: Callable[..., bool]
) -> float:
    """Share of the ``n - k`` windows ``(i, i + k)`` where ``differ(ref_i, ref_i+k, hyp_i, hyp_i+k)``."""
    ref, hyp = _check(reference, n), _check(hypothesis, n)
    if n < 2:
        return 0.0
    k = k or _k(ref, n)
    if k >= n:
        return 0.0
    r, h = _segment_ids(ref, n), _segment_ids(hyp, n)
    windows = n - k
    return sum(differ(r[i], r[i + k], h[i], h[i + k]) for i in range(windows)) / windows


def pk(reference: Iterable[int], hypothesis: Iterable[int], n: int, k: int | None = None) -> float:
    """Pk error (0 best): windows whose ends are in one segment for one side but not the other."""
    return _window_errors(reference, hypothesis, n, k, lambda r0, r1, h0, h1: (r0 == r1) != (h0 == h1))


def windowdiff(reference: Iterable[int], hypothesis: Iterable[int], n: int, k: int | None = None) -> float:
    """WindowDiff error (0 best): windows holding a different number of boundaries on the two sides."""
    return _window_errors(reference, hypothesis, n, k, lambda r0, r1, h0, h1: (r1 - r0) != (h1 - h0))


def _segment_ids(boundaries: set[int], n: int) -> list[int]:
    """Segment number of each unit (boundary after gap i starts a new segment at unit i + 1)."""
    ids, current = [], 0
    for i in range(n):
        ids.append(current)
        if i in boundaries:
            current += 1
    return ids


@dataclass(frozen=True)
class BoundaryScores:
    """Precision, recall and F1 of boundaries, and the counts behind them."""

    precision: float
    recall: float
    f1: float
    matched: int
    predicted: int
    expected: int


def boundary_scores(
    reference: Iterable[int], hypothesis: Iterable[int], tolerance: int = 0
) -> BoundaryScores:
    """Match each hypothesis boundary to the nearest unmatched reference boundary within ``tolerance``."""
    ref = sorted(set(reference))
    hyp = sorted(set(hypothesis))
    unmatched = set(ref)
    matched = 0
    for h in hyp:
        candidates = [r for r in unmatched if abs(r - h) <= tolerance]
        if candidates:
            unmatched.discard(min(candidates, key=lambda r: (abs(r - h), r)))
            matched += 1
    precision = matched / len(hyp) if hyp else (1.0 if not ref else 0.0)
    recall = matched / len(ref) if ref else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return BoundaryScores(precision, recall, f1, matched, len(hyp), len(ref))
