"""Separator presets for the recursive strategy: good defaults for prose, Markdown and code.

Code presets cut before declarations. A comment, JSDoc block or decorator directly above a declaration
(no blank line between) belongs to it: the cut goes before the first of those lines, never between them
and the declaration (see `AttachedLevel`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import regex

from kireme.boundaries.levels import (
    INSIDE_SENTENCE,
    LINE,
    PARAGRAPH,
    SENTENCE,
    WORD,
    CodeLinesBetweenBrackets,
    Level,
    Outside,
    PositionLevel,
    RegexLevel,
)
from kireme.errors import ConfigError
from kireme.lazy import LazyMapping

if TYPE_CHECKING:
    from kireme.text.markdown import CodeBlock

_PROSE_TAIL: list[Level] = [SENTENCE, *INSIDE_SENTENCE]
_BLANK_LINE = RegexLevel(r"\r?\n[ \t]*\r?\n", "blank line")
_BOL = r"(?:^|\n)"  # the start of a line, inside a lookbehind

# A block comment, up to the first `*/`; it does not run past a line that opens another one, so an
# unclosed `/*` costs a scan to the next comment at most.
_BLOCK_COMMENT = r"/\*(?:[^*\n]++|\*(?!/)|\n(?![ \t]*/\*))*+\*/"
# A block comment ending right here (for lookbehinds, which cannot use possessive repeats).
_BLOCK_COMMENT_END = r"/\*(?:[^*]|\*(?!/))*\*/[ \t\r]*"
# A line break inside decorator arguments: the next line is indented (and neither blank nor another
# decorator) or closes a bracket, so unbalanced parentheses cost a short scan, not one to the end.
_ARG_BREAK = r"\n(?=[ \t]+[^\s@]|[)\]}])"
_QUOTED = r"'(?:[^'\\\n]|\\.)*+'|\"(?:[^\"\\\n]|\\.)*+\""


def _args(strings: str, plain: str) -> str:
    """Parentheses nested up to four deep (decorator arguments), across lines, quoted parentheses kept.

    Spelled out instead of recursive: a recursive group in a repeated prefix makes `regex` slow down
    with the number of decorators in a run.
    """
    parens = r"(?!)"
    for _ in range(4):
        parens = rf"\((?:[^(){plain}\n]++|{_ARG_BREAK}|{strings}|{parens})*+\)"
    return parens


@dataclass(frozen=True)
class AttachedLevel:
    """Cuts before each line that matches ``start``, or before the comment lines directly above it.

    ``prefix`` matches one comment or decorator line (or a block comment), its line break included;
    ``guard`` one that ends at a line break, where no cut may go. ``first`` is a pattern tried before the
    others at each position, whose match start is a cut as well (the SQL ``/`` terminator line).

    A run of ``prefix`` lines not followed by ``start`` is skipped whole, so long comment runs cost one
    scan. The scan starts at the line break before the span: a span that starts with a comment above a
    declaration (an oversized class and its JSDoc) is not cut between the two either.
    """

    start: str
    prefix: str
    guard: str
    name: str
    first: str = ""
    _head: regex.Pattern[str] = field(init=False, repr=False, compare=False)
    _compiled: regex.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # After the line break: the prefix run and the start line (a cut), or a prefix run alone (skipped).
        head = rf"(?:{self.prefix})*+(?={self.start})|(?:{self.prefix})++(?P<skip>)"
        line = rf"\r?\n(?<!{self.guard}\n)(?:{head})"
        object.__setattr__(self, "_head", regex.compile(head))
        object.__setattr__(self, "_compiled", regex.compile(f"{self.first}|{line}" if self.first else line))

    def cuts(self, text: str, a: int, b: int) -> list[int]:
        scan = text.rfind("\n", 0, a)
        if scan < 0:  # the span is on the first line: a prefix run at the start of the text is skipped
            head = self._head.match(text, 0, b)
            scan = head.end() if head else 0
        elif scan > 0 and text[scan - 1] == "\r":
            scan -= 1
        out: list[int] = []
        for m in self._compiled.finditer(text, scan, b):
            s = m.start()
            if a < s < b and m.group("skip") is None and (not out or out[-1] != s):
                out.append(s)
        return out


# ----------------------------------------------------------------------------------- JavaScript / TS
_JS_STRINGS = _QUOTED + r"|`(?:[^`\\\n]|\\.|" + _ARG_BREAK + r")*+`"
_JS_DECORATOR = r"@[\w$.]+(?:<[^\n>]*>)?[ \t]*" + "(?:" + _args(_JS_STRINGS, r"'\"`") + ")?"
_JS_PREFIX = rf"(?://[^\n]*|{_BLOCK_COMMENT}[ \t\r]*|{_JS_DECORATOR}[ \t\r]*)\n"
# A comment line, the end of a block comment, or a decorator-only line just before the cut.
_JS_GUARD = rf"(?://[^\n]*|{_BLOCK_COMMENT_END}|@[\w$.]+(?:[ \t]*\([^\n]*\))?[ \t\r]*)"
_JS_NAME_END = r"(?![\w$])"
# Declarations at column 0.
_JS_DECL = (
    r"(?:export|declare|class|interface|enum|namespace|module|function|const|let|var|exports"
    r"|abstract[ \t]+class|async[ \t]+function|type[ \t]+[\w$]+)" + _JS_NAME_END
)
# Class, interface and namespace members (indented): modifiers, constructors, method signatures that
# open a body (`foo(a) {`, `async *gen() {`, `get x(): T {`) or continue on the next line (`foo(`),
# typed properties and interface methods ending in `;`, decorated one-line members, arrow-function
# fields, nested declarations. Call statements (`foo(x);`) and control flow (`if (x) {`) are not members.
_JS_KEYWORDS = (
    r"(?:if|for|while|switch|catch|with|return|else|do|try|typeof|new|await|yield|throw|delete|void"
    r"|super|this|case|default)" + _JS_NAME_END
)
_JS_MEMBER_NAME = rf"(?!{_JS_KEYWORDS})[#\w$]+"
_JS_LINE_END = r"[ \t\r]*(?:\n|\Z)"
_JS_MEMBER_FORMS = [
    r"(?:public|private|protected|static|readonly|abstract|override|declare|accessor)" + _JS_NAME_END,
    r"constructor[ \t]*\(",
    # a method that opens its body on this line, or whose parameters start on the next one
    r"(?:async[ \t]+)?(?:\*[ \t]*)?(?:(?:get|set)[ \t]+)?" + _JS_MEMBER_NAME + r"[ \t]*(?:<[^\n(]*>)?\("
    r"(?:(?![^\n]*function)[^\n]*\)[^\n)]*\{)?" + _JS_LINE_END,
    # a typed property or an interface method: `id: string;`, `name?: T;`, `greet(u: User): string;`
    _JS_MEMBER_NAME + r"[?!]?[ \t]*(?:<[^\n(]*>)?(?:\([^\n]*\))?[ \t]*:[^\n]*;" + _JS_LINE_END,
    # an arrow-function field: `handle = (e) => {`, `load = async () =>`
    _JS_MEMBER_NAME + r"[ \t]*=[ \t]*(?:async[ \t]+)?(?:\([^\n]*\)|[\w$]+)[ \t]*(?::[^\n=]*)?=>",
    r"@[\w$]",  # a decorated one-line member: `@Input() name: string;`
    r"(?:export[ \t]+)?(?:default[ \t]+)?(?:declare[ \t]+)?(?:abstract[ \t]+)?(?:async[ \t]+)?"
    r"(?:function|class|interface|enum|namespace|type[ \t]+[\w$]+)" + _JS_NAME_END,
    r"export" + _JS_NAME_END,
]
# Lines over 400 characters (minified code) are not members; this also bounds the scans above.
_JS_MEMBER = r"[ \t]+(?=[^\n]{0,400}(?:\n|\Z))(?:" + "|".join(_JS_MEMBER_FORMS) + ")"


def _javascript() -> list[Level]:
    return [
        # Top-level declarations, with the JSDoc, comments and decorators directly above them.
        AttachedLevel(_JS_DECL, _JS_PREFIX, _BOL + _JS_GUARD, "declaration"),
        # Comment blocks at column 0 that belong to no declaration (section comments, file headers).
        RegexLevel(rf"\r?\n(?<!{_BOL}{_JS_GUARD}\n)(?=//|/\*)", "comment"),
        # Other top-level statements: imports, `app.use(...)`, `describe(...)`, IIFEs.
        AttachedLevel(r"[\w$(\['\"`]", _JS_PREFIX, _BOL + _JS_GUARD, "statement"),
        # Members, with their indented JSDoc, comments and decorators.
        AttachedLevel(_JS_MEMBER, rf"[ \t]*{_JS_PREFIX}", rf"{_BOL}[ \t]*{_JS_GUARD}", "member"),
        _BLANK_LINE,
        LINE,
        WORD,
    ]


# -------------------------------------------------------------------------------------------- Python
_PY_DECORATOR = r"@(?:[\w.]+[ \t]*" + _args(_QUOTED, r"'\"") + r"[ \t\r]*\n|[^\n]*\n)"
_PY_PREFIX = rf"(?:#[^\n]*\n|{_PY_DECORATOR})"
_PY_GUARD = r"[#@][^\n]*"

# ----------------------------------------------------------------------------------------------- SQL
_SQL_PREFIX = rf"[ \t]*(?:--[^\n]*|{_BLOCK_COMMENT}[ \t\r]*)\n"
_SQL_GUARD = rf"{_BOL}[ \t]*(?:--[^\n]*|{_BLOCK_COMMENT_END})"
# A line that is only `/` (the SQL*Plus / PL/SQL terminator) or `GO` (T-SQL batches).
_SQL_TERMINATOR = r"\r?\n(?<=" + _BOL + r"[ \t]*(?:/|(?i:go))[ \t\r]*\n)"


def _sql(keywords: str, name: str, first: str = "") -> AttachedLevel:
    """Lines that start with one of ``keywords``, with the comments directly above them."""
    return AttachedLevel(rf"[ \t]*(?i:{keywords})\b", _SQL_PREFIX, _SQL_GUARD, name, first)


def _default() -> list[Level]:
    # Paragraphs, lines, sentences (Japanese and English), clause marks, spaces, kana/kanji changes.
    return [PARAGRAPH, LINE, *_PROSE_TAIL]


def _markdown() -> list[Level]:
    # Headings (the heading goes with its body), fences and rules, then prose.
    return [
        RegexLevel(r"\r?\n(?=# )", "h1"),
        RegexLevel(r"\r?\n(?=## )", "h2"),
        RegexLevel(r"\r?\n(?=### )", "h3"),
        RegexLevel(r"\r?\n(?=#{4,6} )", "h4-h6"),
        RegexLevel(r"\r?\n(?=```|~~~)", "fence"),
        RegexLevel(r"\r?\n(?=(?:\*\*\*+|---+|___+)\r?\n)", "rule"),
        PARAGRAPH,
        LINE,
        *_PROSE_TAIL,
    ]


def _python() -> list[Level]:
    # Classes, then functions, then methods; comments and decorators directly above go with them.
    return [
        AttachedLevel(r"class[ \t]", _PY_PREFIX, _BOL + _PY_GUARD, "class"),
        AttachedLevel(r"(?:async[ \t]+)?def[ \t]", _PY_PREFIX, _BOL + _PY_GUARD, "def"),
        AttachedLevel(
            r"[ \t]+(?:(?:async[ \t]+)?def|class)[ \t]",
            rf"[ \t]*{_PY_PREFIX}",
            rf"{_BOL}[ \t]*{_PY_GUARD}",
            "method",
        ),
        _BLANK_LINE,
        LINE,
        WORD,
    ]


def _sql_levels() -> list[Level]:
    # Statements (DDL and `/`/`GO` terminators strongest), with the comments directly above them.
    return [
        _sql("create|alter|drop|grant|revoke", "ddl", first=_SQL_TERMINATOR),
        _sql("begin|declare|procedure|function", "block"),
        _sql("insert|update|delete|merge|select|with", "dml"),
        RegexLevel(rf"\r?\n(?<!{_BOL}[ \t]*--[^\n]*\n)(?=[ \t]*(?:--|/\*))", "comment"),
        # After `;` at a line end, except `END;` before its `/` terminator line.
        RegexLevel(r"(?<=;)[ \t]*\r?\n(?![ \t]*/[ \t]*(?:\r?\n|\Z))", "statement end"),
        _BLANK_LINE,
        LINE,
        WORD,
    ]


# Each preset's patterns compile on first use: compiling them all at import cost a third of a second of
# `kireme chunk` start-up, and most runs use one preset. Aliases share their list (the same object).
PRESETS: Mapping[str, list[Level]] = LazyMapping(
    {
        "default": _default,
        "markdown": _markdown,
        "python": _python,
        "sql": _sql_levels,
        "javascript": _javascript,
        # Other names for the same list: JavaScript levels read TypeScript as well.
        "js": _javascript,
        "typescript": _javascript,
        "ts": _javascript,
    }
)
# Other names of the same level lists: chunkers store the canonical name, so ids do not depend on the alias.
PRESET_ALIASES = {"js": "javascript", "typescript": "javascript", "ts": "javascript"}


# Presets for prose, where a short line without punctuation is a heading that belongs with its body.
PROSE_PRESETS = frozenset({"default", "markdown"})


def markdown_levels(text: str, fits: Callable[[int, int], bool] | None = None) -> list[Level]:
    """The markdown preset for one document, with headings and code blocks found by the CommonMark parser.

    The regex levels of the preset would take a ``# comment`` line inside a code fence for a heading, and
    cut before a closing fence as before an opening one; the parser does neither. Each code block is its
    own piece, with what belongs to it: the cut before it goes above the opening-tag lines (``<Sandpack>``)
    and the lead-in or label (``次のコードを実行します：``, ``ファイル名: src/main.rs``) right above it, the cut
    after it below the closing-tag lines under it. A code block for which ``fits(start, end)`` holds keeps
    no cut inside it, so it is never split while it fits a chunk (a larger one is cut between its blank
    lines, then its lines). A blank line is no paragraph cut after a lead-in, an opening-tag line or an
    HTML comment above a block: the text stays with what it introduces, wraps or translates while they fit
    (a line cut is left there for when they do not). A closing line (``</Sandpack>``, ``:::``, a
    comment's ``-->``) is never cut from the line it closes, at any level: no chunk opens with it.
    """
    from kireme.text.leads import lead_ins
    from kireme.text.markdown import markdown_outline

    outline = markdown_outline(text, warn=False)
    headings = outline.headings

    def starts(levels: tuple[int, ...]) -> list[int]:
        return [h.start for h in headings if h.level in levels]

    leads = lead_ins(text, outline)
    led = {after: start for start, after in leads}
    code = [block for block in outline.code_blocks if block.closed]

    def head(start: int) -> int:
        """Where a code block's piece starts: above its opening tags, lead-in or label, and the comment
        (a translation's original) right above those."""
        start = outline.opened_from(start)
        return outline.commented_from(led.get(start, start))

    fences = {head(b.start) for b in code}
    fences |= {outline.closed_to(b.end) for b in code}
    parsed: list[Level] = [
        PositionLevel(starts((1,)), "h1", hard=True),
        PositionLevel(starts((2,)), "h2", hard=True),
        PositionLevel(starts((3,)), "h3", hard=True),
        PositionLevel(starts((4, 5, 6)), "h4-h6", hard=True),
        PositionLevel(sorted(fences), "fence"),
    ]
    rule, paragraph, *rest = PRESETS["markdown"][5:]
    kept = sorted((b.start, b.end) for b in code if fits is not None and fits(b.start, b.end))
    # spans as `Outside` reads them (a cut inside ``start < cut < end`` is dropped)
    glue = [(start, end + 1) for start, end in outline.openers]
    # a closing line (`</Sandpack>`, `:::`, a comment's `-->`) stays with the line it closes at every level:
    # cut before it, a chunk would open with it (a comment larger than a chunk, cut at its lines)
    closing = [(start - 1, end) for start, end in outline.closers]
    # a fence line stays with the line of code next to it at every level as well: cut between them, a chunk
    # would open with a closing fence (and go on with the text after the block) or end with an opening one
    closing += _fence_glue(text, outline.code_blocks, fits)
    glue += closing
    glue += [(start, after + 1) for start, after in leads]
    # a comment right above a block (`comment_leads`, found with the outline) stays with it
    translated = [(start, after + 1) for start, after in outline.comments]
    glue += translated

    def protected(spans: list[tuple[int, int]]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """The spans as `Outside` reads them, overlapping ones as their union: `Outside` reads a span only
        up to the next one's start, so a comment's glue (to the translation after it) would end where its
        `-->` line's glue starts."""
        if not spans:
            return None
        starts: list[int] = []
        ends: list[int] = []
        for start, end in sorted(spans):
            if ends and start < ends[-1]:
                ends[-1] = max(end, ends[-1])
            else:
                starts.append(start)
                ends.append(end)
        return tuple(starts), tuple(ends)

    def outside(level: Level, spans: tuple[tuple[int, ...], tuple[int, ...]] | None) -> Level:
        return level if spans is None else Outside(level, *spans, getattr(level, "name", ""))

    always = protected(kept + closing)  # every level below the headings and fences
    levels = [*parsed, outside(rule, always), outside(paragraph, protected(kept + glue))]
    if translated:
        # a run glued together that is too large for a chunk parts at its blank lines before its lines (no
        # wrapped line cut while one is left): first between an original and its translation (a lead-in
        # stays with its list, an opening tag with what it opens), then anywhere
        if len(glue) > len(translated) + len(closing):
            originals = set(translated)
            levels.append(outside(paragraph, protected(kept + [g for g in glue if g not in originals])))
        levels.append(outside(paragraph, always))
    code_lines: list[Level] = []  # before `rest`, whose first level is the line level
    large = [b for b in code if not (fits is not None and fits(b.start, b.end))]
    if large:
        # a large code block's lines between brackets before any line (`CodeLinesBetweenBrackets`): no chunk
        # opens with ``});`` nor ends with ``artwork: {`` while another line fits
        from kireme.text.markdown import line_starts

        brackets = CodeLinesBetweenBrackets(line_starts(text), [b.body for b in large])
        code_lines.append(outside(brackets, always))
    return [*levels, *code_lines, *(outside(level, always) for level in rest)]


def _fence_glue(
    text: str, blocks: Sequence[CodeBlock], fits: Callable[[int, int], bool] | None = None
) -> list[tuple[int, int]]:
    """Spans, as `Outside` reads them, that keep each fence line of a fenced code block with the code line
    next to it: the opening fence with the first line's first character, the last line's last character
    with the closing fence (its quote or list prefix included). Only the cuts between the two are covered,
    so a code line longer than a chunk is still cut at its words. Where ``fits(start, end)`` says a fence
    line and its whole code line do not fit a chunk together, the two are not glued: the fence goes alone
    rather than the line (which fits alone) be cut where the room ran out."""
    spans: list[tuple[int, int]] = []
    for block in blocks:
        if not block.opening:  # indented code: no fence line
            continue
        opening_end = block.start + len(block.opening)
        after = text[opening_end : block.end]
        first = opening_end + len(after) - len(after.lstrip())
        first_end = text.find("\n", first, block.end)
        if fits is None or fits(block.start, first_end if first_end >= 0 else block.end):
            spans.append((opening_end - 1, first + 1))
        if block.closed and block.closing:
            closing_start = block.end - len(block.closing)
            markup = closing_start + len(block.closing) - len(block.closing.lstrip())
            last = opening_end + len(text[opening_end:closing_start].rstrip())
            if fits is None or fits(text.rfind("\n", opening_end, last) + 1, block.end):
                spans.append((last - 1, markup + 1))
    return spans


def preset_levels(name: str) -> list[Level]:
    """The levels of a named preset (``default``, ``markdown``, ``python``, ``sql``, ``javascript``,
    also called ``js``, ``typescript`` and ``ts``)."""
    try:
        return list(PRESETS[name])
    except KeyError:
        raise ConfigError(f"unknown preset {name!r}: choose one of {', '.join(PRESETS)}") from None
