"""`KiremeDocumentSplitter` inside real Haystack: exact ``split_idx_start``, Haystack's meta keys, pages,
overlaps, a Pipeline and its YAML, the missing extra."""

from __future__ import annotations

import importlib
import sys

import pytest

pytest.importorskip("haystack")

from haystack import Document, Pipeline
from haystack.components.preprocessors import DocumentCleaner
from haystack.core.errors import DeserializationError
from tests.integration_texts import ALLOWANCE, REPEATED, ROOT

import kireme
from kireme import ConfigError
from kireme.integrations.haystack import KiremeDocumentSplitter


def assert_exact(text: str, docs: list[Document]) -> None:
    """Every split is the slice its offsets name, numbered in order."""
    assert docs
    for i, doc in enumerate(docs):
        start, end = doc.meta["split_idx_start"], doc.meta["split_idx_end"]
        assert text[start:end] == doc.content
        assert doc.meta["split_id"] == i
    starts = [d.meta["split_idx_start"] for d in docs]
    assert starts == sorted(starts)


def test_a_repeated_sentence_gets_its_own_offset() -> None:
    source = Document(content=REPEATED, meta={"file_path": "memo.txt", "dept": "経理"})
    docs = KiremeDocumentSplitter("paragraph", merge_paragraphs=False).run(documents=[source])["documents"]
    assert_exact(REPEATED, docs)
    second = REPEATED.index("承知しました。", REPEATED.index("承知しました。") + 1)
    assert docs[1].content == "承知しました。"
    assert docs[1].meta["split_idx_start"] == second
    for doc in docs:
        assert doc.meta["source_id"] == source.id
        assert doc.meta["dept"] == "経理"
        assert doc.meta["page_number"] == 1
        assert doc.meta["headings"] == []
        assert len(doc.meta["chunk_id"]) == 32
    assert len({d.id for d in docs}) == len(docs)


def test_markdown_headings_and_embed_text_content() -> None:
    text = ALLOWANCE.read_text(encoding="utf-8")
    source = Document(content=text, meta={"file_path": "examples/travel-allowance.md"})
    docs = KiremeDocumentSplitter("markdown", max_size=120).run(documents=[source])["documents"]
    assert_exact(text, docs)
    expected = kireme.chunk(kireme.Document(text, metadata={"format": "markdown"}), "markdown", max_size=120)
    assert [d.meta["headings"] for d in docs] == [list(c.headings) for c in expected]
    lodging = next(d for d in docs if "18,000円" in (d.content or ""))
    assert lodging.meta["headings"] == ["出張旅費規程", "第2章 宿泊"]
    assert lodging.meta["title"] == "出張旅費規程"

    embedded = KiremeDocumentSplitter("markdown", max_size=120, content="embed_text").run(documents=[source])
    closing = next(d for d in embedded["documents"] if "領収書のない支出" in (d.content or ""))
    start, end = closing.meta["split_idx_start"], closing.meta["split_idx_end"]
    assert closing.content is not None and closing.content.endswith(text[start:end])
    assert "第3章 精算" in closing.content[: -(end - start)]


def test_page_numbers_count_form_feeds() -> None:
    pages = [
        "第1条　この規程は出張に適用する。",
        "第2条　宿泊費は実費とする。",
        "",
        "第3条　日当は二千円とする。",
    ]
    text = "\f".join(pages)
    docs = KiremeDocumentSplitter("sentence", max_size=16).run(documents=[Document(content=text)])[
        "documents"
    ]
    assert_exact(text, docs)
    for doc in docs:
        assert doc.meta["page_number"] == 1 + text.count("\f", 0, doc.meta["split_idx_start"])
    assert [d.meta["page_number"] for d in docs if "第3条" in (d.content or "")] == [4]


def test_overlap_is_recorded_as_haystack_does() -> None:
    text = "規則を守ること。" * 6 + "\n\n" + "Keep the rules. " * 5
    docs = KiremeDocumentSplitter("sentence", max_size=30, overlap=10).run(
        documents=[Document(content=text)]
    )["documents"]
    assert_exact(text, docs)
    by_id = {d.id: d for d in docs}
    shared = 0
    for doc in docs:
        for link in doc.meta["_split_overlap"]:
            other = by_id[link["doc_id"]]
            a, b = link["range"]
            piece = other.content[a:b]  # type: ignore[index]
            assert piece and (doc.content.startswith(piece) or doc.content.endswith(piece))  # type: ignore[union-attr]
            shared += 1
    assert shared >= 2


def test_token_unit() -> None:
    text = (ROOT / "examples" / "travel-rules.txt").read_text(encoding="utf-8")
    docs = KiremeDocumentSplitter("recursive", unit="tokens", max_size=48).run(
        documents=[Document(content=text)]
    )["documents"]
    assert len(docs) > 3
    assert_exact(text, docs)
    tokens = kireme.Tokens()
    assert all(tokens(d.content or "") <= 48 for d in docs)


def test_in_a_pipeline_and_through_yaml() -> None:
    pipe = Pipeline()
    pipe.add_component("cleaner", DocumentCleaner(remove_empty_lines=False, remove_extra_whitespaces=False))
    pipe.add_component("splitter", KiremeDocumentSplitter("markdown", max_size=100, unit="tokens"))
    pipe.connect("cleaner.documents", "splitter.documents")
    text = ALLOWANCE.read_text(encoding="utf-8")
    source = Document(content=text, meta={"file_path": "travel-allowance.md"})
    docs = pipe.run({"cleaner": {"documents": [source]}})["splitter"]["documents"]
    assert len(docs) > 3
    cleaned = text  # the cleaner keeps this text as it is with these settings
    assert_exact(cleaned, docs)

    yaml = pipe.dumps()
    assert "kireme.integrations.haystack.KiremeDocumentSplitter" in yaml
    with pytest.raises(DeserializationError, match="allowlist"):  # Haystack trusts only its own modules
        Pipeline.loads(yaml)
    loaded = Pipeline.loads(yaml, allowed_modules=["kireme.*"])
    again = loaded.run({"cleaner": {"documents": [source]}})["splitter"]["documents"]
    assert [(d.content, d.meta) for d in again] == [(d.content, d.meta) for d in docs]


def test_to_dict_and_from_dict() -> None:
    splitter = KiremeDocumentSplitter("paragraph", max_size=200, merge_paragraphs=False, format="text")
    data = splitter.to_dict()
    assert data == {
        "type": "kireme.integrations.haystack.KiremeDocumentSplitter",
        "init_parameters": {
            "strategy": "paragraph",
            "content": "text",
            "format": "text",
            "max_size": 200,
            "merge_paragraphs": False,
        },
    }
    restored = KiremeDocumentSplitter.from_dict(data)
    source = [Document(content=REPEATED)]
    assert restored.run(documents=source) == splitter.run(documents=source)
    with pytest.raises(ConfigError, match="unit"):
        KiremeDocumentSplitter(unit=len).to_dict()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"strategy": "chapters"}, "unknown strategy"),
        ({"strategy": "paragraph", "table": "rows"}, "table"),
        ({"max_size": 0}, "max_size"),
        ({"unit": "words"}, "words"),
        ({"content": "html"}, "content"),
        ({"format": "rtf"}, "unknown format"),
        ({"split_length": 200}, "split_length"),
    ],
)
def test_bad_options_fail_when_the_component_is_made(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        KiremeDocumentSplitter(**kwargs)  # type: ignore[arg-type]


def test_empty_and_contentless_documents() -> None:
    splitter = KiremeDocumentSplitter()
    assert splitter.run(documents=[Document(content=""), Document(content=" \n ")]) == {"documents": []}
    with pytest.raises(TypeError, match="no text content"):
        splitter.run(documents=[Document(content=None)])
    with pytest.raises(TypeError, match="list of Haystack Documents"):
        splitter.run(documents=["not a document"])  # type: ignore[list-item]


def test_importing_without_haystack_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "haystack", None)
    monkeypatch.delitem(sys.modules, "kireme.integrations.haystack")
    with pytest.raises(ImportError, match=r"pip install 'kireme\[haystack\]'"):
        importlib.import_module("kireme.integrations.haystack")
