"""Quick questions about a span of a text, asked without copying or scanning more of it than they need.

A strategy asks of every document whether it holds a mark (``<!--``, ``-->``, a fence) and of spans of it
whether they hold anything but whitespace. The obvious Python (``needle in text``, ``text[a:b].strip()``)
reads or copies the whole span: on a 700 k-character paper, a tenth of what `markdown` costs.
"""

from __future__ import annotations

import re

_NON_SPACE = re.compile(r"\S")


def holds(text: str, needle: str, gate: str = "") -> bool:
    """``needle in text``, asked first of one of its characters (``gate``, else its first): a string's
    search for one character runs at memory speed, for several at about a character a nanosecond, so a
    text without ``<`` is told it holds no ``<!--`` 50 times faster (a 700 k-character paper: 7 µs against
    0.4 ms)."""
    return (gate or needle[0]) in text and needle in text


def has_content(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` holds a character that is not whitespace (``bool(text[start:end].strip())``
    without copying the span: the search stops at the first such character)."""
    return _NON_SPACE.search(text, start, end) is not None
