"""The ``code`` strategy: source code cut between definitions found by a tree-sitter parser.

Top-level functions, classes (and structs, traits, impl blocks, interfaces, modules...) are the strongest
level, their methods the next, nested definitions the next; a definition stays whole when it fits
``max_size``, a larger one is cut between the definitions inside it, then between statements, then at
blank lines, lines and spaces. The comments, doc comments, decorators, annotations and attributes directly
above a definition (no blank line between) belong to it: no cut goes between them. Neighbours are packed
together up to the limit; a definition's remainder never joins the next definition.

Each chunk's heading path is the signatures of the definitions around it: the first line of each
definition, from its keyword (decorators and annotations left out) to where its body starts, trimmed
(``("class Invoice", "def total(self) -> int")``; a signature whose parameters go on over several lines
is read to its closing parenthesis, whitespace collapsed). A chunk that holds several definitions has the
path they share, and their signatures in ``metadata["subheadings"]``.

The grammars are those of the ``tree-sitter-language-pack`` package (the ``code`` extra), compiled into
the wheel: nothing is downloaded at run time. The language comes from the file name's extension
(`kireme.text.languages`), or ``language=`` (``--language``).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from kireme.boundaries.levels import LINE, SCRIPT, WORD, Level, PositionLevel, RegexLevel
from kireme.chunkers import Chunker, ChunkPlan
from kireme.document import Document
from kireme.errors import ConfigError, MissingExtraError
from kireme.structure.paths import Label, plan_with_paths
from kireme.text.languages import LANGUAGES, check_language, language_of

if TYPE_CHECKING:
    from tree_sitter import Language, Node

# Definition levels beyond this depth share the last one (the packer recurses once per level).
MAX_DEPTH_LEVELS = 8
# Definitions nested deeper than this are content of the one around them, not definitions of their own.
MAX_NESTING = 64
# A signature longer than this (in characters) is cut and ends with "…".
MAX_SIGNATURE = 160

_BLANK_LINE = RegexLevel(r"\r?\n[ \t]*\r?\n", "blank line")
# Inside a line too long for a chunk (a literal of a hundred pairs, minified code): after a comma or a
# semicolon first, so that an item stays whole (``"key_10": "value_10",``), never cut from its value
_ITEM_END = RegexLevel(r"[,;][ \t]+", "after a comma or semicolon", cut_after=True)
TAIL_LEVELS: list[Level] = [_BLANK_LINE, LINE, _ITEM_END, WORD, SCRIPT]

_C_COMMENTS = (b"//", b"/*", b"*")


@dataclass(frozen=True)
class Grammar:
    """How one language's tree is read: its grammar's name in tree-sitter-language-pack, the node types
    that are definitions, and the line starts of the comments and decorators that attach to them."""

    name: str
    definitions: frozenset[str]
    attached_lines: tuple[bytes, ...]


def _grammar(name: str, definitions: str, attached: tuple[bytes, ...]) -> Grammar:
    return Grammar(name, frozenset(definitions.split()), attached)


_JS = (
    "class_declaration abstract_class_declaration class function_declaration "
    "generator_function_declaration method_definition interface_declaration enum_declaration "
    "internal_module module"
)
GRAMMARS: dict[str, Grammar] = {
    "python": _grammar("python", "class_definition function_definition", (b"#", b"@")),
    "javascript": _grammar("javascript", _JS, (*_C_COMMENTS, b"@")),
    "typescript": _grammar("typescript", _JS, (*_C_COMMENTS, b"@")),
    "tsx": _grammar("tsx", _JS, (*_C_COMMENTS, b"@")),
    "go": _grammar("go", "function_declaration method_declaration type_declaration", _C_COMMENTS),
    "java": _grammar(
        "java",
        "class_declaration interface_declaration enum_declaration record_declaration "
        "annotation_type_declaration method_declaration constructor_declaration "
        "compact_constructor_declaration",
        (*_C_COMMENTS, b"@"),
    ),
    "c": _grammar(
        "c", "function_definition struct_specifier union_specifier enum_specifier", (*_C_COMMENTS,)
    ),
    "cpp": _grammar(
        "cpp",
        "function_definition struct_specifier union_specifier enum_specifier class_specifier "
        "namespace_definition",
        (*_C_COMMENTS,),
    ),
    "rust": _grammar(
        "rust",
        "function_item impl_item trait_item struct_item enum_item union_item mod_item macro_definition",
        (*_C_COMMENTS, b"#["),
    ),
    "ruby": _grammar("ruby", "class module method singleton_method singleton_class", (b"#",)),
    "php": _grammar(
        "php",
        "class_declaration interface_declaration trait_declaration enum_declaration function_definition "
        "method_declaration namespace_definition",
        (*_C_COMMENTS, b"#"),
    ),
    "csharp": _grammar(
        "csharp",
        "class_declaration struct_declaration interface_declaration enum_declaration record_declaration "
        "namespace_declaration method_declaration constructor_declaration destructor_declaration "
        "operator_declaration conversion_operator_declaration property_declaration indexer_declaration "
        "local_function_statement",
        (*_C_COMMENTS, b"["),
    ),
    "kotlin": _grammar(
        "kotlin",
        "class_declaration object_declaration companion_object function_declaration secondary_constructor",
        (*_C_COMMENTS, b"@"),
    ),
    "swift": _grammar(
        "swift",
        "class_declaration protocol_declaration function_declaration init_declaration deinit_declaration "
        "subscript_declaration",
        (*_C_COMMENTS, b"@"),
    ),
    "bash": _grammar("bash", "function_definition", (b"#",)),
    "sql": _grammar(
        "sql",
        "create_table create_view create_materialized_view create_function create_procedure create_index "
        "create_type create_trigger create_schema create_sequence",
        (b"--", b"/*", b"*"),
    ),
}
assert set(GRAMMARS) == set(LANGUAGES)

# Nodes that belong to the definition below them (when directly above it) and are no part of a signature.
_ATTACHED_TYPES = frozenset(
    {"decorator", "attribute_item", "attribute_list", "annotation", "marker_annotation", "attribute"}
)
# Wrappers around one definition: the definition's span and comments are the wrapper's.
_WRAPPERS = frozenset(
    [
        "decorated_definition",
        "export_statement",
        "template_declaration",
        "type_definition",
        "ambient_declaration",
        "statement",
    ]
)
# Wrappers that are one definition's only while they hold nothing else.
_SOLE_WRAPPERS = frozenset(
    {"expression_statement", "lexical_declaration", "variable_declaration", "declaration"}
)
# A variable or field whose value is one of these is a definition (``const total = (a) => a * 2``).
_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function", "class"}
)
_VALUE_DEFINITIONS = frozenset({"variable_declarator", "public_field_definition", "field_definition"})
# A body reached through one of these alone is read through it (Ruby's body_statement, Go's statement_list).
_BODY_TYPES = frozenset(
    [
        "body_statement",
        "statement_list",
        "block",
        "class_body",
        "declaration_list",
        "field_declaration_list",
        "compound_statement",
        "statement_block",
        "function_body",
        "enum_body",
        "interface_body",
        "protocol_body",
        "enum_class_body",
        "do_block",
    ]
)
_TRAILER = re.compile(rb"[ \t]*[;,]?[ \t]*(?:(?://|#|--)[^\n]*|/\*[^\n]*?\*/[ \t]*)?\r?(?=\n|\Z)")
_PUNCTUATION = re.compile(r"[\s{}()\[\];,]*")
_SIGNATURE_TAIL = re.compile(r"(?:\s|[{:(;=]|=>)+$")
# parameters over several lines, joined: "f( a, b, )" reads "f(a, b)"
_OPEN = re.compile(r"([(\[]) ")
_CLOSE = re.compile(r",? ([)\]])")


def _is_comment(node: Node) -> bool:
    return "comment" in node.type


def _is_attached(node: Node) -> bool:
    return _is_comment(node) or node.type in _ATTACHED_TYPES


def require_code_extra() -> None:
    """Raise `MissingExtraError` unless the code extra (tree-sitter and its grammars) is installed."""
    for module, package in (
        ("tree_sitter", "tree-sitter"),
        ("tree_sitter_language_pack", "tree-sitter-language-pack"),
    ):
        if find_spec(module) is None:
            raise MissingExtraError("--strategy code", "code", package)


@cache
def _language(grammar: str) -> Language:
    from tree_sitter_language_pack import get_language

    # the ignore is needed only where the language pack's types are read (unused where it is Any)
    language: Language = get_language(grammar)  # type: ignore[arg-type, unused-ignore]
    return language


class _Offsets:
    """UTF-8 byte offsets (tree-sitter's) to code-point offsets (the text's)."""

    def __init__(self, text: str, data: bytes) -> None:
        self.identity = len(data) == len(text)
        if not self.identity:
            points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
            widths = 1 + (points >= 0x80) + (points >= 0x800) + (points >= 0x10000)
            self.starts = np.concatenate(([0], np.cumsum(widths, dtype=np.int64)))

    def __call__(self, byte: int) -> int:
        if self.identity:
            return byte
        return int(np.searchsorted(self.starts, byte, side="right")) - 1


@dataclass
class Section:
    """One definition: its span (comments above included), where its signature starts, the signature,
    and the definitions inside it. Offsets are code points into the text."""

    start: int
    end: int
    head: int
    signature: str
    depth: int
    children: list[Section] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)  # the children's starts, for bisection


@dataclass
class CodeOutline:
    """The definitions of a source file (`sections`, top-level ones) and its cut positions: per depth of
    definition (starts and ends), and between statements."""

    text: str
    sections: list[Section]
    depth_positions: list[list[int]]
    statements: list[int]
    starts: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.starts = [s.start for s in self.sections]

    def path(self, start: int, end: int) -> tuple[list[Section], list[Section]]:
        """The definitions around ``[start, end)`` (outermost first), and those below them whose
        signature the chunk holds."""
        path: list[Section] = []
        children, starts = self.sections, self.starts
        while True:
            lo = max(0, bisect_right(starts, start) - 1)
            if lo < len(children) and children[lo].end <= start:
                lo += 1
            hi = bisect_left(starts, end)
            inside = children[lo:hi]
            if len(inside) != 1 or not self._only_punctuation(start, end, inside[0]):
                return path, [s for s in inside if start <= s.head < end]
            path.append(inside[0])
            children, starts = inside[0].children, inside[0].starts

    def _only_punctuation(self, start: int, end: int, section: Section) -> bool:
        text = self.text
        before = text[start : max(start, section.start)]
        after = text[min(end, section.end) : end]
        return bool(_PUNCTUATION.fullmatch(before)) and bool(_PUNCTUATION.fullmatch(after))

    def label(self, start: int, end: int) -> Label:
        path, inside = self.path(start, end)
        headings = tuple(s.signature for s in path)
        context = tuple(s.signature for s in path if s.head < start)
        metadata: dict[str, Any] = {"subheadings": [s.signature for s in inside]} if inside else {}
        return Label(headings, context, metadata)


class _Reader:
    """Reads one parsed file into a `CodeOutline` (all positions in bytes until `outline`)."""

    def __init__(self, text: str, data: bytes, grammar: Grammar) -> None:
        self.text = text
        self.data = data
        self.grammar = grammar
        self.depths: list[list[int]] = []
        self.statements: list[int] = []

    # -------------------------------------------------------------------------- definitions
    def is_definition(self, node: Node) -> bool:
        kind = node.type
        if kind in self.grammar.definitions:
            if kind in (
                "struct_specifier",
                "union_specifier",
                "enum_specifier",
                "mod_item",
                "namespace_definition",
            ):
                return node.child_by_field_name("body") is not None
            return True
        if kind in _VALUE_DEFINITIONS:
            value = node.child_by_field_name("value")
            return value is not None and value.type in _FUNCTION_VALUES
        return False

    def anchor(self, node: Node, floor: Node) -> Node:
        """The outermost wrapper that is only this definition (decorators, ``export``, ``template``)."""
        while True:
            parent = node.parent
            if parent is None or parent == floor or parent.parent is None:
                return node
            if parent.type in _WRAPPERS:
                node = parent
                continue
            if parent.type in _SOLE_WRAPPERS and all(
                c == node or _is_attached(c) for c in parent.named_children
            ):
                node = parent
                continue
            return node

    def body(self, node: Node) -> Node | None:
        """Where a definition's body starts (its signature ends there)."""
        body = node.child_by_field_name("body")
        if body is None and node.type in _VALUE_DEFINITIONS:
            value = node.child_by_field_name("value")
            body = value.child_by_field_name("body") if value is not None else None
        if body is None:
            for child in node.named_children:
                if child.type in _BODY_TYPES:
                    return child
        return body

    def statements_of(self, container: Node) -> Node:
        """The node whose children are a body's statements (through lone wrappers such as Go's
        ``statement_list``)."""
        while True:
            kids = [c for c in container.named_children if not _is_comment(c)]
            if len(kids) == 1 and kids[0].type in _BODY_TYPES and kids[0].named_child_count:
                container = kids[0]
            else:
                return container

    # -------------------------------------------------------------------------- offsets
    def line_start(self, pos: int) -> int:
        return self.data.rfind(b"\n", 0, pos) + 1

    def starts_line(self, pos: int) -> bool:
        return not self.data[self.line_start(pos) : pos].strip()

    def directly_above(self, upper: Node, pos: int) -> bool:
        """Whether ``upper`` ends on the line just above ``pos`` (no blank line between)."""
        gap = self.data[upper.end_byte : pos]
        if gap.strip():
            return False
        lines = gap.count(b"\n") + (1 if self.data[upper.end_byte - 1 : upper.end_byte] == b"\n" else 0)
        return lines <= 1

    def attached_start(self, node: Node) -> int:
        """Where ``node`` starts with the comments, decorators and attributes directly above it."""
        start: int = node.start_byte
        prev = node.prev_named_sibling
        while (
            prev is not None
            and _is_attached(prev)
            and not self.data.startswith(b"#!", prev.start_byte)
            and self.starts_line(prev.start_byte)
            and self.directly_above(prev, start)
        ):
            start = prev.start_byte
            prev = prev.prev_named_sibling
        if not self.starts_line(start):
            return start
        floor = prev.end_byte if prev is not None else 0
        data = self.data
        line = self.line_start(start)
        while line > 0:
            above = self.line_start(line - 1)
            if above < floor:
                break
            content = data[above : line - 1].strip()
            if (
                not content
                or content.startswith(b"#!")
                or not content.startswith(self.grammar.attached_lines)
            ):
                break
            start = above + (len(data[above : line - 1]) - len(data[above : line - 1].lstrip()))
            line = above
        return start

    def end_of(self, node: Node) -> int:
        """``node``'s end, with what follows it on its line when that is only ``;``, ``,`` or a comment."""
        m = _TRAILER.match(self.data, node.end_byte)
        return m.end() if m else node.end_byte

    def signature(self, definition: Node, anchor: Node) -> tuple[int, str]:
        """Where the signature starts (its first token that is not a decorator or comment) and the
        signature: to the end of that line, or on to the closing parenthesis, or to the body's start."""
        head = self.first_token(anchor)
        data = self.data
        raw = self.first_line(definition, head)
        own = self.first_token(definition)
        if own > head and data.find(b"\n", head, own) >= 0:  # template <typename T>\nclass Box
            raw = data[head : data.find(b"\n", head, own)].decode("utf-8", "replace") + " "
            raw += self.first_line(definition, own)
        sig = _SIGNATURE_TAIL.sub("", _CLOSE.sub(r"\1", _OPEN.sub(r"\1", " ".join(raw.split()))))
        if len(sig) > MAX_SIGNATURE:
            sig = sig[: MAX_SIGNATURE - 1].rstrip() + "…"
        return head, sig or " ".join(raw.split())[:MAX_SIGNATURE]

    def first_line(self, definition: Node, head: int) -> str:
        """From ``head`` to the end of its line, or to the body's start; a line that opens a parenthesis
        it does not close goes on to the line that does (parameters over several lines)."""
        data = self.data
        body = self.body(definition)
        stop = body.start_byte if body is not None and body.start_byte > head else definition.end_byte
        end = data.find(b"\n", head, stop)
        end = stop if end < 0 else end
        lines = 1
        while (
            body is not None
            and end < stop
            and lines < 10
            and data.count(b"(", head, end) > data.count(b")", head, end)
        ):
            nxt = data.find(b"\n", end + 1, stop)
            end = stop if nxt < 0 else nxt
            lines += 1
        return data[head:end].decode("utf-8", "replace")

    def first_token(self, node: Node) -> int:
        """The start of ``node``'s first leaf outside decorators, annotations, attributes and comments."""
        stack = [node]
        while stack:
            n = stack.pop()
            if n != node and _is_attached(n):
                continue
            if n.child_count == 0:
                leaf: int = n.start_byte
                return leaf
            stack.extend(reversed(n.children))
        whole: int = node.start_byte
        return whole

    # -------------------------------------------------------------------------- reading
    def sections_in(self, container: Node, depth: int, body: bool = True) -> list[Section]:
        """The definitions under ``container`` (in bytes), each with the definitions inside it; the
        statements of ``container`` are cut positions when it is a ``body``. Definitions nested deeper
        than `MAX_NESTING` are read as statements of the one around them."""
        if depth > MAX_NESTING:
            return []
        if body:
            for child in self.statements_of(container).named_children:
                if not _is_comment(child):
                    self.statements.append(self.attached_start(child))
        found: list[Section] = []
        stack = list(reversed(container.named_children))
        while stack:
            node = stack.pop()
            if self.is_definition(node):
                anchor = self.anchor(node, container)
                head, sig = self.signature(node, anchor)
                section = Section(self.attached_start(anchor), self.end_of(anchor), head, sig, depth)
                while len(self.depths) < depth:
                    self.depths.append([])
                self.depths[depth - 1] += [section.start, section.end]
                inner = self.body(node)
                section.children = self.sections_in(inner or node, depth + 1, inner is not None)
                found.append(section)
                continue
            stack.extend(reversed(node.named_children))
        return found

    def outline(self, root: Node) -> CodeOutline:
        top = self.sections_in(root, 1)
        to_char = _Offsets(self.text, self.data)

        def convert(sections: list[Section]) -> None:
            for s in sections:
                s.start, s.end, s.head = to_char(s.start), to_char(s.end), to_char(s.head)
                convert(s.children)
                s.starts = [c.start for c in s.children]

        convert(top)
        levels = self.depths[: MAX_DEPTH_LEVELS - 1]
        if len(self.depths) >= MAX_DEPTH_LEVELS:
            levels.append([p for level in self.depths[MAX_DEPTH_LEVELS - 1 :] for p in level])
        depth_positions = [sorted({to_char(p) for p in level}) for level in levels]
        statements = sorted({to_char(p) for p in self.statements})
        return CodeOutline(self.text, top, depth_positions, statements)


def code_outline(text: str, language: str) -> CodeOutline:
    """Parse ``text`` as ``language`` (a name `check_language` accepts) and read its definitions."""
    from tree_sitter import Parser

    grammar = GRAMMARS[check_language(language)]
    data = text.encode("utf-8", "surrogatepass")
    tree = Parser(_language(grammar.name)).parse(data)
    return _Reader(text, data, grammar).outline(tree.root_node)


# The last character of a line that opens a block whose body follows: ``else:``, ``def f(x):``, ``if (x) {``,
# ``items = [``
_BLOCK_OPENERS = frozenset(":{([")
_BLANKS = " \t\r\n"  # what lies between a line and the cut after it (and the next line's text)


def block_opener_test(outline: CodeOutline) -> Callable[[str, int], bool]:
    """The packer's test of a cut after a line that opens a block (`_opener_end`), where the text after the
    cut starts no statement of a body nor a definition and the line is no definition's first line: there
    the cut is a good one whatever the line says (a definition is packed whole or between the definitions
    inside it, its signature in the heading path, its comments with its first line)."""
    text = outline.text
    good = set(outline.statements).union(*outline.depth_positions)
    heads: set[int] = set()  # where each definition's first line ends
    stack = list(outline.sections)
    while stack:
        section = stack.pop()
        stop = text.find("\n", section.head)
        heads.add(len(text) if stop < 0 else stop)
        stack += section.children

    def test(text: str, pos: int) -> bool:
        after = pos
        while after < len(text) and text[after] in _BLANKS:
            after += 1
        if after in good:
            return False
        end = _opener_end(text, pos)
        if end is None:
            return False
        line_end = text.find("\n", end - 1)  # where the opening line ends
        return (len(text) if line_end < 0 else line_end) not in heads

    return test


def _opener_end(text: str, pos: int) -> int | None:
    """Where the line before a cut at ``pos`` (at a line's start or end) stops, after its last character,
    when that line opens a block — ``else:`` with its ``raise`` in the next chunk; ``None`` when it does not,
    or the cut falls inside a line. The packer moves such a cut before the line, so the line goes with its
    body, as a heading goes with its text."""
    end = pos
    while end > 0 and text[end - 1] in _BLANKS:
        end -= 1
    at_line_end = pos >= len(text) or text[pos] in "\r\n" or "\n" in text[end:pos]
    if end <= 0 or not at_line_end:
        return None  # not at the end of a line: a cut inside one is a last resort, its own matter
    return end if text[end - 1] in _BLOCK_OPENERS else None


@dataclass(frozen=True)
class CodeChunker(Chunker):
    """Functions, classes and methods whole when they fit, else cut between the definitions inside them,
    then statements and lines; each chunk's heading path is the signatures around it.

    ``language``: one of `kireme.text.languages.LANGUAGES` (or an alias such as ``ts``, ``c++``); ``None``
    (the default) takes it from the document (its file name's extension). Needs the ``code`` extra.
    """

    language: str | None = None
    strategy: ClassVar[str] = "code"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.language is not None:
            object.__setattr__(self, "language", check_language(self.language))
        require_code_extra()

    def options(self) -> dict[str, Any]:
        return {"language": self.language} if self.language is not None else {}

    def keep_headings(self) -> bool:
        return False

    def levels(self) -> list[Level]:
        raise ConfigError("the code strategy's levels depend on the document: call chunk()")

    def document_language(self, doc: Document) -> str:
        """The language ``doc`` is read as: ``language``, else the one its loader recorded, else its
        file name's; a `ConfigError` when none of them says."""
        if self.language is not None:
            return self.language
        recorded = doc.metadata.get("language")
        if isinstance(recorded, str) and recorded:
            return check_language(recorded)
        for name in (doc.metadata.get("source"), doc.id):
            if isinstance(name, str) and name:
                found = language_of(name)
                if found:
                    return found
        raise ConfigError(
            f"{doc.id}: cannot tell the programming language from the file name (the code strategy reads "
            "source files); give kireme chunk/index --language, or language= in Python: "
            f"one of {', '.join(LANGUAGES)}"
        )

    def plan(self, doc: Document) -> ChunkPlan:
        outline = code_outline(doc.text, self.document_language(doc))
        levels: list[Level] = [
            PositionLevel(positions, f"definitions {d}", hard=True)
            for d, positions in enumerate(outline.depth_positions, start=1)
        ]
        levels += [PositionLevel(outline.statements, "statements"), *TAIL_LEVELS]
        return plan_with_paths(self, doc, levels, outline.label, block_opener_test(outline))
