"""kireme as a LangChain text splitter: `KiremeTextSplitter` (``pip install 'kireme[langchain]'``).

Every kireme strategy and option is a keyword (``KiremeTextSplitter("markdown", max_size=400,
unit="tokens")``); LangChain's own ``chunk_size``, ``chunk_overlap`` and ``length_function`` are
accepted as the names of ``max_size``, ``overlap`` and ``unit``. Each chunk's metadata is the input
document's metadata plus ``headings`` (its heading path, a list), ``chunk_id`` (deterministic) and
``title`` when the document has one; with ``add_start_index=True`` also ``start_index`` and
``end_index``, kireme's exact code-point offsets (LangChain's base class finds them with ``str.find``,
which gives a repeated sentence the offset of its first occurrence; kireme never searches).

Examples:
    >>> from kireme.integrations.langchain import KiremeTextSplitter
    >>> KiremeTextSplitter("sentence", max_size=8).split_text("今日は晴れ。明日は雨。")
    ['今日は晴れ。', '明日は雨。']
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kireme.errors import ConfigError, MissingExtraError
from kireme.integrations._common import Splitting, check_page_content, chunk_metadata, content_of

try:
    from langchain_core.documents import Document as LCDocument
    from langchain_text_splitters import TextSplitter
except ImportError as exc:
    raise MissingExtraError("kireme.integrations.langchain", "langchain", "langchain-text-splitters") from exc

__all__ = ["KiremeTextSplitter"]

# LangChain's names for kireme options: a splitter written for LangChain keeps working with kireme.
ALIASES = {"chunk_size": "max_size", "chunk_overlap": "overlap", "length_function": "unit"}


def _options(options: dict[str, Any]) -> dict[str, Any]:
    """kireme options from keywords that may use LangChain's names for them."""
    out = dict(options)
    for alias, name in ALIASES.items():
        if alias in out:
            if name in out:
                raise ConfigError(f"give {name} or its LangChain name {alias}, not both")
            out[name] = out.pop(alias)
    return out


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
        self._splitting = Splitting(strategy, _options(options), format)
        self._page_content = check_page_content(page_content)
        chunker = self._splitting.chunker
        length: Callable[[str], int] = chunker.measure
        super().__init__(
            chunk_size=chunker.max_size,
            chunk_overlap=chunker.overlap,
            length_function=length,
            add_start_index=bool(add_start_index),
            strip_whitespace=False,
        )

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
        kireme's (see the module docstring); offsets come from the chunks, never from a search."""
        if metadatas is not None and len(metadatas) != len(texts):
            raise ConfigError(f"got {len(texts)} texts but {len(metadatas)} metadatas")
        out: list[LCDocument] = []
        for i, text in enumerate(texts):
            base = metadatas[i] if metadatas is not None else {}
            _, chunks = self._splitting.chunks(text, base)
            for chunk in chunks:
                metadata = copy.deepcopy(base)
                metadata.update(chunk_metadata(chunk))
                if self._add_start_index:
                    metadata["start_index"] = chunk.start
                    metadata["end_index"] = chunk.end
                out.append(LCDocument(page_content=content_of(chunk, self._page_content), metadata=metadata))
        return out

    def split_documents(self, documents: Iterable[LCDocument]) -> list[LCDocument]:
        """Split LangChain documents; each chunk keeps its document's metadata."""
        docs = list(documents)
        return self.create_documents([d.page_content for d in docs], [d.metadata for d in docs])

    def transform_documents(self, documents: Sequence[LCDocument], **kwargs: Any) -> Sequence[LCDocument]:
        """``BaseDocumentTransformer`` entry point: the same as `split_documents`."""
        return self.split_documents(list(documents))
