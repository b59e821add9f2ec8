"""Where the distance between adjacent windows is large enough to cut: the threshold rules.

``--threshold TYPE[:VALUE]``:

* ``percentile[:95]`` — cut where the distance exceeds the given percentile of this document's distances.
* ``stddev[:3]`` — cut where distance > mean + k·σ.
* ``interquartile[:1.5]`` — Tukey's outlier fence: distance > Q3 + k·(Q3 − Q1).
* ``gradient[:95]`` — cut where the *rise* of the distance into a gap (``d[i] - d[i-1]``) exceeds that
  percentile of all rises: finds sharp changes even where the overall level drifts. (LangChain uses the
  centred ``numpy.gradient``, which peaks one gap *before* the change.)
* ``absolute:D`` — cut where distance > D (1 − cosine similarity, or 1 − bigram overlap). ``D`` does not
  transfer between documents or models; use ``kireme inspect`` to choose it.
* ``auto[:depth|otsu|gap]`` — chosen per document with no number. ``depth`` (what ``Threshold("auto")``
  means; the default of `SemanticChunker` where there are no sentence vectors, `resolve_auto`) scores
  every local maximum of the distance by its *depth* — how far the distance falls on both sides before rising again (TextTiling's depth
  score, Hearst 1997) — and cuts the peaks deeper than the mean peak depth, so a topic change is one
  cut, not three adjacent ones. ``otsu`` splits the distances into within-topic and between-topic
  classes by maximising the between-class variance (Otsu 1979); ``gap`` cuts above the largest jump in
  the sorted upper half of the distances.
* ``auto:kcpd[:SCALE]`` — not a threshold on the distances but a global segmentation of the unit
  vectors: penalised kernel change-point detection (`kireme.semantic.segment`), the penalty derived from
  the document (growing with its length beyond 80 units) and multiplied by ``SCALE`` (default 1; larger
  cuts less). It needs an embedding
  similarity, so `SemanticChunker` applies it; `Threshold.cuts` refuses it. The plain ``auto`` of
  `SemanticChunker` is this rule wherever the sentence vectors are at hand (`resolve_auto`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np

from kireme.errors import ConfigError
from kireme.semantic import AUTO_RULES

# A distance must exceed a level by more than this to be cut: the distances of identical sentences are
# rounding noise (1e-16 to 1e-7, float32 vectors), and a rule relative to the document's own distances
# (percentile, stddev, gradient) would otherwise cut between copies of one sentence.
TOLERANCE = 1e-6

DEFAULTS: dict[str, float | str | None] = {
    "percentile": 95.0,
    "stddev": 3.0,
    "interquartile": 1.5,
    "gradient": 95.0,
    "absolute": None,
    "auto": "depth",
}


@dataclass(frozen=True)
class Threshold:
    """A threshold rule and its parameter; ``str()`` gives the ``TYPE:VALUE`` form back."""

    kind: str = "auto"
    value: float | str | None = None

    def __post_init__(self) -> None:
        if self.kind not in DEFAULTS:
            raise ConfigError(f"unknown threshold type {self.kind!r}: use one of {', '.join(DEFAULTS)}")
        value = DEFAULTS[self.kind] if self.value is None else self.value
        if self.kind == "auto":
            rule, _, scale = str(value).partition(":")
            if rule not in AUTO_RULES:
                raise ConfigError(
                    f"auto threshold rule must be one of {', '.join(AUTO_RULES)}, not {value!r}"
                )
            if scale:
                value = f"{rule}:{_penalty_scale(rule, scale)}"
        else:
            if value is None:
                raise ConfigError("absolute threshold needs a distance, e.g. absolute:0.35")
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise ConfigError(f"threshold {self.kind} needs a number, not {value!r}") from None
            if not np.isfinite(value):  # nan compares false with every distance: no cut, and no error
                raise ConfigError(f"threshold {self.kind} needs a finite number, got {value}")
            if self.kind in ("percentile", "gradient") and not 0 <= value <= 100:
                raise ConfigError(f"{self.kind} must be between 0 and 100, got {value}")
            if value < 0 and self.kind in ("stddev", "interquartile"):  # below the mean / Q3: most gaps
                raise ConfigError(
                    f"{self.kind}:{value:g}: the factor must be >= 0 (cut where the distance is that many "
                    f"{'standard deviations above the mean' if self.kind == 'stddev' else 'IQRs above Q3'}); "
                    "for more cuts give a smaller one, e.g. 0.5"
                )
            if value < 0 and self.kind == "absolute":  # no distance is negative: every gap would be cut
                raise ConfigError(
                    f"absolute:{value:g}: a distance is >= 0 (1 - similarity), so this cuts every gap; "
                    "read a level off `kireme inspect`, e.g. absolute:0.3"
                )
        object.__setattr__(self, "value", value)

    def __str__(self) -> str:
        value = self.value
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return f"{self.kind}:{value}"

    @property
    def is_global(self) -> bool:
        """Whether the rule segments the unit vectors (``auto:kcpd``) instead of thresholding distances."""
        return self.kind == "auto" and str(self.value).partition(":")[0] == "kcpd"

    @property
    def penalty_scale(self) -> float:
        """The ``SCALE`` of ``auto:kcpd:SCALE`` (1 when not given)."""
        scale = str(self.value).partition(":")[2]
        return float(scale) if scale else 1.0

    @property
    def number(self) -> float:
        """The numeric parameter of every rule but ``auto`` (``__post_init__`` made it a float)."""
        return cast(float, self.value)

    @classmethod
    def parse(cls, spec: str | Threshold) -> Threshold:
        """``"percentile:90"``, ``"auto"``, ``"absolute:0.3"`` → Threshold."""
        if isinstance(spec, Threshold):
            return spec
        kind, _, value = str(spec).partition(":")
        return cls(kind.strip().lower(), value.strip() or None)

    def level(self, distances: np.ndarray) -> float:
        """The distance above which a gap becomes a cut (``inf`` when nothing should be cut)."""
        self._refuse_global()
        d = np.asarray(distances, dtype=np.float64)
        if d.size == 0:
            return float("inf")
        if self.kind == "percentile":
            return float(np.percentile(d, self.number))
        if self.kind == "stddev":
            return float(d.mean() + self.number * d.std())
        if self.kind == "interquartile":
            q1, q3 = np.percentile(d, [25, 75])
            return float(q3 + self.number * (q3 - q1))
        if self.kind == "absolute":
            return self.number
        if self.kind == "gradient" or (self.kind == "auto" and self.value == "depth"):
            return self.cuts(d)[1]
        return _otsu(d) if self.value == "otsu" else _largest_gap(d)

    def cuts(self, distances: np.ndarray) -> tuple[list[int], float]:
        """Indices of the gaps to cut, and the threshold value used (in distance, or gradient units)."""
        self._refuse_global()
        d = np.asarray(distances, dtype=np.float64)
        if d.size == 0:
            return [], float("inf")
        if self.kind == "auto" and self.value == "depth":
            return _depth_cuts(d)
        if self.kind == "gradient":
            g = np.diff(d, prepend=d[0])
            level = float(np.percentile(g, self.number))
            return [i for i in range(d.size) if g[i] > level + TOLERANCE], level
        level = self.level(d)
        return [i for i in range(d.size) if d[i] > level + TOLERANCE], level

    def _refuse_global(self) -> None:
        if self.is_global:
            raise ConfigError(
                f"{self} segments the sentence vectors, not the distances: use SemanticChunker.analyze "
                "or kireme.semantic.segment.kernel_segment"
            )


def resolve_auto(spec: str | Threshold, *, vectors: bool) -> Threshold:
    """``spec`` parsed; the plain ``"auto"`` is the best rule the analysis allows: ``auto:kcpd`` with the
    sentence vectors (measured ahead of ``auto:depth`` on Choi and on joined and whole JSQuAD/JaQuAD
    articles: docs/benchmarks.md), ``auto:depth`` without them. A `Threshold` object, and a rule named in
    full (``auto:depth``), is kept as it is."""
    if isinstance(spec, str) and spec.strip().lower() == "auto":
        return Threshold("auto", "kcpd" if vectors else "depth")
    return Threshold.parse(spec)


def _penalty_scale(rule: str, text: str) -> str:
    """The ``SCALE`` of ``auto:kcpd:SCALE``, checked and written back in its shortest form."""
    if rule != "kcpd":
        raise ConfigError(f"auto:{rule} takes no number (only auto:kcpd:SCALE does)")
    try:
        scale = float(text)
    except ValueError:
        raise ConfigError(f"auto:kcpd:SCALE needs a number, not {text!r}") from None
    if not (scale > 0 and np.isfinite(scale)):
        raise ConfigError(f"auto:kcpd:SCALE must be a positive number, got {text}")
    return str(int(scale)) if scale.is_integer() else repr(scale)


def depth_scores(d: np.ndarray) -> np.ndarray:
    """TextTiling depth of every gap: rise from the lowest point reached walking left while the
    distance falls, plus the same to the right. Zero where the gap is not a local maximum."""
    n = d.size
    out = np.zeros(n)
    for i in range(n):
        if (i > 0 and d[i - 1] > d[i]) or (i < n - 1 and d[i + 1] > d[i]):
            continue
        left = i
        while left > 0 and d[left - 1] <= d[left]:
            left -= 1
        right = i
        while right < n - 1 and d[right + 1] <= d[right]:
            right += 1
        out[i] = (d[i] - d[left]) + (d[i] - d[right])
    return out


def _depth_cuts(d: np.ndarray) -> tuple[list[int], float]:
    """Cut the peaks deeper than the mean peak depth; returns the cuts and the lowest cut distance.

    With fewer than three peaks a mean says little, so a peak must then be deeper than half the
    range of the distances.
    """
    depths = depth_scores(d)
    peaks = [i for i in range(d.size) if depths[i] > 1e-12]
    if not peaks:
        return [], float("inf")
    values = depths[peaks]
    bar = float(values.mean()) if len(peaks) >= 3 else float(d.max() - d.min()) / 2
    cuts = _no_lone_units([i for i in peaks if depths[i] > bar], d.size)
    level = float(min(d[i] for i in cuts)) - 2 * TOLERANCE if cuts else float("inf")
    return cuts, level


def _no_lone_units(cuts: list[int], gaps: int) -> list[int]:
    """``cuts`` without one at the document's first or last gap, which leaves its first or last unit alone:
    a closing line (``Both plans can be cancelled at any time.``) is unlike the sentences before it and
    was a chunk of its own. (Two depth peaks are never one gap apart: a valley lies between them.)"""
    return [i for i in cuts if 0 < i < gaps - 1]


def _otsu(d: np.ndarray) -> float:
    """The split of the sorted distances that maximises between-class variance (Otsu, 1979)."""
    values = np.sort(d)
    if values.size < 2 or values[-1] - values[0] < 1e-9:
        return float("inf")
    best, best_t = -1.0, float("inf")
    total = values.sum()
    n = values.size
    left_sum = 0.0
    for k in range(1, n):  # class 0 = values[:k], class 1 = values[k:]
        left_sum += values[k - 1]
        if values[k] - values[k - 1] < 1e-12:
            continue
        w0, w1 = k / n, (n - k) / n
        m0, m1 = left_sum / k, (total - left_sum) / (n - k)
        between = w0 * w1 * (m0 - m1) ** 2
        if between > best:
            best, best_t = between, float((values[k - 1] + values[k]) / 2)
    return best_t


def _largest_gap(d: np.ndarray) -> float:
    """Midpoint of the largest jump between consecutive sorted distances in the upper half."""
    values = np.sort(d)
    if values.size < 2:
        return float("inf")
    start = values.size // 2
    upper = values[max(start - 1, 0) :]
    jumps = np.diff(upper)
    if jumps.size == 0 or jumps.max() < 1e-9:
        return float("inf")
    k = int(np.argmax(jumps))
    return float((upper[k] + upper[k + 1]) / 2)
