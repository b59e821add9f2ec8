"""The headings of English contracts, policies and handbooks written as plain text: parts, chapters,
articles, sections.

An employee handbook or a contract reaches kireme as a ``.txt`` saved from Word or a PDF's text as often
as the Japanese rules `kireme.text.articles` reads, and it writes its structure the same way, in its own
lines: ``ARTICLE 5 – TERM AND TERMINATION``, ``Section 2.1 Payment Terms``, ``CHAPTER III``. A chunk cut
from the middle of a section (``Late payments bear interest at…``) says nothing about which section or
article it belongs to unless those lines are read as headings. `division_headings` reads them, so every
strategy reports the path of such a chunk (``Article 5 Term and Termination > Section 5.2 Notice``) and
``--context headings`` (the ``markdown`` strategy's default, what ``kireme index`` uses) puts it in front
of the chunk's ``embed_text``.

What is read, at the start of a line (spaces and tabs before it allowed): ``Part``, ``Chapter``,
``Article`` or ``Section`` (capitalised or in capitals) or ``§``, a number (``5``, ``2.1``, ``IV``, a
single capital letter), then nothing, or a title: after a space, a dash, a colon or a full stop, a
title that starts with a capital letter (or a quotation mark and one) and either ends the line (up to 80
characters, a full stop at its end allowed) or ends with a full stop and a space before the section's
text on the same line (``Section 2.1 Payment. The customer shall pay…``, up to 60 characters). ``Appendix``,
``Schedule``, ``Annex`` and ``Exhibit`` with a number or letter are read the same way.

Not headings: a reference in prose (``Section 3 of this Agreement``, ``Article 5 shall apply``: the title
would start in lower case), a keyword in lower case, a line whose rest is a long sentence, and a text with
fewer than two such lines (one ``Section 4`` in an e-mail is a quotation, not an outline).

The kinds found rank parts over chapters over articles over sections and take heading levels 1, 2, … in
that order; a dotted number goes one level deeper per dot (``Section 2.1`` under ``Section 2``); appendices
sit at the level of the highest kind found.
"""

from __future__ import annotations

import re
from functools import lru_cache

from kireme.text.markdown import Heading
from kireme.text.openers import DIVISION_KEYWORDS, any_heading_lines, line_end, lines_opening_with

__all__ = ["division_headings"]

_KINDS = ("part", "chapter", "article", "section")
_APPENDICES = frozenset({"appendix", "schedule", "annex", "exhibit"})
_KEYWORD = "|".join(DIVISION_KEYWORDS)
# the first characters of the headings: the lines that open with one are tried (`lines_opening_with`)
_FIRSTS = "".join(dict.fromkeys(word[0] for word in DIVISION_KEYWORDS)) + "§"
# the keyword and the number (``2.1``, ``IV``, ``A``; a full stop after it), then a space, a dash, a colon
# or the line's end: not ``Section 2a`` or ``Part of``
_HEAD = re.compile(
    rf"[ \t]*(?:({_KEYWORD})[ \t]+|(§)[ \t]*)([0-9]+(?:\.[0-9]+)*|[IVXLCDM]+|[A-Z])\.?(?=[ \t\-–—:\r\n]|\Z)"
)
# between the number and the title: spaces, or a dash or a colon and the spaces around it
_SEPARATOR = re.compile(r"[ \t]*[-–—:][ \t]*|[ \t]+")
_TITLE_START = re.compile(r"[\"“‘']?[A-Z]")
_LINE_TITLE_MAX = 80
_RUN_IN_TITLE_MAX = 60
_WORDS_MAX = 12
_NOT_A_TITLE_END = frozenset("?!;,:")


def division_headings(text: str) -> tuple[Heading, ...]:
    """The parts, chapters, articles, sections and appendices of a plain text, in order (see the module
    docstring); ``()`` when it holds fewer than two. Kept for the last few texts
    (`kireme.text.caches.clear_text_caches`)."""
    if not any_heading_lines(text, _FIRSTS):
        return ()
    return _division_headings(text)


@lru_cache(maxsize=4)
def _division_headings(text: str) -> tuple[Heading, ...]:
    found = [
        heading
        for start in lines_opening_with(text, _FIRSTS)
        if (heading := _division(text, start)) is not None
    ]
    if len(found) < 2:
        return ()
    kinds = [kind for kind in _KINDS if any(h[2] == kind for h in found)]
    levels = {kind: level for level, kind in enumerate(kinds, start=1)}
    return tuple(
        Heading(start, end, 1 if kind in _APPENDICES else min(levels[kind] + number.count("."), 6), title)
        for start, end, kind, number, title in found
    )


def _division(text: str, start: int) -> tuple[int, int, str, str, str] | None:
    """(start, end, kind, number, title) of the heading that opens the line at ``start``, or ``None``."""
    m = _HEAD.match(text, start)
    if m is None:
        return None
    keyword, number = m.group(1) or m.group(2), m.group(3)
    kind = "section" if keyword == "§" else keyword.lower()
    name = f"§ {number}" if keyword == "§" else f"{keyword.capitalize()} {number}"
    eol = line_end(text, m.end())
    if not text[m.end() : eol].strip(" \t"):  # the number alone: the title may be on the line below
        below = _title_below(text, eol)
        if below is None:
            return start, m.end(), kind, number, name
        return start, below[0], kind, number, f"{name} {below[1]}"
    sep = _SEPARATOR.match(text, m.end(), eol)
    if sep is None or _TITLE_START.match(text, sep.end(), eol) is None:
        return None  # ``Section 3 of this Agreement``: prose
    title_line = text[sep.end() : eol]
    run_in = title_line.find(". ")
    if run_in >= 0:  # a run-in title, its section's text on the same line (``Section 2.1 Payment. The…``)
        title = title_line[:run_in]
        if len(title) > _RUN_IN_TITLE_MAX or len(title.split()) > _WORDS_MAX:
            return None
        return start, sep.end() + run_in + 1, kind, number, f"{name} {title}"
    title = title_line.removesuffix(".")
    if len(title_line) > _LINE_TITLE_MAX or len(title.split()) > _WORDS_MAX or title[-1] in _NOT_A_TITLE_END:
        return None
    return start, eol, kind, number, f"{name} {title}"


def _title_below(text: str, eol: int) -> tuple[int, str] | None:
    """(end, title) of the line right below a heading that is its number alone (the line ends at ``eol``),
    when that line is a title in capitals (``DEFINITIONS``, ``TERM AND TERMINATION``), else ``None``."""
    if eol >= len(text):
        return None
    below_start = text.find("\n", eol) + 1
    if below_start <= 0:
        return None
    below_end = line_end(text, below_start)
    title = text[below_start:below_end].strip(" \t")
    if not title or not title.isupper() or len(title) > _RUN_IN_TITLE_MAX or title[-1] in ".?!;,:":
        return None
    if _HEAD.match(text, below_start) is not None:  # the next heading (``ARTICLE 2``), not a title
        return None
    return below_end, title
