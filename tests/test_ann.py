"""The approximate vector index of a LanceDB store: when it is built, that searches find what the exact
scan finds, that rows added after it are found, re-training, dropping, and the CLI around it.

Sizes are small (thousands of rows) and the policy's numbers are lowered with ``monkeypatch`` where a
test needs partitions or the automatic threshold; recall and latency at 1M rows are measured by
``benchmarks/ann.py``, not here.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import kireme.index.ann as ann
import kireme.index.check as check_module
import kireme.index.lancedb_store as lancedb_store
from kireme.cli import cli
from kireme.embed.hashed import HashedNgramEmbedder
from kireme.index.ingest import Ingestor, ingest_paths
from kireme.index.lancedb_store import LanceDBStore
from kireme.index.search import Searcher
from kireme.index.store import StoredChunk
from kireme.strategies import make_chunker

DIM = 32


def clustered(n: int, seed: int, clusters: int = 24) -> np.ndarray:
    """Unit vectors around ``clusters`` centres: the shape real embeddings have (topics), not uniform noise."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, DIM))
    vectors = centres[rng.integers(0, clusters, size=n)] + 0.35 * rng.normal(size=(n, DIM))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float32)


def rows(first: int, n: int, documents: int = 7) -> list[StoredChunk]:
    return [
        StoredChunk(
            id=f"c{i:06d}",
            doc_id=f"doc{i % documents}",
            index=i // documents,
            start=0,
            end=4,
            text="本文です",
            embed_text="本文です",
            source=f"doc{i % documents}.md",
        )
        for i in range(first, first + n)
    ]


@pytest.fixture()
def small_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    """One partition per 200 rows (3000 rows: 15), so the index really partitions at test sizes."""
    monkeypatch.setattr(ann, "ANN_ROWS_PER_PARTITION", 200)


def ids(hits: list) -> list[str]:
    return [h.chunk.id for h in hits]


def test_no_index_below_the_threshold_and_one_on_request(tmp_path: Path) -> None:
    store = LanceDBStore(tmp_path / "s", dimension=DIM)
    store.add(rows(0, 3000), clustered(3000, 1))
    store.optimize()
    assert store.vector_index() is None  # "auto": 3000 rows are far below ANN_MIN_ROWS
    store.optimize(ann="always")
    index = store.vector_index()
    assert index is not None and index.ours
    assert (index.kind, index.indexed_rows, index.unindexed_rows, index.trained_rows) == (
        "IVF_SQ",
        3000,
        0,
        3000,
    )
    names = {ix.name: ix.columns for ix in store._table.list_indices()}
    assert names["id_idx"] == ["id"] and names["doc_id_idx"] == ["doc_id"]  # lookups and deletions
    assert names["vector_ivfsq_p1_n3000"] == ["vector"]  # what it was trained on, in its name


def test_the_automatic_threshold_builds_it_at_the_end_of_an_index_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lancedb_store, "ANN_MIN_ROWS", 300)  # 30 files x 12 paragraphs: 360 rows
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(30):
        body = "\n\n".join(f"第{j}条 出張{i}の宿泊費は{1000 * j + i}円を上限とする。" for j in range(1, 13))
        (docs / f"規程{i:02d}.md").write_text(body, encoding="utf-8")
    files = sorted(docs.iterdir())
    chunker = make_chunker("paragraph", max_size=40)
    with Ingestor(tmp_path / "db", chunker, HashedNgramEmbedder(DIM)) as ingestor:
        ingest_paths(ingestor, files[:10])
        assert ingestor.store.vector_index() is None  # built when the run closes, not per batch
    store = LanceDBStore(tmp_path / "db" / "lancedb", create=False)
    assert store.count() < 300 and store.vector_index() is None
    with Ingestor(tmp_path / "db", chunker, HashedNgramEmbedder(DIM)) as ingestor:
        ingest_paths(ingestor, files)
    store = LanceDBStore(tmp_path / "db" / "lancedb", create=False)
    index = store.vector_index()
    assert store.count() >= 300 and index is not None and index.indexed_rows == store.count()
    searcher = Searcher(tmp_path / "db", embedder=HashedNgramEmbedder(DIM))
    try:
        hits = searcher.search("出張7の宿泊費は5007円", 3, "dense")
        exact = searcher.search("出張7の宿泊費は5007円", 3, "dense", exact=True)
    finally:
        searcher.close()
    assert ids(hits) == ids(exact)
    assert "5007円" in hits[0].chunk.text


def test_index_search_finds_what_the_exact_scan_finds(tmp_path: Path, small_partitions: None) -> None:
    store = LanceDBStore(tmp_path / "s", dimension=DIM)
    vectors = clustered(3000, 2)
    store.add(rows(0, 3000), vectors)
    store.optimize(ann="always")
    index = store.vector_index()
    assert index is not None and index.partitions == 15 and index.probes == 9
    queries = clustered(30, 3)
    recall = []
    for query in queries:
        approximate = ids(store.search(query, 10))
        exact = ids(store.search(query, 10, exact=True))
        truth = [f"c{i:06d}" for i in np.argsort(-(vectors @ query), kind="stable")[:10]]
        assert exact == truth  # exact really is the full scan
        recall.append(len(set(approximate) & set(exact)) / 10)
    assert np.mean(recall) >= 0.9, recall


def test_rows_added_after_the_index_are_found_then_indexed_and_growth_retrains(
    tmp_path: Path, small_partitions: None
) -> None:
    store = LanceDBStore(tmp_path / "s", dimension=DIM)
    store.add(rows(0, 1000), clustered(1000, 4))
    store.optimize(ann="always")
    assert store.vector_index().partitions == 5  # type: ignore[union-attr]
    added = clustered(1000, 5)
    store.add(rows(1000, 1000), added)
    index = store.vector_index()
    assert index is not None and (index.indexed_rows, index.unindexed_rows) == (1000, 1000)
    assert ids(store.search(added[7], 1)) == ["c001007"]  # not yet indexed, found by the scan of new rows
    store.optimize()  # "auto" keeps the index: 2000 rows < 4 x 1000
    index = store.vector_index()
    assert index is not None and (index.indexed_rows, index.unindexed_rows) == (2000, 0)
    assert (index.trained_rows, index.partitions) == (1000, 5)
    assert ids(store.search(added[7], 1)) == ["c001007"]
    store.add(rows(2000, 2000), clustered(2000, 6))
    store.optimize()  # 4000 rows = 4 x the training size: trained again, more partitions
    index = store.vector_index()
    assert index is not None and (index.trained_rows, index.partitions, index.unindexed_rows) == (4000, 20, 0)


def test_never_drops_the_index_and_searches_exactly(tmp_path: Path) -> None:
    store = LanceDBStore(tmp_path / "s", dimension=DIM)
    vectors = clustered(600, 7)
    store.add(rows(0, 600), vectors)
    store.optimize(ann="always")
    assert store.vector_index() is not None
    store.optimize(ann="never")
    assert store.vector_index() is None and [ix.columns for ix in store._table.list_indices()] == [
        ["doc_id"],
        ["id"],
    ]
    assert ids(store.search(vectors[5], 1)) == ["c000005"]
    with pytest.raises(ValueError, match="auto, always, never"):
        store.optimize(ann="sometimes")  # type: ignore[arg-type]


def test_a_filter_the_probed_partitions_cannot_fill_falls_back_to_the_exact_scan(
    tmp_path: Path, small_partitions: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ann, "ANN_PROBE_SHARE", 0.01)  # one partition of 15 read per query
    store = LanceDBStore(tmp_path / "s", dimension=DIM)
    vectors = clustered(3000, 8)
    store.add(rows(0, 3000, documents=300), vectors)
    store.optimize(ann="always")
    where = {"source": "doc123.md"}  # 10 rows, spread over the partitions
    exact = ids(store.search(vectors[0], 10, where, exact=True))
    assert len(exact) == 10
    assert sorted(ids(store.search(vectors[0], 10, where))) == sorted(exact)


def test_a_small_table_is_never_trained(tmp_path: Path) -> None:
    store = LanceDBStore(tmp_path / "s", dimension=DIM)
    store.add(rows(0, 100), clustered(100, 9))
    store.optimize(ann="always")  # below ANN_MIN_TRAIN_ROWS: logged, searches stay exact
    assert store.vector_index() is None


def test_cli_optimize_check_exact_and_no_optimize(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(30):
        lines = [
            f"Section {j} of handbook {i}: the travel allowance is {100 * j + i} dollars." for j in range(12)
        ]
        (docs / f"handbook{i:02d}.txt").write_text("\n\n".join(lines), encoding="utf-8")
    db = str(tmp_path / "db")
    base = ["--db", db, "--embedder", f"hash:{DIM}", "--strategy", "paragraph", "--max-size", "30", "--quiet"]
    runner = CliRunner()
    result = runner.invoke(cli, ["index", str(docs), *base])
    assert result.exit_code == 0, result.output
    check = runner.invoke(cli, ["check", "--db", db])
    assert check.exit_code == 0 and "vector index" not in check.output  # 360 rows: no index, nothing to say

    result = runner.invoke(cli, ["index", str(docs), *base, "--optimize"])  # nothing changed, built anyway
    assert result.exit_code == 0, result.output
    assert "0 chunks written" in result.output
    check = runner.invoke(cli, ["check", "--db", db])
    assert check.exit_code == 0, check.output
    assert "IVF_SQ: 360 rows in 1 partition(s), 1 read per query" in check.output

    query = ["search", "handbook 17 allowance 517 dollars", "--db", db, "--mode", "dense", "-k", "3"]
    approximate = runner.invoke(cli, [*query, "--format", "jsonl"])
    exact = runner.invoke(cli, [*query, "--format", "jsonl", "--exact"])
    assert approximate.exit_code == exact.exit_code == 0
    first = [json.loads(line)["id"] for line in approximate.output.splitlines()]
    assert first == [json.loads(line)["id"] for line in exact.output.splitlines()]
    assert len(first) == 3
    no_chat = {
        f"{side}_{key}": None
        for side in ("KIREME_CHAT", "OPENAI")
        for key in ("BASE_URL", "MODEL", "API_KEY")
    }
    question = ["ask", "What is the allowance in handbook 17?", "--db", db, "--exact", "-k", "2"]
    asked = runner.invoke(cli, question, env=no_chat)
    assert asked.exit_code == 0 and "allowance" in asked.output  # no chat model here: the context is printed

    result = runner.invoke(cli, ["index", str(docs), *base, "--no-optimize"])
    assert result.exit_code == 0, result.output
    assert LanceDBStore(Path(db) / "lancedb", create=False).vector_index() is None
    assert "vector index" not in runner.invoke(cli, ["check", "--db", db]).output
    monkeypatch.setattr(check_module, "ANN_MIN_ROWS", 300)  # past the threshold without one: said so
    check = runner.invoke(cli, ["check", "--db", db])
    assert check.exit_code == 0 and "none: every dense search scans all 360 rows" in check.output


def test_check_reports_an_index_made_outside_kireme_and_repair_trains_it(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(30):
        (docs / f"n{i:02d}.txt").write_text(
            "\n\n".join(f"Note {j} of folder {i}: room {j} opens at {i} o'clock." for j in range(12)),
            encoding="utf-8",
        )
    db = tmp_path / "db"
    base = ["--db", str(db), "--embedder", f"hash:{DIM}", "--strategy", "paragraph", "--max-size", "30"]
    runner = CliRunner()
    assert runner.invoke(cli, ["index", str(docs), *base, "--quiet", "--optimize"]).exit_code == 0
    from lancedb.index import IvfSq

    store = LanceDBStore(db / "lancedb")  # as if someone replaced it by their own, with table.create_index
    store._drop_vector_indexes()
    store._table.create_index("vector", config=IvfSq(distance_type="cosine", num_partitions=2), name="mine")
    index = store.vector_index()
    assert index is not None and not index.ours
    assert store._indexed_partitions() is None  # searches do not read an index whose training is unknown
    check = runner.invoke(cli, ["check", "--db", str(db)])
    assert check.exit_code != 0 and "made outside kireme" in check.output
    repaired = runner.invoke(cli, ["check", "--db", str(db), "--repair"])
    assert repaired.exit_code == 0, repaired.output
    assert "trained again by kireme" in repaired.output
    assert "1 read per query" in runner.invoke(cli, ["check", "--db", str(db)]).output


def test_exact_on_chroma_is_a_usage_error(tmp_path: Path) -> None:
    pytest.importorskip("chromadb")
    (tmp_path / "a.txt").write_text("旅費の精算は翌月10日までに行う。", encoding="utf-8")
    db = str(tmp_path / "db")
    runner = CliRunner()
    result = runner.invoke(
        cli, ["index", str(tmp_path / "a.txt"), "--db", db, "--store", "chroma", "--embedder", "hash"]
    )
    assert result.exit_code == 0, result.output
    result = runner.invoke(cli, ["search", "精算", "--db", db, "--exact"])
    assert result.exit_code == 2
    assert "exact search needs the lancedb store" in result.output
