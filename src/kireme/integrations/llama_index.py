"""kireme as a LlamaIndex node parser: `KiremeNodeParser` (``pip install 'kireme[llama-index]'``).

``KiremeNodeParser("markdown", max_size=400, unit="tokens")`` takes every kireme strategy and option by
keyword and works wherever a ``NodeParser`` does: ``get_nodes_from_documents``, ``Settings.node_parser``,
``IngestionPipeline(transformations=[...])``.

Each ``TextNode`` gets:

- ``start_char_idx``/``end_char_idx``: kireme's exact code-point offsets into the source text. LlamaIndex's
  ``NodeParser`` recomputes them with ``str.find`` after parsing, which puts a short chunk that repeats
  an earlier sentence at the earlier place; this parser restores kireme's offsets after that step. A node
  cut from a node of an earlier parser has that node's document as its SOURCE (LlamaIndex sets it so),
  and its offsets point into that document too (the parent's start is added).
- the SOURCE, PREVIOUS and NEXT relationships, set as LlamaIndex's own parsers set them;
- metadata (flat, as LlamaIndex vector stores require): the input's metadata, ``headings`` (the heading
  path joined with ``" > "``, when there is one), ``title`` (when known) and ``chunk_id``
  (deterministic). ``headings`` and ``title`` are context for the embedding and the LLM, as kireme's own
  ``embed_text`` puts them in front of a chunk, so both see them; ``chunk_id`` and ``subheadings`` (the
  headings already in the text) are listed in ``excluded_embed_metadata_keys`` and
  ``excluded_llm_metadata_keys``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kireme.errors import ConfigError, MissingExtraError
from kireme.integrations._common import Splitting, chunk_metadata

try:
    from llama_index.core.bridge.pydantic import Field, PrivateAttr
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.node_parser import NodeParser
    from llama_index.core.node_parser.node_utils import build_nodes_from_splits, default_id_func
    from llama_index.core.schema import BaseNode, MetadataMode, TextNode
    from llama_index.core.schema import Document as LIDocument
    from llama_index.core.utils import get_tqdm_iterable
except ImportError as exc:
    raise MissingExtraError("kireme.integrations.llama_index", "llama-index", "llama-index-core") from exc

__all__ = ["EXCLUDED_METADATA_KEYS", "KiremeNodeParser"]

# kireme's metadata that neither the embedding nor the LLM should read: an id, and the headings already in
# the chunk's own text.
EXCLUDED_METADATA_KEYS = ("chunk_id", "subheadings")


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
    markdown strategy when the source is unknown). Bad options raise `ConfigError` here.
    """

    strategy: str = Field(default="recursive", description="The kireme strategy (kireme.STRATEGIES).")
    options: dict[str, Any] = Field(
        default_factory=dict, description="The strategy's options, as kireme.make_chunker takes them."
    )
    format: str | None = Field(
        default=None, description="The input's kireme format; None: from the file suffix or the strategy."
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
        }
        super().__init__(**fields)
        self._splitting = splitting

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serializes this parser under."""
        return "KiremeNodeParser"

    def _parse_nodes(
        self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> list[BaseNode]:
        """One ``TextNode`` per kireme chunk of each input node, with exact offsets and kireme metadata."""
        out: list[BaseNode] = []
        for node in get_tqdm_iterable(nodes, show_progress, "Parsing nodes"):
            text = node.get_content(metadata_mode=MetadataMode.NONE)
            _, chunks = self._splitting.chunks(text, node.metadata)
            built = build_nodes_from_splits([c.text for c in chunks], node, id_func=self.id_func)
            base = _offset_in_source(node)
            for made, chunk in zip(built, chunks, strict=True):
                made.start_char_idx = base + chunk.start
                made.end_char_idx = base + chunk.end
                if self.include_metadata:
                    made.metadata.update(chunk_metadata(chunk, flat=True))
                    made.excluded_embed_metadata_keys = _with(made.excluded_embed_metadata_keys)
                    made.excluded_llm_metadata_keys = _with(made.excluded_llm_metadata_keys)
            out.extend(built)
        return out

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


def _with(keys: list[str]) -> list[str]:
    """A new list: ``keys`` and kireme's excluded keys, each once."""
    return [*keys, *(k for k in EXCLUDED_METADATA_KEYS if k not in keys)]
