"""Ids are worked out when first read: a document chunked for its texts alone is never hashed, and the ids
read later are the ids chunking always gave (`chunk_id`); chunks dropped unread are freed at once."""

from __future__ import annotations

import copy
import gc
import pickle
import weakref
from collections.abc import Iterator

import pytest

import kireme.document as document_module
from kireme import Document, make_chunker
from kireme.document import Chunk, chunk_id, content_hash

RULES = (
    "第1条 この規程は、社員の国内出張に適用する。\n\n"
    "第2条 宿泊費の上限は1泊12,000円とする。ただし、東京都内は14,000円とする。\n\n"
    "第3条 日当は1日2,000円とする。The allowance is paid with the salary of the next month.\n"
) * 6


@pytest.fixture
def hashing_forbidden(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any content hash asked for fails the test that asks."""

    def refuse(text: str) -> str:
        raise AssertionError("the document was hashed")

    monkeypatch.setattr(document_module, "content_hash", refuse)
    yield


@pytest.mark.usefixtures("hashing_forbidden")
@pytest.mark.parametrize("strategy", ["fixed", "recursive", "paragraph", "sentence", "markdown"])
def test_chunking_for_texts_never_hashes_the_document(strategy: str) -> None:
    fmt = {"format": "markdown"} if strategy == "markdown" else {}
    chunks = make_chunker(strategy, max_size=80).chunk(Document(RULES, metadata=fmt))
    assert len(chunks) > 5
    assert "".join("".join(c.text for c in chunks).split()) == "".join(RULES.split())
    assert all(RULES[c.start : c.end] == c.text for c in chunks)


@pytest.mark.parametrize("strategy", ["fixed", "recursive", "markdown"])
def test_ids_read_later_are_the_ids_of_the_document_and_span(strategy: str) -> None:
    chunker = make_chunker(strategy, max_size=80)
    doc = Document(RULES)
    chunks = chunker.chunk(doc)
    assert "id" not in vars(doc)  # not hashed yet
    assert doc.id == "sha256:" + content_hash(RULES)[:16]
    config = chunker.for_document(doc).config_hash  # the chunker chunk() cuts this document with
    assert [c.id for c in chunks] == [chunk_id(doc, config, c.start, c.end) for c in chunks]
    assert {c.doc_id for c in chunks} == {doc.id}
    assert len({c.id for c in chunks}) == len(chunks)


def test_each_chunk_gets_its_id_when_read_and_the_document_is_hashed_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hashed: list[int] = []

    def counted(text: str) -> str:
        hashed.append(len(text))
        return content_hash(text)

    chunks = make_chunker("recursive", max_size=60).chunk(RULES)
    monkeypatch.setattr(document_module, "content_hash", counted)
    assert all("_ids" in vars(c) and "id" not in vars(c) for c in chunks)
    last = chunks[-1].doc_id  # read out of order: each chunk its own
    assert last.startswith("sha256:") and "_ids" not in vars(chunks[-1]) and "_ids" in vars(chunks[0])
    ids = [c.id for c in chunks]
    assert hashed == [len(RULES)]  # the document once, for all of its chunks
    for c, made in zip(chunks, ids, strict=True):  # plain values now: the ids object (and the text) let go
        assert (
            "_ids" not in vars(c) and vars(c)["doc_id"] == last and vars(c)["id"] == made and len(made) == 32
        )


@pytest.mark.parametrize("strategy", ["fixed", "recursive", "markdown"])
def test_chunks_dropped_unread_are_freed_without_the_cycle_collector(strategy: str) -> None:
    """Nothing points back from a document's ids to its chunks: no reference cycle is left for the
    collector (a chunker making millions of chunks would otherwise make as much cyclic garbage)."""
    chunker = make_chunker(strategy, max_size=60)
    gc.collect()
    gc.disable()
    try:
        chunks = chunker.chunk(Document(RULES, metadata={"format": "markdown"}))
        held = [weakref.ref(c) for c in chunks]
        del chunks
        assert all(r() is None for r in held)
    finally:
        gc.enable()


def test_a_given_document_id_is_kept_and_only_the_content_hash_waits() -> None:
    doc = Document(RULES, id="規程/出張.md")
    chunks = make_chunker("recursive", max_size=60).chunk(doc)
    assert "_sha256" not in vars(doc)
    assert chunks[1].doc_id == "規程/出張.md"
    config = make_chunker("recursive", max_size=60).for_document(doc).config_hash
    assert chunks[1].id == chunk_id(doc, config, chunks[1].start, chunks[1].end)


def test_chunks_travel_with_their_ids_and_compare_equal() -> None:
    chunks = make_chunker("sentence", max_size=50).chunk(RULES)
    sent = pickle.loads(pickle.dumps(chunks))
    assert all("_ids" not in vars(c) for c in sent)
    assert sent == chunks
    assert [c.id for c in sent] == [c.id for c in chunks]
    fresh = make_chunker("sentence", max_size=50).chunk(RULES)
    assert copy.deepcopy(fresh) == chunks  # a deep copy of unread chunks reads their ids the same way
    assert repr(fresh[0]).startswith("Chunk(text=") and fresh[0].id in repr(fresh[0])


def test_a_chunk_made_by_hand_has_its_fields_as_given() -> None:
    chunk = Chunk("本文", 0, 2, "doc", 0, "given-id", 2, "chars")
    assert chunk.id == "given-id" and chunk.doc_id == "doc" and "_ids" not in vars(chunk)
    with pytest.raises(AttributeError):
        _ = object.__new__(Chunk).id
