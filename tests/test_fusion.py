"""Hybrid search's fusion (`kireme.fusion`): each method by hand on tiny rankings, the default's behaviour,
and the same answer from `kireme search` (`kireme.index.search.fuse`) and the evaluation retriever."""

from __future__ import annotations

import pytest

from kireme.errors import ConfigError
from kireme.fusion import DEFAULT_FUSION, FUSION_METHODS, OWA, RRF, ZSCORE, Fusion, fuse_scores


def ranked(scores: dict[str, float]) -> list[str]:
    return sorted(scores, key=lambda key: (-scores[key], key))


# ------------------------------------------------------------------------------------------- methods


def test_rrf_adds_weight_over_k_plus_rank() -> None:
    lexical = [("a", 12.0), ("b", 7.0)]
    dense = [("b", 0.9), ("c", 0.8)]
    got = fuse_scores([lexical, dense], Fusion("rrf", (2.0, 1.0), k=10))
    assert got == pytest.approx({"a": 2 / 11, "b": 2 / 12 + 1 / 11, "c": 1 / 12})
    # equal weights, k=60: the fusion of earlier versions
    old = fuse_scores([lexical, dense], RRF)
    assert old == pytest.approx({"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 62})


def test_minmax_scales_each_list_to_its_own_range() -> None:
    lexical = [("a", 12.0), ("b", 7.0), ("c", 2.0)]  # a 1, b 0.5, c 0
    dense = [("c", 0.90), ("d", 0.80), ("a", 0.70)]  # c 1, d 0.5, a 0
    got = fuse_scores([lexical, dense], Fusion("minmax", (0.6, 0.4)))
    assert got == pytest.approx({"a": 0.6, "b": 0.3, "c": 0.4, "d": 0.2})
    # one candidate, or all equal: each is its list's best
    assert fuse_scores([[("x", 3.0)], []], Fusion("minmax", (0.5, 0.5))) == {"x": 0.5}


def test_zscore_gives_an_absent_candidate_the_lists_lowest_score() -> None:
    lexical = [("a", 3.0), ("b", 1.0)]  # z: a +1, b -1
    dense = [("c", 0.5), ("a", 0.5)]  # all equal: +1 each, -1 for a candidate it lacks (b)
    got = fuse_scores([lexical, dense], Fusion("zscore", (1.0, 1.0)))
    assert got == pytest.approx({"a": 2.0, "b": -2.0, "c": 0.0})  # c: lexical floor -1, dense +1


def test_a_sole_keyword_match_counts_in_the_z_score_average() -> None:
    """One BM25 hit standardised to 0, as the candidates BM25 lacks were: the query's only keyword match
    added nothing, and the dense side's first hit (a spec table, for ``休日出勤の割増率``) won."""
    lexical = [("rule", 7.2)]
    dense = [("table", 0.61), ("faq", 0.55), ("rule", 0.52), ("other", 0.40)]
    got = fuse_scores([lexical, dense], ZSCORE)
    assert max(got, key=got.__getitem__) == "rule"


def test_owa_weights_each_candidates_better_z_score_then_its_worse() -> None:
    lexical = [("a", 3.0), ("b", 2.0), ("c", 1.0)]  # z: a +1.22, b 0, c -1.22
    dense = [("c", 0.9), ("d", 0.5), ("b", 0.1)]  # z: c +1.22, d 0, b -1.22
    z = 1.5**0.5
    got = fuse_scores([lexical, dense], Fusion("owa", (2.0, 1.0)))
    # a: lexical +z, dense absent -> its lowest -z; b: 0 and -z; c: -z and +z; d: lexical lowest -z, dense 0
    assert got == pytest.approx({"a": z / 3, "b": -z / 3, "c": z / 3, "d": -z / 3})
    # the order of the lists does not matter, only the order of each candidate's own scores
    assert fuse_scores([dense, lexical], Fusion("owa", (2.0, 1.0))) == pytest.approx(got)
    # weights are normalised; (1, 1) is the z-score average, (1, 0) the better side alone (CombMAX)
    assert fuse_scores([lexical, dense], Fusion("owa", (4.0, 2.0))) == pytest.approx(got)
    assert fuse_scores([lexical, dense], Fusion("owa", (1.0, 1.0))) == pytest.approx(
        fuse_scores([lexical, dense], ZSCORE)
    )
    assert fuse_scores([lexical, dense], Fusion("owa", (1.0, 0.0))) == pytest.approx(
        {"a": z, "b": 0.0, "c": z, "d": 0.0}
    )
    # one list empty: the other's standardised scores, in its order
    assert fuse_scores([[], dense], Fusion("owa", (2.0, 1.0))) == pytest.approx({"c": z, "d": 0.0, "b": -z})
    assert "owa" in FUSION_METHODS


def test_affine_changes_of_a_sides_scores_change_nothing_but_rrf_ignores_scores_entirely() -> None:
    lexical = [("a", 10.0), ("b", 6.0), ("c", 1.0)]
    dense = [("b", 0.8), ("c", 0.75), ("a", 0.2)]
    shifted = [(key, 3 * score + 5) for key, score in lexical]
    for fusion in (Fusion("minmax", (0.6, 0.4)), Fusion("zscore", (0.6, 0.4)), DEFAULT_FUSION):
        assert fuse_scores([lexical, dense], fusion) == pytest.approx(fuse_scores([shifted, dense], fusion))
    flat = [(key, 1.0) for key, _ in lexical]
    assert fuse_scores([lexical, dense], RRF) == fuse_scores([flat, dense], RRF)


def test_bad_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="unknown fusion"):
        Fusion("borda")
    with pytest.raises(ConfigError, match="weights"):
        Fusion("rrf", (1.0, -1.0))
    with pytest.raises(ConfigError, match="k >= 0"):
        Fusion("rrf", k=-1)
    with pytest.raises(ConfigError, match="3 rankings"):
        fuse_scores([[], [], []], Fusion("rrf", (1.0, 1.0)))
    assert fuse_scores([[], []], DEFAULT_FUSION) == {}
    assert Fusion("rrf", (1.0, 1.0), depth=50).wide(5) == 50
    assert Fusion("rrf", (1.0, 1.0), depth=50).wide(40) == 120


# ------------------------------------------------------------------------------------------- default


def test_the_default_is_the_measured_zscore_average_and_the_ordered_one_is_kept() -> None:
    assert Fusion("zscore", (0.5, 0.5), k=60, depth=50) == DEFAULT_FUSION == ZSCORE
    assert DEFAULT_FUSION.label == "zscore 0.5:0.5"
    assert Fusion("owa", (2.0, 1.0), k=60, depth=50) == OWA
    assert OWA.label == "owa 2:1"


def test_the_default_keeps_bm25s_first_where_the_ordered_average_takes_the_dense_sides_first() -> None:
    # scores of tests/test_index_hardening.py's index (model-free hash:256 embedder, 60 documents of
    # numbered provisions): BM25's first is the provision the query names, its fourth is the dense side's
    # first; the dense side ranks the right one third. The average keeps BM25's; the ordered average,
    # counting each chunk's better z-score twice, takes the dense side's (why it is not the default)
    b = [1.558] * 2 + [1.384] * 8 + [1.371] * 12 + [0.962] * 2 + [0.951] * 12 + [0.937] * 14
    d = [0.507, 0.493, 0.493, 0.481, 0.479, 0.478, 0.477, 0.475, 0.474, 0.471, 0.471, 0.467, 0.44, 0.439]
    d += [0.436, 0.428, 0.426, 0.425, 0.424, 0.423, 0.422, 0.421, 0.421, 0.421, 0.42, 0.42, 0.419, 0.419]
    d += [0.418, 0.417, 0.417, 0.411, 0.411, 0.411, 0.411, 0.411, 0.41, 0.41, 0.409, 0.408, 0.408, 0.408]
    d += [0.407] * 6 + [0.406] * 2
    lexical = [("right", b[0]), ("other law", b[1]), ("near", b[2])] + [
        (f"l{i}", v) for i, v in enumerate(b[3:])
    ]
    dense = [("near", d[0]), ("d", d[1]), ("right", d[2])] + [(f"d{i}", v) for i, v in enumerate(d[3:])]
    assert ranked(fuse_scores([lexical, dense], DEFAULT_FUSION))[0] == "right"
    assert ranked(fuse_scores([lexical, dense], OWA))[0] == "near"


def test_a_side_sure_of_a_chunk_lifts_it_where_the_zscore_average_lets_the_other_side_bury_it() -> None:
    # the law QA case: BM25 is sure of chunk h (a long chunk sharing many of the query's terms), dense
    # ranks the answer a third, far above its mean, and a is outside BM25's candidates. The average sinks
    # a below five chunks; the ordered average keeps it in the top 5, the better side counting twice.
    tail = [(f"x{i}", 6.0 - 0.1 * i) for i in range(12)]
    lexical = [("h", 18.0), ("g", 15.0), ("m", 9.2), ("n", 9.0), *tail]
    dense = [("p", 0.908), ("q", 0.905), ("a", 0.904), ("m", 0.898), ("n", 0.894), ("g", 0.893), ("h", 0.889)]
    dense += [(f"y{i}", 0.888 - 0.001 * i) for i in range(9)]
    assert ranked(fuse_scores([lexical, dense], OWA)).index("a") < 5
    assert ranked(fuse_scores([lexical, dense], ZSCORE)).index("a") >= 5
    # weights on the lists instead of on the order (lexical 2/3, dense 1/3) would sink it further
    assert ranked(fuse_scores([lexical, dense], Fusion("zscore", (2 / 3, 1 / 3)))).index("a") >= 5


def test_a_chunk_second_on_both_sides_beats_one_first_on_one_side_when_the_scores_are_close() -> None:
    # BM25 barely prefers a to c; dense barely prefers b to c: c is near the top of both, a and b of one
    lexical = [("a", 10.0), ("c", 9.5), ("x", 3.0), ("y", 2.0)]
    dense = [("b", 0.86), ("c", 0.85), ("y", 0.60), ("x", 0.55)]
    assert ranked(fuse_scores([lexical, dense], DEFAULT_FUSION))[0] == "c"
    assert ranked(fuse_scores([lexical, dense], RRF))[0] == "c"  # RRF: 2nd + 2nd always beats 1st alone


def test_a_clear_winner_on_one_side_stays_first_where_rrf_would_demote_it() -> None:
    # BM25 finds one chunk far above the other ten (a rare term matched); dense ranks without a standout
    others = "defghijk"
    lexical = [("a", 30.0), ("c", 6.0), *((o, 5.5 - 0.2 * i) for i, o in enumerate(others))]
    dense = [("b", 0.86), ("c", 0.85), *((o, 0.84 - 0.01 * i) for i, o in enumerate(others))]
    assert ranked(fuse_scores([lexical, dense], DEFAULT_FUSION))[:3] == ["a", "b", "c"]
    assert ranked(fuse_scores([lexical, dense], RRF))[0] == "c"  # rank-only: 2nd + 2nd beats 1st alone


def test_one_side_alone_keeps_its_order() -> None:
    dense = [("b", 0.9), ("a", 0.7), ("c", 0.1)]
    assert ranked(fuse_scores([[], dense], DEFAULT_FUSION)) == ["b", "a", "c"]
    assert ranked(fuse_scores([dense[:1], []], DEFAULT_FUSION)) == ["b"]


def test_search_and_the_evaluation_retriever_fuse_alike() -> None:
    """`kireme.index.search.fuse` (hits of an index) and `FusionRetriever` (chunk numbers) give the same
    order for the same candidates and scores, for every method."""
    from kireme.evaluate.retrievers import fused
    from kireme.index.search import fuse
    from kireme.index.store import Hit, StoredChunk

    lexical = [(3, 7.5), (0, 7.0), (7, 2.0), (2, 1.0)]
    dense = [(7, 0.91), (3, 0.90), (5, 0.4), (0, 0.35), (1, 0.1)]

    def hits(ranking: list[tuple[int, float]]) -> list[Hit]:
        return [
            Hit(StoredChunk(id=f"c{i}", doc_id="d", index=i, start=0, end=1, text="x", embed_text="x"), s)
            for i, s in ranking
        ]

    others = (Fusion("minmax", (0.6, 0.4)), Fusion("rrf", (2.0, 1.0), k=10), Fusion("owa", (3.0, 1.0)))
    for fusion in (DEFAULT_FUSION, OWA, RRF, *others):
        expected = [int(h.chunk.id[1:]) for h in fuse([hits(lexical), hits(dense)], 6, fusion)]
        assert fused([lexical, dense], 6, fusion) == expected, fusion
