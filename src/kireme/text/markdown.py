"""Markdown structure found by a real parser (markdown-it-py: CommonMark + GFM tables), with exact offsets.

Regexes get Markdown wrong where it matters for chunking: a ``#`` line inside a code fence is not a
heading, a setext heading (``Title`` over ``=====``) is, a ``---`` front-matter block is not a rule
followed by a heading. markdown-it-py reports each block's line range; lines are mapped back to offsets
in the exact text (``\\r\\n`` kept), so headings, fences and table rows line up with chunks.
"""

from __future__ import annotations

import logging
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any, cast

import regex

from kireme._native import native
from kireme.text.patterns import lazy_regex
from kireme.text.quick import holds

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.rules_block import StateBlock
    from markdown_it.rules_core import StateCore
    from markdown_it.token import Token

log = logging.getLogger(__name__)

# Formats whose loaders give Markdown text (headings, fences and tables a Markdown parser reads back).
MARKDOWN_FORMATS = frozenset({"markdown", "html", "docx", "ipynb"})


@dataclass(frozen=True)
class Heading:
    """A heading block: its span in the text (from the opening-tag lines right above it, `<DeepDive>`,
    which wrap its section, or the comment right above it, its original in a translation), its level
    (1–6) and its plain title."""

    start: int
    end: int
    level: int
    title: str


@dataclass(frozen=True)
class CodeBlock:
    """A fenced or indented code block. ``body`` is the span of the code lines between the fences."""

    start: int
    end: int
    info: str
    body: tuple[int, int]
    opening: str = ""  # the opening fence line ("```python"); "" for indented code
    closing: str = ""  # the closing fence line; "" when the fence is never closed
    closed: bool = True


@dataclass(frozen=True)
class TableRow:
    """One table row (a line of a Markdown table, a record of a CSV file) and its cell values."""

    start: int
    end: int
    cells: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    """A table: the header (span and cell names) and its body rows, all with exact offsets.

    ``dialect`` is ``"markdown"`` (pipe table), ``"csv"`` or ``"tsv"``; it decides how a transformed row
    is written back (`kireme.structure.tables`).
    """

    start: int
    end: int
    header: tuple[int, int]  # the header line(s), delimiter row included for Markdown
    columns: tuple[str, ...]
    rows: tuple[TableRow, ...]
    dialect: str = "markdown"
    name: str = ""


@dataclass(frozen=True)
class Outline:
    """What a structure-aware chunker needs to know about a document's layout."""

    headings: tuple[Heading, ...] = ()
    block_starts: tuple[int, ...] = ()  # starts of top-level blocks (paragraphs, lists, fences, tables)
    item_starts: tuple[int, ...] = ()  # starts of list items, at any depth
    code_blocks: tuple[CodeBlock, ...] = ()
    tables: tuple[Table, ...] = ()
    title: str = ""
    front_matter_end: int = 0
    # runs of lines that only open something (`<Sandpack>`, `::: tip`) outside code blocks and tables:
    # ``(start, end)``, ``end`` where what they open starts (`opener_runs`)
    openers: tuple[tuple[int, int], ...] = ()
    # runs of lines that only close something (`</Sandpack>`, a bare `:::`), the blank lines before them
    # included: ``(start, end)``, ``start`` where what they close ends, ``end`` where their last line does
    # (`closer_runs`)
    closers: tuple[tuple[int, int], ...] = ()
    # HTML comment blocks right above the next block (only blank lines between): ``(start, end)``, ``end``
    # where that block starts. Translated documentation keeps the original of each heading and paragraph
    # in a comment right above its translation (`comment_leads`)
    comments: tuple[tuple[int, int], ...] = ()
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def protected(self) -> list[tuple[int, int]]:
        """Spans no structural cut may fall inside while they fit: code blocks and tables."""
        spans = [(c.start, c.end) for c in self.code_blocks if c.closed]
        spans += [(t.start, t.end) for t in self.tables]
        return sorted(spans)

    def opened_from(self, start: int) -> int:
        """Where the run of opening-tag lines that ends at ``start`` begins; ``start`` when none ends there."""
        return _from(self.openers, start)

    def commented_from(self, start: int) -> int:
        """Where the comment block right above the block at ``start`` begins; ``start`` when none is."""
        return _from(self.comments, start)

    def closed_to(self, end: int) -> int:
        """Where the run of closing-tag lines that starts at ``end`` ends; ``end`` when none starts there."""
        i = bisect_left(self.closers, end, key=_RUN_START)
        return self.closers[i][1] if i < len(self.closers) and self.closers[i][0] == end else end


# every field of an `Outline` as its default (`paragraphs_outline`)
_OUTLINE_DEFAULTS = {f.name: f.default for f in fields(Outline)}
_RUN_START = itemgetter(0)
_RUN_END = itemgetter(1)


def _from(runs: Sequence[tuple[int, int]], start: int) -> int:
    """Where the run of ``runs`` (sorted) that ends at ``start`` begins; ``start`` when none ends there."""
    i = bisect_left(runs, start, key=_RUN_END)
    return runs[i][0] if i < len(runs) and runs[i][1] == start else start


_NEWLINE = re.compile("\n")
_END = cast(Callable[["re.Match[str]"], int], re.Match.end)


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    """CommonMark + GFM tables, blocks only: the inline content of the few blocks whose text is read
    (heading titles, table cells) is parsed on demand (`_inline`); the rest never is. Block rules that
    can only match at one of a few characters are asked only on lines that start with one
    (`_FIRST_CHARS`)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])
    try:
        ruler = md.block.ruler
        for rule in list(ruler.__rules__):
            if rule.name in _FIRST_CHARS:
                guard = _first_char_guard(rule.fn, _FIRST_CHARS[rule.name])
                ruler.at(rule.name, guard, {"alt": list(rule.alt)})
            elif rule.name == "code":
                ruler.at(rule.name, _indent_guard(rule.fn), {"alt": list(rule.alt)})
        for core_rule in list(md.core.ruler.__rules__):
            if core_rule.name == "normalize":
                md.core.ruler.at(core_rule.name, _normalize_guard(core_rule.fn))
    except (AttributeError, KeyError, TypeError):  # another markdown-it-py: its own rules, unguarded
        log.debug("markdown-it-py's block rules are not as expected; parsing without guards")
        md = MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])
    return md


# The characters a block rule's line must start with (after its indentation; the ASCII digits of an
# ordered list marker): each of these markdown-it-py rules returns False, having changed nothing, on
# any other line. Every paragraph line is asked whether one of them interrupts it; a guard answers
# that without entering the rule (its debug logging, its checks): a fifth to a third of the parse.
_FIRST_CHARS: dict[str, frozenset[str]] = {
    "fence": frozenset("`~"),
    "blockquote": frozenset(">"),
    "hr": frozenset("*-_"),
    "list": frozenset("*-+0123456789"),
    "reference": frozenset("["),
    "html_block": frozenset("<"),
    "heading": frozenset("#"),
}

_BlockRule = Callable[["StateBlock", int, int, bool], bool]


def _first_char_guard(rule: _BlockRule, first: frozenset[str]) -> _BlockRule:
    """``rule``, answered False without calling it on a line whose first character is not in
    ``first`` (past the end of the text the rule itself is asked, as before)."""

    def guarded(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
        pos = state.bMarks[start_line] + state.tShift[start_line]
        src = state.src
        if pos < len(src) and src[pos] not in first:
            return False
        return rule(state, start_line, end_line, silent)

    return guarded


def _normalize_guard(rule: Callable[[StateCore], None]) -> Callable[[StateCore], None]:
    """markdown-it's ``normalize`` core rule (``\r\n`` and ``\r`` to ``\n``, NUL to U+FFFD), asked only
    of a text holding a ``\r`` or a NUL: on any other it writes the text again as it was, with a regex
    replacement at every line feed (3% of `markdown` on English papers)."""

    def guarded(state: StateCore) -> None:
        if "\r" in state.src or "\0" in state.src:
            rule(state)

    return guarded


def _indent_guard(rule: _BlockRule) -> _BlockRule:
    """The indented-code ``rule``, answered False without calling it on a line indented less than
    four columns past the block's indentation (where its own `StateBlock.is_code_block` is False)."""

    def guarded(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
        if state.sCount[start_line] - state.blkIndent < 4:
            return False
        return rule(state, start_line, end_line, silent)

    return guarded


def _line_starts_python(text: str) -> list[int]:
    """Offset of the first character of every line (``\\n``-terminated; ``\\r\\n`` counts as one): the
    reference for the C loop (`kireme._speedups.line_starts`)."""
    return [0, *map(_END, _NEWLINE.finditer(text))]


# `line_starts(text)`: every line's start, in one C call where the extension is built (the outline and the
# code-line level ask it of every Markdown text; a match object per line was a twentieth of `markdown`)
line_starts: Callable[[str], list[int]] = native("line_starts") or _line_starts_python


_FRONT_MATTER = lazy_regex(
    r"\A(?:\ufeff)?---[ \t]*\r?\n(.*?)(?:\r?\n)(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", regex.S
)
_TITLE_LINE = lazy_regex(r"^title[ \t]*:[ \t]*(.+?)[ \t]*$", regex.M)


def front_matter(text: str) -> tuple[int, str]:
    """End offset of a leading YAML front-matter block (0 when there is none) and its ``title:``."""
    m = _FRONT_MATTER.match(text)
    if not m:
        return 0, ""
    t = _TITLE_LINE.search(m.group(1))
    title = t.group(1).strip().strip("\"'") if t else ""
    return m.end(), title


def _parse(text: str, fm_end: int) -> tuple[list[Token], dict[str, Any]]:
    """Block tokens of ``text`` with the front matter blanked out (same line numbers, nothing parsed
    there), and the parse's environment (link reference definitions, which inline content reads)."""
    if fm_end:
        head = regex.sub(r"[^\r\n]", "", text[:fm_end])
        text = head + text[fm_end:]
    env: dict[str, Any] = {}
    return _parser().parse(text, env), env


def _inline(inline: Token, env: dict[str, Any]) -> list[Token]:
    """The children of an ``inline`` token, as a full parse gives them (its core ``inline`` rule)."""
    return _inline_children(inline.content, env)


def _inline_children(content: str, env: dict[str, Any]) -> list[Token]:
    """`_inline` of inline content."""
    md = _parser()
    children: list[Token] = []
    md.inline.parse(content, md, env, children)
    return children


# The characters at which an inline rule of the parser's CommonMark preset can start anything but plain
# text: a line break, an escape, a code span, emphasis, a link or image, an autolink or inline HTML, an
# entity (``]`` too, though only after ``[``). The ``text`` rule stops at more (``{``, ``:``, ``#``…: its
# terminators serve rules the preset leaves off, such as linkify and the typographer), but those are read
# back as text. Inline content with none of them is its own visible text.
_INLINE_SYNTAX = re.compile(r"[\n!&*<\[\\\]_`]")


# A code span: a backtick run, the shortest text up to a run of the same length (markdown-it's backtick rule)
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.*?)(?<!`)\1(?!`)", re.S)


def _inline_text(inline: Token) -> str | None:
    """The visible text of an inline token whose content has no inline syntax but code spans (a heading
    such as ``## `Result` で回復可能なエラー``), without parsing it (``None``: it has other syntax;
    `_inline` and `_plain` read it). Equal to the parse's by a property test."""
    return _visible_text(inline.content)


def _visible_text(content: str) -> str | None:
    """`_inline_text` of inline content."""
    if _INLINE_SYNTAX.search(content) is None:
        return content.strip()
    if "`" not in content:
        return _starred_text(content)
    outside: list[str] = []
    parts: list[str] = []
    last = 0
    for span in _CODE_SPAN.finditer(content):
        outside.append(content[last : span.start()])
        code = span.group(2).replace("\n", " ")
        if code.startswith(" ") and code.endswith(" ") and code.strip(" "):
            code = code[1:-1]  # one space off each side, unless all spaces
        parts += (outside[-1], code)
        last = span.end()
    outside.append(content[last:])
    parts.append(outside[-1])
    if _INLINE_SYNTAX.search("".join(outside).replace("`", "")) is not None:
        return None  # an unmatched backtick run is text; anything else needs the parser
    return "".join(parts).strip() or content.strip()


def _starred_text(content: str) -> str | None:
    """`_visible_text` of content whose only inline syntax is two single ``*`` — the React docs' heading
    ids, ``## 次のステップ {/*whats-next*/}``, nine in ten of the titles the parser read on the Japanese
    docs benchmarked: emphasis when the first can open it and the second close it (markdown-it's
    ``scanDelims`` for ``*``, with its own character classes), else two literal stars. ``None`` for any
    other content. Equal to the parse's by a property test."""
    if content.count("*") != 2 or _INLINE_SYNTAX.search(content.replace("*", "")) is not None:
        return None
    first = content.find("*")
    second = content.find("*", first + 1)
    if second == first + 1:  # a run of two
        return None
    if _flanks(content, first)[0] and _flanks(content, second)[1]:
        text = content[:first] + content[first + 1 : second] + content[second + 1 :]
    else:
        text = content
    return text.strip() or content.strip()


def _flanks(content: str, pos: int) -> tuple[bool, bool]:
    """Whether the single ``*`` at ``pos`` is left-flanking (may open emphasis) and right-flanking (may
    close it), as markdown-it's ``StateInline.scanDelims`` decides for ``*`` (words may be split)."""
    from markdown_it.common.utils import isMdAsciiPunct, isPunctChar, isWhiteSpace

    last = content[pos - 1] if pos > 0 else " "  # the start and end of the content count as spaces
    after = content[pos + 1] if pos + 1 < len(content) else " "
    last_punct = isMdAsciiPunct(ord(last)) or isPunctChar(last)
    next_punct = isMdAsciiPunct(ord(after)) or isPunctChar(after)
    last_space = isWhiteSpace(ord(last))
    next_space = isWhiteSpace(ord(after))
    left = not (next_space or (next_punct and not (last_space or last_punct)))
    right = not (last_space or (last_punct and not (next_space or next_punct)))
    return left, right


def _line_span(text: str, lines: list[int], first: int, last: int) -> tuple[int, int]:
    """Character span of lines ``[first, last)`` without the final line break."""
    start = lines[first] if first < len(lines) else len(text)
    end = lines[last] if last < len(lines) else len(text)
    while end > start and text[end - 1] in "\r\n":
        end -= 1
    return start, end


# Inline tokens whose content is visible text (``text_special``: an escaped character, which a full parse's
# ``text_join`` rule turns into ``text``).
_TEXT_TOKENS = frozenset({"text", "text_special", "code_inline"})


def _plain(inline: Token, children: Sequence[Token]) -> str:
    """The visible text of an inline token (emphasis, code and links reduced to their text), from its
    ``children`` (`_inline`)."""
    return _plain_text(inline.content, children)


def _plain_text(content: str, children: Sequence[Token]) -> str:
    """`_plain` of inline content."""
    parts = [child.content for child in children if child.type in _TEXT_TOKENS]
    return "".join(parts).strip() or content.strip()


def markdown_outline(text: str, source: str | Callable[[], str] = "", *, warn: bool = True) -> Outline:
    """Headings, blocks, list items, code blocks and tables of a Markdown text.

    An unclosed code fence runs to the end of the file in CommonMark; it is reported (``warnings`` and,
    with ``warn``, the log, naming ``source`` and the line) and not treated as protected code, so it
    cannot silently swallow the rest of the document into one unsplittable block. ``source`` may be a
    function giving the name, asked only when there is something to report (a document's id may have to
    be hashed first).
    """
    outline = _outline(text)
    unclosed = [block for block in outline.code_blocks if not block.closed]
    if not unclosed:
        return outline
    name = (source() if callable(source) else source) or "document"
    warnings = tuple(
        f"{name}: code fence opened at line {text.count(chr(10), 0, block.start) + 1} is never closed"
        for block in unclosed
    )
    if warn:
        for message in warnings:
            log.warning("%s; it is chunked as ordinary text", message)
    return replace(outline, warnings=warnings)


# A line that could begin a block other than a paragraph (CommonMark + GFM tables), or be read as one's
# underline: indented content (indented code, lazy or nested lines), ATX headings, block quotes, list
# bullets, thematic breaks, setext underlines, fences, HTML blocks, link reference definitions, table
# delimiter rows (their first character is ``|``, ``-`` or ``:``) and ordered list markers.
# (One pattern opening with ``^`` under ``re.M`` is tried at every position of the text: it was a third of
# `markdown` on a plain article. The first line is matched, every other one searched for from its line feed,
# a literal the engine finds at C speed.)
_BLOCK_SYNTAX_LINE = r"(?:[ \t]+[^ \t\r\n]|[#>*+\-_=`~<\[|:]|[0-9]+[.)])"
_BLOCK_SYNTAX_FIRST = re.compile(_BLOCK_SYNTAX_LINE)
_BLOCK_SYNTAX_NEXT = re.compile("\n" + _BLOCK_SYNTAX_LINE)
# markdown-it reads a ``\r`` that is not part of ``\r\n`` as a line break; `line_starts` does not
_LONE_CR = re.compile(r"\r(?!\n)")
# The first line of each paragraph: a line with content after the text's start (`_FIRST_PARAGRAPH`, matched)
# or after a blank line (`_NEXT_PARAGRAPH`, searched from the line feed; blank: only spaces and tabs, which is
# what markdown-it calls empty); the match ends where the line starts.
_FIRST_PARAGRAPH = re.compile(r"(?:[ \t]*\r?\n)*(?=[^ \t\r\n])")
_NEXT_PARAGRAPH = re.compile(r"\n[ \t]*\r?\n(?:[ \t]*\r?\n)*(?=[^ \t\r\n])")


def has_block_syntax(text: str) -> bool:
    """Whether some line of ``text`` could begin a block other than a paragraph (`_BLOCK_SYNTAX_LINE`)."""
    return _BLOCK_SYNTAX_FIRST.match(text) is not None or _BLOCK_SYNTAX_NEXT.search(text) is not None


def paragraph_starts(text: str) -> list[int]:
    """Where each paragraph of a text with no block syntax starts: its first line with content, at the
    text's start or after a blank line."""
    first = _FIRST_PARAGRAPH.match(text)
    starts = [] if first is None else [first.end()]
    starts += map(_END, _NEXT_PARAGRAPH.finditer(text, starts[0] if starts else 0))
    return starts


_BLANK = re.compile(r"[ \t]*\r?")


def paragraph_above(text: str, start: int, floor: int = 0) -> int | None:
    """Where the run of non-blank lines right above the line at ``start`` (blank lines between or not)
    starts, not above ``floor`` (a line's start: where a block may start at the earliest, the line after a
    table); ``None`` with nothing but blank lines between. The paragraph `paragraph_starts` gives there on
    a text whose lines start flush left, found without reading the rest of the text."""
    pos = start
    while pos > floor:  # past the blank lines above
        above = text.rfind("\n", 0, pos - 1) + 1
        if _BLANK.fullmatch(text, above, pos - 1) is None:
            break
        pos = above
    if pos <= floor:
        return None
    while pos > floor:  # up to the run's first line
        above = text.rfind("\n", 0, pos - 1) + 1
        if _BLANK.fullmatch(text, above, pos - 1) is not None:
            break
        pos = above
    return pos


# a line that ends a sentence or announces what follows (white space after the mark aside), up to a line break
_SENTENCE_END_BEFORE = re.compile(r"[。．.!?！？:：][ \t\r\u3000]*\n\Z")


def plain_text_blocks(text: str, tables: Sequence[Table]) -> tuple[int, ...]:
    """The blocks around a plain text's ``tables`` (`kireme.text.csvtable.text_tables`) that a lead-in may end
    (`lead_ins`), by their starts: each table, the paragraph right above it (below the table before) and
    that paragraph's last line when the line before it ends a sentence — so that a line introducing a table
    (``…次の表のとおりとする：``) is a block of its own: in a plain text a paragraph is often a page of lines
    with no blank line between, and the line right above a table is what introduces it (a line that goes on
    from the one before, in a hard-wrapped text, is not cut from it). Not an outline's blocks: nothing else
    of a plain text is read as Markdown, and its levels stay the strategies' own."""
    starts: set[int] = set()
    floor = 0  # where the paragraph above a table may start at the earliest: after the table before
    for table in tables:
        starts.add(table.start)
        above = paragraph_above(text, table.start, floor)
        if above is not None:
            end = table.start  # the end of the paragraph's last line: back over the blank lines between
            while end > above and text[end - 1].isspace():
                end -= 1
            starts.add(above)
            line = text.rfind("\n", above, end) + 1
            if line > above and _SENTENCE_END_BEFORE.search(text, above, line) is not None:
                starts.add(line)
        floor = text.find("\n", table.end) + 1 or len(text)
    return tuple(sorted(starts))


def plain_text_lead_outline(text: str, tables: Sequence[Table]) -> Outline:
    """The outline `lead_ins` reads a plain text's lead-ins from: its ``tables`` and the blocks around them
    (`plain_text_blocks`)."""
    return replace(paragraphs_outline(plain_text_blocks(text, tables)), tables=tuple(tables))


def _plain_outline(text: str) -> Outline | None:
    """The outline of a text with no Markdown block syntax at all, without parsing it; ``None`` when
    some line could start another block (or the text has front matter or a lone ``\\r``).

    Every line of such a text is flush left or blank and starts with no block marker, so markdown-it
    sees nothing but paragraphs, one per run of non-blank lines: the outline is their starts and nothing
    else. Proved equal to the parser's outline (`_parsed_outline`) by a property test.
    """
    starts = _plain_paragraph_starts(text)
    return None if starts is None else paragraphs_outline(tuple(starts))


def paragraphs_outline(block_starts: tuple[int, ...]) -> Outline:
    """``Outline(block_starts=block_starts)``, made without the frozen dataclass's ``__init__`` (one call
    per field: a tenth of what `markdown` costs a 20-character string); equal to it field for field."""
    outline = object.__new__(Outline)
    outline.__dict__.update(_OUTLINE_DEFAULTS, block_starts=block_starts)
    return outline


def _plain_paragraph_starts_python(text: str) -> list[int] | None:
    """The paragraph starts of a text with no block syntax and no lone ``\\r``, else ``None``: the
    reference of `kireme._speedups.plain_paragraph_starts` (one pass over the lines, where the two patterns
    search the text at about a nanosecond a character)."""
    if has_block_syntax(text) or ("\r" in text and _LONE_CR.search(text) is not None):
        return None
    return paragraph_starts(text)


_plain_paragraph_starts: Callable[[str], list[int] | None] = (
    native("plain_paragraph_starts") or _plain_paragraph_starts_python
)


@lru_cache(maxsize=8)
def _outline(text: str) -> Outline:
    """The outline, kept for the last few texts: a strategy's levels, the heading paths of its chunks
    and their context all ask for the same document's outline. A text without block syntax is not
    parsed (`_plain_outline`); in any other, markdown-it reads only what the scanner does not
    (`_scanned_outline`)."""
    fm_end, fm_title = front_matter(text)
    if not fm_end:
        plain = _plain_outline(text)
        if plain is not None:
            return plain
    scanned = _scanned_outline(text, fm_end, fm_title)
    outline = scanned if scanned is not None else _parsed_outline(text, fm_end, fm_title)
    return _with_wrappers(text, outline)


# Lines that only open something (MDX/JSX components and HTML containers: `<Sandpack>`, `<Note type="x">`,
# `<details>`; container directives: `::: tip`, `:::note`; a comment's `<!--`), with the blank lines after
# them: what follows is their content, so a chunk should not end with them. Not a self-closing tag
# (`<Img />`), a closing one, a tag with text after it on the line (`<summary>…</summary>`) or a bare `:::`
# (which closes).
_OPENER_RUN = re.compile(
    r"(?:[ \t]*(?:<(?!(?:br|hr|img|input|meta|link|source|wbr)\b)[A-Za-z][\w.:-]*(?:\s[^<>\n]*)?(?<!/)>"
    r"|:{3,}[ \t]*[A-Za-z][^\n]*|<!--)[ \t]*\r?\n(?:[ \t]*\r?\n)*)+",
    re.I,
)
# where a run may start: a line opening with a tag, three colons or `<!--` (a literal first: searched at C
# speed)
_OPENER_HINT = re.compile(r"\n[ \t]*(?:<[A-Za-z]|:::|<!--)")


def has_opening_lines(text: str) -> bool:
    """Whether some line of ``text`` may be an opening-tag line (`opener_runs`): a quick test, at C speed
    (the extension's pass over the line feeds, where it is built: a tenth of the pattern's search)."""
    if _OPENER_RUN.match(text) is not None:
        return True
    if _NATIVE_LINE_MARKS is not None:
        return bool(_NATIVE_LINE_MARKS(text, 0, len(text), False))
    return _OPENER_HINT.search(text) is not None


def _between(spans: Sequence[tuple[int, int]], a: int, b: int) -> list[tuple[int, int]]:
    """The parts of ``[a, b)`` outside ``spans`` (sorted by start; they may nest or overlap)."""
    gaps: list[tuple[int, int]] = []
    pos = a
    for start, end in spans:
        if start > pos:
            gaps.append((pos, min(start, b)))
        pos = max(pos, end)
        if pos >= b:
            break
    if pos < b:
        gaps.append((pos, b))
    return gaps


def opener_runs(
    text: str, a: int = 0, b: int | None = None, outside: Sequence[tuple[int, int]] = ()
) -> list[tuple[int, int]]:
    """``(start, end)`` of each run of opening-tag lines in ``text[a:b]`` (see `_OPENER_RUN`); ``end`` is
    where the content they open starts. ``outside``: sorted spans (code blocks) whose lines open nothing."""
    b = len(text) if b is None else b
    runs: list[tuple[int, int]] = []
    match = _OPENER_RUN.match
    marks = _NATIVE_LINE_MARKS or _line_marks_python
    for lo, hi in _between(outside, a, b):
        if lo >= hi or (text.find("<", lo, hi) < 0 and text.find(":::", lo, hi) < 0):
            continue
        starts = [lo] if lo == 0 or text[lo - 1] == "\n" else []
        starts += marks(text, lo - 1 if lo else 0, hi, False)
        for start in starts:
            if runs and start < runs[-1][1]:
                continue  # a line of the run before
            run = match(text, start, hi)
            if run is not None:
                runs.append(run.span())
    return runs


# A line that only closes something: a closing tag alone on it (`</Sandpack>`, `</details>`), a bare `:::`
# (which ends a container directive) or a comment's `-->`; from the line feed before it (searched for at C
# speed)
_CLOSER_LINE = re.compile(r"\n[ \t]*(?:</[A-Za-z][\w.:-]*[ \t]*>|:{3,}|-->)[ \t]*(?=\r?\n|\Z)")


def closer_runs(text: str, outside: Sequence[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """``(start, end)`` of each run of closing-tag lines in ``text`` (see `_CLOSER_LINE`) and the blank
    lines before them: ``start`` where the text they close ends (its last non-space character), ``end``
    where the run's last line ends. ``outside``: sorted spans (code blocks, tables) whose lines close
    nothing."""
    if _NATIVE_LINE_MARKS is None and not _may_close(text):
        return []  # (the extension's pass over the line feeds costs less than these searches)
    runs: list[tuple[int, int]] = []
    marks = _NATIVE_LINE_MARKS or _line_marks_python
    for lo, hi in _between(outside, 0, len(text)):
        found = marks(text, max(lo - 1, 0), hi, True)  # from the line feed before the gap's first line
        for i in range(0, len(found), 2):
            start, line_end = found[i], found[i + 1]
            while start > 0 and text[start - 1].isspace():
                start -= 1
            if start == 0:
                continue  # nothing before it to close
            if runs and runs[-1][1] == start:  # `</Sandpack>` then `</Solution>`: one run
                runs[-1] = (runs[-1][0], line_end)
            else:
                runs.append((start, line_end))
    return runs


def _may_close(text: str) -> bool:
    """Whether ``text`` holds a mark a closing line starts with (`_CLOSER_LINE`)."""
    return holds(text, "</") or ":::" in text or holds(text, "-->", ">")


def _line_marks_python(text: str, lo: int, hi: int, closers: bool) -> list[int]:
    """The reference of `kireme._speedups.line_marks`: with ``closers`` the start and end (flat) of each
    `_CLOSER_LINE` match in ``[lo, hi)``, else the start of each line `_OPENER_HINT` finds there."""
    if not closers:
        return [m.start() + 1 for m in _OPENER_HINT.finditer(text, lo, hi)]
    return [x for m in _CLOSER_LINE.finditer(text, lo, hi) for x in m.span()]


# the two line searches above in one C pass over the line feeds each (a regex tried at every line feed)
_NATIVE_LINE_MARKS: Callable[[str, int, int, bool], list[int]] | None = native("line_marks")


_ONLY_BLANKS = re.compile(r"[ \t\r\n]*")


def comment_blocks(text: str, outline: Outline | None = None) -> list[tuple[int, int]]:
    """``(start, end)`` of each top-level HTML comment block of a Markdown text: from its ``<!--`` (in the
    first four columns) to the end of the ``-->`` that closes it, or to the end of the text when none does.

    What a reader of the rendered page never sees: a translation's original kept above each paragraph
    (``<!-- The backup job runs every night. -->`` above ``バックアップは毎晩実行される。``: more than half of
    the Japanese Rust book), notes to the authors, linter switches. Text after ``-->`` on its line is shown on the page and stays out; a
    ``<!--`` inside a code block or a list item is not a top-level block and stays out too.
    """
    if not holds(text, "<!--"):
        return []
    if outline is None:
        outline = markdown_outline(text, warn=False)
    spans: list[tuple[int, int]] = []
    for block in outline.block_starts:
        start = block
        while start < block + 3 and text.startswith(" ", start):
            start += 1
        if not text.startswith("<!--", start) or (spans and start < spans[-1][1]):
            continue
        close = text.find("-->", start + 2)  # `<!-->` is a whole (empty) comment
        spans.append((start, len(text) if close < 0 else close + 3))
    return spans


def fenced_code(text: str, outline: Outline | None = None) -> list[tuple[int, int]]:
    """``(start, end)`` of each fenced code block of a Markdown text (indented code aside), fences included."""
    return [(block.start, block.end) for block in fenced_blocks(text, outline)]


def fenced_blocks(text: str, outline: Outline | None = None) -> list[CodeBlock]:
    """The fenced code blocks of a Markdown text (indented code aside), in order."""
    if not holds(text, "```") and not holds(text, "~~~"):
        return []
    if outline is None:
        outline = markdown_outline(text, warn=False)
    return [block for block in outline.code_blocks if block.opening]


def code_lines(text: str, start: int, end: int, starts: Sequence[int] | None = None) -> list[tuple[int, int]]:
    """``(start, end)`` of each line of ``text[start:end]`` (a code block's body, ``start`` at a line's
    start), its line break (``\n`` or ``\r\n``: a cut at a line's end goes before both) left out.
    ``starts``: `line_starts` of ``text``, when the caller has them."""
    if starts is None:
        starts = line_starts(text)
    i = bisect_left(starts, start)
    j = bisect_left(starts, end)
    following = list(starts[i + 1 : j + 1])
    if len(following) < j - i:  # the text's last line: no line feed after it
        following.append(len(text) + 1)
    lines = [(a, b - 1) for a, b in zip(starts[i:j], following, strict=True)]
    if lines and text.find("\r", start, lines[-1][1]) >= 0:
        lines = [(a, b - 1) if b > a and text[b - 1] == "\r" else (a, b) for a, b in lines]
    return lines


_FENCE_MARKS = re.compile(r"(`{3,}|~{3,})[^\n]*")  # a fence line's marker run and info string
_ITEM_MARKER = re.compile(r"(?:[-+*]|[0-9]+[.)])(?=[ \t]|$)")  # a list item's marker before a fence


def _blank(marker: re.Match[str]) -> str:
    return " " * len(marker.group())


def _closing_lead(block: CodeBlock) -> str:
    """What stands before the closing fence of a closed block (indentation, ``>`` marks)."""
    run = _FENCE_MARKS.search(block.closing)
    return block.closing[: run.start()] if run is not None else ""


def fences_around(blocks: Sequence[CodeBlock], start: int, end: int) -> tuple[str, str]:
    """The fence lines a reader needs around ``[start, end)`` of a text to read its code as code: the
    opening line (``"```rust"``) of the fenced block it starts inside, below that line, and the closing
    fence of the block it ends inside, above its closing line (or of a block never closed); ``""`` where
    none is needed. ``blocks``: the text's fenced code blocks (`fenced_blocks`). A passage cut out of a
    large code block keeps its language, and one that stops inside a block no longer turns what follows
    it in a prompt (the next passage's citation and text) into code."""
    before = after = ""
    for block in blocks[bisect_right(blocks, start, key=attrgetter("end")) :]:  # the first ending after start
        if block.start >= end:
            break
        marks = _FENCE_MARKS.search(block.opening)
        if marks is None:
            continue
        # the fences go where the block's code is: indented in a list item, behind ``>`` in a quote — as
        # its closing line is, or its opening line without a list item's marker (``- ```js``: the item
        # holds the fence, and a bare ``-`` before a fence in a prompt would start another item)
        lead = (
            _closing_lead(block) if block.closed else _ITEM_MARKER.sub(_blank, block.opening[: marks.start()])
        )
        last = block.end - len(block.closing) if block.closed else block.end  # where its closing line starts
        # a block with no closing line that the span runs past (its list item or quote ended it) would
        # stay open under a fence put above it: its lines go as they are
        if (
            block.start + len(block.opening) < start < block.end
            and not before
            and (block.closed or end <= block.end)
        ):
            before = lead + marks.group().rstrip() + "\n"
        if block.start < end <= last:
            after = "\n" + lead + marks.group(1)
    return before, after


def table_header_for(text: str, tables: Sequence[Table], start: int) -> str:
    """The header a reader needs above a passage starting at ``start`` to read its rows: the header line(s)
    of the table it starts inside, its delimiter row too (a Markdown table's; a CSV file's header record),
    followed by a line break — or the part of them before ``start`` when it starts inside them. ``""``
    for a passage that starts outside every table or at a table's first line. ``tables``: the text's
    (`Outline.tables`). A row passed without its header is a list of values a reader cannot name."""
    i = bisect_right(tables, start, key=attrgetter("start")) - 1  # the last table starting at or before
    if i < 0:
        return ""
    table = tables[i]
    head, head_end = table.header
    if head < start < table.end and head < head_end:
        return text[head:start] if start <= head_end else text[head:head_end] + "\n"
    return ""


def comment_leads(text: str, block_starts: Sequence[int]) -> list[tuple[int, int]]:
    """``(start, end)`` of each top-level HTML comment block (``<!--`` in column 0, up to the line holding
    ``-->``) followed by another block with only blank lines between: ``end`` where that block starts."""
    leads: list[tuple[int, int]] = []
    for i in range(len(block_starts) - 1):
        start, after = block_starts[i], block_starts[i + 1]
        if not text.startswith("<!--", start):
            continue
        close = text.find("-->", start + 4, after)
        if close >= 0 and _ONLY_BLANKS.fullmatch(text, _next_line(text, close), after) is not None:
            leads.append((start, after))
    return leads


def _with_wrappers(text: str, outline: Outline) -> Outline:
    """The outline with its runs of opening- and closing-tag lines and its comment blocks right above a
    block (`Outline.openers`, `Outline.closers`, `Outline.comments`), found once, and each heading starting
    at the opening-tag lines or the comment right above it (`<DeepDive>`, `::: details` above a `#### `
    heading: the tag wraps the section; `<!-- ## The Stack -->` above `## スタック`: the heading's
    original), so that the section, its chunk and its heading path start there; a heading's ``end`` and
    title stay its line's."""
    comments = tuple(comment_leads(text, outline.block_starts)) if holds(text, "<!--") else ()
    opens = has_opening_lines(text)
    spans = [(c.start, c.end) for c in outline.code_blocks] + [(t.start, t.end) for t in outline.tables]
    if outline.front_matter_end:
        spans.append((0, outline.front_matter_end))
    spans.sort()  # the lines of code blocks and tables open and close nothing
    closers = tuple(closer_runs(text, outside=spans))
    openers = tuple(opener_runs(text, outside=spans)) if opens else ()
    if not (comments or closers or openers):
        return outline
    outline = replace(outline, comments=comments, closers=closers, openers=openers)
    if not (comments or openers):
        return outline
    heads = []
    for heading in outline.headings:  # a comment, then tag lines, then a comment above them
        start = outline.commented_from(outline.opened_from(outline.commented_from(heading.start)))
        heads.append(
            heading if start == heading.start else Heading(start, heading.end, heading.level, heading.title)
        )
    return replace(outline, headings=tuple(heads))


# --- the scanned outline: simple blocks read here, the rest of the text by markdown-it in regions ---------
#
# At a line where no block is open ("top level"), the blocks most documents are made of are read without
# the parser, each opened in column 0: blank lines; an ATX heading; a fence, up to its closing line; an HTML
# comment, up to ``-->`` (translated documentation keeps its original in comments: a third of the Japanese
# docs benchmarked); an HTML block of types 6–7 (``<div>``, ``<img … />`` alone on a line), up to a blank
# line; and a paragraph whose first line can be nothing else (`_NOT_PARAGRAPH_FIRST`) and whose other lines can
# neither end it nor make it something else (`_paragraph_stop`), up to a blank line. Anything else starts a
# region that markdown-it parses on its own, up to the next blank line followed by such a block in column 0:
# there every container (list, quote), paragraph, table, indented code and HTML block of types 6–7 has
# ended, so the parse of the region is the whole parse's up to there — unless a fence or an HTML block of
# types 1–5 opened in it runs on to the region's end, which only a block left open in the whole parse does;
# then the parser takes the rest of the text. Heading titles and table cells read link reference
# definitions from anywhere in the text: when a region held one, the text is scanned again with all of
# them known. Proved equal to `_parsed_outline` by property tests over generated Markdown and on real
# documents (`benchmarks/markdown_outline.py`).

_BLANKS = re.compile(r"(?:[ \t]*\r?\n)*")
_ONLY_BLANK = re.compile(r"[ \t]*\r?\Z")
# The patterns below that look for a line start after a position start with the line feed before it (the
# match starts there, the line one after): a pattern opening with a literal is searched for that character
# at C speed, where one opening with ``^`` is tried at every position of the text.
_NEXT_BLANK = re.compile(r"\n[ \t]*\r?$", re.M)
_ATX = re.compile(r"#{1,6}(?=[ \t\r\n]|\Z)")
_FENCE_OPEN = re.compile(r"(`{3,}|~{3,})([^\r\n]*)")
_FENCE_CLOSE = re.compile(r"\n {0,3}(`{3,}|~{3,})[ \t]*\r?$", re.M)
_LINE_END = r"(?=[ \t\r\n]|\Z)"
# A blank line and a line starting in column 0 after it: where a region may end.
_REGION_END = re.compile(r"\n[ \t]*\r?\n(?=[^ \t\r\n])")
# A first line in column 0 that may start something other than a paragraph (a list item, a quote, a
# thematic break, a fence, a table; ``<`` and ``[`` are looked at apart: `_html_type`, `_scanned_block`).
_NOT_PARAGRAPH_FIRST = re.compile(
    rf"[ \t>|<\[]|#{{1,6}}{_LINE_END}|`{{3,}}|~{{3,}}|[-+*]{_LINE_END}|[0-9]+[.)]{_LINE_END}|[-*_=][-*_= \t]*\r?$",
    re.M,
)


@lru_cache(maxsize=1)
def _html_starts() -> tuple[re.Pattern[str], ...]:
    """markdown-it's start patterns of the seven HTML block types, in the order it tries them."""
    from markdown_it.rules_block.html_block import HTML_SEQUENCES

    return tuple(seq[0] for seq in HTML_SEQUENCES)


def _html_type(line: str) -> int:
    """The HTML block type (1–7) a line of column 0 starts in markdown-it, 0 for none."""
    if line.startswith("<!--"):  # a comment (type 2), the commonest; type 1 needs a letter after "<"
        return 2
    for kind, start in enumerate(_html_starts(), 1):
        if start.search(line):
            return kind
    return 0


@lru_cache(maxsize=1)
def _paragraph_stop() -> re.Pattern[str]:
    """The first line after a paragraph's first that is blank (group 1) or may not continue it: one that
    could interrupt it or turn it into something else in markdown-it (an ATX heading, a quote, a fence, a
    list item, a thematic break or setext underline, a table's delimiter row, an HTML block of types 1–6;
    bullets and numbers even where the parser would not take them). Any other line — indented four
    columns or more, inline code, emphasis, links, inline HTML — continues the paragraph."""
    html = "|".join(
        f"(?{'i' if start.flags & re.IGNORECASE else ''}:{start.pattern.removeprefix('^')})"
        for start in _html_starts()[:6]  # types 1–6: the ones that can interrupt a paragraph
    )
    end = _LINE_END
    return re.compile(  # from the line feed before the line (above): the line starts one after the match
        rf"\n(?:([ \t]*\r?$)| {{0,3}}(?:#{{1,6}}{end}|>|`{{3,}}|~{{3,}}|[-+*]{end}|[0-9]+[.)]{end}"
        rf"|[-*_=][-*_= \t]*\r?$|[|]|[|\-:][|\-: \t]*\r?$|{html}))",
        re.M,
    )


def _scanned_outline(
    text: str, fm_end: int, fm_title: str, env: dict[str, Any] | None = None
) -> Outline | None:
    """The outline with markdown-it reading only the regions that need it (above); ``None`` for a text
    the parser must read whole (a lone ``\\r``). ``env``: the link reference definitions, when known."""
    if "\r" in text and _LONE_CR.search(text) is not None:
        return None
    known = env is not None
    env = dict(env) if env is not None else {}
    found = _Found(text)
    n = len(text)
    pos = fm_end
    scan = _NATIVE_SCAN_BLOCKS
    while pos < n:
        if scan is not None:  # the simple blocks in C, up to one it leaves to `_scanned_block`
            starts, headings, fences, pos, done = scan(text, pos)
            _add_scanned(found, starts, headings, fences, env)
            if done:
                break
        else:
            pos = _BLANKS.match(text, pos).end()  # type: ignore[union-attr]  # an empty match at worst
            if pos >= n or _ONLY_BLANK.match(text, pos) is not None:
                break
        after = _scanned_block(found, pos, env)
        pos = after if after is not None else _parsed_region(found, pos, env)
    if env and not known and _reads_links(found):  # a title or cell before a definition may use it
        return _scanned_outline(text, fm_end, fm_title, env)
    return found.outline(fm_end, fm_title)


# `_scanned_outline`'s loop over the simple blocks in C (`kireme._speedups.scan_blocks`): `_scanned_block`'s
# readings of paragraphs, comments, ATX headings and closed fences, block after block without a Python call
# each (a third of the outline of the Japanese docs); the rest goes to `_scanned_block` as before
_NATIVE_SCAN_BLOCKS: Callable[[str, int], tuple[list[int], list[int], list[int], int, bool]] | None = native(
    "scan_blocks"
)


def _add_scanned(
    found: _Found, starts: list[int], headings: list[int], fences: list[int], env: dict[str, Any]
) -> None:
    """What `scan_blocks` read, added as `_scanned_block` adds it: the block starts, each heading (four ints:
    start, marks end, content end, title end) and each closed fence (six: start, closing line start and
    end, marker length, info start and end)."""
    found.blocks += starts
    text = found.text
    for i in range(0, len(headings), 4):
        _add_heading(found, headings[i], headings[i + 1], headings[i + 2], headings[i + 3], env)
    for i in range(0, len(fences), 6):
        pos, close_start, _, marks, info_start, info_end = fences[i : i + 6]
        _add_fence(found, pos, text[pos : pos + marks], text[info_start:info_end], close_start)


def _reads_links(found: _Found) -> bool:
    """Whether a heading title or a table cell of the outline may hold a reference link (a ``[``): only
    those read the link reference definitions."""
    text = found.text
    return any("[" in text[h.start : h.end] for h in found.headings) or any(
        "[" in text[t.start : t.end] for t in found.tables
    )


def _scanned_block(found: _Found, pos: int, env: dict[str, Any]) -> int | None:
    """Read the block starting at ``pos`` (column 0, top level) when it is one of the simple kinds
    (above) and return the offset after it; ``None``: the parser reads it."""
    text = found.text
    char = text[pos]
    if char in "#`~<" and _may_open_table(text, pos):
        return None  # markdown-it tries a table first: `# | a |` over `-|-` is a table's header
    if char == "#" and (atx := _ATX.match(text, pos)) is not None:
        return _scanned_heading(found, pos, atx.end(), env)
    if char in "`~" and (fence := _fence_opened(text, pos)) is not None:
        return _scanned_fence(found, pos, *fence)
    if char == "<":
        line = text[pos : _next_line(text, pos)].rstrip("\r\n")
        kind = _html_type(line)
        if kind == 2:
            return _scanned_comment(found, pos)
        if kind in (6, 7) and "|" not in line:  # no table header either
            found.blocks.append(pos)
            blank = _NEXT_BLANK.search(text, pos)  # from the line feed that ends this line
            return len(text) if blank is None else blank.start() + 1
        if kind:
            return None
    elif char != "[" and _NOT_PARAGRAPH_FIRST.match(text, pos) is not None:
        return None
    stop = _paragraph_stop().search(text, pos)  # the lines after the first (from the line feed ending it)
    if stop is not None and stop.group(1) is None:
        return None
    end = len(text) if stop is None else stop.start() + 1
    if char == "[" and text.find("]:", pos, end) >= 0:  # maybe a link reference definition
        return None
    found.blocks.append(pos)
    return end


# A line that may be a table's delimiter row (a superset: the parser decides)
_DELIMITER_ROW = re.compile(r"[ \t]*[|\-:][|\-: \t]*\r?(?:\n|\Z)")


def _may_open_table(text: str, pos: int) -> bool:
    """Whether the line at ``pos`` holds a ``|`` and the next one may be a table's delimiter row."""
    end = text.find("\n", pos)
    return end >= 0 and text.find("|", pos, end) >= 0 and _DELIMITER_ROW.match(text, end + 1) is not None


# a line that may be a table's delimiter row (`_DELIMITER_ROW`), with the line feed before it
_DELIMITER_LINE = re.compile(r"\n(?=" + _DELIMITER_ROW.pattern + ")")


def _delimiter_lines_python(text: str) -> list[int]:
    """The line feed before each line that may be a table's delimiter row (`_DELIMITER_LINE`)."""
    return [found.start() for found in _DELIMITER_LINE.finditer(text)]


# in C a pass over the line feeds (a tenth of the search's time over the Japanese technical docs)
_delimiter_lines: Callable[[str], list[int]] = native("delimiter_lines") or _delimiter_lines_python


def plain_text_tables(text: str) -> tuple[Table, ...]:
    """The pipe tables of a plain text (a ``.txt`` file, a string): a line holding ``|`` right over a GFM
    delimiter row (``|---|---|``), outside the table before it, starts one where markdown-it's ``table``
    rule reads one from there, and the table holds the rows the rule reads after it (a blank line, an
    indented line or one that starts another block ends it; a line holding a lone carriage return, which
    the parser reads as two, ends it too). The rest of a plain text is not Markdown (a ``#``, ``-`` or
    indented line means nothing there, nor ``**`` in a cell: the cells are as written, trimmed, ``\\|``
    read as ``|``), but a table pasted from Markdown or written by a model is a table all the same, and
    its rows need their header where a chunk starts among them. ``()`` for a text without one. Kept for
    the last few texts (`clear_text_caches`).

    Read line by line, in time linear in the text: the parser is asked only whether one line that may
    start another block (``- 項目``, ``# 見出し``, ``<div>``) is a row, with the header and delimiter row
    above it (its reading of a row does not depend on the rows before); proved equal to the parser's
    reading of the whole table by property tests."""
    if "|" not in text:
        return ()
    return _plain_text_tables(text)


@lru_cache(maxsize=4)
def _plain_text_tables(text: str) -> tuple[Table, ...]:
    tables: list[Table] = []
    end = 0  # where the last table ends: a delimiter row before it is one of its rows
    for line_feed in _delimiter_lines(text):
        if line_feed < end:
            continue
        start = text.rfind("\n", 0, line_feed) + 1
        if start < end or text.find("|", start, line_feed) < 0:
            continue
        row_end = text.find("\n", line_feed + 1)
        row_end = len(text) if row_end < 0 else row_end
        columns = _table_columns(text[start:line_feed], text[line_feed + 1 : row_end])
        if columns:
            table = _read_table(text, start, line_feed, row_end, columns)
            tables.append(table)
            end = table.end
    return tuple(tables)


# an alignment cell of a delimiter row (markdown-it's ``headerLineRe``)
_ALIGN_CELL = re.compile(r":?-+:?")
# an ordered list item's marker (markdown-it's ``list`` rule), which ends a table
_ORDERED_ITEM = re.compile(r"[0-9]{1,9}[.)](?:[ \t]|\r?$)")
# what an ATX heading starts with (markdown-it's ``heading`` rule)
_ATX_MARKS = re.compile(r"#{1,6}(?:[ \t\r]|$)")
# a pipe that separates cells (``\\|`` is a pipe in a cell)
_CELL_PIPE = re.compile(r"(?<!\\)\|")


def _indented(line: str) -> bool:
    """Whether ``line`` is indented four columns or more (a tab reaches the fourth): code to the parser."""
    body = line.lstrip(" \t")
    return len(line) - len(body) > 3 or "\t" in line[: len(line) - len(body)]


def _lone_cr(line: str) -> bool:
    """Whether ``line`` (without its line feed) holds a carriage return that does not end it."""
    return "\r" in line.removesuffix("\r")


def _table_columns(header: str, delimiter: str) -> int:
    """How many columns the table whose header line and delimiter row are these has, as markdown-it's
    ``table`` rule decides at the header line (the first block rule asked: where it reads a table, the line
    starts one); ``0`` where it does not (or a line holds a lone carriage return)."""
    if _lone_cr(header) or _lone_cr(delimiter) or _indented(header) or _indented(delimiter):
        return 0
    header, delimiter = header.removesuffix("\r"), delimiter.removesuffix("\r")
    row = delimiter.lstrip(" ")
    if len(row) < 2 or row[1] not in "|-: \t" or row[:2] in ("- ", "-\t"):
        return 0
    trim = _md_trim_chars()
    aligns = [cell.strip(trim) for cell in row.split("|")]
    last = len(aligns) - 1
    for i, cell in enumerate(aligns):
        if (not cell and 0 < i < last) or (cell and _ALIGN_CELL.fullmatch(cell) is None):
            return 0
    columns = len(_row_cells(header.strip(trim)))
    return columns if columns == sum(1 for cell in aligns if cell) else 0


def _read_table(text: str, start: int, line_feed: int, row_end: int, columns: int) -> Table:
    """The table whose header line starts at ``start`` and whose delimiter row (of ``columns`` columns)
    runs from ``line_feed`` + 1 to ``row_end``: its rows are the lines after it up to the first that the
    table rule does not read as one (`_is_row`), each line's cells as written."""
    trim = _md_trim_chars()
    header = text[start:line_feed].removesuffix("\r")
    delimiter = text[line_feed + 1 : row_end].removesuffix("\r")
    rows: list[TableRow] = []
    filled = 0  # the empty cells filled in so far: the parser stops past 65,536
    pos = row_end + 1
    n = len(text)
    while pos < n:
        nl = text.find("\n", pos)
        nl = n if nl < 0 else nl
        line = text[pos:nl]
        if not _is_row(line, trim, header, delimiter):
            break
        content = line.removesuffix("\r")
        cells = _row_cells(content.strip(trim))
        filled += columns - len(cells)
        if filled > 0x10000:
            break
        rows.append(TableRow(pos, pos + len(content), _fitted(cells, columns)))
        pos = nl + 1
    header_end = line_feed + 1 + len(delimiter)
    names = tuple(_row_cells(header.strip(trim)))
    return Table(
        start, rows[-1].end if rows else header_end, (start, header_end), names, tuple(rows), "markdown"
    )


def _is_row(line: str, trim: str, header: str, delimiter: str) -> bool:
    """Whether markdown-it's ``table`` rule reads ``line`` (no line feed) after a table's rows as one more
    row: not blank, not indented four columns, starting with nothing that opens a block that ends a table
    (a fence, quote, rule, list item, HTML block or heading; `-->` is a row, ``- 項目`` is not). Most lines
    are answered here; the parser answers the few that may open a block, under ``header`` and
    ``delimiter`` (what the rule decides of a row does not depend on the rows before it)."""
    if _lone_cr(line) or not line.strip(trim) or _indented(line):
        return False
    body = line.lstrip(" ")
    first = body[0]
    if first == "|":
        return True
    if first in "0123456789":
        if _ORDERED_ITEM.match(body) is None:
            return True
    elif first in "-*+_":
        list_item = first != "_" and (len(body) == 1 or body[1] in " \t\r")
        rule = first != "+" and not body.removesuffix("\r").strip(first + " \t")
        if not list_item and not rule:
            return True
    elif first == ">":
        return False  # a quote: it always ends a table
    elif first == "#":
        if _ATX_MARKS.match(body) is None:
            return True  # ``#[derive]``, ``#タグ``: no heading
    elif first in "`~":
        if not body.startswith(first * 3):
            return True  # no fence
    elif first != "<":
        return True
    tokens = _parser().parse(f"{header}\n{delimiter}\n{line}")
    return any(tok.type == "tbody_open" for tok in tokens)


def _fitted(cells: list[str], columns: int) -> tuple[str, ...]:
    """A row's cells, as many as the header's: the missing ones empty, any beyond them left out (GFM)."""
    if len(cells) == columns:
        return tuple(cells)
    return (*cells[:columns], *[""] * (columns - len(cells)))


def _row_cells(line: str) -> list[str]:
    """A trimmed row's cells as markdown-it splits them (its ``escapedSplit``: ``\\|`` is a pipe in a
    cell): the empty ones before the first pipe and after the last left out, each trimmed."""
    cells = _CELL_PIPE.split(line) if "\\" in line else line.split("|")
    if cells and cells[0] == "":
        cells.pop(0)
    if cells and cells[-1] == "":
        cells.pop()
    trim = _md_trim_chars()
    if "\\" in line:
        return [cell.replace("\\|", "|").strip(trim) for cell in cells]
    return [cell.strip(trim) for cell in cells]


def _is_scanned_start(text: str, pos: int) -> bool:
    """Whether a region may end before the line at ``pos`` (column 0, after a blank line): nothing the
    region opened continues there (no list item of its list), and `_scanned_block` may read it."""
    char = text[pos]
    if char == "#":
        return _ATX.match(text, pos) is not None
    if char in "`~" and _fence_opened(text, pos) is not None:
        return True
    if char in "<[":
        return True
    return _NOT_PARAGRAPH_FIRST.match(text, pos) is None


def _fence_opened(text: str, pos: int) -> tuple[str, str] | None:
    """The marker run and info string of a fence opened at ``pos`` (a backtick fence's info holds no
    backtick), ``None`` when none is."""
    fence = _FENCE_OPEN.match(text, pos)
    if fence is None:
        return None
    markup, info = fence.groups()
    return None if markup[0] == "`" and "`" in info else (markup, info)


def _next_line(text: str, pos: int) -> int:
    """Offset of the line after the one holding ``pos`` (the text's length on the last line)."""
    nl = text.find("\n", pos)
    return len(text) if nl < 0 else nl + 1


def _line_of(found: _Found, pos: int) -> int:
    """Index of the line starting at ``pos``."""
    return bisect_left(found.lines, pos)


@lru_cache(maxsize=1)
def _md_trim_chars() -> str:
    """The whitespace markdown-it trims from a heading's content (its ``mdTrim``: CommonMark's set)."""
    from markdown_it.common.utils import MD_TRIM_CHARS

    return MD_TRIM_CHARS


def _scanned_heading(found: _Found, pos: int, marks_end: int, env: dict[str, Any]) -> int:
    """An ATX heading in column 0 (markdown-it's ``heading`` rule); returns the next line's offset."""
    text = found.text
    line_end = text.find("\n", pos)
    if line_end < 0:
        line_end = len(text)
    title_end = line_end - 1 if line_end > pos and text[line_end - 1] == "\r" else line_end
    end = title_end
    while end > marks_end and text[end - 1] in " \t":
        end -= 1
    closing = end
    while closing > marks_end and text[closing - 1] == "#":
        closing -= 1
    if closing > marks_end and text[closing - 1] in " \t":
        end = closing
    found.blocks.append(pos)
    _add_heading(found, pos, marks_end, end, title_end, env)
    return min(line_end + 1, len(text))


def _add_heading(
    found: _Found, pos: int, marks_end: int, end: int, title_end: int, env: dict[str, Any]
) -> None:
    """The heading whose marks end at ``marks_end``, its content (closing sequence aside) at ``end`` and its
    line (line break aside) at ``title_end``."""
    content = found.text[marks_end:end].strip(_md_trim_chars())
    found.headings.append(Heading(pos, title_end, marks_end - pos, _content_title(content, env)))


def _scanned_fence(found: _Found, pos: int, markup: str, info: str) -> int:
    """A fence opened in column 0 (markdown-it's ``fence`` rule): up to its closing line, or to the end
    of the text; returns the offset after it."""
    text = found.text
    lines = found.lines
    after = _next_line(text, pos)
    for close in _FENCE_CLOSE.finditer(text, after - 1):  # from the line feed ending the opening line
        run = close.group(1)
        if run[0] == markup[0] and len(run) >= len(markup):
            close_start = close.start() + 1
            found.blocks.append(pos)
            _add_fence(found, pos, markup, info, close_start)
            return _next_line(text, close_start)
    # never closed: to the end, as the parser's line count has it
    first = _line_of(found, pos)
    last = len(lines) - 1 if text.endswith("\n") else len(lines)
    if not text.endswith("\n") and last - 1 > first and _ONLY_BLANK.match(text, lines[-1]):
        last -= 1  # markdown-it stops before a last line of spaces with no line break (its IndexError)
    found.blocks.append(pos)
    found.code.append(_fenced_code(text, lines, markup, info, first, last))
    return len(text)


def _add_fence(found: _Found, pos: int, markup: str, info: str, close_start: int) -> None:
    """The fenced code block opened at ``pos`` and closed by the line at ``close_start``."""
    first = _line_of(found, pos)
    last = _line_of(found, close_start) + 1
    found.code.append(_fenced_code(found.text, found.lines, markup, info, first, last))


def _scanned_comment(found: _Found, pos: int) -> int:
    """An HTML comment block in column 0 (markdown-it's ``html_block`` of type 2): up to the line that
    holds ``-->``, blank lines included, or to the end of the text; returns the offset after it."""
    found.blocks.append(pos)
    close = found.text.find("-->", pos)
    return len(found.text) if close < 0 else _next_line(found.text, close)


def _parsed_region(found: _Found, pos: int, env: dict[str, Any]) -> int:
    """markdown-it's tokens for the region starting at ``pos`` (above); returns where it ends."""
    text = found.text
    n = len(text)
    end = n
    for blank in _REGION_END.finditer(text, pos):
        start = blank.end()
        if _is_scanned_start(text, start):
            end = start
            break
    if text[pos] in _LIST_FIRST and _scanned_list(found, pos, end):
        return end
    region = text[pos:end]
    tokens = _parser().parse(region, env)
    if end < n:
        line_max = region.count("\n")
        if any(
            t.level == 0 and t.type in ("fence", "html_block") and t.map is not None and t.map[1] >= line_max
            for t in tokens
        ):  # a block left open runs past the region: the parser reads the rest of the text
            end = n
            tokens = _parser().parse(text[pos:], env)
    found.add(tokens, env, _line_of(found, pos))
    return end


# --- lists read without the parser ---------------------------------------------------------------------------
#
# Most regions are lists of plain items: every line is blank, a list item whose text starts plainly, or a
# plain line of text. Such a region holds no heading, code block or table, so its outline is where each
# list at the top level starts and where every item (at any depth) starts, which CommonMark's container
# rules give from the indentation alone (markdown-it's ``list`` rule, followed here): an item line
# indented less than four columns past the content of the items that hold it opens an item there — a
# sibling when the list at that depth has the same marker, else a new list — and closes the items
# deeper than it; a plain line continues the open paragraph (lazily too), or after a blank line starts a
# paragraph in the innermost item it is indented into. Anything else — tabs, pipes, link reference
# definitions, an empty item, a line indented four columns into its item (code, or a paragraph's
# continuation the parser decides), a line starting with block syntax, a paragraph back at the top level —
# and the parser reads the region as before. Proved equal to the parser's outline by property tests.

_LIST_FIRST = frozenset("-+*0123456789")
# an item line: indentation, the marker, one to four spaces, then the item's first character
_LIST_ITEM = re.compile(r"( *)([-+*]|[0-9]{1,9}[.)])( {1,4})(?=[^ \r\n])")
_ORDERED_MARKER = re.compile(r"[0-9]{1,9}[.)](?: |\r?$)")


def _plain_start(content: str) -> bool:
    """Whether a line whose text (after its indentation and item marker) is ``content`` can only be
    paragraph text: no block marker, item marker, thematic break or setext underline at its start."""
    first = content[0]
    if first in "#><|:":  # "[" may start text: link reference definitions are ruled out region-wide
        return False
    if first in "`~":  # a code span may start a line, a fence may not
        return not content.startswith(first * 3)
    if first in "-+*" and (len(content) == 1 or content[1] in " \r"):
        return False
    if not content.rstrip("\r").strip("-*_= "):
        return False
    return not ("0" <= first <= "9" and _ORDERED_MARKER.match(content) is not None)


def _scanned_list(found: _Found, pos: int, end: int) -> bool:
    """Read the region ``[pos, end)`` as a list of plain items (above) into ``found``; ``False`` (and
    nothing read) when it is not one."""
    text = found.text
    region = text[pos:end]
    if "\t" in region or "|" in region or "]:" in region or "\x00" in region:
        return False
    columns: list[int] = []  # the content column of each open item, outermost first
    markers: list[str] = []  # the marker character of the list each open item is in
    blocks: list[int] = []
    items: list[int] = []
    paragraph = False  # the line before is text of the innermost item's paragraph
    line_start = pos
    for line in region.split("\n"):
        start = line_start
        line_start += len(line) + 1
        content = line.lstrip(" ")
        if not content or content == "\r":
            paragraph = False
            continue
        indent = len(line) - len(content)
        held = bisect_right(columns, indent)  # the open items this line is indented into
        base = columns[held - 1] if held else 0
        item = _LIST_ITEM.match(line)
        if item is not None:
            marker = item.group(2)
            if indent - base >= 4 or not _plain_start(line[item.end() :]):
                return False
            if held == len(columns):  # a new list in the innermost item, or at the top
                if paragraph and marker[0] in "0123456789" and int(marker[:-1]) != 1:
                    continue  # an ordered list not starting at 1 cannot interrupt a paragraph: its text
                if not held:
                    blocks.append(start)
            elif markers[held] != marker[-1] and not held:  # another marker: a new list at the top
                blocks.append(start)
            del columns[held:], markers[held:]
            columns.append(indent + len(marker) + len(item.group(3)))
            markers.append(marker[-1])
            items.append(start)
            paragraph = True
            continue
        if not _plain_start(content):
            return False
        if paragraph:
            continue  # the paragraph goes on (a lazy line too)
        if not held or indent - base >= 4:  # a paragraph after the list, or indented code
            return False
        del columns[held:], markers[held:]
        paragraph = True
    if not items:
        return False
    found.blocks += blocks
    found.items += items
    return True


def _parsed_outline(text: str, fm_end: int, fm_title: str) -> Outline:
    """The outline from markdown-it-py's block tokens (``fm_end``, ``fm_title``: `front_matter`): the
    reference every faster path is proved equal to."""
    tokens, env = _parse(text, fm_end)
    found = _Found(text)
    found.add(tokens, env)
    return found.outline(fm_end, fm_title)


class _Found:
    """The outline's parts as they are found, in document order: from markdown-it tokens (`add`, whole
    text or one region of it) and from `_scanned_outline`'s own reading of simple blocks."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = line_starts(text)
        self.headings: list[Heading] = []
        self.blocks: list[int] = []
        self.items: list[int] = []
        self.code: list[CodeBlock] = []
        self.tables: list[Table] = []

    def add(self, tokens: list[Token], env: dict[str, Any], line_offset: int = 0) -> None:
        """Block tokens of the text, or of its part starting at line ``line_offset``."""
        text, lines = self.text, self.lines
        if line_offset:
            for tok in tokens:
                if tok.map is not None:
                    tok.map = [tok.map[0] + line_offset, tok.map[1] + line_offset]
        i = 0
        n = len(tokens)
        while i < n:
            tok = tokens[i]
            if tok.map is None:
                i += 1
                continue
            first, last = tok.map
            if tok.level == 0 and (
                tok.nesting == 1 or tok.type in ("fence", "code_block", "hr", "html_block")
            ):
                self.blocks.append(_line_span(text, lines, first, last)[0])
            if tok.type == "heading_open":
                start, end = _line_span(text, lines, first, last)
                inline = tokens[i + 1] if i + 1 < n else None
                title = ""
                if inline is not None and inline.type == "inline":
                    title = _title(inline, env)
                self.headings.append(Heading(start, end, int(tok.tag[1]), title))
            elif tok.type == "list_item_open":
                self.items.append(_line_span(text, lines, first, last)[0])
            elif tok.type in ("fence", "code_block"):
                self.code.append(_code_block(text, lines, tok, first, last))
            elif tok.type == "table_open":
                i, table = _table(text, lines, tokens, i, env)
                self.tables.append(table)
                continue
            i += 1

    def outline(self, fm_end: int, fm_title: str) -> Outline:
        title = fm_title or next((h.title for h in self.headings if h.level == 1), "")
        return Outline(
            headings=tuple(self.headings),
            block_starts=tuple(sorted(set(self.blocks))),
            item_starts=tuple(sorted(set(self.items))),
            code_blocks=tuple(self.code),
            tables=tuple(self.tables),
            title=title,
            front_matter_end=fm_end,
        )


def _title(inline: Token, env: dict[str, Any]) -> str:
    """A heading's plain title from its inline token (parsed only when it has inline syntax)."""
    return _content_title(inline.content, env)


# A heading's trailing attribute block, which the renderers that read it hide (an anchor that keeps a
# translated page's links stable): Pandoc, kramdown, MkDocs and VitePress ``{#id .class}``, MDX
# ``{/*id*/}`` (``{/id/}`` once markdown-it has read its two stars as emphasis).
_HEADING_ATTRIBUTES = re.compile(r"\s*\{(?:/\*?[^{}/\s]*\*?/|[#.][^\s{}][^{}]*)\}\Z")


def _content_title(content: str, env: dict[str, Any]) -> str:
    """`_title` of a heading's inline content, without a trailing attribute block (``{#id}``)."""
    known = _visible_text(content)
    title = _plain_text(content, _inline_children(content, env)) if known is None else known
    if title.endswith("}"):
        return _HEADING_ATTRIBUTES.sub("", title) or title
    return title


def _code_block(text: str, lines: list[int], tok: Token, first: int, last: int) -> CodeBlock:
    """The code block of a ``fence`` or ``code_block`` token spanning lines ``[first, last)``."""
    if tok.type == "code_block":
        start, end = _line_span(text, lines, first, last)
        return CodeBlock(start, end, "", (start, end))
    return _fenced_code(text, lines, tok.markup, tok.info, first, last)


def _fenced_code(text: str, lines: list[int], markup: str, info: str, first: int, last: int) -> CodeBlock:
    """A fenced code block on lines ``[first, last)``, opened by ``markup`` with ``info``."""
    start, end = _line_span(text, lines, first, last)
    opening_end = _line_span(text, lines, first, first + 1)[1]
    opening = text[start:opening_end]
    closed = False
    closing = ""
    body_end = end
    if last - 1 > first:
        close_start, close_end = _line_span(text, lines, last - 1, last)
        # inside a block quote or a list item the closing fence carries the container's prefix ("> ```")
        candidate = text[close_start:close_end].lstrip(" \t>").strip()
        marker = markup[0]
        if candidate and set(candidate) == {marker} and len(candidate) >= len(markup):
            closed, closing = True, text[close_start:close_end]
            body_end = close_start
            while body_end > opening_end and text[body_end - 1] in "\r\n":
                body_end -= 1
    body_start = min(lines[first + 1] if first + 1 < len(lines) else end, max(body_end, opening_end))
    return CodeBlock(
        start, end, info.strip(), (body_start, max(body_start, body_end)), opening, closing, closed
    )


def _table(
    text: str, lines: list[int], tokens: Sequence[Token], i: int, env: dict[str, Any]
) -> tuple[int, Table]:
    """Parse the table starting at token ``i``; returns the index after ``table_close``."""
    span = tokens[i].map
    assert span is not None, "the caller passes only block tokens that have a line map"
    first, last = span
    start, end = _line_span(text, lines, first, last)
    rows: list[TableRow] = []
    columns: tuple[str, ...] = ()
    header = (start, start)
    j = i + 1
    current: list[str] = []
    row_span: tuple[int, int] | None = None
    in_head = False
    while j < len(tokens) and tokens[j].type != "table_close":
        tok = tokens[j]
        if tok.type == "thead_open":
            in_head = True
        elif tok.type == "thead_close":
            in_head = False
        elif tok.type == "tr_open" and tok.map is not None:
            row_span = _line_span(text, lines, tok.map[0], tok.map[1])
            current = []
        elif tok.type == "inline":
            known = _inline_text(tok)
            if known is None:
                children = _inline(tok, env)
                known = _plain(tok, children) if children else ""
            current.append(known)
        elif tok.type == "tr_close" and row_span is not None:
            if in_head:
                columns = tuple(current)
                # the header line and the delimiter row below it
                header = (row_span[0], _line_span(text, lines, first, min(first + 2, last))[1])
            else:
                rows.append(TableRow(row_span[0], row_span[1], tuple(current)))
        j += 1
    return j + 1, Table(start, end, header, columns, tuple(rows), "markdown")


def markdown_headings(text: str) -> list[Heading]:
    """Every ATX and setext heading of ``text``, in order (front matter excluded)."""
    return list(_outline(text).headings)


@dataclass(frozen=True)
class SpanHeadings:
    """`HeadingPaths.span`: ``path`` shared by the whole span, the ``inside`` headings it holds below
    that path (in order), and whether ``path`` keeps every heading above any part of the span whose line
    lies before it (``keeps_context``: a chunk of the span loses no heading its text sits under)."""

    path: tuple[Heading, ...]
    inside: tuple[Heading, ...]
    keeps_context: bool


class HeadingPaths:
    """The heading path above any offset: ``("手順", "実行")`` for text under ``# 手順`` / ``## 実行``."""

    def __init__(self, headings: Sequence[Heading]) -> None:
        self._starts = [h.start for h in headings]
        self._chains: list[tuple[Heading, ...]] = []
        stack: list[Heading] = []
        for h in headings:
            while stack and stack[-1].level >= h.level:
                stack.pop()
            stack.append(h)
            self._chains.append(tuple(stack))
        self._paths = [tuple(h.title for h in chain) for chain in self._chains]

    @property
    def empty(self) -> bool:
        """Whether there is no heading at all (every path is ``()``)."""
        return not self._starts

    def at(self, position: int) -> tuple[str, ...]:
        """Headings that start at or before ``position`` and are still open there."""
        i = bisect_right(self._starts, position) - 1
        return self._paths[i] if i >= 0 else ()

    def chain(self, position: int) -> tuple[Heading, ...]:
        """Like `at`, with the heading objects (their offsets tell whether a chunk holds the line)."""
        i = bisect_right(self._starts, position) - 1
        return self._chains[i] if i >= 0 else ()

    def between(self, start: int, end: int) -> tuple[Heading, ...]:
        """The headings whose line starts in ``[start, end)``, in order."""
        first = bisect_left(self._starts, start)
        last = bisect_left(self._starts, end)
        return tuple(self._chains[i][-1] for i in range(first, last))

    def span(self, start: int, end: int) -> SpanHeadings:
        """The heading path every part of ``[start, end)`` shares, and the headings whose lines it holds
        below that path (two sibling sections in one chunk share their parent's path)."""
        first = bisect_right(self._starts, start)
        last = bisect_right(self._starts, end - 1) if end > start else first
        if first == last:  # no heading starts inside: the path at the start, whole
            return SpanHeadings(self.chain(start), (), True)
        chains = [self.chain(start), *self._chains[first:last]]
        common = 0
        shortest = min(len(c) for c in chains)
        while common < shortest and all(c[common] is chains[0][common] for c in chains):
            common += 1
        # the headings above some part whose lines lie before the span: a chunk must keep them in its path
        before = max(sum(1 for h in chain if h.start < start) for chain in chains)
        held = tuple(h for chain in chains for h in chain[common:] if start <= h.start < end)
        inside = tuple(dict.fromkeys(held))
        return SpanHeadings(chains[0][:common], inside, before <= common)

    def titles(self, start: int, end: int) -> tuple[tuple[str, ...], list[str]]:
        """`span` in titles: those of the path all of ``[start, end)`` shares, and those of the headings
        it holds below that path (a chunk's ``headings`` and ``subheadings``)."""
        first = bisect_right(self._starts, start)
        last = bisect_right(self._starts, end - 1) if end > start else first
        if first == last:  # no heading starts inside: the path at the start (`span`'s first case)
            return (self._paths[first - 1] if first else ()), []
        span = self.span(start, end)
        return tuple(h.title for h in span.path), [h.title for h in span.inside]

    def sections(self, start: int, end: int) -> tuple[tuple[str, ...], list[str]]:
        """`titles`, where ``[start, end)`` may start inside a section and run on into the next (a chunk
        cut by size, not by the outline): the path all of it shares, and below that the headings of every
        section it holds text of — those open at its start, then those whose lines it holds."""
        path, inside = self.titles(start, end)
        if not inside:
            return path, inside
        opened = [h.title for h in self.chain(start)[len(path) :] if h.start < start]
        return path, [*opened, *inside]

    def all_chains(self) -> list[tuple[Heading, ...]]:
        """Every distinct chain in the document (``()`` for text before the first heading included)."""
        return [(), *self._chains]
