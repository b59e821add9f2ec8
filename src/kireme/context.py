"""The context put in front of a chunk for embedding: document title and heading path.

A chunk cut from the middle of a manual ("上限は1泊12,000円とする。") is ambiguous alone; with
"旅費規程 / 第3条 宿泊費" in front it is not. The context goes into `Chunk.embed_text` only: ``text`` and
its offsets never change. Nothing is said twice: a heading whose line the chunk holds (even one it starts
inside, after the indentation of ``   #### 第3条``) is not in the path in front of it, a path that starts
with the title does not say the title again (nor the title a deeper heading of the path that is the
title), and a chunk that holds the title's own heading line, or opens with a line that is the title
(plain text whose first line names it), gets no title in front.
Names are compared after NFKC normalisation, case folding and whitespace collapsing.
"""

from __future__ import annotations

import bisect
import re
import sys
import unicodedata
from collections.abc import Callable, Sequence

from kireme.errors import ConfigError
from kireme.text.markdown import Heading, HeadingPaths

CONTEXT_MODES = ("none", "title", "headings")
# the marks of an ATX heading line: "## 第2章 ##" names "第2章"
_ATX_MARKS = re.compile(r"^#{1,6}(?=\s|$)|\s+#+$")
# a printable ASCII character: where a line's key may be cut without changing what comes before it
_ASCII_GRAPHIC = re.compile(r"[!-~]")


def check_context_mode(mode: str) -> str:
    if mode not in CONTEXT_MODES:
        raise ConfigError(f"unknown context {mode!r}: choose one of {', '.join(CONTEXT_MODES)}")
    return mode


def _key(name: str) -> str:
    """A title or heading as compared: ``"ＦＡＱ"`` and ``" faq "`` say the same thing."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


class ContextBuilder:
    """Builds the prefix for any chunk of one document, and how much of the size budget it can take.

    ``limit`` caps the prefix size (in the chunker's measure): a deep heading path in a small chunk
    keeps its nearest headings and drops the outer ones (then the title) rather than crowd out the text.
    ``text`` is the document's text (``""``: not known, a chunk's first line is not compared).
    """

    def __init__(
        self,
        mode: str,
        title: str,
        paths: HeadingPaths | None,
        size: Callable[[str], int],
        limit: int,
        text: str = "",
    ) -> None:
        self.mode = check_context_mode(mode)
        self.title = " ".join(title.split()) if mode != "none" else ""
        self._title_key = _key(self.title)
        self.paths = paths if mode == "headings" else None
        self.size = size
        self.limit = limit
        self.text = text
        # a document's chunks share a few heading chains: each name compared, each prefix fitted, once
        self._keys: dict[str, str] = {}
        self._fitted: dict[tuple[tuple[str, ...], tuple[bool, ...], int], str] = {}
        self._prefixes: dict[tuple[int, int | None], str] = {}
        # the names of the headings above a chunk (keyed by the id of their chain, which `paths` keeps
        # alive, and whether its last heading counts) and whether one of them says the title
        self._above: dict[tuple[int, bool], tuple[list[str], bool]] = {}
        self._sizes: dict[str, int] = {}
        self._title_starts: list[int] | None = None  # where the headings that say the title start
        self._largest: dict[int, int] = {}  # `largest` under each chain (by its id, as `_above`)
        self._opens: dict[tuple[int, int], bool] = {}  # `_opens_with_title` of each first line

    def measured(self, prefix: str) -> int:
        """``size`` of a prefix, each one measured once (a document's chunks share a few)."""
        known = self._sizes.get(prefix)
        if known is None:
            known = self._sizes[prefix] = self.size(prefix)
        return known

    def _may_say_title(self, line: str) -> bool:
        """Whether ``line`` is short enough to say the title (`_key` equal): its whitespace runs aside, each
        character of the title's key comes from at most four of the line's (a canonical composition
        joins at most four characters into one; an ASCII line's at most one, as NFKC leaves ASCII alone and its
        case folding is one character for one). Spares normalising a long first line."""
        if not self._key_may_start(line):  # most lines differ from the title in their first words
            return False
        # an ASCII line's key is its words lower-cased (NFKC leaves ASCII as it is): no longer than the title's
        limit = len(self._title_key) if line.isascii() else 4 * len(self._title_key) + 4
        if len(line) <= limit:
            return True
        # collapsing a prefix never gives more than collapsing the whole line: a long line is turned down
        # after reading twice the limit, not all of it (a paragraph of prose is every "first line" of its chunks)
        head = line[: 2 * limit + 2]
        return len(" ".join(head.split())) <= limit and len(" ".join(line.split())) <= limit

    def _key_may_start(self, line: str) -> bool:
        """Whether the title's key may start with the key of ``line``'s first characters, up to the first
        printable ASCII character from the 16th on: a line that does not open with the title's first words
        is turned down after normalising a few words, not all of it (a long title lets many lines through
        the length test).

        Sound because a printable ASCII character splits normalisation: no canonical composition takes an
        ASCII character as its second part, so NFKC of ``a + b`` is NFKC of ``a`` then of ``b`` when ``b``
        starts with one (checked over every code point in the tests); case folding is one character at a
        time; and collapsing whitespace keeps the key of ``a`` as the start of the key of ``a + b``."""
        found = _ASCII_GRAPHIC.search(line, 16)
        if found is None:
            return True
        return self._title_key.startswith(_key(line[: found.start()]))

    def _is_title(self, name: str) -> bool:
        """Whether ``name`` says the title (`_key` equal), remembered per name."""
        key = self._keys.get(name)
        if key is None:
            key = self._keys[name] = _key(name)
        return key == self._title_key

    def _names(self, chain: tuple[Heading, ...]) -> list[str]:
        names = [h.title.strip() for h in chain if h.title.strip()]
        if names and self.title and self._is_title(names[0]):
            names = names[1:]
        return names

    def _render(self, names: list[str], title: bool) -> str:
        parts = []
        if title and self.title:
            parts.append(self.title)
        if names:
            parts.append(" > ".join(names))
        return "\n".join(parts) + "\n\n" if parts else ""

    def _fit(
        self, names: list[str], titles: tuple[bool, ...] = (True, False), limit: int | None = None
    ) -> str:
        """The fullest prefix within ``limit`` (default: the builder's): outer headings go first, then the
        title; the deepest heading (the most specific words about the chunk) goes last. Each answer is
        kept."""
        limit = self.limit if limit is None else limit
        key = (tuple(names), titles, limit)
        fitted = self._fitted.get(key)
        if fitted is None:
            fitted = self._fitted[key] = self._fit_now(names, titles, limit)
        return fitted

    def _fit_now(self, names: list[str], titles: tuple[bool, ...], limit: int) -> str:
        order = [(title, drop) for title in titles for drop in range(len(names))]
        order += [(title, len(names)) for title in titles]
        for title, drop in order:
            prefix = self._render(names[drop:], title)
            if not prefix or self.measured(prefix) <= limit:
                return prefix
        return ""

    def prefix(self, start: int, end: int | None = None) -> str:
        """The context of a chunk ``[start, end)``: the headings whose line ends before ``start`` (a
        heading line the chunk starts in or holds is its own text), and the title unless the chunk holds
        the title's heading line or opens with the title.

        Without ``end``: what size budgets reserve for a chunk starting at ``start`` (the headings that
        start before it; the title unless it opens with the title heading) — never less than the chunk
        gets, so where kireme cuts does not depend on which lines the chunk ends up holding."""
        if self.mode == "none":
            return ""
        known = self._prefixes.get((start, end))
        if known is None:  # a strategy may ask again for the same chunk (packing tighter for its context)
            known = self._prefixes[(start, end)] = self._prefix(start, end)
        return known

    def prefix_within(self, start: int, end: int, room: int) -> str:
        """`prefix` of the chunk ``[start, end)`` fitted within ``room`` (what its text leaves of a chunk):
        where the whole prefix does not fit, the fullest one that does — the outer headings go first, then
        the title, the deepest heading last (``ステップ 2: …`` alone rather than nothing) — else ``""``."""
        if self.mode == "none" or room <= 0:
            return ""
        whole = self.prefix(start, end)
        if self.measured(whole) <= room:
            return whole
        return self._prefix(start, end, min(room, self.limit))

    def _names_above(self, chain: tuple[Heading, ...], whole: bool) -> tuple[list[str], bool]:
        """`_names` of the headings above a chunk — ``chain`` (`HeadingPaths.chain`), without its last
        heading unless ``whole`` — and whether one of the names says the title; each worked out once
        (a document's chunks sit under a few chains, which ``paths`` keeps alive)."""
        key = (id(chain), whole)
        known = self._above.get(key)
        if known is None:
            above = chain if whole else chain[:-1]
            names = self._names(above)
            says_title = bool(self.title) and any(self._is_title(name) for name in names)
            known = self._above[key] = (names, says_title)
        return known

    def _prefix(self, start: int, end: int | None, limit: int | None = None) -> str:
        chain = self.paths.chain(start) if self.paths is not None else ()
        # the headings above: all of the chain (each heading's line ends before the next one starts)
        # but the last when the chunk starts in its line (or, without ``end``, at its start)
        if not chain:
            names, says_title = self._names_above((), True)
        elif end is None:
            names, says_title = self._names_above(chain, chain[-1].start < start)
        else:
            names, says_title = self._names_above(chain, chain[-1].end <= start)
        if not self.title:  # no title to leave out
            return self._fit(names, limit=limit)
        if says_title:
            return self._fit(names, (False,), limit)  # the path says the title already
        if end is None:
            opens = bool(chain) and chain[-1].start == start and self._is_title(chain[-1].title)
        else:
            opens = self._holds_title(chain, start, end) or self._opens_with_title(start, end)
        return self._fit(names, (False,), limit) if opens else self._fit(names, limit=limit)  # says the title

    def named_prefix(self, names: Sequence[str], start: int, end: int) -> str:
        """The prefix of a chunk ``[start, end)`` whose path above it is ``names``, for a strategy that
        finds paths of its own (JSON paths, code signatures) instead of heading lines. Fitted within
        ``limit`` as `prefix` is; ``names`` count only in the ``headings`` mode."""
        if self.mode == "none":
            return ""
        kept = [n.strip() for n in names if n.strip()] if self.mode == "headings" else []
        if kept and self.title and self._is_title(kept[0]):
            kept = kept[1:]
        if self.title and (self._opens_with_title(start, end) or any(self._is_title(n) for n in kept)):
            return self._fit(kept, titles=(False,))
        return self._fit(kept)

    def _holds_title(self, chain: tuple[Heading, ...], start: int, end: int) -> bool:
        """Whether the chunk holds the line of a heading that is the title."""
        if self.paths is None:
            return False
        if chain and chain[-1].end > start and self._is_title(chain[-1].title):
            return True  # the heading line the chunk starts in (or opens with)
        starts = self._title_starts
        if starts is None:  # the headings that say the title, found once
            everything = self.paths.between(0, sys.maxsize)
            starts = self._title_starts = [h.start for h in everything if self._is_title(h.title)]
        i = bisect.bisect_left(starts, start)
        return i < len(starts) and starts[i] < end

    def _opens_with_title(self, start: int, end: int) -> bool:
        """Whether the chunk's first line is the title (``# `` marks and spaces aside)."""
        if not self.text:
            return False
        stop = self.text.find("\n", start, end)
        key = (start, end if stop < 0 else stop)
        known = self._opens.get(key)  # a section packed again tighter asks about the same first lines
        if known is None:
            line = self.text[key[0] : key[1]].strip()
            if "#" in line:
                line = _ATX_MARKS.sub("", line)
            known = self._opens[key] = bool(line) and self._may_say_title(line) and self._is_title(line)
        return known

    def largest(self, start: int | None = None, end: int | None = None) -> int:
        """The largest prefix size any chunk can get: in the section at ``start``, or anywhere. With
        ``end``: in ``[start, end)``, under any heading whose line starts there too (a chapter heading with
        no text of its own goes with its first article, whose chunks carry both)."""
        if self.mode == "none":
            return 0
        if self.paths is None:
            chains: list[tuple[Heading, ...]] = [()]
        elif start is None:
            chains = self.paths.all_chains()
        else:
            chains = [self.paths.chain(start)]
            if end is not None and end > start:
                chains += [self.paths.chain(h.start) for h in self.paths.between(start + 1, end)]
        return max(self._largest_under(chain) for chain in chains)

    def _largest_under(self, chain: tuple[Heading, ...]) -> int:
        """`largest` for the chunks under one chain of headings, worked out once per chain."""
        key = id(chain)
        known = self._largest.get(key)
        if known is None:
            known = 0
            names = self._names(chain)
            for k in range(len(names) + 1):  # a chunk holding the last headings' lines drops them
                prefix = self._fit(names[:k])
                if prefix:
                    known = max(known, self.measured(prefix))
            self._largest[key] = known
        return known
