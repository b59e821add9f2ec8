"""Lead-ins and labels of a Markdown outline: the text that introduces the block after it.

A block whose last line ends with a colon (``次のようになります：``, ``as follows:``) introduces the list, code
block or table after it, and a one-line label right above a code block or table names it (mdBook's
``<span class="filename">ファイル名: src/main.rs</span>``). Chunkers keep them with what they introduce while
the two fit a chunk: the `markdown` strategy (`kireme.structure`) and the markdown preset of `recursive`.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Collection, Sequence
from typing import cast

from kireme._native import native
from kireme.text.headings import HeadingEnds, in_list, is_heading_line, is_lead_in_line, titled_paragraph_line
from kireme.text.markdown import Outline


def _lead_in_patterns(after: str) -> tuple[re.Pattern[str], ...]:
    """Where a possible lead-in line ends (its last character in group ``mark``: a colon or a question
    mark), then ``after``; `is_lead_in_line` decides. One pattern per mark, each starting with its literal
    (searched for at C speed; a class is tried at every position, 3.5 times slower)."""
    return tuple(re.compile(f"(?P<mark>{re.escape(mark)})" + after) for mark in _MARKS)


_MARKS = ":：?？"


def _at_line_ends(text: str, lo: int, hi: int, patterns: dict[str, re.Pattern[str]]) -> list[re.Match[str]]:
    """The matches in ``[lo, hi)`` (``hi`` the text's end for them, as ``finditer(text, lo, hi)`` has it) of
    ``patterns`` (by mark: each opens with its mark and matches only where the mark ends its line, blanks
    aside), in order. With the extension the marks that end a line are found in one pass over the line
    feeds (`kireme._speedups.line_end_marks`) and each pattern is tried there alone; without it each pattern
    is searched for through the text (``:`` and ``.`` are everywhere in English)."""
    if not patterns:
        return []
    if _NATIVE_LINE_END_MARKS is None:
        found = [m for pattern in patterns.values() for m in pattern.finditer(text, lo, hi)]
        found.sort(key=_START)
        return found
    matches = []
    for pos in _NATIVE_LINE_END_MARKS(text, lo, hi, "".join(patterns)):
        match = patterns[text[pos]].match(text, pos, hi)
        if match is not None:
            matches.append(match)
    return matches


def _present(text: str, marks: str, patterns: Sequence[re.Pattern[str]]) -> dict[str, re.Pattern[str]]:
    """The patterns (one per mark of ``marks``) whose mark is in ``text``, by mark: a text without one is not
    searched for it."""
    return {mark: pattern for mark, pattern in zip(marks, patterns, strict=True) if mark in text}


_START = cast("Callable[[re.Match[str]], int]", re.Match.start)
_NATIVE_LINE_END_MARKS: Callable[[str, int, int, str], list[int]] | None = native("line_end_marks")


_LEAD_IN_ENDS = _lead_in_patterns(r"[ \t]*\r?\n(?:[ \t]*\r?\n)*")


def lead_ins(text: str, outline: Outline, only: Collection[int] | None = None) -> list[tuple[int, int]]:
    """``(start, after)`` of each lead-in: a top-level block (a paragraph or list; not a heading, code block,
    table, comment or tag line) whose last line ends with a colon or a question mark and holds a letter or
    a digit (`is_lead_in_line`), followed by another
    block that is not a heading (after blank lines, or right on the next line: a list or fence may
    interrupt a paragraph); or a label of one line right above a code block or table (and the
    opening-tag lines before it), a short line without prose punctuation once its inline tags are left
    out (`_label_lines`). ``after`` is where the block introduced starts. ``詳しくは次のとおりです：`` over
    the list or the `<Sandpack>` code it introduces; ``<span class="filename">ファイル名: src/main.rs</span>``
    over its code. ``only``: the lead-ins of the blocks that start there alone, found without searching the
    whole text (the same answers for them)."""
    starts = outline.block_starts
    if not starts:
        return []
    labels = _label_lines(text, outline, only)
    searched = _present(text, _MARKS, _LEAD_IN_ENDS)
    if not searched:
        return labels
    headings: set[int] | None = None  # made at the first candidate
    blocks: set[int] = set()
    out: list[tuple[int, int]] = []
    if only is None:
        ends = [(m.start("mark"), m.end()) for m in _at_line_ends(text, 0, len(text), searched)]
    else:
        ends = sorted(found for after in only if (found := _mark_before(text, after, searched)) is not None)
    for colon, after in ends:  # ``colon``: the mark's offset
        i = bisect_left(starts, after)
        if i == len(starts) or starts[i] != after or i == 0:
            continue  # not the end of a top-level block
        if headings is None:
            headings = {h.start for h in outline.headings}
            blocks = {c.start for c in outline.code_blocks} | {t.start for t in outline.tables}
        start = starts[i - 1]
        if after in headings or start in headings or start in blocks:
            continue  # a heading follows, or the block is a heading, code block or table
        if text[start] in "<|:" or text.startswith("<!--", start):
            continue
        line = text[max(start, text.rfind("\n", start, colon) + 1) : colon].strip()
        if not line or line[0] in "<|#":  # a tag line, a table row or an ATX line left as it is
            continue
        if not is_lead_in_line(line + text[colon]):  # a lone mark: no letter or digit
            continue
        out.append((start, after))
    if labels:
        out = sorted(set(out).union(labels))
    return out


def _mark_before(text: str, after: int, patterns: dict[str, re.Pattern[str]]) -> tuple[int, int] | None:
    """``(mark, after)`` where one of ``patterns`` (`_LEAD_IN_ENDS`) matches a mark and the line breaks after
    it up to ``after``, as a search of the whole text would find it there (a match starts at its mark,
    after the last character that is not whitespace before ``after``)."""
    end = after
    while end > 0 and text[end - 1] in " \t\r\n":
        end -= 1
    if end == 0:
        return None
    for pattern in patterns.values():
        found = pattern.match(text, end - 1)
        if found is not None and found.end() == after:
            return end - 1, after
    return None


# The longest line read as a label, its inline tags included (a label is at most 40 characters without them)
_LABEL_CHARS = 200
# An inline HTML tag, left out of a label line before it is read (`_label_lines`)
_INLINE_TAG = re.compile(r"</?[A-Za-z][^<>\n]*>")


def _label_lines(text: str, outline: Outline, only: Collection[int] | None = None) -> list[tuple[int, int]]:
    """``(start, after)`` of each one-line block right above a code block or table (or the opening-tag
    lines before it) that names it: without its inline tags a short line with no prose punctuation at its
    end, as a heading is (`is_heading_line`: ``ファイル名: src/main.rs`` of mdBook's
    ``<span class="filename">…</span>``, ``出力``); ``after`` is where the block (or its tags) starts."""
    starts = outline.block_starts
    out: list[tuple[int, int]] = []
    headings: set[int] | None = None
    if only is None:
        afters = [
            outline.opened_from(b)
            for b in [c.start for c in outline.code_blocks] + [t.start for t in outline.tables]
        ]
    else:  # only those of ``only`` where a code block or table starts, or the opening-tag lines over one
        blocks = {c.start for c in outline.code_blocks} | {t.start for t in outline.tables}
        runs = dict(outline.openers)
        afters = [
            after
            for after in sorted(only)
            if runs.get(after, after) in blocks and outline.opened_from(runs.get(after, after)) == after
        ]
    for after in afters:
        i = bisect_left(starts, after)
        if i == 0 or i == len(starts) or starts[i] != after:
            continue
        start = starts[i - 1]
        end = after
        while end > start and text[end - 1].isspace():
            end -= 1
        if end - start > _LABEL_CHARS or text.find("\n", start, end) >= 0:
            continue  # longer than a label, or more than one line
        line = text[start:end]
        if text.startswith("<!--", start) or line.startswith(("|", "```", "~~~")):
            continue  # a comment, a table row or a fence
        if headings is None:
            headings = {h.start for h in outline.headings}
        if start in headings:
            continue
        label = _INLINE_TAG.sub("", line).strip()
        if label and not label.endswith((":", "：")) and is_heading_line(label):
            out.append((start, after))
    return out


def kept_line_ends(text: str, outline: Outline) -> frozenset[int]:
    """Where a line that no chunk may end with ends, for `kireme.text.headings.HeadingEnds`: every heading
    of the outline, every list item with items nested under it (``- 特別休暇`` over ``  - 慶弔休暇：…``: a
    chunk that ends with it leaves its items without their name), and every lead-in line (`is_lead_in_line`: ``日当の上限は次のとおりです：`` over the
    list that follows it, in the same paragraph or the next block) and every paragraph's title written with a
    full stop (`titled_paragraph_line`: ``Cell culture.`` over its body) outside code blocks, tables and
    front matter. ``HeadingEnds`` looks through the whitespace after a line, so each end is where its text
    stops."""
    ends = {h.end for h in outline.headings}
    # searched only between the code blocks and tables (their "key:" lines are no lead-ins)
    pos = outline.front_matter_end
    # the lead-in marks and the full stops of titled paragraphs, found in one pass a gap
    searched = _present(text, _MARKS, _LEAD_IN_LINE_ENDS) | _present(text, ".．", _TITLE_STOPS)
    for start, stop in [*outline.protected(), (len(text), len(text))]:
        if start > pos:
            ends.update(_parent_items(text, outline.item_starts, pos, start))
            for found in _at_line_ends(text, pos, start, searched):
                end = found.start() + 1
                line_start = text.rfind("\n", 0, end) + 1
                if text[end - 1] in _MARKS:
                    if is_lead_in_line(text[line_start:end]):
                        ends.add(end)
                # a paragraph's title with a full stop (``Cell culture.`` over its body)
                elif titled_paragraph_line(text, line_start, end) and not in_list(text, line_start, end):
                    ends.add(end)
        pos = max(pos, stop)
    return frozenset(ends)


# A full stop after a letter or a digit that ends its line, a non-blank line right under it
# (`titled_paragraph_line` decides): one pattern per stop, each starting with its literal
_TITLE_STOPS = tuple(
    re.compile(re.escape(stop) + rf"(?<=[^\W_]{re.escape(stop)})(?=[ \t\u3000\r]*\n[ \t\u3000\r]*[^\s])")
    for stop in ".．"
)


def heading_ends(text: str, outline: Outline) -> HeadingEnds:
    """The heading test of a Markdown text for the packer: its `kept_line_ends`, found when first read."""
    return HeadingEnds(text, lambda: kept_line_ends(text, outline))


# The end of a possible lead-in line, only blanks after it on its line (`kept_line_ends`)
_LEAD_IN_LINE_ENDS = _lead_in_patterns(r"(?=[ \t]*\r?(?:\n|\Z))")


def _parent_items(text: str, items: tuple[int, ...], start: int, stop: int) -> list[int]:
    """Where the last line of each list item with items nested under it ends, for the items (line starts,
    from the outline) in ``[start, stop)``: an item whose next item is indented deeper."""
    ends: list[int] = []
    i = bisect_left(items, start)
    while i + 1 < len(items) and items[i] < stop:
        a, b = items[i], items[i + 1]
        i += 1
        if indent_width(text, b) <= indent_width(text, a) or b >= stop:
            continue
        end = b
        while end > a and text[end - 1].isspace():
            end -= 1
        if end > a:
            ends.append(end)
    return ends


def indent_width(text: str, line_start: int) -> int:
    """How many spaces and tabs open the line at ``line_start``."""
    k = line_start
    while k < len(text) and text[k] in " \t":
        k += 1
    return k - line_start
