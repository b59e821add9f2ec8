"""Separator presets for the recursive strategy: good defaults for prose, Markdown, Python and SQL."""

from __future__ import annotations

from kireme.boundaries.levels import (
    CLAUSE,
    LINE,
    PARAGRAPH,
    SCRIPT,
    SENTENCE,
    WORD,
    Level,
    RegexLevel,
)
from kireme.document import ConfigError

_PROSE_TAIL: list[Level] = [SENTENCE, CLAUSE, WORD, SCRIPT]

PRESETS: dict[str, list[Level]] = {
    # Paragraphs, lines, sentences (Japanese and English), clause marks, spaces, kana/kanji changes.
    "default": [PARAGRAPH, LINE, *_PROSE_TAIL],
    # Headings (the heading goes with its body), fences and rules, then prose.
    "markdown": [
        RegexLevel(r"\n(?=# )", "h1"),
        RegexLevel(r"\n(?=## )", "h2"),
        RegexLevel(r"\n(?=### )", "h3"),
        RegexLevel(r"\n(?=#{4,6} )", "h4-h6"),
        RegexLevel(r"\n(?=```|~~~)", "fence"),
        RegexLevel(r"\n(?=(?:\*\*\*+|---+|___+)\n)", "rule"),
        PARAGRAPH,
        LINE,
        *_PROSE_TAIL,
    ],
    "python": [
        RegexLevel(r"\n(?=class )", "class"),
        RegexLevel(r"\n(?=(?:async )?def |@)", "def"),
        RegexLevel(r"\n(?=[ \t]+(?:async )?def |[ \t]+@)", "method"),
        RegexLevel(r"\n[ \t]*\n", "blank line"),
        LINE,
        WORD,
    ],
    "sql": [
        RegexLevel(r"\n(?=[ \t]*(?i:create|alter|drop|grant|revoke)\b)", "ddl"),
        RegexLevel(r"\n(?=[ \t]*(?i:begin|declare|procedure|function)\b)", "block"),
        RegexLevel(r"\n(?=[ \t]*(?i:insert|update|delete|merge|select|with)\b)", "dml"),
        RegexLevel(r"\n(?=[ \t]*(?:--|/\*))", "comment"),
        RegexLevel(r"(?<=;)[ \t]*\n", "statement end"),
        RegexLevel(r"\n[ \t]*\n", "blank line"),
        LINE,
        WORD,
    ],
}


# Presets for prose, where a short line without punctuation is a heading that belongs with its body.
PROSE_PRESETS = frozenset({"default", "markdown"})


def preset_levels(name: str) -> list[Level]:
    """The levels of a named preset (``default``, ``markdown``, ``python``, ``sql``)."""
    try:
        return list(PRESETS[name])
    except KeyError:
        raise ConfigError(f"unknown preset {name!r}: choose one of {', '.join(PRESETS)}") from None
