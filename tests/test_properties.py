"""The invariants of DESIGN.md, checked by hypothesis for every strategy and unit (by `tests.invariants`)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.invariants import check_invariants
from tests.strategies import code_texts, csv_texts, json_texts, markdown_texts, texts

from kireme import Document, make_chunker
from kireme.embed.hashed import HashedNgramEmbedder

STRATEGY_NAMES = ["fixed", "recursive", "sentence", "paragraph"]
# every invariant holds for both packers; hypothesis picks one per example (and a target size for optimal)
packings = st.one_of(
    st.just({}),
    st.builds(
        lambda target: {"packing": "optimal", "target_size": target},
        st.one_of(st.none(), st.integers(1, 200)),
    ),
)


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
    """Chunk ``text`` with one configuration and assert every invariant (determinism included)."""
    if extra.get("target_size") is not None:
        extra["target_size"] = min(extra["target_size"], max_size)
    chunker = make_chunker(
        strategy, max_size=max_size, overlap=overlap, min_size=min_size, unit=unit, **extra
    )
    doc = Document(text, id="doc", metadata={"format": format})
    chunks = chunker.chunk(doc)
    check_invariants(doc, chunks, max_size=max_size, overlap=overlap, chunker=chunker)
    return chunks


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
@given(text=texts, max_size=st.integers(1, 120), data=st.data())
def test_invariants_chars(strategy: str, text: str, max_size: int, data) -> None:
    overlap = data.draw(st.sampled_from([0, 0, max_size // 4, max_size - 1 if max_size > 1 else 0]))
    min_size = data.draw(st.sampled_from([0, 0, (max_size - overlap) // 3]))
    _check(text, strategy, "chars", max_size, overlap, min_size, **data.draw(packings))


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
@settings(max_examples=60)
@given(text=texts, max_size=st.integers(4, 80), data=st.data())
def test_invariants_tokens(strategy: str, text: str, max_size: int, data) -> None:
    overlap = data.draw(st.sampled_from([0, 0, max_size // 4]))
    _check(text, strategy, "tokens", max_size, overlap, **data.draw(packings))


@given(text=texts, max_size=st.integers(1, 60), packing=packings)
def test_invariants_user_separators(text: str, max_size: int, packing: dict) -> None:
    _check(text, "recursive", "chars", max_size, 0, separators=[r"\n\n", "。", r"\s+", "x"], **packing)


@given(text=texts, max_size=st.integers(2, 60), packing=packings)
def test_invariants_callable_unit(text: str, max_size: int, packing: dict) -> None:
    def utf8_bytes(s: str) -> int:
        return len(s.encode("utf-8"))

    _check(text, "recursive", utf8_bytes, max(max_size, 4), 0, **packing)


@pytest.mark.parametrize("preset", ["markdown", "python", "sql", "javascript"])
@given(text=texts, max_size=st.integers(1, 80), packing=packings)
def test_invariants_presets(preset: str, text: str, max_size: int, packing: dict) -> None:
    _check(text, "recursive", "chars", max_size, 0, preset=preset, **packing)


@given(text=st.one_of(markdown_texts, texts), max_size=st.integers(1, 120), data=st.data())
def test_invariants_recursive_on_markdown(text: str, max_size: int, data) -> None:
    """The markdown preset as `kireme chunk` runs it on a `.md` file: code blocks, lead-ins and tag lines
    from the parser, in characters and tokens, with overlap and min_size."""
    unit = data.draw(st.sampled_from(["chars", "tokens"]))
    max_size = max(max_size, 4) if unit == "tokens" else max_size
    overlap = data.draw(st.sampled_from([0, 0, max_size // 4]))
    min_size = data.draw(st.sampled_from([0, (max_size - overlap) // 3]))
    _check(text, "recursive", unit, max_size, overlap, min_size, "markdown", **data.draw(packings))


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
        **data.draw(packings),
    )


@settings(max_examples=60)
@given(text=texts, max_size=st.integers(1, 120), data=st.data())
def test_invariants_semantic_global_segmenter(text: str, max_size: int, data) -> None:
    """``auto:kcpd`` (all topic cuts chosen together from the sentence vectors), with the model-free hash
    embedder standing in for a model."""
    overlap = data.draw(st.sampled_from([0, 0, max_size // 4]))
    _check(
        text,
        "semantic",
        "chars",
        max_size,
        overlap,
        similarity=HashedNgramEmbedder(),
        threshold=data.draw(st.sampled_from(["auto:kcpd", "auto:kcpd:0.5", "auto:kcpd:3"])),
        cache_dir=False,
        **data.draw(packings),
    )


@settings(max_examples=40)
@given(text=texts, max_size=st.integers(4, 80), packing=packings)
def test_invariants_semantic_tokens(text: str, max_size: int, packing: dict) -> None:
    _check(text, "semantic", "tokens", max_size, 0, similarity="bigram", cache_dir=False, **packing)


TABLE_MODES = ["rows", "fill-down", "group-by:区分", "records"]


@pytest.mark.parametrize("fmt", ["markdown", "text", "html"])
@given(text=st.one_of(markdown_texts, texts), max_size=st.integers(1, 150), data=st.data())
def test_invariants_structure(fmt: str, text: str, max_size: int, data) -> None:
    overlap = data.draw(st.sampled_from([0, 0, max_size // 4]))
    min_size = data.draw(st.sampled_from([0, 0, (max_size - overlap) // 3]))
    table = data.draw(st.sampled_from(TABLE_MODES))
    context = data.draw(st.sampled_from(["none", "title", "headings"]))
    chunks = _check(
        text,
        "markdown",
        "chars",
        max_size,
        overlap,
        min_size,
        fmt,
        table=table,
        context=context,
        **data.draw(packings),
    )
    for c in chunks:
        if context == "none" and table == "rows":
            assert c.text in c.embed_text  # only a repeated header or a reopened fence is added


@settings(max_examples=60)
@given(text=st.one_of(markdown_texts, texts), max_size=st.integers(4, 100), data=st.data())
def test_invariants_structure_tokens(text: str, max_size: int, data) -> None:
    overlap = data.draw(st.sampled_from([0, 0, max_size // 4]))
    table = data.draw(st.sampled_from(TABLE_MODES))
    _check(text, "structure", "tokens", max_size, overlap, 0, "markdown", table=table, **data.draw(packings))


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
@given(text=csv_texts, max_size=st.integers(1, 100), data=st.data())
def test_invariants_structure_tables(fmt: str, text: str, max_size: int, data) -> None:
    if fmt == "tsv":
        text = text.replace(",", "\t")
    table = data.draw(st.sampled_from(TABLE_MODES))
    _check(text, "markdown", "chars", max_size, 0, 0, fmt, table=table, **data.draw(packings))


@settings(max_examples=40)
@given(text=st.one_of(json_texts, texts), max_size=st.integers(1, 120), data=st.data())
def test_invariants_json(text: str, max_size: int, data) -> None:
    """JSON, JSON Lines (a broken record kept as text) and text that is not JSON (the fallback)."""
    unit = data.draw(st.sampled_from(["chars", "chars", "tokens"]))
    max_size = max(max_size, 4) if unit == "tokens" else max_size
    overlap = data.draw(st.sampled_from([0, 0, max_size // 4]))
    min_size = data.draw(st.sampled_from([0, 0, (max_size - overlap) // 3]))
    _check(
        text,
        "json",
        unit,
        max_size,
        overlap,
        min_size,
        data.draw(st.sampled_from(["json", "jsonl", "text"])),
        context=data.draw(st.sampled_from(["none", "title", "headings"])),
        **data.draw(packings),
    )


@pytest.mark.parametrize("language", ["python", "typescript", "go", "rust", "sql"])
@settings(max_examples=25)
@given(text=code_texts, max_size=st.integers(1, 150), data=st.data())
def test_invariants_code(language: str, text: str, max_size: int, data) -> None:
    pytest.importorskip("tree_sitter_language_pack", reason="the code extra is not installed")
    unit = data.draw(st.sampled_from(["chars", "chars", "tokens"]))
    max_size = max(max_size, 4) if unit == "tokens" else max_size
    overlap = data.draw(st.sampled_from([0, 0, max_size // 4]))
    min_size = data.draw(st.sampled_from([0, 0, (max_size - overlap) // 3]))
    _check(
        text,
        "code",
        unit,
        max_size,
        overlap,
        min_size,
        "code",
        language=language,
        context=data.draw(st.sampled_from(["none", "headings"])),
        **data.draw(packings),
    )
