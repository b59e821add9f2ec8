"""The context a reader is given: retrieved chunks, whole, cited, within a token budget.

`assemble_context` takes hits best first and keeps each chunk only if the *whole rendered context* still
fits the budget with it; a chunk that does not fit is skipped (never cut) and the next one is tried, so
a long chunk ranked high does not push out every shorter one after it. The budget is checked by
measuring the exact final string, so ``measure(result.text) <= budget`` always holds.

Rendering groups the kept chunks by document. Documents are numbered ``[1]``, ``[2]``… in the order of
their best-ranked chunk, so the reader can cite them and the caller can list them after the answer.
Within a document chunks appear in document order (by ``start``), each as its own block (nothing is
merged) under a one-line header that cites the source, the heading path and, for paged formats, the
page::

    [1] 規程/旅費.md — 第3章 宿泊 > 第3条 宿泊費 (p.3)
    宿泊費は1泊につき12,000円を上限とする。
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kireme.errors import ConfigError
from kireme.index.store import Hit, StoredChunk
from kireme.length import Tokens

DEFAULT_READER_TOKENS = 4096
DEFAULT_ANSWER_RESERVE = 512


@dataclass(frozen=True)
class Source:
    """One cited document: its number in the context and what of it the reader was shown.

    ``headings`` holds the heading path of every rendered chunk of the document (document order, each
    path once); ``pages`` the sorted page numbers they came from (empty for formats without pages);
    ``spans`` the exact offsets of the passages passed from it.
    """

    number: int
    source: str
    doc_id: str
    title: str = ""
    headings: tuple[tuple[str, ...], ...] = ()
    pages: tuple[Any, ...] = ()
    # where each passage passed from it lies in the document, ``(start, end)`` in document order: a page can
    # show them in place
    spans: tuple[tuple[int, int], ...] = ()

    @property
    def label(self) -> str:
        """``[1] 規程/旅費.md (p.3, 5)``: one line for a list of sources under an answer."""
        pages = _pages_text(self.pages)
        return f"[{self.number}] {self.source}" + (f" ({pages})" if pages else "")


@dataclass
class AssembledContext:
    """The context string and how it was made.

    ``used`` are the rendered hits in rendered order (by source number, then document order);
    ``skipped`` the hits that did not fit, in rank order; ``tokens`` is ``measure(text)``.
    """

    text: str
    used: list[Hit] = field(default_factory=list)
    skipped: list[Hit] = field(default_factory=list)
    tokens: int = 0
    sources: list[Source] = field(default_factory=list)
    budget: int = 0
    best_cut: bool = False  # the best hit did not fit whole: its sentences that fit were passed
    best_left_out: bool = False  # no sentence of the best hit fitted: later hits were passed without it
    best_needs: int = (
        0  # then (or when nothing fitted at all) the smallest budget that passes a sentence of it
    )


def assemble_context(
    hits: Sequence[Hit],
    budget: int,
    measure: Callable[[str], int] | None = None,
    *,
    separator: str = "\n\n",
) -> AssembledContext:
    """Whole chunks from ``hits`` (best first), grouped and cited, in at most ``budget`` units of ``measure``.

    ``measure`` defaults to `kireme.length.Tokens` (cl100k_base, offline). A hit whose chunk id was
    already taken (the same chunk returned twice) is ignored. ``budget`` 0 gives an empty context.
    """
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 0:
        raise ConfigError(f"context budget must be a whole number of tokens >= 0, got {budget!r}")
    measure = measure if measure is not None else Tokens()
    used: list[Hit] = []  # in rank order
    skipped: list[Hit] = []
    seen: set[str] = set()
    text, tokens = "", 0  # the last accepted rendering and its measured size
    for hit in hits:
        if hit.chunk.id in seen:
            continue
        if budget == 0:
            skipped.append(hit)
            continue
        # a cheap lower bound first: the block alone must fit
        if measure(_block(1, hit.chunk)) > budget:
            skipped.append(hit)
            continue
        candidate = _render([*used, hit], separator)[0]
        size = measure(candidate)
        if size <= budget:
            used.append(hit)
            seen.add(hit.chunk.id)
            text, tokens = candidate, size
        else:
            skipped.append(hit)
    final, ordered, sources = _render(used, separator)
    assert final == text and tokens <= budget  # the string measured is the string returned
    return AssembledContext(
        text=text, used=ordered, skipped=skipped, tokens=tokens, sources=sources, budget=budget
    )


def default_budget(
    reader_tokens: int = DEFAULT_READER_TOKENS,
    question_tokens: int = 0,
    answer_reserve: int = DEFAULT_ANSWER_RESERVE,
    template_tokens: int = 0,
) -> int:
    """Tokens left for the context in a reader's window once the rest of the prompt and the answer fit.

    ``reader_tokens`` is the reader model's context window, ``answer_reserve`` what is kept free for
    its answer, ``question_tokens`` and ``template_tokens`` the rest of the prompt. Raises
    `ConfigError` when nothing would be left for the context.
    """
    parts = {
        "reader_tokens": reader_tokens,
        "question_tokens": question_tokens,
        "answer_reserve": answer_reserve,
        "template_tokens": template_tokens,
    }
    for name, value in parts.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ConfigError(f"{name} must be a whole number >= 0, got {value!r}")
    left = reader_tokens - question_tokens - answer_reserve - template_tokens
    if left <= 0:
        raise ConfigError(
            f"no room for context: the reader's {reader_tokens} tokens are taken by the question "
            f"({question_tokens}), the prompt template ({template_tokens}) and the answer reserve "
            f"({answer_reserve}); raise the reader's context size or shorten the question"
        )
    return left


# ------------------------------------------------------------------------------------------ rendering


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _source_name(chunk: StoredChunk) -> str:
    return _one_line(chunk.source or chunk.title or chunk.doc_id) or "(unnamed)"


def _chunk_pages(metadata: Mapping[str, Any]) -> tuple[Any, ...]:
    pages = metadata.get("pages")
    if isinstance(pages, list | tuple) and pages:
        return tuple(p for p in pages if p is not None)
    page = metadata.get("page")
    return () if page is None or page == "" else (page,)


def _page_key(page: Any) -> tuple[int, Any]:
    return (0, page) if isinstance(page, int) and not isinstance(page, bool) else (1, str(page))


def _pages_text(pages: Sequence[Any]) -> str:
    """``p.3``; ``p.3–4`` for a run; ``p.3, 5`` otherwise."""
    if not pages:
        return ""
    values = sorted(set(pages), key=_page_key)
    ints = all(isinstance(p, int) and not isinstance(p, bool) for p in values)
    if len(values) > 1 and ints and values[-1] - values[0] == len(values) - 1:
        return f"p.{values[0]}–{values[-1]}"
    return "p." + ", ".join(str(p) for p in values)


def _heading_path(chunk: StoredChunk) -> tuple[str, ...]:
    return tuple(h for h in (_one_line(h) for h in chunk.headings) if h)


def _header(number: int, chunk: StoredChunk) -> str:
    header = f"[{number}] {_source_name(chunk)}"
    path = _heading_path(chunk)
    if path:
        header += " — " + " > ".join(path)
    elif chunk.title and _one_line(chunk.title) != _source_name(chunk):
        header += " — " + _one_line(chunk.title)
    pages = _pages_text(_chunk_pages(chunk.metadata))
    return header + (f" ({pages})" if pages else "")


def _block(number: int, chunk: StoredChunk) -> str:
    return _header(number, chunk) + "\n" + chunk.text.strip("\r\n")


def _render(hits_by_rank: Sequence[Hit], separator: str) -> tuple[str, list[Hit], list[Source]]:
    """The context for these hits: documents by best rank, chunks by ``start`` within a document."""
    groups: dict[str, list[Hit]] = {}
    for hit in hits_by_rank:  # dict order = order of each document's best hit
        groups.setdefault(hit.chunk.doc_id, []).append(hit)
    blocks: list[str] = []
    ordered: list[Hit] = []
    sources: list[Source] = []
    for number, group in enumerate(groups.values(), start=1):
        group = sorted(group, key=lambda h: (h.chunk.start, h.chunk.end, h.chunk.index))
        paths: list[tuple[str, ...]] = []
        pages: list[Any] = []
        for hit in group:
            blocks.append(_block(number, hit.chunk))
            ordered.append(hit)
            path = _heading_path(hit.chunk)
            if path and path not in paths:
                paths.append(path)
            pages.extend(_chunk_pages(hit.chunk.metadata))
        first = group[0].chunk
        sources.append(
            Source(
                number=number,
                source=_source_name(first),
                doc_id=first.doc_id,
                title=first.title,
                headings=tuple(paths),
                pages=tuple(sorted(set(pages), key=_page_key)),
            )
        )
    return separator.join(blocks), ordered, sources
