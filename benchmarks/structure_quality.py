"""Structure-aware chunking of real Markdown, HTML and notebooks: kireme against peers, same text, same size.

Corpora (from ``../shared/corpora``, ``--corpora`` to move; skipped cleanly when absent; read only):

* ``markdown``: ``ja-techdocs-md/`` (rust-book-ja, react-dev-ja, vite-docs-ja), every ``.md`` file except
  licence files (``LICENSE*``, ``COPYRIGHT*``) and ``SOURCE.md``, loaded with `kireme.load.load`.
* ``notebooks``: ``notebooks/`` (tensorflow-docs-ja, Japanese; langchain-docs, English), every ``.ipynb``,
  rendered as Markdown by `kireme.load.notebook.load_notebook` (cells in order, Markdown and raw cells
  verbatim, code cells as fenced blocks, no outputs, cells joined by a blank line); where that module does
  not exist the benchmark renders the same way itself.

* ``html``: ``ja-techdocs-html/`` (rust-book-ja-html), every ``.html`` page, extracted by
  `kireme.load.html.load_html` (navigation, scripts and styles dropped; headings, lists, ``<pre>`` and tables
  rendered as Markdown). The peers get that same extracted text: this measures the cutting, not the
  extraction (LangChain's ``HTMLHeaderTextSplitter`` reads raw HTML and returns no offsets into any text
  kireme could score, so it is not compared).

``--limit`` keeps the first N documents (sorted paths) of each source folder.
Every configuration gets exactly the same ``Document.text`` for a document (rendered once).

Configurations, all at ``--sizes`` characters (default 800), overlap 0:

* kireme ``markdown`` (the structure strategy, alias ``structure``) via ``make_chunker("markdown",
  max_size=N, unit="chars")``; while it is not registered, ``recursive`` stands in and the row says so.
* kireme ``recursive`` (``preset="auto"``: the markdown preset for ``.md`` documents; the row records which
  preset each corpus resolved to).
* LangChain: ``MarkdownHeaderTextSplitter`` on ``#``..``######`` (``strip_headers=False``), then
  ``RecursiveCharacterTextSplitter.from_language(Language.MARKDOWN, chunk_size=N, chunk_overlap=0)
  .split_documents`` (the documented two-stage recipe). Heading path: metadata ``h1``..``h6`` in order.
* LlamaIndex: ``MarkdownNodeParser`` (``header_path_separator="\\x1f"`` so that a ``/`` in a title does
  not split it), then ``SentenceSplitter(chunk_size=N, chunk_overlap=0, tokenizer=list)`` on each of its
  nodes (one token per character, so the size is in characters). Heading path: the node's
  ``header_path`` holds only the *ancestors* of its section; the section's own heading is the first line of
  the node text, so the reported path is ``header_path`` + that heading (every sub-chunk inherits both).
* chonkie ``RecursiveChunker.from_recipe("markdown", lang="ja"|"en", tokenizer="character")`` when the
  recipe can be loaded (it comes from the Hugging Face hub); otherwise the default ``RecursiveChunker
  (tokenizer="character", chunk_size=N)`` and the row says so. No heading metadata.
* semantic-text-splitter ``MarkdownSplitter(N)`` with ``chunk_indices`` (character offsets, each checked).
  No heading metadata.

Placing chunks: kireme chunks carry exact offsets; chonkie (``start_index``/``end_index``) and
semantic-text-splitter give offsets, each verified to slice exactly the chunk's text. LangChain and
LlamaIndex give none, so each chunk is searched forward from the end of the previous one (never from 0):
first exactly, then, for text the library altered (LangChain strips every line, drops blank lines and
joins lines with ``"  \\n"``; LlamaIndex rewrites heading lines and strips sections), ignoring whitespace
and non-printable characters, the span running from the first to the last matched character. The
``offsets`` column counts each kind; a chunk that cannot be placed is dropped from the metrics and counted.
The peers are built and placed by ``benchmarks/_peers.py``; a peer that is not installed is reported and
skipped.
Chunk sizes are the lengths of the texts the library returned (what would be embedded).

Gold structure, per document, on that exact text: markdown-it-py (``MarkdownIt("commonmark")
.enable("table")``), token ``.map`` line ranges mapped to character offsets (``\\r\\n``, ``\\r``, ``\\n`` all
end a line, as markdown-it normalises them). A YAML front matter block (``---`` first line to the next
``---``/``...`` line) is blanked before parsing, so its ``key: value`` line over ``---`` is not read as a
setext heading. Spans are trimmed to their first and last non-whitespace character (a list indent is not
"inside"):

* headings (ATX and setext; headings in HTML blocks or comments are not headings) with level and title;
* code blocks (fenced and indented), opening fence line through closing fence line;
* table rows: every line of a pipe table (header, delimiter and body rows);
* the heading path at an offset: the stack of headings that start at or before it (a heading closes every
  open heading of the same or a deeper level).

Titles are compared after normalising both sides alike: a trailing ``{#id}``/``{/*id*/}`` and closing
``#``s removed, links and images reduced to their text, HTML tags, backslash escapes and the emphasis/code
marks ``* _ ~ ` `` removed, whitespace collapsed.

Metrics, over all placed chunks of all documents of a corpus kind. A *cut* is a chunk's start or end; cuts
with only whitespace between them and the start or end of the document do not count.

* ``mid_sent``: share of chunks with a cut inside a sentence. A cut is clean when the whitespace around it
  (from the last non-space character before it to the next one after it) contains a line break, or when
  the last non-space character before it, past any closing brackets/quotes (``」』）)】］〕”’"'``), is
  sentence-final: ``。．！？：`` always, ``. ! ? :`` only when whitespace follows the cut's side (so
  ``server.|host`` is mid-sentence). Inside code blocks and table rows only a line break is clean. This is
  deliberately not kireme's sentence splitter.
* ``mid_wrap``: share of chunks with a cut at a line break inside a sentence of a wrapped paragraph (text
  wrapped at a fixed width, as many Markdown sources are), which ``mid_sent`` counts as clean: one line
  break (no blank line), outside code and tables, the line before neither a heading, a table row nor HTML
  and ending (past closing brackets/quotes) in a letter, a digit or a clause mark (``、，,``), the line
  after starting with a letter or digit in any script or an opening bracket/quote, and not with a list
  number (``1.``).
* ``in_row``: share of chunks with a cut strictly inside a table row line.
* ``in_fence``: share of chunks with a cut strictly inside a code block (anywhere but its first or last
  character); ``in_fence_fit``: the same, counting only code blocks whose whole span fits in N characters
  (a block longer than N has to be cut somewhere).
* ``heading_ok``: share of chunks whose reported heading path equals the gold path every part of the chunk
  shares: the path at its first non-space character (past lines that only open a tag or directive, as
  ``open_end`` reads them: ``<DeepDive>`` above ``#### Title`` wraps that section; past an HTML comment
  right above a heading, the heading's original in a translation), or, for a chunk holding several sections, their
  common path (two sibling sections share their parent's). Peers without heading metadata report an empty path, so their figure is the share of
  chunks whose gold path is empty and is marked ``†`` (no heading metadata).
* ``lonely_head``: share of chunks whose last non-space character lies on a heading line while
  non-space text follows the chunk (a heading separated from its body).
* ``open_end``: share of chunks whose last line with text only opens something while non-space text
  follows the chunk: an opening tag alone on its line (``<Sandpack>``, ``<Note type="x">``, ``<details>``;
  not self-closing, closing or void) or a container directive (``::: tip``), outside code blocks — the
  tag in one chunk, what it opens in the next.
* ``close_start``: share of chunks whose first line with text only closes something while non-space text
  precedes the chunk: a closing tag alone on its line (``</Sandpack>``, ``</details>``) or a bare ``:::``,
  outside code blocks — what it closes in one chunk, the tag at the start of the next.
* ``comment_end``: share of chunks that end with an HTML comment (``<!-- … -->``, outside code) while
  non-space text follows the chunk: translated documentation keeps the original of each paragraph or
  heading in a comment right above its translation (rust-book-ja), so the original in one chunk, its
  translation in the next.
* ``lead_end``: share of chunks whose last line with text introduces what follows — it ends with a colon
  (``:`` or ``：``: ``次のようになります：``, ``as follows:``) and is not a heading, table row or tag
  line, outside code — while non-space text follows the chunk; or it labels the code block or table that
  starts the next chunk (a line of at most 40 characters once its inline tags are left out, not a list
  item, with no sentence or clause mark at its end, the next chunk opening with a fence, a table row or an
  opening tag: mdBook's ``<span class="filename">ファイル名: src/main.rs</span>``):
  the lead-in in one chunk, the list, code or table it introduces in the next.
* ``small``: share of chunks under a quarter of N (fragments: a vector few questions find);
  ``small_code``: the same, counting only pieces of a code block longer than N (the ``}`` and ``);`` left
  over when a large block is filled piece by piece).
* ``chunks``, mean and max size (characters), ``>N`` (share of chunks over N), ``s`` (seconds spent in the
  chunker itself, placing and scoring excluded).

    .venv-bench/bin/python benchmarks/structure_quality.py --markdown
    .venv-bench/bin/python benchmarks/structure_quality.py --limit 20 --sizes 400 800
"""

from __future__ import annotations

import argparse
import bisect
import json
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from _corpora import RESULTS, add_corpora_argument, corpora_present, corpus_path  # noqa: E402
from _peers import (  # noqa: E402
    Peer,
    Placement,
    Placer,
    chonkie_peer,
    langchain_peer,
    llamaindex_peer,
    split_installed,
    text_splitter_peer,
    versions,
)
from _report import print_table  # noqa: E402
from kireme.document import Document  # noqa: E402
from kireme.load import load  # noqa: E402
from kireme.strategies import STRATEGIES, make_chunker  # noqa: E402

KINDS = ("markdown", "html", "notebooks")
SKIP_NAMES = re.compile(r"^(LICENSE|COPYRIGHT|SOURCE\.md$)", re.IGNORECASE)
NOTEBOOK_LANG = {"tensorflow-docs-ja": "ja", "langchain-docs": "en"}

# ------------------------------------------------------------------------------------------- documents


@dataclass
class Source:
    kind: str  # "markdown" | "html" | "notebooks"
    name: str  # the source folder, e.g. "rust-book-ja"
    lang: str
    documents: list[Document]


def _render_notebook(data: bytes, id: str) -> Document:
    """The fallback rendering (same rules as kireme's loader, no outputs) when it does not exist yet."""
    nb = json.loads(data.decode("utf-8-sig"))
    cells = nb.get("cells") or (nb.get("worksheets") or [{}])[0].get("cells", [])
    pieces = []
    for cell in cells:
        src = cell.get("source", cell.get("input", ""))
        src = "".join(src) if isinstance(src, list) else str(src)
        src = src.rstrip()
        if not src.strip():
            continue
        if cell.get("cell_type") == "code":
            longest = max((len(m) for m in re.findall(r"`{3,}", src)), default=0)
            fence = "`" * max(3, longest + 1)
            src = f"{fence}python\n{src}\n{fence}"
        pieces.append(src)
    text = "\n\n".join(pieces) + ("\n" if pieces else "")
    return Document(text=text, id=id, metadata={"source": id, "format": "ipynb"})


def notebook_loader() -> tuple[Callable[[bytes, str], Document], str]:
    try:
        from kireme.load.notebook import load_notebook
    except ImportError:
        return _render_notebook, "benchmark's own rendering (kireme.load.notebook absent)"
    return load_notebook, "kireme.load.notebook.load_notebook (outputs='none')"


def load_sources(root: Path, limit: int | None) -> tuple[list[Source], str]:
    sources: list[Source] = []
    md_root = corpus_path(root, "ja-techdocs-md")
    if md_root is not None:
        for folder in sorted(p for p in md_root.iterdir() if p.is_dir()):
            found = (p for p in folder.rglob("*.md") if p.is_file() and not SKIP_NAMES.match(p.name))
            paths = sorted(found)[:limit]
            docs = [load(p) for p in paths]
            sources.append(Source("markdown", folder.name, "ja", docs))
    html_root = corpus_path(root, "ja-techdocs-html")
    if html_root is not None:
        for folder in sorted(p for p in html_root.iterdir() if p.is_dir()):
            paths = sorted(p for p in folder.rglob("*.html") if p.is_file())[:limit]
            docs = [load(p) for p in paths]
            sources.append(Source("html", folder.name, "ja", [d for d in docs if d.text.strip()]))
    nb_root = corpus_path(root, "notebooks")
    render, how = notebook_loader()
    if nb_root is not None:
        for folder in sorted(p for p in nb_root.iterdir() if p.is_dir()):
            paths = sorted(p for p in folder.rglob("*.ipynb") if p.is_file())[:limit]
            docs = [render(p.read_bytes(), p.relative_to(nb_root).as_posix()) for p in paths]
            sources.append(Source("notebooks", folder.name, NOTEBOOK_LANG.get(folder.name, "en"), docs))
    return sources, how


# ------------------------------------------------------------------------------------------------ gold

_LINE_END = re.compile(r"\r\n|\r|\n")
_FRONT_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$")


def _lines(text: str) -> list[tuple[int, int]]:
    """(start, end-without-line-break) of every line, splitting like markdown-it does."""
    out, pos = [], 0
    for m in _LINE_END.finditer(text):
        out.append((pos, m.start()))
        pos = m.end()
    out.append((pos, len(text)))
    return out


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


_ATTR = re.compile(r"\s*\{[#/][^{}]*\}\s*$")  # {#id}, {/*id*/} (or {/id/} once emphasis is gone)
_CLOSING_HASHES = re.compile(r"\s+#+\s*$")
_IMAGE_LINK = re.compile(r"!?\[([^\]]*)\](?:\([^)]*\)|\[[^\]]*\])")
_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_ESCAPE = re.compile(r"\\(.)")


def norm_title(title: str) -> str:
    t = _CLOSING_HASHES.sub("", title.strip())
    t = _IMAGE_LINK.sub(r"\1", t)
    t = _TAG.sub("", t)
    t = _ESCAPE.sub(r"\1", t)
    t = re.sub(r"[*_~`]", "", t)
    t = _ATTR.sub("", t)
    return " ".join(t.split())


def norm_path(path: Iterable[str]) -> tuple[str, ...]:
    return tuple(norm_title(t) for t in path)


@dataclass
class Gold:
    text: str
    headings: list[tuple[int, int, int, str]]  # start, end, level, normalised title
    code: list[tuple[int, int]]
    rows: list[tuple[int, int]]
    heading_starts: list[int] = field(default_factory=list)
    heading_paths: list[tuple[str, ...]] = field(default_factory=list)
    code_starts: list[int] = field(default_factory=list)
    row_starts: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        stack: list[tuple[int, str]] = []
        for start, _, level, title in self.headings:
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            self.heading_starts.append(start)
            self.heading_paths.append(tuple(t for _, t in stack))
        self.code_starts = [s for s, _ in self.code]
        self.row_starts = [s for s, _ in self.rows]

    def path_at(self, position: int) -> tuple[str, ...]:
        i = bisect.bisect_right(self.heading_starts, position) - 1
        return self.heading_paths[i] if i >= 0 else ()

    def path_of(self, start: int, end: int) -> tuple[str, ...]:
        """The path every part of ``[start, end)`` shares: the path at ``start``, cut back to what the
        headings inside the span have in common with it (two sibling sections share their parent's)."""
        path = self.path_at(start)
        lo = bisect.bisect_right(self.heading_starts, start)
        hi = bisect.bisect_left(self.heading_starts, end)
        for inner in self.heading_paths[lo:hi]:
            k = 0
            while k < min(len(path), len(inner)) and path[k] == inner[k]:
                k += 1
            path = path[:k]
        return path

    @staticmethod
    def _inside(spans: list[tuple[int, int]], starts: list[int], c: int) -> tuple[int, int] | None:
        i = bisect.bisect_left(starts, c) - 1  # the last span starting strictly before c
        if i >= 0 and c < spans[i][1]:
            return spans[i]
        return None

    def in_code(self, c: int) -> tuple[int, int] | None:
        return self._inside(self.code, self.code_starts, c)

    def in_row(self, c: int) -> tuple[int, int] | None:
        return self._inside(self.rows, self.row_starts, c)

    def on_heading(self, position: int) -> bool:
        i = bisect.bisect_right(self.heading_starts, position) - 1
        return i >= 0 and position < self.headings[i][1]


_MD = None


def _parser():
    global _MD
    if _MD is None:
        from markdown_it import MarkdownIt

        _MD = MarkdownIt("commonmark").enable("table")
    return _MD


def gold_structure(text: str) -> Gold:
    lines = _lines(text)
    # Blank a YAML front matter block (keeping the line count) so markdown-it does not see a setext heading.
    parse_lines = [text[s:e] for s, e in lines]
    if parse_lines and parse_lines[0].rstrip() == "---":
        for j in range(1, min(len(parse_lines), 200)):
            if _FRONT_CLOSE.match(parse_lines[j]):
                for k in range(j + 1):
                    parse_lines[k] = ""
                break
    tokens = _parser().parse("\n".join(parse_lines))

    def span(first: int, last: int) -> tuple[int, int]:
        last = min(last, len(lines)) - 1
        return _trim(text, lines[first][0], lines[last][1])

    headings, code, rows = [], [], []
    for i, tok in enumerate(tokens):
        if tok.map is None:
            continue
        if tok.type == "heading_open":
            s, e = span(*tok.map)
            inline = tokens[i + 1]
            headings.append((s, e, int(tok.tag[1]), norm_title(inline.content)))
        elif tok.type in ("fence", "code_block"):
            code.append(span(*tok.map))
        elif tok.type == "table_open":
            first, last = tok.map
            for line in range(first, min(last, len(lines))):
                s, e = _trim(text, *lines[line])
                if e > s:
                    rows.append((s, e))
    return Gold(text, headings, sorted(code), sorted(rows))


# ---------------------------------------------------------------------------------------------- scoring

FULL_STOPS = set("。．！？：")
ASCII_STOPS = set(".!?:")
CLOSERS = set("」』）)】］〕”’\"'")


def _gap(text: str, c: int) -> tuple[int, int]:
    """The whitespace around a cut at ``c``: from the last non-space character before it to the next."""
    a = c
    while a > 0 and text[a - 1].isspace():
        a -= 1
    b = c
    while b < len(text) and text[b].isspace():
        b += 1
    return a, b


def clean_cut(gold: Gold, c: int) -> bool:
    """Whether a cut at ``c`` falls between sentences (or lines); see the module docstring."""
    text = gold.text
    a, b = _gap(text, c)
    if a == 0 or b == len(text):
        return True
    if "\n" in text[a:b] or "\r" in text[a:b]:
        return True
    if gold.in_code(c) or gold.in_row(c):
        return False
    k = a
    while k > 0 and text[k - 1] in CLOSERS:
        k -= 1
    if k == 0:
        return False
    ch = text[k - 1]
    if ch in FULL_STOPS:
        return True
    return ch in ASCII_STOPS and a < b


_LIST_NUMBER = re.compile(r"[0-9]+[.)]\s")


def wrapped_cut(gold: Gold, c: int) -> bool:
    """Whether a cut at ``c`` is at a line break inside a sentence of a wrapped paragraph (``mid_wrap``)."""
    text = gold.text
    a, b = _gap(text, c)
    if a == 0 or b == len(text) or text.count("\n", a, b) != 1 or gold.in_code(c) or gold.in_row(c):
        return False
    line = text[text.rfind("\n", 0, a) + 1 : a].strip()
    if not line or line[0] in "#|<":
        return False
    k = len(line)
    while k > 0 and line[k - 1] in CLOSERS:
        k -= 1
    if k == 0 or not (line[k - 1].isalnum() or line[k - 1] in "、，,"):
        return False
    first = text[b]
    return (first.isalnum() or first in "「『（(“\"'") and _LIST_NUMBER.match(text, b) is None


def edge_cut(text: str, c: int) -> bool:
    """A cut with only whitespace between it and the document's start or end: not counted."""
    return not text[:c].strip() or not text[c:].strip()


SUMMED = (
    "chunks",
    "chars",
    "over",
    "mid_sentence",
    "mid_wrap",
    "in_row",
    "in_fence",
    "in_fence_fit",
    "heading_ok",
    "lonely_heading",
    "open_end",
    "close_start",
    "comment_end",
    "lead_end",
    "small",
    "small_code",
    "seconds",
)


@dataclass
class Tally:
    chunks: int = 0
    chars: int = 0
    max_chars: int = 0
    over: int = 0
    mid_sentence: int = 0
    mid_wrap: int = 0
    in_row: int = 0
    in_fence: int = 0
    in_fence_fit: int = 0
    heading_ok: int = 0
    lonely_heading: int = 0
    open_end: int = 0
    close_start: int = 0
    comment_end: int = 0
    lead_end: int = 0
    small: int = 0
    small_code: int = 0
    seconds: float = 0.0
    placement: Placement = field(default_factory=Placement)  # how the chunks were put back into the text
    has_headings: bool = True
    notes: set[str] = field(default_factory=set)
    examples: dict[str, list[Any]] = field(default_factory=dict)

    def add(self, other: Tally) -> None:
        for name in SUMMED:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.placement.add(other.placement)
        self.max_chars = max(self.max_chars, other.max_chars)
        self.has_headings = self.has_headings and other.has_headings
        self.notes |= other.notes

    def row(self, size: int) -> dict[str, Any]:
        n = max(self.chunks, 1)
        p = self.placement
        offsets = ", ".join(
            f"{v} {k}" for k, v in (("exact", p.exact), ("found", p.found), ("fuzzy", p.fuzzy)) if v
        )
        return {
            "chunks": self.chunks,
            "mean_chars": self.chars / n,
            "max_chars": self.max_chars,
            "over_n": self.over / n,
            "mid_sentence": self.mid_sentence / n,
            "mid_wrap": self.mid_wrap / n,
            "in_row": self.in_row / n,
            "in_fence": self.in_fence / n,
            "in_fence_fit": self.in_fence_fit / n,
            "heading_ok": self.heading_ok / n,
            "heading_metadata": self.has_headings,
            "lonely_heading": self.lonely_heading / n,
            "open_end": self.open_end / n,
            "close_start": self.close_start / n,
            "comment_end": self.comment_end / n,
            "lead_end": self.lead_end / n,
            "small": self.small / n,
            "small_code": self.small_code / n,
            "seconds": self.seconds,
            "offsets": offsets + (f", {p.dropped} dropped" if p.dropped else ""),
            "placed": {"exact": p.exact, "found": p.found, "fuzzy": p.fuzzy, "dropped": p.dropped},
            "notes": sorted(self.notes),
            "size": size,
        }


@dataclass
class Piece:
    """One chunk as a library returned it, placed in the document."""

    start: int
    end: int
    size: int  # len of the library's own text
    headings: tuple[str, ...] | None  # None: the library reports no heading path


# A line that only opens something (``open_end``): an opening tag that is not self-closing, closing or a void
# element, or a container directive's opening fence
_OPENING_LINE = re.compile(
    r"[ \t]*(?:<(?!(?:br|hr|img|input|meta|link|source|wbr)\b)[A-Za-z][\w.:-]*(?:\s[^<>\n]*)?(?<!/)>"
    r"|:{3,}[ \t]*[A-Za-z].*)[ \t]*",
    re.I,
)


# A line that only closes something (``close_start``): a closing tag alone on it, or a bare ``:::``.
_CLOSING_LINE = re.compile(r"[ \t]*(?:</[A-Za-z][\w.:-]*[ \t]*>|:{3,})[ \t]*")


def _is_lead_in(line: str) -> bool:
    """Whether a chunk's last line introduces what follows (``lead_end``): it ends with a colon and is not a
    table row, tag, list-item marker alone or heading line (the caller rules out headings by the gold)."""
    line = line.strip()
    return line.endswith((":", "：")) and not line.startswith(("|", "<", "#", ":::")) and len(line) > 1


_INLINE_TAG = re.compile(r"</?[A-Za-z][^<>\n]*>")
_SENTENCE_OR_CLAUSE_END = "。．.！？!?、，,：:；;…"
# a list item, heading, quote or table row: not a label
_LIST_OR_BLOCK = re.compile(r"(?:[-*+>#|]|[0-9]+[.)])")
# what a label names: a code fence, a table row or an opening tag (not a comment)
_CODE_TABLE_OR_TAG = re.compile(r"```|~~~|\||<[A-Za-z]")


def _labels(line: str, text: str, end: int) -> bool:
    """Whether a chunk's last line labels the code block or table that starts the next chunk (``lead_end``):
    without its inline tags at most 40 characters, not a list item, no sentence or clause mark at its end,
    and what follows the chunk opens with a fence, a table row or an opening tag (not a comment)."""
    label = _INLINE_TAG.sub("", line).strip()
    if not label or len(label) > 40 or label[-1] in _SENTENCE_OR_CLAUSE_END or _LIST_OR_BLOCK.match(label):
        return False
    after = end
    while after < len(text) and text[after].isspace():
        after += 1
    if line.lstrip().startswith("<") and text.startswith("<", after):
        return False  # raw HTML, a cell after a cell: no label
    return _CODE_TABLE_OR_TAG.match(text, after) is not None


def score(gold: Gold, pieces: Sequence[Piece], size: int, tally: Tally, keep: int = 0) -> None:
    text = gold.text
    for p in pieces:
        tally.chunks += 1
        tally.chars += p.size
        tally.max_chars = max(tally.max_chars, p.size)
        tally.over += p.size > size
        if p.size * 4 < size:
            tally.small += 1
            inside = [gold.in_code(c) for c in range(p.start, p.end) if not text[c].isspace()]
            if any(block is not None and block[1] - block[0] > size for block in inside):
                tally.small_code += 1
        cuts = [c for c in (p.start, p.end) if not edge_cut(text, c)]
        bad = [c for c in cuts if not clean_cut(gold, c)]
        wrapped = [c for c in cuts if wrapped_cut(gold, c)]
        if wrapped:
            tally.mid_wrap += 1
            if keep and len(tally.examples.setdefault("mid_wrap", [])) < keep:
                c = wrapped[0]
                tally.examples["mid_wrap"].append(text[max(0, c - 30) : c] + "‖" + text[c : c + 30])
        if bad:
            tally.mid_sentence += 1
            if keep and len(tally.examples.setdefault("mid_sentence", [])) < keep:
                c = bad[0]
                tally.examples["mid_sentence"].append(text[max(0, c - 30) : c] + "‖" + text[c : c + 30])
        if any(gold.in_row(c) for c in cuts):
            tally.in_row += 1
        fences = [f for f in (gold.in_code(c) for c in cuts) if f]
        if fences:
            tally.in_fence += 1
            if any(e - s <= size for s, e in fences):
                tally.in_fence_fit += 1
                if keep and len(tally.examples.setdefault("in_fence_fit", [])) < keep:
                    c = next(c for c in cuts if gold.in_code(c))
                    tally.examples["in_fence_fit"].append(text[max(0, c - 30) : c] + "‖" + text[c : c + 30])
        first = p.start
        while first < p.end and text[first].isspace():
            first += 1
        while first < p.end:  # a line that only opens a tag or directive is not the chunk's content
            line_end = text.find("\n", first, p.end)
            if line_end < 0 or _OPENING_LINE.fullmatch(text, first, line_end) is None:
                break
            first = line_end
            while first < p.end and text[first].isspace():
                first += 1
        # nor comments right above a heading (translated documentation keeps the heading's original in one)
        after = first
        while text.startswith("<!--", after, p.end) and (close := text.find("-->", after, p.end)) >= 0:
            after = close + 3
            while after < p.end and text[after].isspace():
                after += 1
        if after > first and after < p.end and gold.on_heading(after):
            first = after
        want = gold.path_of(first, p.end)
        got = norm_path(p.headings) if p.headings is not None else ()
        if got == want:
            tally.heading_ok += 1
        elif keep and len(tally.examples.setdefault("heading", [])) < keep:
            tally.examples["heading"].append({"want": want, "got": got, "at": text[first : first + 40]})
        ink = p.start
        while ink < p.end and text[ink].isspace():
            ink += 1
        if ink < p.end and text[: p.start].strip() and gold.in_code(ink) is None:
            line_end = text.find("\n", ink, p.end)
            if _CLOSING_LINE.fullmatch(text, ink, p.end if line_end < 0 else line_end) is not None:
                tally.close_start += 1
                if keep and len(tally.examples.setdefault("close_start", [])) < keep:
                    tally.examples["close_start"].append(text[max(0, p.start - 40) : p.start + 30])
        last = p.end
        while last > p.start and text[last - 1].isspace():
            last -= 1
        if last > p.start and gold.on_heading(last - 1) and text[p.end :].strip():
            tally.lonely_heading += 1
        if last > p.start and text[p.end :].strip() and gold.in_code(last - 1) is None:
            if text.endswith("-->", p.start, last):
                opened = text.rfind("<!--", p.start, last)
                if opened < 0 or text.find("-->", opened, last - 3) < 0:  # one comment up to the end
                    tally.comment_end += 1
            line = text[text.rfind("\n", 0, last) + 1 : last]
            if (_is_lead_in(line) or _labels(line, text, p.end)) and not gold.on_heading(last - 1):
                tally.lead_end += 1
                if keep and len(tally.examples.setdefault("lead_end", [])) < keep:
                    tally.examples["lead_end"].append(
                        text[max(p.start, last - 60) : last] + "‖" + text[p.end : p.end + 30]
                    )
            if _OPENING_LINE.fullmatch(line) is not None:
                tally.open_end += 1
                if keep and len(tally.examples.setdefault("open_end", [])) < keep:
                    tally.examples["open_end"].append(text[max(p.start, last - 60) : last])


# ------------------------------------------------------------------------------------------ configurations


@dataclass
class Config:
    label: str
    run: Callable[[Document, Source, Tally], list[Piece]]
    notes: list[str] = field(default_factory=list)


def _kireme(strategy: str, size: int, label: str) -> Config:
    chunker = make_chunker(strategy, max_size=size, unit="chars")

    def run(doc: Document, source: Source, tally: Tally) -> list[Piece]:
        t0 = time.perf_counter()
        chunks = chunker.chunk(doc)
        tally.seconds += time.perf_counter() - t0
        resolved = getattr(chunker, "for_document", None)
        if resolved is not None:
            preset = getattr(resolved(doc), "preset", None)
            if preset is not None:
                tally.notes.add(f"preset={preset}")
        out = []
        for c in chunks:
            assert doc.text[c.start : c.end] == c.text, (label, doc.id, c.start, c.end)
            tally.placement.exact += 1
            out.append(Piece(c.start, c.end, len(c.text), tuple(c.headings)))
        return out

    return Config(label, run)


def kireme_configs(size: int) -> list[Config]:
    out = []
    if "markdown" in STRATEGIES:
        out.append(_kireme("markdown", size, "kireme markdown"))
    else:
        cfg = _kireme("recursive", size, "kireme markdown→recursive")
        cfg.notes.append("strategy 'markdown' not registered yet: recursive stands in")
        out.append(cfg)
    out.append(_kireme("recursive", size, "kireme recursive"))
    # the strategies that read a Markdown file's tables and code only to keep rows, blocks and lines whole
    out.append(_kireme("sentence", size, "kireme sentence"))
    out.append(_kireme("paragraph", size, "kireme paragraph"))
    return out


# label -> (peer library, factory of its splitter at ``size`` characters for a corpus language)
PEERS: dict[str, tuple[str, Callable[[int, str], Peer]]] = {
    "LangChain MarkdownHeader+Recursive(md)": (
        "langchain",
        lambda size, lang: langchain_peer("markdown", size),
    ),
    "LlamaIndex MarkdownNode+Sentence": ("llama-index", lambda size, lang: llamaindex_peer("markdown", size)),
    "chonkie Recursive": ("chonkie", lambda size, lang: chonkie_peer("recursive", size, recipe_lang=lang)),
    "text-splitter MarkdownSplitter": (
        "semantic-text-splitter",
        lambda size, lang: text_splitter_peer(size, markdown=True),
    ),
}


def _peer(label: str, size: int) -> Config:
    """A peer as a configuration: its splitter built once per corpus language (outside the timing), the
    call timed, its chunks placed by `_peers.Placer` (own offsets verified, else searched, whitespace
    ignored when the library rewrote it)."""
    factory = PEERS[label][1]
    built: dict[str, tuple[Peer, Callable[[str], Any]]] = {}

    def run(doc: Document, source: Source, tally: Tally) -> list[Piece]:
        if source.lang not in built:
            peer = factory(size, source.lang)
            built[source.lang] = (peer, peer.make())
        peer, call = built[source.lang]
        t0 = time.perf_counter()
        result = call(doc.text)
        tally.seconds += time.perf_counter() - t0
        tally.notes.update(peer.notes)
        placer = Placer(doc.text, tally.placement, fuzzy=True)
        out = []
        for p in peer.pieces(result):
            span = placer.place(p.text, p.start, p.end)
            if span:
                out.append(Piece(*span, len(p.text), p.headings))
        return out

    return Config(label, run)


def peer_configs(size: int) -> tuple[list[Config], list[str]]:
    """The installed peers' configurations, and the missing peer libraries (reported on stderr)."""
    _, missing = split_installed(dict.fromkeys(library for library, _ in PEERS.values()))
    return [_peer(label, size) for label, (library, _) in PEERS.items() if library not in missing], missing


# ---------------------------------------------------------------------------------------------- output


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


HEADER = [
    "config",
    "chunks",
    "mean",
    "max",
    ">N %",
    "mid_sent %",
    "mid_wrap %",
    "in_row %",
    "in_fence %",
    "in_fence_fit %",
    "heading_ok %",
    "lonely_head %",
    "open_end %",
    "close_start %",
    "comment_end %",
    "lead_end %",
    "small %",
    "small_code %",
    "s",
    "offsets",
]


def _cells(r: dict[str, Any]) -> list[str]:
    return [
        r["config"],
        str(r["chunks"]),
        f"{r['mean_chars']:.0f}",
        str(r["max_chars"]),
        _pct(r["over_n"]),
        _pct(r["mid_sentence"]),
        _pct(r["mid_wrap"]),
        _pct(r["in_row"]),
        _pct(r["in_fence"]),
        _pct(r["in_fence_fit"]),
        _pct(r["heading_ok"]) + ("" if r["heading_metadata"] else " †"),
        _pct(r["lonely_heading"]),
        _pct(r["open_end"]),
        _pct(r.get("close_start", 0.0)),
        _pct(r.get("comment_end", 0.0)),
        _pct(r.get("lead_end", 0.0)),
        _pct(r.get("small", 0.0)),
        _pct(r.get("small_code", 0.0)),
        f"{r['seconds']:.1f}",
        r["offsets"],
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_corpora_argument(ap)
    ap.add_argument("--sizes", nargs="+", type=int, default=[800], help="chunk sizes in characters")
    ap.add_argument("--limit", type=int, default=None, help="first N documents of each source folder (all)")
    ap.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    ap.add_argument("--configs", nargs="+", default=None, help="only labels containing one of these")
    ap.add_argument("--examples", type=int, default=0, help="keep N failure examples per config in the JSON")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args()
    if not corpora_present(args.corpora, "the structure benchmark"):
        return 0
    try:
        import markdown_it  # noqa: F401
    except ImportError:
        print("markdown-it-py is needed for the gold structure: pip install markdown-it-py", file=sys.stderr)
        return 1
    sources, rendering = load_sources(args.corpora, args.limit)
    sources = [s for s in sources if s.kind in args.kinds and s.documents]
    if not sources:
        print(f"no Markdown or notebook corpora under {args.corpora}: nothing to measure", file=sys.stderr)
        return 0
    started = time.perf_counter()
    golds = {(s.name, d.id): gold_structure(d.text) for s in sources for d in s.documents}
    _, missing = peer_configs(args.sizes[0])
    peers = [library for library, _ in PEERS.values() if library not in missing]
    info: dict[str, Any] = {
        "sizes": args.sizes,
        "limit": args.limit,
        "notebook_rendering": rendering,
        "kireme_strategies": list(STRATEGIES),
        "versions": versions("markdown-it-py", peers=peers),
        "missing_peers": missing,
        "gold_seconds": time.perf_counter() - started,
    }
    print(f"# {json.dumps(info, ensure_ascii=False)}", file=sys.stderr)
    results: dict[str, Any] = {"info": info, "corpora": {}, "tables": {}}
    for kind in KINDS:
        kind_sources = [s for s in sources if s.kind == kind]
        if not kind_sources:
            continue
        block: dict[str, Any] = {"sources": {}}
        for s in kind_sources:
            g = [golds[(s.name, d.id)] for d in s.documents]
            block["sources"][s.name] = {
                "documents": len(s.documents),
                "chars": sum(len(d.text) for d in s.documents),
                "headings": sum(len(x.headings) for x in g),
                "code_blocks": sum(len(x.code) for x in g),
                "table_rows": sum(len(x.rows) for x in g),
            }
        results["corpora"][kind] = block
        print(f"# {kind}: {json.dumps(block['sources'], ensure_ascii=False)}", file=sys.stderr)

    for size in args.sizes:
        peer_list = [_peer(label, size) for label, (library, _) in PEERS.items() if library not in missing]
        configs = kireme_configs(size) + peer_list
        if args.configs:
            configs = [c for c in configs if any(w in c.label for w in args.configs)]
        for kind in KINDS:
            kind_sources = [s for s in sources if s.kind == kind]
            if not kind_sources:
                continue
            rows = []
            for cfg in configs:
                total = Tally()
                per_source = {}
                for s in kind_sources:
                    tally = Tally(notes=set(cfg.notes))
                    for doc in s.documents:
                        pieces = cfg.run(doc, s, tally)
                        if pieces and pieces[0].headings is None:
                            tally.has_headings = False
                        score(golds[(s.name, doc.id)], pieces, size, tally, args.examples)
                    per_source[s.name] = tally.row(size) | {"examples": tally.examples}
                    total.add(tally)
                row = {"config": cfg.label, **total.row(size), "per_source": per_source}
                rows.append(row)
                print(
                    f"#   {kind:9} {size:5} {cfg.label:40} chunks={row['chunks']:6} "
                    f"mid={_pct(row['mid_sentence'])}% fence={_pct(row['in_fence'])}% "
                    f"head={_pct(row['heading_ok'])}% {row['seconds']:.1f}s",
                    file=sys.stderr,
                )
            results["tables"][f"{kind}-{size}"] = rows

    elapsed = time.perf_counter() - started
    info["seconds"] = elapsed
    for key, rows in results["tables"].items():
        kind, size = key.rsplit("-", 1)
        src = results["corpora"][kind]["sources"]
        title = (
            f"{kind}, {size} chars: {sum(v['documents'] for v in src.values())} documents "
            f"({', '.join(src)}), {sum(v['chars'] for v in src.values()):,} chars, "
            f"{sum(v['headings'] for v in src.values())} headings, "
            f"{sum(v['code_blocks'] for v in src.values())} code blocks, "
            f"{sum(v['table_rows'] for v in src.values())} table rows"
        )
        print_table(title, HEADER, [_cells(r) for r in rows], args.markdown)
        notes = {r["config"]: r["notes"] for r in rows if r["notes"]}
        if notes:
            print("\n" + "; ".join(f"{k}: {', '.join(v)}" for k, v in notes.items()))
    print("\n† no heading metadata: the share of chunks whose gold heading path is empty.")
    print(f"versions: {info['versions']}; missing peers: {missing or 'none'}; {elapsed:.0f}s")
    if not args.no_save:
        RESULTS.mkdir(parents=True, exist_ok=True)
        out = RESULTS / f"structure-{time.strftime('%Y%m%d-%H%M%S')}.json"
        out.write_text(json.dumps(results, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
        print(f"saved {out.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
