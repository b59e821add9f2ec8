"""Packing for strategies that find their own paths (JSON paths, code signatures) instead of headings.

The ``json`` and ``code`` strategies give the packer one hard level per depth of their tree (a value's
members, a class's methods), strongest first, then finer levels for what is still too large; each chunk's
heading path comes from the tree (`Labels`), not from heading lines. With a context that counts toward
``max_size``, the packing budget is tightened until every ``embed_text`` (its path in front) fits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kireme.boundaries.levels import SCRIPT, WORD, Level
from kireme.chunkers import ChunkPlan
from kireme.document import Document
from kireme.pack import PackedSpan, pack

if TYPE_CHECKING:
    from kireme.chunkers import Chunker

# How often the budget is tightened for a context that did not fit before it drops to the floor.
_TIGHTEN = 8


@dataclass(frozen=True)
class Label:
    """A chunk's heading path, the part of it its context says (what the chunk's text does not hold
    already), and its metadata."""

    headings: tuple[str, ...]
    context: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)


Labels = Callable[[int, int], Label]


def plan_with_paths(
    chunker: Chunker,
    doc: Document,
    levels: Sequence[Level],
    labels: Labels,
    opens_block: Callable[[str, int], bool] | None = None,
) -> ChunkPlan:
    """Pack ``doc`` at ``levels`` (prose headings off: a short line of code or JSON is not one) and label
    each chunk by ``labels(start, end)``; the context, when there is one, says the label's ``context``.
    ``opens_block(text, pos)``: whether the text before a cut at ``pos`` ends with a line that opens a
    block (``else:``, ``if (x) {``), which no chunk then ends with: it goes with its body, as a heading."""
    text = doc.text
    measure = chunker.measure
    sizer = measure.for_text(text)
    max_size, overlap = chunker.max_size, chunker.overlap
    context = chunker.context_builder(doc, None, doc.title)
    counts = chunker.context_counts
    floor = min(max_size, overlap + max(1, (max_size - overlap) // 2))
    budget = max(floor, max_size - context.largest()) if counts else max_size
    # an overlap starts at a line (or a definition, a statement), never at a word inside one: code read
    # from the middle of a line (`helper."""`, `deco(fn):`) is no context
    inside_lines = next(
        (i for i, level in enumerate(levels) if level is WORD or level is SCRIPT), len(levels)
    )
    tries = 0
    while True:
        spans: list[PackedSpan] = pack(
            text,
            levels,
            sizer,
            max_size=budget,
            min_size=min(chunker.min_size, budget - overlap),
            overlap=overlap,
            keep_headings=opens_block is not None,
            heading_end=opens_block,
            hard_max_size=max_size,
            overlap_levels=inside_lines,
            **chunker.packing_options(),
        )
        if not counts or budget <= floor:
            break
        over = max(
            (
                measure(
                    context.named_prefix(labels(s.start, s.end).context, s.start, s.end)
                    + text[s.start : s.end]
                )
                for s in spans
            ),
            default=0,
        )
        over -= max_size
        if over <= 0:
            break
        tries += 1
        budget = floor if tries >= _TIGHTEN else max(floor, budget - over)

    def headings(start: int, end: int) -> tuple[tuple[str, ...], dict[str, Any]]:
        label = labels(start, end)
        return label.headings, dict(label.metadata)

    embed: Callable[[int, int], str] | None = None
    if chunker.context != "none":

        def embed(start: int, end: int) -> str:
            return context.named_prefix(labels(start, end).context, start, end) + text[start:end]

    return ChunkPlan(spans, embed_text=embed, headings=headings)
