"""Hit at a context budget: kireme's assembled context against its peers, same data, same retriever, same budget.

A reader is handed a budget of characters, not k chunks. For each question the retriever ranks a
configuration's retrieval units, the context handed to the reader is built within the budget, and a hit is a
question whose gold answer lies wholly inside that context, by exact offsets into the document (the rule of
`kireme.evaluate.runner.context_answers`: every reference span inside one passage of the context).
Reported per configuration and budget (``--budgets``, default 300 700 1500 3000 characters): ``hit`` (the
share of hits, hit_at_budget) and ``chars`` (mean characters passed per question, separators not counted).

Sets (from ``../shared/corpora``, ``--corpora`` to move; no corpora root: skipped with exit 0; one corpus
absent: reported and left out):

* ``jsquad``: JSQuAD v1.3 *valid*, one document per article (`kireme.evaluate.datasets.load_squad`);
  ``--final-report`` reads the reserved test file (``test-v1.3.json``) instead, and nothing else does.
* ``jaquad``: JaQuAD dev, one document per article.
* ``lawqa``: lawqa-jp, 140 questions (query: 問題文 + 選択肢), one document per law, built by
  ``benchmarks/lawqa.py``'s loader. The gold is the question's excerpt (median 486 characters, several
  provisions, often of several laws), so two rules are reported: ``lawqa`` — the context holds at least one
  whole text line (provision line) of the excerpt; ``lawqa-all`` — it holds every text line of the excerpt
  (each line somewhere it occurs), i.e. the whole excerpt.
* ``chroma``: Chroma's chunking-evaluation corpora and questions (English,
  `kireme.evaluate.datasets.load_chroma`); a question's references are all its evidence excerpts.

Every document of a set (first ``--articles``) goes into one index; ``--questions`` (default 500) are
sampled per set with ``--seed`` (order kept); lawqa has 140 in all.

The same retriever for everyone: `kireme.evaluate.retrievers.BM25Retriever` (bm25s over words and Japanese
character bigrams) over each retrieval unit's indexed text, which is the document title, a newline, and the
unit's text — the same title in front of every unit of every configuration (the article title; lawqa: the law
name; Chroma: the corpus name, ``_`` read as a space). What is passed to the reader never includes it.

Configurations, sizes in characters (``--sizes``, default 200 400), overlap 0:

* ``kireme spans``: ``make_chunker("recursive", max_size=N, unit="chars", context="none")`` (the title comes
  from the common prefix above, not from kireme's ``context="title"``) and
  `kireme.evaluate.runner.evaluate_budgets` with ``assembly="spans"`` (`kireme.assemble`: merge hits that
  touch, grow them at sentence boundaries, widen the best when the budget allows, cut a hit to fit). Its
  per-question hits come from the same assembly (`kireme.assemble.Assembler` on the same ranking), checked
  equal to ``evaluate_budgets``'s rows on the first set with offsets (``--no-check`` to skip).
* ``kireme chunks`` (control): the same chunks, ``assembly="chunks"`` (whole chunks in rank order until the
  budget is full; when not even one fits, kireme still cuts the best to the budget).
* Peers, each "top-k in rank order until the budget is full": a unit is passed whole when it fits what is
  left of the budget, skipped when it does not (the next one is tried); an identical passage is not passed
  twice. LangChain ``RecursiveCharacterTextSplitter(chunk_size=N, chunk_overlap=0)`` with its default
  separators and with Japanese ones (``["\\n\\n", "\\n", "。", "、", " ", ""]``, its other defaults kept:
  ``keep_separator=True`` puts a separator at the start of the next chunk); LlamaIndex
  ``SentenceSplitter(tokenizer=list)``; chonkie ``RecursiveChunker(tokenizer="character")``; semchunk
  ``chunkerify(len, N)``; semantic-text-splitter ``TextSplitter(N)`` — built and placed into the text by
  ``benchmarks/_peers.py`` (own offsets verified, else a forward search from the previous chunk).
* Sentence window (LlamaIndex's small-to-big anchor): ``SentenceWindowNodeParser.from_defaults(window_size=3,
  sentence_splitter=...)`` with kireme's sentence rules as the splitter (``kireme.text.sentences.
  sentence_spans``; LlamaIndex's default splits English only) — each sentence node is indexed, and each hit
  goes through ``MetadataReplacementPostProcessor(target_metadata_key="window")``; the reader gets the hit's
  window, placed by offsets (from the first to the last sentence node of the window: the original text, not
  LlamaIndex's ``" "``-joined string, which is checked equal to it up to whitespace), in rank order until the
  budget is full, a window that does not fit skipped.
* Parent document (LangChain's small-to-big anchor): ``langchain_classic.retrievers.ParentDocumentRetriever``
  with an ``InMemoryStore``, ``RecursiveCharacterTextSplitter`` children of 200 (and 100) and parents of 800
  (and 1000) (Japanese separators, ``add_start_index=True`` on the parents for their offsets), and a small
  ``VectorStore`` shim whose ``similarity_search`` is the same BM25 over the children (title in front). The
  real class maps children to parent ids and de-duplicates them in order of first child hit; the parents go
  to the reader in that order until the budget is full. Without langchain-classic the same logic is
  reproduced (children ranked, parents in order of first child hit) and the label says so.

Statistics: ``kireme ±pp (p)`` is kireme spans minus the configuration, in points of hit rate, at the same
size (the sentence window and parent-document anchors against kireme spans 200), with an exact McNemar test
(two-sided binomial on the questions where exactly one of the two hits); the anchors are also compared with
kireme spans at the other sizes (a line under each table, and ``also`` in the JSON, which keeps every row's
per-question hits). ``--stitch``: a sensitivity check — whole-unit contexts (peers, anchors, kireme chunks)
are judged with their passages that touch in the document merged into one, as if the reader put them back
together (kireme spans merges them itself); without it every configuration is judged by the same rule on the
passages it hands over. ``--configs`` filters every configuration but kireme spans (always run: the
reference). kireme's `evaluate_budgets` decides how deep the ranking goes for kireme (its row's ``k``); the
whole-unit configurations read as deep as their budget needs.

    .venv-bench/bin/python benchmarks/budget.py --markdown
    .venv-bench/bin/python benchmarks/budget.py --sets jsquad --questions 200 --budgets 300 700
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from _corpora import add_corpora_argument, corpora_present, corpus_path  # noqa: E402
from _peers import (  # noqa: E402
    Peer,
    Piece,
    Placement,
    Placer,
    chonkie_peer,
    langchain_peer,
    llamaindex_peer,
    semchunk_peer,
    text_splitter_peer,
    versions,
)
from _report import print_table  # noqa: E402
from kireme.assemble import Assembler, Context  # noqa: E402
from kireme.document import Chunk, Document  # noqa: E402
from kireme.evaluate.datasets import Question, load_chroma, load_squad  # noqa: E402
from kireme.evaluate.retrievers import BM25Retriever  # noqa: E402
from kireme.evaluate.runner import (  # noqa: E402
    context_answers,
    evaluate_budgets,
    fit_corpus,
    ranked_units,
)
from kireme.strategies import make_chunker  # noqa: E402
from kireme.text.sentences import sentence_spans  # noqa: E402

SETS = ("jsquad", "jaquad", "lawqa", "chroma")
BUDGETS = (300, 700, 1500, 3000)
SIZES = (200, 320, 400)  # 320: the `kireme index` default
JA_SEPARATORS = ["\n\n", "\n", "。", "、", " ", ""]
PARENTS = ((200, 800), (100, 1000))  # (child, parent) sizes of the parent-document anchor
ANCHOR_SIZE = 200  # the kireme spans size the anchors are compared with
SENTENCE_SPLITTER = "kireme.text.sentences.sentence_spans"

Span = tuple[str, int, int]  # (doc id, start, end) of a passage handed to the reader


# ------------------------------------------------------------------------------------------------ sets


@dataclass
class Task:
    """One question set: its documents, questions and the rule(s) that say whether a context answers."""

    name: str
    documents: list[Document]
    questions: list[Question]
    titles: dict[str, str]  # doc id -> the title put in front of every unit's indexed text
    views: dict[str, Callable[[int, Sequence[Span]], bool]]  # view name -> hit(question index, passages)
    total_questions: int  # before sampling
    stitch: bool = False  # count passages of a whole-unit context that touch in the document as one

    def __post_init__(self) -> None:
        self.texts = {d.id: d.text for d in self.documents}

    def stitched(self, spans: Sequence[Span]) -> list[Span]:
        """``spans`` with those that overlap or touch (only whitespace between) in one document merged, as
        if the reader put them back together; kireme's ``spans`` assembly does this itself."""
        out: list[Span] = []
        for d, s, e in sorted(spans):
            if out and out[-1][0] == d and (s <= out[-1][2] or self.texts[d][out[-1][2] : s].isspace()):
                out[-1] = (d, out[-1][1], max(out[-1][2], e))
            else:
                out.append((d, s, e))
        return out


def answers(question: Question, spans: Sequence[Span]) -> bool:
    """`kireme.evaluate.runner.context_answers` on plain (doc id, start, end) passages."""
    if question.references and question.doc_id is not None:
        mine = [(s, e) for d, s, e in spans if d == question.doc_id]
        return all(any(s <= a and b <= e for s, e in mine) for a, b in question.references)
    return False  # every set here has offsets


def _sample(n: int, wanted: int | None, seed: int) -> list[int]:
    if wanted is None or wanted >= n:
        return list(range(n))
    return sorted(random.Random(seed).sample(range(n), wanted))


def load_task(
    root: Path, name: str, *, articles: int | None, questions: int | None, seed: int, final: bool
) -> Task | None:
    if name in ("jsquad", "jaquad", "chroma"):
        if name == "jsquad" and final:
            found = root / "jsquad" / "test-v1.3.json"
            path = found if found.is_file() else None
        else:
            path = corpus_path(
                root, {"jsquad": "jsquad-valid", "jaquad": "jaquad-dev"}.get(name, name), quiet=True
            )
        if path is None:
            return None
        qa = load_squad(path, name=name) if name != "chroma" else load_chroma(path)
        documents = qa.documents[:articles] if articles is not None else qa.documents
        keep = {d.id for d in documents}
        pool = [q for q in qa.questions if q.doc_id in keep]
        chosen = [pool[i] for i in _sample(len(pool), questions, seed)]
        titles = {d.id: str(d.metadata.get("title") or d.id.replace("_", " ")) for d in documents}
        label = "jsquad-test" if name == "jsquad" and final else name
        return Task(
            label,
            documents,
            chosen,
            titles,
            {label: lambda i, spans: answers(chosen[i], spans)},
            len(pool),
        )
    if name != "lawqa":
        raise ValueError(name)
    path = root / "lawqa-jp"
    if not (path / "data" / "selection.json").is_file():
        return None
    from lawqa import load_lawqa

    law = load_lawqa(path, "question+choices")
    documents = law.documents[:articles] if articles is not None else law.documents
    keep = {d.id for d in documents}
    pool = [q for q in law.questions if q.targets and all(d in keep for d, _, _ in q.targets)]
    chosen = [pool[i] for i in _sample(len(pool), questions, seed)]
    texts = {d.id: d.text for d in documents}
    # one group per distinct text line of the excerpt: every place that line occurs
    groups: list[list[list[tuple[str, int, int]]]] = []
    for q in chosen:
        by_line: dict[tuple[str, str], list[tuple[str, int, int]]] = {}
        for d, s, e in q.targets:
            by_line.setdefault((d, texts[d][s:e]), []).append((d, s, e))
        groups.append(list(by_line.values()))

    def inside(target: tuple[str, int, int], spans: Sequence[Span]) -> bool:
        d, a, b = target
        return any(sd == d and s <= a and b <= e for sd, s, e in spans)

    def any_line(i: int, spans: Sequence[Span]) -> bool:
        return any(inside(t, spans) for t in chosen[i].targets)

    def all_lines(i: int, spans: Sequence[Span]) -> bool:
        return all(any(inside(t, spans) for t in group) for group in groups[i])

    questions_ = [Question(question=q.query, answer="", id=q.id) for q in chosen]
    return Task(
        "lawqa",
        documents,
        questions_,
        {d.id: d.id for d in documents},
        {"lawqa": any_line, "lawqa-all": all_lines},
        len(pool),
    )


# --------------------------------------------------------------------------------------- configurations


def prefixed(title: str, text: str) -> str:
    """What is indexed for a unit: the title, a newline, the unit's text."""
    return f"{title}\n{text}" if title else text


@dataclass
class Titled:
    """A kireme chunker whose chunks index the title in front of their text (``text`` is unchanged)."""

    inner: Any
    titles: dict[str, str]

    def chunk(self, document: Document) -> list[Chunk]:
        title = self.titles.get(document.id, "")
        return [replace(c, embed_text=prefixed(title, c.text)) for c in self.inner.chunk(document)]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@dataclass
class Index:
    """A configuration's retrieval units and what the reader gets for each.

    ``units``: what is ranked (kireme `Chunk`s, ``embed_text`` indexed); ``passage_of[i]``: the passage unit i
    hands to the reader (an index into ``passages``, exact spans, identical spans shared); ``rank(question,
    k)`` (optional): passage indices best first for the top-k units, when the configuration ranks by itself
    (the parent-document retriever); ``n_ranked``: how many units ``k`` can reach."""

    label: str
    size: str
    units: list[Chunk]
    passage_of: list[int]
    passages: list[Span]
    placement: str = "exact"
    notes: list[str] = field(default_factory=list)
    rank: Callable[[Question, int], list[int]] | None = None
    ranked: int = 0  # units ``rank`` can reach when ``units`` is empty (the retriever holds them)

    @property
    def n_units(self) -> int:
        return len(self.units) or self.ranked


def _unit(doc: Document, start: int, end: int, index: int, title: str) -> Chunk:
    text = doc.text[start:end]
    return Chunk(
        text=text,
        start=start,
        end=end,
        doc_id=doc.id,
        index=index,
        id="",
        size=end - start,
        unit="chars",
        embed_text=prefixed(title, text),
    )


def _passages(spans: Sequence[Span]) -> tuple[list[int], list[Span]]:
    """(passage index per unit, distinct passages)."""
    seen: dict[Span, int] = {}
    return [seen.setdefault(s, len(seen)) for s in spans], list(seen)


def peer_index(label: str, size: int, peer: Peer, task: Task) -> Index:
    """A peer splitter's chunks, placed into the text; each unit is its own passage."""
    split = peer.splitter()
    placement = Placement()
    units: list[Chunk] = []
    for doc in task.documents:
        placer = Placer(doc.text, placement)
        for start, end in placer.spans(split(doc.text)):
            units.append(_unit(doc, start, end, len(units), task.titles[doc.id]))
    passage_of, passages = _passages([(u.doc_id, u.start, u.end) for u in units])
    return Index(label, str(size), units, passage_of, passages, placement.describe(), list(peer.notes))


def langchain_ja_peer(size: int) -> Peer:
    """LangChain ``RecursiveCharacterTextSplitter`` with Japanese separators (other options default)."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    def make() -> Callable[[str], Any]:
        return RecursiveCharacterTextSplitter(
            separators=JA_SEPARATORS, chunk_size=size, chunk_overlap=0
        ).split_text

    return Peer("langchain", make, lambda texts: [Piece(t) for t in texts], offsets=False)


# label -> factory of a peer at ``size`` characters
PEERS: dict[str, Callable[[int], Peer]] = {
    "LangChain Recursive (ja separators)": langchain_ja_peer,
    "LangChain Recursive (default separators)": lambda n: langchain_peer("recursive", n),
    "LlamaIndex SentenceSplitter": lambda n: llamaindex_peer("sentence", n),
    "chonkie RecursiveChunker": lambda n: chonkie_peer("recursive", n),
    "semchunk": semchunk_peer,
    "semantic-text-splitter": text_splitter_peer,
}


def _compact(text: str) -> str:
    return "".join(text.split())


def sentence_window_index(task: Task) -> Index:
    """LlamaIndex ``SentenceWindowNodeParser`` (window 3, kireme's sentence rules): one unit per sentence
    node, its passage the node's window placed by offsets; ``rank`` runs the hits through the real
    ``MetadataReplacementPostProcessor`` and checks its text against the placed window."""
    from llama_index.core import Document as LIDocument
    from llama_index.core.node_parser import SentenceWindowNodeParser
    from llama_index.core.postprocessor import MetadataReplacementPostProcessor
    from llama_index.core.schema import NodeWithScore

    def split(text: str) -> list[str]:
        return [text[s:e] for s, e in sentence_spans(text)]

    parser = SentenceWindowNodeParser.from_defaults(sentence_splitter=split, window_size=3)
    placement = Placement()
    units: list[Chunk] = []
    nodes: list[Any] = []
    spans: list[Span] = []
    windows: dict[str, str] = {}  # node id -> the window text LlamaIndex built
    for doc in task.documents:
        doc_nodes = parser.get_nodes_from_documents([LIDocument(text=doc.text)])
        placer = Placer(doc.text, placement)
        # LlamaIndex finds each node's offsets from the previous node's start + 1: one that would overlap the
        # previous node (a repeated sentence such as a lone "。") is searched for forward instead
        placed = []
        for n in doc_nodes:
            own = n.start_char_idx is not None and n.start_char_idx >= placer.position
            placed.append(
                placer.place(n.text, *((n.start_char_idx, n.end_char_idx) if own else (None, None)))
            )
        for i, (node, span) in enumerate(zip(doc_nodes, placed, strict=True)):
            if span is None:
                continue
            lo = max(0, i - parser.window_size)
            hi = min(len(doc_nodes), i + parser.window_size + 1)
            window = [p for p in placed[lo:hi] if p is not None]
            w_start, w_end = window[0][0], window[-1][1]
            assert _compact(node.metadata["window"]) == _compact(doc.text[w_start:w_end]), (doc.id, i)
            windows[node.node_id] = node.metadata["window"]
            units.append(_unit(doc, span[0], span[1], len(units), task.titles[doc.id]))
            nodes.append(node)
            spans.append((doc.id, w_start, w_end))
    passage_of, passages = _passages(spans)
    postprocessor = MetadataReplacementPostProcessor(target_metadata_key="window")
    retriever = BM25Retriever()
    retriever.fit(units)

    def rank(question: Question, k: int) -> list[int]:
        order = retriever.search(question.question, k, question.terms)
        hits = [NodeWithScore(node=nodes[i], score=float(len(order) - r)) for r, i in enumerate(order)]
        out = []
        for i, hit in zip(order, postprocessor.postprocess_nodes(hits), strict=True):
            d, s, e = passages[passage_of[i]]
            assert hit.node.get_content() == windows[nodes[i].node_id]
            assert _compact(hit.node.get_content()) == _compact(text_of[d][s:e])
            out.append(passage_of[i])
        return out

    text_of = {d.id: d.text for d in task.documents}
    return Index(
        "LlamaIndex SentenceWindow + MetadataReplacement",
        "sentence ±3",
        units,
        passage_of,
        passages,
        placement.describe(),
        [f"sentence_splitter={SENTENCE_SPLITTER}"],
        rank,
    )


class _BM25Store:
    """A LangChain ``VectorStore`` whose similarity search is kireme's BM25 over the texts added (the title
    from the metadata in front of each), so the real ``ParentDocumentRetriever`` can run on it."""

    @staticmethod
    def make() -> Any:
        from langchain_core.documents import Document as LCDocument
        from langchain_core.vectorstores import VectorStore

        class BM25Store(VectorStore):
            def __init__(self) -> None:
                self.docs: list[Any] = []
                self.retriever: BM25Retriever | None = None

            def add_texts(self, texts: Any, metadatas: Any = None, **kwargs: Any) -> list[str]:
                metadatas = metadatas or [{} for _ in texts]
                for text, meta in zip(texts, metadatas, strict=True):
                    self.docs.append(LCDocument(page_content=text, metadata=dict(meta)))
                self.retriever = None
                return [str(i) for i in range(len(self.docs) - len(metadatas), len(self.docs))]

            def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Any]:
                if self.retriever is None:
                    self.retriever = BM25Retriever()
                    self.retriever.fit(
                        [
                            Chunk(
                                text=d.page_content,
                                start=0,
                                end=len(d.page_content),
                                doc_id="",
                                index=i,
                                id="",
                                size=len(d.page_content),
                                unit="chars",
                                embed_text=prefixed(d.metadata.get("title", ""), d.page_content),
                            )
                            for i, d in enumerate(self.docs)
                        ]
                    )
                return [self.docs[i] for i in self.retriever.search(query, k)]

            @classmethod
            def from_texts(
                cls, texts: Any, embedding: Any = None, metadatas: Any = None, **kwargs: Any
            ) -> Any:
                store = cls()
                store.add_texts(texts, metadatas)
                return store

        return BM25Store()


def parent_index(task: Task, child: int, parent: int) -> Index:
    """LangChain's ``ParentDocumentRetriever`` (children ``child``, parents ``parent`` characters)."""
    from langchain_core.documents import Document as LCDocument
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    child_splitter = RecursiveCharacterTextSplitter(
        separators=JA_SEPARATORS, chunk_size=child, chunk_overlap=0
    )
    parent_splitter = RecursiveCharacterTextSplitter(
        separators=JA_SEPARATORS, chunk_size=parent, chunk_overlap=0, add_start_index=True
    )
    sources = [
        LCDocument(page_content=d.text, metadata={"kireme_doc": d.id, "title": task.titles[d.id]})
        for d in task.documents
    ]
    store = _BM25Store.make()
    try:
        from langchain_classic.retrievers import ParentDocumentRetriever
        from langchain_classic.storage import InMemoryStore

        real = True
    except ImportError:
        real = False
    if real:
        docstore = InMemoryStore()
        pdr = ParentDocumentRetriever(
            vectorstore=store,
            docstore=docstore,
            child_splitter=child_splitter,
            parent_splitter=parent_splitter,
        )
        pdr.add_documents(sources)
        parents = docstore.mget(list(docstore.yield_keys()))
    else:  # the same steps by hand: split parents, children of each parent, index children
        parents = parent_splitter.split_documents(sources)
        for number, p in enumerate(parents):
            children = child_splitter.split_documents([p])
            for c in children:
                c.metadata["doc_id"] = str(number)
            store.add_documents(children)
    # place the parents (their own start_index, verified; else the forward search), in order per document
    texts = {d.id: d.text for d in task.documents}
    placement = Placement()
    placers: dict[str, Placer] = {}
    key_of: dict[tuple[str, int, str], int] = {}
    spans: list[Span] = []
    for p in parents:
        d, s = p.metadata["kireme_doc"], p.metadata["start_index"]
        placer = placers.setdefault(d, Placer(texts[d], placement))
        span = placer.place(p.page_content, s, s + len(p.page_content))
        if span is not None:
            key_of[(d, s, p.page_content)] = len(spans)
            spans.append((d, *span))
    passage_of, passages = _passages(spans)
    n_children = len(store.docs)

    def rank(question: Question, k: int) -> list[int]:
        if real:
            pdr.search_kwargs = {"k": k}
            found = pdr.invoke(question.question)
        else:
            ids: list[str] = []
            for c in store.similarity_search(question.question, k):
                if c.metadata["doc_id"] not in ids:
                    ids.append(c.metadata["doc_id"])
            found = [parents[int(i)] for i in ids]
        out = []
        for p in found:
            i = key_of.get((p.metadata["kireme_doc"], p.metadata["start_index"], p.page_content))
            if i is not None:
                out.append(passage_of[i])
        return out

    label = "LangChain ParentDocumentRetriever" + ("" if real else " (logic reproduced)")
    notes = [f"{n_children} children, {len(parents)} parents"]
    return Index(label, f"{child}→{parent}", [], [], passages, placement.describe(), notes, rank, n_children)


# ------------------------------------------------------------------------------------------- evaluation


@dataclass
class Row:
    """One configuration on one view of a set: per budget the hits (one bool per question) and chars."""

    label: str
    size: str
    kind: str  # "spans", "chunks" (kireme), "greedy" (peers, anchors)
    compare_to: str  # the kireme spans label it is compared with ("" for kireme spans)
    hits: dict[int, list[bool]] = field(default_factory=dict)
    chars: dict[int, float] = field(default_factory=dict)
    units: int = 0
    mean_unit: float = 0.0
    mean_passage: float = 0.0
    placement: str = "exact"
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


def greedy_fill(
    order: Sequence[int], passages: Sequence[Span], budget: int, smallest: int
) -> tuple[list[Span], bool]:
    """Passages in rank order, whole, while they fit what is left of ``budget`` (one that does not is skipped,
    one already passed is not passed again). Returns the passages and whether the ranking ran out while
    another passage could still have fitted (then a longer ranking is needed)."""
    taken: list[Span] = []
    seen: set[int] = set()
    total = 0
    for p in order:
        if budget - total < smallest:
            return taken, False
        if p in seen:
            continue
        span = passages[p]
        size = span[2] - span[1]
        if total + size <= budget:
            taken.append(span)
            seen.add(p)
            total += size
    return taken, budget - total >= smallest


def evaluate_greedy(index: Index, task: Task, budgets: Sequence[int]) -> dict[str, Row]:
    """Top-k in rank order until the budget is full, for every question and budget, on every view."""
    t0 = time.perf_counter()
    smallest = min((e - s for _, s, e in index.passages), default=1) or 1
    n_units = index.n_units
    if index.rank is None:
        retriever = BM25Retriever()
        retriever.fit(index.units)

        def rank(q: Question, k: int) -> list[int]:
            out, seen = [], set()
            for i in retriever.search(q.question, k, q.terms):
                if index.passage_of[i] not in seen:
                    seen.add(index.passage_of[i])
                    out.append(index.passage_of[i])
            return out
    else:
        rank = index.rank
    rows = {
        view: Row(
            index.label, index.size, "greedy", "", units=n_units, placement=index.placement, notes=index.notes
        )
        for view in task.views
    }
    chars = dict.fromkeys(budgets, 0)
    for qi, q in enumerate(task.questions):
        k = min(n_units, 64)
        while True:
            order = rank(q, k)
            fills = [greedy_fill(order, index.passages, b, smallest) for b in budgets]
            if k >= n_units or not any(short for _, short in fills):
                break
            k = min(n_units, 4 * k)
        for budget, (taken, _) in zip(budgets, fills, strict=True):
            chars[budget] += sum(e - s for _, s, e in taken)
            judged = task.stitched(taken) if task.stitch else taken
            for view, hit in task.views.items():
                rows[view].hits.setdefault(budget, []).append(hit(qi, judged))
    n = max(len(task.questions), 1)
    for row in rows.values():
        row.chars = {b: chars[b] / n for b in budgets}
        if index.units:
            row.mean_unit = sum(len(u.text) for u in index.units) / max(n_units, 1)
        row.mean_passage = sum(e - s for _, s, e in index.passages) / max(len(index.passages), 1)
        row.seconds = time.perf_counter() - t0
    return rows


def evaluate_kireme(
    size: int, task: Task, budgets: Sequence[int], *, check: bool
) -> tuple[dict[str, Row], dict[str, Row]]:
    """kireme recursive at ``size``: (spans rows, chunks rows) per view, from one chunking and one index.

    The assembly is `evaluate_budgets`'s (same `Assembler`, same ranking depth); with ``check``, its rows
    are computed too and must agree with the hits counted here (SQuAD-style sets, whose rule is
    ``context_answers``)."""
    t0 = time.perf_counter()
    chunker = Titled(make_chunker("recursive", max_size=size, unit="chars", context="none"), task.titles)
    fitted = fit_corpus(chunker, task.documents, BM25Retriever)  # type: ignore[arg-type]
    chunks, retriever = fitted.chunks, fitted.retriever
    for c in chunks:
        assert c.embed_text.endswith(c.text)
    texts = {d.id: d.text for d in task.documents}
    # as deep a ranking as evaluate_budgets asks for (its row's ``k``; the rule is kireme's to change)
    probe = evaluate_budgets(
        chunker,  # type: ignore[arg-type]
        task.documents,
        task.questions[:1],
        BM25Retriever,
        budgets,
        fitted=fitted,
    )
    # per budget, as many of the best hits as evaluate_budgets gives that budget (its rows' ``k``)
    wants = {row.budget: row.k for row in probe} if probe else {}
    most = max(wants.values(), default=len(chunks))
    out: dict[str, dict[str, Row]] = {}
    for policy in ("spans", "chunks"):
        assembler = Assembler(texts.get, chunker.measure, unit=chunker.measure.name, policy=policy)
        label = f"kireme recursive, {policy}"
        rows = {
            view: Row(
                label,
                str(size),
                policy,
                "" if policy == "spans" else f"kireme recursive, spans {size}",
                units=len(chunks),
                mean_unit=sum(len(c.text) for c in chunks) / max(len(chunks), 1),
            )
            for view in task.views
        }
        chars = dict.fromkeys(budgets, 0)
        plain = dict.fromkeys(budgets, 0)  # hits by context_answers itself, for the check
        for qi, q in enumerate(task.questions):
            ranking = ranked_units(chunks, retriever.search(q.question, most, q.terms))
            for budget in budgets:
                ranked = ranking[: wants.get(budget, most)]
                made: Context = assembler.assemble(ranked, budget, q.question)
                spans = [(s.doc_id, s.start, s.end) for s in made.spans]
                assert all(texts[d][s:e] == sp.text for (d, s, e), sp in zip(spans, made.spans, strict=True))
                chars[budget] += sum(len(s.text) for s in made.spans)
                for view, hit in task.views.items():
                    got = hit(qi, spans)
                    if q.references:
                        assert got == context_answers(q, made)
                        plain[budget] += got
                    if task.stitch and policy == "chunks":
                        got = hit(qi, task.stitched(spans))
                    rows[view].hits.setdefault(budget, []).append(got)
        n = max(len(task.questions), 1)
        for row in rows.values():
            row.chars = {b: chars[b] / n for b in budgets}
            row.seconds = time.perf_counter() - t0
        if check and all(q.references for q in task.questions):
            reference = evaluate_budgets(
                chunker,  # type: ignore[arg-type]
                task.documents,
                task.questions,
                BM25Retriever,
                budgets,
                assembly=policy,
                fitted=fitted,
            )
            for ref in reference:
                (row,) = rows.values()
                assert ref.budget is not None
                assert ref.hits == plain[ref.budget], (policy, ref.budget, ref.hits)
                assert abs(ref.chars_passed - row.chars[ref.budget]) < 1e-6, (policy, ref.budget)
            print(f"#   checked against evaluate_budgets (assembly={policy!r}): equal", file=sys.stderr)
        out[policy] = rows
    return out["spans"], out["chunks"]


# -------------------------------------------------------------------------------------------- statistics


def mcnemar(a: Sequence[bool], b: Sequence[bool]) -> tuple[int, int, float]:
    """(a hits where b misses, b hits where a misses, exact two-sided McNemar p: binomial, p = 1/2, on
    the discordant pairs)."""
    wins = sum(x and not y for x, y in zip(a, b, strict=True))
    losses = sum(y and not x for x, y in zip(a, b, strict=True))
    n = wins + losses
    if n == 0:
        return wins, losses, 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2**n
    return wins, losses, min(1.0, 2 * tail)


def _p(p: float) -> str:
    return "<.001" if p < 0.001 else f"{p:.3f}".lstrip("0") if p < 1 else "1"


def _rate(hits: Sequence[bool]) -> float:
    return sum(hits) / len(hits) if hits else 0.0


def compare(rows: list[Row], budgets: Sequence[int]) -> list[dict[str, Any]]:
    """Each row as a dict with, per budget, hit, chars and its comparison with kireme spans."""
    spans = {f"{r.label} {r.size}": r for r in rows if r.kind == "spans"}
    out = []
    for r in rows:
        ref = spans.get(r.compare_to) if r.kind != "spans" else None
        d: dict[str, Any] = {
            "config": r.label,
            "size": r.size,
            "kind": r.kind,
            "compared_with": r.compare_to if ref else None,
            "units": r.units,
            "mean_unit_chars": round(r.mean_unit, 1),
            "mean_passage_chars": round(r.mean_passage, 1),
            "placement": r.placement,
            "notes": r.notes,
            "seconds": round(r.seconds, 1),
            "budgets": {},
            "hits": {b: "".join("1" if h else "0" for h in r.hits[b]) for b in budgets},  # per question
        }
        others = (
            [o for o in spans.values() if o is not ref] if ref is not None and not r.size.isdigit() else []
        )
        if others:  # an anchor: also against kireme spans at the other sizes
            d["also"] = {
                f"{o.label} {o.size}": {
                    b: dict(zip(("kireme_pp", "p"), _diff(o.hits[b], r.hits[b]), strict=True))
                    for b in budgets
                }
                for o in others
            }
        for b in budgets:
            cell: dict[str, Any] = {"hit": _rate(r.hits[b]), "hits": sum(r.hits[b]), "chars": r.chars[b]}
            if ref is not None:
                wins, losses, p = mcnemar(ref.hits[b], r.hits[b])
                cell.update(
                    kireme_pp=100 * (_rate(ref.hits[b]) - _rate(r.hits[b])),
                    kireme_only=wins,
                    config_only=losses,
                    p=p,
                )
            d["budgets"][b] = cell
        out.append(d)
    return out


def _diff(ref: Sequence[bool], other: Sequence[bool]) -> tuple[float, float]:
    return 100 * (_rate(ref) - _rate(other)), mcnemar(ref, other)[2]


def cells(d: dict[str, Any], budgets: Sequence[int]) -> list[str]:
    out = [d["config"], d["size"]]
    for b in budgets:
        c = d["budgets"][b]
        out.append(f"{c['hit']:.3f}/{c['chars']:.0f}")
        out.append(f"{c['kireme_pp']:+.1f} ({_p(c['p'])})" if "kireme_pp" in c else "—")
    return out


# -------------------------------------------------------------------------------------------------- main


def configurations(
    task: Task, sizes: Sequence[int], budgets: Sequence[int], wanted: Sequence[str] | None, check: bool
) -> tuple[dict[str, list[Row]], list[str]]:
    """Every configuration's rows per view of ``task``, and the configurations skipped (and why)."""
    per_view: dict[str, list[Row]] = {view: [] for view in task.views}
    skipped: list[str] = []

    def want(label: str) -> bool:
        return not wanted or any(w.lower() in label.lower() for w in wanted)

    def add(rows: dict[str, Row]) -> None:
        for view, row in rows.items():
            per_view[view].append(row)
            hits = " ".join(f"{b}:{_rate(row.hits[b]):.3f}/{row.chars[b]:.0f}" for b in budgets)
            if view == next(iter(task.views)):
                print(
                    f"#   {row.label:48} {row.size:>11}  {hits}  ({row.seconds:.1f}s)",
                    file=sys.stderr,
                    flush=True,
                )

    for size in sizes:
        spans, chunks = evaluate_kireme(size, task, budgets, check=check and size == sizes[0])
        add(spans)
        if want("kireme recursive, chunks"):
            add(chunks)
        for label, factory in PEERS.items():
            if not want(label):
                continue
            try:
                peer = factory(size)
            except ImportError as exc:
                note = f"{label}: not installed ({exc.name or exc})"
                if note not in skipped:
                    skipped.append(note)
                continue
            index = peer_index(label, size, peer, task)
            rows = evaluate_greedy(index, task, budgets)
            for row in rows.values():
                row.compare_to = f"kireme recursive, spans {size}"
            add(rows)
    anchor = (
        f"kireme recursive, spans {ANCHOR_SIZE}"
        if ANCHOR_SIZE in sizes
        else f"kireme recursive, spans {sizes[0]}"
    )
    if want("SentenceWindow"):
        try:
            index = sentence_window_index(task)
        except ImportError as exc:
            skipped.append(f"LlamaIndex SentenceWindow: not installed ({exc.name or exc})")
        else:
            rows = evaluate_greedy(index, task, budgets)
            for row in rows.values():
                row.compare_to = anchor
            add(rows)
    if want("ParentDocument"):
        for child, parent in PARENTS:
            try:
                index = parent_index(task, child, parent)
            except ImportError as exc:
                skipped.append(f"LangChain ParentDocumentRetriever: not installed ({exc.name or exc})")
                break
            rows = evaluate_greedy(index, task, budgets)
            for row in rows.values():
                row.compare_to = anchor
            add(rows)
    return per_view, skipped


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_corpora_argument(ap)
    ap.add_argument("--sets", nargs="+", choices=SETS, default=list(SETS))
    ap.add_argument("--budgets", nargs="+", type=int, default=list(BUDGETS), help="budgets in characters")
    ap.add_argument("--sizes", nargs="+", type=int, default=list(SIZES), help="chunk sizes in characters")
    ap.add_argument("--questions", type=int, default=500, help="questions sampled per set (default 500)")
    ap.add_argument("--articles", type=int, default=None, help="first N documents per set (default: all)")
    ap.add_argument("--seed", type=int, default=0, help="question sample seed (default 0)")
    ap.add_argument("--configs", nargs="+", default=None, help="only labels containing one of these")
    ap.add_argument("--no-check", action="store_true", help="skip the check against evaluate_budgets")
    ap.add_argument(
        "--stitch",
        action="store_true",
        help="judge whole-unit contexts (peers, anchors, kireme chunks) with their passages that touch in the "
        "document merged into one, as if the reader stitched them (kireme spans merges them itself)",
    )
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    ap.add_argument(
        "--final-report",
        action="store_true",
        help="jsquad reads the reserved JSQuAD v1.3 test file: only for the final report of a round",
    )
    args = ap.parse_args()
    if not corpora_present(args.corpora, "the context budget benchmark"):
        return 0
    if any(b <= 0 for b in args.budgets):
        ap.error("budgets must be > 0")
    budgets = sorted(set(args.budgets))
    sizes = list(dict.fromkeys(args.sizes))
    libraries = [
        "semchunk",
        "semantic-text-splitter",
        "chonkie",
        "langchain-text-splitters",
        "llama-index-core",
    ]
    info: dict[str, Any] = {
        "budgets": budgets,
        "sizes": sizes,
        "questions": args.questions,
        "articles": args.articles,
        "seed": args.seed,
        "retriever": "bm25 (kireme BM25Retriever), title + newline + unit text indexed",
        "sentence_splitter": SENTENCE_SPLITTER,
        "stitch": args.stitch,
        "versions": versions("langchain-classic", "langchain-core", "bm25s", *libraries),
        "command": " ".join(["benchmarks/budget.py", *sys.argv[1:]]),
        # the kireme code measured (the assembly rules change: a result names the files it ran)
        "sources": {
            name: hashlib.sha256((ROOT / "src" / "kireme" / name).read_bytes()).hexdigest()[:12]
            for name in ("assemble.py", "evaluate/runner.py")
        },
    }
    print(f"# {json.dumps(info, ensure_ascii=False)}", file=sys.stderr)
    started = time.perf_counter()
    results: dict[str, Any] = {"info": info, "sets": {}}
    tables: list[tuple[str, list[dict[str, Any]]]] = []
    checked = args.no_check
    for name in args.sets:
        task = load_task(
            args.corpora,
            name,
            articles=args.articles,
            questions=args.questions,
            seed=args.seed,
            final=args.final_report,
        )
        if task is None:
            print(f"# {name}: not found under {args.corpora}, skipped", file=sys.stderr)
            continue
        task.stitch = args.stitch
        chars = sum(len(d.text) for d in task.documents)
        print(
            f"# {task.name}: {len(task.documents)} documents, {chars:,} chars, "
            f"{len(task.questions)} of {task.total_questions} questions",
            file=sys.stderr,
        )
        check = not checked and all(q.references for q in task.questions)
        per_view, skipped = configurations(task, sizes, budgets, args.configs, check)
        checked = checked or check
        for view, rows in per_view.items():
            compared = compare(rows, budgets)
            results["sets"][view] = {
                "documents": len(task.documents),
                "chars": chars,
                "questions": len(task.questions),
                "questions_in_set": task.total_questions,
                "skipped": skipped,
                "rows": compared,
            }
            tables.append((view, compared))
        for note in skipped:
            print(f"# {note}: skipped", file=sys.stderr)
    info["seconds"] = round(time.perf_counter() - started, 1)
    header = ["config", "size"]
    for b in budgets:
        header += [f"{b}: hit/chars", "kireme ±pp (p)"]
    for view, compared in tables:
        block = results["sets"][view]
        title = (
            f"{view}: {block['documents']} documents, {block['questions']} of {block['questions_in_set']} "
            "questions, BM25; hit_at_budget / mean chars passed; kireme ±pp = kireme spans minus the row "
            f"(same size; anchors vs {ANCHOR_SIZE}), exact McNemar p"
            + ("; whole-unit contexts stitched" if args.stitch else "")
        )
        print_table(title, header, [cells(d, budgets) for d in compared], args.markdown)
        placed = [
            f"{d['config']} {d['size']}: {d['placement']}" for d in compared if d["placement"] != "exact"
        ]
        if placed:
            print("\nplacement (exact: own offsets verified; scanned: forward search): " + "; ".join(placed))
        also = [
            f"{d['config']} {d['size']} vs {other}: "
            + ", ".join(f"{b} {v['kireme_pp']:+.1f} ({_p(v['p'])})" for b, v in by_budget.items())
            for d in compared
            for other, by_budget in d.get("also", {}).items()
        ]
        if also:
            print("\nanchors against kireme spans at the other size: " + "; ".join(also))
        notes = [f"{d['config']} {d['size']}: {'; '.join(d['notes'])}" for d in compared if d["notes"]]
        if notes:
            print("\nnotes: " + "; ".join(dict.fromkeys(notes)))
    skipped_all = sorted({s for block in results["sets"].values() for s in block["skipped"]})
    print(f"\nversions: {info['versions']}; skipped: {skipped_all or 'none'}; {info['seconds']:.0f}s")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
        print(f"saved {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
