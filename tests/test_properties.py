"""The invariants of DESIGN.md, checked by hypothesis for every strategy and unit."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.strategies import csv_texts, markdown_texts, texts

from kireme import Document, Tokens, make_chunker
from kireme.text.graphemes import boundaries

STRATEGY_NAMES = ["fixed", "recursive", "sentence", "paragraph"]
TOKENS = Tokens()


def _largest_grapheme(text: str, measure) -> int:
    bounds = boundaries(text)
    return max((measure(text[a:b]) for a, b in itertools.pairwise(bounds)), default=0)


def _check(
    text: str,
    strategy: str,
    unit: str,
    max_size: int,
    overlap: int,
    min_size: int = 0,
    format: str = "text",
    **extra,
) -> list:
    chunker = make_chunker(
        strategy, max_size=max_size, overlap=overlap, min_size=min_size, unit=unit, **extra
    )
    doc = Document(text, id="doc", metadata={"format": format})
    chunks = chunker.chunk(doc)
    measure = chunker.measure

    if not text.strip():
        assert chunks == []
        return chunks
    # 1. exact offsets, by construction
    for c in chunks:
        assert doc.text[c.start : c.end] == c.text
        assert c.text and not c.text.isspace()
        assert c.size == measure(c.text)
    # 2. ordered; without overlap, every non-whitespace character exactly once
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for prev, nxt in itertools.pairwise(chunks):
        assert prev.start < nxt.start and prev.end < nxt.end
        if overlap == 0:
            assert prev.end <= nxt.start
            assert text[prev.end : nxt.start].strip() == ""
        elif nxt.start < prev.end:  # overlap: an exact shared suffix/prefix
            shared = text[nxt.start : prev.end]
            assert prev.text.endswith(shared) and nxt.text.startswith(shared)
    if overlap == 0:
        assert text[: chunks[0].start].strip() == ""
        assert text[chunks[-1].end :].strip() == ""
        covered = "".join(c.text for c in chunks)
        assert "".join(covered.split()) == "".join(text.split())
    # 3 + 4. size limit; no cut inside a grapheme cluster (whenever every cluster fits the limit)
    graphemes_fit = _largest_grapheme(text, measure) <= max_size - overlap
    if graphemes_fit:
        assert all(c.size <= max_size for c in chunks)
        bounds = set(boundaries(text))
        for c in chunks:
            assert c.start in bounds and c.end in bounds, (c.start, c.end)
    else:
        assert all(c.size <= max_size for c in chunks)
    # 5. deterministic, ids included
    again = chunker.chunk(Document(text, id="doc", metadata={"format": format}))
    assert [(c.id, c.start, c.end) for c in again] == [(c.id, c.start, c.end) for c in chunks]
    assert [c.embed_text for c in again] == [c.embed_text for c in chunks]
    assert len({c.id for c in chunks}) == len(chunks)
    return chunks


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
@given(text=texts, max_size=st.integers(1, 120), data=st.data())
def test_invariants_chars(strategy: str, text: str, max_size: int, data) -> None:
    overlap = data.draw(st.sampled_from([0, 0, max_size // 4, max_size - 1 if max_size > 1 else 0]))
    min_size = data.draw(st.sampled_from([0, 0, (max_size - overlap) // 3]))
    _check(text, strategy, "chars", max_size, overlap, min_size)


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
@settings(max_examples=60)
@given(text=texts, max_size=st.integers(4, 80), data=st.data())
def test_invariants_tokens(strategy: str, text: str, max_size: int, data) -> None:
    overlap = data.draw(st.sampled_from([0, 0, max_size // 4]))
    _check(text, strategy, "tokens", max_size, overlap)


@given(text=texts, max_size=st.integers(1, 60))
def test_invariants_user_separators(text: str, max_size: int) -> None:
    _check(text, "recursive", "chars", max_size, 0, separators=[r"\n\n", "。", r"\s+", "x"])


@given(text=texts, max_size=st.integers(2, 60))
def test_invariants_callable_unit(text: str, max_size: int) -> None:
    def utf8_bytes(s: str) -> int:
        return len(s.encode("utf-8"))

    _check(text, "recursive", utf8_bytes, max(max_size, 4), 0)


@pytest.mark.parametrize("preset", ["markdown", "python", "sql", "javascript"])
@given(text=texts, max_size=st.integers(1, 80))
def test_invariants_presets(preset: str, text: str, max_size: int) -> None:
    _check(text, "recursive", "chars", max_size, 0, preset=preset)


@given(text=texts)
def test_batch_equals_one_by_one(text: str) -> None:
    chunker = make_chunker("recursive", max_size=30)
    docs = [Document(text, id="a"), Document(text + "。追加の文。", id="b")]
    assert chunker.chunk_many(docs) == [chunker.chunk(d) for d in docs]


@given(text=texts, max_size=st.integers(1, 120), data=st.data())
def test_invariants_semantic_bigram(text: str, max_size: int, data) -> None:
    overlap = data.draw(st.sampled_from([0, 0, max_size // 4]))
    min_size = data.draw(st.sampled_from([0, (max_size - overlap) // 3]))
    threshold = data.draw(st.sampled_from(["auto", "percentile:80", "stddev:1", "gradient", "auto:otsu"]))
    _check(
        text,
        "semantic",
        "chars",
        max_size,
        overlap,
        min_size,
        similarity="bigram",
        threshold=threshold,
        cache_dir=False,
        buffer=data.draw(st.integers(1, 3)),
    )


@settings(max_examples=40)
@given(text=texts, max_size=st.integers(4, 80))
def test_invariants_semantic_tokens(text: str, max_size: int) -> None:
    _check(text, "semantic", "tokens", max_size, 0, similarity="bigram", cache_dir=False)


TABLE_MODES = ["rows", "fill-down", "group-by:区分", "records"]


@pytest.mark.parametrize("fmt", ["markdown", "text", "html"])
@given(text=st.one_of(markdown_texts, texts), max_size=st.integers(1, 150), data=st.data())
def test_invariants_structure(fmt: str, text: str, max_size: int, data) -> None:
    overlap = data.draw(st.sampled_from([0, 0, max_size // 4]))
    min_size = data.draw(st.sampled_from([0, 0, (max_size - overlap) // 3]))
    table = data.draw(st.sampled_from(TABLE_MODES))
    context = data.draw(st.sampled_from(["none", "title", "headings"]))
    chunks = _check(text, "markdown", "chars", max_size, overlap, min_size, fmt, table=table, context=context)
    for c in chunks:
        if context == "none" and table == "rows":
            assert c.text in c.embed_text  # only a repeated header or a reopened fence is added


@settings(max_examples=60)
@given(text=st.one_of(markdown_texts, texts), max_size=st.integers(4, 100), data=st.data())
def test_invariants_structure_tokens(text: str, max_size: int, data) -> None:
    overlap = data.draw(st.sampled_from([0, 0, max_size // 4]))
    table = data.draw(st.sampled_from(TABLE_MODES))
    _check(text, "structure", "tokens", max_size, overlap, 0, "markdown", table=table)


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
@given(text=csv_texts, max_size=st.integers(1, 100), data=st.data())
def test_invariants_structure_tables(fmt: str, text: str, max_size: int, data) -> None:
    if fmt == "tsv":
        text = text.replace(",", "\t")
    table = data.draw(st.sampled_from(TABLE_MODES))
    _check(text, "markdown", "chars", max_size, 0, 0, fmt, table=table)
