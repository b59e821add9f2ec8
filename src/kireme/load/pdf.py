"""PDF text with one `Region` per page, read with pypdf (the optional ``kireme[pdf]`` extra).

PDF has no paragraphs, only positioned lines: `load_pdf` keeps pypdf's extracted text as it is (line ends
normalised, trailing spaces and blank lines dropped) so offsets stay exact, joins pages with a blank line
(one line break where a sentence runs on to the next page: `_page_join`) and records a ``"page"`` region
per page so chunks can cite ``{"page": n}``. Because every visual line ends in ``"\\n"`` although the
paragraph goes on, `kireme.text.paragraphs.pdf_paragraph_starts` tells the chunker where the real
paragraph breaks are, without changing the text.

Broken files fail as `LoadError` with a one-line reason; a page that fails on its own is skipped with one
warning. pypdf's own log chatter about damaged files is silenced while reading.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING

from kireme.document import Document, Region
from kireme.errors import LoadError, MissingExtraError

if TYPE_CHECKING:
    from pypdf import PdfReader

__all__ = ["load_pdf"]

logger = logging.getLogger(__name__)

# Titles that PDF producers write when nobody set one (reportlab: "untitled").
_PLACEHOLDER_TITLES = frozenset({"untitled", "untitled document", "無題"})


def _one_line(exc: BaseException) -> str:
    """An exception as one short line: its type, and its message when it has one."""
    msg = " ".join(str(exc).split())
    if len(msg) > 200:
        msg = msg[:197] + "..."
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


@contextlib.contextmanager
def _quiet_pypdf() -> Iterator[None]:
    """Silence pypdf's log records and warnings about damaged files while reading one."""
    quiet = logging.getLogger("pypdf")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        quiet.setLevel(level)


def _normalise_page(raw: str) -> str:
    """Unify line ends, drop trailing spaces of lines and blank lines at both ends."""
    text = raw.replace("\r\n", "\n").replace("\r", "\n")
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return "\n".join(lines)


def _title(reader: PdfReader) -> str:
    try:
        info = reader.metadata
        title = info.title if info is not None else None
    except Exception:  # a broken info dictionary is no reason to refuse the text
        return ""
    if not title:
        return ""
    title = " ".join(str(title).replace("\x00", "").split())
    return "" if title.casefold() in _PLACEHOLDER_TITLES else title


def _page_join(before: str, after: str) -> str:
    """What goes between two pages' texts: a blank line (a paragraph break) where the page before ends a
    sentence or the next starts an item or heading (``第3条``, ``・``, ``1.``); else one line break, as
    between the wrapped lines of a paragraph — a sentence that runs on to the next page is one sentence
    (``…need approval from the`` / ``department head before the trip.`` was cut at the page break)."""
    from kireme.text.paragraphs import ends_sentence, starts_item

    last = before.rsplit("\n", 1)[-1]
    first = after.split("\n", 1)[0]
    return "\n\n" if ends_sentence(last) or starts_item(first) else "\n"


def load_pdf(data: bytes, id: str) -> Document:
    """Extract the text of every page of a PDF; one ``"page"`` region (``{"page": n}``, 1-based) per page.

    Pages are joined with a blank line (one line break where a sentence runs on, `_page_join`) and the
    text ends with ``"\\n"``; pages without text get no region.
    A PDF with no extractable text at all (scanned images) gives an empty document and one warning.
    Raises `LoadError` for encrypted (non-empty password), truncated or corrupt files, or when pypdf is
    not installed.
    """
    try:
        import pypdf
    except ImportError:
        missing = MissingExtraError("reading PDF", "pdf", "pypdf")
        raise LoadError(id, str(missing)) from missing

    with _quiet_pypdf():
        try:
            reader = pypdf.PdfReader(io.BytesIO(data))
            if reader.is_encrypted:
                try:
                    opened = reader.decrypt("")
                except Exception as exc:
                    raise LoadError(id, f"encrypted PDF ({_one_line(exc)})") from None
                if not opened:
                    raise LoadError(id, "encrypted PDF (a password is needed)")
            pages = reader.pages
            count = len(pages)
        except LoadError:
            raise
        except Exception as exc:  # pypdf raises many types on damaged files (PdfReadError, KeyError, ...)
            raise LoadError(id, f"not a readable PDF ({_one_line(exc)})") from None
        title = _title(reader)

        texts: list[str] = []
        failures: list[BaseException] = []
        for n in range(1, count + 1):
            try:
                raw = pages[n - 1].extract_text()
            except Exception as exc:  # errors surface lazily, page by page
                failures.append(exc)
                texts.append("")
                logger.warning(
                    "%s: page %d: text extraction failed (%s); page skipped", id, n, _one_line(exc)
                )
                continue
            texts.append(_normalise_page(raw or ""))

    if count and len(failures) == count:
        raise LoadError(id, f"not a readable PDF ({_one_line(failures[0])})")

    parts: list[str] = []
    regions: list[Region] = []
    pos = 0
    for n, page_text in enumerate(texts, start=1):
        if not page_text:
            continue
        if parts:
            join = _page_join(parts[-1], page_text)
            parts.append(join)
            pos += len(join)
        regions.append(Region(pos, pos + len(page_text), "page", {"page": n}))
        parts.append(page_text)
        pos += len(page_text)
    text = "".join(parts)
    if text:
        text += "\n"
    else:
        logger.warning("%s: no extractable text (scanned?)", id)

    return Document(
        text=text,
        id=id,
        metadata={"source": id, "format": "pdf", "bytes": len(data), "title": title, "pages": count},
        regions=tuple(regions),
    )
