"""Word ``.docx`` files rendered as Markdown, one `Region` per table.

kireme's structure strategy parses `Document.text` with a CommonMark (+ GFM tables) parser, so a Word
file is rendered as Markdown that parser reads back the same way: paragraph styles become structure
(``Title`` and ``Heading N`` / ``見出し N`` headings, ``List Bullet`` / ``List Number`` items) and tables
become pipe tables, kept in document order with the paragraphs around them. python-docx is an optional
dependency (``pip install 'kireme[docx]'``), imported only when a ``.docx`` file is loaded.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any

from kireme.document import Document, Region
from kireme.errors import LoadError, MissingExtraError
from kireme.load.html import Block, escape_line, join_blocks, merged_header, pipe_table
from kireme.load.numbering import Numbering, read_numbering

__all__ = ["load_docx"]

_HEADING_NAME = re.compile(r"^(?:heading|見出し)\s*(\d)$", re.IGNORECASE)
_HEADING_ID = re.compile(r"^heading(\d)$", re.IGNORECASE)
_TRAILING_DIGIT = re.compile(r"(\d+)\s*$")
_INLINE_WS = re.compile(r"[ \t\r\n]+")
_CLOSING_HASHES = re.compile(r"([ \t])(#+)$")
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


# A .docx is a zip: a few kilobytes can inflate to gigabytes of XML (a "paragraph bomb" took minutes and
# gigabytes in python-docx). What is inflated is counted before python-docx sees it.
MAX_UNCOMPRESSED_BYTES = 256 << 20  # all parts together
MAX_ELEMENTS = 5_000_000  # XML elements (counted as "<") in word/document.xml
_READ = 1 << 20


def _check_budget(data: bytes, id: str) -> None:
    """`LoadError` when the zip inflates past `MAX_UNCOMPRESSED_BYTES` or the body holds more than
    `MAX_ELEMENTS` elements; sizes are counted while inflating, not taken from the zip's own claims."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError):
        return  # not a zip at all: python-docx says so in its own words below
    with archive:
        total = 0
        for info in archive.infolist():
            elements = 0
            try:
                with archive.open(info) as part:
                    while chunk := part.read(_READ):
                        total += len(chunk)
                        if total > MAX_UNCOMPRESSED_BYTES:
                            raise LoadError(
                                id,
                                f"inflates to more than {MAX_UNCOMPRESSED_BYTES >> 20} MiB "
                                "(a zip bomb?); not read",
                            )
                        if info.filename == "word/document.xml":
                            elements += chunk.count(b"<")
                            if elements > MAX_ELEMENTS:
                                raise LoadError(
                                    id,
                                    f"holds more than {MAX_ELEMENTS:,} XML elements (a zip bomb?); not read",
                                )
            except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError):
                return  # a damaged or encrypted part: python-docx reports it


def load_docx(data: bytes, id: str) -> Document:
    """Read a Word ``.docx`` file as a Markdown `Document` (``format="docx"``), one region per table.

    Raises `LoadError` when python-docx is missing or the bytes are not a readable ``.docx`` file.
    """
    try:
        import docx
        from docx.table import Table
    except ImportError:
        missing = MissingExtraError("reading .docx", "docx", "python-docx")
        raise LoadError(id, str(missing)) from missing
    _check_budget(data, id)
    try:
        document = docx.Document(io.BytesIO(data))
        numbering = read_numbering(document)
        items = list(_body_items(document.element.body, document._body))
        core_title = (document.core_properties.title or "").strip()
        notes = _footnotes(data)
    except Exception as exc:  # zip, XML, missing-part and content-type errors all mean "not readable"
        raise LoadError(id, f"not a readable .docx file ({_one_line(exc)})") from None

    blocks: list[Block] = []
    list_lines: list[str] = []
    list_state: list[tuple[int, int, str]] = []  # per open level: (marker width, next number, kind)
    title = core_title
    tables = 0

    def end_list() -> None:
        if list_lines:
            blocks.append(("\n".join(list_lines), []))
            list_lines.clear()
            list_state.clear()

    def add_paragraph(item: Any, lines: list[str]) -> None:
        nonlocal title
        kind, level = _paragraph_kind(item)
        shown = _shown_number(numbering, item)  # the number Word shows (numbering.xml), when it has one
        if kind == "heading":
            end_list()
            text = " ".join(lines)
            if shown is not None and shown[1]:  # 第1章 of a numbered heading style: part of its title
                text = shown[1] + " " + text
            if not title and level == 1:
                title = text
            blocks.append(("#" * level + " " + _CLOSING_HASHES.sub(r"\1\\\2", text), []))
        elif kind in ("bullet", "number"):
            marker = None
            if shown is not None:
                kind, marker = shown
                if kind == "number" and not _MARKDOWN_NUMBER.fullmatch(marker):
                    kind = "bullet"  # （1）, ①: a bullet item opening with the number Word shows
            if list_state and level == 0 and list_state[0][2] != kind:
                end_list()  # "- " then "1. " at the top: two lists, a blank line apart
            list_lines.append(_list_item(list_state, kind, level, lines, marker))
        else:
            end_list()
            blocks.append(("\n".join(escape_line(line) for line in lines), []))

    cited: list[str] = []  # footnote ids in the order the text cites them
    for item in items:
        if isinstance(item, Table):
            end_list()
            rows = _table_rows(item)
            if rows:
                tables += 1
                md = pipe_table(rows)
                blocks.append((md, [(0, len(md), f"table {tables}")]))
            continue
        text, boxes = _paragraph_text(item._p, cited)
        lines = _lines(text)
        if lines:
            add_paragraph(item, lines)
        for box in boxes:  # a text box's paragraphs, after the paragraph that anchors it
            box_lines = _lines(box)
            if box_lines:
                end_list()
                blocks.append(("\n".join(escape_line(line) for line in box_lines), []))
    end_list()
    for note_id in cited:  # the footnotes the text cites, at the end, each after its mark
        note = _lines(notes.get(note_id, ""))
        if note:
            blocks.append((escape_line(f"[^{note_id}] " + " ".join(note)), []))

    text, spans = join_blocks(blocks)
    metadata: dict[str, Any] = {
        "source": id,
        "format": "docx",
        "bytes": len(data),
        "title": title,
    }
    regions = tuple(Region(s, e, "table", {"table": label}) for s, e, label in spans)
    return Document(text=text, id=id, metadata=metadata, regions=regions)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _lines(text: str) -> list[str]:
    """A paragraph's lines (soft breaks split it), spaces collapsed, blank lines dropped."""
    out = [_INLINE_WS.sub(" ", line).strip() for line in text.replace("\r", "\n").split("\n")]
    return [line for line in out if line]


def _style(paragraph: Any) -> tuple[str, str, Any]:
    try:
        style = paragraph.style
    except Exception:  # a style reference the styles part does not define
        return "", "", None
    if style is None:
        return "", "", None
    return style.name or "", style.style_id or "", style


def _paragraph_kind(paragraph: Any) -> tuple[str, int]:
    """("heading", level), ("bullet"|"number", nesting level from 0) or ("text", 0)."""
    name, style_id, style = _style(paragraph)
    if name.lower() == "title" or style_id.lower() == "title":
        return "heading", 1
    m = _HEADING_NAME.match(name.strip()) or _HEADING_ID.match(style_id)
    if m and 1 <= int(m.group(1)) <= 9:
        return "heading", min(int(m.group(1)), 6)
    lowered = name.lower()
    if lowered.startswith(("list bullet", "list number")):
        digit = _TRAILING_DIGIT.search(name)
        level = int(digit.group(1)) - 1 if digit else _ilvl(paragraph)
        return ("bullet" if lowered.startswith("list bullet") else "number"), max(0, min(level, 8))
    if _ilvl(paragraph, default=-1) >= 0:  # direct numbering (a "List Paragraph"): kind unknown, use "-"
        return "bullet", _ilvl(paragraph)
    outline_level = _outline_level(paragraph, style)
    if outline_level is not None:
        return "heading", outline_level
    return "text", 0


def _ilvl(paragraph: Any, default: int = 0) -> int:
    p_pr = paragraph._p.pPr
    num_pr = p_pr.find(f"{_W}numPr") if p_pr is not None else None
    if num_pr is None:
        return default
    ilvl = num_pr.find(f"{_W}ilvl")
    value = ilvl.get(f"{_W}val") if ilvl is not None else "0"
    return int(value) if value and value.isdigit() else 0


def _outline_level(paragraph: Any, style: Any) -> int | None:
    """Heading level from an explicit outline level (paragraph, else its style): 0-5 -> 1-6."""
    for element in (paragraph._p, getattr(style, "element", None)):
        if element is None:
            continue
        found = element.find(f"{_W}pPr/{_W}outlineLvl")
        if found is not None:
            value = found.get(f"{_W}val") or ""
            if value.isdigit() and int(value) <= 5:
                return int(value) + 1
            return None
    return None


def _list_item(
    state: list[tuple[int, int, str]], kind: str, level: int, lines: list[str], shown: str | None = None
) -> str:
    """One list line, indented under the items above it, numbered sequentially per level — or with the
    number Word shows (``shown``, from numbering.xml): ``5.`` as a Markdown ordered item, ``（1）`` or ``①``
    at the start of a bullet item's text (Markdown numbers only ``1.`` and ``1)``)."""
    level = min(level, len(state))  # never skip a level: Markdown would read it as code
    number = 1
    if len(state) > level and state[level][2] == kind:
        number = state[level][1]
    text = "\n".join(escape_line(line) for line in lines)
    if shown and kind == "number" and _MARKDOWN_NUMBER.fullmatch(shown):
        marker = shown + " "
        number = int(shown[:-1])
    elif shown:
        marker = "- "
        text = _joined(escape_line(shown), text)
    else:
        marker = f"{number}. " if kind == "number" else "- "
    state[level:] = [(len(marker), number + 1, kind)]
    indent = " " * sum(width for width, _, _ in state[:level])
    return (indent + marker + text).replace("\n", "\n" + indent + " " * len(marker))


# A number Markdown reads as an ordered list item's (CommonMark: at most 9 digits, then "." or ")")
_MARKDOWN_NUMBER = re.compile(r"[0-9]{1,9}[.)]")


def _joined(marker: str, text: str) -> str:
    """A list item's number as Word shows it, then its text: a space after a Latin one (``a. Scope``),
    none after a Japanese one (``（1）正当な理由``)."""
    return marker + (" " if marker[-1:].isascii() and not text.startswith(" ") else "") + text


def _num_pr(paragraph: Any) -> tuple[str, int] | None:
    """``(numId, ilvl)`` of a paragraph's numbering: its own ``w:numPr``, else its style's (up the
    ``basedOn`` chain); ``None`` when it has none."""
    p_pr = paragraph._p.pPr
    found = p_pr.find(f"{_W}numPr") if p_pr is not None else None
    style = _style(paragraph)[2]
    seen = 0
    while found is None and style is not None and seen < 10:
        found = style.element.find(f"{_W}pPr/{_W}numPr")
        style = getattr(style, "base_style", None)
        seen += 1
    if found is None:
        return None
    num = found.find(f"{_W}numId")
    ilvl = found.find(f"{_W}ilvl")
    num_id = num.get(f"{_W}val") if num is not None else None
    if not num_id:
        return None
    value = ilvl.get(f"{_W}val") if ilvl is not None else "0"
    return num_id, int(value) if value and value.isdigit() else 0


def _shown_number(numbering: Numbering | None, paragraph: Any) -> tuple[str, str] | None:
    """``("bullet" | "number", the number as Word shows it)`` for a numbered paragraph (the document's
    counters advance), ``None`` for one with no numbering or no definitions to read."""
    if numbering is None:
        return None
    pr = _num_pr(paragraph)
    if pr is None:
        return None
    return numbering.marker(*pr)


def _table_rows(table: Any) -> list[list[str]]:
    """Cell texts per grid position; merged cells repeat their text (python-docx returns them so). A
    cell's text is all of it: its paragraphs, inserted text, content controls and nested tables, each
    part a space apart."""
    rows: list[list[str]] = []
    header_rows = 0  # the rows Word repeats at the top of each page (w:tblHeader), from the first on
    for n, row in enumerate(table.rows):
        try:
            cells = [_cell_text(cell._tc) for cell in row.cells]
        except Exception:  # an inconsistent grid: read the row's own cells
            cells = [_cell_text(tc) for tc in row._tr.tc_lst]
        rows.append([_INLINE_WS.sub(" ", c.replace("\n", " ")).strip() for c in cells])
        if header_rows == n and row._tr.find(f"{_W}trPr/{_W}tblHeader") is not None:
            header_rows += 1
    rows = [r for r in rows if r] if any(rows) else []
    if header_rows > 1 and len(rows) > header_rows:  # a two-row header: one, as an HTML table's is
        return [merged_header(rows[:header_rows]), *rows[header_rows:]]
    return rows


# --- text python-docx's ``.text`` leaves out --------------------------------------------------------------

_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_TEXT_BOX = f"{_W}txbxContent"
# what a run holds that reads as text; a deleted run's text is w:delText (left out), a field's code
# w:instrText (left out: its result is in w:t)
# what Word does not show: deleted and moved-away runs (their text may be w:t), a drawing's VML copy
_NOT_SHOWN = frozenset((f"{_W}del", f"{_W}moveFrom", f"{_MC}Fallback", f"{_W}instrText", f"{_W}delText"))
_RUN_TEXT = {f"{_W}t": None, f"{_W}tab": "\t", f"{_W}br": "\n", f"{_W}cr": "\n", f"{_W}noBreakHyphen": "-"}


def _body_items(container: Any, parent: Any) -> Any:
    """The paragraphs and tables of a body in order, those inside block-level content controls
    (``w:sdt``: forms, templates) included, which python-docx's ``iter_inner_content`` skips."""
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    for child in container.iterchildren():
        if child.tag == f"{_W}p":
            yield Paragraph(child, parent)
        elif child.tag == f"{_W}tbl":
            yield Table(child, parent)
        elif child.tag == f"{_W}sdt":
            content = child.find(f"{_W}sdtContent")
            if content is not None:
                yield from _body_items(content, parent)


def _paragraph_text(p: Any, cited: list[str] | None = None) -> tuple[str, list[str]]:
    """A paragraph's text as Word shows it — inserted text (``w:ins``, tracked changes) included, deleted
    and moved-away text left out, a footnote's mark as ``[^N]`` (its id added to ``cited``) — and the
    texts of the text boxes anchored in it (one copy: a box given twice, as a drawing and as its VML
    fallback, is read from the drawing)."""
    parts: list[str] = []
    boxes: list[str] = []

    def walk(el: Any) -> None:
        for child in el.iterchildren():
            tag = child.tag
            if tag == _TEXT_BOX:
                boxes.append("\n".join(_paragraph_text(q, cited)[0] for q in child.iterchildren(f"{_W}p")))
            elif tag in _NOT_SHOWN:
                continue
            elif tag in _RUN_TEXT:
                fixed = _RUN_TEXT[tag]
                parts.append(child.text or "" if fixed is None else fixed)
            elif tag == f"{_W}footnoteReference":
                note_id = child.get(f"{_W}id") or ""
                parts.append(f"[^{note_id}]")
                if cited is not None and note_id not in cited:
                    cited.append(note_id)
            else:
                walk(child)

    walk(p)
    return "".join(parts), boxes


def _cell_text(tc: Any) -> str:
    """Everything a table cell shows, its paragraphs (and nested tables' paragraphs) a space apart."""
    texts: list[str] = []
    for p in tc.iter(f"{_W}p"):
        if any(a.tag == _TEXT_BOX for a in p.iterancestors()):
            continue  # read with the paragraph that anchors the box
        text, boxes = _paragraph_text(p)
        texts.extend([text, *boxes])
    return " ".join(t for t in texts if t.strip())


def _footnotes(data: bytes) -> dict[str, str]:
    """The footnotes' texts by id (``word/footnotes.xml``; the separator notes left out)."""
    from lxml import etree

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            raw = archive.read("word/footnotes.xml")
    except KeyError:
        return {}
    root = etree.fromstring(raw, etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False))
    notes: dict[str, str] = {}
    for note in root.iter(f"{_W}footnote"):
        if note.get(f"{_W}type") in ("separator", "continuationSeparator", "continuationNotice"):
            continue
        text = " ".join(_paragraph_text(p)[0] for p in note.iter(f"{_W}p"))
        notes[note.get(f"{_W}id") or ""] = text
    return notes
