"""JSON and JSON Lines read for their structure, with exact offsets into the text as written.

`parse_json` scans the text once (iteratively: a document nested 100,000 deep is no problem) and records,
for every value, where it starts and ends in the *text* (code points, the offsets `kireme.Chunk` uses),
its parent and its depth; nothing is decoded or re-serialised, so a chunk cut at these offsets is a slice
of the file with its own whitespace and indentation. An object member starts at its name (``"price": 1``
is one member), an array element at its value.

Paths follow RFC 9535 (JSONPath): ``$`` is the document, ``.name`` a member whose name is a plain
identifier (letters, digits and ``_``, not starting with a digit; any non-ASCII letter counts, so
``$.商品名`` is written as it reads), ``['a b']`` any other member name, ``[3]`` an array element
(counted from 0), ``[3:8]`` the elements 3 to 7. A file of several top-level values (JSON Lines, or
concatenated JSON) is addressed as if it were an array of records: ``$[0]`` is the first record. A path
of more than 64 steps keeps its first and last 32 with ``…`` between them.

The grammar is RFC 8259 strict about escapes, numbers and commas, and lenient where Python's reader is:
raw control characters inside strings, and ``NaN``, ``Infinity`` and ``-Infinity``.
"""

from __future__ import annotations

import json
import re
from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from heapq import merge

SCALAR, OBJECT, ARRAY, OPAQUE = 0, 1, 2, 3
ROOT = -1  # the virtual parent of the top-level values (records)
# A path of more steps (JSON nested that deep) keeps its first and last half, with "…" between.
MAX_PATH_STEPS = 64

_WS = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\]++|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*+"')
_SCALAR = re.compile(
    r'"(?:[^"\\]++|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*+"'
    r"|-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?(?:[eE][+-]?[0-9]++)?(?![0-9A-Za-z_.])"
    r"|(?:true|false|null|NaN|-?Infinity)(?![0-9A-Za-z_])"
)
# RFC 9535 member-name-shorthand: name-first then name-chars
_SHORTHAND = re.compile("[A-Za-z_\u0080-\ud7ff\ue000-\U0010ffff][A-Za-z0-9_\u0080-\ud7ff\ue000-\U0010ffff]*")
_QUOTE_ESCAPES = {"\\": "\\\\", "'": "\\'", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


@dataclass(frozen=True)
class JsonError:
    """Why a text is not JSON: the offset, its line and column (from 1), and what was wrong there."""

    position: int
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"{self.message} at line {self.line} column {self.column}"


def _skip(text: str, i: int) -> int:
    """The end of the JSON whitespace at ``i``."""
    m = _WS.match(text, i)
    return m.end() if m is not None else i


def _error(text: str, position: int, message: str) -> JsonError:
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    return JsonError(position, line, column, message)


def member_step(name: str) -> str:
    """A member's path step: ``.name`` for a plain identifier, ``['any name']`` otherwise (RFC 9535)."""
    if _SHORTHAND.fullmatch(name):
        return "." + name
    quoted = "".join(_QUOTE_ESCAPES.get(ch) or (f"\\u{ord(ch):04x}" if ord(ch) < 0x20 else ch) for ch in name)
    return f"['{quoted}']"


@dataclass
class JsonTree:
    """Every value of a JSON text, in document order (value ids are indexes into the arrays).

    ``start``/``end``: the value's span (a member's starts at its name); ``parent``: its container's id
    (`ROOT` for a top-level value); ``depth``: 1 for top-level values; ``kind``: `SCALAR`, `OBJECT`,
    `ARRAY`, or `OPAQUE` (a JSON Lines record that is not valid JSON, kept as text). ``levels[d - 1]``
    are the starts of the values at depth ``d``, in order, and ``level_ids[d - 1]`` their ids.
    ``single``: the text is one value (its path is ``$``); otherwise the values are records ``$[i]``.
    ``bad``: the records of a JSON Lines text that are not JSON (their errors).
    """

    text: str
    start: array[int] = field(default_factory=lambda: array("q"))
    end: array[int] = field(default_factory=lambda: array("q"))
    parent: array[int] = field(default_factory=lambda: array("q"))
    depth: array[int] = field(default_factory=lambda: array("l"))
    kind: bytearray = field(default_factory=bytearray)
    levels: list[array[int]] = field(default_factory=list)
    level_ids: list[array[int]] = field(default_factory=list)
    single: bool = False
    bad: list[JsonError] = field(default_factory=list)
    _chain: list[int] = field(default_factory=list, repr=False)  # the values of the last `path_of`

    # ------------------------------------------------------------------------------ building
    def _add(self, start: int, end: int, parent: int, depth: int, kind: int) -> int:
        v = len(self.kind)
        self.start.append(start)
        self.end.append(end)
        self.parent.append(parent)
        self.depth.append(depth)
        self.kind.append(kind)
        while len(self.levels) < depth:
            self.levels.append(array("q"))
            self.level_ids.append(array("q"))
        self.levels[depth - 1].append(start)
        self.level_ids[depth - 1].append(v)
        return v

    def _mark(self) -> tuple[int, list[int]]:
        return len(self.kind), [len(level) for level in self.levels]

    def _rollback(self, mark: tuple[int, list[int]]) -> None:
        count, sizes = mark
        for column in (self.start, self.end, self.parent, self.depth):
            del column[count:]
        del self.kind[count:]
        del self.levels[len(sizes) :]
        del self.level_ids[len(sizes) :]
        for level, ids, size in zip(self.levels, self.level_ids, sizes, strict=True):
            del level[size:]
            del ids[size:]

    def _value(self, i: int) -> tuple[int, str | None]:
        """Parse the top-level value at ``i``: its end, or the error position and message."""
        text = self.text
        n = len(text)
        ws = _skip
        stack: list[int] = []
        at, parent, depth = i, ROOT, 1  # where the next value is registered
        expecting = "value"
        while True:
            if expecting == "value":
                if i >= n:
                    return i, "a value was expected, the text ended"
                c = text[i]
                if c == "{" or c == "[":
                    v = self._add(at, -1, parent, depth, OBJECT if c == "{" else ARRAY)
                    stack.append(v)
                    i = ws(text, i + 1)
                    if i < n and text[i] == ("}" if c == "{" else "]"):
                        i += 1
                        self.end[v] = i
                        stack.pop()
                        expecting = "after"
                    elif c == "{":
                        expecting = "key"
                    else:
                        at, parent, depth = i, v, depth + 1
                    continue
                m = _SCALAR.match(text, i)
                if m is None:
                    return i, f"unexpected {c!r}"
                self._add(at, m.end(), parent, depth, SCALAR)
                i = m.end()
                expecting = "after"
            elif expecting == "key":
                m = _STRING.match(text, i) if i < n and text[i] == '"' else None
                if m is None:
                    return i, "a member name in double quotes was expected"
                key = i
                i = ws(text, m.end())
                if i >= n or text[i] != ":":
                    return i, "':' was expected after a member name"
                i = ws(text, i + 1)
                top = stack[-1]
                at, parent, depth = key, top, self.depth[top] + 1
                expecting = "value"
            else:  # after a value
                if not stack:
                    return i, None
                i = ws(text, i)
                top = stack[-1]
                obj = self.kind[top] == OBJECT
                if i < n and text[i] == ",":
                    i = ws(text, i + 1)
                    if obj:
                        expecting = "key"
                    else:
                        at, parent, depth = i, top, self.depth[top] + 1
                        expecting = "value"
                elif i < n and text[i] == ("}" if obj else "]"):
                    i += 1
                    self.end[top] = i
                    stack.pop()
                else:
                    return i, "',' or '" + ("}" if obj else "]") + "' was expected"

    # ------------------------------------------------------------------------------ reading
    def children(self, v: int, start: int, end: int) -> tuple[int, int, int]:
        """The children of ``v`` (`ROOT`: the top-level values) that overlap ``[start, end)``: the depth
        index of the first and of the last (``first > last``: none), and that depth (from 1)."""
        d = 1 if v == ROOT else self.depth[v] + 1
        if d > len(self.levels) or (v != ROOT and self.kind[v] not in (OBJECT, ARRAY)):
            return 0, -1, d
        starts = self.levels[d - 1]
        ids = self.level_ids[d - 1]
        if v == ROOT:
            lo, hi = 0, len(starts)
        else:
            lo, hi = bisect_left(starts, self.start[v]), bisect_left(starts, self.end[v])
        first = max(lo, bisect_right(starts, start, lo, hi) - 1)
        if first < hi and self.end[ids[first]] <= start:
            first += 1
        last = bisect_left(starts, end, lo, hi) - 1
        return first, last, d

    def index(self, v: int) -> int:
        """``v``'s position among its parent's children (from 0)."""
        d = self.depth[v]
        starts = self.levels[d - 1]
        p = self.parent[v]
        first = 0 if p == ROOT else bisect_left(starts, self.start[p])
        return bisect_left(starts, self.start[v]) - first

    def step(self, v: int) -> str:
        """``v``'s step in its path: ``.name``, ``['name']`` or ``[3]``."""
        p = self.parent[v]
        if p == ROOT:
            return "" if self.single else f"[{self.index(v)}]"
        if self.kind[p] == OBJECT:
            m = _STRING.match(self.text, self.start[v])
            assert m is not None
            return member_step(json.loads(m.group()))
        return f"[{self.index(v)}]"

    def path(self, v: int) -> str:
        """``v``'s JSONPath (``$`` for the document, `ROOT`)."""
        chain: list[int] = []
        while v != ROOT:
            chain.append(v)
            v = self.parent[v]
        return self._format(chain[::-1])

    def _format(self, chain: list[int]) -> str:
        """The path of the values ``chain`` (top-level first); past `MAX_PATH_STEPS` steps, the first
        and last half of them with ``…`` between."""
        if len(chain) > MAX_PATH_STEPS:
            half = MAX_PATH_STEPS // 2
            return "$" + "".join(map(self.step, chain[:half])) + "…" + "".join(map(self.step, chain[-half:]))
        return "$" + "".join(map(self.step, chain))

    def path_of(self, start: int, end: int) -> str:
        """The path of the deepest value that holds all of ``[start, end)`` that is not brackets, commas
        and whitespace (a value the span holds whole is that value); where that text spans several
        elements of an array, the slice ``[i:j]``.

        Chunks asked about in order reuse the values found for the one before: the work stays linear
        however deep the nesting."""
        chain = self._chain
        lo, hi = 0, len(chain)
        while lo < hi:  # the cached values that hold all of [start, end) are still on the way down
            mid = (lo + hi) // 2
            if self.start[chain[mid]] <= start and end <= self.end[chain[mid]]:
                lo = mid + 1
            else:
                hi = mid
        del chain[lo:]
        v = chain[-1] if chain else ROOT
        while True:
            if v != ROOT and start <= self.start[v] and self.end[v] <= end:  # all of it: its own path
                return self._format(chain)
            first, last, d = self.children(v, start, end)
            if first > last:
                return self._format(chain)
            if first < last:
                if v == ROOT or self.kind[v] == ARRAY:
                    offset = 0 if v == ROOT else bisect_left(self.levels[d - 1], self.start[v])
                    return f"{self._format(chain)}[{first - offset}:{last - offset + 1}]"
                return self._format(chain)
            v = self.level_ids[d - 1][first]
            chain.append(v)

    def position_levels(self, most: int) -> list[array[int]]:
        """Cut positions per depth: the starts of the values there, except each container's first (no
        cut between ``"orders": [`` and its first element: they go together), at most ``most`` lists: the
        values deeper than that are in the last."""
        parent = self.parent
        levels = [
            array("q", (p for p, v in zip(starts, ids, strict=True) if parent[v] != v - 1))
            for starts, ids in zip(self.levels, self.level_ids, strict=True)
        ]
        if self.single:
            levels = levels[1:]
        if len(levels) <= most:
            return levels
        deep = array("q", merge(*levels[most - 1 :]))
        return [*levels[: most - 1], deep]


def parse_json(text: str, lines: bool = False) -> JsonTree | JsonError:
    """The structure of a JSON text (one value, or several: concatenated JSON), or why it is not JSON.

    ``lines``: JSON Lines, where a record that is not valid JSON does not make the whole text invalid:
    it is kept as an `OPAQUE` value up to the end of its line (``JsonTree.bad``) — not up to the line where
    the parser noticed, which may be records later (``{"a": 1,`` reads on into the next line).
    """
    tree = JsonTree(text)
    n = len(text)
    i = _skip(text, 0)
    while i < n:
        mark = tree._mark()
        end, problem = tree._value(i)
        if problem is not None:
            if not lines:
                return _error(text, end, problem)
            tree._rollback(mark)
            line_end = text.find("\n", i)  # the record's own line: the next lines are records of their own
            line_end = n if line_end < 0 else line_end
            error = _error(text, min(end, line_end), problem)
            stop = line_end
            while stop > i and text[stop - 1].isspace():
                stop -= 1
            tree._add(i, stop, ROOT, 1, OPAQUE)
            tree.bad.append(error)
            end = line_end
        i = _skip(text, end)
    tree.single = not lines and len(tree.levels) > 0 and len(tree.levels[0]) == 1
    return tree
