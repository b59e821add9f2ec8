"""Names that are not valid UTF-8, kept losslessly in stores that only take UTF-8 (SQLite, Arrow, Chroma).

A file name with bytes that are not UTF-8 reaches Python as a ``str`` with surrogate escapes
(``"\\udcff"`` for the byte 0xFF), which SQLite and Arrow refuse. Such a name is stored as
:data:`MARK` followed by the name with each surrogate written ``%FF`` (a byte escaped by the file
system) or ``%uD800`` (any other lone surrogate) and each ``%`` written ``%25``; every other name —
all valid UTF-8 names — is stored as it is, so existing indexes read unchanged. ``MARK`` (U+FFFE, a
noncharacter) cannot start a name stored as it is: a name that starts with it is escaped too, so
reading back is never ambiguous.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

MARK = "\ufffe"
_ESCAPED = re.compile(r"%(?:u([0-9A-F]{4})|([0-9A-F]{2}))")
_SURROGATE = re.compile(r"[\ud800-\udfff%]")


def to_stored(name: str) -> str:
    """``name`` as valid UTF-8 text that `from_stored` turns back into ``name``.

    >>> to_stored("規程.md")
    '規程.md'
    >>> to_stored("d/\\udcff-x%.txt")
    '\\ufffed/%FF-x%25.txt'
    """
    if not name.startswith(MARK) and not _has_surrogate(name):
        return name
    return MARK + _SURROGATE.sub(_escape, name)


def from_stored(stored: str) -> str:
    """The name `to_stored` was given.

    >>> from_stored(to_stored("d/\\udcff\\udcfe.txt")) == "d/\\udcff\\udcfe.txt"
    True
    """
    if not stored.startswith(MARK):
        return stored
    return _ESCAPED.sub(_unescape, stored[len(MARK) :])


def _has_surrogate(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char == "%":
        return "%25"
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte the file system could not decode
        return f"%{code - 0xDC00:02X}"
    return f"%u{code:04X}"


def _unescape(match: re.Match[str]) -> str:
    wide, byte = match.groups()
    if wide is not None:
        return chr(int(wide, 16))
    value = int(byte, 16)
    return chr(0xDC00 + value) if value >= 0x80 else chr(value)


NAME_FIELDS = ("doc_id", "source", "title")  # the row fields that may hold a file's name


def json_text(value: object) -> str:
    """JSON for a UTF-8 column: readable, with JSON escapes only when a value holds a surrogate.

    >>> json_text({"file": "a\\udcff"})
    '{"file": "a\\\\udcff"}'
    """
    text = json.dumps(value, ensure_ascii=False)
    return text if not _has_surrogate(text) else json.dumps(value)


def stored_filter(where: Mapping[str, str] | None) -> dict[str, str] | None:
    """An exact-match filter with its name values in stored form."""
    if not where:
        return None
    return {key: to_stored(value) if key in NAME_FIELDS else value for key, value in where.items()}
