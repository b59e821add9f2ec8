"""Step 1 of every strategy: the places where a document may be cut, strongest first.

A strategy is an ordered list of `Level`s (paragraphs, lines, sentences, clauses, words, ...). The packer
uses the strongest level that has a cut inside an oversized span, and falls back to the next level only
for pieces that are still too large; grapheme clusters are the last level and always present.
"""

from kireme.boundaries.levels import (
    Level,
    ParagraphLevel,
    RegexLevel,
    SentenceLevel,
    levels_for_separators,
)
from kireme.boundaries.presets import PRESETS, preset_levels

__all__ = [
    "PRESETS",
    "Level",
    "ParagraphLevel",
    "RegexLevel",
    "SentenceLevel",
    "levels_for_separators",
    "preset_levels",
]
