"""`KiremeTextSplitter` inside real LangChain: exact offsets, headings, options, copies, the missing extra."""

from __future__ import annotations

import copy
import importlib
import pickle
import sys

import pytest

pytest.importorskip("langchain_text_splitters")

from langchain_core.documents import Document as LCDocument
from langchain_text_splitters import TextSplitter
from tests.integration_texts import ALLOWANCE, REPEATED, ROOT

import kireme
from kireme import ConfigError
from kireme.integrations.langchain import KiremeTextSplitter
from kireme.load import load


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


@pytest.mark.parametrize("strategy", sorted(kireme.STRATEGIES))
def test_every_strategy_gives_kiremes_chunks(strategy: str) -> None:
    text = ALLOWANCE.read_text(encoding="utf-8")
    options = {"max_size": 90, **({"similarity": "bigram"} if strategy == "semantic" else {})}
    docs = KiremeTextSplitter(strategy, add_start_index=True, **options).create_documents(
        [text], [{"source": "rules.md"}]
    )
    assert_exact(text, docs)
    expected = kireme.chunk(kireme.Document(text, "rules.md", {"format": "markdown"}), strategy, **options)
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


def test_langchains_tokenizer_constructors_build_a_kireme_splitter(monkeypatch: pytest.MonkeyPatch) -> None:
    tokens = kireme.Tokens()  # LangChain's tiktoken would download its table; kireme's is bundled
    monkeypatch.setattr(KiremeTextSplitter, "_tiktoken_length_function", staticmethod(lambda *a, **k: tokens))
    splitter = KiremeTextSplitter.from_tiktoken_encoder(encoding_name="cl100k_base", chunk_size=40)
    assert isinstance(splitter, KiremeTextSplitter)
    assert splitter.options == {"max_size": 40, "unit": tokens}
    text = (ROOT / "examples" / "travel-rules.txt").read_text(encoding="utf-8")
    assert splitter.split_text(text) == KiremeTextSplitter(max_size=40, unit="tokens").split_text(text)


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
        ({"keep_separator": True}, "keep_separator"),
    ],
)
def test_bad_options_fail_when_the_splitter_is_made(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        KiremeTextSplitter(**kwargs)  # type: ignore[arg-type]


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
