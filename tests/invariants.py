"""The invariants of DESIGN.md ("Invariants"), checked one way for every test that chunks something.

`check_invariants` is the single checker: the hypothesis property tests, the code-preset tests, the CLI
JSONL contract tests and the example-based tests all call it instead of writing their own slice, coverage,
size or grapheme checks. What it asserts, for ``chunks`` cut from ``text``:

1. exact slices: ``text[c.start:c.end] == c.text``, and ``c.size`` is ``measure(c.text)``;
2. ordered (starts and ends strictly increasing, ``index`` 0, 1, 2, ...) and non-empty (no chunk is
   empty or whitespace only); ``""`` and whitespace-only input give ``[]``;
3. coverage: without overlap every non-whitespace character lies in exactly one chunk (only whitespace
   before the first chunk, between two chunks and after the last); with overlap, neighbours that overlap
   share an exact suffix/prefix (``text[next.start:prev.end]`` ends the one and starts the other), and
   only whitespace is left out between chunks that do not overlap;
4. ``measure(c.text) <= max_size`` for every chunk, in the chunker's own measure;
5. no cut inside a grapheme cluster (`kireme.text.graphemes.boundaries`), whenever every cluster fits
   the budget (``max_size - overlap``); a single cluster larger than that has to be cut somewhere;
6. ids: unique within the document, and deterministic: given ``chunker``, chunking an equal fresh
   `Document` again gives the same ids, offsets and ``embed_text``. (Across processes, the golden
   snapshots of ``tests/test_golden.py`` pin them.)

Chunks may be `kireme.Chunk` objects or the JSONL rows of ``kireme chunk --format jsonl`` (dicts).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kireme import Document, get_measure
from kireme.text.graphemes import boundaries

__all__ = ["check_invariants"]


def _field(c: Any, name: str) -> Any:
    return c[name] if isinstance(c, Mapping) else getattr(c, name)


def _resolve_measure(unit: Any, measure: Callable[[str], int] | None, chunker: Any) -> Callable[[str], int]:
    if measure is not None:
        return measure
    if chunker is not None:
        return chunker.measure
    if unit is None:
        raise TypeError("check_invariants needs unit=, measure= or chunker= to measure chunk sizes")
    return get_measure(unit)


def _largest_grapheme(text: str, measure: Callable[[str], int]) -> int:
    return max((measure(text[a:b]) for a, b in itertools.pairwise(boundaries(text))), default=0)


def check_invariants(
    text_or_doc: str | Document,
    chunks: Sequence[Any],
    *,
    max_size: int,
    unit: Any = None,
    measure: Callable[[str], int] | None = None,
    overlap: int = 0,
    chunker: Any = None,
) -> None:
    """Assert DESIGN's invariants for ``chunks`` of ``text_or_doc`` (see the module docstring).

    Sizes are measured with ``measure``, else ``chunker.measure``, else ``get_measure(unit)``. With
    ``chunker`` (the one that made ``chunks`` from ``text_or_doc`` itself, a string or a `Document`)
    determinism is checked by chunking an equal input again.
    """
    doc = text_or_doc if isinstance(text_or_doc, Document) else None
    text = doc.text if doc is not None else text_or_doc
    assert isinstance(text, str)
    size_of = _resolve_measure(unit, measure, chunker)

    if not text.strip():
        assert list(chunks) == [], "empty or whitespace-only input must give no chunks"
        return
    assert chunks, "a text with non-whitespace characters gave no chunks"

    starts = [_field(c, "start") for c in chunks]
    ends = [_field(c, "end") for c in chunks]
    texts = [_field(c, "text") for c in chunks]

    # 1. exact slices, by construction; the reported size is the measured size
    for i, c in enumerate(chunks):
        start, end, piece = starts[i], ends[i], texts[i]
        assert 0 <= start < end <= len(text), (i, start, end, len(text))
        assert text[start:end] == piece, (i, start, end, piece[:40], text[start:end][:40])
        assert _field(c, "size") == size_of(piece), (i, _field(c, "size"), size_of(piece))
    # 2. ordered and non-empty
    for i, piece in enumerate(texts):
        assert piece.strip(), ("empty or whitespace-only chunk", i, piece)
    assert [_field(c, "index") for c in chunks] == list(range(len(chunks)))
    for i in range(1, len(chunks)):
        assert starts[i - 1] < starts[i] and ends[i - 1] < ends[i], ("order", i, starts[i - 1 : i + 1])

    # 3. coverage: every non-whitespace character exactly once / exact shared suffix-prefix with overlap
    assert not text[: starts[0]].strip(), ("text before the first chunk was lost", text[: starts[0]][-40:])
    assert not text[ends[-1] :].strip(), ("text after the last chunk was lost", text[ends[-1] :][:40])
    for i in range(1, len(chunks)):
        prev_end, next_start = ends[i - 1], starts[i]
        if next_start >= prev_end:
            assert not text[prev_end:next_start].strip(), ("text lost between chunks", i)
        else:
            assert overlap > 0, ("chunks overlap without overlap", i, prev_end, next_start)
            shared = text[next_start:prev_end]
            assert texts[i - 1].endswith(shared) and texts[i].startswith(shared), ("overlap", i)
    if overlap == 0:
        assert "".join("".join(texts).split()) == "".join(text.split())

    # 4. the size limit, in the chunker's measure
    sizes = [size_of(piece) for piece in texts]
    assert max(sizes) <= max_size, ("over the limit", max_size, max(sizes))

    # 5. no cut inside a grapheme cluster, whenever every cluster fits the budget
    if _largest_grapheme(text, size_of) <= max_size - overlap:
        bounds = set(boundaries(text))
        for i in range(len(chunks)):
            assert starts[i] in bounds and ends[i] in bounds, ("cut inside a grapheme", i, starts[i], ends[i])

    # 6. ids: unique, and the same when the same document is chunked again
    ids = [_field(c, "id") for c in chunks]
    assert len(set(ids)) == len(ids), "duplicate chunk ids"
    if chunker is not None:
        fresh = (
            Document(doc.text, id=doc.id, metadata=dict(doc.metadata), regions=doc.regions)
            if doc is not None
            else text
        )
        again = chunker.chunk(fresh)
        assert [(_field(c, "id"), _field(c, "start"), _field(c, "end")) for c in again] == list(
            zip(ids, starts, ends, strict=True)
        ), "chunking again gave other ids or offsets"
        assert [_field(c, "embed_text") for c in again] == [_field(c, "embed_text") for c in chunks]
