"""`KiremeNodeParser` inside real LlamaIndex: exact offsets that survive the parser's own search,
relationships, flat metadata, IngestionPipeline, copies and serialization, the missing extra."""

from __future__ import annotations

import copy
import importlib
import pickle
import sys

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Document
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import MetadataMode, NodeRelationship, TextNode
from llama_index.core.vector_stores.utils import node_to_metadata_dict
from tests.integration_texts import ALLOWANCE, REPEATED

import kireme
from kireme import ConfigError
from kireme.integrations.llama_index import EXCLUDED_METADATA_KEYS, KiremeNodeParser


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
        ({"chunk_size": 200}, "chunk_size"),
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
