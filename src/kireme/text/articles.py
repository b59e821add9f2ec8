"""The headings of Japanese rules and statutes written as plain text: parts, chapters, sections, articles.

A company's rules (就業規則, 出張旅費規程) and the laws they cite reach kireme as plain text far more often
than as Markdown: a ``.txt`` saved from Word, a PDF's text. Their structure is written in the text itself —
``第２章　勤務`` alone on its line, ``（出張旅費）`` over ``第６条　従業員が…`` — and a chunk cut from the middle
of an article (``２　宿泊費の上限額は…``) says nothing about which article, chapter or rule it belongs to
unless those lines are read as headings. `article_headings` reads them, so every strategy reports the
heading path of such a chunk (``第３章 賃金 > 第６条（出張旅費）``) and ``--context headings`` (the
``markdown`` strategy's default, what ``kireme index`` uses) puts it in front of the chunk's
``embed_text``.

What is read, each at the start of a line (spaces and ideographic spaces before it allowed):

* ``第N編``, ``第N章``, ``第N節``, ``第N款``, ``第N目`` alone on their line with an optional title of up to
  40 characters that ends no sentence (``第２章　勤務``; ``第2章では…`` is prose);
* ``附則`` (``附　則``), alone on its line, with an optional parenthesis (``附則（令和５年３月規程第１２号）``);
* an article, ``第N条`` with its branch numbers (``第十四条の二の二``) followed by a space, the article's
  caption in brackets or the end of the line — ``第６条　従業員が…``, ``第6条（出張旅費）…``, ``第1条 目的`` alone
  on its line (up to 20 characters, no sentence or clause mark: a caption without brackets) — never a
  reference in prose (``第３条第２項の規定により``, ``第1条件``). A caption alone on the line right above
  (``（目的）``; or with a blank line between, as a Word file gives each line a paragraph) is the
  article's: the heading starts there and its title is ``第１条（目的）``.

N is written in ASCII or full-width digits or in kanji numerals. The kinds found rank parts over chapters
over sections over subsections over divisions over articles, and take heading levels 1, 2, … in that
order. ``附則`` (supplementary provisions, whose own articles restart at ``第１条``) sits at the level of the
parts or chapters when there are any, else just above the articles, so its articles are its children.

A text needs two such headings or more: one ``第３条　…`` line in an e-mail is a quotation, not an
outline. A heading of an article ends right after its number and caption (the article's text follows on
the same line); the other headings end with their line.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache

from kireme.text.csvtable import text_tables
from kireme.text.divisions import division_headings
from kireme.text.markdown import MARKDOWN_FORMATS, Heading, Outline, markdown_outline
from kireme.text.openers import any_heading_lines, line_end, lines_opening_with
from kireme.text.underlines import underlined_headings
from kireme.text.wikitext import wiki_headings

__all__ = [
    "article_headings",
    "document_headings",
    "headings_outside",
    "markdown_written_headings",
    "text_headings",
    "written_headings",
]

# a number of a part, chapter or article: ASCII or full-width digits, or kanji numerals
_NUMBER = "[0-9０-９〇一二三四五六七八九十百千]+"
_SPACE = "[ \\t\\u3000]"
_CAPTION_BODY = "[（(【][^（）()【】\\n]{1,40}[）)】]"
# the kinds of heading, highest first; ``附則`` is placed among them by `_ranks`
_KINDS = ("編", "章", "節", "款", "目", "条")
_TITLE_MAX = 40
# what ends a sentence: a line ending with one is prose, not a chapter's title
_SENTENCE_END = frozenset("。．.！？!?")

# read at a line start: ``第２章　勤務`` alone on its line (group 1: the number and kind, 2: the kind, 3: the
# title, if any)
_DIVISION = re.compile(rf"{_SPACE}*(第{_NUMBER}([編章節款目]))(?:{_SPACE}+([^\n]*?))?{_SPACE}*\r?(?=\n|\Z)")
# ``附則`` alone on its line, maybe with a parenthesis (group 1: the parenthesis)
_SUPPLEMENT = re.compile(rf"{_SPACE}*附{_SPACE}*則{_SPACE}*([（(][^\n]{{0,60}}[）)])?{_SPACE}*\r?(?=\n|\Z)")
# ``第６条`` (group 1), maybe its caption on the same line (group 2), then a space or the line's end
_ARTICLE = re.compile(
    rf"{_SPACE}*(第{_NUMBER}条(?:の{_NUMBER})*)(?:{_SPACE}*({_CAPTION_BODY}))?(?={_SPACE}|\r?(?:\n|\Z))"
)
# a caption alone on its line (``（目的）``), read on the line right above an article
_CAPTION_LINE = re.compile(rf"{_SPACE}*({_CAPTION_BODY}){_SPACE}*\r?")
_SPACES = re.compile(rf"{_SPACE}+")
# the rest of an article's line that is its caption without brackets (``第1条 目的``): short, no sentence
_CAPTION_MAX = 20
_NOT_A_CAPTION = frozenset("。．.！？!?、，,")


def article_headings(text: str) -> tuple[Heading, ...]:
    """The parts, chapters, sections, articles and supplementary provisions of a plain text, in order
    (see the module docstring); ``()`` when it holds fewer than two. Kept for the last few texts
    (`kireme.text.caches.clear_text_caches`)."""
    # the lines are found once for every reader (`kireme.text.openers`)
    if not any_heading_lines(text, "第附"):
        return ()
    return _article_headings(text)


@lru_cache(maxsize=4)
def _article_headings(text: str) -> tuple[Heading, ...]:
    found: list[tuple[int, int, str, str]] = []  # (start, end, kind, title)
    for line in lines_opening_with(text, "第附"):
        if (m := _ARTICLE.match(text, line)) is not None:
            found.append(_article(text, line, m))
        elif (m := _DIVISION.match(text, line)) is not None:
            title = (m.group(3) or "").strip()
            if len(title) <= _TITLE_MAX and not (title and title[-1] in _SENTENCE_END):
                found.append((line, line_end(text, line), m.group(2), _joined(m.group(1), title)))
        elif (m := _SUPPLEMENT.match(text, line)) is not None:
            found.append((line, line_end(text, line), "附則", "附則" + _SPACES.sub("", m.group(1) or "")))
    if len(found) < 2:
        return ()
    found.sort()
    ranks = _ranks({kind for _, _, kind, _ in found})
    return tuple(Heading(start, end, ranks[kind], title) for start, end, kind, title in found)


def _article(text: str, line: int, m: re.Match[str]) -> tuple[int, int, str, str]:
    """(start, end, kind, title) of the article whose number `_ARTICLE` matched at the start of ``line``."""
    caption = m.group(2)
    start = line
    if caption is None and line > 0:  # a caption alone on the line above (a blank line between)
        above_end = line - 1
        above = text.rfind("\n", 0, above_end) + 1
        if above > 0 and not text[above:above_end].strip():  # a paragraph per line (Word)
            above_end = above - 1
            above = text.rfind("\n", 0, above_end) + 1
        captioned = _CAPTION_LINE.fullmatch(text, above, above_end)
        if captioned is not None:
            caption = captioned.group(1)
            start = above
    end = m.end(2) if m.group(2) is not None else m.end(1)
    title = _joined(m.group(1), _SPACES.sub("", caption or ""), "")
    if caption is None:  # ``第1条 目的`` alone on its line, the article's text below: a caption too
        stop = line_end(text, line)
        rest = text[end:stop].strip(" \t\u3000")
        if rest and len(rest) <= _CAPTION_MAX and not _NOT_A_CAPTION.intersection(rest):
            end, title = stop, _joined(m.group(1), rest)
    return start, end, "条", title


def _ranks(kinds: set[str]) -> dict[str, int]:
    """Each kind found, its heading level: the kinds in `_KINDS` order from 1; ``附則`` at the top (the
    level of the parts, chapters or whatever division is highest) when there is a division, else right
    above the articles."""
    divisions = [kind for kind in _KINDS[:-1] if kind in kinds]
    order = divisions + (["附則"] if "附則" in kinds and not divisions else []) + ["条"] * ("条" in kinds)
    levels = {kind: min(level, 6) for level, kind in enumerate(order, start=1)}
    if "附則" in kinds and divisions:
        levels["附則"] = 1
    return levels


def _joined(number: str, title: str, space: str = " ") -> str:
    """A heading's title: its number and, after ``space``, its title with every run of spaces made one."""
    title = _SPACES.sub(" ", title).strip()
    return f"{number}{space}{title}" if title else number


def written_headings(text: str) -> tuple[Heading, ...]:
    """The outline a plain text writes in its own lines: its MediaWiki ``== Section ==`` headings
    (`kireme.text.wikitext`) or its underlined titles (`kireme.text.underlines`: reStructuredText, setext),
    whichever it has more of, and its divisions — the articles and chapters of Japanese rules
    (`article_headings`) or the parts, articles and sections of an English contract or handbook
    (`kireme.text.divisions`), whichever it has more of — the divisions below the deepest wiki level when
    it has both (a wiki page of rules: ``== 第1章 総則 ==`` over ``第1条（目的）``)."""
    if not any_heading_lines(text):
        return ()
    wiki = wiki_headings(text)
    underlined = underlined_headings(text)
    sections = wiki if len(wiki) >= len(underlined) else underlined
    japanese = article_headings(text)
    english = division_headings(text)
    divisions = english if len(english) > len(japanese) else japanese
    if not sections or not divisions:
        return sections or divisions
    depth = max(h.level for h in sections)
    nested = (replace(h, level=min(h.level + depth, 6)) for h in divisions)
    return tuple(sorted((*sections, *nested), key=lambda h: h.start))


def text_headings(text: str) -> tuple[Heading, ...]:
    """`written_headings` of a plain text, those inside its tables (`text_tables`: a row of cells pasted
    from a spreadsheet may open with ``第１条<TAB>``) left out."""
    headings = written_headings(text)
    if not headings:
        return headings
    return headings_outside(headings, [(t.start, t.end) for t in text_tables(text)])


def headings_outside(headings: tuple[Heading, ...], spans: Sequence[tuple[int, int]]) -> tuple[Heading, ...]:
    """``headings`` less those starting inside one of ``spans`` (tables, code blocks: ``(start, end)``);
    ``()`` when fewer than two are left, as `article_headings` gives none then."""
    if not spans:
        return headings
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start < merged[-1][1]:  # one inside or across another: one span
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    starts = [start for start, _ in merged]
    kept = []
    for h in headings:
        i = bisect_right(starts, h.start) - 1
        if i < 0 or h.start >= merged[i][1]:
            kept.append(h)
    return tuple(kept) if len(kept) >= 2 else ()


def markdown_written_headings(text: str, outline: Outline) -> tuple[Heading, ...]:
    """`written_headings` of a Markdown-like text whose outline has no heading at all — a Word file of
    rules without heading styles, rendered one paragraph per line; a wiki page's source saved as ``.md``
    — outside its code blocks and tables; ``()`` where the outline has headings of its own (they are the
    structure then)."""
    if outline.headings:
        return ()
    headings = written_headings(text)
    if not headings:
        return headings
    spans = [(c.start, c.end) for c in outline.code_blocks] + [(t.start, t.end) for t in outline.tables]
    return headings_outside(headings, spans)


def document_headings(text: str, fmt: str) -> tuple[Heading, ...] | None:
    """The headings a chunk's heading path is read from, by the document's format: parsed Markdown (and
    HTML, Word and notebooks as kireme renders them; their `written_headings` when they have no heading
    of their own), the `written_headings` of a plain text or a PDF (articles, wiki sections); ``None``
    for a format without headings (CSV, JSON, code) and for a plain text or PDF without any."""
    if fmt in MARKDOWN_FORMATS:
        outline = markdown_outline(text, warn=False)
        return outline.headings or markdown_written_headings(text, outline)
    if fmt == "text":
        return text_headings(text) or None
    if fmt == "pdf":
        return written_headings(text) or None
    return None
