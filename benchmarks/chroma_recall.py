"""Chroma HNSW recall and determinism: which ``configuration={"hnsw": {...}}`` gives kireme exact-enough search.

Why: kireme's Chroma store creates its collection with ``{"hnsw": {"space": "cosine"}}`` and Chroma's
defaults for everything else (``ef_construction`` 100, ``max_neighbors`` 16, ``ef_search`` 100,
``num_threads`` = CPU count, ``batch_size`` 100, ``sync_threshold`` 1000). An outside probe measured
recall@5 of 0.68 at 66k chunks with the hash embedder, and two identical builds answering differently.
This script measures both, per HNSW configuration, so the store's configuration can be chosen on data.

What it does (run on demand; this is not a test):

* texts: ``--chunks`` chunk-like texts (default 20,000) plus ``--queries`` (200) held-out ones, made up
  here from a small built-in Japanese/English vocabulary with a seeded generator (``--seed``): documents
  on a topic (a few favoured nouns), chunks of 3-10 sentences, Zipf-weighted words, pseudo-words (katakana
  loanwords, English-ish identifiers) and numbers, so chunks of one document look alike, as in real
  indexes. ``--source corpora`` instead cuts ~400-character windows from JSQuAD/JaQuAD contexts and the
  Japanese tech docs under ``../shared/corpora`` (``--corpora``; read only, never copied).
* vectors: ``kireme.embed.hashed.HashedNgramEmbedder(--dim)`` (L2-normalised character 2/3-gram hashes).
* build: a fresh ``chromadb.PersistentClient`` in a temporary directory (telemetry off), a collection
  created like the store does (``embedding_function=None``, ``configuration={"hnsw": config}``), rows
  added with documents and a small metadata dict in batches of ``client.get_max_batch_size()``
  (``--add-batch`` for fewer rows per ``add`` call).
* queries: one ``collection.query`` per query vector (``n_results`` 10), as the store searches: the
  vectors of the held-out texts (``held``) and of ``--queries`` texts that are in the collection (``in``).
* recall@k against exact cosine top-k (numpy, float32 dot products of the same normalised vectors):
  ``r@k`` is plain (|retrieved ∩ exact top-k| / k); ``r@k tie`` counts a retrieved row as correct when its
  exact similarity is >= the k-th best exact similarity - 1e-6, because hashed n-gram vectors produce
  many equal scores and the exact top-k is then an arbitrary choice among ties.
* determinism: the same collection is built ``--builds`` times (default 2) from the same rows in the same
  order, each in its own directory; ``same top10`` is the share of queries whose top-10 id lists (order
  included) are identical in every build (``set``: the same ids in any order). ``--reopen`` also queries each build again from a new client
  (process-local caches cleared), which is how a later ``kireme search`` sees the index.
* times: ``build s`` (all ``add`` calls of one build, mean over builds), ``query ms`` (p50 and p95 of
  single queries, first build).

Configurations: ``--hnsw JSON`` (repeatable), each one row; the flags ``--ef-search``,
``--max-neighbors``, ``--ef-construction``, ``--num-threads``, ``--batch-size``, ``--sync-threshold``,
``--resize-factor`` are merged into every configuration (``space`` is ``cosine`` unless given). Without
any, the store's current ``{"space": "cosine"}``. These are the keys of
``chromadb.api.collection_configuration.HNSWConfiguration``.

What chromadb 1.5's Rust core does with them (local persistent client; read in its source,
``rust/segment/src/local_hnsw.rs``, and consistent with what this script measures): the HNSW writer uses
``space``, ``max_neighbors``, ``ef_construction``, ``ef_search`` and ``sync_threshold`` only; each
write's rows go into hnswlib from a hash map, in parallel on a rayon pool, so insertion order (hence the
graph) differs between identical builds whatever ``num_threads`` says (``--rayon-threads 1`` did not
make builds agree either). ``sync_threshold`` is the number of rows between saves of the HNSW files: one
above the row count leaves the index unsaved, and a reopened client then answers differently (measured).
Identical builds therefore only agree where the search is (nearly) exact: a denser graph
(``max_neighbors``, ``ef_construction``) and a larger ``ef_search`` buy that.

    python benchmarks/chroma_recall.py                                    # the store's current config
    python benchmarks/chroma_recall.py --reopen --hnsw '{}' --hnsw '{"ef_search": 400}' \\
        --hnsw '{"max_neighbors": 48, "ef_construction": 400, "ef_search": 800}'
    python benchmarks/chroma_recall.py --chunks 66000 --reopen --max-neighbors 48 --ef-construction 400 \\
        --ef-search 800 --markdown
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402

from _corpora import add_corpora_argument, corpora_present, corpus_path  # noqa: E402
from _report import print_table  # noqa: E402
from kireme.embed.hashed import HashedNgramEmbedder  # noqa: E402

K = 10
TIE_EPS = 1e-6
COLLECTION = "kireme_chunks"

# ------------------------------------------------------------------------------------ synthetic texts


def words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


JA_NOUNS = words(
    "設定 ファイル 関数 引数 戻り値 変数 型 構造体 モジュール パッケージ 依存関係 ビルド テスト エラー 例外 メモリ "
    "スレッド 非同期処理 データベース インデックス 検索 クエリ ベクトル 埋め込み 文書 段落 見出し 表 コードブロック "
    "コンポーネント 状態 イベント サーバー クライアント リクエスト レスポンス キャッシュ ログ 権限 ユーザー 環境変数 "
    "コマンド オプション ディレクトリ パス 文字列 配列 辞書 所有権 借用 ライフタイム トレイト マクロ ジェネリクス "
    "イテレータ クロージャ プラグイン 開発サーバー 本番環境 契約 条文 申請 手続き 期限 届出 事業者 個人情報 利用者 "
    "料金 会議 議事録 報告書 予算 売上 顧客 製品 在庫 注文 配送 地域 歴史 人口 気候 川 山 都市 大学 研究 論文 実験 "
    "結果 政府 法律 選手 試合 作品 映画 音楽 鉄道 駅 寺院 城 王朝 戦争 条約 言語 方言 文化 祭り 料理 農業 漁業"
)
JA_ADJ = words(
    "重要 必要 有効 無効 簡単 複雑 安全 危険 高速 低速 大規模 小規模 一般的 例外的 同期的 非同期的 古い 新しい "
    "有名 独自 公式 任意 必須 便利 不明"
)
JA_VERBS = words(
    "設定します 確認してください 返します 読み込みます 更新する必要があります 削除できます 追加しました 呼び出します "
    "変更されます 生成します 保存されます 参照します 比較します 公開されました 開始されました 終了しました 建設された "
    "記録されている 指定します 検証します 実行します 表示されます 定義されています 含まれます"
)
JA_TEMPLATES = (
    "{n1}は{n2}を{v}。",
    "{n1}の{n2}が{a}な場合、{n3}を{v}。",
    "まず{n1}を{v}。次に{n2}の{n3}を{v}。",
    "{n1}と{n2}の違いは{n3}にあります。",
    "この章では{n1}と{k}について説明します。",
    "{y}年に{n1}の{n2}が{v}。",
    "{k}は{n1}の一つで、{a}な{n2}として知られています。",
    "{n1}を使うと{n2}が{a}になります。",
    "注意: {n1}に`{i}`を渡すと{n2}が{v}。",
    "{n1}の{num}番目の{n2}は{k}です。",
)
EN_NOUNS = words(
    "config file function argument value variable type struct module package dependency build test error "
    "exception memory thread task database index search query vector embedding document paragraph heading "
    "table component state event server client request response cache log permission user command option "
    "directory path string array map ownership borrow lifetime trait macro iterator closure plugin release "
    "contract clause applicant deadline report budget customer product order region river city university"
)
EN_ADJ = words("important required valid invalid simple complex safe fast slow large small default optional")
EN_VERBS = words(
    "returns loads updates deletes adds calls changes creates stores reads compares validates runs shows "
    "defines contains"
)
EN_TEMPLATES = (
    "The {n1} {v} the {n2}.",
    "If the {n1} is {a}, the {n2} {v} a new {n3}.",
    "Use `{i}` to configure the {n1} of each {n2}.",
    "See {k} for details on {n1} and {n2}.",
    "In {y}, the {n1} {v} {num} {n2} entries.",
    "Each {n1} {v} one {n2} per {n3}.",
)
KATAKANA = (
    "アイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモヤユヨラリルレロワン"
    "ガギグゲゴザジズゼゾダデドバビブベボパピプペポ"
)
EN_SYLLABLES = words("ka ro mi tan ver lo si den gra pol ex ser ton mar vin bel cor dra fi nu sta qui lex")


def zipf_weights(n: int, s: float = 1.1) -> list[float]:
    return [1.0 / (i + 1) ** s for i in range(n)]


class TextGenerator:
    """Seeded chunk-like texts: documents on a topic, mostly Japanese with some English sentences."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        rng = self.rng
        katakana = sorted(
            {"".join(rng.choice(KATAKANA) for _ in range(rng.randint(3, 6))) for _ in range(3000)}
        )
        english = sorted(
            {"".join(rng.choice(EN_SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(3000)}
        )
        rng.shuffle(katakana)
        rng.shuffle(english)
        # common words first (the most frequent), then the long tail of pseudo-words
        self.ja_words = [*rng.sample(JA_NOUNS, len(JA_NOUNS)), *katakana]
        self.en_words = [*rng.sample(EN_NOUNS, len(EN_NOUNS)), *english]
        self.ja_cum = list(accumulate(zipf_weights(len(self.ja_words))))
        self.en_cum = list(accumulate(zipf_weights(len(self.en_words))))

    def documents(self) -> Iterator[list[str]]:
        """An endless stream of documents, each a list of chunk texts (2-12 chunks)."""
        rng = self.rng
        while True:
            topic_ja = rng.choices(self.ja_words, cum_weights=self.ja_cum, k=6)
            topic_en = rng.choices(self.en_words, cum_weights=self.en_cum, k=4)
            english_share = rng.choice((0.0, 0.1, 0.3, 0.9))
            ident = "_".join(rng.sample(EN_NOUNS, 2))
            yield [
                " ".join(
                    self.sentence(topic_ja, topic_en, ident, rng.random() < english_share)
                    for _ in range(rng.randint(3, 10))
                )
                for _ in range(rng.randint(2, 12))
            ]

    def sentence(self, topic_ja: list[str], topic_en: list[str], ident: str, english: bool) -> str:
        rng = self.rng
        words, cum, topic = (
            (self.en_words, self.en_cum, topic_en) if english else (self.ja_words, self.ja_cum, topic_ja)
        )

        def noun() -> str:
            return rng.choice(topic) if rng.random() < 0.5 else rng.choices(words, cum_weights=cum)[0]

        template = rng.choice(EN_TEMPLATES if english else JA_TEMPLATES)
        return template.format(
            n1=noun(),
            n2=noun(),
            n3=noun(),
            v=rng.choice(EN_VERBS if english else JA_VERBS),
            a=rng.choice(EN_ADJ if english else JA_ADJ),
            k=rng.choice(topic_en) if rng.random() < 0.5 else rng.choice(topic_ja),
            i=f"{ident}({rng.choice(topic_en)})",
            y=rng.randint(1600, 2025),
            num=rng.randint(1, 500),
        )


def synthetic_texts(n: int, seed: int) -> list[str]:
    """``n`` distinct chunk texts, document after document (so neighbours in id order are related)."""
    seen: set[str] = set()
    out: list[str] = []
    for doc in TextGenerator(seed).documents():
        for text in doc:
            if text not in seen:
                seen.add(text)
                out.append(text)
                if len(out) == n:
                    return out
    raise AssertionError("unreachable")


def corpus_texts(root: Path, n: int, width: int = 400) -> list[str]:
    """Up to ``n`` distinct ~``width``-character windows of the Japanese corpora (fewer when they run out)."""
    sources: list[str] = []
    for name in ("jsquad-valid", "jaquad-dev"):
        path = corpus_path(root, name)
        if path is None:
            continue
        for file in sorted(path.rglob("*.json")) if path.is_dir() else [path]:
            data = json.loads(file.read_text(encoding="utf-8"))
            for article in data.get("data", []):
                sources.extend(p["context"] for p in article.get("paragraphs", []))
    md = corpus_path(root, "ja-techdocs-md")
    if md is not None:
        sources.extend(
            p.read_text(encoding="utf-8") for p in sorted(md.rglob("*.md")) if p.name != "SOURCE.md"
        )
    seen: set[str] = set()
    out: list[str] = []
    for source in sources:
        for start in range(0, len(source), width):
            text = source[start : start + width].strip()
            if len(text) >= 40 and text not in seen:
                seen.add(text)
                out.append(text)
    if len(out) < n:
        print(f"# corpora hold {len(out)} distinct windows, fewer than {n} asked", file=sys.stderr)
    random.Random(0).shuffle(out)
    return out[:n]


# ------------------------------------------------------------------------------------------ measuring


@dataclass
class Build:
    seconds: float
    query_ms: list[float]
    ids: list[list[int]]  # top-K row numbers per query
    reopened: list[list[int]] | None = None


@dataclass
class Result:
    config: dict[str, Any]
    builds: list[Build] = field(default_factory=list)


def embed_part(texts: Sequence[str], dim: int) -> np.ndarray:
    return HashedNgramEmbedder(dim).embed(texts)


def embed(texts: Sequence[str], dim: int, jobs: int, batch: int = 2000) -> np.ndarray:
    """The texts' vectors (pure-Python hashing, so spread over ``jobs`` processes)."""
    parts = [texts[i : i + batch] for i in range(0, len(texts), batch)]
    if jobs > 1 and len(parts) > 1:
        with ProcessPoolExecutor(jobs) as pool:
            vectors = list(pool.map(embed_part, parts, [dim] * len(parts)))
    else:
        vectors = [embed_part(part, dim) for part in parts]
    return np.ascontiguousarray(np.concatenate(vectors).astype(np.float32))


def run_queries(collection: Any, queries: np.ndarray) -> tuple[list[list[int]], list[float]]:
    ids: list[list[int]] = []
    times: list[float] = []
    for vector in queries:
        start = time.perf_counter()
        result = collection.query(query_embeddings=vector.reshape(1, -1), n_results=K, include=["distances"])
        times.append((time.perf_counter() - start) * 1000)
        ids.append([int(i) for i in result["ids"][0]])
    return ids, times


def new_client(path: Path) -> Any:
    import chromadb
    from chromadb.config import Settings

    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))


def release(client: Any) -> None:
    close = getattr(client, "close", None)
    if close is not None:
        close()
    from chromadb.api.client import SharedSystemClient

    SharedSystemClient.clear_system_cache()
    gc.collect()


def build_once(
    config: dict[str, Any],
    texts: Sequence[str],
    vectors: np.ndarray,
    queries: np.ndarray,
    reopen: bool,
    add_batch: int | None,
) -> Build:
    """One fresh collection with ``config``, filled like the store fills it, then queried."""
    tmp = Path(tempfile.mkdtemp(prefix="kireme-chroma-recall-"))
    try:
        client = new_client(tmp)
        collection = client.get_or_create_collection(
            COLLECTION, embedding_function=None, configuration={"hnsw": dict(config)}
        )
        batch = max(1, min(add_batch or sys.maxsize, int(client.get_max_batch_size())))
        start = time.perf_counter()
        for i in range(0, len(texts), batch):
            rows = range(i, min(i + batch, len(texts)))
            collection.add(
                ids=[str(r) for r in rows],
                embeddings=vectors[i : i + batch],
                documents=[texts[r] for r in rows],
                metadatas=[{"doc_id": f"d{r // 8}", "idx": r % 8} for r in rows],
            )
        seconds = time.perf_counter() - start
        ids, times = run_queries(collection, queries)
        release(client)
        reopened = None
        if reopen:
            client = new_client(tmp)
            reopened, _ = run_queries(client.get_collection(COLLECTION), queries)
            release(client)
        return Build(seconds, times, ids, reopened)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def exact_top(vectors: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact similarities (queries x rows) and each query's exact top-K rows (best first)."""
    sims = queries @ vectors.T
    top = np.argsort(-sims, axis=1, kind="stable")[:, :K]
    return sims, top


def recall(
    found: list[list[int]], sims: np.ndarray, top: np.ndarray, rows: Sequence[int], k: int, ties: bool
) -> float:
    """Mean recall@k over the queries ``rows`` (plain, or counting rows tied with the k-th best)."""
    scores: list[float] = []
    for q in rows:
        got = found[q][:k]
        if ties:
            kth = sims[q, top[q, k - 1]]
            hits = sum(1 for r in got if sims[q, r] >= kth - TIE_EPS)
        else:
            hits = len(set(got) & {int(r) for r in top[q, :k]})
        scores.append(min(hits, k) / k)
    return float(np.mean(scores)) if scores else float("nan")


def tie_share(sims: np.ndarray, top: np.ndarray) -> float:
    """Share of queries whose 10th and 11th best exact similarities are tied (within TIE_EPS)."""
    ordered = -np.sort(-sims, axis=1)[:, : K + 1]
    return float(np.mean(ordered[:, K - 1] - ordered[:, K] <= TIE_EPS))


# ------------------------------------------------------------------------------------------------ CLI


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--chunks", type=int, default=20000, help="rows in the collection (%(default)s)")
    ap.add_argument("--queries", type=int, default=200, help="held-out queries, and as many in-collection")
    ap.add_argument("--dim", type=int, default=256, help="HashedNgramEmbedder dimension (%(default)s)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--source", choices=("synthetic", "corpora"), default="synthetic")
    add_corpora_argument(ap)
    ap.add_argument("--builds", type=int, default=2, help="identical builds per config (determinism)")
    ap.add_argument("--reopen", action="store_true", help="also query every build from a new client")
    ap.add_argument("--hnsw", action="append", type=json.loads, default=[], help="a config as JSON (repeat)")
    for flag, kind in (
        ("ef-search", int),
        ("max-neighbors", int),
        ("ef-construction", int),
        ("num-threads", int),
        ("batch-size", int),
        ("sync-threshold", int),
        ("resize-factor", float),
    ):
        ap.add_argument(f"--{flag}", type=kind, help="merged into every config")
    ap.add_argument("--add-batch", type=int, help="rows per add call (default: the client's maximum)")
    ap.add_argument(
        "--rayon-threads", type=int, help="set RAYON_NUM_THREADS before Chroma starts (whole run)"
    )
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes for embedding")
    ap.add_argument("--json", type=Path, help="also write the results here as JSON")
    ap.add_argument("--markdown", action="store_true")
    return ap.parse_args(argv)


def configs(args: argparse.Namespace) -> list[dict[str, Any]]:
    extra = {
        key: getattr(args, key)
        for key in (
            "ef_search",
            "max_neighbors",
            "ef_construction",
            "num_threads",
            "batch_size",
            "sync_threshold",
            "resize_factor",
        )
        if getattr(args, key) is not None
    }
    out = []
    for base in args.hnsw or [{}]:
        if not isinstance(base, dict):
            raise SystemExit(f"--hnsw must be a JSON object, got {base!r}")
        out.append({"space": "cosine", **base, **extra})
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.rayon_threads is not None:
        # Chroma's Rust core inserts each write batch into HNSW with a rayon pool, which sizes itself
        # from this variable when it starts (the collection's num_threads is not used for that).
        os.environ["RAYON_NUM_THREADS"] = str(args.rayon_threads)
    import chromadb

    total = args.chunks + args.queries
    start = time.perf_counter()
    if args.source == "corpora":
        if not corpora_present(args.corpora, "the corpora source"):
            return 0
        texts = corpus_texts(args.corpora, total)
    else:
        texts = synthetic_texts(total, args.seed)
    held_texts, texts = texts[: args.queries], texts[args.queries :]
    vectors = embed(texts, args.dim, args.jobs)
    held = embed(held_texts, args.dim, args.jobs)
    inside = random.Random(args.seed).sample(range(len(texts)), min(args.queries, len(texts)))
    queries = np.concatenate([held, vectors[inside]])
    n_held = len(held)
    sims, top = exact_top(vectors, queries)
    print(
        f"# chromadb {chromadb.__version__}, {len(texts)} rows ({args.source}), dim {args.dim}, "
        f"{n_held} held-out + {len(inside)} in-collection queries, texts+vectors in "
        f"{time.perf_counter() - start:.1f} s; mean chars/row {np.mean([len(t) for t in texts]):.0f}; "
        f"queries with a tie at rank 10/11: {tie_share(sims, top):.2f}",
        file=sys.stderr,
    )

    all_rows = range(len(queries))
    held_rows, in_rows = range(n_held), range(n_held, len(queries))
    header = [
        "config",
        "build s",
        "query ms p50/p95",
        "r@5",
        "r@10",
        "r@5 tie",
        "r@10 tie",
        "r@10 tie held/in",
        "same top10 list/set",
    ]
    if args.reopen:
        header.append("reopen same")
    table: list[list[str]] = []
    report: list[dict[str, Any]] = []
    for config in configs(args):
        result = Result(config)
        for b in range(max(1, args.builds)):
            build = build_once(config, texts, vectors, queries, args.reopen, args.add_batch)
            result.builds.append(build)
            print(f"# {json.dumps(config)} build {b + 1}: {build.seconds:.1f} s", file=sys.stderr)
        first = result.builds[0]
        same = np.mean([all(bld.ids[q] == first.ids[q] for bld in result.builds) for q in all_rows])
        same_set = np.mean(
            [all(set(bld.ids[q]) == set(first.ids[q]) for bld in result.builds) for q in all_rows]
        )
        row = {
            "config": config,
            "build_s": float(np.mean([b.seconds for b in result.builds])),
            "query_ms_p50": float(np.percentile(first.query_ms, 50)),
            "query_ms_p95": float(np.percentile(first.query_ms, 95)),
            "r5": recall(first.ids, sims, top, all_rows, 5, False),
            "r10": recall(first.ids, sims, top, all_rows, 10, False),
            "r5_tie": recall(first.ids, sims, top, all_rows, 5, True),
            "r10_tie": recall(first.ids, sims, top, all_rows, 10, True),
            "r10_tie_held": recall(first.ids, sims, top, held_rows, 10, True),
            "r10_tie_in": recall(first.ids, sims, top, in_rows, 10, True),
            "same_top10": float(same) if len(result.builds) > 1 else None,
            "same_top10_set": float(same_set) if len(result.builds) > 1 else None,
        }
        cells = [
            json.dumps({k: v for k, v in config.items() if k != "space" or v != "cosine"}) or "{}",
            f"{row['build_s']:.1f}",
            f"{row['query_ms_p50']:.2f}/{row['query_ms_p95']:.2f}",
            *(f"{row[key]:.3f}" for key in ("r5", "r10", "r5_tie", "r10_tie")),
            f"{row['r10_tie_held']:.3f}/{row['r10_tie_in']:.3f}",
            "-" if row["same_top10"] is None else f"{row['same_top10']:.3f}/{row['same_top10_set']:.3f}",
        ]
        if args.reopen:
            reopen_same = np.mean(
                [
                    b.reopened is not None and b.reopened[q] == b.ids[q]
                    for b in result.builds
                    for q in all_rows
                ]
            )
            row["reopen_same_top10"] = float(reopen_same)
            cells.append(f"{reopen_same:.3f}")
        report.append(row)
        table.append(cells)
    title = f"Chroma HNSW recall vs exact cosine: {len(texts)} rows, dim {args.dim}, {len(queries)} queries"
    print_table(title, header, table, args.markdown)
    print("(config: space cosine unless shown; r@k tie counts rows tied with the exact k-th best)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
