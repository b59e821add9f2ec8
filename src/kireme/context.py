"""The context put in front of a chunk for embedding: document title and heading path.

A chunk cut from the middle of a manual ("上限は1泊12,000円とする。") is ambiguous alone; with
"旅費規程 / 第3条 宿泊費" in front it is not. The context goes into `Chunk.embed_text` only: ``text`` and
its offsets never change. Headings whose line is inside the chunk are not repeated, and a path that
starts with the title does not say the title twice.
"""

from __future__ import annotations

from collections.abc import Callable

from kireme.errors import ConfigError
from kireme.text.markdown import Heading, HeadingPaths

CONTEXT_MODES = ("none", "title", "headings")


def check_context_mode(mode: str) -> str:
    if mode not in CONTEXT_MODES:
        raise ConfigError(f"unknown context {mode!r}: choose one of {', '.join(CONTEXT_MODES)}")
    return mode


class ContextBuilder:
    """Builds the prefix for any chunk of one document, and how much of the size budget it can take.

    ``limit`` caps the prefix size (in the chunker's measure): a deep heading path in a small chunk
    keeps its nearest headings and drops the outer ones (then the title) rather than crowd out the text.
    """

    def __init__(
        self,
        mode: str,
        title: str,
        paths: HeadingPaths | None,
        size: Callable[[str], int],
        limit: int,
    ) -> None:
        self.mode = check_context_mode(mode)
        self.title = title.strip() if mode != "none" else ""
        self.paths = paths if mode == "headings" else None
        self.size = size
        self.limit = limit

    def _names(self, chain: tuple[Heading, ...]) -> list[str]:
        names = [h.title.strip() for h in chain if h.title.strip()]
        if names and self.title and names[0] == self.title:
            names = names[1:]
        return names

    def _render(self, names: list[str], title: bool) -> str:
        parts = []
        if title and self.title:
            parts.append(self.title)
        if names:
            parts.append(" > ".join(names))
        return "\n".join(parts) + "\n\n" if parts else ""

    def _fit(self, names: list[str], titles: tuple[bool, ...] = (True, False)) -> str:
        """The fullest prefix within ``limit``: outer headings go first, then the title; the deepest
        heading (the most specific words about the chunk) goes last."""
        order = [(title, drop) for title in titles for drop in range(len(names))]
        order += [(title, len(names)) for title in titles]
        for title, drop in order:
            prefix = self._render(names[drop:], title)
            if not prefix or self.size(prefix) <= self.limit:
                return prefix
        return ""

    def prefix(self, start: int) -> str:
        """The context of a chunk starting at ``start`` (headings at or after ``start`` are in its text)."""
        if self.mode == "none":
            return ""
        chain = self.paths.chain(start) if self.paths is not None else ()
        names = self._names(tuple(h for h in chain if h.start < start))
        if chain and chain[-1].start == start and chain[-1].title.strip() == self.title:
            return self._fit(names, titles=(False,))  # the chunk opens with the title heading itself
        return self._fit(names)

    def largest(self, start: int | None = None) -> int:
        """The largest prefix size any chunk can get: in the section at ``start``, or anywhere."""
        if self.mode == "none":
            return 0
        if self.paths is None:
            chains: list[tuple[Heading, ...]] = [()]
        elif start is None:
            chains = self.paths.all_chains()
        else:
            chains = [self.paths.chain(start)]
        worst = 0
        for chain in chains:
            names = self._names(chain)
            for k in range(len(names) + 1):  # a chunk holding the last headings' lines drops them
                prefix = self._fit(names[:k])
                if prefix:
                    worst = max(worst, self.size(prefix))
        return worst
