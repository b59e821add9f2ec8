"""kireme (切れ目, "the break"): cut documents into chunks for RAG at the right places.

Japanese first, English equally well. Every chunk is an exact slice of its document.

Examples:
    >>> from kireme import chunk
    >>> [c.text for c in chunk("第1条　目的。\\n\\n第2条　範囲。", strategy="paragraph", max_size=8)]
    ['第1条\\u3000目的。', '第2条\\u3000範囲。']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kireme.lazy import lazy_exports

if TYPE_CHECKING:
    from kireme.chunkers import (
        Chunker,
        ChunkPlan,
        FixedChunker,
        ParagraphChunker,
        RecursiveChunker,
        SentenceChunker,
    )
    from kireme.document import Chunk, Document
    from kireme.errors import ConfigError, KiremeError, LoadError
    from kireme.length import Chars, Tokens, get_measure
    from kireme.semantic.chunker import SemanticAnalysis, SemanticChunker
    from kireme.strategies import STRATEGIES, chunk, make_chunker
    from kireme.stream import iter_chunks
    from kireme.structure.code import CodeChunker
    from kireme.structure.jsonchunker import JsonChunker

# Where each public name lives: `import kireme` stays cheap (the CLI and a plain chunker do not pay for
# the semantic, structure or loading modules they do not use); a name is imported when first used.
_EXPORTS = {
    "Chunker": "kireme.chunkers",
    "ChunkPlan": "kireme.chunkers",
    "FixedChunker": "kireme.chunkers",
    "ParagraphChunker": "kireme.chunkers",
    "RecursiveChunker": "kireme.chunkers",
    "SentenceChunker": "kireme.chunkers",
    "Chunk": "kireme.document",
    "Document": "kireme.document",
    "ConfigError": "kireme.errors",
    "KiremeError": "kireme.errors",
    "LoadError": "kireme.errors",
    "Chars": "kireme.length",
    "Tokens": "kireme.length",
    "get_measure": "kireme.length",
    "SemanticAnalysis": "kireme.semantic.chunker",
    "SemanticChunker": "kireme.semantic.chunker",
    "STRATEGIES": "kireme.strategies",
    "chunk": "kireme.strategies",
    "make_chunker": "kireme.strategies",
    "iter_chunks": "kireme.stream",
    "JsonChunker": "kireme.structure.jsonchunker",
    "CodeChunker": "kireme.structure.code",
}

# Imported now, not lazily: `kireme.load` is also the name of a sub-package, and importing one of its
# modules first would bind the package where users expect the function.
from kireme.load import load, load_text  # noqa: E402

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "STRATEGIES",
    "Chars",
    "Chunk",
    "ChunkPlan",
    "Chunker",
    "CodeChunker",
    "ConfigError",
    "Document",
    "FixedChunker",
    "JsonChunker",
    "KiremeError",
    "LoadError",
    "ParagraphChunker",
    "RecursiveChunker",
    "SemanticAnalysis",
    "SemanticChunker",
    "SentenceChunker",
    "Tokens",
    "chunk",
    "get_measure",
    "iter_chunks",
    "load",
    "load_text",
    "make_chunker",
]

__version__ = "0.2.0"
