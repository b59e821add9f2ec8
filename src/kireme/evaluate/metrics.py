"""Retrieval, purity, span and intrinsic metrics for a chunking — computed from exact chunk offsets.

Every function here works on `Chunk` spans (``doc_id``, ``start``, ``end``); nothing is located by
searching text again, except the plain "does the chunk contain the answer string" check that a
question without an answer offset allows.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kireme.document import Chunk, Document
from kireme.text.sentences import sentence_spans

if TYPE_CHECKING:
    from kireme.evaluate.datasets import Question

Span = tuple[int, int]


def contains_answer(question: Question, chunk: Chunk) -> bool:
    """A chunk answers a question when it holds every reference span (offsets known) or the answer text."""
    if question.references and question.doc_id is not None:
        if chunk.doc_id != question.doc_id:
            return False
        return all(chunk.start <= s and e <= chunk.end for s, e in question.references)
    if question.answer:
        if question.doc_id is not None and chunk.doc_id != question.doc_id:
            return False
        return answer_ink(question) in chunk.text
    return False


def answer_ink(question: Question) -> str:
    """The answer text without the whitespace around it (as the loaders' reference spans): a chunk never
    starts or ends with whitespace."""
    return question.answer.strip() or question.answer


def answered_by(question: Question, chunks: Sequence[Chunk]) -> bool:
    """The top-k chunks answer a question when every reference span lies whole inside one of them (a
    question with several evidence passages needs them all), or, without offsets, one holds the answer."""
    if question.references and question.doc_id is not None:
        mine = [c for c in chunks if c.doc_id == question.doc_id]
        return all(any(c.start <= s and e <= c.end for c in mine) for s, e in question.references)
    return any(contains_answer(question, c) for c in chunks)


def _union(spans: Iterable[Span]) -> list[Span]:
    out: list[Span] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        elif e > s:
            out.append((s, e))
    return out


def _length(spans: Sequence[Span]) -> int:
    return sum(e - s for s, e in spans)


def _intersection(a: Sequence[Span], b: Sequence[Span]) -> int:
    total, i, j = 0, 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


@dataclass(frozen=True)
class SpanScores:
    """How much of the gold evidence the retrieved chunks cover, in characters (Chroma's metrics)."""

    recall: float
    precision: float
    iou: float


def span_scores(retrieved: Sequence[Chunk], references: Sequence[Span], doc_id: str) -> SpanScores:
    """Recall, precision and IoU of the union of retrieved spans against the union of reference spans.

    Only chunks of ``doc_id`` can overlap the references; chunks of other documents count as retrieved
    text that holds no evidence. Overlapping chunks are counted once (union).
    """
    gold = _union(references)
    mine = _union((c.start, c.end) for c in retrieved if c.doc_id == doc_id)
    other = sum(c.end - c.start for c in retrieved if c.doc_id != doc_id)
    inter = _intersection(mine, gold)
    retrieved_len = _length(mine) + other
    gold_len = _length(gold)
    recall = inter / gold_len if gold_len else 0.0
    precision = inter / retrieved_len if retrieved_len else 0.0
    union = retrieved_len + gold_len - inter
    return SpanScores(recall, precision, inter / union if union else 0.0)


@dataclass(frozen=True)
class Purity:
    """Topic purity of one segmented document: topics kept whole and alone, chunks that mix topics."""

    topics: int
    pure_topics: int
    chunks: int
    mixed_chunks: int


def _non_space_overlap(text: str, a: Span, b: Span) -> bool:
    lo, hi = max(a[0], b[0]), min(a[1], b[1])
    return hi > lo and not text[lo:hi].isspace()


def topic_purity(text: str, segments: Sequence[Span], chunks: Sequence[Chunk]) -> Purity:
    """A topic is *pure* when one chunk holds all of it and nothing of another topic; a chunk is
    *mixed* when it holds (non-whitespace) text of two or more topics."""
    spans = [(c.start, c.end) for c in chunks]
    touches = [[k for k, seg in enumerate(segments) if _non_space_overlap(text, span, seg)] for span in spans]
    mixed = sum(1 for t in touches if len(t) > 1)
    pure = 0
    for k, seg in enumerate(segments):
        core = _strip(text, seg)
        if core[0] >= core[1]:
            continue
        holders = [i for i, span in enumerate(spans) if span[0] <= core[0] and core[1] <= span[1]]
        if any(touches[i] == [k] for i in holders):
            pure += 1
    return Purity(len(segments), pure, len(chunks), mixed)


def _strip(text: str, span: Span) -> Span:
    s, e = span
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return (s, e)


@dataclass(frozen=True)
class Intrinsic:
    """Properties of a chunking that need no questions: sizes, mid-sentence ends, violations, losses."""

    chunks: int
    min_size: int
    median_size: float
    mean_size: float
    max_size: int
    mid_sentence_end_share: float
    limit_violations: int
    chars_lost: int


def intrinsic(
    documents: Sequence[Document], chunks_by_doc: Sequence[Sequence[Chunk]], max_size: int
) -> Intrinsic:
    """Size distribution, the share of chunks that end inside a sentence, chunks over ``max_size``
    (must be 0) and non-whitespace characters no chunk covers (must be 0)."""
    sizes: list[int] = []
    mid = lost = 0
    for doc, chunks in zip(documents, chunks_by_doc, strict=True):
        ends = {e for _, e in sentence_spans(doc.text)}
        covered = _union((c.start, c.end) for c in chunks)
        pos = 0
        for s, e in [*covered, (len(doc.text), len(doc.text))]:
            lost += sum(1 for ch in doc.text[pos:s] if not ch.isspace())
            pos = max(pos, e)
        for c in chunks:
            sizes.append(c.size)
            if c.end not in ends:
                mid += 1
    if not sizes:
        return Intrinsic(0, 0, 0.0, 0.0, 0, 0.0, 0, lost)
    return Intrinsic(
        chunks=len(sizes),
        min_size=min(sizes),
        median_size=float(statistics.median(sizes)),
        mean_size=statistics.fmean(sizes),
        max_size=max(sizes),
        mid_sentence_end_share=mid / len(sizes),
        limit_violations=sum(1 for s in sizes if s > max_size),
        chars_lost=lost,
    )
