"""The data model: a decoded `Document` and the exact `Chunk`s cut from it.

Every chunk is a slice of its document: ``doc.text[chunk.start:chunk.end] == chunk.text`` holds by
construction, and a chunk's ``id`` is derived from where it came from (never random), so re-ingesting the
same text with the same settings gives the same ids.

Documents, regions and chunks pickle and deep-copy to equal objects (their ``metadata`` stays a
read-only view after the round trip), so they can be sent to worker processes.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from types import MappingProxyType
from typing import Any, cast

from kireme._native import native

# Re-exported for code written before `kireme.errors` existed (the public package exports the same three);
# import errors from `kireme.errors`.
from kireme.errors import ConfigError, KiremeError, LoadError

__all__ = [
    "Chunk",
    "ConfigError",
    "Document",
    "KiremeError",
    "LoadError",
    "Region",
    "RegionIndex",
    "chunk_id",
    "content_hash",
]


# `_FromIds` in C (`kireme._speedups.IdField`: the descriptor type), or None: `_FromIds` itself, with hashlib.
_NATIVE_ID_FIELD: Any = native("IdField")

# The read-only empty metadata every document and chunk without metadata shares.
_NO_METADATA: Mapping[str, Any] = MappingProxyType({})
NO_METADATA = _NO_METADATA  # the same view, for the chunkers that build chunks in bulk


def content_hash(text: str) -> str:
    """Hex SHA-256 of the UTF-8 text (surrogates passed through so every ``str`` hashes)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Region:
    """A span of `Document.text` the loader knows more about: a PDF page, a notebook cell, a table.

    Chunks that overlap a region carry its ``metadata`` (``{"page": 3}``, ``{"cell": 5}``); ``kind``
    says what the region is (``"page"``, ``"cell"``, ``"table"``).
    """

    start: int
    end: int
    kind: str
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.end:
            raise ValueError(f"Region span must satisfy 0 <= start <= end, got [{self.start}, {self.end})")
        object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))

    def __getstate__(self) -> dict[str, Any]:
        return _plain_state(self)

    def __setstate__(self, state: dict[str, Any]) -> None:
        _restore_state(self, state)


def _plain_state(obj: object) -> dict[str, Any]:
    """What pickling (and `copy`) stores of a frozen model object: its fields, with the read-only
    ``metadata`` view (a ``mappingproxy``, which pickle refuses) as the plain dict it wraps.

    This is what lets documents and chunks travel to worker processes (``--jobs``, `kireme.parallel`).
    """
    state = dict(obj.__dict__)
    state["metadata"] = dict(state["metadata"])
    return state


def _restore_state(obj: object, state: dict[str, Any], empty: Mapping[str, Any] | None = None) -> None:
    """`_plain_state` back: the fields set as they were, ``metadata`` read-only again (``empty``: the
    shared view to use when there is none)."""
    state = dict(state)
    metadata = state.get("metadata") or {}
    state["metadata"] = empty if empty is not None and not metadata else MappingProxyType(dict(metadata))
    obj.__dict__.update(state)  # frozen: no __setattr__; the fields were checked when first made


@dataclass(frozen=True)
class Document:
    """Decoded text plus where it came from. All chunk offsets refer to ``text``.

    ``metadata`` holds ``source``, ``format`` (``text``, ``markdown``, ``html``, ``ipynb``, ``pdf``,
    ``docx``, ``csv``, ``tsv``), ``title`` when known, and how the bytes were decoded. ``regions`` are
    spans the loader knows more about (pages, cells), sorted by ``start``.
    """

    text: str
    id: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    regions: tuple[Region, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"Document.text must be str, not {type(self.text).__name__}")
        if not self.id:  # the content's id, hashed when first asked for (`_ContentId`), not here
            del self.__dict__["id"]
        metadata = self.metadata
        object.__setattr__(self, "metadata", MappingProxyType(dict(metadata)) if metadata else _NO_METADATA)
        if not self.regions:
            if self.regions != ():
                object.__setattr__(self, "regions", ())
            return
        regions = tuple(sorted(self.regions, key=lambda r: (r.start, r.end)))
        for r in regions:
            if r.end > len(self.text):
                raise ValueError(
                    f"Region [{r.start}, {r.end}) lies outside the text ({len(self.text)} chars)"
                )
        object.__setattr__(self, "regions", regions)

    def __getstate__(self) -> dict[str, Any]:
        return _plain_state(self)

    def __setstate__(self, state: dict[str, Any]) -> None:
        _restore_state(self, state)

    @cached_property
    def format(self) -> str:
        """The loader's format name (``"text"`` when not known). Read once (the metadata is read-only):
        every step of chunking asks it."""
        return str(self.metadata.get("format") or "text")

    @property
    def title(self) -> str:
        """The document title (``metadata["title"]``), else ``""``. `kireme.load.load` gives every file one:
        the one its format names (front matter, first ``#`` heading, ``<title>``, PDF/Word properties),
        else the file name without its extension."""
        return str(self.metadata.get("title") or "")

    @property
    def sha256(self) -> str:
        """Content hash of ``text``; part of every chunk id."""
        cached = self.__dict__.get("_sha256")
        if cached is None:
            cached = content_hash(self.text)
            object.__setattr__(self, "_sha256", cached)
        return cached


def text_document(text: str, fmt: str | None = None) -> Document:
    """``Document(text)`` (``fmt``: ``Document(text, metadata={"format": fmt})``) for a plain string, made
    without the frozen dataclass's ``__init__`` (a chunker handed a string makes one per call; a fifth of the
    time a 20-character string takes): the same fields, the same id worked out when read."""
    doc = object.__new__(Document)
    metadata = _NO_METADATA if fmt is None else _format_metadata(fmt)
    # its `format` set too: what the cached property would work out at its first read, without the
    # property's lock (every step of chunking reads it)
    doc.__dict__.update(text=text, metadata=metadata, regions=(), format=fmt or "text")
    return doc


@lru_cache(maxsize=16)
def _format_metadata(fmt: str) -> Mapping[str, Any]:
    """The read-only metadata ``{"format": fmt}``, one view shared by the documents made of strings."""
    return MappingProxyType({"format": fmt})


class _ContentId:
    """`Document.id` of a document made without one: ``"sha256:"`` and the first 16 hex digits of its content
    hash, worked out the first time it is asked for and kept. A document chunked for its texts alone (as
    peers' users do) is never hashed; one whose chunks' ids are read is hashed once, as before."""

    def __get__(self, doc: Document | None, owner: type | None = None) -> str:
        if doc is None:
            return ""  # the field's default, read off the class
        value = "sha256:" + doc.sha256[:16]
        doc.__dict__["id"] = value
        return value


setattr(Document, "id", _ContentId())  # noqa: B010  # a non-data descriptor: a given id in __dict__ wins


class _FromIds:
    """`Chunk.id` and `Chunk.doc_id` of a chunk made by a chunker: worked out from its document's `ChunkIds`
    the first time either is asked for and kept (then the `ChunkIds` is let go). A chunk whose id is never
    read costs no hashing; equality, ``repr``, `Chunk.to_dict`, pickling and `dataclasses.replace` read them
    as any caller does, so every chunk compares, prints and travels with its id. Nothing points back from
    the `ChunkIds` to its chunks: chunks dropped unread are freed at once, with no cycle for the collector.
    The Python twin of `kireme._speedups.IdField`, which `Chunk` uses where the extension is built."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, chunk: Chunk | None, owner: type | None = None) -> Any:
        if chunk is None:
            return self
        state = chunk.__dict__
        ids: ChunkIds | None = state.get("_ids")
        if ids is None:
            if self.name in state:  # read already (the instance's own value wins unless asked here)
                return state[self.name]
            raise AttributeError(f"'Chunk' object has no attribute {self.name!r}")
        state["id"] = ids(state["start"], state["end"])
        state["doc_id"] = ids.doc_id
        state.pop("_ids", None)  # gone already if another thread read this chunk's id meanwhile
        return state[self.name]


def _id_field(name: str) -> Any:
    """The descriptor of ``Chunk.id`` / ``Chunk.doc_id``: in C where kireme's extension is built."""
    return _NATIVE_ID_FIELD(name) if _NATIVE_ID_FIELD is not None else _FromIds(name)


@dataclass(frozen=True)
class Chunk:
    """One exact slice ``[start, end)`` of a document, with its measured size.

    ``embed_text`` is what to embed: ``text`` with context in front (title, heading path, a table's
    header) or a table row made readable alone; equal to ``text`` when nothing was added.
    """

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
    title: str = ""
    # None (the default): the same as text; __post_init__ fills it in, so it is always a str after
    embed_text: str = cast(str, None)

    def __post_init__(self) -> None:
        if not isinstance(self.metadata, MappingProxyType):
            metadata = MappingProxyType(dict(self.metadata)) if self.metadata else _NO_METADATA
            object.__setattr__(self, "metadata", metadata)
        if self.embed_text is None:
            object.__setattr__(self, "embed_text", self.text)

    def __hash__(self) -> int:
        """By its id, which names it (its document, the configuration and its span): chunks go in sets and
        dict keys (the generated hash failed on the read-only ``metadata``); equal chunks share an id."""
        return hash(self.id)

    def __getstate__(self) -> dict[str, Any]:
        if "_ids" in self.__dict__:
            _ = self.id  # the id and doc_id travel, not the document they are worked out from
        return _plain_state(self)

    def __setstate__(self, state: dict[str, Any]) -> None:
        _restore_state(self, state, empty=_NO_METADATA)

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
            "title": self.title,
            "embed_text": self.embed_text,
        }

    def to_jsonl(self) -> str:
        """`to_dict` as one JSON line (newline included), as ``kireme chunk`` writes it: readable UTF-8; a
        name that is not valid UTF-8 (kept as surrogate escapes) is written with JSON escapes, so the line
        is still valid UTF-8 and the name is not lost."""
        row = self.to_dict()
        line = json.dumps(row, ensure_ascii=False)
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:
            line = json.dumps(row, ensure_ascii=True)
        return line + "\n"


setattr(Chunk, "id", _id_field("id"))  # noqa: B010  # non-data descriptors: a field set in __dict__ wins
setattr(Chunk, "doc_id", _id_field("doc_id"))  # noqa: B010


def lazy_chunk(
    text: str,
    start: int,
    end: int,
    ids: ChunkIds,
    index: int,
    size: int,
    unit: str,
    headings: tuple[str, ...],
    metadata: Mapping[str, Any] | None,
    title: str,
    embed_text: str | None,
) -> Chunk:
    """``Chunk(...)`` for a chunker's own hot path, made without the frozen dataclass's one
    ``object.__setattr__`` per field (``metadata``: None or a dict to make read-only), its ``id`` and ``doc_id``
    worked out from ``ids`` when first asked for (`_FromIds`): what `kireme._speedups.make_chunks` makes when
    given a `ChunkIds`."""
    chunk = object.__new__(Chunk)
    chunk.__dict__.update(
        text=text,
        start=start,
        end=end,
        index=index,
        size=size,
        unit=unit,
        headings=headings,
        metadata=MappingProxyType(dict(metadata)) if metadata else _NO_METADATA,
        title=title,
        embed_text=text if embed_text is None else embed_text,
        _ids=ids,
    )
    return chunk


def chunk_id(doc: Document, config_hash: str, start: int, end: int) -> str:
    """Deterministic id from (doc id, doc content, chunking config, span)."""
    return ChunkIds(doc, config_hash)(start, end)


class ChunkIds:
    """`chunk_id` for many spans of one document: the shared part of the key is hashed once, and nothing is
    hashed before an id is asked for (the document's content hash neither).

    Each chunk a chunker makes holds it (as ``_ids``) until the chunk's id is first read (`_FromIds`); it
    holds none of them."""

    def __init__(self, doc: Document, config_hash: str) -> None:
        self._doc: Document | None = doc
        self._config_hash = config_hash
        self._prefix: bytes | None = None
        self._doc_id = ""
        self._hash: hashlib._Hash | None = None
        self._sha: bytes | None = None  # the prefix's hashing state, kept by `kireme._speedups.IdField`

    @property
    def prefix(self) -> bytes:
        """What every id of the document hashes first: its id, its content hash and the chunker's config."""
        if self._prefix is None:
            doc = self._doc
            assert doc is not None, "the document is let go only once the prefix is made"
            self._doc_id = doc.id
            self._prefix = "\x1f".join((doc.id, doc.sha256, self._config_hash, "")).encode(
                "utf-8", "surrogatepass"
            )
            self._doc = None  # what the ids need is in the prefix now: the text may go
        return self._prefix

    @property
    def doc_id(self) -> str:
        """The document's id (`Document.id`)."""
        return self._doc.id if self._doc is not None else self._doc_id

    def __call__(self, start: int, end: int) -> str:
        if self._hash is None:
            self._hash = hashlib.sha256(self.prefix)
        h = self._hash.copy()
        h.update(f"{start}\x1f{end}".encode("ascii"))
        return h.hexdigest()[:32]


class RegionIndex:
    """Finds the regions a chunk overlaps and turns them into chunk metadata.

    The first overlapping region of each kind gives its metadata (``{"page": 3}``); when a chunk spans
    several regions of one kind, the list of their values is added under the plural
    (``{"page": 3, "pages": [3, 4]}``).
    """

    def __init__(self, regions: tuple[Region, ...]) -> None:
        self._by_kind: dict[str, tuple[list[int], list[Region]]] = {}
        for r in regions:
            starts, items = self._by_kind.setdefault(r.kind, ([], []))
            starts.append(r.start)
            items.append(r)

    def metadata(self, start: int, end: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for kind, (starts, items) in self._by_kind.items():
            hi = bisect.bisect_left(starts, end)
            lo = hi
            while lo > 0 and items[lo - 1].end > start:
                lo -= 1
            hits = [r for r in items[lo:hi] if r.end > start or r.start == start]
            if not hits:
                continue
            for key, value in hits[0].metadata.items():
                out.setdefault(key, value)
            if len(hits) > 1:
                out[kind + "s"] = [r.metadata.get(kind) for r in hits]
        return out
