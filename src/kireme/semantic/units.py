"""The units whose neighbours are compared: sentences, or smaller pieces where there are none.

Sentences come from `kireme.text.sentences` (``sentences="lines"``: every non-blank line is one). A
"sentence" longer than ``max_unit_chars`` — a transcript
with no punctuation, a long list — is cut into pieces with the same packer as everything else, at line
breaks first, then clause marks, spaces and kana/kanji changes, so that similarity is still measured
between units of comparable size.
"""

from __future__ import annotations

from kireme.boundaries.levels import INSIDE_SENTENCE, LINE, SENTENCE, SpanLimit, keep_brackets
from kireme.length import Chars
from kireme.pack import pack
from kireme.text.sentences import sentence_spans

DEFAULT_MAX_UNIT_CHARS = 300


def semantic_units(
    text: str, max_unit_chars: int = DEFAULT_MAX_UNIT_CHARS, sentences: str = "auto"
) -> list[tuple[int, int]]:
    """``(start, end)`` spans of the comparison units, in order, whitespace excluded; ``sentences`` is
    the sentence mode (``"lines"``: one unit per line, a line over ``max_unit_chars`` cut at its
    sentence ends first)."""
    units: list[tuple[int, int]] = []
    # a unit ends outside the brackets that fit one (`keep_brackets`): a gap between two units is where a
    # topic cut may fall, and ``（特定有価証券を除く。`` ‖ ``以下この条において同じ。）`` is no topic's edge
    levels = keep_brackets(
        [LINE if sentences == "auto" else SENTENCE, *INSIDE_SENTENCE], SpanLimit(max_unit_chars)
    )
    for s, e in sentence_spans(text, sentences):
        if e - s <= max_unit_chars:
            units.append((s, e))
            continue
        piece = text[s:e]
        for p in pack(piece, levels, Chars().for_text(piece), max_size=max_unit_chars):
            units.append((s + p.start, s + p.end))
    return units
