"""When and how an index gets an approximate-nearest-neighbour (ANN) vector index: the policy, in numbers.

Below `ANN_MIN_ROWS` rows an exact scan is fast enough (~65 ms per query at 100k rows of dimension 384 on
2 cores) and never misses; far above it, it is not (1.1-1.3 s at 1M rows), and an IVF index answers in tens
of milliseconds. The partition count grows with the rows; a query reads `ANN_PROBE_SHARE` of the
partitions and re-scores ``k * ANN_REFINE_FACTOR`` candidates on the full vectors: the share was chosen
for recall@10 >= 0.95 against the exact scan at 1M rows (``benchmarks/ann.py``, whose table is in
docs/benchmarks.md). Kept apart from the store so the command line can show the numbers without
loading LanceDB.
"""

from __future__ import annotations

import math
from typing import Literal

# "auto": built past ANN_MIN_ROWS rows; "always": now; "never": none (an existing one is dropped).
# Stores that always keep their own graph (Chroma's HNSW) ignore it.
AnnMode = Literal["auto", "always", "never"]
ANN_MODES: tuple[AnnMode, ...] = ("auto", "always", "never")

ANN_MIN_ROWS = 100_000  # "auto": a vector index from this many rows on (below, the exact scan is fast enough)
ANN_MIN_TRAIN_ROWS = 256  # fewer rows cannot train partitions: searched exactly even with "always"
ANN_RETRAIN_GROWTH = 4  # partitions are trained again once the table is this many times its training size
ANN_ROWS_PER_PARTITION = 4096  # k-means partitions: one per this many rows (1M rows: 244)
ANN_PROBE_SHARE = (
    0.6  # share of the partitions a query reads (recall@10 >= 0.95 at 1M rows, benchmarks/ann.py)
)
ANN_REFINE_FACTOR = 10  # candidates re-scored on the full vectors: k x this


def ann_partitions(rows: int) -> int:
    """How many k-means partitions an index over ``rows`` vectors gets.

    Examples:
        >>> ann_partitions(1_000_000), ann_partitions(100_000), ann_partitions(300)
        (244, 24, 1)
    """
    return max(1, min(4096, rows // ANN_ROWS_PER_PARTITION))


def ann_probes(partitions: int) -> int:
    """How many partitions a query reads (``nprobes``).

    Examples:
        >>> ann_probes(244), ann_probes(1)
        (147, 1)
    """
    return max(1, math.ceil(partitions * ANN_PROBE_SHARE))
