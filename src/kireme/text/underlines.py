"""Section titles underlined in a plain text, as reStructuredText and setext write them: its outline.

Sphinx documentation, Python's own docs and many plain-text manuals and READMEs write a section title on a
line of its own with a line of one repeated mark under it (and sometimes over it too)::

    Before you travel
    -----------------

Read as plain text, such a title is a short line and its underline a line of punctuation: no chunk said
which section it came from. `underlined_headings` reads them (`kireme.text.headings.underlined_title`: not
indented, a letter or a digit in it, no full stop or comma at its end, an underline of ``=``, ``-``,
``~``, ``^``, ``"``, ``'``, ``+``, ``*``, ``#`` or ``_`` at least as long as the title, a blank line, the
text's start or an overline of the same mark above it), so every strategy reports the heading path of a
chunk (``Expense guide > Before you travel``) and ``--context headings`` puts it in front of its
``embed_text``. The level of a title is its style's — its mark, and whether it has an overline — in the
order the styles first appear, as reStructuredText assigns them (setext: ``=`` then ``-``). Not read: a
text with fewer than two such titles, a backtick line (a code fence), and a dotted or a mixed line.
"""

from __future__ import annotations

from functools import lru_cache

from kireme.text.headings import ADORNMENT_PAD, ADORNMENTS, adornment, underlined_title
from kireme.text.markdown import Heading
from kireme.text.openers import any_heading_lines, lines_opening_with

__all__ = ["underlined_headings"]


def underlined_headings(text: str) -> tuple[Heading, ...]:
    """The underlined section titles of a plain text, in order (see the module docstring); ``()`` when it
    holds fewer than two. Kept for the last few texts (`kireme.text.caches.clear_text_caches`)."""
    # the lines are found once for every reader (`kireme.text.openers`)
    if not any_heading_lines(text, ADORNMENTS):
        return ()
    return _underlined_headings(text)


@lru_cache(maxsize=4)
def _underlined_headings(text: str) -> tuple[Heading, ...]:
    styles: dict[tuple[str, bool], int] = {}
    found: list[Heading] = []
    # each line of marks: an underline, when a title is above it
    for line in lines_opening_with(text, ADORNMENTS):
        if line == 0 or text[line] not in ADORNMENTS or (found and line < found[-1].end):
            continue  # indented (a wiki's `` = = Section = = ``), or inside the heading before
        title_start = text.rfind("\n", 0, line - 1) + 1
        if not underlined_title(text, title_start):
            continue
        mark = text[line]
        start = title_start
        if title_start > 0:  # an overline of the same mark (`underlined_title` held it to the title)
            above = text.rfind("\n", 0, title_start - 1) + 1
            if adornment(text, above, title_start - 1) == mark:
                start = above
        level = styles.setdefault((mark, start != title_start), len(styles) + 1)
        under_end = text.find("\n", line)
        under_end = len(text) if under_end < 0 else under_end
        title = text[title_start : line - 1].strip()
        found.append(
            Heading(start, len(text[line:under_end].rstrip(ADORNMENT_PAD)) + line, min(level, 6), title)
        )
    return tuple(found) if len(found) >= 2 else ()
