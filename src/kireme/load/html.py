"""HTML pages rendered as Markdown, one `Region` per table.

kireme's structure strategy parses `Document.text` with a CommonMark (+ GFM tables) parser to find
headings, lists, code fences and table rows, so an HTML page is rendered as clean Markdown that parser
reads back the same way: ``<h2>`` becomes ``## ``, lists become ``-``/``1.`` items, ``<pre>`` a fenced
block and ``<table>`` a pipe table. Page furniture (navigation, headers, footers, scripts, forms, and
elements with their ARIA roles: ``role="navigation"``, ``banner``, ``contentinfo``, ``complementary``,
``search``) is dropped (a header, footer or aside inside an article, section or main part is content and stays), and
when the page has a ``<main>`` only that is kept, else its articles when they hold most of its text (all
of them, in order), so chunks hold the content a reader came for. Inline whitespace follows HTML rules, except that a line break between two
Japanese characters disappears instead of becoming a space (as browsers render it).

lxml is imported only when an HTML file is loaded. The Markdown helpers at the bottom (`escape_line`,
`pipe_table`, `join_blocks`) are shared with the ``.docx`` loader.
"""

from __future__ import annotations

import codecs
import logging
import re
from collections.abc import Iterable, Sequence
from typing import Any

from kireme.document import Document, Region
from kireme.errors import LoadError, MissingExtraError
from kireme.load.encoding import DecodedText, decode_file

__all__ = ["load_html"]

logger = logging.getLogger(__name__)

# A block: Markdown text plus the table spans inside it, relative to that text.
Span = tuple[int, int, str]
Block = tuple[str, list[Span]]
# a block that is no paragraph: a fence, a table, a list, a quote, a heading
_BLOCK_START = re.compile(r"(?:```|~~~|\||- |\d+\. |> |#)")

_DROP = (
    "script",
    "style",
    "noscript",
    "template",
    "nav",
    "header",
    "footer",
    "aside",
    "form",
    "button",
    "svg",
    "iframe",
    "rt",  # ruby readings: <ruby>漢字<rt>かんじ</rt></ruby> reads as 漢字, not 漢字かんじ
    "rp",
    "head",
    "title",  # also one in the body (a second page pasted after the first): browsers never show it
)
_BLOCK = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "caption",
        "center",
        "dd",
        "details",
        "dialog",
        "dir",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hgroup",
        "hr",
        "html",
        "legend",
        "li",
        "main",
        "menu",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "ul",
    ]
)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_LISTS = frozenset(("ul", "ol", "menu", "dir"))
_CODE_INLINE = frozenset(("code", "kbd", "samp", "tt", "var"))
# Tags whose missing end tag means the file was cut short (their end tags are never optional in practice).
_MUST_CLOSE = ("table", "pre", "ul", "ol", "main", "article", "body", "html")

_BR = "\x00"  # stands for <br> until whitespace is collapsed (NULs are removed from the input)
_CJK = (
    "\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
)
_CJK_BREAK = re.compile(rf"(?<=[{_CJK}])[ \t\r\f]*\n[ \t\n\r\f]*(?=[{_CJK}])")
_WS = re.compile(r"[ \t\n\r\f]+")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)
_NOISE = re.compile(r"<!--.*?-->|<(script|style)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_ANY_TAG = re.compile(r"<[A-Za-z!?/]")
# The page's end tags: libxml2 drops whatever follows `</body>` or `</html>`, where a browser (HTML5)
# shows it at the end of the body
_PAGE_END = re.compile(r"</(?:body|html)\s*>", re.IGNORECASE)
_LANG_CLASS = re.compile(r"(?:^|\s)(?:language|lang)-([\w+#.-]+)")
_BACKTICKS = re.compile(r"`+")
_LEAD = re.compile(r"^(?:[#>+*=|<-]|`{3}|~{3}|(?:_[ \t]*){3,}$)")
_ORDERED = re.compile(r"^(\d{1,9})([.)])(?=[ \t]|$)")
_CLOSING_HASHES = re.compile(r"([ \t])(#+)$")
# WHATWG maps these labels to windows-31j; CP932 is the codec that decodes what pages really contain.
_CHARSET_ALIASES = {"shift_jis": "cp932", "shift-jis": "cp932", "sjis": "cp932", "x-sjis": "cp932"}


def load_html(data: bytes, id: str, *, encoding: str | None = None) -> Document:
    """Read an HTML page as a Markdown `Document` (``format="html"``) with one region per table.

    ``encoding`` overrides detection; otherwise a byte-order mark, then a ``<meta charset>`` that decodes
    the bytes strictly, then kireme's usual detection decide. A page that is cut short still loads
    (with one warning); bytes that hold no HTML at all raise `LoadError`.
    """
    decoded = _decode(data, id, encoding)
    text = decoded.text.replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise LoadError(id, "empty file, no HTML to parse")
    if not _ANY_TAG.search(text):
        raise LoadError(id, "no HTML markup found")
    text = _XML_DECL.sub("", text, count=1)
    _warn_if_truncated(text, id)
    text = _past_the_end_kept(text)

    try:
        import lxml.etree
        import lxml.html
    except ImportError:  # pragma: no cover - lxml is a default dependency
        missing = MissingExtraError("reading HTML", None, "lxml")  # a default dependency: no extra
        raise LoadError(id, str(missing)) from missing

    tree = _parse(text, id)
    title = _title(tree)
    for el in [e for e in tree.iter(lxml.etree.Comment, lxml.etree.ProcessingInstruction)]:
        _drop(el)
    for el in [e for e in tree.iter(*_DROP)]:
        if el.getparent() is not None and not _in_content(el):
            _drop(el)
    for el in [e for e in tree.xpath("//*[@role]") if _furniture_role(e)]:
        if el.getparent() is not None and not _in_content(el):
            _drop(el)
    _flatten_deep(tree, _RENDER_DEPTH)
    roots = _content_roots(tree)
    if not title:
        h1 = next((h for root in roots if (h := _first(root, "h1")) is not None), None)
        title = _inline_text(h1).replace("\n", " ") if h1 is not None else ""

    renderer = _Renderer()
    blocks = [block for root in roots for block in renderer.blocks(root)]
    markdown, spans = join_blocks(blocks)
    _warn_if_lost(text, markdown, id)
    regions = tuple(Region(s, e, "table", {"table": label}) for s, e, label in spans)
    metadata: dict[str, Any] = {
        "source": id,
        "encoding": decoded.encoding,
        "bom": decoded.bom,
        "format": "html",
        "bytes": len(data),
        "title": title,
    }
    return Document(text=markdown, id=id, metadata=metadata, regions=regions)


# --- decoding and checks -----------------------------------------------------------------------------


def _decode(data: bytes, id: str, encoding: str | None) -> DecodedText:
    if not encoding and not data.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        m = _META_CHARSET.search(data[:4096])
        if m:
            label = m.group(1).decode("ascii").lower()
            label = _CHARSET_ALIASES.get(label, label)
            try:
                name = codecs.lookup(label).name
                return DecodedText(data.decode(name), name)
            except (LookupError, UnicodeDecodeError):
                pass  # a wrong or unknown declaration: detect instead
    return decode_file(data, id, encoding, logger)


def _warn_if_truncated(text: str, id: str) -> None:
    """One warning when a tag whose end tag is never left out has more starts than ends."""
    source = _NOISE.sub("", text)
    for tag in _MUST_CLOSE:
        opened = len(re.findall(rf"<{tag}(?=[\s>/])", source, re.IGNORECASE))
        closed = len(re.findall(rf"</{tag}\s*>", source, re.IGNORECASE))
        if opened > closed:
            logger.warning("%s: HTML is not well-formed (unclosed <%s>); parsed leniently", id, tag)
            return


def _past_the_end_kept(text: str) -> str:
    """``text`` without its ``</body>`` and ``</html>`` tags when something other than blanks and
    comments follows the first of them (a footer pasted after the page, two pages concatenated): the
    parser keeps it in the body then, as a browser shows it, instead of dropping it."""
    end = _PAGE_END.search(text)
    if end is None or not _PAGE_END.sub("", _NOISE.sub("", text[end.end() :])).strip():
        return text
    return _PAGE_END.sub("", text)


# libxml2 stops building the tree at 256 levels (2,048 with its "huge" option) and, in recovery mode,
# drops what lies deeper without a word; the renderer recurses per level. Deeper pages are flattened:
# the text is kept, the nesting beyond these depths is not.
_PARSE_DEPTH = 1_000
_RENDER_DEPTH = 150
_WRAPPER_DEPTH = 100  # below this depth generic wrappers go first, so headings and paragraphs survive
_WRAPPERS = frozenset(
    [
        "div",
        "span",
        "section",
        "article",
        "main",
        "font",
        "center",
        "small",
        "big",
        "b",
        "i",
        "u",
        "em",
        "strong",
    ]
)
# Comments and script/style blocks whole (as `_NOISE`), else one tag: (2) "/" of an end tag, (3) its name,
# (4) "/" of a self-closed tag.
_TAG = re.compile(_NOISE.pattern + r"|<(/?)([A-Za-z][A-Za-z0-9:-]*)\b[^>]*?(/?)>", _NOISE.flags)
_VOID = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    ]
)  # elements without an end tag
_LOST_SHARE = 0.1  # warn when the text keeps less than this share of the page's visible characters


def _parse(text: str, id: str) -> Any:
    """The page's element tree, however deeply it nests (deeper levels are flattened, text kept)."""
    import lxml.etree
    import lxml.html

    def parse(source: str) -> tuple[Any, bool]:
        parser = lxml.html.HTMLParser(huge_tree=True)
        try:
            tree = lxml.html.document_fromstring(source, parser=parser)
        except (lxml.etree.ParserError, ValueError) as exc:
            raise LoadError(id, f"not parseable as HTML ({_one_line(exc)})") from None
        too_deep = any("Excessive depth" in e.message for e in parser.error_log)
        return tree, too_deep

    tree, too_deep = parse(text)
    if too_deep:
        logger.warning(
            "%s: HTML nests deeper than %d levels; the deeper levels are flattened (their text is kept)",
            id,
            _PARSE_DEPTH,
        )
        tree, too_deep = parse(_flatten_markup(text, _PARSE_DEPTH))
        if too_deep:  # pragma: no cover - the flattened markup nests at most _PARSE_DEPTH levels
            raise LoadError(id, f"HTML nests too deeply to read (more than {_PARSE_DEPTH} levels)")
    return tree


def _flatten_markup(text: str, limit: int) -> str:
    """The markup with the start and end tags of elements nested deeper than ``limit`` left out.

    A linear scan with a stack of open elements: an end tag closes the nearest open element of its
    name (tag soup is tolerated); scripts, styles and comments pass through whole.
    """
    out: list[str] = []
    stack: list[tuple[str, bool]] = []  # (tag, kept)
    kept_depth = 0
    last = 0
    for m in _TAG.finditer(text):
        closing, name = m.group(2), (m.group(3) or "").lower()
        if not name or name in _VOID or m.group(4):
            continue  # comment, script/style block, void or self-closed element: kept as it is
        keep = True
        if not closing:
            keep = _keeps(kept_depth + 1, name, limit)
            kept_depth += keep
            stack.append((name, keep))
        else:
            for depth in range(len(stack) - 1, -1, -1):
                if stack[depth][0] == name:
                    keep = stack[depth][1]
                    kept_depth -= sum(kept for _, kept in stack[depth:])
                    del stack[depth:]
                    break
        if not keep:
            out.append(text[last : m.start()])
            last = m.end()
    out.append(text[last:])
    return "".join(out)


def _keeps(depth: int, tag: str, limit: int) -> bool:
    """Whether an element at ``depth`` (counting kept elements) keeps its tag when flattening."""
    return depth <= limit and not (depth > _WRAPPER_DEPTH and tag in _WRAPPERS)


def _flatten_deep(tree: Any, limit: int) -> None:
    """Unwrap every element nested deeper than ``limit`` (its text and children move up a level)."""
    import lxml.etree

    deep = []
    kept: list[bool] = []
    depth = 0  # of the elements kept above
    for event, el in lxml.etree.iterwalk(tree, events=("start", "end")):
        if event == "start":
            keep = not isinstance(el.tag, str) or _keeps(depth + 1, el.tag.lower(), limit)
            if not keep:
                deep.append(el)
            kept.append(keep)
            depth += keep
        else:
            depth -= kept.pop()
    for el in deep:  # outermost first: each unwrap moves a child up into the next place to unwrap
        if el.getparent() is not None:
            el.drop_tag()


def _visible_chars(html: str) -> int:
    """Non-space characters a browser would show, roughly: tags, scripts, styles and comments removed."""
    import html as html_module

    body = _TAG.sub(" ", html)
    return sum(1 for ch in html_module.unescape(body) if not ch.isspace())


def _warn_if_lost(html: str, markdown: str, id: str) -> None:
    """One warning when the text keeps almost nothing of a page that shows text (never silent loss)."""
    kept = len(markdown) - sum(1 for ch in markdown if ch.isspace())
    if kept == 0 or kept >= len(html) * _LOST_SHARE:
        return  # nothing at all is `load_bytes`'s warning; a share of the whole markup needs no count
    visible = _visible_chars(html)
    if visible >= 20 and kept < visible * _LOST_SHARE:
        logger.warning(
            "%s: the text keeps %d of about %d visible characters of the page (navigation, forms and "
            "asides are left out on purpose; check the page if this is unexpected)",
            id,
            kept,
            visible,
        )


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _drop(el: Any) -> None:
    """Remove an element or comment but keep the text that follows it."""
    parent = el.getparent()
    if parent is None:
        return
    tail = el.tail or ""
    prev = el.getprevious()
    if tail:
        if prev is not None:
            prev.tail = (prev.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(el)


# Tags dropped as page furniture unless they sit inside the content (an article's own header with its
# title and date, a section's footer, a note beside the text in the main part)
_CONTENT_PARTS = frozenset(("header", "footer", "aside"))
_CONTENT = frozenset(("article", "main", "section"))
# the articles are the page's content when they hold at least this share of its text (else they are
# comments or teasers beside it)
_ARTICLES_SHARE = 0.5


# ARIA landmark roles of page furniture: what ``<nav>``, ``<header>``, ``<footer>`` and ``<aside>`` are, on
# the ``<div>``s of pages that do not use those tags (a site menu, a footer with the address and copyright)
_FURNITURE_ROLES = {
    "navigation": "nav",
    "banner": "header",
    "contentinfo": "footer",
    "complementary": "aside",
}


def _furniture_role(el: Any) -> bool:
    """Whether ``el`` is page furniture by its ``role`` (`_FURNITURE_ROLES`, or ``search``)."""
    role = str(el.get("role") or "").strip().lower()
    return role in _FURNITURE_ROLES or role == "search"


def _in_content(el: Any) -> bool:
    """Whether a ``<header>``, ``<footer>`` or ``<aside>`` (or an element with the role of one) is part of
    the content: inside an ``<article>``, ``<main>`` or ``<section>``."""
    role = str(el.get("role") or "").strip().lower()
    part = _FURNITURE_ROLES.get(role, _tag(el))
    return part in _CONTENT_PARTS and any(_tag(a) in _CONTENT for a in el.iterancestors())


def _content_roots(tree: Any) -> list[Any]:
    """What is rendered: the ``<main>``; else the page's top-level ``<article>``s, every one of them, in
    order, when they hold most of its text (a blog's or a news page's list of articles); else the body."""
    main = _first(tree, "main")
    if main is not None:
        return [main]
    body = _first(tree, "body")
    whole = body if body is not None else tree
    articles = [a for a in tree.iter("article") if not any(_tag(p) == "article" for p in a.iterancestors())]
    if articles:
        held = sum(len(_squash(a.text_content() or "")) for a in articles)
        if held >= _ARTICLES_SHARE * len(_squash(whole.text_content() or "")):
            return articles
    return [whole]


def _first(tree: Any, tag: str) -> Any:
    for el in tree.iter(tag):
        return el
    return None


def _title(tree: Any) -> str:
    el = _first(tree, "title")
    if el is not None:
        return _squash(el.text_content() or "")
    return ""


# --- rendering -----------------------------------------------------------------------------------------


def _tag(el: Any) -> str:
    return el.tag.lower() if isinstance(el.tag, str) else ""


def _collapse(raw: str) -> list[str]:
    """HTML whitespace rules on inline text; returns the lines (split at <br>), stripped."""
    raw = raw.replace("\xa0", " ")
    raw = _CJK_BREAK.sub("", raw)
    lines = [_WS.sub(" ", part).strip() for part in raw.split(_BR)]
    out: list[str] = []
    for line in lines:  # runs of <br> make at most one blank line
        if line or (out and out[-1]):
            out.append(line)
    while out and not out[-1]:
        out.pop()
    return out


def _squash(text: str) -> str:
    """Whitespace runs (HTML's: ASCII only, so U+3000 stays) to one space, ends stripped."""
    return _WS.sub(" ", text).strip(" \t\n\r\f")


def _code_span(text: str) -> str:
    text = _squash(text)
    if not text:
        return ""
    longest = max((len(m.group()) for m in _BACKTICKS.finditer(text)), default=0)
    tick = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{tick}{pad}{text}{pad}{tick}"


def _inline_into(el: Any, buf: list[str], blocks: bool = False) -> None:
    """Append the inline text of ``el`` (not its tail) to ``buf``; with ``blocks``, its block-level
    descendants (a cell's ``<p>``, ``<li>``, ``<div>``, a nested table's cells) each on a line of their
    own, as a browser shows them, instead of glued (``applepear``)."""
    tag = _tag(el)
    if tag == "br":
        buf.append(_BR)
        return
    if tag == "img":
        alt = (el.get("alt") or "").strip()
        if alt:  # a box of its own on the page: not glued to the words around it (``iconto``)
            buf.append(f" {alt} ")
        return
    if tag in _CODE_INLINE:
        buf.append(_code_span(el.text_content() or ""))
        return
    if el.text:
        buf.append(el.text)
    for child in el:
        if isinstance(child.tag, str):
            block = blocks and _tag(child) in _BLOCK
            if block:
                buf.append(_BR)
            _inline_into(child, buf, blocks)
            if block:
                buf.append(_BR)
        if child.tail:
            buf.append(child.tail)


def _inline_text(el: Any, blocks: bool = False) -> str:
    buf: list[str] = []
    _inline_into(el, buf, blocks)
    return "\n".join(_collapse("".join(buf)))


def _has_block(el: Any) -> bool:
    return any(_tag(d) in _BLOCK for d in el.iterdescendants())


def _pre_text(el: Any) -> str:
    parts: list[str] = []

    def walk(node: Any) -> None:
        if _tag(node) == "br":
            parts.append("\n")
        elif node.text:
            parts.append(node.text)
        for child in node:
            if isinstance(child.tag, str):
                walk(child)
            if child.tail:
                parts.append(child.tail)

    walk(el)
    text = "".join(parts).replace("\xa0", " ")
    if text.startswith("\n"):
        text = text[1:]
    return "\n".join(line.rstrip() for line in text.rstrip().split("\n"))


def _pre_language(el: Any) -> str:
    candidates = [c for c in el if _tag(c) == "code"] + [el]
    for c in candidates:
        m = _LANG_CLASS.search(c.get("class") or "")
        if m:
            return m.group(1)
    return ""


class _Renderer:
    """Turns an element tree into Markdown blocks; counts tables for their labels."""

    def __init__(self) -> None:
        self.tables = 0

    def blocks(self, el: Any) -> list[Block]:
        out: list[Block] = []
        buf: list[str] = []
        self._walk(el, out, buf)
        self._flush(buf, out)
        return out

    def _flush(self, buf: list[str], out: list[Block]) -> None:
        if buf:
            lines = _collapse("".join(buf))
            buf.clear()
            if lines:
                out.append(("\n".join(escape_line(line) for line in lines), []))

    def _walk(self, el: Any, out: list[Block], buf: list[str]) -> None:
        """Mixed content: inline runs become paragraphs, block children render in place."""
        if el.text:
            buf.append(el.text)
        for child in el:
            tag = _tag(child)
            if not tag:
                pass
            elif tag in _BLOCK:
                self._flush(buf, out)
                out.extend(self._block(child))
            elif _has_block(child):  # an inline element wrapping blocks: see through it
                self._walk(child, out, buf)
            else:
                _inline_into(child, buf)
            if child.tail:
                buf.append(child.tail)

    def _block(self, el: Any) -> list[Block]:
        tag = _tag(el)
        if tag in _HEADINGS:
            text = _squash(_inline_text(el))
            if not text:
                return []
            return [("#" * _HEADINGS[tag] + " " + _CLOSING_HASHES.sub(r"\1\\\2", text), [])]
        if tag in _LISTS:
            return self._list(el, ordered=tag == "ol")
        if tag == "pre":
            body = _pre_text(el)
            return [(fence(body, _pre_language(el)), [])] if body.strip() else []
        if tag == "blockquote":
            inner = self.blocks(el)
            return [_prefixed(inner, "> ", "> ")] if inner else []
        if tag == "table":
            return self._table(el)
        if tag == "dl":
            return self._definitions(el)
        if tag == "dt":
            text = _squash(_inline_text(el))
            return [(_bold(text), [])] if text else []
        if tag == "hr":
            return []
        return self.blocks(el)

    def _list(self, el: Any, ordered: bool) -> list[Block]:
        number = 1
        if ordered:
            start = (el.get("start") or "").strip()
            number = int(start) if start.isdigit() and len(start) < 10 else 1
        items: list[Block] = []
        for child in el:
            if not _tag(child):
                continue
            inner = (
                self.blocks(child) if _tag(child) == "li" or _has_block(child) else self._inline_block(child)
            )
            if not inner:
                continue
            marker = f"{number}. " if ordered else "- "
            number += 1
            items.append(_prefixed(inner, marker, " " * len(marker), tight_lists=True))
        return [_join(items, "\n")] if items else []

    def _definitions(self, el: Any) -> list[Block]:
        """A definition list as a list whose items are ``**term**: definition``: a term on its own
        paragraph was cut from its definition like a heading from its body, and a lead-in line above
        the list (``includes the following headers:``) did not reach it. A definition of several blocks
        (a paragraph and code) goes on under its term, indented; terms that share a definition are
        joined with `` / ``."""
        items: list[Block] = []
        terms: list[str] = []
        for child in _definition_children(el):
            tag = _tag(child)
            if tag == "dt":
                text = _squash(_inline_text(child))
                if text:
                    terms.append(text)
            elif tag == "dd":
                inner = self.blocks(child) if _has_block(child) else self._inline_block(child)
                items += _definition_item(terms, inner)
                terms = []
        items += _definition_item(terms, [])  # terms at the end with no definition
        return [_join(items, "\n")] if items else []

    def _inline_block(self, el: Any) -> list[Block]:
        lines = _collapse("".join(_inline_parts(el)))
        return [("\n".join(escape_line(line) for line in lines), [])] if lines else []

    def _table(self, el: Any) -> list[Block]:
        rows = _table_rows(el)
        out: list[Block] = []
        caption = _first_child(el, "caption")
        label = _squash(_inline_text(caption)) if caption is not None else ""
        if not rows:
            return out
        self.tables += 1
        if label:
            out.append((escape_line(label), []))
        md = pipe_table(rows)
        out.append((md, [(0, len(md), label or f"table {self.tables}")]))
        return out


def _inline_parts(el: Any) -> list[str]:
    buf: list[str] = []
    _inline_into(el, buf)
    return buf


def _first_child(el: Any, tag: str) -> Any:
    for child in el:
        if _tag(child) == tag:
            return child
    return None


def _table_rows(table: Any) -> list[list[str]]:
    """Cell texts row by row (thead, body, tfoot); colspan and rowspan repeat the cell's text."""
    head: list[Any] = []
    body: list[Any] = []
    foot: list[Any] = []
    for child in table:
        tag = _tag(child)
        if tag == "tr":
            body.append(child)
        elif tag in ("thead", "tbody", "tfoot"):
            rows = [r for r in child if _tag(r) == "tr"]
            {"thead": head, "tbody": body, "tfoot": foot}[tag].extend(rows)
    grid: list[list[str]] = []
    carry: dict[int, tuple[str, int]] = {}  # column -> (text, rows still covered) from a rowspan
    rows_in_order = head + body + foot
    header_rows = len(head) or next(
        (i for i, tr in enumerate(rows_in_order) if any(_tag(c) == "td" for c in tr)), len(rows_in_order)
    )
    for tr in rows_in_order:
        row: list[str] = []
        cells = [c for c in tr if _tag(c) in ("td", "th")]
        col = 0
        for cell in cells:
            while col in carry:
                row.append(_take(carry, col))
                col += 1
            text = _squash(_inline_text(cell, blocks=True))
            colspan = _span(cell.get("colspan"), 1000)
            rowspan = _span(cell.get("rowspan"), 1000)
            for _ in range(colspan):
                row.append(text)
                if rowspan > 1:
                    carry[col] = (text, rowspan - 1)
                col += 1
        while col in carry:
            row.append(_take(carry, col))
            col += 1
        if row:
            grid.append(row)
    if header_rows > 1 and len(grid) > header_rows:
        return [merged_header(grid[:header_rows]), *grid[header_rows:]]
    return grid


def merged_header(rows: list[list[str]]) -> list[str]:
    """Header rows of a table as one (a pipe table has one header row): each column's distinct texts top
    to bottom, a space apart (``期間`` over ``通常`` and ``延長``: ``期間 通常``, ``期間 延長``), so every
    row passed with the header says which column is which."""
    width = max(len(r) for r in rows)
    merged: list[str] = []
    for col in range(width):
        parts: list[str] = []
        for row in rows:
            text = row[col] if col < len(row) else ""
            if text and text not in parts:
                parts.append(text)
        merged.append(" ".join(parts))
    return merged


def _take(carry: dict[int, tuple[str, int]], col: int) -> str:
    text, left = carry[col]
    if left > 1:
        carry[col] = (text, left - 1)
    else:
        del carry[col]
    return text


def _span(value: str | None, limit: int) -> int:
    value = (value or "").strip()
    return min(int(value), limit) if value.isdigit() and int(value) > 0 else 1


# --- Markdown helpers (shared with the .docx loader) ---------------------------------------------------


def escape_line(line: str) -> str:
    """Backslash-escape a paragraph line that Markdown would read as a heading, list, quote, fence...

    >>> escape_line("# not a heading"), escape_line("1. not a list"), escape_line("plain")
    ('\\\\# not a heading', '1\\\\. not a list', 'plain')
    """
    m = _ORDERED.match(line)
    if m:
        return f"{m.group(1)}\\{line[len(m.group(1)) :]}"
    if _LEAD.match(line):
        return "\\" + line
    return line


def fence(body: str, info: str = "") -> str:
    """A fenced code block that its body cannot close early."""
    longest = max((len(m.group()) for m in _BACKTICKS.finditer(body)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{body}\n{ticks}"


def pipe_table(rows: Sequence[Sequence[str]]) -> str:
    """A GFM pipe table: the first row is the header; cells are one line with ``|`` escaped.

    >>> print(pipe_table([["a", "b|c"], ["1"]]))
    | a | b\\|c |
    | --- | --- |
    | 1 |  |
    """
    width = max(len(r) for r in rows)

    def line(cells: Sequence[str]) -> str:
        cells = [_squash(c).replace("|", "\\|") for c in cells]
        cells += [""] * (width - len(cells))
        return "| " + " | ".join(cells) + " |"

    return "\n".join([line(rows[0]), "| " + " | ".join(["---"] * width) + " |", *(line(r) for r in rows[1:])])


def join_blocks(blocks: Iterable[Block]) -> tuple[str, list[Span]]:
    """Blocks separated by one blank line, ending in one newline; table spans made absolute."""
    text, spans = _join([b for b in blocks if b[0]], "\n\n")
    return (text + "\n" if text else ""), spans


def _join(blocks: Sequence[Block], sep: str) -> Block:
    parts: list[str] = []
    spans: list[Span] = []
    pos = 0
    for i, (text, inner) in enumerate(blocks):
        if i:
            parts.append(sep)
            pos += len(sep)
        spans.extend((pos + s, pos + e, label) for s, e, label in inner)
        parts.append(text)
        pos += len(text)
    return "".join(parts), spans


def _bold(term: str) -> str:
    """A definition term as Markdown bold, its own asterisks escaped."""
    return "**" + term.replace("*", "\\*") + "**"


def _definition_children(el: Any) -> list[Any]:
    """The ``dt`` and ``dd`` of a ``dl``, also those HTML lets a ``div`` group."""
    out: list[Any] = []
    for child in el:
        tag = _tag(child)
        if tag in ("dt", "dd"):
            out.append(child)
        elif tag == "div":
            out.extend(c for c in child if _tag(c) in ("dt", "dd"))
    return out


def _definition_item(terms: list[str], definition: list[Block]) -> list[Block]:
    """One item of a definition list: ``- **term**: its first paragraph``, the rest under it."""
    head = " / ".join(_bold(t) for t in terms)
    if not head:
        return [_prefixed(definition, "- ", "  ", tight_lists=True)] if definition else []
    if definition and not _BLOCK_START.match(definition[0][0]):  # a paragraph: on the term's line
        text, spans = definition[0]
        shift = len(head) + 2
        first = (f"{head}: {text}", [(a + shift, b + shift, label) for a, b, label in spans])
        return [_prefixed([first, *definition[1:]], "- ", "  ", tight_lists=True)]
    return [_prefixed([(head, []), *definition], "- ", "  ", tight_lists=True)]


def _prefixed(blocks: list[Block], first: str, rest: str, tight_lists: bool = False) -> Block:
    """Join blocks and prefix lines (``first`` on the first line, ``rest`` after); blank lines stay bare.

    In a list item a nested list follows its text directly (a tight list); other blocks are separated
    by a blank line.
    """
    joined: list[Block] = []
    for i, block in enumerate(blocks):
        if i:
            nested_list = block[0].startswith("- ") or _ORDERED.match(block[0]) is not None
            sep = "\n" if tight_lists and nested_list else "\n\n"
            joined.append((sep, []))
        joined.append(block)
    text, spans = _join(joined, "")
    new_lines: list[str] = []
    starts: list[int] = []  # new offset of each old line's first character
    pos = 0
    for i, line in enumerate(text.split("\n")):
        prefix = (first if i == 0 else rest) if line else rest.rstrip()  # a quote's blank line: ">"
        starts.append(pos + len(prefix))
        new_lines.append(prefix + line)
        pos += len(prefix) + len(line) + 1
    old_starts = [0]
    for line in text.split("\n")[:-1]:
        old_starts.append(old_starts[-1] + len(line) + 1)

    def move(offset: int) -> int:
        lo = 0
        for i, s in enumerate(old_starts):
            if s <= offset:
                lo = i
        return starts[lo] + offset - old_starts[lo]

    return "\n".join(new_lines), [(move(s), move(e), label) for s, e, label in spans]
