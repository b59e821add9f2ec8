"""The context a reader is handed, assembled within a budget from exact offsets.

A reader is not given "5 chunks" but a budget: so many characters or tokens. For a given budget the
question is which text most likely holds the answer. kireme knows where every retrieved unit lies in its
document, so it can do what a list of chunk strings cannot:

* **merge** hits that overlap or touch in one document into one span (nothing passed twice), and
  **bridge** hits of one document that lie at most about one retrieved unit apart (``bridge`` = 1 mean
  unit) with the text between them, when that fits, a heading line between them included: two pieces of
  one passage retrieved apart hold most often the rest of it (long answers: law excerpts of consecutive
  articles, English evidence);
* **grow** a small hit at sentence boundaries — first to its whole paragraph when that fits, then a
  sentence at a time on either side, never past the next heading line — so an answer that lies just
  outside the retrieved unit is passed too;
* **widen** the best hits when the budget is large: the hit at rank *r* (1-based, among the spans taken)
  grows by about its own size on either side when the budget holds ``widen × r`` mean retrieved units
  (``widen`` = 8: a small budget buys more distinct hits, a large one buys the best hits' surroundings,
  measured on JSQuAD valid; docs/benchmarks.md);
* **follow** the next hits, while the budget holds ``widen / 2 × r`` units: they grow a sentence at a
  time only towards a neighbour that holds query terms the span does not hold yet (`guided_span`), so a
  hit whose surroundings add nothing costs nothing more and evidence that goes on is passed whole; the
  other hits come whole, and what is left at the end, too small for the next hit, grows the best spans;
* **share** a small budget: when it holds at least 2 and fewer than ``share`` mean units (``share`` = 4),
  a hit after the first that is larger than ``budget / share`` is passed as its best sentences within
  that size, if they hold every query term the whole hit holds — the rest of the hit says nothing more
  about the question, so the budget buys one more distinct hit instead (short factual answers); a hit
  whose terms are spread over it (a rule, long evidence) comes whole;
* **cut to fit**: a hit that does not fit whole in what is left gives the run of its sentences that fits
  and shares most terms with the query, never ending on a heading line whose body it leaves out and,
  on equal terms, not running on into the next section (it stays under the heading that names it)
  (``cut="all"``; ``"best"`` cuts only the best hit, when nothing else was taken), so a small budget
  still passes the sentences that matter of a large chunk;
* **grow before cutting**: when what is left cannot hold the next hit whole, a passage already taken
  first grows towards neighbouring sentences that hold query terms the context does not hold yet
  (`guided_span`), if that adds more of them than the cut piece of the next hit would; the answer that
  lies just past the best hit (the next provision, the next sentence of the evidence) is passed instead
  of a fragment of a weaker hit;
* **never exceed** the budget, measured on the exact text passed; ``Context.cut`` says when the best hit
  itself had to be cut.

Every span is an exact slice: ``text[span.start:span.end] == span.text`` for the document's ``text``.
A document whose text is unknown (an index written before texts were kept) still gets its hits passed
whole and exact; they are only not grown.

``policy="chunks"`` is what retrieval libraries do — the ranked units whole, in rank order, until the
budget is full (no merging, no growth) — kept for comparisons (`kireme eval --budget`).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kireme.errors import BudgetTooSmallError, ConfigError
from kireme.text.headings import is_heading_line
from kireme.text.sentences import paragraph_cuts, sentence_spans_in
from kireme.text.terms import tokenize

POLICIES = ("spans", "chunks")
CUTS = ("all", "best")
GROW_REACH = 3.0  # a widened hit grows to at most 3x its size: about its own size on either side  # which hits that do not fit whole are cut to their best sentences
DEFAULT_WIDEN = 8.0  # rank r is widened when the budget holds 8·r mean units (measured: docs/benchmarks.md)
# the hit at rank r whose share of the budget is at least half the widening one grows towards sentences
# that hold query terms it lacks, to at most 5x its size (measured: docs/benchmarks.md)
GUIDED_SHARE = 0.5
GUIDED_REACH = 5.0
# hits of one document at most one mean unit apart are joined (measured: docs/benchmarks.md)
DEFAULT_BRIDGE = 1.0
# a budget of 2 to 4 mean units passes the later hits as their best quarter of it when that loses none of
# the query terms they hold (measured: docs/benchmarks.md)
DEFAULT_SHARE = 4.0
# a hit that continues a better one (the text right after or before it) is taken before the hit ranked right
# above it, which continues none (measured: docs/benchmarks.md)
DEFAULT_AHEAD = 1
_SHARE_FROM = 2.0  # below 2 mean units the best hit takes most of the budget: nothing to share
_INK = re.compile(r"[^\W_]")  # a letter or a digit, in any script
_TAG = re.compile(r"</?[A-Za-z][^<>\n]*>")  # an HTML or MDX tag: markup, not text a reader reads
_FENCE_LINE = re.compile(r"^[ \t>]*(?:`{3,}|~{3,})[^\n]*$", re.M)  # a code fence line, its info string too
# how far around a hit sentences are looked for, in characters per unit of the window
_LOOKAROUND_PER_UNIT = 6
_LOOKAROUND_MIN = 2048


@dataclass(frozen=True)
class Ranked:
    """One retrieved unit, best first in the list given to `assemble`: where it lies and its text.

    ``text`` must equal ``document_text[start:end]``; it is what is passed when the document's text is
    unknown. ``headings`` is the unit's heading path; ``metadata`` is carried to the span (pages…).
    """

    doc_id: str
    start: int
    end: int
    text: str
    headings: tuple[str, ...] = ()
    score: float = 0.0
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class ContextSpan:
    """One passage of the context: an exact slice ``[start:end]`` of document ``doc_id``.

    ``ranks`` are the 1-based ranks of the retrieved units it holds (best first); ``headings`` the
    heading path all of the units it holds sit under (for a part cut out of a unit, the path of that
    part, where the assembler was given the document's headings: `Assembler` ``paths``); ``size`` its
    length in the budget's unit; ``cut`` is true when it is the best hit cut to a budget it did not fit.
    """

    doc_id: str
    start: int
    end: int
    text: str
    headings: tuple[str, ...]
    ranks: tuple[int, ...]
    size: int
    cut: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "start": self.start,
            "end": self.end,
            "headings": list(self.headings),
            "ranks": list(self.ranks),
            "size": self.size,
            "cut": self.cut,
            "text": self.text,
        }


@dataclass(frozen=True)
class Context:
    """The assembled context: spans grouped by document (documents by their best hit, spans in
    document order inside one), its total ``size`` (≤ ``budget``, in ``unit``) and how it was made."""

    spans: tuple[ContextSpan, ...]
    budget: int
    unit: str
    size: int
    considered: int  # how many ranked units were looked at
    cut: bool = False  # the best hit did not fit and was cut at sentence boundaries
    # no sentence of the best hit fitted (later hits did): it is not in the context; ``best_needs`` is the
    # smallest budget that passes a sentence of it
    best_left_out: bool = False
    best_needs: int = 0

    @property
    def text(self) -> str:
        """The spans' texts, one blank line between them (what `size` does not count)."""
        return "\n\n".join(span.text for span in self.spans)

    @property
    def ranks(self) -> tuple[int, ...]:
        """Every rank passed, sorted."""
        return tuple(sorted({r for span in self.spans for r in span.ranks}))

    def to_dict(self) -> dict[str, Any]:
        return {
            "budget": self.budget,
            "unit": self.unit,
            "size": self.size,
            "considered": self.considered,
            "cut": self.cut,
            "best_left_out": self.best_left_out,
            "best_needs": self.best_needs,
            "spans": [span.to_dict() for span in self.spans],
        }


def same_passage(a: ContextSpan, b: ContextSpan) -> bool:
    """Whether two spans are parts of one passage, passed apart around hidden text (`Assembler` ``hidden``):
    the parts of a passage share its document and ranks, and two passages never share a rank."""
    return a.doc_id == b.doc_id and a.ranks == b.ranks


TextOf = Callable[[str], "str | None"]
# the spans of a document a reader never sees (HTML comments of a Markdown text: `markdown_hidden`)
HiddenOf = Callable[[str], "Sequence[tuple[int, int]]"]
# the fenced code blocks of a document (`kireme.framing.Framing.code`)
CodeOf = Callable[[str], "Sequence[tuple[int, int]]"]
# the tables of a document as (start, end, end of the header): read by rows, the header with the first
# (`kireme.framing.table_rows`)
TablesOf = Callable[[str], "Sequence[tuple[int, int, int]]"]
# (doc_id, start, end) -> the lines a caller puts before and after that passage (a table's header, fences)
FramingOf = Callable[[str, int, int], "tuple[str, str]"]
# the heading path all of [start, end) of a document shares, where the caller knows its headings (else None)
PathOf = Callable[[str, int, int], "tuple[str, ...] | None"]


@dataclass
class _Piece:
    """A span being built: its bounds, the ranks it holds and whether it may still grow."""

    doc_id: str
    start: int
    end: int
    ranks: list[int]
    headings: tuple[str, ...]
    exact_text: str | None = None  # the unit's own text when the document's text is unknown
    cut: bool = False
    known: bool = True  # the document's text holds the piece (else its text is the unit's own)


def measure_of(unit: str) -> Callable[[str], int]:
    """The measure a budget ``unit`` names when none is given: ``len`` for ``"chars"``, cl100k_base for
    ``"tokens"`` (`kireme.length.Tokens`); any other unit needs its measure."""
    if unit == "chars":
        return len
    if unit == "tokens":
        from kireme.length import Tokens

        return Tokens()
    raise ConfigError(
        f"unit={unit!r} needs a measure that counts it (measure=...); chars and tokens have one"
    )


class Assembler:
    """Builds `Context` objects from ranked units; one per document collection and measure.

    ``text_of(doc_id)`` gives a document's text (``None`` when unknown: its hits are passed whole, not
    grown); ``measure`` counts the budget's unit (``len`` for characters, `kireme.length.Tokens`; by
    default the one ``unit`` names: ``"chars"`` or ``"tokens"``, cl100k_base);
    ``widen``: the hit at rank r grows when the budget holds ``widen × r`` mean units (0: never);
    ``cut``: ``"all"`` hits that do not fit whole give their best sentences that fit, ``"best"`` only the
    best hit when nothing else fits;
    ``bridge``: hits of one document at most ``bridge`` mean units apart (in characters) become one span
    with the text between them (heading lines too), when it fits (0: only hits that touch);
    ``share``: when the budget holds 2 to ``share`` mean units, a later hit larger than ``budget / share``
    gives its best sentences within that size if they hold every query term the hit holds (0: never);
    ``ahead``: a hit that continues a better-ranked one (the next or the previous text of its document, at
    most a line break or a space between them) is taken up to ``ahead`` places earlier, before the hits
    ranked above it that continue none (0: in rank order): two halves of one provision or one answer,
    ranked 1st and 3rd, go together before a 2nd hit elsewhere;
    ``overhead(doc_id, headings)``:
    what the caller adds around each span when rendering it (a citation line), counted against the budget;
    ``paths(doc_id, start, end)``: the heading path all of a part of a document shares, where the caller
    knows the document's headings (`kireme.index.passages.document_paths`): a hit cut to fit carries the
    path of the part it keeps when that names the hit's own path and more (the option or provision whose
    lines it holds, its heading line left out for room), not only the path the whole hit shares.
    ``hidden(doc_id)``: spans of a document a reader never sees (`kireme.text.markdown.comment_blocks`:
    the HTML comments of a Markdown text, a translation's original above each paragraph). They cost
    nothing and are never passed: a passage around one is passed as the parts before and after it (one
    `ContextSpan` each, exact slices, sharing the passage's ranks and path), so the budget buys text the
    reader can read; the assembly reads them as blank lines (no terms, no heading lines).
    ``code(doc_id)``: the fenced code blocks of a document. Inside one the assembly steps by lines, not
    sentences (a ``!`` or ``.`` in code ends no sentence: a hit cut to fit or grown never stops inside
    a line of code), and no line of code is a heading line; a fence line goes with the line of code next
    to it (no passage is a fence alone, none starts at a closing fence or ends at an opening one).
    ``tables(doc_id)``: the tables of a document as ``(start, end, end of the header)``. Inside one the
    assembly steps by rows (a CSV file's rows hold no sentence end; a short row is no heading line), the
    header with the first row.
    ``framing(doc_id, start, end)``: the lines the caller puts before and after a passage ``[start, end)``
    of a document to make it readable on its own (`kireme.framing.Framing`: the header of
    the table it starts inside, the fences of the code block it starts or ends inside), counted against
    the budget with the passage.
    """

    def __init__(
        self,
        text_of: TextOf,
        measure: Callable[[str], int] | None = None,
        *,
        unit: str = "chars",
        policy: str = "spans",
        widen: float = DEFAULT_WIDEN,
        cut: str = "all",
        bridge: float = DEFAULT_BRIDGE,
        share: float = DEFAULT_SHARE,
        ahead: int = DEFAULT_AHEAD,
        overhead: Callable[[str, tuple[str, ...]], int] | None = None,
        paths: PathOf | None = None,
        hidden: HiddenOf | None = None,
        code: CodeOf | None = None,
        tables: TablesOf | None = None,
        framing: FramingOf | None = None,
    ) -> None:
        if policy not in POLICIES:
            raise ConfigError(f"unknown context policy {policy!r}: choose one of {', '.join(POLICIES)}")
        for name, value in (("widen", widen), ("bridge", bridge), ("share", share)):
            if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
                raise ConfigError(f"{name} must be a number >= 0, got {value!r}")
        if cut not in CUTS:
            raise ConfigError(f"cut must be one of {', '.join(CUTS)}, got {cut!r}")
        if not isinstance(ahead, int) or isinstance(ahead, bool) or ahead < 0:
            raise ConfigError(f"ahead must be a whole number >= 0, got {ahead!r}")
        self._text_of = text_of
        measure = measure_of(unit) if measure is None else measure
        if measure is len and unit != "chars":
            raise ConfigError(
                f"unit={unit!r} with measure=len counts characters and calls them {unit}: pass a measure "
                "that counts them (kireme.length.Tokens() for cl100k_base tokens), or unit='chars'"
            )
        self._texts: dict[str, str | None] = {}
        self.measure = measure
        self.unit = unit
        self.policy = policy
        self.widen = float(widen)
        self.reach = GROW_REACH
        self.bridge = float(bridge)
        self.share = float(share)
        self.ahead = ahead
        self.cut = cut
        self.overhead = overhead
        self.paths = paths
        self.hidden = hidden
        self.code = code
        self.tables = tables
        self.framing = framing
        self._readings: dict[str, _Reading] = {}
        self._real: dict[str, str] = {}  # the texts of the documents with hidden spans, as they are
        self._hidden: dict[str, tuple[list[int], list[int]]] = {}  # their hidden spans' starts and ends

    # ------------------------------------------------------------------------------------- public

    def assemble(self, ranked: Sequence[Ranked], budget: int, query: str = "") -> Context:
        """The context for ``ranked`` (best first) in at most ``budget`` units.

        A budget ≤ 0 is a `ConfigError`; so is one smaller than every sentence of the best hit (nothing
        sensible fits). ``query`` chooses which sentences of a hit to keep when the hit does not fit whole
        in what is left (`Context.cut` when it was the best hit).
        """
        if not isinstance(budget, int) or isinstance(budget, bool) or budget <= 0:
            raise ConfigError(f"the context budget must be a whole number of {self.unit} > 0, got {budget!r}")
        for unit in ranked:
            self._check(unit)
        state = _State(self, budget)
        wanted = frozenset(tokenize(query)) if query else frozenset()
        head = [self._as_read(u) for u in ranked[:20]] if self.hidden is not None else ranked[:20]
        sample = [self._unit_size(u) for u in head]
        mean = max(1.0, sum(sample) / len(sample)) if sample else 1.0
        if self.policy == "spans" and head:  # the gap is in characters, whatever the budget counts
            state.gap = int(self.bridge * sum(len(u.text) for u in head) / len(head))
        sharing = self.policy == "spans" and bool(wanted) and _SHARE_FROM * mean <= budget < self.share * mean
        order = (
            _continuations_first(ranked, self.ahead, self.text)
            if self.policy == "spans" and self.ahead
            else enumerate(ranked, start=1)
        )
        for rank, unit in order:
            state.considered = rank
            if state.add_rank(unit, rank):  # a passage already holds it: it costs nothing
                continue
            if state.full():  # nothing more fits: later hits count only where a passage holds them
                continue
            if self.hidden is not None:  # read here: a hit never looked at costs no document read
                unit = self._as_read(unit)
            if not _has_ink(unit.text, 0, len(unit.text)):
                continue  # markup alone ("</Solution>"): nothing to read
            if self.policy == "spans" and state.says_already(unit):
                continue  # the same words from another document (a copied file): passed once is enough
            holds = budget / ((len(state.pieces) + 1) * mean)  # mean units the budget holds per hit
            if self.policy == "spans" and self.widen > 0 and holds >= GUIDED_SHARE * self.widen:
                if holds >= self.widen:  # the best hits: their surroundings, both sides
                    grown = self._grow(unit, int(self.reach * self._unit_size(unit)))
                else:  # the next ones: only towards sentences that hold more of the query
                    grown = self._grow(unit, int(GUIDED_REACH * self._unit_size(unit)), wanted)
                if grown is not None and state.try_add(unit, rank, grown):
                    continue
            if sharing and state.pieces:
                part = self._telling_part(unit, budget / self.share, budget - state.total, query, wanted)
                if part is not None and state.try_add(unit, rank, part, cut=True):
                    continue
            if state.try_add(unit, rank, (unit.start, unit.end)):
                continue
            if self.policy == "spans" and (self.cut == "all" or not state.pieces):
                need_match = bool(state.pieces) or self._holds_terms(unit, wanted)
                run = self._best_run(unit, budget - state.total, query, need_match=need_match)
                if run is not None and state.pieces and wanted:
                    # what is left may say more grown onto a passage than as a piece of this hit
                    held = state.terms()
                    text = self._document(unit)
                    rival = len(wanted.intersection(tokenize(text[run[0] : run[1]])) - held) if text else 0
                    if state.grow_towards(wanted - held, rival):
                        continue
                if run is not None:
                    state.try_add(unit, rank, run, cut=True)
        if not state.pieces and head:
            return self._cut_best(head[0], budget, query)
        if self.policy == "spans":
            state.grow_rest()
        made = state.context()
        best = head[0] if head else None
        if best is not None and 1 not in made.ranks and _has_ink(best.text, 0, len(best.text)):
            needs = self._shortest_sentence(best, query if self._holds_terms(best, wanted) else "")
            return replace(made, best_left_out=True, best_needs=needs)
        return made

    def _holds_terms(self, unit: Ranked, wanted: frozenset[str]) -> bool:
        """Whether ``unit`` holds a term of the query: then a part of it cut to fit must hold one too (a
        part without any is filler, however high the hit ranked: the row beside the one asked about)."""
        return bool(wanted) and not wanted.isdisjoint(tokenize(unit.text))

    # ------------------------------------------------------------------------------------ helpers

    def text(self, doc_id: str) -> str | None:
        """The document's text as the assembly reads it: with its hidden spans (`hidden`) blanked out (every
        character but the line breaks a space: the offsets stay, the lines too)."""
        if doc_id not in self._texts:
            text = self._text_of(doc_id)
            if text is not None and self.hidden is not None:
                spans: list[tuple[int, int]] = []
                for a, b in sorted((max(0, a), min(len(text), b)) for a, b in self.hidden(doc_id)):
                    if a >= b:
                        continue
                    if spans and a <= spans[-1][1]:  # overlapping or touching: one span
                        spans[-1] = (spans[-1][0], max(b, spans[-1][1]))
                    else:
                        spans.append((a, b))
                if spans:
                    self._real[doc_id] = text
                    self._hidden[doc_id] = ([a for a, _ in spans], [b for _, b in spans])
                    text = _blanked(text, spans)
            self._texts[doc_id] = text
        return self._texts[doc_id]

    def reading(self, doc_id: str) -> _Reading:
        """How the assembly steps through a document whose text is known: its sentences and heading
        lines, and inside its fenced code blocks (`code`) its lines."""
        reading = self._readings.get(doc_id)
        if reading is None:
            text = self.text(doc_id)
            assert text is not None
            code = self.code(doc_id) if self.code else ()
            tables = self.tables(doc_id) if self.tables else ()
            reading = self._readings[doc_id] = _Reading(text, code, tables)
        return reading

    def shown(self, doc_id: str, start: int, end: int) -> list[tuple[int, int]]:
        """The parts of ``[start, end)`` of a document a reader sees: the whole span, or where it holds
        hidden text (`hidden`) the parts around it, each trimmed of the white space next to what was left
        out, the empty ones dropped."""
        hidden = self._hidden.get(doc_id)
        if hidden is None:
            return [(start, end)]
        starts, ends = hidden
        i = bisect.bisect_right(ends, start)  # the first hidden span ending after start
        if i == len(starts) or starts[i] >= end:
            return [(start, end)]
        text = self._real[doc_id]
        parts: list[tuple[int, int]] = []
        pos, trim_left = start, False
        while pos < end:
            if i < len(starts) and starts[i] < end:
                a, b, trim_right = pos, max(pos, starts[i]), True
            else:
                a, b, trim_right = pos, end, False
            if trim_left:
                while a < b and text[a].isspace():
                    a += 1
            if trim_right:
                while b > a and text[b - 1].isspace():
                    b -= 1
            if a < b:
                parts.append((a, b))
            if not trim_right:
                break
            pos, trim_left = min(end, max(pos, ends[i])), True
            i += 1
        return parts

    def size(self, doc_id: str, headings: tuple[str, ...], text: str, start: int | None = None) -> int:
        """The size ``text`` takes in the budget with what the caller adds around it (`overhead`). Given
        where it starts in its document (``start``), only the parts a reader sees count (`shown`), each
        with the lines that frame it (`framing`)."""
        extra = self.overhead(doc_id, headings) if self.overhead is not None else 0
        if start is not None and doc_id in self._hidden:
            return self._shown_size(doc_id, start, start + len(text), framed=True) + extra
        if start is not None and self.framing is not None:
            return self.measure(text) + self._frame_size(doc_id, start, start + len(text)) + extra
        return self.measure(text) + extra

    def _frame_size(self, doc_id: str, start: int, end: int) -> int:
        """The size of the lines `framing` puts around ``[start, end)`` (0 without `framing`)."""
        if self.framing is None:
            return 0
        before, after = self.framing(doc_id, start, end)
        return (self.measure(before) if before else 0) + (self.measure(after) if after else 0)

    def _shown_size(self, doc_id: str, start: int, end: int, *, framed: bool = False) -> int:
        """The size of the parts of ``[start, end)`` a reader sees (`shown`) of a document with hidden spans;
        ``framed``: each part with the lines `framing` puts around it."""
        real = self._real[doc_id]
        parts = self.shown(doc_id, start, end)
        size = sum(self.measure(real[a:b]) for a, b in parts)
        if framed and self.framing is not None:
            size += sum(self._frame_size(doc_id, a, b) for a, b in parts)
        return size

    def _unit_size(self, unit: Ranked) -> int:
        """A retrieved unit's size in the budget's unit, what the caller adds aside (its shown parts)."""
        if unit.doc_id in self._hidden and self._document(unit) is not None:
            return self._shown_size(unit.doc_id, unit.start, unit.end)
        return self.measure(unit.text)

    def _as_read(self, unit: Ranked) -> Ranked:
        """``unit`` with its text as the assembly reads it (hidden spans blanked) where its document has
        hidden spans and the unit agrees with the document."""
        text = self.text(unit.doc_id)
        real = self._real.get(unit.doc_id)
        if text is None or real is None or real[unit.start : unit.end] != unit.text:
            return unit
        return replace(unit, text=text[unit.start : unit.end])

    def spans(
        self,
        doc_id: str,
        start: int,
        end: int,
        text: str,
        *,
        headings: tuple[str, ...],
        ranks: tuple[int, ...],
        size: int,
        cut: bool,
        known: bool = True,
    ) -> list[ContextSpan]:
        """The `ContextSpan` of a passage, or where it holds hidden text one per part a reader sees, each an
        exact slice of the document; the caller's overhead goes with the first part. ``known``: the
        document's text holds the passage (else ``text`` is a retrieved unit's own, passed as it is)."""
        if doc_id not in self._hidden or not known:
            return [ContextSpan(doc_id, start, end, text, headings, ranks, size, cut)]
        real = self._real[doc_id]
        extra = self.overhead(doc_id, headings) if self.overhead is not None else 0
        out = []
        for a, b in self.shown(doc_id, start, end):
            part = real[a:b]
            size = self.measure(part) + self._frame_size(doc_id, a, b) + extra
            out.append(ContextSpan(doc_id, a, b, part, headings, ranks, size, cut))
            extra = 0
        return out

    def cut_paths(self, unit: Ranked, start: int, end: int) -> list[tuple[str, ...]]:
        """The heading paths to cite ``[start, end)``, a part of ``unit``, by, best first: the caller's
        (`paths`) where it names the unit's path and more, then the unit's own (when the finer path's
        citation does not fit the budget)."""
        own = unit.headings
        if self.paths is None or (start, end) == (unit.start, unit.end) or self._document(unit) is None:
            return [own]
        finer = self.paths(unit.doc_id, start, end)
        if finer is not None and len(finer) > len(own) and tuple(finer[: len(own)]) == own:
            return [tuple(finer), own]
        return [own]

    def _check(self, unit: Ranked) -> None:
        """A `ConfigError` naming a hit whose offsets cannot be its text's: before its start, an end before
        its start, a text of another length (`Ranked`'s contract; an end past its document's text is
        `_document`'s to find, where that text is read)."""
        where = f"hit {unit.doc_id!r} [{unit.start}:{unit.end}]"
        if (
            not isinstance(unit.start, int)
            or not isinstance(unit.end, int)
            or not 0 <= unit.start <= unit.end
        ):
            raise ConfigError(f"{where}: start and end must be whole numbers with 0 <= start <= end")
        if len(unit.text) != unit.end - unit.start:
            raise ConfigError(
                f"{where}: its text has {len(unit.text)} characters, not end - start = {unit.end - unit.start}"
            )

    def _document(self, unit: Ranked) -> str | None:
        """The unit's document text when it is known and agrees with the unit (else ``None``); a
        `ConfigError` naming a unit that ends past that text (checked here, where the text is read, not
        for every ranked hit up front)."""
        text = self.text(unit.doc_id)
        if text is not None and unit.end > len(text):
            raise ConfigError(
                f"hit {unit.doc_id!r} [{unit.start}:{unit.end}]: ends past its document's text "
                f"({len(text)} characters)"
            )
        if text is None or text[unit.start : unit.end] != unit.text:
            return None
        return text

    def _grow(self, unit: Ranked, limit: int, guide: frozenset[str] | None = None) -> tuple[int, int] | None:
        """``unit`` grown at sentence boundaries to at most ``limit`` units: to its paragraph if that fits,
        then sentence by sentence (after, before, in turn), never past a heading line below it nor above
        the heading line it sits under. With ``guide`` (query terms), only towards sentences that hold
        query terms the span does not hold yet (`guided_span`). ``None`` when the document's text is
        unknown."""
        text = self._document(unit)
        if text is None:
            return None

        def size(s: int, e: int) -> int:
            return self.size(unit.doc_id, unit.headings, text[s:e], s)

        reading = self.reading(unit.doc_id)
        if guide is not None:
            return guided_span(text, unit.start, unit.end, limit, size, guide, reading=reading)
        return grow_span(text, unit.start, unit.end, limit, size, reading=reading)

    def _unit_sentences(self, unit: Ranked) -> tuple[str, int, list[tuple[int, int]]]:
        """The text to cut ``unit`` from, the offset that maps it to document offsets, and the unit's
        sentences in that text (the document's own rules when its text is known, else the unit's)."""
        document = self._document(unit)
        if document is not None:
            return document, 0, self.reading(unit.doc_id).units(unit.start, unit.end)
        return unit.text, unit.start, sentence_spans_in(unit.text, 0, len(unit.text))

    def _best_run(
        self, unit: Ranked, room: int, query: str, *, need_match: bool = False
    ) -> tuple[int, int] | None:
        """The run of ``unit``'s sentences that fits ``room`` and holds most of the query's terms, in
        document offsets; ``None`` when no sentence fits. On equal terms, the run that enters fewest
        sections (heading lines after its first sentence: text under the next heading says nothing the
        terms did not already count, and it parts the run from the heading that names it), then the
        longest, then the first. A run of heading lines only is never chosen when another fits, nor a run
        that ends with a heading line (its body is not in it); ``need_match``: a run must hold a term of
        the query (a filler passage for what is left of a budget must be worth its room).

        A run's terms are those of its sentences (a sentence ends at punctuation or white space, which no
        term crosses), each sentence tokenised once, and each start's longest fitting run is found from
        the previous start's (sizes grow with a run), so a large hit costs about its sentences squared in
        cheap steps, not in tokenised and measured runs."""
        text, offset, bounds = self._unit_sentences(unit)
        if not bounds:
            return None
        n = len(bounds)
        wanted = frozenset(tokenize(query)) if query else frozenset()
        # each sentence read once, when a run that fits reaches it: whether it is a heading line, its terms,
        # whether it holds a letter or digit (markup alone — "-->", "---" — neither starts nor ends a run)
        read: list[tuple[bool, frozenset[str], bool] | None] = [None] * n
        any_ink = _has_ink(text, bounds[0][0], bounds[-1][1])  # else no sentence is passed over for it

        def sentence(k: int) -> tuple[bool, frozenset[str], bool]:
            known = read[k]
            if known is None:
                s, e = bounds[k]
                found = wanted.intersection(tokenize(text[s:e])) if wanted else frozenset()
                known = read[k] = (is_heading(bounds[k]), found, not any_ink or _has_ink(text, s, e))
            return known

        known = self._document(unit) is not None  # offsets into the document, not into the unit's text
        is_heading = self.reading(unit.doc_id).is_heading if known else _Reading(text).is_heading

        def size(s: int, e: int) -> int:
            return self.size(unit.doc_id, unit.headings, text[s:e], s if known else None)

        best: tuple[int, int, int, int, int] | None = None  # (score, -sections entered, length, -start, end)
        keys: list[tuple[int, int, int, int, int]] = []
        reach = -1  # the last sentence the previous start's runs reached within room
        for i in range(n):
            reach = max(reach, i - 1)
            while reach + 1 < n and size(bounds[i][0], bounds[reach + 1][1]) <= room:
                reach += 1
            held: set[str] = set()
            entered = 0  # heading lines among the run's sentences after its first
            if i <= reach and not sentence(i)[2]:
                continue  # markup alone at the start
            for j in range(i, reach + 1):
                head, found, inked = sentence(j)
                if j > i and head:
                    entered += 1
                held |= found
                if not inked:
                    continue  # markup alone at the end
                if entered == j - i and sentence(i)[0] and (need_match or n > 1):
                    continue  # heading lines only
                if j > i and head:
                    continue  # a heading line without its body after it says nothing: never the end of a run
                if need_match and not held:
                    continue
                s, e = bounds[i][0], bounds[j][1]
                key = (len(held), -entered, e - s, -s, e)
                keys.append(key)
                if best is None or key > best:
                    best = key
        if best is None:
            return None
        # sizes grow with a run in characters; a token count may not quite, so the chosen run is measured
        # and, should it not fit after all, the best that does is taken
        if size(-best[3], best[4]) <= room:
            return -best[3] + offset, best[4] + offset
        for key in sorted(keys, reverse=True):
            if size(-key[3], key[4]) <= room:
                return -key[3] + offset, key[4] + offset
        return None

    def _telling_part(
        self, unit: Ranked, limit: float, room: int, query: str, wanted: frozenset[str]
    ) -> tuple[int, int] | None:
        """``unit``'s best run of sentences within ``limit`` (and ``room``) when the unit is larger than
        ``limit`` and the run holds every ``wanted`` term the whole unit holds; else ``None`` (the unit is
        passed as it is)."""
        if self._unit_size(unit) <= limit:
            return None
        text = self._document(unit)
        if text is None:
            return None
        run = self._best_run(unit, int(min(limit, room)), query)
        if run is None:
            return None
        held = wanted.intersection(tokenize(unit.text))
        if held - wanted.intersection(tokenize(text[run[0] : run[1]])):
            return None
        return run

    def _shortest_sentence(self, unit: Ranked, query: str = "") -> int:
        """The smallest budget that passes ``unit`` or a part of it: its own size, or less where `_best_run`
        can cut it (a heading line never alone, markup never at either end, the heading path a cut part
        is cited by counted too); with ``query``, a part that holds one of its terms. Found by halving,
        since more room never passes less; only asked when a budget fell short."""
        known = self._document(unit) is not None
        # whole, it is passed as it is: its size with what the caller adds around it
        hi = max(1, self.size(unit.doc_id, unit.headings, unit.text, unit.start if known else None))
        lo = 1
        while lo < hi:
            mid = (lo + hi) // 2
            if self._best_run(unit, mid, query, need_match=bool(query)) is not None:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def _cut_best(self, unit: Ranked, budget: int, query: str) -> Context:
        """The best unit cut to ``budget`` (`_best_run`), or a `ConfigError` when no sentence of it fits."""
        wanted = frozenset(tokenize(query)) if query else frozenset()
        matching = self._holds_terms(unit, wanted)
        run = self._best_run(unit, budget, query, need_match=matching)
        known = self._document(unit) is not None  # offsets into the document, not into the unit's text
        if run is None:
            needs = self._shortest_sentence(unit, query if matching else "")
            what = "one sentence of the best hit" + (" that holds a word of the query" if matching else "")
            raise BudgetTooSmallError(
                f"a budget of {budget} {self.unit} is smaller than {what} "
                f"(the shortest that can be passed is {needs} {self.unit}); raise the budget",
                needs,
            )
        s, e = run
        piece_text = unit.text[s - unit.start : e - unit.start]
        for headings in self.cut_paths(unit, s, e):
            size = self.size(unit.doc_id, headings, piece_text, s if known else None)
            if size <= budget:
                break
        spans = self.spans(
            unit.doc_id, s, e, piece_text, headings=headings, ranks=(1,), size=size, cut=True, known=known
        )
        return Context(tuple(spans), budget, self.unit, sum(span.size for span in spans), 1, cut=True)


class _State:
    """The pieces chosen so far, per document, kept merged, and their total size."""

    def __init__(self, assembler: Assembler, budget: int) -> None:
        self.a = assembler
        self.budget = budget
        self.pieces: list[_Piece] = []  # in the order they were first taken (best rank first)
        self.sizes: dict[int, int] = {}  # id(piece) -> size
        self.total = 0
        self.considered = 0
        self.gap = 0  # hits of one document at most this far apart are joined, the text between included
        self._said: dict[tuple[str, int, int], str] = {}  # `_words` of the passages asked about

    def add_rank(self, unit: Ranked, rank: int) -> bool:
        """Record ``rank`` on the piece that holds ``unit`` whole; whether one does."""
        for p in self.pieces:
            if p.doc_id == unit.doc_id and p.start <= unit.start and unit.end <= p.end:
                p.ranks.append(rank)
                return True
        return False

    def full(self) -> bool:
        return self.total >= self.budget

    def says_already(self, unit: Ranked) -> bool:
        """Whether a passage of another document holds ``unit``'s text word for word (whitespace aside):
        two copies of one file, or one rule in two manuals, would take the budget twice for nothing."""
        words = " ".join(unit.text.split())
        return bool(words) and any(p.doc_id != unit.doc_id and words in self._words(p) for p in self.pieces)

    def _words(self, p: _Piece) -> str:
        """A passage's text with its whitespace runs as single spaces, made once per passage (every later
        hit asks about each passage taken)."""
        key = (p.doc_id, p.start, p.end)
        words = self._said.get(key)
        if words is None:
            words = self._said[key] = " ".join(self._text(p).split())
        return words

    def _piece_size(self, p: _Piece) -> int:
        return self.a.size(p.doc_id, p.headings, self._text(p), p.start if p.known else None)

    def _text(self, p: _Piece) -> str:
        if p.exact_text is not None:
            return p.exact_text
        text = self.a.text(p.doc_id)
        assert text is not None
        return text[p.start : p.end]

    def _sizer(self, p: _Piece, text: str) -> Callable[[int, int], int]:
        def size(s: int, e: int) -> int:
            return self.a.size(p.doc_id, p.headings, text[s:e], s)

        return size

    def try_add(
        self, unit: Ranked, rank: int, bounds: tuple[int, int], *, cut: bool = False, gap: int | None = None
    ) -> bool:
        """Add ``bounds`` of ``unit``'s document (merged with what it overlaps or touches) if the total
        stays within the budget. ``cut``: the bounds are a part of the unit cut to fit."""
        known = self.a._document(unit) is not None
        if self.a.policy == "chunks" or not known:
            s, e = bounds if cut else (unit.start, unit.end)
            piece = _Piece(
                unit.doc_id,
                s,
                e,
                [rank],
                unit.headings,
                exact_text=unit.text[s - unit.start : e - unit.start],
            )
            piece.cut = cut
            piece.known = known
            if self.a.policy == "chunks" and any(
                p.doc_id == unit.doc_id and (p.start, p.end) == (unit.start, unit.end) for p in self.pieces
            ):
                return False
            size = self._piece_size(piece)
            if self.total + size > self.budget:
                return False
            self.pieces.append(piece)
            self.sizes[id(piece)] = size
            self.total += size
            return True
        text = self.a.text(unit.doc_id)
        assert text is not None
        if gap is None:
            gap = self.gap
        lo, hi = bounds
        merged: list[_Piece] = []
        while True:  # a merged piece may reach one more: until nothing else touches
            more = [
                p
                for p in self.pieces
                if p.doc_id == unit.doc_id
                and p.exact_text is None
                and p not in merged
                and _touch(text, (p.start, p.end), (lo, hi), gap)
            ]
            if not more:
                break
            merged.extend(more)
            lo = min([lo, *(p.start for p in more)])
            hi = max([hi, *(p.end for p in more)])
        ranks = sorted({rank, *(r for p in merged for r in p.ranks)})
        freed = sum(self.sizes[id(p)] for p in merged)
        # a part cut out of the unit is cited by its own finer path when the budget holds that citation
        for own in self.a.cut_paths(unit, *bounds) if cut else [unit.headings]:
            candidate = _Piece(unit.doc_id, lo, hi, ranks, _shared_path([own, *(p.headings for p in merged)]))
            candidate.cut = cut and not merged
            size = self._piece_size(candidate)
            if self.total - freed + size <= self.budget:
                break
        if self.total - freed + size > self.budget:
            # bridged to a piece the budget cannot hold: the hit alone, merged only with what it touches
            return gap > 0 and self.try_add(unit, rank, bounds, cut=cut, gap=0)
        first = min((self.pieces.index(p) for p in merged), default=len(self.pieces))
        for p in merged:
            self.pieces.remove(p)
            del self.sizes[id(p)]
        self.pieces.insert(min(first, len(self.pieces)), candidate)
        self.sizes[id(candidate)] = size
        self.total += size - freed
        return True

    def terms(self) -> frozenset[str]:
        """The terms the passages taken so far hold (`kireme.text.terms.tokenize`)."""
        return frozenset(term for p in self.pieces for term in tokenize(self._text(p)))

    def grow_towards(self, new: frozenset[str], rival: int) -> bool:
        """Grow the passage whose neighbouring sentences add the most of the ``new`` terms within what is
        left of the budget (`guided_span`), when that is more than ``rival`` terms (what the alternative,
        a later hit cut to fit, would add); whether one grew. Ties go to the cut hit: another place in the
        documents is worth as much as the surroundings of one already passed."""
        best: tuple[int, _Piece, str, tuple[int, int]] | None = None
        for p, text in self._growable():
            reading = self.a.reading(p.doc_id)
            s, e = guided_span(
                text, p.start, p.end, self._room(p), self._sizer(p, text), new, reading=reading
            )
            gain = len(new.intersection(tokenize(text[s:e]))) if (s, e) != (p.start, p.end) else 0
            if gain > rival and (best is None or gain > best[0]):
                best = (gain, p, text, (s, e))
        return best is not None and self._regrow(*best[1:])

    def grow_rest(self) -> None:
        """Spend what is left of the budget growing the pieces at sentence boundaries, best rank first."""
        for p, text in self._growable():
            if self.total >= self.budget:
                break
            if p not in self.pieces:  # merged away meanwhile
                continue
            reading = self.a.reading(p.doc_id)
            s, e = grow_span(text, p.start, p.end, self._room(p), self._sizer(p, text), reading=reading)
            if (s, e) != (p.start, p.end):
                self._regrow(p, text, (s, e))

    def _growable(self) -> list[tuple[_Piece, str]]:
        """The pieces whose document's text is known (they can grow), best rank first, with that text."""
        out = []
        for p in sorted(self.pieces, key=lambda q: min(q.ranks)):
            if p.exact_text is None:
                text = self.a.text(p.doc_id)
                assert text is not None
                out.append((p, text))
        return out

    def _room(self, p: _Piece) -> int:
        """The most piece ``p`` may grow to: the budget less every other piece."""
        return self.budget - (self.total - self.sizes[id(p)])

    def _regrow(self, p: _Piece, text: str, bounds: tuple[int, int]) -> bool:
        """Piece ``p`` grown to ``bounds`` (merged with what it then touches), if the budget holds it."""
        unit = Ranked(p.doc_id, p.start, p.end, text[p.start : p.end], p.headings)
        return self.try_add(unit, min(p.ranks), bounds)

    def context(self) -> Context:
        order: dict[str, list[_Piece]] = {}
        for p in sorted(self.pieces, key=lambda q: min(q.ranks)):
            order.setdefault(p.doc_id, []).append(p)
        spans: list[ContextSpan] = []
        for group in order.values():
            for p in sorted(group, key=lambda q: (q.start, q.end)):
                spans += self.a.spans(
                    p.doc_id,
                    p.start,
                    p.end,
                    self._text(p),
                    headings=p.headings,
                    ranks=tuple(sorted(set(p.ranks))),
                    size=self.sizes[id(p)],
                    cut=p.cut,
                    known=p.known,
                )
        total = sum(span.size for span in spans)
        assert total <= self.budget
        cut = bool(spans) and any(s.cut and 1 in s.ranks for s in spans)
        return Context(tuple(spans), self.budget, self.a.unit, total, self.considered, cut=cut)


def _blanked(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """``text`` with every character of ``spans`` (sorted, apart) but the line breaks made a space."""
    out, pos = [], 0
    for a, b in spans:
        out.append(text[pos:a])
        lines = text[a:b].split("\n")
        if "\r" in text[a:b]:
            out.append("\n".join(map(_blank_line, lines)))
        else:
            out.append("\n".join([" " * len(line) for line in lines]))
        pos = b
    out.append(text[pos:])
    return "".join(out)


def _blank_line(line: str) -> str:
    """A line of spaces as long as ``line``, its ``\\r`` kept (a ``\\r\\n`` line break stays one)."""
    if line.endswith("\r"):
        return " " * (len(line) - 1) + "\r"
    return " " * len(line)


def _continuations_first(
    ranked: Sequence[Ranked], ahead: int, text_of: Callable[[str], str | None]
) -> list[tuple[int, Ranked]]:
    """``ranked`` with their 1-based ranks, in the order the assembly takes them: each next hit is the best
    one left, unless it continues none of the hits taken before it and one of the ``ahead`` after it does
    (`_continues`): then that one first. The ranks stay the retriever's."""
    pending = list(enumerate(ranked, start=1))
    out: list[tuple[int, Ranked]] = []
    before: dict[str, list[Ranked]] = {}  # the hits taken so far, by document
    while pending:
        pick = 0
        if before and not _continues_any(pending[0][1], before, text_of):
            for j in range(1, min(ahead, len(pending) - 1) + 1):
                if _continues_any(pending[j][1], before, text_of):
                    pick = j
                    break
        taken = pending.pop(pick)
        out.append(taken)
        before.setdefault(taken[1].doc_id, []).append(taken[1])
    return out


def _continues_any(
    unit: Ranked, before: dict[str, list[Ranked]], text_of: Callable[[str], str | None]
) -> bool:
    """Whether ``unit`` continues one of the hits ``before`` it in its document (`_continues`)."""
    others = before.get(unit.doc_id)
    if not others:
        return False
    return any(_continues((o.start, o.end), (unit.start, unit.end), unit.doc_id, text_of) for o in others)


def _continues(
    a: tuple[int, int], b: tuple[int, int], doc_id: str, text_of: Callable[[str], str | None]
) -> bool:
    """Whether two spans of one document overlap or follow each other with at most one character between
    them (the line break or space two chunks are cut at), or a ``\r\n`` (the text read only then)."""
    (_, e1), (s2, _) = sorted([a, b])
    if s2 - e1 <= 1:
        return True
    if s2 - e1 != 2:
        return False
    text = text_of(doc_id)
    return text is not None and text[e1:s2] == "\r\n"


def _touch(text: str, a: tuple[int, int], b: tuple[int, int], gap: int = 0) -> bool:
    """Whether two spans of ``text`` overlap, only whitespace lies between them, or at most ``gap``
    characters (a bridge, heading lines included: two hits on either side of one hold the provisions
    that go together, 第18条 and 第19条)."""
    (_, e1), (s2, _) = sorted([a, b])
    return s2 <= e1 or text[e1:s2].isspace() or 0 < s2 - e1 <= gap


def _shared_path(paths: list[tuple[str, ...]]) -> tuple[str, ...]:
    """The heading path that every one of ``paths`` starts with: the path of a span made of pieces from
    more than one section (the headings all of it sits under, as a chunk's path is)."""
    shared = paths[0]
    for path in paths[1:]:
        n = 0
        while n < min(len(shared), len(path)) and shared[n] == path[n]:
            n += 1
        shared = shared[:n]
    return shared


def _line_of(text: str, s: int, e: int) -> str:
    return text[s:e] if "\n" not in text[s:e].strip("\n") else ""


class _Around:
    """The sentences of the stretch ``[lo, hi)`` of ``text`` around a span that may grow: ``i`` is the
    sentence the span starts in, ``j`` the first that starts at or after its end. The sentences at the
    stretch's edges may be cut by it, so they are offered only where the stretch reaches the text's."""

    def __init__(self, text: str, start: int, end: int, limit: int, reading: _Reading) -> None:
        reach = max(_LOOKAROUND_MIN, _LOOKAROUND_PER_UNIT * limit)
        self.text = text
        self.reading = reading
        self.lo, self.hi = max(0, start - reach), min(len(text), end + reach)
        self.sentences = reading.units(self.lo, self.hi)
        self._starts = [a for a, _ in self.sentences]
        self.place(start, end)

    def place(self, s: int, e: int) -> None:
        """Count the sentences around the span ``[s, e)``."""
        self.s = s
        self.i = bisect.bisect_right(self._starts, s) - 1
        self.j = bisect.bisect_left(self._starts, e)

    def starts_at_heading(self) -> bool:
        """Whether the span starts with a heading line (it does not grow above its own heading)."""
        i = self.i
        return i >= 0 and self.sentences[i][0] == self.s and self.reading.is_heading(self.sentences[i])

    def next(self) -> tuple[int, int] | None:
        """The sentence after the span, if offered; a table's header with the row after it (a passage
        never ends with a header), taken together by `take_next`."""
        j, n = self.j, len(self.sentences)
        if not (j < n and (self.hi == len(self.text) or j < n - 1)):
            return None
        unit = self.sentences[j]
        if self.reading.is_table_header(unit):
            if not (j + 1 < n and (self.hi == len(self.text) or j + 1 < n - 1)):
                return None
            return unit[0], self.sentences[j + 1][1]
        return unit

    def take_next(self) -> None:
        """Count the sentence(s) `next` offered as the span's."""
        self.j += 2 if self.reading.is_table_header(self.sentences[self.j]) else 1

    def section_start(self, unit: tuple[int, int]) -> bool:
        """Whether ``unit`` is a heading line the span does not grow across (a table's header is none: it
        names the rows below it, inside the section)."""
        return self.reading.is_heading(unit) and not self.reading.is_table_header(unit)

    def prev(self) -> tuple[int, int] | None:
        """The sentence before the span, if offered."""
        i = self.i - 1
        return self.sentences[i] if i >= 0 and (self.lo == 0 or i > 0) else None


def grow_span(
    text: str,
    start: int,
    end: int,
    limit: int,
    size: Callable[[int, int], int],
    *,
    reading: _Reading | None = None,
) -> tuple[int, int]:
    """``[start, end)`` grown at sentence boundaries while ``size(s, e) <= limit``.

    First to the whole paragraph(s) it lies in, if they fit; then one sentence at a time, the next one
    after and the one before in turn, not crossing a heading line that follows (another section) nor
    going above the heading line the span sits under. Returns the bounds unchanged when nothing fits.
    ``reading``: the document's sentences and heading lines (`_Reading`: lines inside its code blocks).
    """
    if size(start, end) > limit:
        return start, end
    reading = reading if reading is not None else _Reading(text)
    around = _Around(text, start, end, limit, reading)
    lo, hi = around.lo, around.hi
    # the paragraph(s): between the blank lines / item lines around the span
    before = paragraph_cuts(text, lo, start + 1)
    after = paragraph_cuts(text, end, hi)
    p_start = before[-1] if before else lo
    p_end = after[0] if after else hi
    while p_start < p_end and text[p_start].isspace():
        p_start += 1
    while p_end > p_start and text[p_end - 1].isspace():
        p_end -= 1
    s, e = start, end
    if (
        (p_start, p_end) != (s, e)
        and p_start <= s
        and e <= p_end
        and size(p_start, p_end) <= limit
        and not reading.crosses_heading(e, p_end)
    ):
        s, e = p_start, p_end
    around.place(s, e)
    up_blocked = around.starts_at_heading()
    down_blocked = False
    while True:
        moved = False
        nxt = None if down_blocked else around.next()
        if nxt is not None:
            if around.section_start(nxt):
                down_blocked = True
            elif size(s, nxt[1]) <= limit:
                e = nxt[1]
                around.take_next()
                moved = True
            else:
                down_blocked = True
        prev = None if up_blocked else around.prev()
        if prev is not None:
            if size(prev[0], e) <= limit:
                s = prev[0]
                around.i -= 1
                moved = True
                if around.section_start(prev):  # the section's own heading: taken, and no further up
                    up_blocked = True
            else:
                up_blocked = True
        if not moved:
            break
    return s, e


def guided_span(
    text: str,
    start: int,
    end: int,
    limit: int,
    size: Callable[[int, int], int],
    wanted: frozenset[str],
    *,
    reading: _Reading | None = None,
) -> tuple[int, int]:
    """``[start, end)`` grown a sentence at a time towards the neighbour (after or before) that holds more
    of the ``wanted`` terms the span does not hold yet, while ``size(s, e) <= limit``; it stops where
    neither neighbour adds a wanted term, at a heading line that follows, and after the heading line the
    span sits under. A hit whose surroundings say nothing more of the query costs nothing more; one whose
    evidence goes on (a rule in several sentences, an answer next to the retrieved sentence) is followed.
    """
    if not wanted or size(start, end) > limit:
        return start, end
    reading = reading if reading is not None else _Reading(text)
    around = _Around(text, start, end, limit, reading)
    s, e = start, end
    held = wanted.intersection(tokenize(text[s:e]))
    up_blocked = around.starts_at_heading()
    down_blocked = False
    while True:
        options: list[
            tuple[int, int, frozenset[str], tuple[int, int]]
        ] = []  # (gain, after first, terms, sentence)
        nxt = None if down_blocked else around.next()
        if nxt is not None:
            if around.section_start(nxt):
                down_blocked = True
            else:
                new = wanted.intersection(tokenize(text[slice(*nxt)])) - held
                options.append((len(new), 1, frozenset(new), nxt))
        prev = None if up_blocked else around.prev()
        if prev is not None:
            new = wanted.intersection(tokenize(text[slice(*prev)])) - held
            options.append((len(new), 0, frozenset(new), prev))
        if not options:
            break
        gain, after, new, (a, b) = max(options)
        if gain == 0:
            break
        if after:
            if size(s, b) > limit:
                down_blocked = True
                continue
            e = b
            around.take_next()
        else:
            if size(a, e) > limit:
                up_blocked = True
                continue
            s = a
            around.i -= 1
            up_blocked = around.section_start((a, b))  # the section's own heading: no further up
        held |= new
    return s, e


def _has_ink(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` holds a letter or a digit outside HTML/MDX tags and code fence lines (not
    only markup and punctuation: ``-->``, ``---``, ``</Solution>``, a fence ``~~~css``)."""
    if _INK.search(text, start, end) is None:
        return False
    piece = text[start:end]
    if "<" not in piece and "``" not in piece and "~~" not in piece:
        return True
    return _INK.search(_FENCE_LINE.sub("", _TAG.sub("", piece))) is not None


class _Reading:
    """How the assembly steps through a text: by its sentences, and by its lines inside ``code`` (spans of
    fenced code blocks, where a ``!`` or ``.`` ends no sentence; a block's fence lines joined to its first
    and last line of code) and ``tables`` (``(start, end, header end)``: a table's rows, its header lines
    one unit); which of its units are heading lines (a short line without closing punctuation:
    `is_heading_line`, and a table's header; never a line of code nor a table row)."""

    def __init__(
        self, text: str, code: Sequence[tuple[int, int]] = (), tables: Sequence[tuple[int, int, int]] = ()
    ) -> None:
        self.text = text
        # (start, end, where the header ends: 0 for a code block)
        self.regions = sorted([(a, b, 0) for a, b in code] + [(a, b, h) for a, b, h in tables])
        self._ends = [b for _, b, _ in self.regions]
        self._headers: set[tuple[int, int]] = set()  # the header units of tables (`units`)

    def _in_lines(self, pos: int) -> bool:
        """Whether ``pos`` is inside a code block or a table (read by lines)."""
        i = bisect.bisect_right(self._ends, pos)
        return i < len(self.regions) and self.regions[i][0] <= pos

    def units(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """The sentences of ``[lo, hi)``, whitespace at either side excluded; inside a code block or a
        table its lines, blank ones left out."""
        if not self.regions:
            return sentence_spans_in(self.text, lo, hi)
        text = self.text
        out: list[tuple[int, int]] = []
        pos = lo
        for rs, rend, header_end in self.regions[bisect.bisect_right(self._ends, lo) :]:
            if rs >= hi:
                break
            a, b = max(rs, lo), min(rend, hi)
            if pos < a:
                out += sentence_spans_in(text, pos, a)
            lines: list[tuple[int, int]] = []
            for line in _LINE.finditer(text, a, b):
                s, e = line.span()
                while e > s and text[e - 1].isspace():
                    e -= 1
                while s < e and text[s].isspace():
                    s += 1
                if s < e:
                    lines.append((s, e))
            if header_end:  # a table: its header lines are one unit, read as a heading line (`is_heading`):
                # never passed alone nor at a run's end, and not glued to the first row, which would then
                # weigh more than the other rows when a row is chosen to fit (`Assembler._best_run`)
                if a == rs and lines:
                    k = sum(1 for s, _ in lines if s < header_end)
                    if k:
                        lines[:k] = [(lines[0][0], lines[k - 1][1])]
                        self._headers.add(lines[0])
            else:
                # a fence line goes with the line of code next to it: a passage never holds a fence alone
                # ("```css", nothing to read) nor starts at a closing or ends at an opening fence
                if a == rs and len(lines) > 1:
                    lines[:2] = [(lines[0][0], lines[1][1])]
                if b == rend and len(lines) > 1 and _CLOSING_FENCE.fullmatch(text, *lines[-1]) is not None:
                    lines[-2:] = [(lines[-2][0], lines[-1][1])]
            out += lines
            pos = max(pos, b)
        if pos < hi:
            out += sentence_spans_in(text, pos, hi)
        return out

    def is_table_header(self, span: tuple[int, int]) -> bool:
        """Whether ``span`` is a table's header unit (`units`)."""
        return span in self._headers

    def is_heading(self, span: tuple[int, int]) -> bool:
        if self.regions and self._in_lines(span[0]):
            return span in self._headers  # a table's header: it names its rows, as a heading its body
        line = _line_of(self.text, *span)
        return bool(line) and is_heading_line(line)

    def crosses_heading(self, a: int, b: int) -> bool:
        """Whether a heading line starts in ``(a, b)`` (taking the rest of a paragraph would enter another
        section)."""
        if not self.regions:
            return any(line.strip() and is_heading_line(line) for line in self.text[a:b].splitlines())
        for line in _LINE.finditer(self.text, a, b):
            if line.group().strip() and not self._in_lines(line.start()) and is_heading_line(line.group()):
                return True
        return False


_LINE = re.compile(r"[^\n]+")
_CLOSING_FENCE = re.compile(r"[> \t]*(?:`{3,}|~{3,})")  # a closing fence line (in a quote: behind its ``>``)
