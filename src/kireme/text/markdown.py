"""Markdown headings found by a real parser (markdown-it-py, CommonMark), with exact character offsets.

Regexes get Markdown wrong where it matters for chunking: a ``#`` line inside a code fence is not a
heading, a setext heading (``Title`` over ``=====``) is. markdown-it-py reports each block's line range;
lines are mapped back to offsets in the exact text (``\\r\\n`` kept), so headings line up with chunks.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Heading:
    """A heading block: its span in the text, its level (1–6) and its plain title."""

    start: int
    end: int
    level: int
    title: str


@lru_cache(maxsize=1)
def _parser():
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark")


def _line_starts(text: str) -> list[int]:
    starts = [0]
    pos = text.find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    return starts


def markdown_headings(text: str) -> list[Heading]:
    """Every ATX and setext heading of ``text``, in order."""
    tokens = _parser().parse(text)
    lines = _line_starts(text)
    out: list[Heading] = []
    for i, token in enumerate(tokens):
        if token.type != "heading_open" or token.map is None:
            continue
        first, last = token.map
        start = lines[first]
        end = lines[last] if last < len(lines) else len(text)
        while end > start and text[end - 1] in "\r\n":
            end -= 1
        inline = tokens[i + 1] if i + 1 < len(tokens) else None
        title = _plain(inline) if inline is not None and inline.type == "inline" else ""
        out.append(Heading(start, end, int(token.tag[1]), title))
    return out


def _plain(inline) -> str:
    """The visible text of an inline token (emphasis, code and links reduced to their text)."""
    parts = [child.content for child in inline.children or () if child.type in ("text", "code_inline")]
    return "".join(parts).strip() or inline.content.strip()


class HeadingPaths:
    """The heading path above any offset: ``("手順", "実行")`` for text under ``# 手順`` / ``## 実行``."""

    def __init__(self, headings: Sequence[Heading]) -> None:
        self._starts = [h.start for h in headings]
        self._paths: list[tuple[str, ...]] = []
        stack: list[Heading] = []
        for h in headings:
            while stack and stack[-1].level >= h.level:
                stack.pop()
            stack.append(h)
            self._paths.append(tuple(x.title for x in stack))

    def at(self, position: int) -> tuple[str, ...]:
        """Headings that start at or before ``position`` and are still open there."""
        i = bisect_right(self._starts, position) - 1
        return self._paths[i] if i >= 0 else ()
