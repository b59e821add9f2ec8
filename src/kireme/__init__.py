"""kireme (切れ目, "the break"): cut documents into chunks for RAG at the right places.

Japanese first, English equally well. Every chunk is an exact slice of its document.

>>> from kireme import chunk
>>> [c.text for c in chunk("第1条　目的。\\n\\n第2条　範囲。", strategy="paragraph", max_size=8)]
['第1条\\u3000目的。', '第2条\\u3000範囲。']
"""

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
from kireme.load import load, load_text
from kireme.semantic.chunker import SemanticAnalysis, SemanticChunker
from kireme.strategies import STRATEGIES, chunk, make_chunker

__all__ = [
    "STRATEGIES",
    "Chars",
    "Chunk",
    "ChunkPlan",
    "Chunker",
    "ConfigError",
    "Document",
    "FixedChunker",
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
    "load",
    "load_text",
    "make_chunker",
]

__version__ = "0.1.0"
