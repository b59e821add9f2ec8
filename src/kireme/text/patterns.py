"""Compiling regular expressions with the syntax their authors meant.

The ``regex`` module understands set operations inside character classes (``[\\p{L}&&\\p{Han}]``,
``--``, ``||``, ``~~``) only in its VERSION1 syntax; in the default (``re``-compatible) syntax the same
class silently means something else: ``&&`` becomes two literal ampersands and the nested class a
literal ``[``, so the pattern quietly never matches what it should. Every pattern kireme compiles that
may contain set operations, its own or a user's, goes through `compile_pattern`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, cast

import regex

# A set operation inside a character class: "&&", "||", "~~", or "--" before a class or property.
_SET_OPERATION = regex.compile(r"\[(?:\\.|[^\]\\])*?(?:&&|\|\||~~|--(?=\[|\\[pP]))")


def uses_set_operations(pattern: str) -> bool:
    """True when ``pattern`` has a set operation inside a character class (VERSION1 syntax).

    >>> uses_set_operations(r"[\\p{Han}&&[^一]]"), uses_set_operations(r"[a-z]+&&")
    (True, False)
    """
    return _SET_OPERATION.search(pattern) is not None


def compile_pattern(pattern: str, flags: int = 0) -> regex.Pattern[str]:
    """``regex.compile`` with VERSION1 syntax switched on when the pattern uses set operations."""
    if uses_set_operations(pattern):
        flags |= regex.VERSION1
    return regex.compile(pattern, flags)


class _LazyPattern:
    """A compiled pattern made on first use, standing in for it (``search``, ``finditer``...).

    Compiling kireme's Unicode-property patterns costs tens of milliseconds, most of `kireme chunk`'s
    start-up on a small file; many runs never use a given pattern. After the first use the pattern's
    methods are plain attributes of this object, so a call costs what a call on the pattern costs.
    """

    def __init__(self, compile: Callable[[str, int], Any], pattern: str, flags: int) -> None:
        self._compile = compile
        self._source = pattern
        self._flags = flags

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        compiled = self._compile(self._source, self._flags)
        for attr in ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split"):
            self.__dict__[attr] = getattr(compiled, attr)
        return getattr(compiled, name)


def lazy_regex(pattern: str, flags: int = 0) -> regex.Pattern[str]:
    """`regex.compile`, deferred to the first use of the pattern."""
    return cast("regex.Pattern[str]", _LazyPattern(regex.compile, pattern, flags))


def lazy_re(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile`, deferred to the first use of the pattern."""
    return cast("re.Pattern[str]", _LazyPattern(re.compile, pattern, flags))
