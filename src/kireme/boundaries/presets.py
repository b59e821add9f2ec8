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
    PositionLevel,
    RegexLevel,
)
from kireme.document import ConfigError

_PROSE_TAIL: list[Level] = [SENTENCE, CLAUSE, WORD, SCRIPT]

PRESETS: dict[str, list[Level]] = {
    # Paragraphs, lines, sentences (Japanese and English), clause marks, spaces, kana/kanji changes.
    "default": [PARAGRAPH, LINE, *_PROSE_TAIL],
    # Headings (the heading goes with its body), fences and rules, then prose.
    "markdown": [
        RegexLevel(r"\r?\n(?=# )", "h1"),
        RegexLevel(r"\r?\n(?=## )", "h2"),
        RegexLevel(r"\r?\n(?=### )", "h3"),
        RegexLevel(r"\r?\n(?=#{4,6} )", "h4-h6"),
        RegexLevel(r"\r?\n(?=```|~~~)", "fence"),
        RegexLevel(r"\r?\n(?=(?:\*\*\*+|---+|___+)\r?\n)", "rule"),
        PARAGRAPH,
        LINE,
        *_PROSE_TAIL,
    ],
    "python": [
        RegexLevel(r"\r?\n(?=class )", "class"),
        RegexLevel(r"\r?\n(?=(?:async )?def |@)", "def"),
        RegexLevel(r"\r?\n(?=[ \t]+(?:async )?def |[ \t]+@)", "method"),
        RegexLevel(r"\r?\n[ \t]*\r?\n", "blank line"),
        LINE,
        WORD,
    ],
    "sql": [
        RegexLevel(r"\r?\n(?=[ \t]*(?i:create|alter|drop|grant|revoke)\b)", "ddl"),
        RegexLevel(r"\r?\n(?=[ \t]*(?i:begin|declare|procedure|function)\b)", "block"),
        RegexLevel(r"\r?\n(?=[ \t]*(?i:insert|update|delete|merge|select|with)\b)", "dml"),
        RegexLevel(r"\r?\n(?=[ \t]*(?:--|/\*))", "comment"),
        RegexLevel(r"(?<=;)[ \t]*\r?\n", "statement end"),
        RegexLevel(r"\r?\n[ \t]*\r?\n", "blank line"),
        LINE,
        WORD,
    ],
}


# Presets for prose, where a short line without punctuation is a heading that belongs with its body.
PROSE_PRESETS = frozenset({"default", "markdown"})


def markdown_levels(text: str) -> list[Level]:
    """The markdown preset for one document, with headings found by the CommonMark parser.

    The regex heading levels of the preset would take a ``# comment`` line inside a code fence for a
    heading; the parser does not.
    """
    from kireme.text.markdown import markdown_headings

    headings = markdown_headings(text)

    def starts(levels: tuple[int, ...]) -> list[int]:
        return [h.start for h in headings if h.level in levels]

    parsed: list[Level] = [
        PositionLevel(starts((1,)), "h1", hard=True),
        PositionLevel(starts((2,)), "h2", hard=True),
        PositionLevel(starts((3,)), "h3", hard=True),
        PositionLevel(starts((4, 5, 6)), "h4-h6", hard=True),
    ]
    return parsed + PRESETS["markdown"][4:]


def preset_levels(name: str) -> list[Level]:
    """The levels of a named preset (``default``, ``markdown``, ``python``, ``sql``)."""
    try:
        return list(PRESETS[name])
    except KeyError:
        raise ConfigError(f"unknown preset {name!r}: choose one of {', '.join(PRESETS)}") from None
