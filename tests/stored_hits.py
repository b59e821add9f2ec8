"""Chunks as an index returns them (`kireme.index.store.Hit`), for the tests of search and ask's context."""

from __future__ import annotations

from collections.abc import Sequence

from kireme.document import Chunk
from kireme.index.store import Hit, StoredChunk


def stored_hits(
    chunks: Sequence[Chunk], *, doc_id: str = "guide", source: str = "docs/guide.md", fmt: str = "markdown"
) -> list[Hit]:
    """``chunks`` of one document as the index returns them, best first (scores 1, 1/2, 1/3...)."""
    return [
        Hit(
            StoredChunk(
                id=c.id, doc_id=doc_id, index=c.index, start=c.start, end=c.end, text=c.text,
                embed_text=c.embed_text, headings=c.headings, title="guide", source=source,
                format=fmt, metadata={},
            ),
            1.0 / (i + 1),
        )
        for i, c in enumerate(chunks)
    ]  # fmt: skip
