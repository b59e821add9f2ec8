"""Which files kireme reads, and `load`: a path to a `Document`.

The format comes from the extension, checked against the content (a PDF or .docx named ``.txt`` is read
as what it is; HTML named ``.txt`` stays text unless ``format`` says otherwise), and ``format`` overrides
both. Every text format goes through the same encoding detection. JSON (``.json``), JSON Lines
(``.jsonl``, ``.ndjson``) and source files (``.py``, ``.ts``, ``.go``... `kireme.text.languages`) are
read as text with the format ``json``, ``jsonl`` or ``code`` (and the ``language`` in the metadata) when
named; a directory walk takes them only for the strategy that reads them (`walked_suffixes`).

Every document read from a file has a title (`Document.title`, put in front of ``embed_text`` by the
``title`` and ``headings`` contexts): the one its format names (Markdown front matter ``title:``, else the
first ``#`` heading; HTML ``<title>``, else the first ``<h1>``; PDF and Word document properties; a
notebook's metadata or first heading), else the file name without its extension. ``title=`` replaces it.
"""

from __future__ import annotations

import collections
import io
import logging
import os
import re
import stat
from collections.abc import Collection, Iterator
from pathlib import Path

from kireme.document import Document
from kireme.errors import ConfigError, LoadError
from kireme.load.encoding import decode_file
from kireme.text.languages import LANGUAGE_SUFFIXES, SUFFIX_LANGUAGES, check_language, language_of

SUPPORTED_SUFFIXES: dict[str, str] = {
    ".txt": "text",
    ".text": "text",
    # a wiki page's source (MediaWiki): plain text whose ``== Section ==`` lines are its outline
    ".wiki": "text",
    ".wikitext": "text",
    ".mediawiki": "text",
    # reStructuredText (Sphinx documentation): plain text whose underlined titles stay with their sections
    ".rst": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".ipynb": "ipynb",
    ".pdf": "pdf",
    ".docx": "docx",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".srt": "srt",
    ".vtt": "vtt",
}
# Read when a file is named (by `load` and on the command line), never picked up by a directory walk
# unless asked for (`iter_paths(suffixes=...)`): a folder of documents often holds data and scripts too.
JSON_SUFFIXES: dict[str, str] = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl"}
CODE_SUFFIXES: dict[str, str] = {suffix: "code" for suffix in SUFFIX_LANGUAGES}
FORMATS = (
    "text",
    "markdown",
    "html",
    "ipynb",
    "pdf",
    "docx",
    "csv",
    "tsv",
    "json",
    "jsonl",
    "code",
    "srt",
    "vtt",
)

logger = logging.getLogger(__name__)

# The largest file `load` reads (it is read into memory whole): 1 GiB.
MAX_FILE_BYTES = 1 << 30


def format_of(path: str | os.PathLike[str]) -> str:
    """The format an extension names (``text`` for anything unknown): ``json``/``jsonl`` for JSON and
    JSON Lines, ``code`` for source code (`kireme.text.languages`)."""
    suffix = Path(path).suffix.lower()
    return SUPPORTED_SUFFIXES.get(suffix) or JSON_SUFFIXES.get(suffix) or CODE_SUFFIXES.get(suffix, "text")


def sniff_format(data: bytes, guess: str) -> str:
    """Correct an extension's guess by the content: PDF and .docx files are recognised by their bytes."""
    if data.startswith(b"%PDF-"):
        return "pdf"
    if data.startswith(b"PK\x03\x04") and guess != "docx":
        import zipfile  # only for files that start like a zip archive

        try:
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                if "word/document.xml" in zf.namelist():
                    return "docx"
        except zipfile.BadZipFile:
            pass
    return guess


def check_format(format: str) -> str:
    if format not in FORMATS:
        raise ConfigError(f"unknown input format {format!r}: choose one of {', '.join(FORMATS)}")
    return format


def load_text(text: str, id: str = "", **metadata: object) -> Document:
    """A `Document` from a string you already have (the id defaults to a content hash)."""
    return Document(text=text, id=id, metadata=metadata)


# `Document.id` of a document made without one (`kireme.document`): a hash, not a name
_CONTENT_ID = re.compile(r"sha256:[0-9a-f]{16}")


def file_title(id: str) -> str:
    """The title a file's name gives: its name without the extension (``出張旅費規程`` for
    ``規程/出張旅費規程.txt``); ``""`` for a stream such as ``<stdin>`` and for bytes given without a name
    (whose id is their content hash, ``sha256:…``: no title to read). A name that is not valid UTF-8
    (kept as surrogate escapes in the id) gives its bytes decoded with U+FFFD for what cannot be read: a
    title is text for a reader and a store, and every store keeps UTF-8 only."""
    if not id or id.startswith("<") or _CONTENT_ID.fullmatch(id) is not None:
        return ""
    stem = Path(id).stem.strip()
    try:
        raw = stem.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate outside the escape range: passed through, then replaced
        raw = stem.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "replace")


def _decoded(data: bytes, id: str, encoding: str | None, format: str, **extra: object) -> Document:
    decoded = decode_file(data, id, encoding, logger)
    return Document(
        text=decoded.text,
        id=id,
        metadata={
            "source": id,
            "encoding": decoded.encoding,
            "bom": decoded.bom,
            "format": format,
            "bytes": len(data),
            **extra,
        },
    )


def load_bytes(
    data: bytes,
    id: str,
    encoding: str | None = None,
    format: str = "text",
    *,
    outputs: str = "none",
    title: str | None = None,
) -> Document:
    """Read bytes you already have (stdin, an upload) exactly like a file; ``id`` names it in errors.

    ``format`` is one of `FORMATS`; ``outputs`` (``none``/``text``) says whether notebook cell outputs
    are kept. ``title`` replaces the title the format names and the file name (`titled`).
    """
    doc = _load_bytes(data, id, encoding, format, outputs=outputs)
    if data.strip() and not doc.text.strip():  # never an empty result without a word
        logger.warning("%s: %d bytes of %s gave no text at all", id, len(data), format)
    elif not data and format != "code":  # an empty __init__.py is normal; an empty rules.txt is news
        logger.warning("%s: empty file (0 bytes): nothing to chunk", id)
    return titled(doc, title)


def titled(doc: Document, title: str | None = None) -> Document:
    """``doc`` with its title: ``title`` when given, else the one its loader found, else (Markdown, and
    the Markdown that HTML, .docx and notebooks become) its front matter ``title:`` or first ``#``
    heading, else its file name (`file_title`). Whitespace runs become one space."""
    if title is None:
        title = doc.title.strip() or _markdown_title(doc) or file_title(doc.id)
    title = " ".join(title.split())
    if title == doc.metadata.get("title", ""):
        return doc
    return Document(text=doc.text, id=doc.id, metadata={**doc.metadata, "title": title}, regions=doc.regions)


def _markdown_title(doc: Document) -> str:
    """Front matter ``title:``, else the first level-1 heading (never a ``#`` line inside a code block).
    The parse is cached: chunking the document next does not parse it again."""
    from kireme.text.markdown import MARKDOWN_FORMATS, markdown_outline

    if doc.format not in MARKDOWN_FORMATS or not doc.text.strip():
        return ""
    return markdown_outline(doc.text, doc.id, warn=False).title


def _load_bytes(data: bytes, id: str, encoding: str | None, format: str, *, outputs: str) -> Document:
    check_format(format)
    if format == "pdf":
        from kireme.load.pdf import load_pdf

        return load_pdf(data, id)
    if format == "docx":
        from kireme.load.docx import load_docx

        return load_docx(data, id)
    if format == "html":
        from kireme.load.html import load_html

        return load_html(data, id, encoding=encoding)
    if format == "ipynb":
        from kireme.load.notebook import load_notebook

        return load_notebook(data, id, outputs=outputs, encoding=encoding)
    if format in ("csv", "tsv"):
        return _table(data, id, encoding, format)
    if format in ("srt", "vtt"):
        from kireme.load.subtitles import load_subtitles

        return load_subtitles(data, id, format, encoding=encoding)
    if format == "code":
        language = language_of(id) if id and not id.startswith("<") else None
        return _decoded(data, id, encoding, format, **({"language": language} if language else {}))
    return _decoded(data, id, encoding, format)


def _table(data: bytes, id: str, encoding: str | None, format: str) -> Document:
    """A CSV/TSV file: the decoded text as it is; its name is the table's name and the title."""
    name = Path(id).stem if id and not id.startswith("<") else ""
    doc = _decoded(data, id, encoding, format, title=name)
    if not doc.text.strip():
        return doc
    from kireme.document import Region

    return Document(
        text=doc.text,
        id=doc.id,
        metadata=doc.metadata,
        regions=(Region(0, len(doc.text), "table", {"table": name}),) if name else (),
    )


def load(
    path: str | os.PathLike[str],
    encoding: str | None = None,
    *,
    format: str | None = None,
    outputs: str = "none",
    max_bytes: int = MAX_FILE_BYTES,
    title: str | None = None,
) -> Document:
    """Read one file; the document id is the path as given (POSIX separators).

    Only regular files are read (a FIFO would block, a device never end), and none over ``max_bytes``.

    The format comes from the extension and the content unless ``format`` is given. Raises `LoadError`
    naming the file and the reason (missing, a directory, binary, undecodable, not a valid PDF...).

    The title (`Document.title`) is the one the format names, else the file name without its extension
    (``出張旅費規程`` for ``出張旅費規程.txt``); ``title`` replaces it.
    """
    p = Path(path)
    shown = p.as_posix()
    try:
        st = p.stat()  # follows symlinks: a link to /dev/zero is a device
    except FileNotFoundError:
        raise LoadError(shown, "no such file") from None
    except OSError as exc:
        raise LoadError(shown, exc.strerror or str(exc)) from None
    if stat.S_ISDIR(st.st_mode):
        raise LoadError(shown, "is a directory (pass files, or a directory to the CLI)")
    if not stat.S_ISREG(st.st_mode):  # a FIFO would block the run, a device never end
        kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device or socket"
        raise LoadError(shown, f"not a regular file ({kind}); skipped")
    if st.st_size > max_bytes:
        raise LoadError(
            shown,
            f"{st.st_size:,} bytes is over the limit of {max_bytes:,} bytes for one file "
            "(--max-file-size); split it or raise the limit",
        )
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise LoadError(shown, exc.strerror or str(exc)) from None
    fmt = check_format(format) if format else sniff_format(data, format_of(p))
    return load_bytes(data, shown, encoding, fmt, outputs=outputs, title=title)


def iter_paths(
    path: str | os.PathLike[str],
    suffixes: Collection[str] | None = None,
    left_out: collections.Counter[str] | None = None,
) -> Iterator[Path]:
    """A file as itself; a directory as its files with one of ``suffixes`` (default: the documents of
    `SUPPORTED_SUFFIXES`; JSON and source files only when asked for: `walked_suffixes`), recursively, in
    sorted order, folders whose name starts with ``.`` left out. ``left_out`` counts the files of the walk
    it did not yield, by extension (``""`` for none)."""
    p = Path(path)
    wanted = SUPPORTED_SUFFIXES if suffixes is None else suffixes
    if p.is_dir():
        for dirpath, dirnames, filenames in os.walk(p, onerror=_unreadable_folder):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                child = Path(dirpath) / name
                if child.suffix.lower() not in wanted:
                    if left_out is not None and not name.startswith("."):
                        left_out[child.suffix.lower()] += 1
                    continue
                try:
                    regular = stat.S_ISREG(child.stat().st_mode)
                except OSError:  # a dangling link: load reports it
                    regular = True
                if regular:
                    yield child
                else:
                    logger.warning("%s: not a regular file (a FIFO, device or socket); skipped", child)
    else:
        yield p


def _unreadable_folder(exc: OSError) -> None:
    """A folder the walk cannot list (no permission): said, not skipped silently."""
    logger.warning("%s: cannot be read (%s); its files are skipped", exc.filename, exc.strerror or exc)


def walked_suffixes(strategy: str, language: str | None = None) -> frozenset[str]:
    """The extensions a directory walk reads for a strategy: JSON and JSON Lines files for ``json``,
    source files for ``code`` (of ``language`` only, when given), the documents otherwise."""
    if strategy == "json":
        return frozenset(JSON_SUFFIXES)
    if strategy == "code":
        if language is not None:
            return frozenset(LANGUAGE_SUFFIXES[check_language(language)])
        return frozenset(CODE_SUFFIXES)
    return frozenset(SUPPORTED_SUFFIXES)
