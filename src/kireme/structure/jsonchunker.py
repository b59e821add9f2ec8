"""The ``json`` strategy: JSON and JSON Lines cut between records, members and elements.

A value stays whole when it fits ``max_size``; a larger object is cut between its members and a larger
array between its elements, each level tried before the one below it (a record, then its members, then
theirs...), and neighbours are packed together up to the limit. A single value larger than the limit (a
long string) is cut like text: at line breaks, sentence ends, commas and spaces, never inside an escape
such as ``\\u3042`` while pieces can hold one, never inside a character. Chunks are slices of the file as
written (whitespace and indentation kept, nothing re-serialised), so offsets are exact.

Each chunk's heading path is one JSONPath (`kireme.text.jsontree`): ``("$.orders[3].address",)`` for
a chunk inside that value, ``("$.orders[3:8]",)`` for elements 3 to 7 packed together, ``("$",)`` for
the whole document. JSON Lines (``.jsonl``, ``.ndjson``) records are ``$[0]``, ``$[1]``...; a record that
is not valid JSON is kept as text (a warning names its line). A document that is not JSON at all is cut
as the ``recursive`` strategy cuts text, with a warning instead of an error.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import ClassVar

import regex

from kireme.boundaries.levels import INSIDE_SENTENCE, LINE, SENTENCE, Level, PositionLevel
from kireme.boundaries.presets import preset_levels
from kireme.chunkers import Chunker, ChunkPlan
from kireme.document import Document
from kireme.structure.paths import Label, plan_with_paths
from kireme.text.jsontree import JsonError, parse_json

log = logging.getLogger(__name__)

# Structure levels beyond this depth share the last one (the packer recurses once per level).
MAX_DEPTH_LEVELS = 32
JSON_LINES_FORMATS = frozenset({"jsonl"})


@dataclass(frozen=True)
class EscapeLevel:
    """Cuts on both sides of every escape sequence (``\\n``, ``\\u3042``, a surrogate pair as one), so a
    string cut further is never cut inside one while a piece can hold it."""

    name: str = "escape"
    _pattern: ClassVar[regex.Pattern[str]] = regex.compile(
        r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\."
    )

    def cuts(self, text: str, a: int, b: int) -> list[int]:
        out: list[int] = []
        for m in self._pattern.finditer(text, a, b):
            for pos in (m.start(), m.end()):
                if a < pos < b and (not out or out[-1] != pos):
                    out.append(pos)
        return out


# What cuts a value that is larger than max_size on its own, strongest first.
VALUE_LEVELS: list[Level] = [LINE, SENTENCE, *INSIDE_SENTENCE, EscapeLevel()]


@dataclass(frozen=True)
class JsonChunker(Chunker):
    """Records, objects and arrays whole when they fit, else cut between members and elements; each chunk
    carries its JSONPath as its heading path. Invalid JSON falls back to the recursive strategy's cuts."""

    strategy: ClassVar[str] = "json"

    def levels(self) -> list[Level]:
        """The levels for text that is not JSON: the recursive strategy's default preset."""
        return preset_levels("default")

    def plan(self, doc: Document) -> ChunkPlan:
        lines = doc.format in JSON_LINES_FORMATS
        tree = parse_json(doc.text, lines=lines)
        if isinstance(tree, JsonError):
            log.warning(
                "%s: not valid JSON (%s); cut as text, as the recursive strategy cuts it",
                doc.id or "<text>",
                tree,
            )
            return super().plan(doc)
        if tree.bad:
            first = tree.bad[0]
            log.warning(
                "%s: %d record(s) are not valid JSON (first: line %d: %s); each is kept as text",
                doc.id or "<text>",
                len(tree.bad),
                first.line,
                first.message,
            )
        levels: list[Level] = [
            PositionLevel(positions, f"json depth {d}", hard=True)
            for d, positions in enumerate(tree.position_levels(MAX_DEPTH_LEVELS), start=1)
        ]

        def label(start: int, end: int) -> Label:
            path = (tree.path_of(start, end),)
            return Label(path, path)

        return plan_with_paths(self, doc, [*levels, *VALUE_LEVELS], label)
