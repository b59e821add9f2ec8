"""What the framework adapters share: options to a chunker, framework text to a `Document`, a chunk to
metadata. No framework is imported here, so each adapter stays a thin mapping of its framework's types.

Three rules hold in every adapter:

- offsets come from kireme's chunks (``chunk.start``/``chunk.end``), never from searching the text, so a
  repeated sentence gets the offset of the place it was cut from;
- a framework document's metadata names its source (``source``, ``file_path``...): that path is the
  kireme document id (chunk ids stay the same across runs) and its suffix says whether the text is
  Markdown (``format`` overrides); ``title`` in the metadata is the document title;
- bad options raise `ConfigError` when the adapter is made, not when the first document arrives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from kireme.chunkers import Chunker
from kireme.document import Chunk, Document
from kireme.errors import ConfigError
from kireme.load.registry import FORMATS
from kireme.strategies import STRATEGIES, make_chunker

# Metadata keys that name where a framework document came from, most specific first: LangChain loaders
# write ``source``; LlamaIndex's SimpleDirectoryReader and Haystack's converters write ``file_path``.
SOURCE_KEYS = ("source", "file_path", "file_name", "filename", "path")

# Only these suffixes say what the text is: a framework's loader has already turned PDF, HTML, Word or
# CSV files into text of its own making, which kireme's readers of those formats would misjudge.
SUFFIX_FORMATS = {".md": "markdown", ".markdown": "markdown", ".mdx": "markdown", ".txt": "text"}

# The strategies that read a document's structure: text of unknown format is taken as Markdown for them.
STRUCTURE_STRATEGIES = frozenset({"markdown", "structure"})

# How a heading path is written where metadata must be flat (the separator of kireme's own context).
PATH_SEPARATOR = " > "
LIST_SEPARATOR = " | "

PAGE_CONTENTS = ("text", "embed_text")


def source_of(metadata: Mapping[str, Any] | None) -> str:
    """The source path or URL a framework document's metadata names (``""`` when none)."""
    if not metadata:
        return ""
    for key in SOURCE_KEYS:
        value = metadata.get(key)
        if value is not None and str(value).strip():
            return str(value)
    return ""


def format_of(source: str, strategy: str) -> str:
    """The kireme format of a framework document's text: from its source suffix, else Markdown for the
    structure strategies (the caller asked for headings), else plain text."""
    suffix = PurePosixPath(source.replace("\\", "/").split("?", 1)[0]).suffix.lower() if source else ""
    if suffix in SUFFIX_FORMATS:
        return SUFFIX_FORMATS[suffix]
    return "markdown" if strategy in STRUCTURE_STRATEGIES else "text"


def check_format(format: str | None) -> str | None:
    """``None`` (decide per document) or one of kireme's input formats."""
    if format is not None and format not in FORMATS:
        raise ConfigError(f"unknown format {format!r}: choose one of {', '.join(FORMATS)} (or None: auto)")
    return format


def check_page_content(value: str, name: str = "page_content") -> str:
    """``text`` (the exact slice) or ``embed_text`` (context in front)."""
    if value not in PAGE_CONTENTS:
        raise ConfigError(f"{name} must be one of {', '.join(PAGE_CONTENTS)}, not {value!r}")
    return value


@dataclass(frozen=True)
class Splitting:
    """One adapter's settings and the chunker they make; picklable and deep-copyable as the chunker is.

    ``options`` are the strategy class's fields as `kireme.make_chunker` takes them (``max_size``,
    ``unit``, ``overlap``, ``context``, ``table``, ``similarity``...).
    """

    strategy: str = "recursive"
    options: Mapping[str, Any] = field(default_factory=dict)
    format: str | None = None
    chunker: Chunker = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.strategy, str) or self.strategy not in STRATEGIES:
            raise ConfigError(f"unknown strategy {self.strategy!r}: choose one of {', '.join(STRATEGIES)}")
        check_format(self.format)
        object.__setattr__(self, "options", dict(self.options))
        object.__setattr__(self, "chunker", make_chunker(self.strategy, **self.options))

    def document(self, text: str, metadata: Mapping[str, Any] | None = None) -> Document:
        """A framework document's text and metadata as a kireme `Document` (id, format, title)."""
        if not isinstance(text, str):
            raise TypeError(f"expected the document text as str, not {type(text).__name__}")
        source = source_of(metadata)
        title = (metadata or {}).get("title")
        return Document(
            text=text,
            id=source,
            metadata={
                "source": source,
                "format": self.format or format_of(source, self.strategy),
                "title": title.strip() if isinstance(title, str) else "",
            },
        )

    def chunks(self, text: str, metadata: Mapping[str, Any] | None = None) -> tuple[Document, list[Chunk]]:
        """The kireme document for a framework document, and its chunks."""
        doc = self.document(text, metadata)
        return doc, self.chunker.chunk(doc)


def flat_value(value: Any) -> Any:
    """A metadata value as a str, int, float, bool or None (what flat-metadata vector stores accept)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple | set | frozenset):
        return LIST_SEPARATOR.join(str(v) for v in value)
    return str(value)


def chunk_metadata(chunk: Chunk, *, flat: bool = False) -> dict[str, Any]:
    """kireme's metadata for one chunk: ``headings`` (its heading path), ``title`` (when known),
    ``chunk_id`` (deterministic), and the chunk's own metadata (``subheadings``: the headings inside it).

    ``flat``: every value a str or number (LlamaIndex vector stores refuse lists): the heading path is
    joined with ``" > "`` and left out when empty.
    """
    out: dict[str, Any] = {}
    if not flat:
        out["headings"] = list(chunk.headings)
    elif chunk.headings:
        out["headings"] = PATH_SEPARATOR.join(chunk.headings)
    if chunk.title:
        out["title"] = chunk.title
    out["chunk_id"] = chunk.id
    for key, value in chunk.metadata.items():
        out.setdefault(key, flat_value(value) if flat else _plain(value))
    return out


def _plain(value: Any) -> Any:
    """A fresh list for a sequence (so no two chunks share one mutable value), the value otherwise."""
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def content_of(chunk: Chunk, page_content: str) -> str:
    """What a framework document holds as its text: the exact slice, or ``embed_text``."""
    return chunk.embed_text if page_content == "embed_text" else chunk.text
