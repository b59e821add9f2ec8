"""Run chunkers over documents and questions (or gold segments) and summarise each configuration."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kireme.chunkers import Chunker
from kireme.document import Chunk, Document
from kireme.evaluate.datasets import Question, SegmentedDocument
from kireme.evaluate.metrics import answered_by, contains_answer, intrinsic, span_scores, topic_purity
from kireme.evaluate.retrievers import Retriever
from kireme.evaluate.segmentation import boundary_scores, pk, windowdiff
from kireme.length import Tokens
from kireme.text.sentences import sentence_spans


@dataclass(frozen=True)
class Miss:
    """A question whose answer no retrieved chunk holds, with the chunk that was returned first."""

    question: str
    answer: str
    returned: str
    answer_chunk: str | None  # the chunk that does hold the answer, if any (where it went)


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

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "misses"}
        return d


def chunk_corpus(chunker: Chunker, documents: Sequence[Document]) -> list[list[Chunk]]:
    return [chunker.chunk(doc) for doc in documents]


def evaluate_retrieval(
    chunker: Chunker,
    documents: Sequence[Document],
    questions: Sequence[Question],
    retriever_factory: Callable[[], Retriever],
    *,
    k: int = 1,
    label: str | None = None,
) -> RetrievalRow:
    """Chunk every document, index all chunks together, ask every question, score the top-k."""
    per_doc = chunk_corpus(chunker, documents)
    chunks = [c for doc_chunks in per_doc for c in doc_chunks]
    checks = intrinsic(documents, per_doc, chunker.max_size)
    retriever = retriever_factory()
    retriever.fit(chunks)
    counter = Tokens()
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
            misses.append(Miss(q.question, q.answer, top[0].text if top else "", holder))
        if q.references and q.doc_id is not None:
            scores = span_scores(top, q.references, q.doc_id)
            recalls.append(scores.recall)
            precisions.append(scores.precision)
            ious.append(scores.iou)
    n = len(questions)

    def mean(values: list[float]) -> float | None:
        return sum(values) / len(values) if values else None

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
        k=k,
        retriever=getattr(retriever, "name", "custom"),
        span_recall=mean(recalls),
        span_precision=mean(precisions),
        span_iou=mean(ious),
        mid_sentence_end_share=checks.mid_sentence_end_share,
        limit_violations=checks.limit_violations,
        chars_lost=checks.chars_lost,
        misses=tuple(misses),
    )


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


def unit_ends(text: str) -> list[int]:
    """End offsets of the units boundaries are measured in: sentences, and lines (one per line in Choi)."""
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
    for sd in documents:
        text = sd.document.text
        chunks = chunker.chunk(sd.document)
        purity = topic_purity(text, sd.segments, chunks)
        n_chunks += purity.chunks
        topics += purity.topics
        pure += purity.pure_topics
        mixed += purity.mixed_chunks
        ends = unit_ends(text)
        n = len(ends)
        if n < 2:
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
