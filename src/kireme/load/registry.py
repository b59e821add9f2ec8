"""Which files kireme reads, and `load`: a path to a `Document`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from kireme.document import Document, LoadError
from kireme.load.encoding import DecodeError, decode

# Formats this version reads as text. Structure-aware loaders (HTML, notebooks, PDF...) plug in here.
SUPPORTED_SUFFIXES: dict[str, str] = {
    ".txt": "text",
    ".text": "text",
    ".md": "markdown",
    ".markdown": "markdown",
}


def _format_of(path: Path) -> str:
    return SUPPORTED_SUFFIXES.get(path.suffix.lower(), "text")


def load_text(text: str, id: str = "", **metadata: object) -> Document:
    """A `Document` from a string you already have (the id defaults to a content hash)."""
    return Document(text=text, id=id, metadata=metadata)


def load_bytes(data: bytes, id: str, encoding: str | None = None, format: str = "text") -> Document:
    """Decode bytes you already have (stdin, an upload) exactly like a file; ``id`` names it in errors."""
    try:
        decoded = decode(data, encoding)
    except DecodeError as exc:
        raise LoadError(id, str(exc)) from None
    return Document(
        text=decoded.text,
        id=id,
        metadata={
            "source": id,
            "encoding": decoded.encoding,
            "bom": decoded.bom,
            "format": format,
            "bytes": len(data),
        },
    )


def load(path: str | os.PathLike[str], encoding: str | None = None) -> Document:
    """Read and decode one file; the document id is the path as given (POSIX separators).

    Raises `LoadError` naming the file and the reason (missing, a directory, binary, undecodable).
    """
    p = Path(path)
    shown = p.as_posix()
    if not p.exists():
        raise LoadError(shown, "no such file")
    if p.is_dir():
        raise LoadError(shown, "is a directory (pass files, or a directory to the CLI)")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise LoadError(shown, exc.strerror or str(exc)) from None
    return load_bytes(data, shown, encoding, _format_of(p))


def iter_paths(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A file as itself; a directory as its supported files, recursively, in sorted order."""
    p = Path(path)
    if p.is_dir():
        for dirpath, dirnames, filenames in os.walk(p):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                child = Path(dirpath) / name
                if child.suffix.lower() in SUPPORTED_SUFFIXES:
                    yield child
    else:
        yield p
