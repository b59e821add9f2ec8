"""The data model: a decoded `Document` and the exact `Chunk`s cut from it.

Every chunk is a slice of its document: ``doc.text[chunk.start:chunk.end] == chunk.text`` holds by
construction, and a chunk's ``id`` is derived from where it came from (never random), so re-ingesting the
same text with the same settings gives the same ids.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


class KiremeError(Exception):
    """Base class of every error kireme raises on purpose."""


class ConfigError(KiremeError, ValueError):
    """A chunking option is invalid (the message says which and why)."""


class LoadError(KiremeError):
    """A file could not be read or decoded; ``path`` names it."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def content_hash(text: str) -> str:
    """Hex SHA-256 of the UTF-8 text (surrogates passed through so every ``str`` hashes)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Document:
    """Decoded text plus where it came from. All chunk offsets refer to ``text``."""

    text: str
    id: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"Document.text must be str, not {type(self.text).__name__}")
        if not self.id:
            object.__setattr__(self, "id", "sha256:" + content_hash(self.text)[:16])
        object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))

    @property
    def sha256(self) -> str:
        """Content hash of ``text``; part of every chunk id."""
        cached = self.__dict__.get("_sha256")
        if cached is None:
            cached = content_hash(self.text)
            object.__setattr__(self, "_sha256", cached)
        return cached


@dataclass(frozen=True)
class Chunk:
    """One exact slice ``[start, end)`` of a document, with its measured size."""

    text: str
    start: int
    end: int
    doc_id: str
    index: int
    id: str
    size: int
    unit: str
    headings: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.metadata, MappingProxyType):
            object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))

    def to_dict(self) -> dict[str, Any]:
        """The JSONL row written by ``kireme chunk`` (a stable contract: extend, never rename)."""
        return {
            "id": self.id,
            "doc_id": self.doc_id,
            "index": self.index,
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "size": self.size,
            "unit": self.unit,
            "headings": list(self.headings),
            "metadata": dict(self.metadata),
        }


def chunk_id(doc: Document, config_hash: str, start: int, end: int) -> str:
    """Deterministic id from (doc id, doc content, chunking config, span)."""
    key = "\x1f".join((doc.id, doc.sha256, config_hash, str(start), str(end)))
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
