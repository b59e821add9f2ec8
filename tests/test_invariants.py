"""The invariant checker itself: it passes a correct chunking and fails each kind of broken one."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
from tests.invariants import check_invariants

from kireme import Chunk, Document, make_chunker

TEXT = "第1条　目的。\n\n本規程は旅費を定める。\n\n第2条　宿泊費は実費とする。"


def chunks_of(text: str = TEXT, max_size: int = 12, **options) -> list[Chunk]:
    return make_chunker("recursive", max_size=max_size, **options).chunk(Document(text, id="t"))


def manual(text: str, spans: list[tuple[int, int]]) -> list[Chunk]:
    return [Chunk(text[a:b], a, b, "t", i, f"id{i}", b - a, "chars") for i, (a, b) in enumerate(spans)]


def test_a_correct_chunking_passes() -> None:
    chunker = make_chunker("recursive", max_size=12)
    doc = Document(TEXT, id="t")
    check_invariants(doc, chunker.chunk(doc), max_size=12, chunker=chunker)
    check_invariants(TEXT, [c.to_dict() for c in chunker.chunk(doc)], max_size=12, unit="chars")
    check_invariants("  \n", [], max_size=5, unit="chars")


def test_overlap_passes_with_an_exact_shared_suffix_and_prefix() -> None:
    text = "最初の文です。二番目の文です。三番目の文です。四番目の文です。"
    chunker = make_chunker("recursive", max_size=24, overlap=8)
    chunks = chunker.chunk(text)
    assert any(b.start < a.end for a, b in itertools.pairwise(chunks))
    check_invariants(text, chunks, max_size=24, overlap=8, chunker=chunker)


def broken(kind: str) -> tuple[str, list[Chunk], dict]:
    chunks = chunks_of()
    first, second = chunks[0], chunks[1]
    if kind == "shifted slice":
        chunks[0] = replace(first, start=first.start + 1, end=first.end + 1)
    elif kind == "lost text":
        del chunks[1]
        chunks = [replace(c, index=i) for i, c in enumerate(chunks)]
    elif kind == "empty chunk":
        return "a  b", manual("a  b", [(0, 1), (1, 2), (3, 4)]), {}
    elif kind == "out of order":
        chunks[0], chunks[1] = replace(second, index=0), replace(first, index=1)
    elif kind == "overlap without overlap":
        chunks[1] = replace(second, start=first.end - 1, text=TEXT[first.end - 1 : second.end])
        chunks[1] = replace(chunks[1], size=len(chunks[1].text))
    elif kind == "wrong size":
        chunks[0] = replace(first, size=first.size + 1)
    elif kind == "over the limit":
        return TEXT, chunks, {"max_size": max(c.size for c in chunks) - 1}
    elif kind == "grapheme cut":
        text = "cafe\u0301 au lait"  # e + combining acute accent: one grapheme
        return text, manual(text, [(0, 4), (4, len(text))]), {"max_size": 20}
    elif kind == "duplicate ids":
        chunks[1] = replace(second, id=first.id)
    elif kind == "chunks from blank text":
        return "  \n ", manual("  \n a", [(4, 5)]), {}
    else:
        raise AssertionError(kind)
    return TEXT, chunks, {}


KINDS = [
    "shifted slice",
    "lost text",
    "empty chunk",
    "out of order",
    "overlap without overlap",
    "wrong size",
    "over the limit",
    "grapheme cut",
    "duplicate ids",
    "chunks from blank text",
]


@pytest.mark.parametrize("kind", KINDS)
def test_each_broken_chunking_fails(kind: str) -> None:
    text, chunks, options = broken(kind)
    with pytest.raises(AssertionError):
        check_invariants(text, chunks, **{"max_size": 12, "unit": "chars", **options})


def test_a_chunker_that_changes_its_ids_fails() -> None:
    class Unstable:
        measure = make_chunker("recursive", max_size=12).measure
        calls = 0

        def chunk(self, doc: Document) -> list[Chunk]:
            self.calls += 1
            return [replace(c, id=f"{c.id}-{self.calls}") for c in chunks_of()]

    unstable = Unstable()
    with pytest.raises(AssertionError, match="other ids"):
        check_invariants(TEXT, unstable.chunk(Document(TEXT)), max_size=12, chunker=unstable)
