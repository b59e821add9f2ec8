"""kireme as a Haystack component: `KiremeDocumentSplitter` (``pip install 'kireme[haystack]'``).

``KiremeDocumentSplitter("markdown", max_size=400, unit="tokens")`` takes every kireme strategy and
option by keyword; ``run(documents=[...])`` returns ``{"documents": [...]}``, one per chunk, in a
``Pipeline`` or alone. Each chunk's ``meta`` is its document's meta plus the keys Haystack's own
``DocumentSplitter`` writes, with exact values:

- ``source_id`` (the input document's id), ``split_id`` (the chunk's index in it), ``page_number``
  (1 + the form feeds before the chunk, as Haystack's PDF converters separate pages),
  ``split_idx_start``: kireme's code-point offset of the chunk in the input's content, never found by
  searching; ``_split_overlap`` (as Haystack writes it) when ``overlap`` is set;
- kireme's: ``split_idx_end``, ``headings`` (the heading path, a list), ``title`` (when known),
  ``chunk_id`` (deterministic).

``to_dict``/``from_dict`` serialize it like Haystack's components, so ``Pipeline.dumps``/``loads`` keep
it (loading needs ``allowed_modules=["kireme.*"]``: Haystack only imports its own modules by default).
"""

from __future__ import annotations

import copy
from typing import Any

from kireme.document import Chunk
from kireme.errors import ConfigError, MissingExtraError
from kireme.integrations._common import Splitting, check_page_content, chunk_metadata, content_of

try:
    from haystack import Document, component
    from haystack.core.serialization import default_from_dict, default_to_dict
except ImportError as exc:
    raise MissingExtraError("kireme.integrations.haystack", "haystack", "haystack-ai") from exc

__all__ = ["KiremeDocumentSplitter"]

_PLAIN = (str, int, float, bool, type(None))


def _serializable(value: Any) -> bool:
    """Whether an option survives YAML/JSON: plain values, and lists and dicts of them."""
    if isinstance(value, list | tuple):
        return all(_serializable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _serializable(v) for k, v in value.items())
    return isinstance(value, _PLAIN)


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

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """One document per chunk of each input document (none for an empty one).

        :param documents: the documents to split; each needs text ``content``.
        :returns: ``{"documents": [...]}``, the chunks of every document in order.
        """
        if not isinstance(documents, list) or not all(isinstance(d, Document) for d in documents):
            raise TypeError("KiremeDocumentSplitter expects a list of Haystack Documents")
        out: list[Document] = []
        for doc in documents:
            if doc.content is None:
                raise TypeError(f"document {doc.id} has no text content (content is None): convert it first")
            _, chunks = self._splitting.chunks(doc.content, doc.meta)
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
                "page_number": page,
                "split_id": i,
                "split_idx_start": chunk.start,
                "split_idx_end": chunk.end,
                **chunk_metadata(chunk),
            }
            made.append(Document(content=content_of(chunk, self.content), meta=copy.deepcopy(meta)))
        if self._splitting.chunker.overlap and self.content == "text":
            _add_overlaps(made, chunks)
        return made

    def to_dict(self) -> dict[str, Any]:
        """The component as Haystack serializes components (``init_parameters`` are the keywords)."""
        bad = sorted(k for k, v in self.options.items() if not _serializable(v))
        if bad:
            raise ConfigError(
                f"option(s) {', '.join(bad)} hold Python objects that cannot be serialized: "
                "give them as names (unit='tokens', similarity='bigram')"
            )
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
