"""Compiling regular expressions with the syntax their authors meant.

The ``regex`` module understands set operations inside character classes (``[\\p{L}&&\\p{Han}]``,
``--``, ``||``, ``~~``) only in its VERSION1 syntax; in the default (``re``-compatible) syntax the same
class silently means something else: ``&&`` becomes two literal ampersands and the nested class a
literal ``[``, so the pattern quietly never matches what it should. Every pattern kireme compiles that
may contain set operations, its own or a user's, goes through `compile_pattern`.
"""

from __future__ import annotations

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
