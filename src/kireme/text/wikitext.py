"""The section headings of MediaWiki text: ``== Section ==`` lines, read as a plain text's outline.

Company wikis run on MediaWiki more often than on anything else, and what leaves them — an export, a page's
source copied into a ``.txt``, a Wikipedia dump, a corpus built from one (WikiText-103 writes the same lines
with a space between the marks: ``= = Gameplay = =``) — keeps its structure in heading lines of equals
signs. Read as plain text (or as Markdown, where such a line is a line of prose), a chunk from the middle
of a section says nothing about which page or section it came from, and the ``markdown`` strategy packs
the end of one page with the start of the next. `wiki_headings` reads those lines, so every strategy
reports the heading path of such a chunk (``Tower Building > History > Civil War``) and
``--context headings`` (the ``markdown`` strategy's default, what ``kireme index`` uses) puts it in front
of the chunk's ``embed_text``.

What is read: a line that opens with 1 to 6 ``=`` (after spaces or tabs), holds a title, and closes with
the same marks written the same way (``=== Rules ===``, ``==Rules==``, ``= = = Rules = = =``); its level is
the number of ``=``. Not read: a line of ``=`` alone (a Markdown setext underline, a rule), marks that do
not balance (``== Rules =``: MediaWiki reads it, but a plain text that writes it is seldom a wiki), a
title over 150 characters, an assignment or a comparison (``a == b``, which does not open with ``=``),
and a text with fewer than two such lines (one ``== Note ==`` in an e-mail is no outline).
"""

from __future__ import annotations

import re
from functools import lru_cache

from kireme.text.markdown import Heading
from kireme.text.openers import any_heading_lines, lines_opening_with

__all__ = ["wiki_headings"]

# a line's opening marks (1–6 ``=``, with or without one space between them), its title (neither
# starting nor ending with ``=`` or a space) and the same marks again, spaces around each
_MARKS = r"=(?: ?=){0,5}"
_HEADING = re.compile(rf"[ \t]*({_MARKS})[ \t]*([^=\s](?:[^\n]*?[^=\s])?)[ \t]*(\1)[ \t]*\r?(?=\n|\Z)")
_TITLE_MAX = 150


def wiki_headings(text: str) -> tuple[Heading, ...]:
    """The ``== Section ==`` headings of a text, in order (see the module docstring); ``()`` when it holds
    fewer than two. Kept for the last few texts (`kireme.text.caches.clear_text_caches`)."""
    if not any_heading_lines(text, "="):  # the lines are found once for every reader (`kireme.text.openers`)
        return ()
    return _wiki_headings(text)


@lru_cache(maxsize=4)
def _wiki_headings(text: str) -> tuple[Heading, ...]:
    found: list[Heading] = []
    for start in lines_opening_with(text, "="):
        m = _HEADING.match(text, start)
        if m is None or len(m.group(2)) > _TITLE_MAX:
            continue
        found.append(Heading(start, m.end(3), m.group(1).count("="), m.group(2)))  # 1–6 marks
    return tuple(found) if len(found) >= 2 else ()
