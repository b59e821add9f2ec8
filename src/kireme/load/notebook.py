"""Jupyter notebooks (``.ipynb``) rendered as Markdown, one `Region` per cell.

kireme's structure strategy parses `Document.text` as Markdown, so a notebook is rendered that way:
Markdown and raw cells verbatim, code cells as fenced blocks in the kernel's language, and (on request)
their text outputs as ```` ```output ```` blocks. Each rendered cell gets a ``"cell"`` region so chunks
can say which cell they came from. Plain `json` is enough: nbformat 4 (and the older nbformat 3
``worksheets`` layout) is read without the ``nbformat`` package.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kireme.document import Document, Region
from kireme.errors import ConfigError, DecodeError, LoadError
from kireme.load.encoding import decode

__all__ = ["OUTPUT_MODES", "load_notebook"]

OUTPUT_MODES = ("none", "text")

# CSI sequences (colours, cursor moves), OSC sequences (titles, links) and lone two-byte escapes.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_HEADING = re.compile(r"^ {0,3}#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)
_BACKTICK_RUN = re.compile(r"`{3,}")


def _joined(value: Any) -> str:
    """A notebook multiline string: a list of strings or one string."""
    if value is None:
        return ""
    if isinstance(value, list):
        return "".join(str(part) for part in value)
    return str(value)


def _fence(body: str, info: str) -> str:
    """A fenced code block that its body cannot close early."""
    longest = max((len(m.group()) for m in _BACKTICK_RUN.finditer(body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}"


def _strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def _output_text(output: Any) -> str:
    """The plain-text part of one code-cell output ("" when it has none)."""
    if not isinstance(output, dict):
        return ""
    kind = output.get("output_type")
    if kind == "stream":
        return _joined(output.get("text"))
    if kind in ("execute_result", "display_data", "pyout"):
        data = output.get("data")
        if isinstance(data, dict) and "text/plain" in data:
            return _joined(data["text/plain"])
        # nbformat 3 keeps the plain text at the top level.
        return _joined(output.get("text"))
    if kind in ("error", "pyerr"):
        ename = str(output.get("ename") or "Error")
        evalue = str(output.get("evalue") or "")
        return f"{ename}: {evalue}" if evalue else ename
    return ""


def _outputs_block(outputs: Any) -> str:
    if not isinstance(outputs, list):
        return ""
    parts = [_strip_ansi(_output_text(o)).rstrip("\n") for o in outputs]
    body = "\n".join(p for p in parts if p.strip())
    # Trailing spaces and blank lines inside an output block carry nothing.
    body = "\n".join(line.rstrip() for line in body.split("\n")).strip("\n")
    return _fence(body, "output") if body else ""


def _language(meta: dict[str, Any]) -> str:
    for holder, key in (("kernelspec", "language"), ("language_info", "name")):
        section = meta.get(holder)
        if isinstance(section, dict):
            value = section.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
    value = meta.get("language")  # nbformat 3 kept it on the worksheet/notebook
    if isinstance(value, str) and value.strip():
        return value.strip()
    return "python"


def _cells(nb: Any, id: str) -> list[Any]:
    if isinstance(nb, dict):
        cells = nb.get("cells")
        if isinstance(cells, list):
            return cells
        worksheets = nb.get("worksheets")  # nbformat 3
        if isinstance(worksheets, list) and worksheets:
            first = worksheets[0]
            if isinstance(first, dict) and isinstance(first.get("cells"), list):
                return list(first["cells"])
    raise LoadError(id, 'not a Jupyter notebook (no "cells" list)')


def _render_cell(cell: dict[str, Any], language: str, outputs: str) -> str:
    cell_type = cell.get("cell_type")
    if cell_type == "code":
        source = _joined(cell.get("source", cell.get("input"))).rstrip()
        if not source.strip():
            return ""
        rendered = _fence(source, language)
        if outputs == "text":
            block = _outputs_block(cell.get("outputs"))
            if block:
                rendered += "\n\n" + block
        return rendered
    if cell_type == "heading":  # nbformat 3 heading cells
        source = _joined(cell.get("source")).strip()
        if not source:
            return ""
        level = cell.get("level")
        level = level if isinstance(level, int) and 1 <= level <= 6 else 1
        return "#" * level + " " + source
    source = _joined(cell.get("source")).rstrip()
    if "data:" in source:
        source = _DATA_URI.sub(r"\1…", source)
    return source if source.strip() else ""


# An image pasted into a Markdown cell (``![plot](data:image/png;base64,iVBOR…)``): its bytes as text
# are no words — they filled a dozen chunks of base64 — so the URI keeps its type and loses its payload
_DATA_URI = re.compile(r"(data:[\w/+.-]+(?:;[\w=.-]+)*;base64,)[A-Za-z0-9+/=]{64,}")


def load_notebook(data: bytes, id: str, *, outputs: str = "none", encoding: str | None = None) -> Document:
    """Read a Jupyter notebook and render it as Markdown with one ``"cell"`` region per rendered cell.

    ``outputs="text"`` appends each code cell's text outputs (streams, ``text/plain`` results, and
    ``ename: evalue`` for errors, ANSI codes removed) as an ``output`` fenced block; ``"none"`` skips them.
    Raises `ConfigError` for another ``outputs`` value and `LoadError` for bytes that are not a notebook.
    """
    if outputs not in OUTPUT_MODES:
        raise ConfigError(f"outputs must be one of {', '.join(OUTPUT_MODES)}, got {outputs!r}")
    try:
        decoded = decode(data, encoding)
    except DecodeError as exc:
        raise LoadError(id, str(exc)) from None
    try:
        nb = json.loads(decoded.text)
    except json.JSONDecodeError as e:
        raise LoadError(id, f"not valid notebook JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    except RecursionError:
        raise LoadError(id, "not valid notebook JSON (nested too deeply)") from None
    cells = _cells(nb, id)
    meta = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    language = _language(meta)

    pieces: list[str] = []
    regions: list[Region] = []
    pos = 0
    title = ""
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict):
            continue
        rendered = _render_cell(cell, language, outputs)
        if not rendered:
            continue
        cell_type = str(cell.get("cell_type") or "raw")
        if cell_type == "heading":
            cell_type = "markdown"
        if not title and cell_type == "markdown":
            m = _HEADING.search(rendered)
            if m:
                title = m.group(1).strip()
        if pieces:
            pos += 2  # the "\n\n" joining cells
        regions.append(Region(pos, pos + len(rendered), "cell", {"cell": index, "cell_type": cell_type}))
        pieces.append(rendered)
        pos += len(rendered)

    text = "\n\n".join(pieces)
    if text:
        text += "\n"
    meta_title = meta.get("title")
    if isinstance(meta_title, str) and meta_title.strip():
        title = meta_title.strip()
    return Document(
        text=text,
        id=id,
        metadata={
            "source": id,
            "format": "ipynb",
            "bytes": len(data),
            "encoding": decoded.encoding,
            "bom": decoded.bom,
            "title": title,
            "language": language,
            "cells": len(cells),
        },
        regions=tuple(regions),
    )
