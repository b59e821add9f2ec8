"""The hot path's shortcuts around the frozen dataclasses' ``__init__`` make the very objects the
constructors make: `text_document` is ``Document(text)``, `spans_plan` is ``ChunkPlan(spans)``."""

from __future__ import annotations

import pickle

from hypothesis import given
from hypothesis import strategies as st
from tests.strategies import texts

from kireme import make_chunker
from kireme.chunkers import ChunkPlan, spans_plan
from kireme.document import Document, text_document
from kireme.pack import PackedSpan


@given(texts)
def test_a_text_document_is_the_document_of_the_text(text: str) -> None:
    made, expected = text_document(text), Document(text)
    assert expected.format == "text"  # the cached property, which `text_document` sets when it makes one
    assert list(vars(made).items()) == list(vars(expected).items())  # the same fields, in the same order
    assert made == expected and repr(made) == repr(expected)
    assert made.id == expected.id and made.title == expected.title == "" and made.format == "text"
    assert pickle.loads(pickle.dumps(made)) == expected


@given(texts, st.sampled_from(["text", "markdown", "csv", ""]))
def test_a_text_document_of_a_format_is_the_document_with_that_format(text: str, fmt: str) -> None:
    made, expected = text_document(text, fmt), Document(text, metadata={"format": fmt})
    assert expected.format == (fmt or "text")
    assert list(vars(made).items()) == list(vars(expected).items())
    assert made == expected and pickle.loads(pickle.dumps(made)) == expected


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50), st.integers(0, 50)), max_size=4))
def test_a_spans_plan_is_the_plan_of_the_spans(spans: list[tuple[int, int, int]]) -> None:
    packed = [PackedSpan(*s) for s in spans]
    made, expected = spans_plan(packed), ChunkPlan(packed)
    assert list(vars(made).items()) == list(vars(expected).items())
    assert made == expected and repr(made) == repr(expected)


def test_a_string_and_its_document_give_the_same_chunks() -> None:
    text = "第1条 この規程は出張に適用する。\n\n第2条 宿泊費は1泊12,000円とする。" * 5
    for strategy in ("fixed", "recursive", "paragraph", "sentence", "markdown"):
        chunker = make_chunker(strategy, max_size=40)
        assert chunker.chunk(text) == chunker.chunk(Document(text))
