"""The strategy registry: names to chunker classes, `make_chunker` and `chunk`."""

from __future__ import annotations

from typing import Any

from kireme.chunkers import Chunker, FixedChunker, ParagraphChunker, RecursiveChunker, SentenceChunker
from kireme.document import Chunk, ConfigError, Document
from kireme.semantic.chunker import SemanticChunker
from kireme.structure.chunker import StructureChunker

STRATEGIES: dict[str, type[Chunker]] = {
    "fixed": FixedChunker,
    "recursive": RecursiveChunker,
    "sentence": SentenceChunker,
    "paragraph": ParagraphChunker,
    "semantic": SemanticChunker,
    "markdown": StructureChunker,
    "structure": StructureChunker,  # the same strategy: it reads HTML, notebooks, PDF, docx and CSV too
}


def make_chunker(strategy: str = "recursive", **options: Any) -> Chunker:
    """A chunker by strategy name; options are the strategy class's fields."""
    try:
        cls = STRATEGIES[strategy]
    except KeyError:
        raise ConfigError(f"unknown strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}") from None
    try:
        return cls(**options)
    except TypeError as exc:
        raise ConfigError(f"strategy {strategy!r}: {exc}") from None


def chunk(document: Document | str, strategy: str = "recursive", **options: Any) -> list[Chunk]:
    """Cut a document (or string) with the named strategy.

    >>> [c.text for c in chunk("今日は晴れ。明日は雨。", strategy="sentence", max_size=6)]
    ['今日は晴れ。', '明日は雨。']
    """
    return make_chunker(strategy, **options).chunk(document)
