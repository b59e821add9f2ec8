"""Where a plain text's lines may open with a heading it writes in its own lines.

Four readers look for an outline written into a plain text's lines — the articles of Japanese rules
(`kireme.text.articles`: ``第``, ``附``), a wiki's sections (`kireme.text.wikitext`: ``=``), the
divisions of an English contract or handbook (`kireme.text.divisions`: ``Part``, ``Chapter``,
``Article``, ``Section``, ``Appendix``…, ``§``) and the titles reStructuredText and setext underline
(`kireme.text.underlines`: a line of ``---``, ``~~~``… under the title). Every plain text is asked for all
four, and most have none, so the lines are found once for all of them: one pass over the line feeds (in C
where the extension is built) keeps the start of each line that opens — after spaces, tabs and ideographic
spaces — with ``第``, ``附``, ``=``, ``§`` or a division keyword and a space or tab, or is a line of three
or more of one underline mark, grouped by its first character, and each reader takes its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from kireme._native import native

__all__ = ["DIVISION_KEYWORDS", "UNDERLINE_MARKS", "any_heading_lines", "line_end", "lines_opening_with"]

# the words an English document's divisions open with (`kireme.text.divisions`; the C scan has them too)
DIVISION_KEYWORDS = (
    "Part", "PART", "Chapter", "CHAPTER", "Article", "ARTICLE", "Section", "SECTION",
    "Appendix", "APPENDIX", "Schedule", "SCHEDULE", "Annex", "ANNEX", "Exhibit", "EXHIBIT",
)  # fmt: skip
# the adornments other than ``=`` a title's underline or overline is made of (`kireme.text.underlines`): a
# line of three or more of one, and nothing else
UNDERLINE_MARKS = "-~^\"'+*#_"
_UNDERLINE = "|".join(re.escape(mark) + "{3,}" for mark in UNDERLINE_MARKS)
_OPENER = rf"(?:[第附=§]|(?:{'|'.join(DIVISION_KEYWORDS)})[ \t]|(?:{_UNDERLINE})[ \t\r]*(?:\n|\Z))"
_LINE = re.compile(rf"\n[ \t\u3000]*(?={_OPENER})")
_FIRST_LINE = re.compile(rf"[ \t\u3000]*{_OPENER}")
_BLANKS = " \t\u3000"


def any_heading_lines(text: str, firsts: str | None = None) -> bool:
    """Whether some line of ``text`` may open with a heading — with ``firsts``, one whose first character
    is one of them (most plain texts have none: the readers are then not asked at all)."""
    groups = _grouped(text)
    if firsts is None:
        return bool(groups)
    return any(first in groups for first in firsts)


def lines_opening_with(text: str, firsts: str) -> list[int]:
    """The start of every line of ``text`` that may open with a heading (see the module docstring) whose
    first character is one of ``firsts``, in order."""
    groups = _grouped(text)
    if not groups:
        return []
    found = [start for first in firsts for start in groups.get(first, ())]
    if sum(first in groups for first in firsts) > 1:
        found.sort()
    return found


@lru_cache(maxsize=4)
def _grouped(text: str) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for start in _heading_lines(text):
        first = start
        while text[first] in _BLANKS:
            first += 1
        groups.setdefault(text[first], []).append(start)
    return groups


def line_end(text: str, start: int) -> int:
    """Where the line holding ``start`` ends, trailing whitespace (ideographic spaces too) left out: where a
    heading read from its line ends."""
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    while end > start and text[end - 1] in " \t\u3000\r":
        end -= 1
    return end


def _heading_lines_python(text: str) -> list[int]:
    """The start of every line that may open with a heading: the reference for the C scan."""
    starts = [m.start() + 1 for m in _LINE.finditer(text)]
    if _FIRST_LINE.match(text) is not None:
        starts.insert(0, 0)
    return starts


# in C one pass over the line feeds (a regular expression per reader took 0.5–1 ns a character each, and
# English prose opens a line with one of the keywords' first letters every few lines)
_heading_lines: Callable[[str], list[int]] = native("heading_lines") or _heading_lines_python
