"""Word's list numbering (``word/numbering.xml``): the number or bullet each numbered paragraph shows.

A paragraph is numbered by a ``w:numPr`` (``numId``, ``ilvl``) of its own or of its style; ``numId`` names a
``w:num``, which points at a ``w:abstractNum`` (one ``w:lvl`` per level: ``w:start``, ``w:numFmt``,
``w:lvlText`` such as ``（%1）`` or ``%1.%2``) and may restart a level (``w:lvlOverride/w:startOverride``).
Counters run per abstract definition across the whole document, as Word counts them: a list interrupted
by a paragraph goes on at 4, not 1; a level restarts below a higher one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_LEVELS = 9


@dataclass(frozen=True)
class Level:
    start: int = 1
    fmt: str = "decimal"
    text: str = "%1."


@dataclass
class Numbering:
    """The numbering definitions of one document and the counters of the lists read so far."""

    levels: dict[str, dict[int, Level]] = field(default_factory=dict)  # abstractNumId -> ilvl -> Level
    nums: dict[str, tuple[str, dict[int, int]]] = field(default_factory=dict)  # numId -> (abstract, starts)
    counters: dict[str, list[int | None]] = field(default_factory=dict)  # abstractNumId -> per level
    started: set[str] = field(default_factory=set)  # numIds whose start overrides were applied

    def marker(self, num_id: str, ilvl: int) -> tuple[str, str] | None:
        """``("bullet" | "number", marker text)`` for the next paragraph of list ``num_id`` at ``ilvl``
        (the counters advance), or ``None`` when ``num_id`` names no list (``0``: numbering removed)."""
        found = self.nums.get(num_id)
        if found is None:
            return None
        abstract, overrides = found
        levels = self.levels.get(abstract, {})
        ilvl = max(0, min(ilvl, _LEVELS - 1))
        level = levels.get(ilvl, Level())
        counters = self.counters.setdefault(abstract, [None] * _LEVELS)
        if num_id not in self.started:  # a list instance that restarts levels: from its overrides on
            self.started.add(num_id)
            for lvl, start in overrides.items():
                if 0 <= lvl < _LEVELS:
                    counters[lvl] = start - 1
        current = counters[ilvl]
        counters[ilvl] = level.start if current is None else current + 1
        for deeper in range(ilvl + 1, _LEVELS):
            counters[deeper] = None  # restart below
        if level.fmt in ("bullet", "none"):
            return ("bullet", "")
        text = level.text
        for k in range(_LEVELS):
            placeholder = f"%{k + 1}"
            if placeholder in text:
                value = counters[k]
                shown = levels.get(k, Level()).fmt
                number = levels.get(k, Level()).start if value is None else value
                text = text.replace(placeholder, format_number(number, shown if k != ilvl else level.fmt))
        return ("number", text)


def read_numbering(document: Any) -> Numbering | None:
    """The numbering definitions of a python-docx document, ``None`` when it has none."""
    try:
        root = document.part.numbering_part.element
    except Exception:  # no numbering part (python-docx raises NotImplementedError or KeyError)
        return None
    numbering = Numbering()
    for abstract in root.findall(f"{_W}abstractNum"):
        aid = abstract.get(f"{_W}abstractNumId") or ""
        levels: dict[int, Level] = {}
        for lvl in abstract.findall(f"{_W}lvl"):
            ilvl = _int(lvl.get(f"{_W}ilvl"), 0)
            shown = _val(lvl, "lvlText")
            levels[ilvl] = Level(
                start=_int(_val(lvl, "start"), 1),
                fmt=_val(lvl, "numFmt") or "decimal",
                text=shown if shown is not None else f"%{ilvl + 1}.",
            )
        numbering.levels[aid] = levels
    for num in root.findall(f"{_W}num"):
        nid = num.get(f"{_W}numId") or ""
        abstract_id = _val(num, "abstractNumId") or ""
        overrides: dict[int, int] = {}
        for override in num.findall(f"{_W}lvlOverride"):
            start = _val(override, "startOverride")
            if start is not None:
                overrides[_int(override.get(f"{_W}ilvl"), 0)] = _int(start, 1)
        numbering.nums[nid] = (abstract_id, overrides)
    return numbering


def _val(element: Any, tag: str) -> str | None:
    child = element.find(f"{_W}{tag}")
    return None if child is None else child.get(f"{_W}val")


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


_CIRCLED = "①②③④⑤⑥⑦⑧⑨⑩⑪⑫⑬⑭⑮⑯⑰⑱⑲⑳"
_PARENTHESIZED = "⑴⑵⑶⑷⑸⑹⑺⑻⑼⑽⑾⑿⒀⒁⒂⒃⒄⒅⒆⒇"
_AIUEO = "アイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモヤユヨラリルレロワヲン"
_IROHA = "イロハニホヘトチリヌルヲワカヨタレソツネナラムウヰノオクヤマケフコエテアサキユメミシヱヒモセス"
_KANJI = "〇一二三四五六七八九"
_ROMAN = (
    (1000, "m"),
    (900, "cm"),
    (500, "d"),
    (400, "cd"),
    (100, "c"),
    (90, "xc"),
    (50, "l"),
    (40, "xl"),
    (10, "x"),
    (9, "ix"),
    (5, "v"),
    (4, "iv"),
    (1, "i"),
)


def format_number(n: int, fmt: str) -> str:
    """``n`` as Word shows it in the number format ``fmt`` (``decimal``, ``decimalFullWidth``,
    ``decimalEnclosedCircle`` ①, ``lowerLetter``, ``upperRoman``, ``japaneseCounting`` 十二, ``aiueoFullWidth``,
    ``iroha``...); a format not known here is shown as a decimal number."""
    if fmt in ("decimalFullWidth", "decimalFullWidth2"):
        return str(n).translate(str.maketrans("0123456789", "０１２３４５６７８９"))
    if fmt == "decimalEnclosedCircle" and 1 <= n <= len(_CIRCLED):
        return _CIRCLED[n - 1]
    if fmt == "decimalEnclosedParen" and 1 <= n <= len(_PARENTHESIZED):
        return _PARENTHESIZED[n - 1]
    if fmt in ("lowerLetter", "upperLetter") and n >= 1:
        letters = ""
        k = n
        while k > 0:
            k, r = divmod(k - 1, 26)
            letters = chr(ord("a") + r) + letters
        return letters.upper() if fmt == "upperLetter" else letters
    if fmt in ("lowerRoman", "upperRoman") and 1 <= n < 4000:
        out, k = "", n
        for value, digits in _ROMAN:
            while k >= value:
                out, k = out + digits, k - value
        return out.upper() if fmt == "upperRoman" else out
    if fmt in ("japaneseCounting", "japaneseLegal", "ideographTraditional") and 1 <= n < 100:
        tens, ones = divmod(n, 10)
        return ("" if tens == 0 else ("十" if tens == 1 else _KANJI[tens] + "十")) + (
            _KANJI[ones] if ones else ""
        )
    if fmt in ("aiueoFullWidth", "aiueo") and 1 <= n <= len(_AIUEO):
        return _AIUEO[n - 1]
    if fmt in ("irohaFullWidth", "iroha") and 1 <= n <= len(_IROHA):
        return _IROHA[n - 1]
    return str(n)
