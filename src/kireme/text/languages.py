"""Programming languages the ``code`` strategy reads: names, aliases and file extensions.

Plain data, no parser: the loader records a code file's language from its extension with this table
(`language_of`) without importing tree-sitter, and `kireme.structure.code` turns the name into a grammar
of ``tree-sitter-language-pack``.
"""

from __future__ import annotations

import os
from pathlib import PurePath

from kireme.errors import ConfigError

# Each language and the file extensions that name it (lower case, with the dot).
LANGUAGE_SUFFIXES: dict[str, tuple[str, ...]] = {
    "python": (".py", ".pyi", ".pyw"),
    "javascript": (".js", ".mjs", ".cjs", ".jsx"),
    "typescript": (".ts", ".mts", ".cts"),
    "tsx": (".tsx",),
    "go": (".go",),
    "java": (".java",),
    "c": (".c", ".h"),
    "cpp": (".cpp", ".cc", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".ipp"),
    "rust": (".rs",),
    "ruby": (".rb", ".rake", ".gemspec"),
    "php": (".php",),
    "csharp": (".cs",),
    "kotlin": (".kt", ".kts"),
    "swift": (".swift",),
    "bash": (".sh", ".bash"),
    "sql": (".sql",),
}
LANGUAGES: tuple[str, ...] = tuple(LANGUAGE_SUFFIXES)

# Other names people use for the same languages; the canonical name is what chunk ids record.
LANGUAGE_ALIASES: dict[str, str] = {
    "py": "python",
    "python3": "python",
    "js": "javascript",
    "jsx": "javascript",
    "node": "javascript",
    "ts": "typescript",
    "golang": "go",
    "c++": "cpp",
    "cxx": "cpp",
    "rs": "rust",
    "rb": "ruby",
    "c#": "csharp",
    "cs": "csharp",
    "kt": "kotlin",
    "sh": "bash",
    "shell": "bash",
}

SUFFIX_LANGUAGES: dict[str, str] = {
    suffix: name for name, suffixes in LANGUAGE_SUFFIXES.items() for suffix in suffixes
}


def check_language(name: str) -> str:
    """The canonical name of a language (``"TS"`` → ``"typescript"``); a `ConfigError` listing the
    supported ones for any other name."""
    if not isinstance(name, str):
        raise ConfigError(f"language must be a string, not {name!r}")
    key = name.strip().lower()
    key = LANGUAGE_ALIASES.get(key, key)
    if key not in LANGUAGE_SUFFIXES:
        raise ConfigError(f"unknown language {name!r}: choose one of {', '.join(LANGUAGES)}")
    return key


def language_of(path: str | os.PathLike[str]) -> str | None:
    """The language a file name's extension names (``None``: not a language kireme reads)."""
    return SUFFIX_LANGUAGES.get(PurePath(path).suffix.lower())
