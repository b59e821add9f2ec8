"""The vector (ANN) index at 1M chunks: recall@10 against the exact scan, query latency, build time.

Run on demand (this is not a test). What is measured is kireme's own `LanceDBStore` (``add``,
``optimize(ann="always")``, ``search`` with and without ``exact=True``): the code `kireme index` and
`kireme search` run.

Rows: ``--rows`` (1,000,000) chunks of dimension 384 (``hash:384``, the dimension of e5-small). A chunk is
three sentences of one article, drawn at random (seeded; the article with a chance proportional to its
sentences) from the contexts of JaQuAD dev and JSQuAD v1.3 *valid* (the test file is reserved and never
read), cut at 。！？: so chunks of one article share a topic, as chunks of one document do. Its vector
is the re-normalised sum of the three sentences' ``hash:384`` vectors (the hash embedder is linear in
its n-gram counts, so this is the vector of the three sentences' text, less the n-grams across their
joins). Each sentence is embedded once: 1M rows take seconds to make. The row's ``text`` names its
sentences (a vector search does not read it).

Queries, two sets of ``--queries`` (50) each:

* ``in corpus``: the first 60 % of a sentence that chunks contain: a question worded like the passage
  that answers it, the usual retrieval case.
* ``held out``: sentences no chunk contains (kept out of the pool): every row is a weak match, the
  nearest neighbours are barely nearer than the rest, the hardest case for any ANN index.

For each query the exact top 10 (``exact=True``, a full scan) is the truth. ``recall@10`` counts, as
ann-benchmarks does, a returned chunk as right when its cosine similarity is within 1e-3 of the 10th
exact one (many chunks hold the same sentence, so near-ties are common and any of them is as good an
answer); ``same ids`` is the stricter share of the exact top-10 ids returned. Latency: wall ms per query
(p50/p95, after 3 warm-up queries), exact scan and index, and the index at other shares of partitions
read (``--shares``; the store's default is `kireme.index.ann.ANN_PROBE_SHARE`). Build: seconds of
``optimize(ann="always")`` (BTree on ids, k-means partitions, 8-bit quantisation), and of writing the rows.

    .venv/bin/python benchmarks/ann.py --markdown
    .venv/bin/python benchmarks/ann.py --rows 200000 --queries 20
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import kireme.index.ann as ann
from _corpora import add_corpora_argument, corpora_present, corpus_path
from _report import print_table
from kireme.embed.hashed import HashedNgramEmbedder
from kireme.index.lancedb_store import LanceDBStore
from kireme.index.store import Hit, StoredChunk

DIM = 384
SENTENCES_PER_CHUNK = 3
SENTENCE_END = re.compile(r"(?<=[。！？])")
BATCH = 50_000


def articles(corpora: Path) -> list[list[str]]:
    """Each article's distinct sentences (over 10 characters; a sentence seen before is left out), from
    the JaQuAD dev and JSQuAD valid contexts, in file order."""
    seen: set[str] = set()
    found: list[list[str]] = []
    for name in ("jaquad-dev", "jsquad-valid"):
        path = corpus_path(corpora, name)
        if path is None:
            continue
        files = sorted(path.glob("*.json")) if path.is_dir() else [path]
        for file in files:
            for article in json.loads(file.read_text(encoding="utf-8"))["data"]:
                sentences = []
                for paragraph in article["paragraphs"]:
                    for sentence in SENTENCE_END.split(paragraph["context"]):
                        sentence = sentence.strip()
                        if len(sentence) > 10 and sentence not in seen:
                            seen.add(sentence)
                            sentences.append(sentence)
                if sentences:
                    found.append(sentences)
    return found


def chunk_vectors(pool: np.ndarray, picks: np.ndarray) -> np.ndarray:
    vectors = pool[picks].sum(axis=1)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return vectors.astype(np.float32)


def build(
    store: LanceDBStore, pool: np.ndarray, spans: np.ndarray, rows: int, seed: int
) -> tuple[float, np.ndarray]:
    """Write ``rows`` chunks (article ``a`` owns pool rows ``spans[a]:spans[a + 1]``); returns the seconds
    and the sentence picks of every row."""
    rng = np.random.default_rng(seed)
    sizes = np.diff(spans)
    article = rng.choice(len(sizes), size=rows, p=sizes / sizes.sum())
    offsets = (rng.random((rows, SENTENCES_PER_CHUNK)) * sizes[article, None]).astype(np.int64)
    picks = spans[article, None] + offsets
    started = time.perf_counter()
    for lo in range(0, rows, BATCH):
        part = picks[lo : lo + BATCH]
        chunks = [
            StoredChunk(
                id=f"c{lo + i:07d}",
                doc_id=f"d{(lo + i) // 100:05d}",
                index=(lo + i) % 100,
                start=0,
                end=0,
                text="+".join(map(str, p)),
                embed_text="",
            )
            for i, p in enumerate(part.tolist())
        ]
        store.add(chunks, chunk_vectors(pool, part))
        print(f"# wrote {min(lo + BATCH, rows):,}/{rows:,} rows", file=sys.stderr, flush=True)
    return time.perf_counter() - started, picks


def timed(store: LanceDBStore, queries: np.ndarray, exact: bool) -> tuple[list[list[Hit]], list[float]]:
    for query in queries[:3]:
        store.search(query, 10, exact=exact)
    found, times = [], []
    for query in queries:
        started = time.perf_counter()
        found.append(store.search(query, 10, exact=exact))
        times.append(time.perf_counter() - started)
    return found, times


def recalls(found: list[list[Hit]], truth: list[list[Hit]]) -> tuple[float, float]:
    """ann-benchmarks' recall@10 (a hit within 1e-3 of the 10th exact similarity counts) and id overlap."""
    tied, same = [], []
    for got, exact in zip(found, truth, strict=True):
        floor = exact[-1].score - 1e-3
        tied.append(sum(h.score >= floor for h in got) / len(exact))
        same.append(len({h.chunk.id for h in got} & {h.chunk.id for h in exact}) / len(exact))
    return float(np.mean(tied)), float(np.mean(same))


def ms(times: list[float], q: float) -> str:
    return f"{1000 * float(np.percentile(times, q)):.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_corpora_argument(ap)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=50, help="per query set")
    ap.add_argument("--shares", default="0.2,0.4,0.6,0.8", help="shares of partitions read, to compare")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    if not corpora_present(args.corpora, "the ANN benchmark"):
        return 0
    found = articles(args.corpora)
    texts = [sentence for article in found for sentence in article]
    if len(texts) < 1000:
        print("too few sentences in the corpora: skipping the ANN benchmark", file=sys.stderr)
        return 0
    rng = np.random.default_rng(args.seed)
    out = set(rng.choice(len(texts), size=args.queries, replace=False).tolist())
    held_out = [texts[i] for i in sorted(out)]
    kept = [[s for s in article if s not in held_out] for article in found]
    kept = [article for article in kept if article]
    pool_texts = [sentence for article in kept for sentence in article]
    spans = np.cumsum([0, *(len(article) for article in kept)])
    embedder = HashedNgramEmbedder(DIM)
    started = time.perf_counter()
    pool = embedder.embed(pool_texts)
    embed_s = time.perf_counter() - started
    print(
        f"# {len(pool_texts):,} sentences of {len(kept):,} articles embedded in {embed_s:.1f} s",
        file=sys.stderr,
    )

    folder = Path(tempfile.mkdtemp(prefix="kireme-ann-"))
    try:
        store = LanceDBStore(folder / "lancedb", dimension=DIM)
        write_s, picks = build(store, pool, spans, args.rows, args.seed + 1)
        contained = np.unique(picks[:, 0])  # sentences some chunk holds
        chosen = rng.choice(contained, size=args.queries, replace=False)
        in_corpus = [pool_texts[i][: max(6, int(len(pool_texts[i]) * 0.6))] for i in chosen]
        sets = {"in corpus": embedder.embed(in_corpus), "held out": embedder.embed(held_out)}

        truth, exact_times = {}, {}
        for name, queries in sets.items():
            print(f"# exact scan: {name}", file=sys.stderr, flush=True)
            truth[name], exact_times[name] = timed(store, queries, exact=True)

        print("# building the vector index", file=sys.stderr, flush=True)
        started = time.perf_counter()
        store.optimize(ann="always")
        build_s = time.perf_counter() - started
        index = store.vector_index()
        assert index is not None, "no vector index was built"

        shares = sorted({float(s) for s in args.shares.split(",")} | {ann.ANN_PROBE_SHARE})
        default = ann.ANN_PROBE_SHARE
        rows_out = []
        for name, queries in sets.items():
            rows_out.append(
                [
                    f"{name}: exact scan",
                    "all",
                    "1.000",
                    "1.000",
                    ms(exact_times[name], 50),
                    ms(exact_times[name], 95),
                ]
            )
            for share in shares:
                ann.ANN_PROBE_SHARE = share
                hits, times = timed(store, queries, exact=False)
                recall, same = recalls(hits, truth[name])
                label = f"{name}: index" + (" (default)" if share == default else "")
                probes = f"{ann.ann_probes(index.partitions)}/{index.partitions}"
                rows_out.append([label, probes, f"{recall:.3f}", f"{same:.3f}", ms(times, 50), ms(times, 95)])
            ann.ANN_PROBE_SHARE = default
        title = (
            f"ANN at {args.rows:,} rows, hash:{DIM} (IVF_SQ, cosine; recall@10 against the exact scan, "
            f"{args.queries} queries per set)"
        )
        print_table(
            title,
            ["search", "partitions read", "recall@10", "same ids", "p50 ms", "p95 ms"],
            rows_out,
            args.markdown,
        )
        print_table(
            "Building",
            ["step", "seconds"],
            [
                [
                    f"embed {len(pool_texts):,} sentences of {len(kept):,} articles (hash:{DIM})",
                    f"{embed_s:.1f}",
                ],
                [f"write {args.rows:,} rows (LanceDBStore.add, {BATCH:,} per commit)", f"{write_s:.1f}"],
                ["optimize(ann='always'): BTree on ids, IVF_SQ", f"{build_s:.1f}"],
            ],
            args.markdown,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
