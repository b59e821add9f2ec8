"""PDF text with one `Region` per page, read with pypdf (the optional ``kireme[pdf]`` extra).

PDF has no paragraphs, only positioned lines: `load_pdf` keeps pypdf's extracted text as it is (line ends
normalised, trailing spaces and blank lines dropped) so offsets stay exact, joins pages with a blank line
(one line break where a sentence runs on to the next page: `_page_join`) and records a ``"page"`` region
per page so chunks can cite ``{"page": n}``. Lines repeated at the top or bottom of the pages — running heads
and feet, page numbers — are left out (`running_lines`; ``metadata["running_lines"]`` names them), so a
sentence that runs on to the next page stays one sentence. Because every visual line ends in ``"\\n"`` although the
paragraph goes on, `kireme.text.paragraphs.pdf_paragraph_starts` tells the chunker where the real
paragraph breaks are, without changing the text.

Broken files fail as `LoadError` with a one-line reason; a page that fails on its own is skipped with one
warning. pypdf's own log chatter about damaged files is silenced while reading.
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import re
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
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


# Running heads and feet: lines a PDF repeats at the top or bottom of its pages (``株式会社サンプル 就業規則``,
# ``- 3 -``, ``Page 3 of 12``, ``社外秘``). Read as text they land inside paragraphs — a sentence that runs
# on to the next page is cut by ``- 3 -`` and a company name — so `load_pdf` leaves them out.
_EDGE_LINES = 3  # lines looked at from the top and from the bottom of each page
_RUNNING_MAX_CHARS = 80  # a longer line is body text
_RUNNING_MIN_PAGES = 3  # on fewer pages a repeated line is no evidence
_RUNNING_SHARE = 0.4  # of the pages with text (0.4: headers that alternate between odd and even pages)
_DIGITS = re.compile(r"\d+")
# a page number and nothing else: ``3``, ``- 3 -``, ``3 / 12``, ``Page 3 of 12``, ``p. 3``, ``3ページ``, ``(3)``
_PAGE_NUMBER = re.compile(
    r"(?i)[\s\-–—－―ー~〜/／|()（）\[\]・.]*(?:page|p\.?|ページ|頁|第)?[\s]*#"
    r"(?:[\s]*(?:ページ|頁))?(?:[\s]*(?:/|／|of|\|)[\s]*#)?[\s\-–—－―ー~〜/／|()（）\[\]・.]*"
)


def _number(digits: str) -> int:
    """A run of digits as a number, -1 when it is too long to be a page's (Python refuses over 4,300)."""
    return int(digits) if len(digits) <= 9 else -1


def _running_key(line: str) -> str:
    """A line as it repeats from page to page: spaces collapsed, every run of digits one ``#``."""
    return _DIGITS.sub("#", " ".join(line.split()))


def is_page_number(line: str) -> bool:
    """Whether a line says nothing but a page number (``12``, ``- 12 -``, ``12 / 40``, ``Page 12 of 40``)."""
    key = _running_key(line)
    return "#" in key and _PAGE_NUMBER.fullmatch(key) is not None


def _repeated(edges: dict[int, list[str]], need: int) -> dict[str, bool]:
    """The keys (`_running_key`) of the lines that stand in the edges of at least ``need`` pages, each
    with whether it carries a page number: the same text each time (``False``), or a text whose numbers
    differ only by a page number, one of them going up with the page (``True``: ``規程 3/12``,
    ``規程 4/12``). Lines that differ in other numbers are body text (``Q1.``, ``Q2.``)."""
    seen: dict[str, list[tuple[int, str]]] = {}
    for page, edge in edges.items():
        for line in dict.fromkeys(" ".join(x.split()) for x in edge):
            if line and len(line) <= _RUNNING_MAX_CHARS:
                seen.setdefault(_running_key(line), []).append((page, line))
    out = {}
    for key, found in seen.items():
        if len(found) < need:
            continue
        numbers = [[_number(d) for d in _DIGITS.findall(line)] for _, line in found]
        for j in range(len(numbers[0])):  # the same count of numbers in every line of one key
            offsets = Counter(n[j] - page for n, (page, _) in zip(numbers, found, strict=True))
            if len({n[j] for n in numbers}) > 1 and max(offsets.values()) >= need:
                out[key] = True
                break
        else:
            if max(Counter(line for _, line in found).values()) >= need:
                out[key] = False
    return out


_TRAILING_NUMBER = re.compile(r"\s(\d+)\s*$")  # ``Chapter 4: Function reference 9``
_PAGE_OFFSET_SHARE = 0.3  # of the pages with text whose outermost lines must agree on the page numbering


def _printed_number(line: str) -> int | None:
    """The page number a line would print: the first number of a page-number line (``- 3 -``,
    ``3 / 12``), else a number that ends a line (``Chapter 4: Function reference 9``)."""
    if is_page_number(line):
        return _number(_DIGITS.findall(line)[0])
    found = _TRAILING_NUMBER.search(line)
    return _number(found.group(1)) if found and len(line.strip()) <= _RUNNING_MAX_CHARS else None


def _page_offset(lines: list[list[str]], shown: list[int]) -> int | None:
    """The printed page number minus the page's index, where the outermost lines of enough pages agree on
    one (a cover page or front matter shifts it); ``None`` where they do not."""
    votes: Counter[int] = Counter()
    for i in shown:
        edges = [x for x in lines[i] if x.strip()]
        if not edges:
            continue
        found = {n - i for n in (_printed_number(edges[0]), _printed_number(edges[-1])) if n is not None}
        votes.update(found)
    if not votes:
        return None
    offset, support = votes.most_common(1)[0]
    return offset if support >= max(_RUNNING_MIN_PAGES, math.ceil(_PAGE_OFFSET_SHARE * len(shown))) else None


def running_lines(pages: Sequence[str]) -> list[tuple[int, int]]:
    """How many lines to leave out at the top and at the bottom of each page: the running heads and feet
    (`_running`, less the page numbers found under a running line kept where it stands first)."""
    return _running(pages)[0]


def _running(pages: Sequence[str]) -> tuple[list[tuple[int, int]], list[list[int]]]:
    """How many lines to leave out at the top and at the bottom of each page: the running heads and feet;
    and on each page the lines further in to leave out too (a page number under a running head that is
    kept there, being its first: ``社外秘　情報セキュリティ規程`` over ``- 1 -``).

    A line is one when it stands among the first (or last) three lines of at least 40% of the pages with
    text, and of three of them at least, the same each time or with a number that goes up with the page
    (`_repeated`), and is at most 80 characters long. So is the page's printed number, where the outermost
    lines of the pages agree on how the pages are numbered (`_page_offset`): alone (``12``, ``- 12 -``)
    within the three lines, or ending the outermost line (``Chapter 4: Function reference 12``, a head
    that changes with each chapter). They are left out from the edge inwards (a body line between two of
    them keeps both). A page number, alone or in a line, goes wherever it stands; any other running line
    — a document title, a table header that a long table repeats on each page — is kept where it stands
    first, so the text still holds it once.
    """
    lines = [page.split("\n") if page else [] for page in pages]
    shown = [i for i, page in enumerate(lines) if page]
    cut = [(0, 0)] * len(pages)
    inner: list[list[int]] = [[] for _ in pages]
    if len(shown) < _RUNNING_MIN_PAGES:
        return cut, inner
    need = max(_RUNNING_MIN_PAGES, math.ceil(_RUNNING_SHARE * len(shown)))
    top = _repeated({i: lines[i][:_EDGE_LINES] for i in shown}, need)
    bottom = _repeated({i: lines[i][-_EDGE_LINES:] for i in shown}, need)
    offset = _page_offset(lines, shown)
    if not top and not bottom and offset is None:
        return cut, inner
    seen: set[str] = set()  # running lines other than page numbers already kept once

    def numbered(line: str, page: int, outermost: bool) -> bool:
        """Whether ``line`` prints ``page``'s number: alone, or at the end of the outermost line."""
        if offset is None or not (outermost or is_page_number(line)):
            return False
        return _printed_number(line) == page + offset

    def edge(page: int, edge_lines: list[str], running: dict[str, bool], further: list[int]) -> int:
        """How many of ``edge_lines`` (from the edge inwards) are running lines (blank lines between); the
        index of a page number alone further in, under a running line kept where it stands first, goes
        into ``further``."""
        out = 0
        for n, line in enumerate(edge_lines[:_EDGE_LINES]):
            if not line.strip():
                continue
            if numbered(line, page, outermost=out == 0 and not any(x.strip() for x in edge_lines[:n])):
                out = n + 1
                continue
            key = _running_key(line)
            if key not in running:
                break
            if not running[key] and not is_page_number(line) and key not in seen:
                seen.add(key)  # kept where it stands first; a page number under it goes all the same
                further += [
                    k
                    for k in range(n + 1, min(len(edge_lines), _EDGE_LINES))
                    if is_page_number(edge_lines[k])
                    and (
                        numbered(edge_lines[k], page, outermost=False)
                        or _running_key(edge_lines[k]) in running
                    )
                ][:1]
                break
            out = n + 1
        return out

    for i in shown:
        page = lines[i]
        below: list[int] = []
        head = edge(i, page, top, below)
        above: list[int] = []
        foot = edge(i, page[head:][::-1], bottom, above)
        cut[i] = (head, foot)
        inner[i] = below + [len(page) - 1 - k for k in above]
    return cut, inner


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

    left_out: dict[str, str] = {}  # running line (as keyed) -> its first text left out
    edges, inner = _running(texts)
    for i, (head, foot) in enumerate(edges):
        if head or foot or inner[i]:
            page = texts[i].split("\n")
            dropped = set(range(head)) | set(range(len(page) - foot, len(page))) | set(inner[i])
            for k in sorted(dropped):
                if page[k].strip():
                    left_out.setdefault(_running_key(page[k]), page[k].strip())
            texts[i] = _normalise_page("\n".join(line for k, line in enumerate(page) if k not in dropped))
    if left_out:
        logger.info("%s: running heads and feet left out: %s", id, " | ".join(left_out.values()))

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
        metadata={
            "source": id,
            "format": "pdf",
            "bytes": len(data),
            "title": title,
            "pages": count,
            **({"running_lines": list(left_out.values())} if left_out else {}),
        },
        regions=tuple(regions),
    )
