"""The hot path's shortcuts around the frozen dataclasses' ``__init__`` make the very objects the
constructors make: `text_document` is ``Document(text)``, `spans_plan` is ``ChunkPlan(spans)``."""

from __future__ import annotations

import pickle

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.strategies import csv_texts, markdown_texts, texts

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


_FORMATS = st.sampled_from(["text", "markdown", "csv", "code"])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.one_of(texts, markdown_texts, csv_texts), _FORMATS), min_size=2, max_size=6),
    st.sampled_from(["recursive", "paragraph", "sentence"]),
    st.sampled_from([24, 60, 200]),
)
def test_a_chunker_kept_across_documents_cuts_each_as_a_fresh_one(
    docs: list[tuple[str, str]], strategy: str, size: int
) -> None:
    """What a chunker keeps between documents (the levels made once per length class and format, a
    whole text fitting one chunk planned without levels) never carries one document's answer to the
    next: short and long texts, Markdown, CSV and plain text in turn, each cut as by a new chunker."""
    kept = make_chunker(strategy, max_size=size)
    for text, fmt in docs:
        doc = Document(text, metadata={"format": fmt})
        assert kept.chunk(doc) == make_chunker(strategy, max_size=size).chunk(doc)


def test_markdown_levels_are_read_from_each_document() -> None:
    """`recursive` reads a Markdown file's own headings and code blocks: the levels of one file are not
    kept for the next (the plain-text levels are)."""
    first = (
        "# 出張規程\n\n"
        + "出張の申請は前日までに行う。" * 6
        + "\n\n## 宿泊費\n\n"
        + "宿泊費は実費とする。" * 8
    )
    second = (
        "## 交通費\n\n"
        + "交通費は最も安い経路で計算する。" * 5
        + "\n\n### 日当\n\n"
        + "日当は定額とする。" * 6
    )
    with_code = second + "\n\n```\nrate = 12000\n```\n\n" + "以上。" * 3
    kept = make_chunker("recursive", max_size=80)
    for text in (first, second, with_code, first):
        doc = Document(text, metadata={"format": "markdown"})
        assert kept.chunk(doc) == make_chunker("recursive", max_size=80).chunk(doc)
