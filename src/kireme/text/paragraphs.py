"""Paragraph starts in hard-wrapped text (PDF), where every visual line ends in ``"\\n"``.

PDF has no paragraphs, only positioned lines: the loader keeps the extracted text as it is so offsets stay
exact, and `pdf_paragraph_starts` tells the chunker where the real paragraph breaks are, without changing
the text. What ends a sentence and what starts an item comes from the shared vocabulary in
`kireme.text.marks`, so this agrees with the sentence and paragraph splitter.
"""

from __future__ import annotations

import statistics

import regex

from kireme.text.marks import CLOSERS, FULL_STOPS, ITEM_MARKER, QUOTE_CLOSERS, TERMINATORS
from kireme.text.patterns import lazy_regex

__all__ = ["pdf_paragraph_starts"]

# A line that ends a sentence: final punctuation (or a closing Japanese quote), then any closing marks.
_SENTENCE_END = lazy_regex(
    rf"[{regex.escape(TERMINATORS + FULL_STOPS + QUOTE_CLOSERS)}][{regex.escape(CLOSERS)}]*$"
)
# A line that starts a list item or a numbered heading.
_MARKER = lazy_regex(ITEM_MARKER)
_SHORT_RATIO = 0.8
_MEDIAN_MIN_LEN = 10


def ends_sentence(line: str) -> bool:
    """Whether a line ends a sentence (``。！？.!?``, a closing Japanese quote, then closing marks)."""
    return _SENTENCE_END.search(line.rstrip()) is not None


def starts_item(line: str) -> bool:
    """Whether a line starts a list item or a numbered heading (``・``, ``第3条``, ``（1）``, ``1. ``...)."""
    return _MARKER.match(line.strip()) is not None


def pdf_paragraph_starts(text: str) -> list[int]:
    """Offsets where a new paragraph starts in hard-wrapped PDF text (each offset begins a line).

    A paragraph starts after a blank line; after a line that ends a sentence (``。！？.!?`` and closing
    brackets) and is clearly shorter (< 0.8 x) than the median non-blank line of length >= 10; and at a
    line that starts with a list or heading marker (``・``, ``•``, ``- ``, ``第3条``, ``（1）``, ``1. ``,
    ``■``...). Never 0 nor ``len(text)``; sorted and unique. The text itself is not changed.

    >>> pdf_paragraph_starts("line one\\n\\nnext paragraph\\n・item\\n")
    [10, 25]
    """
    starts: list[int] = []
    offsets: list[int] = []
    lines: list[str] = []
    pos = 0
    for line in text.split("\n"):
        offsets.append(pos)
        lines.append(line.rstrip())
        pos += len(line) + 1
    if text.endswith("\n"):  # the empty "line" after the final newline is not a line
        offsets.pop()
        lines.pop()

    lengths = [len(line.strip()) for line in lines]
    typical = [n for n in lengths if n >= _MEDIAN_MIN_LEN]
    median = statistics.median(typical) if typical else None

    for i in range(1, len(lines)):
        current = lines[i].strip()
        if not current:
            continue
        previous = lines[i - 1].strip()
        if (
            not previous
            or starts_item(current)
            or (ends_sentence(previous) and (median is None or lengths[i - 1] < _SHORT_RATIO * median))
        ):
            starts.append(offsets[i])
    return sorted({s for s in starts if 0 < s < len(text)})
